/**
 * @file core/smart_array.hpp
 * @brief `SmartArray<T>`: a `std::vector<T>` whose data lives where it was last needed.
 *
 * By default each array holds a host copy (pinned, pooled) and a device copy (pooled), and knows
 * which is valid; `ArrayOptions::mode` chooses another mechanism behind the same API (mapped,
 * managed or pageable memory, see memory_mode.hpp). Asking for a view on one side with an access
 * intent makes that side valid with at most one copy, and marks the other side stale when the
 * access writes. Host element access and iterators acquire the host side; kernels take
 * `DeviceView`s from `device_view`.
 *
 * Host element access costs one predictable branch when the host side is already in the needed
 * state. Non-const access (`operator[]`, `begin()`, `end()`, `data()`) means "the host will write":
 * the device copy becomes stale. Read through a const reference (`std::as_const(a)[i]`, `cbegin()`)
 * or `host_view(Access::read)` to keep the device copy valid. Tight loops should use `host_view()`
 * or iterators. docs/vector.md lists the residency of every vector operation.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/core/host_iterator.hpp>
#include <smartarray/core/prefetch.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/memory/memory_mode.hpp>
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/core/array_options.hpp>
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/core/detail/smart_array_support.hpp>

#include <algorithm>
#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace smartarray {

/// Release and debug builds lay out DeviceView differently (config.hpp): the ABI namespace keeps
/// their SmartArray and DeviceView distinct types.
inline namespace SMARTARRAY_VIEW_ABI {

/**
 * @brief A `std::vector<T>` replacement with lazy host/device residency.
 *
 * The whole C++20 `std::vector` interface, with its exception guarantees and complexity; iterators
 * are `HostIterator`s, thin wrappers of pointers into the host copy. What each operation copies
 * between host and device is listed in docs/vector.md. In short: appends (`push_back`,
 * `emplace_back`, `resize` growth, `insert` at `cend()`) keep a valid device copy valid for the
 * old elements, so the next device access copies only the new tail; `pop_back`, `clear`, `resize`
 * down and `erase` at the end copy nothing and keep the device copy of what remains; `insert` and
 * `erase` elsewhere make the host copy whole (one copy at most) and the device copy stale.
 *
 * Every member that may copy between host and device takes the caller's source location, for the
 * migration trace (`SMARTARRAY_TRACE`) and debug messages; callers never pass it.
 *
 * @tparam T a trivially copyable element type.
 */
template <typename T>
class Slice;

template <typename T>
class SmartArray {
  static_assert(std::is_trivially_copyable_v<T>, "SmartArray<T> needs a trivially copyable T");
  static_assert(!std::is_const_v<T> && !std::is_volatile_v<T>, "SmartArray<T> needs a plain T");

 public:
  using value_type = T;                       ///< the element type
  using allocator_type = Allocator<T>;        ///< names the array's resources and memory mode
  using size_type = std::size_t;              ///< sizes and indices
  using difference_type = std::ptrdiff_t;     ///< iterator differences
  using reference = T&;                       ///< an element of the host copy
  using const_reference = const T&;           ///< an element of the host copy, for reading
  using pointer = T*;                         ///< a pointer into the host copy
  using const_pointer = const T*;             ///< a pointer into the host copy, for reading
  using iterator = HostIterator<T>;           ///< a contiguous iterator over the host copy
  using const_iterator = HostIterator<const T>;  ///< the same, for reading
  using reverse_iterator = std::reverse_iterator<iterator>;              ///< backwards
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;  ///< backwards, reading

  // --- construction ---------------------------------------------------------------------------

  /// @brief An empty array. Touches nothing (no resource, no backend) until its first use, so it
  ///        can be `constinit` (with a standard library whose std::vector is constexpr: see
  ///        SMARTARRAY_CONSTEXPR_EMPTY).
  SMARTARRAY_CONSTEXPR_EMPTY SmartArray() noexcept = default;
  /**
   * @brief An empty array with the given options (an `allocator_type` converts to them).
   * @param options the host and device resources and the memory mode.
   */
  SMARTARRAY_CONSTEXPR_EMPTY explicit SmartArray(const ArrayOptions& options) noexcept
      : core_(detail::resource_choice(options), detail::storage_options(options)) {}
  /**
   * @brief `n` value-initialized elements, valid on the host.
   * @param n the number of elements.
   * @param options the host and device resources (or an allocator).
   * @throws std::length_error when `n` exceeds max_size().
   */
  explicit SmartArray(size_type n, const ArrayOptions& options = {}) : SmartArray(options) {
    std::uninitialized_value_construct_n(grow_exact(n), n);
  }
  /**
   * @brief `n` elements that are not written: valid nowhere until written.
   *
   * No memory is taken until the first access, and then only on the side accessed; no access
   * copies anything. A device write (`out(a)`, `Access::discard`, `read_write`) or a host write
   * (non-const access, `assign`, `host_view(Access::discard)`) makes the written side valid, as
   * for any array. A read before any write (a const host access, `device_view(stream)`,
   * `copy_to`) throws logic_error in builds with SMARTARRAY_DEBUG_CHECKS, and reads indeterminate
   * values otherwise.
   *
   * @param n the number of elements.
   * @param options the host and device resources (or an allocator).
   * @throws std::length_error when `n` exceeds max_size().
   */
  SmartArray(size_type n, NoInit, const ArrayOptions& options = {}) : SmartArray(options) {
    core_.make_unwritten(checked_bytes(n, "SmartArray"));
  }
  /**
   * @brief `n` copies of `value`, valid on the host.
   * @param n the number of elements.
   * @param value the value of each element.
   * @param options the host and device resources (or an allocator).
   * @throws std::length_error when `n` exceeds max_size().
   */
  SmartArray(size_type n, const T& value, const ArrayOptions& options = {}) : SmartArray(options) {
    std::uninitialized_fill_n(grow_exact(n), n, value);
  }
  /**
   * @brief The elements of [first, last), valid on the host, each constructed from `*it` (an
   *        `explicit T(U)` constructor is fine). Any iterator whose category is an input iterator
   *        tag is taken, as by `std::vector`. Multi-pass ranges allocate once; input ranges grow
   *        as `push_back` does.
   * @param first the first element.
   * @param last the end of the range.
   * @param options the host and device resources (or an allocator).
   * @throws std::length_error when the range is longer than max_size().
   */
  template <detail::InputIterator It>
  SmartArray(It first, It last, const ArrayOptions& options = {});
  /**
   * @brief The elements of `values`, valid on the host.
   * @param values the elements.
   * @param options the host and device resources (or an allocator).
   */
  SmartArray(std::initializer_list<T> values, const ArrayOptions& options = {})
      : SmartArray(std::span<const T>(values.begin(), values.size()), options) {}
  /**
   * @brief A copy of `values`, valid on the host.
   * @param values the elements.
   * @param options the host and device resources (or an allocator).
   */
  explicit SmartArray(std::span<const T> values, const ArrayOptions& options = {});
  /**
   * @brief A copy of `values`, valid on the host.
   * @param values the elements.
   * @param options the host and device resources (or an allocator).
   */
  explicit SmartArray(const std::vector<T>& values, const ArrayOptions& options = {})
      : SmartArray(std::span<const T>(values), options) {}

