/**
 * @file smart_array.hpp
 * @brief `SmartArray<T>`: a `std::vector<T>` whose data lives where it was last needed.
 *
 * Each array holds a host copy (pinned, pooled) and a device copy (pooled), and knows which is
 * valid. Asking for a view on one side with an access intent makes that side valid with at most one
 * copy, and marks the other side stale when the access writes. Host element access and iterators
 * acquire the host side; kernels take `DeviceView`s from `device_view`.
 *
 * Host element access costs one predictable branch when the host side is already in the needed
 * state. Non-const access (`operator[]`, `begin()`, `data()`) means "the host will write": the
 * device copy becomes stale. Read through a const reference (`std::as_const(a)[i]`) or a
 * `host_view(Access::read)` to keep the device copy valid. Tight loops should use `host_view()` or
 * iterators.
 */
#pragma once

#include <smartarray/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/observability.hpp>
#include <smartarray/residency.hpp>
#include <smartarray/stream.hpp>
#include <smartarray/detail/array_core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <optional>
#include <source_location>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace smartarray {

/// @brief Per-array choices made at construction.
struct ArrayOptions {
  MemoryResource* host_resource = nullptr;    ///< host storage; nullptr: `pinned_resource()`
  MemoryResource* device_resource = nullptr;  ///< device storage; nullptr: `device_resource()`
};

/**
 * @brief A `std::vector<T>` replacement with lazy host/device residency.
 * @tparam T a trivially copyable element type.
 */
template <typename T>
class SmartArray {
  static_assert(std::is_trivially_copyable_v<T>, "SmartArray<T> needs a trivially copyable T");
  static_assert(!std::is_const_v<T> && !std::is_volatile_v<T>, "SmartArray<T> needs a plain T");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  // --- construction ---------------------------------------------------------------------------

  /// @brief An empty array.
  SmartArray() : core_(nullptr, nullptr) {}
  /// @brief An empty array with the given resources.
  explicit SmartArray(const ArrayOptions& options)
      : core_(options.host_resource, options.device_resource) {}
  /**
   * @brief `n` value-initialized elements, valid on the host.
   * @throws std::length_error when `n * sizeof(T)` overflows or exceeds max_size().
   */
  explicit SmartArray(size_type n, const ArrayOptions& options = {}) : SmartArray(options) {
    std::fill_n(grow_to(n), n, T{});
  }
  /// @brief `n` copies of `value`, valid on the host.
  SmartArray(size_type n, const T& value, const ArrayOptions& options = {}) : SmartArray(options) {
    std::fill_n(grow_to(n), n, value);
  }
  /// @brief The elements of `values`, valid on the host.
  SmartArray(std::initializer_list<T> values, const ArrayOptions& options = {})
      : SmartArray(std::span<const T>(values.begin(), values.size()), options) {}
  /// @brief The elements of [first, last), valid on the host.
  template <std::input_iterator It>
  SmartArray(It first, It last, const ArrayOptions& options = {}) : SmartArray(options) {
    if constexpr (std::forward_iterator<It>) {
      const auto n = static_cast<size_type>(std::distance(first, last));
      std::copy(first, last, grow_to(n));
    } else {
      for (; first != last; ++first) push_back(*first);
    }
  }
  /// @brief A copy of `values`, valid on the host.
  explicit SmartArray(std::span<const T> values, const ArrayOptions& options = {})
      : SmartArray(options) {
    if (!values.empty()) std::memcpy(grow_to(values.size()), values.data(), values.size_bytes());
  }
  /// @brief A copy of `values`, valid on the host.
  explicit SmartArray(const std::vector<T>& values, const ArrayOptions& options = {})
      : SmartArray(std::span<const T>(values), options) {}

  /// @brief Deep copy of the valid side(s); the copy is independent of `other`.
  SmartArray(const SmartArray& other) = default;
  /// @brief O(1); `other` is left empty.
  SmartArray(SmartArray&& other) noexcept = default;
  /// @brief Deep copy (strong guarantee: on failure `*this` is unchanged).
  SmartArray& operator=(const SmartArray& other) {
    if (this != &other) {
      SmartArray copy(other);
      swap(copy);
    }
    return *this;
  }
  /// @brief O(1); `other` is left empty.
  SmartArray& operator=(SmartArray&& other) noexcept {
    if (this != &other) {
      SmartArray taken(std::move(other));
      swap(taken);
    }
    return *this;
  }
  /// @brief Exchanges the contents and residency of two arrays (O(1)).
  void swap(SmartArray& other) noexcept { core_.swap(other.core_); }
  ~SmartArray() = default;

