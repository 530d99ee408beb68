// Kept so that existing includes keep working: the header is now
// <smartarray/runtime/runtime.hpp>.
#pragma once

#include <smartarray/runtime/runtime.hpp>
