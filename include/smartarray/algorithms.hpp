// Kept so that existing includes keep working: the header is now
// <smartarray/adapters/algorithms.hpp>.
#pragma once

#include <smartarray/adapters/algorithms.hpp>
