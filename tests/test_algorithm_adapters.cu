// The algorithm adapters (transform, map, reduce, copy, fill) and a chain of ten of them, with
// exact transfer counts: each input copied in once, outputs discarded rather than copied in,
// results left on the device until the host reads them, size mismatches that acquire nothing. The
// launch adapter and shaped views are in test_adapters.cu. Every body runs on the host and on the
// cuda backend.
#include "support/adapter_outputs.hpp"
#include "support/functors.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cuda/std/functional>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::adapters::expect_close;
using sa::test::adapters::poisoned;

namespace {

constexpr std::size_t n = 5000;

// --- functors (namespace scope: nvcc cannot place device lambdas in a TEST body) ----------------

using smartarray::test::Add;
struct Axpy {
  SMARTARRAY_HOST_DEVICE float operator()(float a, float x, float y) const { return a * x + y; }
};
struct TwicePlusOne {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return x * 2 + 1; }
};
struct Mixed {
  SMARTARRAY_HOST_DEVICE double operator()(int i, float x) const { return i * 0.5 + x; }
};
struct Square {
  sa::DeviceView<float> v;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { v[i] = v[i] * v[i]; }
};

std::vector<float> added(const std::vector<float>& a, const std::vector<float>& b) {
  std::vector<float> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

}  // namespace

// --- transform and map -------------------------------------------------------------------------

TEST(Transform, IntoOutCopiesEachInputInOnceAndNothingIntoTheOutput) {
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  SmartArray<float> a(va), b(vb);
  SmartArray<float> c = poisoned(n);
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0, .h2d_bytes = 2 * n * sizeof(float)});
    sa::transform(sa::out(c), Add{}, a, b);
  }
  EXPECT_EQ(c.transfer_stats().h2d_count, 0U);
  EXPECT_FALSE(c.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::transform(sa::out(c), Add{}, a, b);
  }
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(c), added(va, vb));
  }
}

TEST(Transform, PlainOutputIsDiscardedLikeOut) {
  const auto va = random_values<float>(n);
  SmartArray<float> a(va);
  SmartArray<float> c = poisoned(n);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
    sa::transform(c, TwicePlusOne{}, a);
  }
  EXPECT_EQ(host_copy(c), sa::test::scaled(va));
}

TEST(Transform, ScalarsBroadcastAndATrailingStreamIsUsed) {
  sa::Stream stream;
  const auto vx = random_values<float>(n);
  const auto vy = random_values<float>(n);
  const float alpha = sa::test::random_value<float>();
  SmartArray<float> x(vx), y(vy);
  SmartArray<float> z = poisoned(n);
  sa::transform(sa::out(z), Axpy{}, alpha, x, y, stream);
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = alpha * vx[i] + vy[i];
  expect_close(host_copy(z), expected);
}

TEST(Transform, InPlaceReadsTheOutputBeforeOverwritingIt) {
  const auto va = random_values<float>(n);
  SmartArray<float> a(va);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
    sa::transform(a, TwicePlusOne{}, a);
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(a), sa::test::scaled(va));
}

TEST(Transform, TakesDeviceViewsAsOperandsAndOutput) {
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  SmartArray<float> a(va), b(vb);
  SmartArray<float> c = poisoned(n);
  const sa::DeviceView<float> output = c.device_view(Access::discard);
  sa::transform(output, Add{}, std::as_const(a).device_view(), std::as_const(b).device_view());
  EXPECT_EQ(host_copy(c), added(va, vb));
}

TEST(Transform, WaitsForWorkOnAnotherStreamWithoutBlockingTheHost) {
  sa::Stream producer, consumer;
  const auto va = random_values<float>(n);
  SmartArray<float> a(va);
  SmartArray<float> c = poisoned(n);
  sa::test::scale_on_device(a, producer);
  sa::transform(sa::out(c), TwicePlusOne{}, a, consumer);
  EXPECT_EQ(host_copy(c), sa::test::scaled(sa::test::scaled(va)));
}

TEST(Transform, SizeMismatchNamesBothSizesAndAcquiresNothing) {
  SmartArray<float> a(random_values<float>(n)), b(random_values<float>(n - 1));
  SmartArray<float> c(n);
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    sa::transform(sa::out(c), Add{}, a, b);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("operand 2 has " + std::to_string(n - 1)), std::string::npos) << message;
    EXPECT_NE(message.find("the output has " + std::to_string(n)), std::string::npos) << message;
  }
  EXPECT_TRUE(c.is_valid(sa::Side::host));
  EXPECT_FALSE(a.is_valid(sa::Side::device));
}

TEST(Map, ReturnsANewArrayValidOnTheDeviceOnly) {
  sa::Stream stream;
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  SmartArray<float> a(va), b(vb);
  SmartArray<float> c;
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0});
    c = sa::map(Add{}, a, b, stream);
  }
  EXPECT_EQ(c.size(), n);
  EXPECT_FALSE(c.is_valid(sa::Side::host));
  EXPECT_TRUE(c.is_valid(sa::Side::device));
  {
    sa::ExpectTransfers expect({.d2h = 1});
    EXPECT_EQ(host_copy(c), added(va, vb));
  }
}

