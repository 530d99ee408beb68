// Shared by the slice adapter tests: their array size, a functor, poisoned arrays and slices' data.
#pragma once

#include <smartarray/smartarray.hpp>

#include "support/test_support.hpp"

#include <cstddef>
#include <type_traits>
#include <vector>

namespace smartarray::test::slices {

/// The size of most arrays of the tests.
inline constexpr std::size_t n = 4000;

/// x * 2 + 1 (namespace scope: nvcc cannot place device lambdas in a TEST body).
struct TwicePlusOne {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return x * 2 + 1; }
};

/// An array of `count` elements, poisoned on the host.
inline SmartArray<float> poisoned(std::size_t count) {
  SmartArray<float> a(count);
  poison(a.data(), a.size());
  return a;
}

/// The elements [first, first + count) of `values`.
template <typename T>
std::vector<T> part(const std::vector<T>& values, std::size_t first, std::size_t count) {
  return {values.begin() + static_cast<std::ptrdiff_t>(first),
          values.begin() + static_cast<std::ptrdiff_t>(first + count)};
}

/// The host elements of a slice, read through a const host view.
template <typename T>
std::vector<std::remove_const_t<T>> host_copy(Slice<T> s) {
  const Slice<const std::remove_const_t<T>> read = s;
  const auto view = read.host_view();
  return {view.begin(), view.end()};
}

}  // namespace smartarray::test::slices
