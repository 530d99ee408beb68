// ArrayCore's messages: what the distributed layer sent from or received into an array, counted
// and traced as one event each (core/detail/array_messages.hpp).
#include <smartarray/core/detail/array_core.hpp>
#include "core/transfer_scope.hpp"

namespace smartarray::detail {

void ArrayCore::note_message(TransferKind kind, std::size_t bytes, int peer, const char* reason,
                             const smartarray::source_location& where) {
  // Handed to MPI or NCCL, a message is a mark on the timeline, not a range.
  TransferScope::mark({.kind = kind, .bytes = bytes, .reason = reason, .array_id = id(),
                       .label = trace_label(), .where = where, .device = -1, .peer = peer},
                      &counters_);
}

}  // namespace smartarray::detail
