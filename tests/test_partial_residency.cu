// Range-granular residency (docs/residency.md): element access moves only the element's tile,
// with readahead on sequential misses, and slices move only their range. Exact transfer counts on
// both backends.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;

namespace {

constexpr std::size_t tile = sa::TileSize{}.bytes();      // the default tile, in bytes
constexpr std::size_t per_tile = tile / sizeof(float);    // floats in a tile
constexpr std::size_t n = 64 * per_tile;                   // 64 tiles, 4 MiB

/// An array of `values` written on the device last: the host copy is stale everywhere.
SmartArray<float> device_written(const std::vector<float>& values,
                                 const sa::ArrayOptions& options = {}) {
  SmartArray<float> a(values, options);
  scale_on_device(a);
  return a;
}

/// A fresh array holding what the device holds of `a`, copied on the device (so that the host copy
/// of `a` is not touched); its own transfers come after the caller's count.
SmartArray<float> device_copy(const SmartArray<float>& a) {
  SmartArray<float> out(a.size());
  sa::test::poison(out.data(), out.size());
  const sa::DeviceView<const float> in = a.device_view();
  const sa::DeviceView<float> dst = out.device_view(Access::discard);
  sa::for_each_index(a.size(), [in, dst] SMARTARRAY_HOST_DEVICE(std::size_t i) { dst[i] = in[i]; });
  return out;
}

/// v[i] = v[i] * 2 + 1 on the device.
void scale_view(sa::DeviceView<float> v) {
  sa::for_each_index(v.size(), [v] SMARTARRAY_HOST_DEVICE(std::size_t i) { v[i] = v[i] * 2 + 1; });
}

}  // namespace

TEST(ElementAccess, AScalarReadOfAStaleArrayFetchesOneTile) {
  const auto values = random_values<float>(n);
  const SmartArray<float> a = device_written(values);
  const std::vector<float> expected = scaled(values);
  const std::size_t i = 5 * per_tile + 17;
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = tile});
    EXPECT_EQ(a[i], expected[i]);
  }
  {
    // The rest of the tile is held now: no copy, whatever the access.
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    EXPECT_EQ(a[5 * per_tile], expected[5 * per_tile]);
    EXPECT_EQ(a.at(6 * per_tile - 1), expected[6 * per_tile - 1]);
  }
  EXPECT_FALSE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));
}

TEST(ElementAccess, TheLastTileEndsAtTheSize) {
  const std::size_t size = per_tile + 1000;
  const auto values = random_values<float>(size);
  const SmartArray<float> a = device_written(values);
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = 1000 * sizeof(float)});
  EXPECT_EQ(a.back(), scaled(values).back());
}

TEST(ElementAccess, AWriteMarksOnlyItsTileStaleOnTheDevice) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  (void)a.device_view(sa::StreamRef{});  // both sides valid
  const float first = sa::test::random_value<float>();
  const float last = sa::test::random_value<float>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    a.front() = first;
    a[n - 1] = last;
  }
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_FALSE(a.is_valid(sa::Side::device));
  std::vector<float> expected = values;
  expected.front() = first;
  expected.back() = last;
  SmartArray<float> copied;
  {
    // The two written tiles go up, in two copies; the 62 between them stay.
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0, .h2d_bytes = 2 * tile});
    copied = device_copy(a);
  }
  EXPECT_EQ(sa::test::host_copy(copied), expected);
}

TEST(ElementAccess, AHostWriteAfterTheUploadOfItsTileDoesNotWaitNorChangeWhatWentUp) {
  const char* batched = std::getenv("SMARTARRAY_BATCHED_UPLOADS");
  if (batched != nullptr && std::string_view(batched) == "0") {
    GTEST_SKIP() << "SMARTARRAY_BATCHED_UPLOADS=0: small uploads take the asynchronous path, "
                    "whose event a later host writer waits for";
  }
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  sa::Stream stream;
  (void)a.device_view(stream);  // both sides valid
  stream.synchronize();
  const float first = sa::test::random_value<float>();
  const float second = first + 1;
  a[1] = first;
  const float* device = std::as_const(a).device_view(stream).data();  // one upload, of tile 0
  const sa::TransferStats before = sa::global_transfer_stats();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    a[1] = second;
  }
  // The upload read its tile when it was queued on the idle stream: nothing was left to wait for.
  EXPECT_EQ((sa::global_transfer_stats() - before).wait_count, 0U);
  float got = 0;
  sa::detail::runtime().copy_async(&got, device + 1, sizeof(float),
                                   sa::detail::CopyKind::device_to_host, stream);
  stream.synchronize();
  EXPECT_EQ(got, first);
  EXPECT_EQ(std::as_const(a)[1], second);
}

