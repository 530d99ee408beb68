// The launch shapes of the element-wise adapters (adapters/detail/elementwise.hpp) and of copy's
// kernel (adapters/algorithms.hpp): the shape chosen for each size, type and alignment, and the
// results of transform, map, fill and copy at the sizes where the shape changes (one element per
// thread, one 16-byte vector per thread, a short last vector, ranges that start off a 16-byte
// boundary). Every body runs on the host and on the cuda backend; on cuda it runs each kernel.
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::random_values;
namespace detail = sa::detail;

namespace {

// --- functors (namespace scope: nvcc cannot place device lambdas in a TEST body) ----------------

struct Triad {
  SMARTARRAY_HOST_DEVICE float operator()(float b, float s, float c) const { return b + s * c; }
};
struct Nstream {
  SMARTARRAY_HOST_DEVICE float operator()(float a, float b, float s, float c) const {
    return a + b + s * c;
  }
};
struct Narrow {
  SMARTARRAY_HOST_DEVICE float operator()(double x, float y) const {
    return static_cast<float>(x) * y;
  }
};
struct Increment {
  SMARTARRAY_HOST_DEVICE std::uint8_t operator()(std::uint8_t x) const {
    return static_cast<std::uint8_t>(x + 1);
  }
};

template <typename T>
std::vector<T> values_of(const SmartArray<T>& a) {
  const auto view = a.host_view();
  return {view.begin(), view.end()};
}

template <typename T>
SmartArray<T> poisoned(std::size_t count) {
  SmartArray<T> a(count);
  sa::test::poison(a.data(), a.size());
  return a;
}

/// The sizes where the shape of a float kernel changes: below the vector threshold, at it, and
/// past it by a whole vector and by a short last vector.
std::vector<std::size_t> sizes_around_the_vector_threshold() {
  const std::size_t at = detail::elementwise_vector_min_elements;
  return {1, 3, 257, at - 1, at, at + 1, at + 3, at + 4, at + 5};
}

}  // namespace

// --- the shape -----------------------------------------------------------------------------------

TEST(ElementwiseShape, OneThreadPerElementWithNarrowIndicesWithoutAVectorForm) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{257},
                              std::size_t{1} << 25}) {
    const detail::ElementwiseShape shape = detail::elementwise_shape(n, 0, true);
    EXPECT_EQ(shape.elements_per_thread, 1U) << n;
    EXPECT_FALSE(shape.wide_index) << n;
    EXPECT_EQ(shape.grid, (n + detail::elementwise_block - 1) / detail::elementwise_block) << n;
  }
}

TEST(ElementwiseShape, SmallElementsTakeOneVectorPerThreadOnlyWhenAlignedAndLarge) {
  const std::size_t n = std::size_t{1} << 25;
  const detail::ElementwiseShape vector = detail::elementwise_shape(n, sizeof(float), true);
  if (sizeof(float) <= detail::elementwise_vector_max_element_bytes) {
    EXPECT_EQ(vector.elements_per_thread, detail::elementwise_vector_bytes / sizeof(float));
    EXPECT_EQ(vector.grid, n / vector.elements_per_thread / detail::elementwise_block);
    // A short last vector takes one more thread, and maybe one more block.
    const detail::ElementwiseShape tail = detail::elementwise_shape(n + 1, sizeof(float), true);
    EXPECT_EQ(tail.grid, vector.grid + 1);
  }
  EXPECT_EQ(detail::elementwise_shape(n, sizeof(float), false).elements_per_thread, 1U);
  EXPECT_EQ(detail::elementwise_shape(detail::elementwise_vector_min_elements - 1, sizeof(float),
                                      true)
                .elements_per_thread,
            1U);
  const bool doubles = sizeof(double) <= detail::elementwise_vector_max_element_bytes;
  EXPECT_EQ(detail::elementwise_shape(n, sizeof(double), true).elements_per_thread,
            doubles ? 2U : 1U);
  // An element whose size is no power of two has no vector form.
  EXPECT_EQ(detail::elementwise_shape(n, 3, true).elements_per_thread, 1U);
}

