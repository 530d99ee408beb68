/**
 * @file adapters/detail/chunked.hpp
 * @brief Private: out-of-core adapters. A call whose arrays need more device memory than the
 *        device budget runs in chunks through double-buffered device memory from the pool.
 *
 * Each chunk's copy in, kernel and copy out are queued on one of two streams, chunk by chunk in
 * turn, so that one chunk's upload overlaps the other's kernel and download (the copy engines
 * run both directions at once). Each stream reuses its own pair of buffers only after its earlier
 * chunk, in stream order. The arrays' host copies are made whole first (a read of what the
 * device holds), and the call returns once every chunk is back on the host: the output is then
 * valid on the host only, and the device holds none of it.
 */
#pragma once

#include <smartarray/adapters/detail/adapter_traits.hpp>
#include <smartarray/adapters/out.hpp>
#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/core/detail/array_factory.hpp>
#include <smartarray/core/slice.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>

namespace smartarray::detail {

/// Chunks in flight at once, each with its own stream and its own buffer per array (double
/// buffering): one chunk's upload runs while the other's kernel and download do. Three slots
/// measured the same on the H100 machine (23.8 ms for 1 GiB each way), where the copy engines
/// running both ways at once are the bound (docs/residency.md).
inline constexpr std::size_t chunk_slots = 2;

/// The streams of chunked calls on `device`, made on first use and kept for the process.
[[nodiscard]] std::array<StreamRef, chunk_slots> chunk_streams(int device);

/// The elements of each chunk of `what` over `n` elements on `device`, when `element_bytes` bytes
/// of arrays stand behind each element: a buffer per array and slot within half the device's
/// budget, a multiple of 256 elements. Throws out_of_memory, naming the bytes and the budget,
/// when not even 256 elements fit.
[[nodiscard]] std::size_t chunk_elements(const char* what, std::size_t n,
                                         std::size_t element_bytes, int device);

/// The array, or the slice of one, that an argument names; `is_chunkable` is false for views and
/// scalars.
template <typename A>
struct ChunkSource {
  static constexpr bool is_chunkable = false;
};
template <typename T>
struct ChunkSource<SmartArray<T>> {
  static constexpr bool is_chunkable = true;
  using value_type = T;
  static Slice<const T> whole(const SmartArray<T>& array) { return array.slice(0, array.size()); }
  static const SmartArray<T>& array(const SmartArray<T>& array) { return array; }
};
template <typename T>
struct ChunkSource<Slice<T>> {
  static constexpr bool is_chunkable = true;
  using value_type = std::remove_const_t<T>;
  static Slice<const value_type> whole(const Slice<T>& slice) { return slice; }
  static const SmartArray<value_type>& array(const Slice<T>& slice) { return slice.array(); }
};
/// out(...) is never an operand; it names an array for the budget of `launch`.
template <typename T>
struct ChunkSource<Out<T>> {
  static constexpr bool is_chunkable = true;
  using value_type = T;
  static const SmartArray<T>& array(const Out<T>& output) { return output.array(); }
};
template <typename A>
using chunk_source_t = ChunkSource<std::remove_cvref_t<A>>;

/// True when the array behind argument `argument` keeps a device buffer of its own (explicit or
/// pageable mode): mapped arrays need no device memory, and managed ones are never
/// oversubscribed. True for views and scalars.
template <typename A>
[[nodiscard]] bool has_device_buffer(const A& argument) {
  if constexpr (chunk_source_t<A>::is_chunkable) {
    const MemoryMode mode = ArrayFactory::core(chunk_source_t<A>::array(argument)).mode();
    return mode == MemoryMode::explicit_copy || mode == MemoryMode::pageable;
  } else {
    (void)argument;
    return true;
  }
}

/// The bytes of the array behind argument `argument` (arrays, slices and out(...); views and
/// scalars none). A slice's device acquire takes its whole array's buffer, so a slice counts its
/// array's size.
template <typename A>
[[nodiscard]] std::size_t array_bytes_of(const A& argument) noexcept {
  if constexpr (chunk_source_t<A>::is_chunkable) {
    return chunk_source_t<A>::array(argument).size() *
           sizeof(typename chunk_source_t<A>::value_type);
  } else {
    (void)argument;
    return 0;
  }
}
/// array_bytes_of() of an array with a device buffer of its own (has_device_buffer()), else 0.
template <typename A>
[[nodiscard]] std::size_t device_bytes_of(const A& argument) {
  return has_device_buffer(argument) ? array_bytes_of(argument) : 0;
}
/// Bytes per element that the chunks of argument `A` take on the device.
template <typename A>
[[nodiscard]] constexpr std::size_t chunk_bytes_of() noexcept {
  if constexpr (chunk_source_t<A>::is_chunkable) {
    return sizeof(typename chunk_source_t<A>::value_type);
  } else {
    return 0;
  }
}

/// Device memory for the chunks of one array: a buffer of `bytes` per slot, taken on the slot's
/// stream (of `device`) and given back on it, after every chunk that used it.
class ChunkBuffers {
 public:
  ChunkBuffers(std::size_t bytes, const std::array<StreamRef, chunk_slots>& streams, int device)
      : resource_(&smartarray::device_resource(device)), streams_(streams), bytes_(bytes) {
    try {
      for (std::size_t b = 0; b < chunk_slots; ++b) {
        buffer_[b] = static_cast<std::byte*>(resource_->allocate(streams_[b], bytes_));
      }
    } catch (...) {
      release();
      throw;
    }
  }
  ChunkBuffers(const ChunkBuffers&) = delete;
  ChunkBuffers& operator=(const ChunkBuffers&) = delete;
  ~ChunkBuffers() { release(); }
  [[nodiscard]] std::byte* operator[](std::size_t b) const noexcept { return buffer_[b]; }

