// Kept so that existing includes keep working: the header is now
// <smartarray/runtime/stream.hpp>.
#pragma once

#include <smartarray/runtime/stream.hpp>