TEST(ElementwiseShape, WideIndicesBeyondThirtyTwoBitsAndTheGridCapBeyondCudasLimit) {
  const std::size_t beyond = detail::elementwise_narrow_max_elements + 1;
  EXPECT_FALSE(detail::elementwise_shape(detail::elementwise_narrow_max_elements, 0, false)
                   .wide_index);
  const detail::ElementwiseShape wide = detail::elementwise_shape(beyond, 0, false);
  EXPECT_TRUE(wide.wide_index);
  EXPECT_EQ(wide.grid, (beyond + detail::elementwise_block - 1) / detail::elementwise_block);
  const detail::ElementwiseShape capped = detail::elementwise_shape(std::size_t{1} << 42, 0, false);
  EXPECT_TRUE(capped.wide_index);
  EXPECT_EQ(capped.grid, detail::elementwise_max_grid);
}

TEST(ElementwiseShape, TransformAndFillBodiesDeclareTheirWidestElement) {
  using FloatTriad = detail::TransformOp<Triad, float, sa::DeviceView<const float>, float,
                                         sa::DeviceView<const float>>;
  EXPECT_EQ(FloatTriad::vector_element_bytes, sizeof(float));
  using Mixed =
      detail::TransformOp<Narrow, float, sa::DeviceView<const double>, sa::DeviceView<const float>>;
  EXPECT_EQ(Mixed::vector_element_bytes, sizeof(double));
  EXPECT_EQ(detail::FillOp<std::uint8_t>::vector_element_bytes, 1U);
}

TEST(ElementwiseShape, CopyTakesTheKernelOnlyForAlignedRangesUpToTheThreshold) {
  EXPECT_TRUE(detail::device_copy_uses_kernel(1, true));
  EXPECT_TRUE(detail::device_copy_uses_kernel(detail::device_copy_kernel_max_bytes, true));
  EXPECT_FALSE(detail::device_copy_uses_kernel(detail::device_copy_kernel_max_bytes + 1, true));
  EXPECT_FALSE(detail::device_copy_uses_kernel(4096, false));
}

// --- the kernels' results ------------------------------------------------------------------------

TEST(ElementwiseKernels, TransformAtTheSizesWhereTheShapeChanges) {
  for (const std::size_t n : sizes_around_the_vector_threshold()) {
    // Whole numbers, so that every result is exact whether or not the device fuses the multiply
    // and the add (nvcc does): the comparison can then be exact.
    auto vb = random_values<float>(n);
    auto vc = random_values<float>(n);
    for (float& x : vb) x = std::round(x);
    for (float& x : vc) x = std::round(x);
    const float s = 3.0F;
    SmartArray<float> b(vb), c(vc);
    SmartArray<float> a = poisoned<float>(n);
    sa::transform(sa::out(a), Triad{}, b, s, c);
    std::vector<float> expected(n);
    for (std::size_t i = 0; i < n; ++i) expected[i] = Triad{}(vb[i], s, vc[i]);
    ASSERT_EQ(values_of(a), expected) << "triad over " << n << " elements";
    // In place: the output is also an operand.
    sa::transform(a, Nstream{}, a, b, s, c);
    for (std::size_t i = 0; i < n; ++i) expected[i] = Nstream{}(expected[i], vb[i], s, vc[i]);
    ASSERT_EQ(values_of(a), expected) << "nstream over " << n << " elements";
  }
}

