// Kept so that existing includes keep working: the header is now
// <smartarray/memory/memory_mode.hpp>.
#pragma once

#include <smartarray/memory/memory_mode.hpp>
