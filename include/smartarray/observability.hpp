// Kept so that existing includes keep working: the header is now
// <smartarray/diagnostics/observability.hpp>.
#pragma once

#include <smartarray/diagnostics/observability.hpp>