  /// @brief Deep copy of the valid side(s), with `other`'s resources; independent of `other`.
  /// @param other the array to copy.
  SmartArray(const SmartArray& other) = default;
  /**
   * @brief A copy of `other` with the given options (the allocator-extended copy constructor).
   *
   * With `other`'s memory mode, each side copies what it holds valid, as the copy constructor
   * does, into memory from the given resources. With another mode, the elements are copied into
   * the new array's host copy: from `other`'s host copy, or with one device-to-host copy (counted
   * on `other`) when that is stale; `other`'s residency does not change.
   *
   * @param other the array to copy.
   * @param options the new array's options (or an allocator).
   * @param where the caller's source location, for the migration trace.
   */
  SmartArray(const SmartArray& other, const ArrayOptions& options,
             smartarray::source_location where = smartarray::source_location::current());
  /// @brief O(1); `other` is left empty.
  /// @param other the array to take the contents of.
  SmartArray(SmartArray&& other) noexcept = default;
  /**
   * @brief The allocator-extended move constructor: O(1) when `options` are `other`'s, else a
   *        copy made as by `SmartArray(other, options)`. `other` is left empty either way.
   * @param other the array to take the contents of.
   * @param options the new array's options (or an allocator).
   * @param where the caller's source location, for the migration trace.
   */
  SmartArray(SmartArray&& other, const ArrayOptions& options,
             smartarray::source_location where = smartarray::source_location::current());

  // `std::allocator` holds no state: where `std::vector` takes one, it means the default options.
  /// @brief An empty array with the default options.
  template <typename U>
  explicit SmartArray(const std::allocator<U>& /*default_options*/) noexcept : SmartArray() {}
  /// @brief `SmartArray(n)`: `n` value-initialized elements, with the default options.
  template <typename U>
  SmartArray(size_type n, const std::allocator<U>& /*default_options*/) : SmartArray(n) {}
  /// @brief `SmartArray(n, value)`, with the default options.
  template <typename U>
  SmartArray(size_type n, const T& value, const std::allocator<U>& /*default_options*/)
      : SmartArray(n, value) {}
  /// @brief `SmartArray(first, last)`, with the default options.
  template <detail::InputIterator It, typename U>
  SmartArray(It first, It last, const std::allocator<U>& /*default_options*/)
      : SmartArray(std::move(first), std::move(last)) {}
  /// @brief `SmartArray(values)`, with the default options.
  template <typename U>
  SmartArray(std::initializer_list<T> values, const std::allocator<U>& /*default_options*/)
      : SmartArray(values) {}
  /// @brief `SmartArray(other, ArrayOptions{})`: a copy with the default options.
  template <typename U>
  SmartArray(const SmartArray& other, const std::allocator<U>& /*default_options*/)
      : SmartArray(other, ArrayOptions{}) {}
  /// @brief `SmartArray(std::move(other), ArrayOptions{})`, with the default options.
  template <typename U>
  SmartArray(SmartArray&& other, const std::allocator<U>& /*default_options*/)
      : SmartArray(std::move(other), ArrayOptions{}) {}
  ~SmartArray() = default;

  // --- assignment -----------------------------------------------------------------------------

  /**
   * @brief Deep copy of `other`'s valid side(s), with its resources (strong guarantee). A copy of
   *        the device side counts on this array's counters.
   * @param other the array to copy; self-assignment does nothing.
   */
  SmartArray& operator=(const SmartArray& other) {
    core_.assign_copy(other.core_);
    return *this;
  }
  /// @brief O(1): frees what this array held, then takes `other`'s contents, options and label;
  ///        `other` is left empty, with its options.
  /// @param other the array to take the contents of.
  SmartArray& operator=(SmartArray&& other) noexcept {
    core_.move_assign(other.core_);
    return *this;
  }
  /// @brief Replaces the contents with `values` (see assign).
  /// @param values the new elements.
  SmartArray& operator=(std::initializer_list<T> values) {
    assign(values);
    return *this;
  }

