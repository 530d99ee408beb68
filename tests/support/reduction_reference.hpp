// Shared by the transform_reduce tests: their functors, host reference and check of a result.
#pragma once

#include <smartarray/config.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

namespace smartarray::test::reductions {

// --- functors (namespace scope: nvcc cannot place device lambdas in a TEST body) ----------------

template <typename R>
struct Plus {
  SMARTARRAY_HOST_DEVICE R operator()(R x, R y) const { return x + y; }
};
/// x * y in the result's type R.
template <typename R>
struct Times {
  template <typename X, typename Y>
  SMARTARRAY_HOST_DEVICE R operator()(X x, Y y) const {
    return static_cast<R>(x) * static_cast<R>(y);
  }
};
/// x * x in the result's type R.
template <typename R>
struct Square {
  template <typename X>
  SMARTARRAY_HOST_DEVICE R operator()(X x) const {
    return static_cast<R>(x) * static_cast<R>(x);
  }
};

// --- the host reference --------------------------------------------------------------------------

/// The reference, on the host: `init` plus each transformed value converted to R, summed in R for
/// integers (exact: unsigned wraps as the device does), in long double for floating point, with
/// the sum of magnitudes that the tolerance scales with.
template <typename R>
struct Reference {
  R exact{};
  long double value = 0;
  long double magnitude = 0;
};
template <typename R, typename F, typename... Inputs>
Reference<R> reference(R init, F f, std::size_t n, const Inputs&... inputs) {
  Reference<R> ref;
  ref.exact = init;
  ref.value = static_cast<long double>(init);
  ref.magnitude = std::fabs(static_cast<long double>(init));
  for (std::size_t i = 0; i < n; ++i) {
    const R v = f(inputs[i]...);
    ref.exact = static_cast<R>(ref.exact + v);
    ref.value += static_cast<long double>(v);
    ref.magnitude += std::fabs(static_cast<long double>(v));
  }
  return ref;
}

/// Checks a result against the reference: exactly for integers; within rounding for floating
/// point, relative to the sum of magnitudes (a sequential sum on the host backend, a tree on the
/// GPU).
template <typename R>
::testing::AssertionResult matches(R got, const Reference<R>& want, std::size_t n) {
  if constexpr (std::is_floating_point_v<R>) {
    const long double tolerance = static_cast<long double>(std::numeric_limits<R>::epsilon()) *
                                  (8 * std::sqrt(static_cast<long double>(n)) + 8) * want.magnitude;
    if (std::fabs(static_cast<long double>(got) - want.value) <= tolerance) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "got " << got << ", want " << want.value << " within "
                                         << tolerance << " (n " << n << ")";
  } else {
    if (got == want.exact) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "got " << got << ", want " << want.exact << " (n " << n << ")";
  }
}

}  // namespace smartarray::test::reductions