 private:
  void release() noexcept {
    for (std::size_t b = 0; b < chunk_slots; ++b) {
      if (buffer_[b] != nullptr) resource_->deallocate(streams_[b], buffer_[b], bytes_);
      buffer_[b] = nullptr;
    }
  }
  MemoryResource* resource_;
  std::array<StreamRef, chunk_slots> streams_;
  std::size_t bytes_;
  std::array<std::byte*, chunk_slots> buffer_{};
};

/// The element type of a chunkable argument (void for views and scalars).
template <typename A, bool = chunk_source_t<A>::is_chunkable>
struct ChunkValue {
  using type = void;
};
template <typename A>
struct ChunkValue<A, true> {
  using type = typename chunk_source_t<A>::value_type;
};

/// One operand of a chunked call: an array or slice (its host copy made whole for reading, each
/// chunk uploaded into a buffer), a device view (each chunk a part of it) or a scalar.
template <typename A>
class ChunkedOperand {
 public:
  ChunkedOperand(const A& argument, std::size_t chunk,
                 const std::array<StreamRef, chunk_slots>& streams, int device,
                 const smartarray::source_location& where)
      : argument_(&argument) {
    if constexpr (chunk_source_t<A>::is_chunkable) {
      const auto slice = chunk_source_t<A>::whole(argument);
      (void)slice.host_view(std::nullopt, where);
      core_ = &ArrayFactory::core(slice.array());
      offset_ = slice.first() * sizeof(Value);
      buffers_ = std::make_unique<ChunkBuffers>(chunk * sizeof(Value), streams, device);
    }
  }
  /// Queues the upload of elements [first, first + count) into buffer `b` on `stream`.
  void upload(std::size_t b, std::size_t first, std::size_t count, StreamRef stream,
              const smartarray::source_location& where) const {
    if constexpr (chunk_source_t<A>::is_chunkable) {
      core_->upload_chunk((*buffers_)[b],
                          {offset_ + first * sizeof(Value), offset_ + (first + count) * sizeof(Value)},
                          stream, where);
    }
  }
  /// What the kernel gets for the chunk [first, first + count) held in buffer `b`.
  [[nodiscard]] auto device(std::size_t b, std::size_t first, std::size_t count) const {
    if constexpr (chunk_source_t<A>::is_chunkable) {
      return DeviceView<const Value>(reinterpret_cast<const Value*>((*buffers_)[b]), count);
    } else if constexpr (is_device_view_v<A>) {
      return std::remove_cvref_t<A>(argument_->data() + first, count);
    } else {
      return *argument_;
    }
  }

 private:
  using Value = typename ChunkValue<A>::type;

