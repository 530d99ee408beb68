/**
 * @file host/allocation_table.hpp
 * @brief A thread-safe table of disjoint address ranges (private to the host backend).
 *
 * The host backend keeps one table per kind of memory (device, pinned, managed, registered). Each
 * range is keyed by its first byte, so the range holding an interior pointer is found in O(log n):
 * that is what lets copies, prefetches and `mapped_device_pointer` check the memory they are given.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace smartarray::detail {

/// One tracked range: its first byte, its size and the `PinnedFlags` it was made with.
struct HostRange {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  unsigned flags = 0;
};

/// Disjoint ranges keyed by address. Every member is thread-safe.
class AllocationTable {
 public:
  /// Adds a range that the caller knows to be fresh (a new allocation).
  void insert(const HostRange& range) {
    std::lock_guard lock(mutex_);
    ranges_.emplace(address(range.ptr), range);
  }

  /// Adds `range` unless it overlaps a tracked one; returns the overlapped range in that case.
  std::optional<HostRange> insert_if_disjoint(const HostRange& range) {
    std::lock_guard lock(mutex_);
    if (auto overlapped = find_overlapping_locked(range.ptr, range.bytes)) return overlapped;
    ranges_.emplace(address(range.ptr), range);
    return std::nullopt;
  }

  /// Removes the range that starts at `ptr`; nullopt when no range starts there.
  std::optional<HostRange> erase(const void* ptr) {
    std::lock_guard lock(mutex_);
    const auto it = ranges_.find(address(ptr));
    if (it == ranges_.end()) return std::nullopt;
    HostRange range = it->second;
    ranges_.erase(it);
    return range;
  }

  /// Removes and returns every range (for teardown).
  std::vector<HostRange> take_all() {
    std::lock_guard lock(mutex_);
    std::vector<HostRange> all;
    all.reserve(ranges_.size());
    for (const auto& entry : ranges_) all.push_back(entry.second);
    ranges_.clear();
    return all;
  }

  /// The range that holds all of `[ptr, ptr + bytes)`, if one does.
  [[nodiscard]] std::optional<HostRange> find_containing(const void* ptr, std::size_t bytes) const {
    std::lock_guard lock(mutex_);
    const std::uintptr_t begin = address(ptr);
    auto it = ranges_.upper_bound(begin);
    if (it == ranges_.begin()) return std::nullopt;
    --it;
    const std::uintptr_t range_end = it->first + it->second.bytes;
    if (begin >= range_end || bytes > range_end - begin) return std::nullopt;
    return it->second;
  }

  /// A range that shares at least one byte with `[ptr, ptr + bytes)`, if one does.
  [[nodiscard]] std::optional<HostRange> find_overlapping(const void* ptr,
                                                          std::size_t bytes) const {
    std::lock_guard lock(mutex_);
    return find_overlapping_locked(ptr, bytes);
  }

 private:
  static std::uintptr_t address(const void* ptr) noexcept {
    return reinterpret_cast<std::uintptr_t>(ptr);
  }

  std::optional<HostRange> find_overlapping_locked(const void* ptr, std::size_t bytes) const {
    const std::uintptr_t begin = address(ptr);
    // Ranges are disjoint, so only the last one starting before our end can reach into us.
    auto it = ranges_.lower_bound(begin + bytes);
    if (it == ranges_.begin()) return std::nullopt;
    it = std::prev(it);
    if (it->first + it->second.bytes <= begin) return std::nullopt;
    return it->second;
  }

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, HostRange> ranges_;
};

}  // namespace smartarray::detail