  // --- capacity -------------------------------------------------------------------------------

  [[nodiscard]] size_type size() const noexcept { return core_.size() / sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return core_.size() == 0; }
  [[nodiscard]] size_type capacity() const noexcept { return core_.capacity() / sizeof(T); }
  [[nodiscard]] static constexpr size_type max_size() noexcept {
    return static_cast<size_type>(std::numeric_limits<difference_type>::max()) / sizeof(T);
  }

  /// @brief Makes the capacity at least `n` (keeps only valid data when it reallocates).
  /// @throws std::length_error when `n` exceeds max_size().
  void reserve(size_type n) { core_.reserve(checked_bytes(n, "reserve")); }

  /// @brief Resizes to `n`; new elements are value-initialized on the host. Growth copies nothing;
  ///        the next device access copies only the new tail.
  void resize(size_type n) { resize(n, T{}); }
  /// @brief Resizes to `n`; new elements are copies of `value`.
  void resize(size_type n, const T& value) {
    const size_type old = size();
    if (n <= old) {
      core_.truncate(n * sizeof(T));
      return;
    }
    const T copy = value;  // `value` may live in this array's storage
    std::fill(grow_to(n) + old, host_ptr() + n, copy);
  }
  /// @brief Appends `value` on the host; a valid device copy stays valid for the old elements.
  void push_back(const T& value) {
    const T copy = value;  // `value` may live in this array's storage
    const size_type old = size();
    grow_to(old + 1)[old] = copy;
  }
  /// @brief Removes every element. Copies nothing.
  void clear() noexcept { core_.truncate(0); }

  // --- host access ----------------------------------------------------------------------------

  /// @brief Element `i` for writing: the device copy becomes stale. One branch when host-exclusive.
  [[nodiscard]] reference operator[](size_type i) {
    if (!core_.host_writable()) [[unlikely]] acquire_host_slow(Access::read_write);
    return host_ptr()[i];
  }
  /// @brief Element `i` for reading: the device copy stays valid.
  [[nodiscard]] const_reference operator[](size_type i) const {
    if (!core_.host_readable()) [[unlikely]] acquire_host_slow(Access::read);
    return host_ptr()[i];
  }
  /// @brief Checked element access.
  /// @throws std::out_of_range naming the index and the size.
  [[nodiscard]] reference at(size_type i) {
    check_index(i);
    return (*this)[i];
  }
  /// @brief Checked element access.
  [[nodiscard]] const_reference at(size_type i) const {
    check_index(i);
    return (*this)[i];
  }
  [[nodiscard]] reference front() { return (*this)[0]; }
  [[nodiscard]] const_reference front() const { return (*this)[0]; }
  [[nodiscard]] reference back() { return (*this)[size() - 1]; }
  [[nodiscard]] const_reference back() const { return (*this)[size() - 1]; }

  /// @brief The host data for writing (device copy becomes stale).
  [[nodiscard]] pointer data() { return host_view().data(); }
  /// @brief The host data for reading.
  [[nodiscard]] const_pointer data() const { return host_view().data(); }

