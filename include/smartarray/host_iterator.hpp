// Kept so that existing includes keep working: the header is <smartarray/core/host_iterator.hpp>.
#pragma once

#include <smartarray/core/host_iterator.hpp>
