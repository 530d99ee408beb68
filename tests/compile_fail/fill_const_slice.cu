// expect: fill: a Slice<const T> cannot be written
// fill overwrites the slice, so it cannot be a read-only one.
#include <smartarray/smartarray.hpp>

#include <utility>

namespace sa = smartarray;

void call(sa::SmartArray<float>& a) { sa::fill(std::as_const(a).slice(0, 1), 1.0F); }