  const A* argument_;
  ArrayCore* core_ = nullptr;
  std::size_t offset_ = 0;
  std::unique_ptr<ChunkBuffers> buffers_;
};

/// True when a call on `stream` over arguments `args`, and a result of `result_bytes` that is not
/// made yet, must run in chunks: together they need more device memory than the budget of the
/// stream's device, and each array keeps a device buffer of its own (has_device_buffer()). A call
/// that runs in chunks checks `stream` here, before it changes anything (one that does not checks
/// it when it acquires its arrays).
template <typename... Args>
[[nodiscard]] bool runs_in_chunks(StreamRef stream, std::size_t result_bytes, const Args&... args) {
  // Every call asks: first the sizes alone, which rule out all calls that fit.
  const std::size_t budget = device_budget(runtime().stream_device(stream));
  if ((array_bytes_of(args) + ... + result_bytes) <= budget) return false;
  if ((device_bytes_of(args) + ... + result_bytes) <= budget || !(has_device_buffer(args) && ...)) {
    return false;
  }
  runtime().check_stream(stream);
  return true;
}

/// Runs `n` elements in chunks of `chunk`: chunk k, on the stream and buffers of slot k %
/// chunk_slots, is `upload`ed, `compute`d and `download`ed. The slots' streams first wait for
/// `stream`; then the host waits for them, and `stream` follows them. After a failure the host still waits for
/// what was queued, so that no copy writes the host buffers after the call.
template <typename Upload, typename Compute, typename Download>
void run_chunks(std::size_t n, std::size_t chunk, const std::array<StreamRef, chunk_slots>& streams,
                StreamRef stream, Upload upload, Compute compute, Download download) {
  try {
    for (const StreamRef chunk_stream : streams) stream_wait_stream(chunk_stream, stream);
    for (std::size_t first = 0, k = 0; first < n; first += chunk, ++k) {
      const std::size_t b = k % chunk_slots;
      const std::size_t count = std::min(chunk, n - first);
      upload(b, first, count, streams[b]);
      compute(b, first, count, streams[b]);
      download(b, first, count, streams[b]);
    }
    for (const StreamRef chunk_stream : streams) {
      host_wait_stream(chunk_stream);
      stream_wait_stream(stream, chunk_stream);
    }
  } catch (...) {
    for (const StreamRef chunk_stream : streams) {
      try {
        runtime().synchronize(chunk_stream);
      } catch (const std::exception&) {
        // The first failure is the one reported.
      }
    }
    throw;
  }
}

/// transform's out-of-core path: `output[i] = f(ins[i]...)` where `make_op(out, operands...)`
/// makes the kernel of one chunk from its device views. The operands' host copies are made whole
/// first (an operand that is also the output is read before it is acquired for writing); the
/// output becomes valid on the host only.
template <typename R, typename MakeOp, typename... Ins>
void transform_in_chunks(const char* what, const Slice<R>& output, bool in_place, StreamRef stream,
                         const smartarray::source_location& where, MakeOp make_op,
                         const Ins&... ins) {
  const std::size_t n = output.size();
  const int device = runtime().stream_device(stream);
  const std::size_t chunk = chunk_elements(
      what, n, sizeof(R) + (chunk_bytes_of<Ins>() + ... + std::size_t{0}), device);
  const std::array<StreamRef, chunk_slots> streams = chunk_streams(device);
  const std::tuple<ChunkedOperand<Ins>...> operands{
      ChunkedOperand<Ins>(ins, chunk, streams, device, where)...};
  (void)output.host_view(in_place ? Access::read_write : Access::discard, std::nullopt, where);
  ArrayCore& core = ArrayFactory::core(output.array());
  const ChunkBuffers results(chunk * sizeof(R), streams, device);
  const std::size_t offset = output.first() * sizeof(R);
  run_chunks(
      n, chunk, streams, stream,
      [&](std::size_t b, std::size_t first, std::size_t count, StreamRef on) {
        std::apply([&](const auto&... op) { (op.upload(b, first, count, on, where), ...); },
                   operands);
      },
      [&](std::size_t b, std::size_t first, std::size_t count, StreamRef on) {
        std::apply(
            [&](const auto&... op) {
              for_each_index(count,
                             make_op(DeviceView<R>(reinterpret_cast<R*>(results[b]), count),
                                     op.device(b, first, count)...),
                             on);
            },
            operands);
      },
      [&](std::size_t b, std::size_t first, std::size_t count, StreamRef on) {
        core.download_chunk(results[b],
                            {offset + first * sizeof(R), offset + (first + count) * sizeof(R)}, on,
                            where);
      });
}

}  // namespace smartarray::detail
