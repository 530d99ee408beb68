// Kept so that existing includes keep working: the header is now
// <smartarray/diagnostics/debug.hpp>.
#pragma once

#include <smartarray/diagnostics/debug.hpp>
