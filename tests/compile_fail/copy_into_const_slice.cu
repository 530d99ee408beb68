// expect: copy: the destination must be a non-const SmartArray \(not a temporary\) or a Slice<T>
// copy overwrites its destination, so the destination cannot be a read-only slice.
#include <smartarray/smartarray.hpp>

#include <utility>

namespace sa = smartarray;

void call(sa::SmartArray<float>& a) { sa::copy(std::as_const(a).slice(0, 1), a.slice(1, 1)); }