  /**
   * @brief Replaces the contents with `n` copies of `value`, written on the host: nothing is
   *        copied and the device copy becomes stale (strong guarantee).
   * @param n the new size.
   * @param value the value of each element; it may be an element of this array.
   * @throws std::length_error when `n` exceeds max_size().
   */
  void assign(size_type n, const T& value) {
    const T copy = value;
    std::uninitialized_fill_n(overwrite_all(n), n, copy);
  }
  /**
   * @brief Replaces the contents with [first, last) (see assign(n, value)). The range may lie in
   *        this array; elements are constructed from `*it`.
   * @param first the first element.
   * @param last the end of the range.
   * @throws std::length_error when the range is longer than max_size().
   */
  template <detail::InputIterator It>
  void assign(It first, It last);
  /// @brief Replaces the contents with `values` (see assign(n, value)).
  /// @param values the new elements.
  void assign(std::initializer_list<T> values) {
    assign_span(std::span<const T>(values.begin(), values.size()));
  }

  /// @brief Exchanges the contents, residency and options of two arrays (O(1)). Each keeps its
  ///        number, label and counters.
  /// @param other the other array.
  void swap(SmartArray& other) noexcept { core_.swap(other.core_); }

  /// @brief The options the array was made with (or took from a copy, move or swap).
  [[nodiscard]] allocator_type get_allocator() const noexcept { return allocator_type(options()); }

  // --- capacity -------------------------------------------------------------------------------

  /// @brief The number of elements.
  [[nodiscard]] size_type size() const noexcept { return core_.size() / sizeof(T); }
  /// @brief True when there are no elements.
  [[nodiscard]] bool empty() const noexcept { return core_.size() == 0; }
  /// @brief The number of elements the host storage holds without reallocating.
  [[nodiscard]] size_type capacity() const noexcept { return core_.capacity() / sizeof(T); }
  /// @brief The largest possible size: `PTRDIFF_MAX` bytes, as for `std::vector`.
  [[nodiscard]] static constexpr size_type max_size() noexcept {
    return static_cast<size_type>(std::numeric_limits<difference_type>::max()) / sizeof(T);
  }

  /**
   * @brief Makes the capacity at least `n`. Reallocation moves only the valid host data and copies
   *        nothing between host and device (strong guarantee).
   * @param n the wanted capacity.
   * @throws std::length_error when `n` exceeds max_size().
   */
  void reserve(size_type n) { core_.reserve(checked_bytes(n, "reserve")); }
  /// @brief Reduces the capacity to the size, moving only the valid host data (strong guarantee).
  void shrink_to_fit() { core_.shrink_to_fit(); }

  // --- modifiers ------------------------------------------------------------------------------

  /// @brief Removes every element. Copies nothing.
  void clear() noexcept { core_.truncate(0); }

  /**
   * @brief Inserts `value` before `pos` (see insert(pos, count, value)).
   * @param pos a position in this array.
   * @param value the value; it may be an element of this array.
   * @param where the caller's source location, for the migration trace.
   * @return the inserted element.
   */
  iterator insert(const_iterator pos, const T& value,
                  smartarray::source_location where = smartarray::source_location::current()) {
    return iterator(emplace_at(index_of(pos, "insert"), where, value));
  }
  /// @brief Inserts `value` before `pos` (see insert(pos, count, value)).
  /// @param pos a position in this array.
  /// @param value the value.
  /// @param where the caller's source location, for the migration trace.
  /// @return the inserted element.
  iterator insert(const_iterator pos, T&& value,
                  smartarray::source_location where = smartarray::source_location::current()) {
    return iterator(emplace_at(index_of(pos, "insert"), where, std::move(value)));
  }
  /**
   * @brief Inserts `count` copies of `value` before `pos`.
   *
   * At `cend()` this is an append: a valid device copy stays valid for the old elements. Elsewhere
   * the host copy is made whole (one copy of a stale part at most) and the device copy becomes
   * stale. Strong guarantee.
   *
   * @param pos a position in this array.
   * @param count the number of copies.
   * @param value the value; it may be an element of this array.
   * @param where the caller's source location, for the migration trace.
   * @return the first inserted element, or `pos` when `count` is 0.
   * @throws std::length_error when the new size exceeds max_size().
   * @throws logic_error in debug builds when `pos` is not a position in this array.
   */
  iterator insert(const_iterator pos, size_type count, const T& value,
                  smartarray::source_location where = smartarray::source_location::current());
  /**
   * @brief Inserts [first, last) before `pos` (see insert(pos, count, value)). The range may lie
   *        in this array. Ranges other than contiguous ones of `T` are staged first (each element
   *        constructed from `*it`), so that the array changes only once every element was read
   *        (strong guarantee).
   * @param pos a position in this array.
   * @param first the first element.
   * @param last the end of the range.
   * @param where the caller's source location, for the migration trace.
   * @return the first inserted element, or `pos` when the range is empty.
   */
  template <detail::InputIterator It>
  iterator insert(const_iterator pos, It first, It last,
                  smartarray::source_location where = smartarray::source_location::current());
  /// @brief Inserts `values` before `pos` (see insert(pos, count, value)).
  /// @param pos a position in this array.
  /// @param values the elements.
  /// @param where the caller's source location, for the migration trace.
  /// @return the first inserted element, or `pos` when `values` is empty.
  iterator insert(const_iterator pos, std::initializer_list<T> values,
                  smartarray::source_location where = smartarray::source_location::current()) {
    return insert_span(index_of(pos, "insert"), std::span<const T>(values.begin(), values.size()),
                       where);
  }
  /**
   * @brief Inserts `T(args...)` before `pos` (see insert(pos, count, value)).
   * @param pos a position in this array (converting it records the caller's source location).
   * @param args the constructor arguments; they may refer to elements of this array.
   * @return the inserted element.
   */
  template <typename... Args>
  iterator emplace(detail::PositionAt<const_iterator> pos, Args&&... args) {
    return iterator(
        emplace_at(index_of(pos.pos, "emplace"), pos.where, std::forward<Args>(args)...));
  }

