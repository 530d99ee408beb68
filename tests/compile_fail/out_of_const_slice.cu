// expect: out\(s\) needs a writable Slice<T>
// out() of a read-only slice is a contradiction, as out() of a const array is.
#include <smartarray/smartarray.hpp>

#include <utility>

namespace sa = smartarray;

void call(sa::SmartArray<float>& a) { (void)sa::out(std::as_const(a).slice(0, 1)); }
