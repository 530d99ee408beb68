// Three arrays that fill a resource, for the tests of resources that run out and evict: d and e
// written on the device (dirty, d the older), then c read there (clean, the newest). Room for two
// more blocks must come from c first (nothing to copy), then d (written back once).
#pragma once

#include "support/device_ops.cuh"
#include "support/test_support.hpp"

#include <smartarray/core/array_options.hpp>
#include <smartarray/core/smart_array.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace smartarray::test {

struct EvictionTrio {
  /// The three arrays of `n` floats in `options`, made and used in the order above.
  EvictionTrio(std::size_t n, const ArrayOptions& options)
      : d_values(random_values<float>(n)),
        e_values(random_values<float>(n)),
        c_values(random_values<float>(n)),
        d(d_values, options),
        e(e_values, options),
        c(c_values, options) {
    scale_on_device(d);
    scale_on_device(e);
    (void)c.device_view();
  }

  /// c and d were evicted, d written back with one copy of all its bytes; e stayed; all three
  /// still hold their values.
  void expect_clean_then_oldest_dirty_evicted() {
    EXPECT_FALSE(c.is_valid(Side::device));
    EXPECT_FALSE(d.is_valid(Side::device));
    EXPECT_TRUE(e.is_valid(Side::device));
    EXPECT_EQ(c.transfer_stats().d2h_count, 0U);
    EXPECT_EQ(d.transfer_stats().d2h_count, 1U);
    EXPECT_EQ(d.transfer_stats().d2h_bytes, d.size() * sizeof(float));
    EXPECT_EQ(e.transfer_stats().d2h_count, 0U);
    EXPECT_EQ(host_copy(c), c_values);
    EXPECT_EQ(host_copy(d), scaled(d_values));
    EXPECT_EQ(host_copy(e), scaled(e_values));
  }

  std::vector<float> d_values, e_values, c_values;
  SmartArray<float> d, e, c;
};

}  // namespace smartarray::test
