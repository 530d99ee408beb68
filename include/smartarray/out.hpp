// Kept so that existing includes keep working: the header is now
// <smartarray/adapters/out.hpp>.
#pragma once

#include <smartarray/adapters/out.hpp>
