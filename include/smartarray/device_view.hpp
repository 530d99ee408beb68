// Kept so that existing includes keep working: the header is now
// <smartarray/views/device_view.hpp>.
#pragma once

#include <smartarray/views/device_view.hpp>
