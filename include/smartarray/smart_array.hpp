// Kept so that existing includes keep working: the header is <smartarray/core/smart_array.hpp>.
#pragma once

#include <smartarray/core/smart_array.hpp>
