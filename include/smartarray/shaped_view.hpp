// Kept so that existing includes keep working: the header is now
// <smartarray/views/shaped_view.hpp>.
#pragma once

#include <smartarray/views/shaped_view.hpp>
