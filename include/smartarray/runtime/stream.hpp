/**
 * @file runtime/stream.hpp
 * @brief Streams: a non-owning `StreamRef`, an owning `Stream`, and synchronization helpers.
 *
 * A `StreamRef` is a pointer-sized handle. On the cuda backend its value is a `cudaStream_t`; on the
 * host backend it names an emulated in-order queue. A default-constructed `StreamRef` is the
 * backend's default stream.
 */
#pragma once

#include <cstdint>
#include <functional>

#if defined(__CUDACC__) || defined(CUDART_VERSION)
#include <cuda_runtime_api.h>
#define SMARTARRAY_HAS_CUDA_TYPES 1
#else
#define SMARTARRAY_HAS_CUDA_TYPES 0
#endif

namespace smartarray {

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
  /// @brief The CUDA stream. Only meaningful on the cuda backend.
  [[nodiscard]] cudaStream_t cuda_stream() const noexcept {
    return static_cast<cudaStream_t>(handle_);
  }
#endif
  /// @brief The raw backend handle.
  [[nodiscard]] constexpr void* handle() const noexcept { return handle_; }
  /// @brief True for the default stream.
  [[nodiscard]] constexpr bool is_default() const noexcept { return handle_ == nullptr; }
  friend constexpr bool operator==(StreamRef a, StreamRef b) noexcept {
    return a.handle_ == b.handle_;
  }

 private:
  void* handle_ = nullptr;
};

/**
 * @brief An owning stream of the active backend. Destroying it waits for its work.
 */
class Stream {
 public:
  /// @brief Creates a new stream.
  /// @throws cuda_error when the backend cannot create one.
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// @brief Takes over the stream of `other`, which is left as the default stream.
  Stream(Stream&& other) noexcept;
  /// @brief Destroys the owned stream and takes over that of `other`.
  Stream& operator=(Stream&& other) noexcept;

  /// @brief The non-owning handle.
  [[nodiscard]] StreamRef ref() const noexcept { return ref_; }
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
/// @brief Blocks the host until all work on every stream of the device is done.
void synchronize_device();

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
