// expect: a SmartArray argument binds to a kernel parameter of type DeviceView<T>
// A SmartArray cannot become a scalar parameter.
#include <smartarray/smartarray.hpp>

namespace sa = smartarray;

__global__ void take(int value) { (void)value; }

void call(sa::SmartArray<int>& a) { sa::launch(take, 1, 32, {}, a); }