TEST(Map, ResultTypeIsTheFunctorsAndScalarsBroadcast) {
  const auto vi = random_values<int>(n);
  const float shift = sa::test::random_value<float>();
  SmartArray<int> i(vi);
  auto r = sa::map(Mixed{}, i, shift);
  static_assert(std::is_same_v<decltype(r), SmartArray<double>>);
  const auto got = host_copy(r);
  for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(got[k], vi[k] * 0.5 + shift) << k;
}

TEST(Map, SizeMismatchThrowsAndAcquiresNothing) {
  SmartArray<float> a(random_values<float>(10)), b(random_values<float>(12));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    (void)sa::map(Add{}, a, b);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("operand 2 has 12 elements"), std::string::npos) << message;
    EXPECT_NE(message.find("has 10"), std::string::npos) << message;
  }
}

TEST(Map, ResultTakesNoHostMemoryUntilTheHostReadsIt) {
  sa::Stream stream;
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  const SmartArray<float> a(va), b(vb);
  (void)a.device_view(stream);
  (void)b.device_view(stream);
  const sa::MemoryStats host_before = sa::default_pinned_resource().stats();
  SmartArray<float> c;
  {
    // Inputs already on the device, the result written there with discard intent: no copy, and
    // no host buffer allocated or written.
    sa::ExpectTransfers expect({});
    c = sa::map(Add{}, a, b, stream);
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count);
  EXPECT_EQ(sa::default_pinned_resource().stats().current_bytes, host_before.current_bytes);
  EXPECT_EQ(c.capacity(), n);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(c), added(va, vb));
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count + 1);
}

TEST(Map, ResultIsAnArrayLikeAnyOther) {
  const auto va = random_values<float>(n);
  SmartArray<float> a(va);
  SmartArray<float> c = sa::map(TwicePlusOne{}, a);
  // Written on the host before it was ever read there: nothing comes back.
  {
    sa::ExpectTransfers expect({});
    c.assign(va.begin(), va.end());
  }
  EXPECT_TRUE(c.is_valid(sa::Side::host));
  EXPECT_FALSE(c.is_valid(sa::Side::device));
  c = sa::map(TwicePlusOne{}, a);
  {
    // An append to the device-valid result: the host copy is made for the tail only.
    sa::ExpectTransfers expect({});
    c.push_back(1.5F);
  }
  auto expected = sa::test::scaled(va);
  expected.push_back(1.5F);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    EXPECT_EQ(host_copy(c), expected);
  }
}

// --- reduce, copy, fill -------------------------------------------------------------------------

TEST(Reduce, ReturnsTheValueWithoutCopyingTheArrayBack) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  const long long sum = std::accumulate(values.begin(), values.end(), 0LL);
  SmartArray<long long> wide(std::vector<long long>(values.begin(), values.end()));
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 1, .d2h_bytes = sizeof(long long)});
    EXPECT_EQ(sa::reduce(wide, 0LL, cuda::std::plus<long long>{}), sum);
  }
  EXPECT_EQ(wide.transfer_stats().d2h_count, 0U);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 1, .d2h_bytes = sizeof(int)});
    EXPECT_EQ(sa::reduce(a, 0, sa::test::Maximum<int>{}),
              *std::max_element(values.begin(), values.end()));
  }
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = sizeof(int)});
    EXPECT_EQ(sa::reduce(a, std::numeric_limits<int>::max(), sa::test::Minimum<int>{}),
              *std::min_element(values.begin(), values.end()));
  }
  EXPECT_EQ(a.transfer_stats().d2h_count, 0U);
}

TEST(Reduce, FloatSumMatchesWithinRounding) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const double expected = std::accumulate(values.begin(), values.end(), 0.0);
  double magnitude = 0;
  for (float v : values) magnitude += std::fabs(v);
  const float init = 1.5F;
  EXPECT_NEAR(sa::reduce(a, init, cuda::std::plus<float>{}), expected + init, 1e-5 * magnitude);
}

TEST(Reduce, OfADeviceWrittenArrayCopiesNothingButTheResult) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  sa::test::scale_on_device(a);
  const auto scaled = sa::test::scaled(values);
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = sizeof(float)});
  EXPECT_EQ(sa::reduce(a, -1e30F, sa::test::Maximum<float>{}, stream),
            *std::max_element(scaled.begin(), scaled.end()));
  EXPECT_FALSE(a.is_valid(sa::Side::host));
}

TEST(Reduce, AsyncLeavesTheResultOnTheDevice) {
  const auto values = random_values<int>(n);
  SmartArray<int> a(values);
  SmartArray<int> result;
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
    result = sa::reduce_async(a, 0, sa::test::Maximum<int>{});
  }
  EXPECT_FALSE(result.is_valid(sa::Side::host));
  EXPECT_EQ(std::as_const(result)[0], *std::max_element(values.begin(), values.end()));
}

