// Kept so that existing includes keep working: the header is now
// <smartarray/adapters/transform.hpp>.
#pragma once

#include <smartarray/adapters/transform.hpp>
