/**
 * @file runtime/stream.hpp
 * @brief Streams: a non-owning `StreamRef`, an owning `Stream`, and synchronization helpers.
 *
 * A `StreamRef` is a pointer-sized handle. On the cuda backend its value is a `cudaStream_t`; on the
 * host backend it names an emulated in-order queue. A default-constructed `StreamRef` is the
 * default stream of the calling thread's current device; `default_stream(Device{1})` names device
 * 1's default stream whatever device is current. Every stream lives on one device
 * (runtime/device.hpp), and work queued on it runs there, at the stream's priority.
 */
#pragma once

#include <smartarray/runtime/device.hpp>

#include <cstdint>
#include <functional>

#if defined(__CUDACC__) || defined(CUDART_VERSION)
#include <cuda_runtime_api.h>
#define SMARTARRAY_HAS_CUDA_TYPES 1
#else
#define SMARTARRAY_HAS_CUDA_TYPES 0
#endif

namespace smartarray {
namespace detail {
/// The handles of the default streams of devices 0, 1, ...: small numbers that no allocator
/// returns (CUDA's own special handles are 0x1 and 0x2), so that a stream remembered by an array
/// or a pool names the default stream of its own device, not of whatever device is current later.
inline constexpr std::uintptr_t device_default_stream_base = 0x100;
}  // namespace detail

/**
 * @brief The scheduling priority of a stream.
 *
 * On the cuda backend these are the ends of the device's range
 * (`cudaDeviceGetStreamPriorityRange`): `normal` is its least priority, the one of every stream
 * made without one and of the default streams; `high` is its greatest. The GPU's block scheduler
 * starts the pending blocks of a high-priority stream before those of normal ones as SMs free up:
 * a running block is never preempted, and nothing else changes (order within a stream, waits,
 * copies). Give it to short work on the critical path, such as a halo exchange beside a long
 * interior kernel. On a device without stream priorities both ends are the same, and `high`
 * streams run as normal ones. The host backend keeps and reports the priority but schedules
 * nothing by it (each stream has its own worker thread).
 */
enum class StreamPriority {
  normal,  ///< the device's least priority, that of every stream by default
  high,    ///< the device's greatest priority
};
/// @brief "normal" or "high" ("unknown" for a value that is neither).
[[nodiscard]] const char* to_string(StreamPriority priority) noexcept;

/**
 * @brief A non-owning, trivially copyable handle to a stream of the active backend.
 */
class StreamRef {
 public:
  /// @brief The default stream.
  constexpr StreamRef() noexcept = default;
  /// @brief Wraps a raw backend handle (a `cudaStream_t` on the cuda backend).
  constexpr explicit StreamRef(void* handle) noexcept : handle_(handle) {}
#if SMARTARRAY_HAS_CUDA_TYPES
  /// @brief Wraps a CUDA stream. Only meaningful on the cuda backend.
  StreamRef(cudaStream_t stream) noexcept : handle_(static_cast<void*>(stream)) {}  // NOLINT
  /// @brief The CUDA stream. Only meaningful on the cuda backend. A device's default stream
  /// (`default_stream(Device)`) is `cudaStreamLegacy`, which names that device's default stream
  /// while the device is current.
  [[nodiscard]] cudaStream_t cuda_stream() const noexcept {
    return default_of_device() >= 0 ? cudaStreamLegacy : static_cast<cudaStream_t>(handle_);
  }
#endif
  /// @brief The raw backend handle.
  [[nodiscard]] constexpr void* handle() const noexcept { return handle_; }
  /// @brief True for the default stream of the current device (`StreamRef{}`).
  [[nodiscard]] constexpr bool is_default() const noexcept { return handle_ == nullptr; }
  /// @brief The device whose default stream this is (`default_stream(Device)`), else -1.
  [[nodiscard]] int default_of_device() const noexcept {
    const auto value = reinterpret_cast<std::uintptr_t>(handle_);
    return value >= detail::device_default_stream_base &&
                   value < detail::device_default_stream_base + max_devices
               ? static_cast<int>(value - detail::device_default_stream_base)
               : -1;
  }
  friend constexpr bool operator==(StreamRef a, StreamRef b) noexcept {
    return a.handle_ == b.handle_;
  }

