// The arrays' part in graphs: what a capture records of each device acquire, and the fix-up,
// ordering and postcondition of each replay (core/array_core/capture.hpp).
#include "core/array_core/capture.hpp"
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include "core/transaction.hpp"

#include <algorithm>
#include <utility>

namespace smartarray::detail {

// --- RangeSet ---

void RangeSet::add(ByteRange range) {
  if (range.empty()) return;
  // The first range that ends at or after the new one begins; merge every range it touches.
  auto first = std::lower_bound(ranges_.begin(), ranges_.end(), range.begin,
                                [](const ByteRange& r, std::size_t at) { return r.end < at; });
  auto last = first;
  while (last != ranges_.end() && last->begin <= range.end) {
    range.begin = std::min(range.begin, last->begin);
    range.end = std::max(range.end, last->end);
    ++last;
  }
  ranges_.insert(ranges_.erase(first, last), range);
}

std::vector<ByteRange> RangeSet::uncovered(ByteRange range) const {
  std::vector<ByteRange> gaps;
  std::size_t at = range.begin;
  for (const ByteRange& covered : ranges_) {
    if (covered.end <= at) continue;
    if (covered.begin >= range.end) break;
    if (covered.begin > at) gaps.push_back({at, covered.begin});
    at = std::max(at, covered.end);
  }
  if (at < range.end) gaps.push_back({at, range.end});
  return gaps;
}

std::size_t RangeSet::bytes() const noexcept {
  std::size_t total = 0;
  for (const ByteRange& range : ranges_) total += range.size();
  return total;
}

// --- ArrayCapture ---

ArrayCapture::~ArrayCapture() = default;

CapturedArray* ArrayCapture::find(const ArrayCore* array) noexcept {
  for (CapturedArray& entry : arrays_) {
    if (!entry.released && entry.binding.array == array) return &entry;
  }
  return nullptr;
}

CapturedArray& ArrayCapture::touch(ArrayCore& array) {
  CapturedArray& entry = arrays_.emplace_back();
  entry.binding.array = &array;
  entry.binding.device = device_;
  return entry;
}

void ArrayCapture::exchanged(const ArrayCore* a, const ArrayCore* b) noexcept {
  CapturedArray* const of_a = find(a);
  CapturedArray* const of_b = find(b);
  if (of_a != nullptr) of_a->binding.array = const_cast<ArrayCore*>(b);
  if (of_b != nullptr) of_b->binding.array = const_cast<ArrayCore*>(a);
}

void ArrayCapture::released(const ArrayCore* array) noexcept {
  if (CapturedArray* const entry = find(array)) entry->released = true;
}

void ArrayCapture::fail(std::string why) noexcept {
  if (failure_.empty()) failure_ = std::move(why);
}

// --- ArrayCore inside a capture ---

std::byte* ArrayCore::acquire_captured(Transaction& transaction, int device, Access access,
                                       ByteRange range, StreamRef stream,
                                       const smartarray::source_location& where) {
  ArrayCapture& capture = *active_array_capture;
  const auto at = [&] { return concat(" at ", where.file_name(), ":", where.line()); };
  SMARTARRAY_EXPECTS(!one_buffer(), logic_error, describe(), " in ", to_string(mode()),
                     " mode inside sa::capture", at(),
                     ": a graph binds device buffers, which only arrays in the explicit or "
                     "pageable mode have");
  SMARTARRAY_EXPECTS(device == capture.device(), logic_error, describe(), ": device access on ",
                     "device ", device, " inside a capture of device ", capture.device(), at(),
                     ": one capture records the work of one device");
  // Another stream of the device joins the capture at its first use (see join_capture()).
  if (!runtime().is_capturing(stream)) join_capture(stream);
  DeviceCopy& copy = device_copy(device);
  CapturedArray* entry = capture.find(this);
  if (entry == nullptr) {
    entry = &capture.touch(*this);
    entry->binding.id = id();
    entry->binding.name = describe();
    entry->binding.size = state_.size();
    // Work inside the capture orders only after captured work; the tracker comes back at the end.
    entry->saved_order = std::make_unique<StreamOrder>();
    entry->saved_order->swap_device_work(copy.order);
    copy.order.adopt_generation(*entry->saved_order);
  } else if (entry->binding.size != state_.size()) {
    capture.fail(concat(describe(), " was resized inside the capture from ",
                        entry->binding.size, " to ", state_.size(), " bytes", at(),
                        ", after the graph used it"));
    throw logic_error(capture.failure());
  }
  GraphBinding& binding = entry->binding;
  if (copy.data == nullptr || copy.capacity < state_.size()) {
    // A buffer that holds data would move it inside the graph, where no copy may be baked.
    const bool holds_data = !state_.is_unwritten() && state_.device_extent(device) != 0;
    SMARTARRAY_EXPECTS(binding.bound == nullptr && !holds_data, logic_error,
                       describe(), ": its device buffer must grow to ", state_.size(),
                       " bytes inside sa::capture", at(),
                       ", which would move its data inside the graph; use the array on the "
                       "device once before the capture");
    ensure_device_capacity(device, stream, 0);
  }
  if (binding.bound == nullptr) binding.bound = copy.data;
  if (access != Access::discard) {
    for (const ByteRange& gap : binding.writes.uncovered(range)) binding.reads.add(gap);
  }
  if (access != Access::read) {
    binding.writes.add(range);
    capture_written_ = true;
  }
  copy.order.order_device_access(
      access == Access::read ? Ordering::after_writer : Ordering::after_every_use, range, stream);
  transaction.start_views(device);
  return copy.data;
}

void ArrayCore::refuse_host_access_in_capture(const char* what,
                                              const smartarray::source_location& where) const {
  if (active_capture() == nullptr) {
    throw logic_error(concat(describe(), ": ", what, " at ", where.file_name(), ":",
                             where.line(), " while another thread captures a graph that writes it"));
  }
  refuse_in_capture(
      concat(describe(), ": ", what, " at ", where.file_name(), ":", where.line()).c_str(),
      "the graph writes this array and has not run, so the host would wait for results that do "
      "not exist yet; access it after Graph::launch");
}

void ArrayCore::end_capture(CapturedArray& entry) noexcept {
  std::lock_guard lock(mutex_);
  if (entry.saved_order != nullptr) {
    device_copy(entry.binding.device).order.swap_device_work(*entry.saved_order);
  }
  entry.saved_order.reset();
  capture_written_ = false;
  refresh_state();
}

std::shared_ptr<GraphToken> ArrayCore::graph_token() {
  std::lock_guard lock(mutex_);
  if (graph_token_ == nullptr) graph_token_ = std::make_shared<GraphToken>();
  return graph_token_;
}

// --- ArrayCore at each replay ---

void ArrayCore::check_binding(const GraphBinding& binding) const {
  SMARTARRAY_EXPECTS(state_.size() == binding.size, logic_error, binding.name, " was resized from ",
                     binding.size, " to ", state_.size(),
                     " bytes since the graph was captured; the graph works on the old size, so "
                     "capture it again");
  const DeviceCopy& copy = device_copy(binding.device);
  SMARTARRAY_EXPECTS(copy.data == binding.bound, logic_error, binding.name,
                     " no longer holds the device buffer the graph was captured with (it was "
                     "reallocated, moved, swapped or assigned to since); capture the graph again");
}

void ArrayCore::check_replay(const GraphBinding& binding) const {
  std::lock_guard lock(mutex_);
  check_binding(binding);
}

bool ArrayCore::prepare_replay(const GraphBinding& binding, StreamRef stream,
                               const smartarray::source_location& where) {
  const int device = binding.device;
  const bool writes = !binding.writes.empty();
  const Access access = writes ? Access::read_write : Access::read;
  {
    // The steady state, under the lock alone: the device holds every byte (alone, for a graph
    // that writes, so that its writes change nothing either), and the stream is already ordered
    // after every other use.
    std::lock_guard lock(mutex_);
    check_binding(binding);
    device_copy(device).order.forget_retired();
    if (device_current_for(device, access, ByteRange{0, state_.size()}, stream)) {
      touch();
      return false;
    }
  }
  Transaction transaction(*this, Transaction::Kind::use, &where);
  check_binding(binding);
  for (const ByteRange& range : binding.reads.ranges()) {
    if (!state_.holds_range(Place(Side::device, device), range)) {
      (void)acquire_device_locked(device, Access::read, range, stream, where);
    }
  }
  // A replay is one use of the whole array: its reads and writes are not ordered apart.
  device_copy(device).order.order_device_access(
      writes ? Ordering::after_every_use : Ordering::after_writer, ByteRange{0, state_.size()},
      stream);
  transaction.start_views(device);
  return writes;
}

void ArrayCore::commit_replay(const GraphBinding& binding) noexcept {
  Transaction transaction(*this, Transaction::Kind::change);
  const Place place(Side::device, binding.device);
  // A discard copies nothing: its transition only marks the range held by `place` alone.
  for (const ByteRange& range : binding.writes.ranges()) {
    state_.commit(state_.acquire(place, Access::discard, false, range).next);
  }
}

}  // namespace smartarray::detail
