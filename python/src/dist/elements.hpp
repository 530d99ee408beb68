// The element type of a Python SmartArray (a SmartArray<std::byte> with a NumPy dtype), as the
// distributed layer's cross-rank checks and reductions name it.
#pragma once

#include <smartarray/distributed.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace smartarray_python::dist {

namespace sd = smartarray::dist;

/// What the distributed layer needs of a dtype: its size, its type code (every rank compares
/// them) and, for the types that all_reduce and reduce_scatter take, its element type.
struct Elements {
  std::string dtype;
  std::size_t bytes;
  std::int64_t code;
  std::optional<sd::detail::ElementType> reducible;
};

/// The dtype is not one the call takes. Derived from std::logic_error (not smartarray's): the
/// cross-rank agreement rebuilds it on the other ranks as a std::logic_error, and the module
/// raises TypeError for both.
class dtype_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// The Elements of a NumPy dtype name (the dtypes SmartArray supports).
/// @throws std::invalid_argument for a name that is none of them.
[[nodiscard]] Elements elements_of(const std::string& dtype);

/// Throws dtype_error naming `what` and the dtype when `elements` cannot be reduced.
const sd::detail::ElementType& reducible(const char* what, const Elements& elements);

/// The reduction named `op` ("sum", "prod", "min", "max"); nullopt for another name.
[[nodiscard]] std::optional<sd::Op> find_op(const std::string& op);

/// `op`, or smartarray::logic_error naming `what` and the name `name` that is no reduction.
sd::Op checked_op(const char* what, const std::optional<sd::Op>& op, const std::string& name);

}  // namespace smartarray_python::dist
