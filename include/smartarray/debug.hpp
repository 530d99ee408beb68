// Kept so that existing includes keep working: the header is <smartarray/diagnostics/debug.hpp>.
#pragma once

#include <smartarray/diagnostics/debug.hpp>
