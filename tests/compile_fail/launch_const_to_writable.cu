// expect: a const SmartArray cannot bind to a writing kernel parameter
// A const array must not reach a kernel that writes it.
#include <smartarray/smartarray.hpp>

namespace sa = smartarray;

__global__ void scale(sa::DeviceView<float> data) { (void)data; }

void call(const sa::SmartArray<float>& a) { sa::launch(scale, 1, 32, {}, a); }
