// Kept so that existing includes keep working: the header is now
// <smartarray/adapters/for_each_index.hpp>.
#pragma once

#include <smartarray/adapters/for_each_index.hpp>
