// expect: out\(a\) needs a writable SmartArray
// out() of a const array is a contradiction.
#include <smartarray/smartarray.hpp>

#include <utility>

namespace sa = smartarray;

void call(sa::SmartArray<float>& a) { (void)sa::out(std::as_const(a)); }