  /// @brief Removes the element at `pos` (see erase(first, last)).
  /// @param pos a position in this array before `end()`.
  /// @param where the caller's source location, for the migration trace.
  /// @return the element after the removed one.
  iterator erase(const_iterator pos,
                 smartarray::source_location where = smartarray::source_location::current()) {
    return erase(pos, pos + 1, where);
  }
  /**
   * @brief Removes [first, last).
   *
   * When `last` is `cend()` nothing is copied and the device copy stays valid for what remains.
   * Elsewhere the host copy is made whole (one copy of a stale part at most) and the device copy
   * becomes stale. If that copy fails, the array is unchanged.
   *
   * @param first the first element to remove.
   * @param last the end of the elements to remove.
   * @param where the caller's source location, for the migration trace.
   * @return the element after the removed ones.
   * @throws logic_error in debug builds when the range is not one of this array.
   */
  iterator erase(const_iterator first, const_iterator last,
                 smartarray::source_location where = smartarray::source_location::current());

  /**
   * @brief Appends `value` (see emplace_back).
   * @param value the value; it may be an element of this array.
   */
  void push_back(const T& value) { emplace_back(value); }
  /// @brief Appends `value` (see emplace_back).
  /// @param value the value.
  void push_back(T&& value) { emplace_back(std::move(value)); }
  /**
   * @brief Appends `T(args...)` on the host; amortized O(1).
   *
   * A valid device copy stays valid for the old elements: the next device access copies only the
   * new tail (when the capacity allowed the append in place; growth moves only valid data).
   * Strong guarantee.
   *
   * @param args the constructor arguments; they may refer to elements of this array.
   * @return the new element.
   * @throws std::length_error when the array already holds max_size() elements.
   */
  template <typename... Args>
  reference emplace_back(Args&&... args);
  /// @brief Removes the last element. Copies nothing; the device copy stays valid for the rest.
  /// @throws logic_error in debug builds when the array is empty.
  void pop_back();
  /**
   * @brief Resizes to `n`; new elements are value-initialized on the host (see resize(n, value)).
   * @param n the new size.
   */
  void resize(size_type n) { resize(n, T{}); }
  /**
   * @brief Resizes to `n`. Shrinking copies nothing and keeps what each side held of the rest.
   *        Growth writes the new elements on the host; a valid device copy stays valid for the
   *        old ones. Strong guarantee.
   * @param n the new size.
   * @param value the value of new elements; it may be an element of this array.
   * @throws std::length_error when `n` exceeds max_size().
   */
  void resize(size_type n, const T& value);

  // --- host access ----------------------------------------------------------------------------

