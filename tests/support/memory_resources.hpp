// The resources that the memory-layer suites test, each owning its upstream (with their GoogleTest
// type names), and the buffers and gates of their stream-ordering cases: shared by
// test_memory_resources.cu and test_pool_resource.cu.
#pragma once

#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/runtime/stream.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace smartarray::test::memory {

inline constexpr std::size_t kib = std::size_t{1} << 10;
inline constexpr std::size_t mib = std::size_t{1} << 20;
/// The block size of the split, merge, trim and limit cases: a multiple of 256.
inline constexpr std::size_t unit = 64 * kib;

// --- resources under test, each owning its upstream ---

template <typename Upstream>
struct PoolOver {
  explicit PoolOver(PoolOptions options = {}) : pool(upstream, std::move(options)) {}
  MemoryResource& resource() { return pool; }
  Upstream upstream;
  PoolResource pool;
};

template <typename Raw>
struct RawResource {
  MemoryResource& resource() { return raw; }
  Raw raw;
};

using PoolOverDevice = PoolOver<DeviceMemoryResource>;
using PoolOverPinned = PoolOver<PinnedMemoryResource>;
using PoolOverManaged = PoolOver<ManagedMemoryResource>;
using RawDevice = RawResource<DeviceMemoryResource>;
using RawPinned = RawResource<PinnedMemoryResource>;
using RawManaged = RawResource<ManagedMemoryResource>;

struct ResourceNames {
  template <typename T>
  static std::string GetName(int) {  // NOLINT(readability-identifier-naming): gtest's name
    if constexpr (std::is_same_v<T, PoolOverDevice>) return "PoolOverDevice";
    if constexpr (std::is_same_v<T, PoolOverPinned>) return "PoolOverPinned";
    if constexpr (std::is_same_v<T, PoolOverManaged>) return "PoolOverManaged";
    if constexpr (std::is_same_v<T, RawDevice>) return "RawDevice";
    if constexpr (std::is_same_v<T, RawPinned>) return "RawPinned";
    if constexpr (std::is_same_v<T, RawManaged>) return "RawManaged";
    return "Unknown";
  }
};

/// Raw pinned memory for staging copies (so that they are truly asynchronous on the GPU).
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) : data_(detail::runtime().allocate_pinned(bytes)) {}
  ~PinnedBuffer() { detail::runtime().free_pinned(data_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  [[nodiscard]] void* data() const { return data_; }

 private:
  void* data_;
};

/// A buffer on the other side from blocks of `block_kind`: device memory for host blocks, pinned
/// memory for device blocks. Copies between a block and it are asynchronous on the GPU, as
/// host-to-host copies are not.
class OtherSide {
 public:
  OtherSide(MemoryKind block_kind, std::size_t bytes)
      : on_device_(block_kind != MemoryKind::device),
        bytes_(bytes),
        data_(on_device_ ? detail::runtime().allocate_device(bytes)
                         : detail::runtime().allocate_pinned(bytes)) {}
  ~OtherSide() {
    if (on_device_) {
      detail::runtime().free_device(data_);
    } else {
      detail::runtime().free_pinned(data_);
    }
  }
  OtherSide(const OtherSide&) = delete;
  OtherSide& operator=(const OtherSide&) = delete;

  /// Replaces the contents with bytes from `host` (synchronously).
  void fill(const void* host) {
    if (!on_device_) {
      std::memcpy(data_, host, bytes_);
      return;
    }
    detail::runtime().copy_async(data_, host, bytes_, detail::CopyKind::host_to_device,
                                 StreamRef{});
    detail::runtime().synchronize(StreamRef{});
  }
  /// The contents (synchronously).
  [[nodiscard]] std::vector<unsigned char> read() const {
    std::vector<unsigned char> out(bytes_);
    if (!on_device_) {
      std::memcpy(out.data(), data_, bytes_);
      return out;
    }
    detail::runtime().copy_async(out.data(), data_, bytes_, detail::CopyKind::device_to_host,
                                 StreamRef{});
    detail::runtime().synchronize(StreamRef{});
    return out;
  }
  /// Enqueues a copy of the contents into `block` on `stream`.
  void copy_to_async(void* block, StreamRef stream) const {
    detail::runtime().copy_async(
        block, data_, bytes_,
        on_device_ ? detail::CopyKind::device_to_host : detail::CopyKind::host_to_device, stream);
  }
  /// Enqueues a copy of `block` into this buffer on `stream`.
  void copy_from_async(const void* block, StreamRef stream) const {
    detail::runtime().copy_async(
        data_, block, bytes_,
        on_device_ ? detail::CopyKind::host_to_device : detail::CopyKind::device_to_host, stream);
  }

 private:
  bool on_device_;
  std::size_t bytes_;
  void* data_;
};

inline bool same_bytes(const void* a, const void* b, std::size_t bytes) {
  return std::memcmp(a, b, bytes) == 0;
}

/// Holds a stream with a host function until `open()` (or, as a safety net, 10 s): work queued
/// behind it stays pending, whatever the timing.
class Gate {
 public:
  explicit Gate(StreamRef stream) {
    detail::runtime().launch_host_func(stream, [opened = opened_.get_future().share()] {
      (void)opened.wait_for(std::chrono::seconds(10));
    });
  }
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void open() {
    if (!is_open_) opened_.set_value();
    is_open_ = true;
  }

 private:
  std::promise<void> opened_;
  bool is_open_ = false;
};

/// True when all work queued on `stream` completes within `limit` (polled).
inline bool completes_within(StreamRef stream, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (detail::runtime().query(stream)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return detail::runtime().query(stream);
}

inline std::uint64_t seam_allocations() { return global_transfer_stats().allocation_count; }

}  // namespace smartarray::test::memory