TEST(ElementAccess, AManagedArrayIsMadeWholeOnTheHostByItsFirstElementAccess) {
  if (!sa::device_properties().managed_memory) GTEST_SKIP() << "no managed memory";
  const auto values = random_values<float>(n);
  const SmartArray<float> a = device_written(values, {.mode = sa::MemoryMode::managed});
  const std::vector<float> expected = scaled(values);
  const sa::TransferStats before = sa::global_transfer_stats();
  // One buffer: a prefetch moves all of it, so the first access makes the whole host copy current
  // and the accesses to other tiles move nothing.
  EXPECT_EQ(a[5], expected[5]);
  EXPECT_EQ(a[n / 2], expected[n / 2]);
  EXPECT_EQ(a.back(), expected.back());
  const sa::TransferStats made = sa::global_transfer_stats() - before;
  const std::uint64_t prefetches = sa::device_properties().concurrent_managed_access ? 1 : 0;
  EXPECT_EQ(made.prefetch_count, prefetches);
  EXPECT_EQ(made.prefetch_bytes, prefetches * n * sizeof(float));
  EXPECT_TRUE(a.is_valid(sa::Side::host));
}

TEST(ElementAccess, AWriteToAStaleTileFetchesItAndMarksItStaleOnTheDevice) {
  const auto values = random_values<float>(n);
  SmartArray<float> a = device_written(values);
  std::vector<float> expected = scaled(values);
  const std::size_t i = 9 * per_tile + 3;
  const float value = sa::test::random_value<float>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = tile});
    a[i] = value;
  }
  expected[i] = value;
  SmartArray<float> copied;
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = tile});
    copied = device_copy(a);
  }
  EXPECT_EQ(sa::test::host_copy(copied), expected);
}

TEST(ElementAccess, ASequentialScanReadsAheadAfterThreeMisses) {
  const auto values = random_values<float>(n);
  const std::vector<float> expected = scaled(values);
  for (const bool forward : {true, false}) {
    const SmartArray<float> a = device_written(values);
    std::vector<float> seen(n);
    {
      // Two tiles one by one, then the third miss fetches everything ahead: three copies of the
      // whole array's bytes.
      sa::ExpectTransfers expect({.h2d = 0, .d2h = 3, .d2h_bytes = n * sizeof(float)});
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t i = forward ? k : n - 1 - k;
        seen[i] = a[i];
      }
    }
    EXPECT_EQ(seen, expected) << (forward ? "forward" : "backward");
    EXPECT_TRUE(a.is_valid(sa::Side::host));
  }
}

TEST(ElementAccess, ScatteredReadsFetchOnlyTheirTiles) {
  const auto values = random_values<float>(n);
  const std::vector<float> expected = scaled(values);
  const SmartArray<float> a = device_written(values);
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 4, .d2h_bytes = 4 * tile});
  for (const std::size_t t : {3, 40, 7, 21}) {
    EXPECT_EQ(a[t * per_tile + t], expected[t * per_tile + t]);
  }
}

TEST(ElementAccess, TheTileIsAnOptionOfTheArray) {
  const auto values = random_values<float>(n);
  const SmartArray<float> a = device_written(values, {.tile = sa::TileSize(4096)});
  EXPECT_EQ(a.get_allocator().options().tile.bytes(), 4096U);
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = 4096});
    EXPECT_EQ(a[12345], scaled(values)[12345]);
  }
  EXPECT_THROW((void)sa::TileSize(1000), std::invalid_argument);
  EXPECT_THROW((void)sa::TileSize(2048), std::invalid_argument);
  try {
    (void)sa::TileSize(std::size_t{3} << 20);
    FAIL() << "a tile of 3 MiB was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("3145728"), std::string::npos) << error.what();
  }
}

TEST(ElementAccess, ConstReadsFromManyThreadsSeeTheDeviceWrite) {
  const auto values = random_values<float>(n);
  const std::vector<float> expected = scaled(values);
  const SmartArray<float> a = device_written(values);
  std::vector<std::thread> readers;
  std::vector<int> wrong(4, 0);
  for (std::size_t r = 0; r < 4; ++r) {
    readers.emplace_back([&, r] {
      for (std::size_t k = 0; k < 4096; ++k) {
        const std::size_t i = (k * 7919 + r * 104729) % n;
        if (a[i] != expected[i]) ++wrong[r];
      }
    });
  }
  for (std::thread& reader : readers) reader.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

TEST(Slices, AHostReadCopiesOnlyTheSlice) {
  for (const sa::MemoryMode mode : {sa::MemoryMode::explicit_copy, sa::MemoryMode::pageable}) {
    const auto values = random_values<float>(n);
    const std::vector<float> expected = scaled(values);
    const SmartArray<float> a = device_written(values, {.mode = mode});
    const sa::Slice<const float> s = a.slice(100, 1000);
    {
      sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = 1000 * sizeof(float)});
      const std::span<const float> view = s.host_view();
      ASSERT_EQ(view.size(), 1000U);
      EXPECT_TRUE(std::equal(view.begin(), view.end(), expected.begin() + 100))
          << sa::to_string(mode);
    }
    EXPECT_FALSE(a.is_valid(sa::Side::host));
    {
      // The whole array: the two stale ranges around the slice, one copy each.
      sa::ExpectTransfers expect(
          {.h2d = 0, .d2h = 2, .d2h_bytes = (n - 1000) * sizeof(float)});
      EXPECT_EQ(sa::test::host_copy(a), expected) << sa::to_string(mode);
    }
  }
}

