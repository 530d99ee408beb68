#include "elements.hpp"

#include <smartarray/error.hpp>

#include <array>
#include <complex>
#include <utility>

namespace smartarray_python::dist {
namespace {

template <typename T>
Elements typed(const char* dtype) {
  return {dtype, sizeof(T), sd::detail::type_code<T>(), sd::detail::element_type_of<T>()};
}

/// A dtype without an arithmetic C++ counterpart: compared by size and name alone.
template <typename T>
Elements untyped(const char* dtype) {
  return {dtype, sizeof(T), sd::detail::type_code<T>(), std::nullopt};
}

struct Half {
  std::uint16_t bits;
};

}  // namespace

Elements elements_of(const std::string& dtype) {
  static const std::array table{
      typed<float>("float32"),         typed<double>("float64"),
      typed<std::int8_t>("int8"),      typed<std::int16_t>("int16"),
      typed<std::int32_t>("int32"),    typed<std::int64_t>("int64"),
      typed<std::uint8_t>("uint8"),    typed<std::uint16_t>("uint16"),
      typed<std::uint32_t>("uint32"),  typed<std::uint64_t>("uint64"),
      untyped<bool>("bool"),           untyped<Half>("float16"),
      untyped<std::complex<float>>("complex64"), untyped<std::complex<double>>("complex128")};
  for (const Elements& each : table) {
    if (each.dtype == dtype) return each;
  }
  throw std::invalid_argument("smartarray.dist: unsupported dtype " + dtype);
}

const sd::detail::ElementType& reducible(const char* what, const Elements& elements) {
  if (!elements.reducible) {
    throw dtype_error(smartarray::detail::concat(
        what, ": dtype ", elements.dtype,
        " cannot be reduced (float32, float64 and the 8- to 64-bit signed and unsigned integers "
        "can)"));
  }
  return *elements.reducible;
}

std::optional<sd::Op> find_op(const std::string& op) {
  static const std::array<std::pair<const char*, sd::Op>, 4> ops{
      {{"sum", sd::Op::sum}, {"prod", sd::Op::prod}, {"min", sd::Op::min}, {"max", sd::Op::max}}};
  for (const auto& [name, value] : ops) {
    if (op == name) return value;
  }
  return std::nullopt;
}

sd::Op checked_op(const char* what, const std::optional<sd::Op>& op, const std::string& name) {
  if (!op) {
    throw smartarray::logic_error(smartarray::detail::concat(
        what, ": unknown op '", name, "' (expected 'sum', 'prod', 'min' or 'max')"));
  }
  return *op;
}

}  // namespace smartarray_python::dist
