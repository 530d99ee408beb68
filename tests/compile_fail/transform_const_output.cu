// expect: transform: the output must be a non-const SmartArray
// transform overwrites its output, so the output cannot be const.
#include <smartarray/smartarray.hpp>

#include <utility>

namespace sa = smartarray;

struct Negate {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return -x; }
};

void call(sa::SmartArray<float>& a, const sa::SmartArray<float>& b) {
  sa::transform(b, Negate{}, a);
}
