// Carrying out copy plans: the copies that an acquire's plan names, across the host and the
// devices (peer copies, reads staged through the host), the copies out of an array into a caller's
// buffer, the device-to-device copy into an array, and the chunks of out-of-core calls. See
// core/detail/array_core.hpp.
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include "core/storage.hpp"
#include "core/transaction.hpp"
#include "core/transfer_scope.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace smartarray::detail {

StreamRef ArrayCore::stream_from(int device, std::optional<StreamRef> preferred) {
  if (preferred) {
    const StreamRef on = runtime().canonical(*preferred);
    if (runtime().stream_device(on) == device) return on;
  }
  const StreamOrder& order = one_buffer() ? host_order() : device_copy(device).order;
  if (const std::optional<StreamRef> writer = order.live_writer()) return *writer;
  return runtime().default_stream(device);
}

void ArrayCore::carry_out(const CopyPlan& plan, std::byte* dst, int device,
                          std::optional<StreamRef> stream, const char* reason,
                          const smartarray::source_location& where) {
  if (plan.copies_nothing()) return;
  const bool up = std::any_of(plan.copies().begin(), plan.copies().end(),
                              [](const PlannedCopy& copy) { return copy.to == Side::device; });
  // Down first, each from its device: in a plan that also copies up, these are reads staged
  // through the host (the device cannot reach the one that holds the bytes).
  constexpr const char* staged = "read across devices without peer access, through the host";
  // A prefetch copy may still write host bytes that these copies write or read.
  if (!arrivals_.empty()) [[unlikely]] {
    for (const PlannedCopy& copy : plan.copies()) {
      if (copy.to == Side::host ? dst == buffers_.host : copy.peer == no_peer) {
        settle_arrivals(copy.range);
      }
    }
  }
  for (const PlannedCopy& copy : plan.copies()) {
    if (copy.to == Side::device) continue;
    const StorageContext from = context(up ? staged : reason, where, copy.device);
    const StreamRef on = stream_from(copy.device, stream);
    // An upload to another device may still read the bytes that this copy writes into the host
    // buffer: they were the host's when it started, and only that device's work was ordered
    // after it. (With one device, the write that made them stale there was ordered after it.)
    if (more_devices_ != nullptr && dst == buffers_.host) host_order().order_after_host_readers(on);
    // A staged read's NVTX range encloses its download; its upload is one of the H2D ranges below.
    TransferScope read(&counters_);
    if (up) {
      read.add({TransferKind::staged, copy.range.size(), staged, id(), trace_label(), where,
                static_cast<std::int16_t>(device), static_cast<std::int16_t>(copy.device)});
    }
    strategy().to_host(from, dst, copy.range, on);
    read.done();
  }
  if (!up) return;
  // Up: peer copies, then what the host copy sends, all on `stream`, which lives on `device`.
  const StorageContext here = context(reason, where, device);
  SmallVector<PlannedCopy, 2> from_host;
  bool peers = false;
  for (const PlannedCopy& copy : plan.copies()) {
    if (copy.to != Side::device) continue;
    if (copy.peer == no_peer) {
      from_host.push_back(copy);
    } else {
      peers = true;
    }
  }
  if (peers) {
    // Each copy writes its range of this device's buffer after every use of it, and reads the
    // source's after its writers.
    DeviceCopy& target = device_copy(device);
    for (const PlannedCopy& copy : plan.copies()) {
      if (copy.to != Side::device || copy.peer == no_peer) continue;
      DeviceCopy& source = device_copy(copy.peer);
      target.order.join_users(copy.range, *stream);
      source.order.wait_writer(copy.range, *stream);
      TransferScope peer_copy({TransferKind::d2d_peer, copy.range.size(), reason, id(),
                               trace_label(), where, static_cast<std::int16_t>(device),
                               static_cast<std::int16_t>(copy.peer)},
                              &counters_);
      runtime().copy_peer_async(target.data + copy.range.begin, device,
                                source.data + copy.range.begin, copy.peer, copy.range.size(),
                                *stream);
      source.order.add_user(copy.range, *stream);
      target.order.set_exclusive(copy.range, *stream);
      peer_copy.done();
    }
  }
  if (!from_host.empty()) {
    strategy().to_device(here, {from_host.data(), from_host.size()}, *stream);
  }
}

