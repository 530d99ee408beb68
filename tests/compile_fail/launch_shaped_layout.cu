// expect: the layout given to shaped\(\.\.\.\) differs from the ShapedView parameter's layout
// An F-order shape must not bind to a C-order view.
#include <smartarray/smartarray.hpp>

namespace sa = smartarray;

__global__ void take(sa::ShapedView<const float, 2, sa::CLayout> m) { (void)m; }

void call(sa::SmartArray<float>& a) {
  sa::launch(take, 1, 32, {}, sa::shaped(a, sa::f_order, 2, 2));
}
