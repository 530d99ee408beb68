// Kept so that existing includes keep working: the header is now
// <smartarray/runtime/host_registration.hpp>.
#pragma once

#include <smartarray/runtime/host_registration.hpp>
