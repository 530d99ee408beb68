/**
 * @file interop/external_allocator.hpp
 * @brief Another library's device memory from smartarray's device pools (namespace
 *        `smartarray::interop`): the calls behind an allocator hook of PyTorch, CuPy, Numba or any
 *        library that takes its device memory from a pair of functions.
 *
 * A block comes from `device_resource(device)`, the resource that new SmartArrays' device copies
 * of that device come from (the built-in pool unless one was set), under the same budget. When a
 * request does not fit, the pool makes room by dropping SmartArrays' device copies (clean ones
 * first, then the least recently used dirty ones, each written back to the host) and retries
 * before it fails. The other library's blocks are never dropped: they are its own until it frees
 * them.
 *
 * Streams are the other library's `cudaStream_t`, passed as `void*`. A null stream (CUDA's handle
 * 0) and CUDA's legacy default stream (handle 1) name `device`'s default stream.
 *
 * @code
 * void* p = sa::interop::allocate(bytes, device, torch_stream);  // usable on torch_stream now
 * // ... the other library's kernels on torch_stream ...
 * sa::interop::deallocate(p, bytes, device, torch_stream);      // reused after that work
 * @endcode
 */
#pragma once

#include <cstddef>

namespace smartarray::interop {

/**
 * @brief `bytes` of device memory on `device`, usable by work queued on `stream` from now on.
 *
 * The device is current during the call (the pool records its events on the stream's device) and
 * the caller's current device is restored after it.
 * @param bytes the size; 0 returns nullptr and allocates nothing.
 * @param device the device ordinal.
 * @param stream the other library's stream (nullptr or the legacy handle: `device`'s default).
 * @throws logic_error when `device` does not exist.
 * @throws out_of_memory when even dropping every SmartArray device copy the resource holds
 *         cannot make room; nothing is allocated then.
 */
[[nodiscard]] void* allocate(std::size_t bytes, int device, void* stream);

/**
 * @brief Releases a block of `allocate` whose last use was queued on `stream`: the pool hands it
 *        to another stream only after that work.
 * @param ptr the block (nullptr does nothing).
 * @param bytes the size given to `allocate`.
 * @param device the device given to `allocate`.
 * @param stream the stream of the block's last use (nullptr or the legacy handle: `device`'s
 *        default).
 *
 * Never throws: a failure (a device that does not exist) is reported on stderr, and the block
 * stays allocated.
 */
void deallocate(void* ptr, std::size_t bytes, int device, void* stream) noexcept;

/**
 * @brief Releases a block of `allocate` whose users are not known, after the work queued so far
 *        on every blocking stream of `device`: for libraries whose free names no stream (CuPy,
 *        Numba), or whose streams may be destroyed before their blocks are freed.
 *
 * The block goes back on a stream of the library's own that first waits for the work queued so
 * far on `device`'s legacy default stream, which itself waits for every blocking stream. Work on
 * a non-blocking stream that uses the block must be complete before the call.
 * @param ptr the block (nullptr does nothing and returns true).
 * @param bytes the size given to `allocate`.
 * @param device the device given to `allocate`.
 * @return true when the block was released; false when it could not be (a device that does not
 *         exist, reported on stderr): it stays allocated, and is still the caller's.
 */
bool deallocate_after_blocking_work(void* ptr, std::size_t bytes, int device) noexcept;

}  // namespace smartarray::interop