  /**
   * @brief Element `i` for writing: the device copy becomes stale. One branch when host-exclusive.
   * @param i an index below size(); converting it records the caller's source location.
   * @throws logic_error in builds with SMARTARRAY_DEBUG_CHECKS when `i` is out of range (an empty
   *         or moved-from array included), naming the array, the index and the call.
   */
  [[nodiscard]] reference operator[](detail::IndexAt i);
  /**
   * @brief Element `i` for reading: the device copy stays valid.
   * @param i an index below size(); converting it records the caller's source location.
   * @throws logic_error in builds with SMARTARRAY_DEBUG_CHECKS when `i` is out of range.
   */
  [[nodiscard]] const_reference operator[](detail::IndexAt i) const;
  /**
   * @brief Checked element access for writing.
   * @param i the index.
   * @param where the caller's source location, for the migration trace.
   * @throws std::out_of_range naming the index and the size.
   */
  [[nodiscard]] reference at(
      size_type i, smartarray::source_location where = smartarray::source_location::current()) {
    check_index(i);
    return (*this)[detail::IndexAt(i, where)];
  }
  /**
   * @brief Checked element access for reading.
   * @param i the index.
   * @param where the caller's source location, for the migration trace.
   * @throws std::out_of_range naming the index and the size.
   */
  [[nodiscard]] const_reference at(
      size_type i,
      smartarray::source_location where = smartarray::source_location::current()) const {
    check_index(i);
    return (*this)[detail::IndexAt(i, where)];
  }
  /// @brief The first element, for writing. The array must not be empty (checked in debug builds).
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] reference front(
      smartarray::source_location where = smartarray::source_location::current()) {
    check_not_empty("front", where);
    return (*this)[detail::IndexAt(std::size_t{0}, where)];
  }
  /// @brief The first element, for reading. The array must not be empty (checked in debug builds).
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_reference front(
      smartarray::source_location where = smartarray::source_location::current()) const {
    check_not_empty("front", where);
    return (*this)[detail::IndexAt(std::size_t{0}, where)];
  }
  /// @brief The last element, for writing. The array must not be empty (checked in debug builds).
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] reference back(
      smartarray::source_location where = smartarray::source_location::current()) {
    check_not_empty("back", where);
    return (*this)[detail::IndexAt(size() - 1, where)];
  }
  /// @brief The last element, for reading. The array must not be empty (checked in debug builds).
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_reference back(
      smartarray::source_location where = smartarray::source_location::current()) const {
    check_not_empty("back", where);
    return (*this)[detail::IndexAt(size() - 1, where)];
  }

  /// @brief The host data for writing (the device copy becomes stale).
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] pointer data(
      smartarray::source_location where = smartarray::source_location::current()) {
    return host_data(Access::read_write, where);
  }
  /// @brief The host data for reading.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_pointer data(
      smartarray::source_location where = smartarray::source_location::current()) const {
    return host_data(where);
  }

  /// @brief A non-const begin() or end() marks the host changed once (one branch when it already
  ///        is); iterating then costs what a pointer costs.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] iterator begin(
      smartarray::source_location where = smartarray::source_location::current()) {
    return iterator(data(where));
  }
  /// @brief The end of the host data for writing (see begin()).
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] iterator end(
      smartarray::source_location where = smartarray::source_location::current()) {
    return iterator(data(where) + size());
  }
  /// @brief The host data for reading: never marks the host changed.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_iterator begin(
      smartarray::source_location where = smartarray::source_location::current()) const {
    return const_iterator(data(where));
  }
  /// @brief The end of the host data for reading.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_iterator end(
      smartarray::source_location where = smartarray::source_location::current()) const {
    return const_iterator(data(where) + size());
  }
  /// @brief The host data for reading.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_iterator cbegin(
      smartarray::source_location where = smartarray::source_location::current()) const {
    return begin(where);
  }
  /// @brief The end of the host data for reading; `insert(cend(), ...)` appends.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_iterator cend(
      smartarray::source_location where = smartarray::source_location::current()) const {
    return end(where);
  }
  /// @brief Reverse iteration for writing (see begin()).
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] reverse_iterator rbegin(
      smartarray::source_location where = smartarray::source_location::current()) {
    return reverse_iterator(end(where));
  }
  /// @brief The end of reverse iteration for writing.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] reverse_iterator rend(
      smartarray::source_location where = smartarray::source_location::current()) {
    return reverse_iterator(begin(where));
  }
  /// @brief Reverse iteration for reading.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_reverse_iterator rbegin(
      smartarray::source_location where = smartarray::source_location::current()) const {
    return const_reverse_iterator(end(where));
  }
  /// @brief The end of reverse iteration for reading.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_reverse_iterator rend(
      smartarray::source_location where = smartarray::source_location::current()) const {
    return const_reverse_iterator(begin(where));
  }
  /// @brief Reverse iteration for reading.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_reverse_iterator crbegin(
      smartarray::source_location where = smartarray::source_location::current()) const {
    return rbegin(where);
  }
  /// @brief The end of reverse iteration for reading.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] const_reverse_iterator crend(
      smartarray::source_location where = smartarray::source_location::current()) const {
    return rend(where);
  }

  /**
   * @brief The host copy, made valid for `access`.
   * @param access read (device stays valid), read_write or discard (device becomes stale).
   * @param stream the stream that carries a needed device-to-host copy (default: the last device
   *        writer's stream). The host waits only for that copy.
   * @param where the caller's source location, for the migration trace.
   */
  [[nodiscard]] std::span<T> host_view(
      Access access = Access::read_write, std::optional<StreamRef> stream = std::nullopt,
      smartarray::source_location where = smartarray::source_location::current()) {
    if (stream || !fast_host(access)) acquire_host(access, stream, where);  // checks `stream`
    return {host_ptr(), size()};
  }
  /// @brief The host copy for reading.
  /// @param stream the stream that carries a needed device-to-host copy.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] std::span<const T> host_view(
      std::optional<StreamRef> stream = std::nullopt,
      smartarray::source_location where = smartarray::source_location::current()) const {
    if (stream || !core_.host_readable()) acquire_host(Access::read, stream, where);
    return {host_ptr(), size()};
  }

  /**
   * @brief The elements [first, first + count) as a `Slice` (core/slice.hpp): its host and device
   *        views move only the bytes of that range that the side lacks.
   * @param first the first element.
   * @param count the number of elements.
   * @throws std::out_of_range naming the range and the size when the range leaves the array.
   */
  [[nodiscard]] Slice<T> slice(size_type first, size_type count);
  /// @brief A read-only slice of the elements [first, first + count) (see the writable overload).
  /// @param first the first element.
  /// @param count the number of elements.
  [[nodiscard]] Slice<const T> slice(size_type first, size_type count) const;

  // --- device access --------------------------------------------------------------------------

  /**
   * @brief The device copy, made valid for `access` on `stream`, as a view for kernels.
   *
   * Work on `stream` is ordered after this array's earlier device work on other streams through
   * events; the host does not block. A copy is made only when the device side is stale, and only
   * of the stale range.
   * @param access read, read_write or discard.
   * @param stream the stream the work runs on.
   * @param where the caller's source location, for the migration trace.
   */
  [[nodiscard]] DeviceView<T> device_view(
      Access access, StreamRef stream = {},
      smartarray::source_location where = smartarray::source_location::current());
  /// @brief The device copy for reading on `stream`.
  /// @param stream the stream the work runs on.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] DeviceView<const T> device_view(
      StreamRef stream = {}, smartarray::source_location where = smartarray::source_location::current()) const;

  // --- Numba's SmartArray names ---------------------------------------------------------------

  /// @brief Numba's `host()`: the host copy, refreshed if stale, not marked changed. After writing
  ///        through it, call host_changed().
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] std::span<T> host(smartarray::source_location where = smartarray::source_location::current());
  /// @brief Numba's `gpu()`: the device copy, refreshed if stale, not marked changed. After a
  ///        kernel writes it, call gpu_changed(). Work on `stream` is ordered after every other
  ///        use of the device copy, so that a kernel may write through the view.
  /// @param stream the stream the work runs on.
  /// @param where the caller's source location, for the migration trace.
  [[nodiscard]] DeviceView<T> gpu(StreamRef stream = {},
                                  smartarray::source_location where = smartarray::source_location::current());
  /// @brief Numba's `host_changed()`: the host copy was modified; the device copy becomes stale.
  void host_changed() { core_.host_changed(); }
  /// @brief Numba's `gpu_changed()`: the device copy was modified on `stream`; the host copy
  ///        becomes stale.
  /// @param stream the stream of the kernel that wrote it.
  void gpu_changed(StreamRef stream = {}) { core_.device_changed(stream); }

  // --- residency ------------------------------------------------------------------------------

  /// @brief True when `side` holds every element (never, for an unwritten `no_init` array). The
  ///        device side is the current device's copy.
  /// @param side the side.
  [[nodiscard]] bool is_valid(Side side) const { return core_.valid(side); }
  /// @brief True when the copy on `device` holds every element. Mapped and managed arrays have one
  ///        copy that every device addresses.
  /// @param device the device.
  /// @throws logic_error naming the ordinal and the device count when `device` does not exist.
  [[nodiscard]] bool is_valid(Device device) const { return core_.valid_on_device(device.ordinal); }
  /**
   * @brief Starts copying the elements that the host lacks to the host on `stream`, and returns
   *        at once with a token (core/prefetch.hpp); the host waits for nothing.
   *
   * The copies are those a host read would make: one device-to-host copy per stale run, counted
   * as such (a managed array's is one `cudaMemPrefetchAsync` to the host, counted in `prefetch_*`;
   * a mapped array's is nothing to copy, and its token is ready when the kernels that write it
   * are done; a pageable array's copy is staged through the host, so it is done when this
   * returns). Each copy runs on `stream` when the device it comes from is `stream`'s, else on that
   * device's last writer's stream (or its default stream). The elements are host-valid from now
   * on: the first host access of them waits for exactly these copies (not for the whole stream)
   * and copies nothing more, and a host write never races them. An array that the host already
   * holds copies nothing, and its token is ready.
   * @param stream the stream of the copies.
   * @param where the caller's source location, for the migration trace.
   * @throws logic_error for a stream that is not live, and inside `sa::capture` (a prefetch is a
   *         host-side operation; the capture's work has not run).
   */
  Prefetch prefetch_to_host(
      StreamRef stream = {},
      smartarray::source_location where = smartarray::source_location::current()) const {
    return Prefetch(core_.prefetch_to_host({0, size() * sizeof(T)}, stream, where));
  }
  /**
   * @brief Copies the elements that `stream`'s device lacks there now, on `stream`, as a device
   *        read would: a kernel on `stream` then copies nothing. The host does not wait.
   * @param stream the stream of the copies, on the device that receives them.
   * @param where the caller's source location, for the migration trace.
   * @throws logic_error for a stream that is not live.
   */
  void prefetch_to_device(
      StreamRef stream = {},
      smartarray::source_location where = smartarray::source_location::current()) const {
    static_cast<void>(core_.acquire_device(Access::read, stream, where));
  }
  /**
   * @brief Gives up the elements' values: they become unspecified on every side, and no copy
   *        ever moves them (no host or device read, no eviction, no peer read) until something
   *        writes them. A read before then returns unspecified values without an error (the debug
   *        builds' check of unwritten reads covers `no_init` arrays only). Mapped and managed
   *        arrays have one buffer that both sides address: nothing is ever copied there that a
   *        discard could save, so it changes nothing for them.
   * @param where the caller's source location, for messages.
   * @throws logic_error inside `sa::capture` (the capture's work on the array has not run).
   */
  void discard(smartarray::source_location where = smartarray::source_location::current()) {
    core_.discard({0, size() * sizeof(T)}, where);
  }

  /// @brief This object's own transfer counters. They count the copies made through this object
  ///        and stay with it: a swap or move exchanges the data, not the counts.
  [[nodiscard]] const TransferCounters& counters() const noexcept { return core_.counters(); }
  /// @brief A snapshot of this array's own transfers.
  [[nodiscard]] TransferStats transfer_stats() const noexcept { return core_.counters().snapshot(); }
  /// @brief The memory mode chosen at construction.
  [[nodiscard]] MemoryMode memory_mode() const noexcept { return core_.mode(); }

  /// @brief The number that traces and messages give this array ("SmartArray #3"): assigned when
  ///        first needed, unique in the process, and kept by this object (a copy or a
  ///        move-constructed array gets its own; a swap exchanges the data, not the numbers).
  [[nodiscard]] std::uint64_t id() const noexcept { return core_.id(); }
  /**
   * @brief Names this array in traces and messages, after its number: `SmartArray #3 "weights"`.
   *        Swaps and assignments leave it with this object; a move-constructed array takes it (so
   *        that an array returned by value keeps its label), and a copy has none. An empty label
   *        removes it.
   * @param label the name.
   */
  void set_label(std::string label) { core_.set_label(std::move(label)); }
  /// @brief The label set by set_label(), or an empty string.
  [[nodiscard]] std::string label() const { return core_.label(); }

  /**
   * @brief Copies every element into `dest` without changing the residency (Numba's
   *        `copy_to_host(ary)`).
   *
   * When the host copy is stale the elements come straight from the device on `stream` (one D2H)
   * and the host copy stays stale; otherwise they are copied from the host copy (no transfer).
   * Mapped and managed arrays have one buffer: it is read on the host once its device writer is
   * done (no transfer, no prefetch), so `wait` does not apply to them.
   * @param dest at least size() elements of host memory.
   * @param stream the stream of the device-to-host copy.
   * @param wait false: return once the copy is queued. Then `dest` must stay alive, and must not
   *        be read, until `stream` is synchronized.
   * @param where the caller's source location, for the migration trace.
   * @throws std::length_error when `dest` holds fewer than size() elements (naming both sizes).
   */
  void copy_to(std::span<T> dest, StreamRef stream = {}, bool wait = true,
               smartarray::source_location where = smartarray::source_location::current()) const;

  /// @brief Element-wise equality, as for `std::vector` (see the non-member comment).
  friend bool operator==(const detail::Compared<T>& a, const detail::Compared<T>& b) {
    if (a.array.size() != b.array.size()) return false;
    const std::span<const T> x = a.array.host_view(std::nullopt, a.where);
    const std::span<const T> y = b.array.host_view(std::nullopt, b.where);
    return std::equal(x.begin(), x.end(), y.begin(), y.end());
  }
  /// @brief Lexicographic comparison, as for `std::vector` (see the non-member comment).
  friend auto operator<=>(const detail::Compared<T>& a, const detail::Compared<T>& b)
    requires detail::SynthComparable<T>
  {
    const std::span<const T> x = a.array.host_view(std::nullopt, a.where);
    const std::span<const T> y = b.array.host_view(std::nullopt, b.where);
    return std::lexicographical_compare_three_way(x.begin(), x.end(), y.begin(), y.end(),
                                                  detail::SynthThreeWay{});
  }

 private:
  friend struct detail::ArrayFactory;
  friend struct detail::ChunkedAccess;
  friend struct detail::ArrayMessages;
  template <typename>
  friend class Slice;

  [[nodiscard]] T* host_ptr() const noexcept { return reinterpret_cast<T*>(core_.host_data()); }
  [[nodiscard]] ArrayOptions options() const noexcept {
    return detail::array_options(core_.storage(), core_.resources());
  }
  /// The generation a new device view records: only debug builds check it, so release builds
  /// leave their views untracked instead of reading the registry on every acquire.
  [[nodiscard]] detail::ViewStamp view_stamp() const noexcept;
  /// Whether an acquire for `access` checks that the array was written: reads, in debug builds.
  [[nodiscard]] static constexpr bool read_checked(Access access) noexcept {
    return access == Access::read && SMARTARRAY_DEBUG_CHECKS != 0;
  }

  [[nodiscard]] bool fast_host(Access access) const noexcept {
    return access == Access::read ? core_.host_readable() : core_.host_writable();
  }
  void acquire_host(Access access, std::optional<StreamRef> stream,
                    const smartarray::source_location& where) const {
    core_.acquire_host(access, stream, where, read_checked(access));
  }
  /// The slow path of element access and iterators. `where` is taken by value (a pointer in a
  /// register): a reference would make the fast path keep the caller's location in memory, one
  /// store per `operator[]` in a loop.
  void acquire_host_at(Access access, smartarray::source_location where) const {
    acquire_host(access, std::nullopt, where);
  }
  /// The slow paths of element access: the element's tile, unless the window of tiles that the
  /// last element access left covers it (see ArrayCore::acquire_element()).
  void write_element(size_type i, smartarray::source_location where);
  void read_element(size_type i, smartarray::source_location where) const;
  /// The host data for `access`, acquired for the call at `where` unless already in that state.
  T* host_data(Access access, smartarray::source_location where) {
    if (!fast_host(access)) [[unlikely]] acquire_host_at(access, where);
    return host_ptr();
  }
  const T* host_data(smartarray::source_location where) const {
    if (!core_.host_readable()) [[unlikely]] acquire_host_at(Access::read, where);
    return host_ptr();
  }
  void check_index(size_type i) const {
    SMARTARRAY_EXPECTS(i < size(), std::out_of_range, "SmartArray::at(", i,
                       "): index out of range for size ", size());
  }
  /// Debug builds: the element `i` exists (an empty or moved-from array has none).
  void check_element([[maybe_unused]] const detail::IndexAt& i,
                     [[maybe_unused]] const char* what) const;
  /// Debug builds: the array has an element for front()/back().
  void check_not_empty([[maybe_unused]] const char* what,
                       [[maybe_unused]] const smartarray::source_location& where) const;
  [[noreturn]] void throw_no_element(const std::string& call,
                                     const smartarray::source_location& where) const;
  /// The bytes of `n` elements. Small enough to inline, so that the compiler knows `n` is bounded
  /// on the path that follows.
  static size_type checked_bytes(size_type n, const char* what) {
    if (n > max_size()) [[unlikely]] throw_too_long(n, what);
    return n * sizeof(T);
  }
  [[noreturn]] static void throw_too_long(size_type n, const char* what);
  /// The elements of [first, last), each constructed from `*it`, before the array changes.
  template <typename It>
  static std::vector<T> staged(It first, It last);
  /// Grows to `n` elements (the new tail is valid on the host only) and returns the host data.
  T* grow_to(size_type n, const char* what) {
    return reinterpret_cast<T*>(core_.append(checked_bytes(n, what)));
  }
  /// Appends `value` after `old_bytes` when the lock-free path cannot: grows, then stores it. Out
  /// of line and taking `value` by value (in registers for small types), so that a loop of
  /// emplace_back() spills nothing on its lock-free path: a value that this call needed in memory
  /// afterwards was stored to the stack on every append.
  [[gnu::noinline]] T* append_grown(size_type old_bytes, T value);
  /// A new array's first `n` elements, with a capacity of exactly `n`, as std::vector's.
  T* grow_exact(size_type n);
  /// Makes room for `count` elements at `index` and returns the first. At the end this is an
  /// append; elsewhere the core makes the host copy whole and moves the tail.
  T* open_gap(size_type index, size_type count, const char* what,
              const smartarray::source_location& where);
  /// Inserts `T(args...)` at `index`; the value is built before the array changes.
  template <typename... Args>
  T* emplace_at(size_type index, const smartarray::source_location& where, Args&&... args);
  /// Overwrites every element on the host after resizing to `n`; nothing is copied.
  T* overwrite_all(size_type n) {
    return reinterpret_cast<T*>(core_.assign_discard(checked_bytes(n, "assign")));
  }
  /// True when `values` lies in this array's host storage (which a reallocation would free).
  [[nodiscard]] bool in_storage(std::span<const T> values) const noexcept;
  iterator insert_span(size_type index, std::span<const T> values,
                       const smartarray::source_location& where);
  void assign_span(std::span<const T> values);
  /// The element index of `pos`. Debug builds check that it is a position in this array.
  size_type index_of(const_iterator pos, const char* what) const;
  /// Copies `value` into the raw host bytes at `slot` and returns the element (bitwise where T
  /// cannot be copy-constructed).
  static T* place(std::byte* slot, const T& value) noexcept;
  /// Builds `T(args...)` (or `T{args...}`, see make_value) in the raw host bytes at `slot`.
  template <typename... Args>
  static T* construct(std::byte* slot, Args&&... args);
  /// `T(args...)`, or `T{args...}` for aggregates that take no parenthesized initializer.
  template <typename... Args>
  static T make_value(Args&&... args);

  mutable detail::ArrayCore core_;
};

