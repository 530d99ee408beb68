// Kept so that existing includes keep working: the header is now
// <smartarray/adapters/numba.hpp>.
#pragma once

#include <smartarray/adapters/numba.hpp>
