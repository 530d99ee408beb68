// CcclDeviceResource: requests to a CCCL resource, with eviction and a retry when it runs out.
#include <smartarray/error.hpp>
#include <smartarray/interop/cccl_resource.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <new>
#include <string>

namespace smartarray::interop {
namespace {

/// `stream` as the CUDA runtime names it. The library names the default stream of a device by a
/// handle of its own when there are several devices (what arrays and pools remember); CUDA knows
/// it as `cudaStreamLegacy` while that device is current, as it is during the request. On the host
/// backend handles pass unchanged: only the library's own test resources see them.
StreamRef as_cuda(StreamRef stream) {
  if (stream.default_of_device() < 0 || detail::runtime().kind() != BackendKind::cuda) {
    return stream;
  }
  return StreamRef{static_cast<void*>(cudaStreamLegacy)};
}

}  // namespace

void* CcclDeviceResource::do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment,
                                      bool host) {
  if (bytes == 0) return nullptr;
  const StreamRef upstream_stream = as_cuda(stream);
  for (;;) {
    std::string failure;
    try {
      return allocate_(upstream_, upstream_stream, bytes, alignment, host);
    } catch (const std::bad_alloc& error) {
      failure = error.what();
    }
    if (detail::active_capture() != nullptr) {
      detail::refuse_in_capture(
          detail::concat("CCCL resource out of memory for ", bytes, " bytes").c_str(),
          "making room would evict device copies, which a capture cannot do; free or reserve "
          "device memory before the capture");
    }
    // What the hooks report is not evidence: only blocks given back through this adaptor are,
    // so a hook that reports bytes it did not free ends the retries instead of repeating them
    // forever.
    const std::uint64_t given_back_before = given_back_.load(std::memory_order_relaxed);
    const bool reported = run_eviction_hooks(bytes, [] { return false; });
    if (!reported || given_back_.load(std::memory_order_relaxed) == given_back_before) {
      throw out_of_memory(detail::concat(
          "CCCL resource ", host ? "allocate_sync" : "allocate", " of ", bytes, " bytes",
          host ? std::string(" for the host") : detail::concat(" on stream ", stream.handle()),
          ": out of memory, and the eviction hooks gave nothing back; the resource said: ",
          failure));
    }
    // The evicted copies went back to the upstream on their own streams: wait for them, so that
    // the retry (on any stream) can have their memory.
    detail::runtime().synchronize_device();
  }
}

void CcclDeviceResource::do_deallocate(StreamRef stream, void* ptr, std::size_t bytes,
                                       std::size_t alignment, bool host) noexcept {
  if (ptr == nullptr) return;
  deallocate_(upstream_, as_cuda(stream), ptr, bytes, alignment, host);
  given_back_.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace smartarray::interop
