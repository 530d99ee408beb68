// Kept so that existing includes keep working: the header is <smartarray/runtime/host_registration.hpp>.
#pragma once

#include <smartarray/runtime/host_registration.hpp>
