/**
 * @file runtime/detail/stream_work.hpp
 * @brief Private: what the adapters' templates need of the backend, without its interface (the
 *        virtual `Runtime` stays in src/ and in runtime/detail/runtime.hpp).
 *
 * The adapters launch their kernels themselves (under nvcc, with the public `stream_device()` and
 * `device_properties()`); of the backend they need only to check a stream before anything moves
 * and, on the host backend, to queue their loop on the stream's worker.
 */
#pragma once

#include <smartarray/runtime/stream.hpp>

#include <functional>

namespace smartarray::detail {

/// Throws `logic_error` naming `stream` unless it can take work: a device's default stream names
/// an existing device, and a stream the library made was not destroyed.
void check_stream(StreamRef stream);

/// Queues `fn` on `stream`, run in order with the stream's other work (a host function on the cuda
/// backend, the stream's worker thread on the host backend).
void launch_host_func(StreamRef stream, std::function<void()> fn);

}  // namespace smartarray::detail
