// Out-of-core adapters (docs/residency.md): a call whose arrays need more device memory than the
// device budget runs in chunks, with exact transfer counts; launch refuses it. The budget is set
// through the API here; CTest also runs this binary with SMARTARRAY_DEVICE_BUDGET set.
#include "support/small_device_budget.hpp"
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::random_values;

namespace {

constexpr std::size_t n = std::size_t{4} << 20;  // 16 MiB of floats per array

struct Axpy {
  float k;
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return k * x + y; }
};
template <typename T>
struct Plus {
  SMARTARRAY_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
};
struct Sum3 {
  SMARTARRAY_HOST_DEVICE float operator()(float p, float q, float r) const { return p + q + r; }
};
struct Half {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return x / 2; }
};

__global__ void scale_kernel(sa::DeviceView<float> v) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < v.size()) v[i] *= 2;
}

/// The budget of the test, restored after it (the budget of the environment, if any).
class OutOfCore : public sa::test::SmallDeviceBudget {};

}  // namespace

TEST_F(OutOfCore, TransformRunsInChunksAndLeavesTheOutputOnTheHost) {
  const auto xs = random_values<float>(n);
  const auto ys = random_values<float>(n);
  const SmartArray<float> x(xs);
  const SmartArray<float> y(ys);
  SmartArray<float> z(n, 0.25F);
  const std::size_t chunks = chunks_of(n, 3 * sizeof(float));
  ASSERT_GT(chunks, 2U);
  {
    sa::ExpectTransfers expect({.h2d = 2 * chunks, .d2h = chunks,
                                .h2d_bytes = 2 * n * sizeof(float), .d2h_bytes = n * sizeof(float)});
    sa::transform(z, Axpy{2.0F}, x, y);
  }
  EXPECT_TRUE(z.is_valid(sa::Side::host));
  EXPECT_FALSE(z.is_valid(sa::Side::device));
  EXPECT_TRUE(x.is_valid(sa::Side::host));
  std::size_t wrong = 0;
  // 2x is exact, so a fused multiply-add on the device rounds as the host does.
  for (std::size_t i = 0; i < n; ++i) wrong += z[i] != 2.0F * xs[i] + ys[i];
  EXPECT_EQ(wrong, 0U);
}

TEST_F(OutOfCore, MapAndInPlaceTransformRunInChunks) {
  const auto xs = random_values<float>(n);
  SmartArray<float> x(xs);
  const SmartArray<float> half = sa::map(Half{}, x);
  ASSERT_EQ(half.size(), n);
  sa::transform(x, Axpy{2.0F}, x, half);  // x = 2x + x/2, in place
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    wrong += half[i] != xs[i] / 2;
    wrong += x[i] != 2.0F * xs[i] + xs[i] / 2;
  }
  EXPECT_EQ(wrong, 0U);
}

TEST_F(OutOfCore, AnOperandWrittenOnTheDeviceComesBackFirst) {
  // A device-valid operand that fits alone: its host copy is made whole (one D2H), then chunked.
  const auto small = random_values<float>(1 << 20);
  SmartArray<float> a(small);
  sa::transform(a, Half{}, a);  // on the device: a fits the budget alone
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  SmartArray<float> b(1 << 20, 1.0F);
  SmartArray<float> c(1 << 20, 1.0F);
  SmartArray<float> d(1 << 20, 1.0F);
  // a, b, c and d together (16 MiB) exceed the 8 MiB budget.
  sa::transform(d, Sum3{}, a, b, c);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < small.size(); ++i) wrong += d[i] != (small[i] / 2 + 1.0F) + 1.0F;
  EXPECT_EQ(wrong, 0U);
}

TEST_F(OutOfCore, LaunchRefusesArraysOverTheBudget) {
  if (sa::test::on_host_backend()) GTEST_SKIP() << "raw __global__ kernels need the cuda backend";
  SmartArray<float> a(n, 1.0F);
  try {
    sa::launch(scale_kernel, static_cast<unsigned>(n / 256), 256, sa::StreamRef{}, a);
    FAIL() << "a launch over " << n * sizeof(float) << " bytes ran under a budget of " << budget;
  } catch (const sa::out_of_memory& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find(std::to_string(n * sizeof(float))), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(sa::device_budget())), std::string::npos) << what;
    EXPECT_NE(what.find("transform"), std::string::npos) << what;
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_EQ(a[n - 1], 1.0F);
}

TEST_F(OutOfCore, TheBudgetIsThePoolsLimitOrTheDevicesMemory) {
  EXPECT_EQ(sa::device_budget(), budget);
  // Set through the API or SMARTARRAY_DEVICE_BUDGET, the budget is the pool's limit; with neither,
  // it is the (emulated) device's memory.
  const std::optional<std::size_t> limit = sa::default_device_pool().maximum_size();
  if (limit) EXPECT_EQ(*limit, budget);
  // A single array over the budget cannot be made valid on the device at all.
  SmartArray<float> a(n, 1.0F);
  EXPECT_THROW((void)a.device_view(sa::StreamRef{}), sa::out_of_memory);
  EXPECT_TRUE(a.is_valid(sa::Side::host));
}

TEST_F(OutOfCore, ReduceFoldsChunksFromTheirFirstElements) {
  std::vector<std::int64_t> values(n / 2);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int64_t>(i % 1000) + 1;
  const SmartArray<std::int64_t> a(values);  // 16 MiB
  std::int64_t expected = 7;
  for (const std::int64_t v : values) expected += v;
  const std::size_t chunks = chunks_of(values.size(), sizeof(std::int64_t));
  {
    sa::ExpectTransfers expect({.h2d = chunks, .d2h = 1, .h2d_bytes = values.size() * 8,
                                .d2h_bytes = sizeof(std::int64_t)});
    EXPECT_EQ(sa::reduce(a, std::int64_t{7}, Plus<std::int64_t>{}), expected);
  }
  EXPECT_EQ(sa::reduce(a.slice(10, values.size() - 20), std::int64_t{0},
                       sa::test::Maximum<std::int64_t>{}),
            1000);
}

TEST_F(OutOfCore, FillAndCopyOfArraysOverTheBudgetRunOnTheHost) {
  const auto xs = random_values<float>(n);
  SmartArray<float> x(xs);
  SmartArray<float> y(n, 2.0F);
  const float value = sa::test::random_value<float>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::copy(y, x);
    sa::fill(x.slice(0, n / 2), value);
  }
  EXPECT_TRUE(y.is_valid(sa::Side::host));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    wrong += y[i] != xs[i];
    wrong += x[i] != (i < n / 2 ? value : xs[i]);
  }
  EXPECT_EQ(wrong, 0U);
}
