// Kept so that existing includes keep working: the header is <smartarray/adapters/algorithms.hpp>.
#pragma once

#include <smartarray/adapters/algorithms.hpp>
