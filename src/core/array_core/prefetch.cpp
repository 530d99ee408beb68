// Asynchronous prefetch to the host, the waits for its copies (the arrivals), and discard. See
// core/detail/array_core.hpp and core/prefetch.hpp.
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include "core/prefetch_copies.hpp"
#include "core/storage.hpp"
#include "core/transaction.hpp"

#include <algorithm>
#include <exception>

namespace smartarray::detail {
namespace {

bool overlap(ByteRange a, ByteRange b) noexcept { return a.begin < b.end && b.begin < a.end; }

}  // namespace

std::shared_ptr<PrefetchCopies> ArrayCore::prefetch_to_host(
    ByteRange range, StreamRef stream, const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::use, &where,
                          Transaction::Arrivals::by_range);
  SMARTARRAY_EXPECTS(range.begin <= range.end && range.end <= state_.size(), std::out_of_range,
                     describe(), ": prefetch_to_host of the bytes [", range.begin, ", ", range.end,
                     ") leaves the array of ", state_.size(), " bytes");
  const StreamRef on = runtime().canonical(stream);
  runtime().check_stream(on);
  if (active_capture() != nullptr) [[unlikely]] {
    refuse_in_capture(concat(describe(), ": prefetch_to_host at ", where.file_name(), ":",
                             where.line())
                          .c_str(),
                      "a prefetch is a host-side operation, and the capture's work has not run; "
                      "prefetch after Graph::launch");
  }
  NvtxRange nvtx;
  nvtx.push_acquire("prefetch to host", range.size(), id(), trace_label(), where);
  if (range.empty() || state_.is_unwritten() || state_.holds_range(Side::host, range)) {
    transaction.changed_nothing();
    return nullptr;
  }
  ensure_host_buffer();
  // A copy of an earlier prefetch may still write these bytes (the device wrote them since).
  settle_arrivals(range);
  const Transition transition = state_.acquire(Side::host, Access::read, one_buffer(), range);
  auto copies = std::make_shared<PrefetchCopies>();
  copies->events.reserve(static_cast<std::size_t>(device_copies()));
  arrivals_.reserve(arrivals_.size() + 1);
  try {
    for (const PlannedCopy& copy : transition.plan.copies()) {
      const StreamRef from_stream = stream_from(copy.device, on);
      // An upload to another device may still read the host bytes this copy writes.
      if (more_devices_ != nullptr) host_order().order_after_host_readers(from_stream);
      strategy().prefetch_to_host(context("prefetch to host", where, copy.device), copy.range,
                                  from_stream);
      copies->record(from_stream);
    }
  } catch (...) {
    // The copies queued so far write bytes that stay stale: the host waits for them, so that
    // nothing writes the host buffer behind the state.
    try {
      copies->wait();
    } catch (const std::exception&) {  // the failure that is being reported caused this one
    }
    throw;
  }
  state_.commit(transition.next);
  if (copies->empty()) return nullptr;
  arrivals_.push_back(HostArrival{range, copies});
  return copies;
}

void ArrayCore::discard(ByteRange range, const smartarray::source_location& where) {
  Transaction transaction(*this, Transaction::Kind::change, &where,
                          Transaction::Arrivals::by_range);
  SMARTARRAY_EXPECTS(range.begin <= range.end && range.end <= state_.size(), std::out_of_range,
                     describe(), ": discard of the bytes [", range.begin, ", ", range.end,
                     ") leaves the array of ", state_.size(), " bytes");
  if (active_capture() != nullptr) [[unlikely]] {
    refuse_in_capture(
        concat(describe(), ": discard at ", where.file_name(), ":", where.line()).c_str(),
        "the capture's work on the array has not run, so its bytes cannot be given up yet; "
        "discard after Graph::launch");
  }
  // One buffer that both sides address is the only copy: nothing is ever copied that a discard
  // could save, and a host access must still wait for the kernels that write it.
  if (one_buffer()) return;
  // The bytes keep their buffers and their pending work: a later write still waits for every use
  // of them, and a prefetch copy still writing them is waited for by the next host access.
  state_ = state_.discarded(range);
}

void ArrayCore::settle_arrivals(ByteRange range) {
  for (std::size_t i = 0; i < arrivals_.size();) {
    if (!overlap(arrivals_[i].range, range)) {
      ++i;
      continue;
    }
    // Dropped only once waited for: a failed wait leaves it pending for the next access.
    if (arrivals_[i].copies->wait()) counters_.add_wait();
    arrivals_.erase(arrivals_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void ArrayCore::settle_arrivals_quietly() noexcept {
  for (const HostArrival& arrival : arrivals_) {
    try {
      if (arrival.copies->wait()) counters_.add_wait();
    } catch (const std::exception&) {
      // A failed copy leaves the backend's error for its next call to report.
    }
  }
  arrivals_.clear();
}

}  // namespace smartarray::detail
