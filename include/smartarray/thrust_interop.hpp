// Kept so that existing includes keep working: the header is now
// <smartarray/adapters/thrust_interop.hpp>.
#pragma once

#include <smartarray/adapters/thrust_interop.hpp>
