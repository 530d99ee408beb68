// Kept so that existing includes keep working: the header is now
// <smartarray/adapters/launch.hpp>.
#pragma once

#include <smartarray/adapters/launch.hpp>