TEST(Reduce, AsyncResultTakesNoHostMemoryUntilRead) {
  const auto values = random_values<int>(n);
  const SmartArray<int> a(values);
  (void)a.device_view();
  const sa::MemoryStats host_before = sa::default_pinned_resource().stats();
  SmartArray<int> result;
  {
    sa::ExpectTransfers expect({});
    result = sa::reduce_async(a, 0, sa::test::Maximum<int>{});
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count);
  {
    sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(int)});
    EXPECT_EQ(std::as_const(result)[0], *std::max_element(values.begin(), values.end()));
  }
  EXPECT_EQ(sa::default_pinned_resource().stats().total_count, host_before.total_count + 1);
}

TEST(Reduce, AsyncInputMayBeDestroyedBeforeTheResultIsRead) {
  const auto values = random_values<int>(n);
  const int expected = *std::max_element(values.begin(), values.end());
  sa::Stream stream;
  auto a = std::make_optional<SmartArray<int>>(values);
  std::promise<void> release = sa::test::gate(stream);  // the reduction runs after the destruction
  SmartArray<int> result;
  {
    sa::ExpectTransfers expect({.h2d = 1});
    result = sa::reduce_async(*a, 0, sa::test::Maximum<int>{}, stream);
    a.reset();
  }
  release.set_value();
  sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = sizeof(int)});
  EXPECT_EQ(std::as_const(result)[0], expected);
}

TEST(Reduce, OfAnEmptyArrayIsInitAndTouchesNothing) {
  const SmartArray<float> empty;
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  EXPECT_EQ(sa::reduce(empty, 4.25F, cuda::std::plus<float>{}), 4.25F);
}

TEST(Copy, IsOneDeviceToDeviceCopyIntoADiscardedDestination) {
  const auto values = random_values<float>(n);
  SmartArray<float> src(values);
  SmartArray<float> dst = poisoned(n);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .d2d = 1, .d2d_bytes = n * sizeof(float)});
    sa::copy(dst, src);
  }
  EXPECT_EQ(dst.transfer_stats().h2d_count, 0U);
  EXPECT_EQ(dst.transfer_stats().d2d_count, 1U);  // counted on the destination, once
  EXPECT_EQ(dst.transfer_stats().d2d_bytes, n * sizeof(float));
  EXPECT_EQ(src.transfer_stats().d2d_count, 0U);
  EXPECT_FALSE(dst.is_valid(sa::Side::host));
  EXPECT_TRUE(src.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(dst), values);
}

TEST(Copy, SizeMismatchNamesBothSizesAndAcquiresNothing) {
  SmartArray<float> src(random_values<float>(7)), dst(9);
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0, .d2d = 0});
  try {
    sa::copy(dst, src);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("copy of 7 elements into an array of 9"), std::string::npos) << message;
  }
}

TEST(Fill, DiscardsAndWritesEveryElement) {
  SmartArray<int> a(random_values<int>(n));
  const int value = sa::test::random_value<int>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::fill(a, value);
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_EQ(host_copy(a), std::vector<int>(n, value));
}

// --- a chain of ten device operations ----------------------------------------------------------

TEST(Chain, TenKernelsCopyEachInputInOnceAndTheResultOutOnce) {
  sa::Stream stream;
  const auto vx = random_values<float>(n);
  const auto vy = random_values<float>(n);
  SmartArray<float> x(vx), y(vy);
  SmartArray<float> t(n), u(n), w(n), result = poisoned(n);
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) {
    float rt = vx[i] * 2 + 1;      // 1
    float ru = rt + vy[i];         // 2
    ru = ru * 2 + 1;               // 3
    float rw = 0.25F;              // 4
    rw = 0.5F * ru + rw;           // 5
    rt = rw;                       // 6
    rt = rt * rt;                  // 7
    ru = rt + vx[i];               // 8
    float rr = 3.0F * ru + vy[i];  // 9
    rr = rr + rr;                  // 10
    expected[i] = rr;
  }
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 1, .d2d = 1});
    sa::transform(sa::out(t), TwicePlusOne{}, x, stream);                              // 1
    sa::transform(sa::out(u), Add{}, t, y, stream);                                    // 2
    sa::transform(u, TwicePlusOne{}, u, stream);                                       // 3
    sa::fill(w, 0.25F, stream);                                                        // 4
    sa::transform(w, Axpy{}, 0.5F, u, w, stream);                                      // 5
    sa::copy(t, w, stream);                                                            // 6
    sa::for_each_index(n, Square{t.device_view(Access::read_write, stream)}, stream);  // 7
    sa::transform(sa::out(u), Add{}, t, x, stream);                                    // 8
    sa::transform(sa::out(result), Axpy{}, 3.0F, u, y, stream);                        // 9
    sa::transform(result, Add{}, result, result, stream);                              // 10
    expect_close(host_copy(result), expected);
  }
  EXPECT_EQ(x.transfer_stats().h2d_count, 1U);
  EXPECT_EQ(y.transfer_stats().h2d_count, 1U);
  EXPECT_EQ(result.transfer_stats().d2h_count, 1U);
  for (const auto* a : {&t, &u, &w}) {
    EXPECT_EQ(a->transfer_stats().h2d_count + a->transfer_stats().d2h_count, 0U);
  }
}