  /// @brief Host iterators are plain pointers. Non-const begin() marks the host changed once.
  [[nodiscard]] iterator begin() { return data(); }
  [[nodiscard]] iterator end() { return data() + size(); }
  [[nodiscard]] const_iterator begin() const { return data(); }
  [[nodiscard]] const_iterator end() const { return data() + size(); }
  [[nodiscard]] const_iterator cbegin() const { return data(); }
  [[nodiscard]] const_iterator cend() const { return data() + size(); }
  [[nodiscard]] reverse_iterator rbegin() { return reverse_iterator(end()); }
  [[nodiscard]] reverse_iterator rend() { return reverse_iterator(begin()); }
  [[nodiscard]] const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  [[nodiscard]] const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }
  [[nodiscard]] const_reverse_iterator crbegin() const { return rbegin(); }
  [[nodiscard]] const_reverse_iterator crend() const { return rend(); }

  /**
   * @brief The host copy, made valid for `access`.
   * @param access read (device stays valid), read_write or discard (device becomes stale).
   * @param stream the stream that carries a needed device-to-host copy (default: the last device
   *        writer's stream). The host waits only for that copy.
   */
  [[nodiscard]] std::span<T> host_view(
      Access access = Access::read_write, std::optional<StreamRef> stream = std::nullopt,
      std::source_location where = std::source_location::current()) {
    if (!fast_host(access)) core_.acquire_host(access, stream, where);
    return {host_ptr(), size()};
  }
  /// @brief The host copy for reading.
  [[nodiscard]] std::span<const T> host_view(
      std::optional<StreamRef> stream = std::nullopt,
      std::source_location where = std::source_location::current()) const {
    if (!core_.host_readable()) core_.acquire_host(Access::read, stream, where);
    return {host_ptr(), size()};
  }

  // --- device access --------------------------------------------------------------------------

  /**
   * @brief The device copy, made valid for `access` on `stream`, as a view for kernels.
   *
   * Work on `stream` is ordered after this array's earlier device work on other streams through
   * events; the host does not block. A copy is made only when the device side is stale, and only
   * of the stale range.
   */
  [[nodiscard]] DeviceView<T> device_view(
      Access access, StreamRef stream = {},
      std::source_location where = std::source_location::current()) {
    auto* ptr = reinterpret_cast<T*>(core_.acquire_device(access, stream, where));
    return {ptr, size()};
  }
  /// @brief The device copy for reading on `stream`.
  [[nodiscard]] DeviceView<const T> device_view(
      StreamRef stream = {}, std::source_location where = std::source_location::current()) const {
    auto* ptr = reinterpret_cast<const T*>(core_.acquire_device(Access::read, stream, where));
    return {ptr, size()};
  }

  // --- Numba's SmartArray names ---------------------------------------------------------------

  /// @brief Numba's `host()`: the host copy, refreshed if stale, not marked changed. After writing
  ///        through it, call host_changed().
  [[nodiscard]] std::span<T> host(std::source_location where = std::source_location::current()) {
    if (!core_.host_readable()) core_.acquire_host(Access::read, std::nullopt, where);
    core_.wait_host_readers();
    return {host_ptr(), size()};
  }
  /// @brief Numba's `gpu()`: the device copy, refreshed if stale, not marked changed. After a
  ///        kernel writes it, call gpu_changed().
  [[nodiscard]] DeviceView<T> gpu(StreamRef stream = {},
                                  std::source_location where = std::source_location::current()) {
    return device_view(Access::read, stream, where);
  }
  /// @brief Numba's `host_changed()`: the host copy was modified; the device copy becomes stale.
  void host_changed() { core_.host_changed(); }
  /// @brief Numba's `gpu_changed()`: the device copy was modified on `stream`; the host copy
  ///        becomes stale.
  void gpu_changed(StreamRef stream = {}) { core_.device_changed(stream); }

  // --- residency ------------------------------------------------------------------------------

  /// @brief True when `side` holds every element.
  [[nodiscard]] bool is_valid(Side side) const noexcept { return core_.valid(side); }
  /// @brief This array's own transfer counters.
  [[nodiscard]] const TransferCounters& counters() const noexcept { return core_.counters(); }
  /// @brief A snapshot of this array's own transfers.
  [[nodiscard]] TransferStats transfer_stats() const noexcept { return core_.counters().snapshot(); }

 private:
  [[nodiscard]] T* host_ptr() const noexcept { return reinterpret_cast<T*>(core_.host_data()); }

  [[nodiscard]] bool fast_host(Access access) const noexcept {
    return access == Access::read ? core_.host_readable() : core_.host_writable();
  }
  void acquire_host_slow(Access access) const {
    core_.acquire_host(access, std::nullopt, std::source_location::current());
  }
  void check_index(size_type i) const {
    SMARTARRAY_EXPECTS(i < size(), std::out_of_range, "SmartArray::at(", i,
                       "): index out of range for size ", size());
  }
  static size_type checked_bytes(size_type n, const char* what) {
    SMARTARRAY_EXPECTS(n <= max_size(), std::length_error, "SmartArray::", what, "(", n,
                       "): ", n, " elements of ", sizeof(T), " bytes exceed max_size() ",
                       max_size());
    return n * sizeof(T);
  }
  /// Grows to `n` elements (new tail valid on the host only) and returns the host data.
  T* grow_to(size_type n) {
    return reinterpret_cast<T*>(core_.append(checked_bytes(n, "grow")));
  }

  mutable detail::ArrayCore core_;
};

/// @brief Swaps two arrays (O(1)).
template <typename T>
void swap(SmartArray<T>& a, SmartArray<T>& b) noexcept {
  a.swap(b);
}

}  // namespace smartarray