TEST(Slices, ADeviceWriteMarksOnlyTheSliceStaleOnTheHost) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const std::size_t first = 3 * per_tile + 5;
  const std::size_t count = 2 * per_tile;
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = count * sizeof(float)});
    scale_view(a.slice(first, count).device_view(Access::read_write));
  }
  std::vector<float> expected = values;
  for (std::size_t i = first; i < first + count; ++i) expected[i] = expected[i] * 2 + 1;
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = count * sizeof(float)});
    EXPECT_EQ(sa::test::host_copy(a), expected);
  }
}

TEST(Slices, ADiscardCopiesNothingIn) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  const float value = sa::test::random_value<float>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::test::fill_view(a.slice(10, 20).device_view(Access::discard), value);
  }
  std::vector<float> expected = values;
  std::fill(expected.begin() + 10, expected.begin() + 30, value);
  sa::ExpectTransfers expect({.h2d = 0, .d2h = 1, .d2h_bytes = 20 * sizeof(float)});
  EXPECT_EQ(sa::test::host_copy(a), expected);
}

TEST(Slices, AHostWriteThroughASliceMarksOnlyItsRange) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  (void)a.device_view(sa::StreamRef{});
  const std::span<float> view = a.slice(n - 40, 40).host_view();
  const auto fresh = random_values<float>(40);
  std::copy(fresh.begin(), fresh.end(), view.begin());
  std::vector<float> expected = values;
  std::copy(fresh.begin(), fresh.end(), expected.end() - 40);
  SmartArray<float> copied;
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .h2d_bytes = 40 * sizeof(float)});
    copied = device_copy(a);
  }
  EXPECT_EQ(sa::test::host_copy(copied), expected);
}

TEST(Slices, ASliceOfASliceAndItsBounds) {
  const auto values = random_values<float>(1000);
  SmartArray<float> a(values);
  const sa::Slice<float> outer = a.slice(100, 500);
  const sa::Slice<float> inner = outer.slice(50, 10);
  EXPECT_EQ(inner.first(), 150U);
  EXPECT_EQ(inner.size(), 10U);
  EXPECT_EQ(&inner.array(), &a);
  const std::span<float> view = inner.host_view(Access::read);
  EXPECT_TRUE(std::equal(view.begin(), view.end(), values.begin() + 150));
  EXPECT_TRUE(a.slice(1000, 0).empty());
  try {
    (void)a.slice(990, 20);
    FAIL() << "a slice past the end was made";
  } catch (const std::out_of_range& error) {
    const std::string what = error.what();
    EXPECT_NE(what.find("[990, 1010)"), std::string::npos) << what;
    EXPECT_NE(what.find("1000"), std::string::npos) << what;
  }
  EXPECT_THROW((void)outer.slice(495, 6), std::out_of_range);
  // A slice names its array: after the array shrinks below it, its acquires throw and change
  // nothing.
  a.resize(120);
  EXPECT_THROW((void)inner.host_view(), std::out_of_range);
  EXPECT_THROW((void)outer.device_view(sa::StreamRef{}), std::out_of_range);
  EXPECT_EQ(sa::test::host_copy(a), std::vector<float>(values.begin(), values.begin() + 120));
}

TEST(Slices, ASliceStaysUsableAcrossAReallocation) {
  const auto values = random_values<float>(100);
  SmartArray<float> a(values);
  const sa::Slice<const float> s = std::as_const(a).slice(10, 5);
  a.reserve(10 * a.capacity());
  const std::span<const float> view = s.host_view();
  EXPECT_TRUE(std::equal(view.begin(), view.end(), values.begin() + 10));
  static_assert(std::is_trivially_copyable_v<sa::Slice<float>>);
  static_assert(std::is_convertible_v<sa::Slice<float>, sa::Slice<const float>>);
  static_assert(!std::is_convertible_v<sa::Slice<const float>, sa::Slice<float>>);
}