/// @brief Deduces the element type from an iterator range, as `std::vector`'s guide does.
template <detail::InputIterator It>
SmartArray(It, It) -> SmartArray<std::iter_value_t<It>>;
/// @brief Deduces the element type from an iterator range; the options may be an allocator.
template <detail::InputIterator It>
SmartArray(It, It, const ArrayOptions&) -> SmartArray<std::iter_value_t<It>>;
/// @brief Deduces the element type from an iterator range and an allocator, as `std::vector`'s
///        guide does (the allocator's element type is not used).
template <detail::InputIterator It, typename U>
SmartArray(It, It, const Allocator<U>&) -> SmartArray<std::iter_value_t<It>>;
/// @brief Deduces the element type from an iterator range and a `std::allocator` (the default
///        options).
template <detail::InputIterator It, typename U>
SmartArray(It, It, const std::allocator<U>&) -> SmartArray<std::iter_value_t<It>>;

}  // inline namespace SMARTARRAY_VIEW_ABI

/// @brief Swaps two arrays (O(1)).
/// @param a one array.
/// @param b the other array.
template <typename T>
void swap(SmartArray<T>& a, SmartArray<T>& b) noexcept {
  a.swap(b);
}

// Comparisons: `a == b` and `a <=> b` (so `!=`, `<`, `<=`, `>`, `>=`) are hidden friends of
// SmartArray, found by argument-dependent lookup, whose operands record the caller's source
// location. `==` of arrays of different sizes compares no element and copies nothing; otherwise
// both host copies are read (a stale one is refreshed, the device stays valid). `<=>` is
// lexicographic, as for `std::vector` (`<=>` of the elements, else built from `<`).