TEST(ElementwiseKernels, MapOfMixedAndNarrowTypes) {
  for (const std::size_t n : sizes_around_the_vector_threshold()) {
    const auto vx = random_values<double>(n);
    const auto vy = random_values<float>(n);
    const auto vu = random_values<std::uint8_t>(n);
    const SmartArray<double> x(vx);
    const SmartArray<float> y(vy);
    const SmartArray<std::uint8_t> u(vu);
    const SmartArray<float> product = sa::map(Narrow{}, x, y);
    const SmartArray<std::uint8_t> next = sa::map(Increment{}, u);
    std::vector<float> expected(n);
    std::vector<std::uint8_t> expected_next(n);
    for (std::size_t i = 0; i < n; ++i) {
      expected[i] = Narrow{}(vx[i], vy[i]);
      expected_next[i] = Increment{}(vu[i]);
    }
    ASSERT_EQ(values_of(product), expected) << n << " elements";
    ASSERT_EQ(values_of(next), expected_next) << n << " elements";
  }
}

TEST(ElementwiseKernels, SlicesThatStartOffAVectorBoundaryTakeOneElementPerThread) {
  const std::size_t n = detail::elementwise_vector_min_elements + 64;
  const auto vb = random_values<float>(n);
  const auto vc = random_values<float>(n);
  const SmartArray<float> b(vb), c(vc);
  // Operands at offsets 1 and 4 (16 bytes: aligned), the output at 3 and 0.
  for (const auto& [in_first, out_first] : {std::pair<std::size_t, std::size_t>{1, 3},
                                            std::pair<std::size_t, std::size_t>{4, 0},
                                            std::pair<std::size_t, std::size_t>{4, 8}}) {
    const std::size_t count = n - 9;
    SmartArray<float> a = poisoned<float>(n);
    const std::vector<float> before = values_of(a);
    sa::transform(a.slice(out_first, count), Triad{}, b.slice(in_first, count), 2.0F,
                  c.slice(in_first, count));
    const std::vector<float> got = values_of(a);
    for (std::size_t i = 0; i < n; ++i) {
      const bool inside = i >= out_first && i < out_first + count;
      const float want =
          inside ? Triad{}(vb[i - out_first + in_first], 2.0F, vc[i - out_first + in_first])
                 : before[i];
      ASSERT_EQ(got[i], want) << "element " << i << ", operands from " << in_first
                              << ", output from " << out_first;
    }
  }
}

TEST(ElementwiseKernels, FillAtTheSizesWhereTheShapeChangesAndOnSlices) {
  for (const std::size_t n : sizes_around_the_vector_threshold()) {
    SmartArray<float> a = poisoned<float>(n);
    sa::fill(a, 1.5F);
    ASSERT_EQ(values_of(a), std::vector<float>(n, 1.5F)) << n << " elements";
    SmartArray<std::uint8_t> bytes(n + 3, std::uint8_t{7});
    sa::fill(bytes.slice(1, n), std::uint8_t{9});
    std::vector<std::uint8_t> expected(n + 3, 9);
    expected[0] = expected[n + 1] = expected[n + 2] = 7;
    ASSERT_EQ(values_of(bytes), expected) << n << " bytes from offset 1";
  }
}

TEST(ElementwiseKernels, CopyByKernelAndByTheRuntimeCountsOneDeviceCopy) {
  // 4004 bytes: 250 vectors and a tail of 4 bytes; the slices at offset 1 are off the boundary.
  for (const std::size_t n : {std::size_t{1}, std::size_t{4}, std::size_t{1001},
                              std::size_t{1} << 20}) {
    const auto values = random_values<float>(n + 1);
    SmartArray<float> src(values);
    (void)std::as_const(src).device_view();
    SmartArray<float> dst = poisoned<float>(n + 1);
    {
      const sa::ExpectTransfers expect({.d2d = 1, .d2d_bytes = n * sizeof(float)});
      sa::copy(dst.slice(0, n), src.slice(0, n));
    }
    {
      const sa::ExpectTransfers expect({.d2d = 1, .d2d_bytes = n * sizeof(float)});
      sa::copy(dst.slice(1, n), src.slice(1, n));
    }
    const std::vector<float> got = values_of(dst);
    EXPECT_EQ(got, values) << n << " elements";
  }
}
