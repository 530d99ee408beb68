// The outputs of the kernel adapter suites (test_adapters.cu, test_algorithm_adapters.cu): arrays
// poisoned before a test writes them, and float results compared within rounding.
#pragma once

#include "support/test_support.hpp"

#include <smartarray/core/smart_array.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace smartarray::test::adapters {

/// Element-wise comparison within float rounding: nvcc contracts a * x + y into one fused
/// multiply-add, so device results may differ from the host's in the last bit.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], 1e-5F * std::max(1.0F, std::fabs(expected[i]))) << "at " << i;
  }
}

/// `count` elements filled with the poison pattern on the host.
inline SmartArray<float> poisoned(std::size_t count) {
  SmartArray<float> a(count);
  poison(a.data(), a.size());
  return a;
}

}  // namespace smartarray::test::adapters
