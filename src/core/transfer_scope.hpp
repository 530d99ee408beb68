// Private: TransferScope, the one way the library records a transfer, so that its three sinks, the
// counters, the trace and the NVTX ranges (docs/observability.md), always agree.
#pragma once

#include <smartarray/core/detail/small_vector.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/diagnostics/observability.hpp>

namespace smartarray::detail {

/// Records the logical transfers of one copy, or of a batch of copies enqueued in one call. Each
/// transfer's NVTX range opens when it is added, before its copy is enqueued; done(), called once
/// the copies are enqueued, counts them (globally, on their device and on the array) and traces
/// them; the ranges close when the scope ends, innermost first. A copy that throws leaves the
/// scope before done(): it is neither counted nor traced, and its range still closes.
///
/// Without an NVTX tool a range costs one load and one branch, and up to two transfers are held
/// in place: the copies of a whole-array access never allocate here.
///
///     TransferScope upload(context.transfer(TransferKind::h2d, bytes), &context.counters());
///     runtime().copy_async(device, host, bytes, CopyKind::host_to_device, stream);
///     upload.done();
class TransferScope {
 public:
  /// A batch with no transfer yet: add() each before its copy is enqueued. Counted on `array`,
  /// the counters of the array whose data moves (nullptr: of no array).
  explicit TransferScope(TransferCounters* array) noexcept : array_(array) {}
  /// One transfer, its range opened now. Counted on `array` (nullptr: no array's).
  TransferScope(const TransferEvent& event, TransferCounters* array) : array_(array) {
    add(event);
  }
  ~TransferScope() {
    for (; ranges_ > 0; --ranges_) nvtx_pop();
  }
  TransferScope(const TransferScope&) = delete;
  TransferScope& operator=(const TransferScope&) = delete;

  /// Opens the range of one more transfer, inside those this scope opened already.
  void add(const TransferEvent& event) {
    events_.push_back(event);
    if (nvtx_may_record()) [[unlikely]] ranges_ += nvtx_push_transfer(event) ? 1U : 0U;
  }
  /// The copies are enqueued: counts and traces each transfer added, once.
  void done() noexcept {
    for (const TransferEvent& event : events_) emit_transfer(event, array_);
    events_.clear();
  }

  /// A message between processes, which MPI or NCCL carries rather than the library: an NVTX
  /// mark, not a range, counted on `array` and traced at once.
  static void mark(const TransferEvent& message, TransferCounters* array) noexcept {
    if (nvtx_may_record()) [[unlikely]] nvtx_mark_transfer(message);
    emit_transfer(message, array);
  }

 private:
  SmallVector<TransferEvent, 2> events_;
  TransferCounters* array_;
  unsigned ranges_ = 0;
};

}  // namespace smartarray::detail
