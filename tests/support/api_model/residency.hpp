// ApiModel's residency model: the transfers and validity that each kind of access implies.
#pragma once

#include "support/api_model/model.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace smartarray::test {

inline bool ApiModel::single_buffer(MemoryMode mode) noexcept {
  return mode == MemoryMode::mapped || mode == MemoryMode::managed;
}

inline bool ApiModel::prefetches(const Slot& s) const noexcept {
  return s.mode == MemoryMode::managed && prefetches_;
}

inline void ApiModel::add_prefetch(Slot& s) {
  s.expected.prefetch_count += 1;
  s.expected.prefetch_bytes += s.model.size() * sizeof(Element);
}

/// The host capacity after a growth to `needed` elements: geometric, at least 256 bytes.
inline std::size_t ApiModel::grown(std::size_t needed, std::size_t capacity) {
  return std::max({needed, 2 * capacity, 256 / sizeof(Element)});
}

/// A new host buffer of `capacity` elements. One buffer moves on the host after the device
/// work, which leaves it host-current.
inline void ApiModel::reallocate(Slot& s, std::size_t capacity) {
  s.capacity = capacity;
  if (single_buffer(s.mode)) s.host_begin = s.device_end = 0;
}

/// An append (push_back, resize growth, insert at cend) to `n` elements, before the model grows.
inline void ApiModel::grow(Slot& s, std::size_t n) {
  if (n > s.capacity) reallocate(s, grown(n, s.capacity));
}

/// A host read: a stale prefix comes back in one copy (one prefetch of everything: managed).
inline void ApiModel::read_host(Slot& s) {
  if (!single_buffer(s.mode)) {
    read_separate_host<Element>(s);
    return;
  }
  if (s.host_begin > 0 && prefetches(s)) add_prefetch(s);
  s.host_begin = 0;
}

/// A host write (read_write): a read, then the device copy is stale.
inline void ApiModel::write_host(Slot& s) {
  read_host(s);
  s.device_end = 0;
}

/// A host acquire through mutable (`writes`) or const iterators.
inline void ApiModel::access_host(Slot& s, bool writes) {
  if (writes) {
    write_host(s);
  } else {
    read_host(s);
  }
}

/// A device acquire of the whole array.
inline void ApiModel::acquire_device(Slot& s, Access access) {
  const std::size_t n = s.model.size();
  if (n == 0) return;
  if (!single_buffer(s.mode)) {
    acquire_separate_device<Element>(s, n, s.capacity, access);
    return;
  }
  if (access != Access::discard && s.device_end < n && prefetches(s)) add_prefetch(s);
  note_device_acquired(s, n, access);
}

/// A truncation to `m` elements: each side keeps what it held.
inline void ApiModel::truncate(Slot& s, std::size_t m) {
  s.model.resize(m);
  truncate_residency(s, m);
}

/// An insert of `inserted` at `index`.
inline void ApiModel::insert_model(Slot& s, std::size_t index,
                                   const std::vector<Element>& inserted) {
  const std::size_t n = s.model.size();
  if (inserted.empty()) return;
  if (index == n) {
    grow(s, n + inserted.size());
  } else {
    // The host copy is made whole once and the device copy becomes stale; a growth moves each
    // element once, straight to its new place.
    read_host(s);
    s.device_end = 0;
    if (n + inserted.size() > s.capacity) s.capacity = grown(n + inserted.size(), s.capacity);
  }
  s.model.insert(s.model.begin() + static_cast<std::ptrdiff_t>(index), inserted.begin(),
                 inserted.end());
}

/// An erase of [first, last).
inline void ApiModel::erase_model(Slot& s, std::size_t first, std::size_t last) {
  if (first == last) return;
  if (last == s.model.size()) {
    truncate(s, first);
    return;
  }
  write_host(s);
  s.model.erase(s.model.begin() + static_cast<std::ptrdiff_t>(first),
                s.model.begin() + static_cast<std::ptrdiff_t>(last));
}

/// `assign` and friends: `values` overwrite everything on the host; growth allocates exactly.
inline void ApiModel::assign_model(Slot& s, std::vector<Element> values) {
  s.capacity = std::max(s.capacity, values.size());
  s.model = std::move(values);
  overwrite_host(s);
}

/// A copy of `from` (copy construction): each side copies what it holds; one buffer is copied
/// on the host. Returns the device elements copied.
inline std::size_t ApiModel::copy_model(Slot& to, const Slot& from) {
  const std::size_t n = from.model.size();
  to.model = from.model;
  to.mode = from.mode;
  to.capacity = n;
  if (single_buffer(from.mode)) {
    to.host_begin = to.device_end = to.device_capacity = 0;
    return 0;
  }
  to.host_begin = from.host_begin;
  to.device_end = from.device_end;
  to.device_capacity = from.device_end > 0 ? n : 0;
  return from.device_end;
}

/// A new host-valid array of `values` in `mode` with an exact capacity.
inline void ApiModel::fresh_model(Slot& s, std::vector<Element> values, MemoryMode mode) {
  s.capacity = values.size();
  s.model = std::move(values);
  s.mode = mode;
  s.host_begin = s.device_end = s.device_capacity = 0;
}

/// A new array valid on the device only (map's result, device_array): exact capacities.
inline void ApiModel::device_only_model(Slot& s, std::vector<Element> values, MemoryMode mode) {
  const std::size_t n = values.size();
  s.model = std::move(values);
  s.mode = mode;
  s.capacity = n;
  s.host_begin = s.device_end = n;
  s.device_capacity = single_buffer(mode) ? 0 : n;
}

/// The state of a moved-from array: empty, no buffers, its mode kept.
inline void ApiModel::moved_from(Slot& s) {
  s.model.clear();
  s.capacity = s.host_begin = s.device_end = s.device_capacity = 0;
}

/// Exchanges everything but the names and this step's counters.
inline void ApiModel::swap_models(Slot& x, Slot& y) {
  std::swap(x.model, y.model);
  std::swap(x.mode, y.mode);
  std::swap(x.capacity, y.capacity);
  std::swap(x.host_begin, y.host_begin);
  std::swap(x.device_end, y.device_end);
  std::swap(x.device_capacity, y.device_capacity);
}

}  // namespace smartarray::test
