// Kept so that existing includes keep working: the header is now
// <smartarray/core/residency.hpp>.
#pragma once

#include <smartarray/core/residency.hpp>