void ArrayCore::copy_device_in(std::byte* dst, const std::byte* src, std::size_t bytes,
                               StreamRef stream, const smartarray::source_location& where,
                               DeviceCopier copier) {
  Transaction transaction(*this, Transaction::Kind::inspect, nullptr,
                          Transaction::Arrivals::by_range);
  const StorageContext into =
      context("copy from another array", where, runtime().stream_device(stream));
  TransferScope transfer(into.transfer(TransferKind::d2d, bytes), &counters_);
  if (copier != nullptr) {
    copier(dst, src, bytes, stream);
  } else {
    runtime().copy_async(dst, src, bytes, CopyKind::device_to_device, stream);
  }
  transfer.done();
}

void ArrayCore::copy_out(std::byte* dst, std::size_t bytes, StreamRef stream, bool wait,
                         const smartarray::source_location& where, bool require_written) {
  Transaction transaction(*this, Transaction::Kind::inspect, &where,
                          Transaction::Arrivals::by_range);
  runtime().check_stream(stream);
  SMARTARRAY_EXPECTS(bytes <= state_.size(), logic_error, "copy_out of ", bytes,
                     " bytes from an array of ", state_.size(), " bytes");
  if (bytes == 0) return;
  check_written(require_written, "copy_to_host", where);
  if (state_.is_unwritten()) return;  // no values to copy, and no buffer to copy them from
  touch();
  settle_arrivals(ByteRange{0, bytes});
  if (one_buffer()) {
    // One buffer: read it on the host once its writer is done; nothing is copied or prefetched.
    if (!state_.host_whole() && host_order().live_writer()) {
      host_order().wait_writer(ByteRange{0, bytes}, stream);
      host_wait_stream(stream);
      counters_.add_wait();
    }
    std::memcpy(dst, buffers_.host, bytes);
    return;
  }
  const CopyPlan plan = state_.read_out(bytes);
  // What the host holds comes from the host copy; each stale range straight from a device into
  // `dst` (the host copy stays stale), on `stream` when it lives on that device.
  state_.for_each_held(Side::host, bytes, [&](ByteRange range) {
    std::memcpy(dst + range.begin, buffers_.host + range.begin, range.size());
  });
  std::array<StreamRef, max_devices> used{};
  std::size_t streams = 0;
  for (const PlannedCopy& copy : plan.copies()) {
    const StreamRef on = stream_from(copy.device, stream);
    StreamOrder& order = device_copy(copy.device).order;
    order.wait_writer(copy.range, on);
    const StorageContext from = context("copy_to_host", where, copy.device);
    TransferScope transfer(from.transfer(TransferKind::d2h, copy.range.size()), &counters_);
    runtime().copy_async(dst + copy.range.begin, device_copy(copy.device).data + copy.range.begin,
                         copy.range.size(), CopyKind::device_to_host, on);
    order.add_user(copy.range, on);
    transfer.done();
    if (std::find(used.begin(), used.begin() + streams, on) == used.begin() + streams) {
      used[streams++] = on;
    }
  }
  if (wait && streams > 0) {
    for (std::size_t i = 0; i < streams; ++i) host_wait_stream(used[i]);
    counters_.add_wait();
  }
}

void ArrayCore::upload_chunk(std::byte* device, ByteRange range, StreamRef stream,
                             const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::inspect, &where,
                          Transaction::Arrivals::by_range);
  settle_arrivals(range);
  const StorageContext chunk = context("out-of-core chunk", where);
  TransferScope transfer(chunk.transfer(TransferKind::h2d, range.size()), &counters_);
  runtime().copy_async(device, buffers_.host + range.begin, range.size(),
                       CopyKind::host_to_device, stream);
  transfer.done();
}

void ArrayCore::download_chunk(const std::byte* device, ByteRange range, StreamRef stream,
                               const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::inspect, &where,
                          Transaction::Arrivals::by_range);
  settle_arrivals(range);
  const StorageContext chunk = context("out-of-core chunk", where);
  TransferScope transfer(chunk.transfer(TransferKind::d2h, range.size()), &counters_);
  runtime().copy_async(buffers_.host + range.begin, device, range.size(),
                       CopyKind::device_to_host, stream);
  transfer.done();
}

}  // namespace smartarray::detail
