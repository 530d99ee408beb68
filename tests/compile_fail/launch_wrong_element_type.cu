// expect: the SmartArray's element type differs from the element type of the kernel parameter
// A SmartArray<double> must not bind to a float parameter.
#include <smartarray/smartarray.hpp>

namespace sa = smartarray;

__global__ void scale(sa::DeviceView<float> data) { (void)data; }

void call(sa::SmartArray<double>& a) { sa::launch(scale, 1, 32, {}, a); }
