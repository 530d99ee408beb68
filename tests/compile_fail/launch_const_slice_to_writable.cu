// expect: a const SmartArray cannot bind to a writing kernel parameter .*, nor can a Slice<const T>
// A read-only slice must not reach a kernel that writes it.
#include <smartarray/smartarray.hpp>

#include <utility>

namespace sa = smartarray;

__global__ void scale(sa::DeviceView<float> data) { (void)data; }

void call(sa::SmartArray<float>& a) { sa::launch(scale, 1, 32, {}, std::as_const(a).slice(0, 1)); }
