// Kept so that existing includes keep working: the header is now
// <smartarray/adapters/reduce.hpp>.
#pragma once

#include <smartarray/adapters/reduce.hpp>
