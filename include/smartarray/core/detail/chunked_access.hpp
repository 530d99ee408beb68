/**
 * @file core/detail/chunked_access.hpp
 * @brief Private: out-of-core access. The one operation through which every adapter runs arrays
 *        that need more device memory together than the device budget: the adapter names its
 *        operands as slices, and each chunk of them reaches its kernel through double-buffered
 *        device memory from the pool.
 *
 * `exceeds_device_budget` decides; `ChunkedCall` runs. Each chunk's copy in, kernel and copy out
 * are queued on one of two streams, chunk by chunk in turn, so that one chunk's upload overlaps
 * the other's kernel and download (the copy engines run both directions at once). Each stream
 * reuses its own buffers only after its earlier chunk, in stream order. The operands' host copies
 * are made whole first (a read of what the device holds), and the call returns once every chunk
 * is back on the host: the output is then valid on the host only, and the device holds none of
 * it. The copies are counted and traced as the arrays' own.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/core/slice.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/memory_mode.hpp>
#include <smartarray/runtime/detail/stream_work.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>

namespace smartarray::detail {

/// Chunks in flight at once, each with its own stream and its own buffer per array (double
/// buffering): one chunk's upload runs while the other's kernel and download do. Three slots
/// measured the same on an H100 system, where the copy engines running both ways at once are the
/// bound (docs/residency.md).
inline constexpr std::size_t chunk_slots = 2;

/// The streams of chunked calls on `device`, made on first use and kept for the process.
[[nodiscard]] std::array<StreamRef, chunk_slots> chunk_streams(int device);

/// The elements of each chunk of `what` over `n` elements on `device`, when `element_bytes` bytes
/// of arrays stand behind each element: a buffer per array and slot within half the device's
/// budget, a multiple of 256 elements. Throws out_of_memory, naming the bytes and the budget,
/// when not even 256 elements fit.
[[nodiscard]] std::size_t chunk_elements(const char* what, std::size_t n,
                                         std::size_t element_bytes, int device);

/// The bytes of the array behind operand `operand`: a slice's device acquire takes its whole
/// array's buffer, so a slice counts its array's size. Views and scalars count none.
template <typename A>
[[nodiscard]] std::size_t array_bytes_of(const A& operand) noexcept {
  if constexpr (is_slice_v<A>) {
    return operand.array().size() * sizeof(typename A::value_type);
  } else {
    (void)operand;
    return 0;
  }
}
/// True when the array behind `operand` keeps a device buffer of its own (explicit or pageable
/// mode): mapped arrays need no device memory, and managed ones are never oversubscribed. True
/// for views and scalars.
template <typename A>
[[nodiscard]] bool has_device_buffer(const A& operand) noexcept {
  if constexpr (is_slice_v<A>) {
    const MemoryMode mode = operand.array().memory_mode();
    return mode == MemoryMode::explicit_copy || mode == MemoryMode::pageable;
  } else {
    (void)operand;
    return true;
  }
}
/// array_bytes_of() of an operand with a device buffer of its own (has_device_buffer()), else 0.
template <typename A>
[[nodiscard]] std::size_t device_bytes_of(const A& operand) noexcept {
  return has_device_buffer(operand) ? array_bytes_of(operand) : 0;
}

/// True when a call on `stream` over `operands` (slices, views and scalars), and `extra_bytes` of
/// results that are not made yet, must run in chunks: together they need more device memory than
/// the budget of the stream's device, and each array keeps a device buffer of its own. A call
/// that runs in chunks has its stream checked here, before anything changes (one that does not
/// has it checked when it acquires its arrays).
template <typename... Operands>
[[nodiscard]] bool exceeds_device_budget(StreamRef stream, std::size_t extra_bytes,
                                         const Operands&... operands) {
  // Every adapter call asks: first the sizes alone, which rule out all calls that fit.
  const std::size_t budget = device_budget(stream_device(stream).ordinal);
  if ((array_bytes_of(operands) + ... + extra_bytes) <= budget) return false;
  if ((device_bytes_of(operands) + ... + extra_bytes) <= budget ||
      !(has_device_buffer(operands) && ...)) {
    return false;
  }
  check_stream(stream);
  return true;
}

/// Device memory for the chunks of one array: a buffer of `bytes` per slot, taken on the slot's
/// stream (of `device`) and given back on it, after every chunk that used it.
class ChunkBuffers {
 public:
  ChunkBuffers(std::size_t bytes, const std::array<StreamRef, chunk_slots>& streams, int device);
  ChunkBuffers(const ChunkBuffers&) = delete;
  ChunkBuffers& operator=(const ChunkBuffers&) = delete;
  ~ChunkBuffers();
  [[nodiscard]] std::byte* operator[](std::size_t b) const noexcept { return buffer_[b]; }

 private:
  void release() noexcept;
  MemoryResource* resource_;
  std::array<StreamRef, chunk_slots> streams_;
  std::size_t bytes_;
  std::array<std::byte*, chunk_slots> buffer_{};
};

/// The copies of chunks between an array's host copy and memory outside it, counted and traced
/// as the array's own (the core's; SmartArray grants this class alone access to it).
struct ChunkedAccess {
  /// Queues the copy of elements [first, first + count) of `slice`, which the host holds, into
  /// `device` on `stream`.
  template <typename T>
  static void upload(const Slice<const T>& slice, std::byte* device, std::size_t first,
                     std::size_t count, StreamRef stream,
                     const smartarray::source_location& where) {
    slice.array().core_.upload_chunk(device, bytes_of(slice, first, count), stream, where);
  }
  /// Queues the copy of `device` into elements [first, first + count) of `slice`, which the host
  /// alone holds, acquired for writing, on `stream`.
  template <typename T>
  static void download(const Slice<T>& slice, const std::byte* device, std::size_t first,
                       std::size_t count, StreamRef stream,
                       const smartarray::source_location& where) {
    slice.array().core_.download_chunk(device, bytes_of(slice, first, count), stream, where);
  }

 private:
  template <typename T>
  static ByteRange bytes_of(const Slice<T>& slice, std::size_t first, std::size_t count) noexcept {
    constexpr std::size_t size = sizeof(std::remove_const_t<T>);
    return {(slice.first() + first) * size, (slice.first() + first + count) * size};
  }
};

/// One operand of a chunked call: a slice (its host copy made whole for reading, each chunk
/// uploaded into a buffer), a device view (each chunk a part of it) or a scalar.
template <typename A>
class ChunkedOperand {
 public:
  ChunkedOperand(const A& operand, std::size_t chunk,
                 const std::array<StreamRef, chunk_slots>& streams, int device,
                 const smartarray::source_location& where)
      : operand_(&operand) {
    if constexpr (is_slice_v<A>) {
      (void)Slice<const Value>(operand).host_view(std::nullopt, where);
      buffers_ = std::make_unique<ChunkBuffers>(chunk * sizeof(Value), streams, device);
    }
  }
  /// Queues the upload of elements [first, first + count) into buffer `b` on `stream`.
  void upload(std::size_t b, std::size_t first, std::size_t count, StreamRef stream,
              const smartarray::source_location& where) const {
    if constexpr (is_slice_v<A>) {
      ChunkedAccess::upload(Slice<const Value>(*operand_), (*buffers_)[b], first, count, stream,
                            where);
    }
  }
  /// What the kernel gets for the chunk [first, first + count) held in buffer `b`.
  [[nodiscard]] auto device(std::size_t b, std::size_t first, std::size_t count) const {
    if constexpr (is_slice_v<A>) {
      return DeviceView<const Value>(reinterpret_cast<const Value*>((*buffers_)[b]), count);
    } else if constexpr (is_device_view_v<A>) {
      return A(operand_->data() + first, count);
    } else {
      return *operand_;
    }
  }

 private:
  template <typename B, bool = is_slice_v<B>>
  struct ValueOf {
    using type = void;
  };
  template <typename B>
  struct ValueOf<B, true> {
    using type = typename B::value_type;
  };
  using Value = typename ValueOf<A>::type;

  const A* operand_;
  std::unique_ptr<ChunkBuffers> buffers_;  // movable, so that a tuple of operands can be made
};

/// The bytes per element that the chunks of operand type `A` take on the device.
template <typename A>
[[nodiscard]] constexpr std::size_t chunk_bytes_of() noexcept {
  if constexpr (is_slice_v<A>) {
    return sizeof(typename A::value_type);
  } else {
    return 0;
  }
}

/// One call over `n` elements in chunks, on the stream's device: its chunk size and streams.
class ChunkedCall {
 public:
  /// @param what the call, for the error when not even the smallest chunk fits.
  /// @param n the elements.
  /// @param element_bytes the bytes per element of every operand and output that is chunked.
  ChunkedCall(const char* what, std::size_t n, std::size_t element_bytes, StreamRef stream,
              const smartarray::source_location& where);
  /// The elements of each chunk.
  [[nodiscard]] std::size_t chunk() const noexcept { return chunk_; }
  /// The number of chunks.
  [[nodiscard]] std::size_t chunks() const noexcept { return (n_ + chunk_ - 1) / chunk_; }

  /// Runs `kernel(first, count, stream, chunks...)` for each chunk of `operands`, where each slice
  /// operand's chunk is a `DeviceView<const T>` of its uploaded elements [first, first + count),
  /// each device view's chunk is its part, and a scalar is itself.
  template <typename Kernel, typename... Operands>
  void run(Kernel kernel, const Operands&... operands) const {
    run_with([] {},
             [&](std::size_t, std::size_t first, std::size_t count, StreamRef on,
                 const auto&... chunks) { kernel(first, count, on, chunks...); },
             operands...);
  }

  /// run() with an output: `kernel(first, count, stream, out, chunks...)` writes the chunk's
  /// results to the `DeviceView<R>` `out`, which is then copied into `output`'s elements [first,
  /// first + count). The operands' host copies are made whole first; then `output`'s is acquired
  /// with `output_access` (`read_write` when an operand is the output's array, else `discard`).
  template <typename R, typename Kernel, typename... Operands>
  void run_into(const Slice<R>& output, Access output_access, Kernel kernel,
                const Operands&... operands) const {
    std::optional<ChunkBuffers> results;
    run_with(
        [&] {
          (void)output.host_view(output_access, std::nullopt, where_);
          results.emplace(chunk_ * sizeof(R), streams_, device_);
        },
        [&](std::size_t b, std::size_t first, std::size_t count, StreamRef on,
            const auto&... chunks) {
          kernel(first, count, on, DeviceView<R>(reinterpret_cast<R*>((*results)[b]), count),
                 chunks...);
          ChunkedAccess::download(output, (*results)[b], first, count, on, where_);
        },
        operands...);
  }

 private:
  /// Makes the operands' chunked forms (their host copies whole, their buffers taken), calls
  /// `prepare()`, then for each chunk queues the operands' uploads and calls
  /// `body(b, first, count, stream, chunks...)`.
  template <typename Prepare, typename Body, typename... Operands>
  void run_with(Prepare prepare, Body body, const Operands&... operands) const {
    const std::tuple<ChunkedOperand<Operands>...> chunked{
        ChunkedOperand<Operands>(operands, chunk_, streams_, device_, where_)...};
    prepare();
    for_each_chunk([&](std::size_t b, std::size_t first, std::size_t count, StreamRef on) {
      std::apply(
          [&](const auto&... operand) {
            (operand.upload(b, first, count, on, where_), ...);
            body(b, first, count, on, operand.device(b, first, count)...);
          },
          chunked);
    });
  }
  /// Calls `body(b, first, count, stream)` for chunk k on the stream of slot b = k % chunk_slots.
  /// The slots' streams first wait for the call's stream; then the host waits for them, and the
  /// call's stream follows them. After a failure the host still waits for what was queued, so
  /// that no copy writes the host buffers after the call.
  template <typename Body>
  void for_each_chunk(Body body) const {
    try {
      begin();
      for (std::size_t first = 0, k = 0; first < n_; first += chunk_, ++k) {
        body(k % chunk_slots, first, std::min(chunk_, n_ - first), streams_[k % chunk_slots]);
      }
      end();
    } catch (...) {
      drain();
      throw;
    }
  }
  void begin() const;
  void end() const;
  void drain() const noexcept;

  std::size_t n_;
  StreamRef stream_;
  smartarray::source_location where_;
  int device_;
  std::size_t chunk_;
  std::array<StreamRef, chunk_slots> streams_;
};

}  // namespace smartarray::detail
