// The host backend's copies, prefetches and advice, each checked against the memory it is given.
#include "runtime/host/host_runtime.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::detail {

void HostRuntime::do_copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                                StreamRef stream) {
  if (bytes == 0) return;
  std::shared_ptr<HostStream> queue = stream_for(stream);
  check_copy(dst, src, bytes, kind, *queue);
  queue->enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
}

void HostRuntime::do_copy_peer_async(void* dst, int dst_device, const void* src, int src_device,
                                     std::size_t bytes, StreamRef stream) {
  std::shared_ptr<HostStream> queue = stream_for(stream);
  const auto on = [&](const void* ptr, int device, const char* role) {
    SMARTARRAY_EXPECTS(device_table(device).find_containing(ptr, bytes).has_value(), logic_error,
                       "peer copy of ", bytes, " bytes on ", queue->name(), ": the ", role,
                       " at ", ptr, " is not inside one allocation of device ", device);
  };
  on(dst, dst_device, "destination");
  on(src, src_device, "source");
  SMARTARRAY_EXPECTS(queue->device() == dst_device || queue->device() == src_device, logic_error,
                     "peer copy of ", bytes, " bytes from device ", src_device, " to device ",
                     dst_device, " on ", queue->name(), ", which is neither's");
  queue->enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
}

bool HostRuntime::do_copy_to_device_now(std::span<const CopyRange> copies, StreamRef stream) {
  std::shared_ptr<HostStream> queue = stream_for(stream);
  std::size_t total = 0;
  for (const CopyRange& copy : copies) {
    check_copy(copy.dst, copy.src, copy.bytes, CopyKind::host_to_device, *queue);
    total += copy.bytes;
  }
  // The sources are read now, as the driver reads them during the call; the destinations are
  // written in stream order.
  std::vector<std::byte> read(total);
  std::vector<std::pair<void*, std::size_t>> targets;
  targets.reserve(copies.size());
  std::size_t offset = 0;
  for (const CopyRange& copy : copies) {
    std::memcpy(read.data() + offset, copy.src, copy.bytes);
    targets.emplace_back(copy.dst, copy.bytes);
    offset += copy.bytes;
  }
  queue->enqueue([read = std::move(read), targets = std::move(targets)] {
    std::size_t from = 0;
    for (const auto& [dst, bytes] : targets) {
      std::memcpy(dst, read.data() + from, bytes);
      from += bytes;
    }
  });
  return true;
}

void HostRuntime::do_advise_read_mostly(const void* ptr, std::size_t bytes) {
  // One memory serves both sides here: the advice changes nothing but is checked as CUDA would.
  SMARTARRAY_EXPECTS(managed_.find_containing(ptr, bytes).has_value(), logic_error,
                     "read-mostly advice for ", bytes, " bytes at ", ptr,
                     ": the range is not inside one managed allocation");
}

void HostRuntime::do_prefetch_async(const void* ptr, std::size_t bytes, Location where,
                                    StreamRef stream) {
  if (bytes == 0) return;
  std::shared_ptr<HostStream> queue = stream_for(stream);
  SMARTARRAY_EXPECTS(managed_.find_containing(ptr, bytes).has_value(), logic_error,
                     "prefetch of ", bytes, " bytes at ", ptr, " to the ",
                     where == Location::host ? "host" : "device", " on ", queue->name(),
                     ": the range is not inside one managed allocation");
  // Managed memory already is host memory; the task only keeps the stream's timing honest.
  queue->enqueue([] {});
}

void HostRuntime::check_copy(const void* dst, const void* src, std::size_t bytes, CopyKind kind,
                             const HostStream& queue) const {
  const bool device_dst = kind == CopyKind::host_to_device || kind == CopyKind::device_to_device;
  const bool device_src = kind == CopyKind::device_to_host || kind == CopyKind::device_to_device;
  const auto check_side = [&](const void* ptr, bool device_side, const char* role) {
    if (device_side) {
      SMARTARRAY_EXPECTS(device_accessible(ptr, bytes, queue.device()), logic_error,
                         copy_kind_name(kind), " copy of ", bytes, " bytes on ", queue.name(),
                         ": the ", role, " at ", ptr, " is not inside one ",
                         devices_ > 1 ? concat("allocation of device ", queue.device())
                                      : std::string("device"),
                         ", managed or mapped allocation");
    } else {
      SMARTARRAY_EXPECTS(!overlaps_device_memory(ptr, bytes), logic_error,
                         copy_kind_name(kind), " copy of ", bytes, " bytes on ", queue.name(),
                         ": the ", role, " at ", ptr,
                         " is device memory, but this direction expects host memory");
    }
  };
  check_side(dst, device_dst, "destination");
  check_side(src, device_src, "source");
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto s = reinterpret_cast<std::uintptr_t>(src);
  SMARTARRAY_EXPECTS(d + bytes <= s || s + bytes <= d, logic_error, copy_kind_name(kind),
                     " copy of ", bytes, " bytes on ", queue.name(), ": source ", src,
                     " and destination ", dst, " overlap");
}

}  // namespace smartarray::detail
