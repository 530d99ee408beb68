// ApiModel's decoding: the arrays, streams, modes and sizes each operation picks.
#pragma once

#include "support/api_model/checks.hpp"
#include "support/api_model/model.hpp"
#include "support/api_model/residency.hpp"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

namespace smartarray::test {

inline ApiModel::Slot& ApiModel::pick_slot(ByteReader& in) {
  return slots_[in.pick(slots_.size())];
}

/// The default stream or one of the two owned ones; `name` says which, for the log.
inline StreamRef ApiModel::pick_stream(ByteReader& in, std::string& name) {
  const std::size_t which = in.pick(3);
  name = which == 0 ? "default" : "s" + std::to_string(which);
  return which == 0 ? StreamRef{} : streams_[which - 1].ref();
}

inline MemoryMode ApiModel::pick_mode(ByteReader& in) { return modes_[in.pick(modes_.size())]; }

/// A new array's size: mostly small, sometimes past the first growth steps or a few pages.
inline std::size_t ApiModel::pick_size(ByteReader& in) {
  const std::size_t kind = in.pick(8);
  if (kind == 0) return 2048 + in.pick(2048);
  return kind < 3 ? 100 + in.pick(400) : in.pick(40);
}

/// The options of a new array in `mode`; a managed one may be advised read-mostly.
inline ArrayOptions ApiModel::pick_options(ByteReader& in, MemoryMode mode) {
  return {.mode = mode, .read_mostly = mode == MemoryMode::managed && in.flag()};
}

/// How many elements `s` may still grow by.
inline std::size_t ApiModel::room(const Slot& s) {
  return max_elements - std::min(max_elements, s.model.size());
}

inline std::string ApiModel::str(std::size_t v) { return std::to_string(v); }

/// An iterator returned by insert or erase points at `index` and holds the model's value there.
inline void ApiModel::check_iterator(const Slot& s, ConstIterator it, std::size_t index) const {
  if (index < s.model.size() && *it != s.model[index]) {
    diverge(s, "the returned iterator's value differs from the model's at " + str(index));
  }
  // Where the host copy is whole, its address can be taken without a transfer.
  if (s.host_begin == 0 && std::to_address(it) != std::as_const(s.array).data() + index) {
    diverge(s, "the returned iterator is not at index " + str(index));
  }
}

inline void ApiModel::run(Op op, ByteReader& in) {
  Slot& x = pick_slot(in);
  switch (op) {
    case Op::push_back: return push_back(in, x);
    case Op::pop_back: return pop_back(x);
    case Op::resize: return resize(in, x);
    case Op::clear: return clear(x);
    case Op::reserve: return reserve(in, x);
    case Op::shrink_to_fit: return shrink_to_fit(x);
    case Op::insert: return insert(in, x);
    case Op::erase: return erase(in, x);
    case Op::erase_value: return erase_value(in, x);
    case Op::assign: return assign(in, x);
    case Op::copy_assign: return copy_assign(x, pick_slot(in));
    case Op::move_assign: return move_assign(x, pick_slot(in));
    case Op::construct: return construct(in, x);
    case Op::copy_construct: return copy_construct(x, pick_slot(in));
    case Op::swap: return swap(in, x, pick_slot(in));
    case Op::const_reads: return const_reads(in, x);
    case Op::mutable_access: return mutable_access(in, x);
    case Op::host_view: return host_view(in, x);
    case Op::compare: return compare(x, pick_slot(in));
    case Op::copy_to_host: return copy_to_host(in, x);
    case Op::numba_host: return numba_host(in, x);
    case Op::numba_gpu: return numba_gpu(in, x);
    case Op::change_mode: return change_mode(in, x);
    case Op::length_errors: return length_errors(in, x);
    case Op::device_read: return device_read(in, x);
    case Op::device_read_write: return device_read_write(in, x);
    case Op::device_discard: return device_discard(in, x);
    case Op::transform: return transform(in, x, pick_slot(in));
    case Op::map: return map(in, x, pick_slot(in));
    case Op::fill: return fill(in, x);
    case Op::copy: return copy(in, x, pick_slot(in));
    case Op::reduce: return reduce(in, x);
    case Op::bind_kernel: return bind_kernel(in, x, pick_slot(in));
    case Op::streams: return streams(in);
    case Op::stale_host_guard: return toggle_stale_host_guard(in);
    case Op::inject: return inject(in);
    case Op::misuse: return misuse(in, x, pick_slot(in));
    case Op::count: break;
  }
}

}  // namespace smartarray::test
