// MemoryResource's one out-of-line part: the blocks released during a capture, which the graph
// keeps (runtime/detail/capture.hpp).
#include <smartarray/memory/memory_resource.hpp>

#include <new>

namespace smartarray {

bool MemoryResource::keep_for_graph(detail::CaptureState& capture,
                                    const detail::KeptBlock& block) noexcept {
  try {
    capture.kept_blocks.push_back(block);
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

}  // namespace smartarray
