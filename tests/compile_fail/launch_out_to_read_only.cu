// expect: out\(a\) binds only to a writable kernel parameter
// out(a) says the kernel overwrites the array: a read-only parameter contradicts it.
#include <smartarray/smartarray.hpp>

namespace sa = smartarray;

__global__ void sum(sa::DeviceView<const float> data) { (void)data; }

void call(sa::SmartArray<float>& a) { sa::launch(sum, 1, 32, {}, sa::out(a)); }
