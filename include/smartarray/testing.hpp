// Kept so that existing includes keep working: the header is now
// <smartarray/diagnostics/testing.hpp>.
#pragma once

#include <smartarray/diagnostics/testing.hpp>
