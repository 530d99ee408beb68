// Kept so that existing includes keep working: the header is <smartarray/views/device_view.hpp>.
#pragma once

#include <smartarray/views/device_view.hpp>
