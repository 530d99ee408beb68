// expect: transform: the output must be .*: a const array or a Slice<const T> cannot be overwritten
// transform overwrites its output, so the output cannot be a read-only slice.
#include <smartarray/smartarray.hpp>

#include <utility>

namespace sa = smartarray;

struct Negate {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return -x; }
};

void call(sa::SmartArray<float>& a) {
  sa::transform(std::as_const(a).slice(0, 1), Negate{}, a.slice(1, 1));
}
