// CcclDeviceResource: requests to a CCCL resource, with eviction and a retry when it runs out.
#include <smartarray/error.hpp>
#include <smartarray/memory/cccl_resource.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <new>
#include <string>

namespace smartarray {

void* CcclDeviceResource::do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment,
                                      bool host) {
  if (bytes == 0) return nullptr;
  for (;;) {
    std::string failure;
    try {
      return allocate_(upstream_, stream, bytes, alignment, host);
    } catch (const std::bad_alloc& error) {
      failure = error.what();
    }
    if (detail::active_capture() != nullptr) {
      detail::refuse_in_capture(
          detail::concat("CCCL resource out of memory for ", bytes, " bytes").c_str(),
          "making room would evict device copies, which a capture cannot do; free or reserve "
          "device memory before the capture");
    }
    const bool released = run_eviction_hooks(bytes, [] { return false; });
    if (!released) {
      throw out_of_memory(detail::concat(
          "CCCL resource ", host ? "allocate_sync" : "allocate", " of ", bytes, " bytes",
          host ? std::string(" for the host") : detail::concat(" on stream ", stream.handle()),
          ": out of memory, and no device copy is left to evict; the resource said: ",
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
  deallocate_(upstream_, stream, ptr, bytes, alignment, host);
}

}  // namespace smartarray
