// Kept so that existing includes keep working: the header is now
// <smartarray/core/host_iterator.hpp>.
#pragma once

#include <smartarray/core/host_iterator.hpp>