/**
 * @brief `std::erase_if` for SmartArray, found by argument-dependent lookup: write
 *        `erase_if(a, pred)` unqualified (the standard library may not be overloaded in `std`).
 *
 * Scans the host copy for reading first: when nothing matches, nothing is marked and the device
 * copy stays valid. Otherwise the host copy is compacted (the device copy becomes stale).
 * `pred` is called once per element.
 *
 * @param array the array.
 * @param pred the predicate; elements for which it returns true are removed.
 * @param where the caller's source location, for the migration trace.
 * @return the number of removed elements.
 */
template <typename T, typename Pred>
typename SmartArray<T>::size_type erase_if(
    SmartArray<T>& array, Pred pred,
    smartarray::source_location where = smartarray::source_location::current());

/**
 * @brief `std::erase` for SmartArray, found by argument-dependent lookup (see erase_if).
 * @param array the array.
 * @param value elements equal to it are removed.
 * @param where the caller's source location, for the migration trace.
 * @return the number of removed elements.
 */
template <typename T, typename U = T>
typename SmartArray<T>::size_type erase(
    SmartArray<T>& array, const U& value,
    smartarray::source_location where = smartarray::source_location::current()) {
  return erase_if(
      array, [&value](const T& element) -> bool { return element == value; }, where);
}

}  // namespace smartarray

#include <smartarray/core/detail/smart_array.inl>
#include <smartarray/core/slice.hpp>
