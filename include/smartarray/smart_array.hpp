// Kept so that existing includes keep working: the header is now
// <smartarray/core/smart_array.hpp>.
#pragma once

#include <smartarray/core/smart_array.hpp>
