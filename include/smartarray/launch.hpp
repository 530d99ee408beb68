// Kept so that existing includes keep working: the header is <smartarray/adapters/launch.hpp>.
#pragma once

#include <smartarray/adapters/launch.hpp>