 private:
  void* handle_ = nullptr;
};

/**
 * @brief An owning stream of the active backend. Destroying it waits for its work.
 *
 * Destroyed inside `sa::capture` while its stream is part of the capture, it leaves the stream
 * alone until the capture ends (its work has not run), and the capture then throws `logic_error`
 * naming it (graph/capture.hpp).
 */
class Stream {
 public:
  /// @brief Creates a new stream on the current device.
  /// @throws cuda_error when the backend cannot create one.
  Stream();
  /// @brief Creates a new stream on `device`; work queued on it runs there.
  /// @throws logic_error when the ordinal is not a device of the active backend.
  /// @throws cuda_error when the backend cannot create one.
  explicit Stream(Device device);
  /// @brief Creates a new stream of `priority` on `device`; work queued on it runs there.
  /// @throws logic_error when the ordinal is not a device of the active backend, or `priority` is
  ///         neither `normal` nor `high`.
  /// @throws cuda_error when the backend cannot create one.
  Stream(Device device, StreamPriority priority);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// @brief Takes over the stream of `other`, which is left as the default stream.
  Stream(Stream&& other) noexcept;
  /// @brief Destroys the owned stream and takes over that of `other`.
  Stream& operator=(Stream&& other) noexcept;

  /// @brief The non-owning handle.
  [[nodiscard]] StreamRef ref() const noexcept { return ref_; }
  /// @brief The device the stream lives on.
  [[nodiscard]] Device device() const;
  /// @brief The stream's priority, as the backend reports it (`normal` for a moved-from stream,
  ///        which is the default stream).
  [[nodiscard]] StreamPriority priority() const;
  /// @brief Converts to the non-owning handle.
  operator StreamRef() const noexcept { return ref_; }  // NOLINT
  /// @brief Blocks the host until all work queued on this stream is done.
  void synchronize() const;
  /// @brief True when all queued work is done.
  [[nodiscard]] bool query() const;

 private:
  StreamRef ref_;
};

/// @brief Blocks the host until all work on `stream` is done.
void synchronize(StreamRef stream);
/// @brief Blocks the host until all work on every stream of the current device is done.
void synchronize_device();

/**
 * @brief The default stream of `device`, which names that device's default stream whatever
 *        device is current (`StreamRef{}` is the current device's).
 * @throws logic_error when the ordinal is not a device of the active backend.
 */
[[nodiscard]] StreamRef default_stream(Device device);

/**
 * @brief The device that `stream` lives on: the current device for `StreamRef{}`.
 * @throws logic_error for a handle that is not a live stream (host backend).
 */
[[nodiscard]] Device stream_device(StreamRef stream);

/**
 * @brief The priority of `stream`: `normal` for a default stream. On the cuda backend a stream
 *        made elsewhere is `high` when its CUDA priority is greater than the device's least.
 * @throws logic_error for a handle that is not a live stream (host backend).
 * @throws cuda_error when the backend cannot tell.
 */
[[nodiscard]] StreamPriority stream_priority(StreamRef stream);

/**
 * @brief Makes smartarray forget a stream that you created yourself, before you destroy it.
 *
 * Arrays and pools remember the streams they were used on: a pool block released on a stream is
 * handed to another stream behind an event recorded on the first one. A `cudaStream_t` (or a
 * stream of Numba, CuPy or PyTorch) that you wrapped in a `StreamRef` must therefore be forgotten
 * before it is destroyed. This waits for the stream's work, makes every pool treat the blocks
 * released on it as free for any stream, and makes every array drop it from its pending work. A
 * stream that CUDA later creates with the same handle is a new stream to smartarray. `Stream`'s
 * destructor does all of this itself. The default stream is never forgotten.
 * @throws cuda_error when waiting for the stream fails (nothing is forgotten then).
 */
void forget_stream(StreamRef stream);

/**
 * @brief Synchronizes a stream when it goes out of scope (Numba's `auto_synchronize`).
 */
class AutoSynchronize {
 public:
  /// @brief Guards `stream`.
  explicit AutoSynchronize(StreamRef stream) noexcept : stream_(stream) {}
  /// @brief Synchronizes the stream. Errors are reported on stderr, never thrown.
  ~AutoSynchronize();
  AutoSynchronize(const AutoSynchronize&) = delete;
  AutoSynchronize& operator=(const AutoSynchronize&) = delete;

 private:
  StreamRef stream_;
};

}  // namespace smartarray
