/**
 * @file core/detail/smart_array.inl
 * @brief Private: the definitions of the SmartArray<T> members longer than a few lines, and of
 * erase_if. core/smart_array.hpp declares and documents them, and includes this file at its end.
 * Each member is `inline`, as its definition in the class was, but append_grown(), never inlined.
 */
#pragma once

namespace smartarray {

inline namespace SMARTARRAY_VIEW_ABI {

// --- construction --------------------------------------------------------------------------------

template <typename T>
template <detail::InputIterator It>
inline SmartArray<T>::SmartArray(It first, It last, const ArrayOptions& options)
    : SmartArray(options) {
  if constexpr (detail::ContiguousIteratorOf<It, T>) {
    const auto n = static_cast<size_type>(last - first);
    if (n != 0) {
      detail::parallel_copy(grow_exact(n), std::to_address(first), n * sizeof(T));
    }
  } else if constexpr (detail::MultiPassIterator<It>) {
    const auto n = static_cast<size_type>(std::distance(first, last));
    T* out = grow_exact(n);
    for (; first != last; ++first) {
      ::new (static_cast<void*>(out)) T(*first);
      ++out;
    }
  } else {
    for (; first != last; ++first) emplace_back(*first);
  }
}

template <typename T>
inline SmartArray<T>::SmartArray(std::span<const T> values, const ArrayOptions& options)
    : SmartArray(options) {
  if (!values.empty()) {
    detail::parallel_copy(grow_exact(values.size()), values.data(), values.size_bytes());
  }
}

template <typename T>
inline SmartArray<T>::SmartArray(const SmartArray& other, const ArrayOptions& options,
                                 smartarray::source_location where)
    : core_(detail::storage_options(options) == other.core_.storage()
                ? detail::ArrayCore(other.core_, detail::resource_choice(options))
                : detail::ArrayCore(detail::resource_choice(options),
                                    detail::storage_options(options))) {
  if (detail::storage_options(options) != other.core_.storage() && !other.empty()) {
    other.core_.copy_out(reinterpret_cast<std::byte*>(grow_exact(other.size())),
                         other.size() * sizeof(T), StreamRef{}, true, where, false);
  }
}

template <typename T>
inline SmartArray<T>::SmartArray(SmartArray&& other, const ArrayOptions& options,
                                 smartarray::source_location where)
    : SmartArray(other.options() == options ? std::move(other)
                                            : SmartArray(std::as_const(other), options, where)) {
  const SmartArray emptied(std::move(other));
}

// --- assignment ----------------------------------------------------------------------------------

template <typename T>
template <detail::InputIterator It>
inline void SmartArray<T>::assign(It first, It last) {
  if constexpr (detail::ContiguousIteratorOf<It, T>) {
    assign_span(std::span<const T>(std::to_address(first), static_cast<size_type>(last - first)));
  } else {
    assign_span(staged(std::move(first), std::move(last)));  // built before the array changes
  }
}

// --- modifiers -----------------------------------------------------------------------------------

template <typename T>
inline typename SmartArray<T>::iterator SmartArray<T>::insert(const_iterator pos, size_type count,
                                                              const T& value,
                                                              smartarray::source_location where) {
  const size_type index = index_of(pos, "insert");
  if (count == 0) return iterator(host_ptr() + index);
  const T copy = value;
  T* gap = open_gap(index, count, "insert", where);
  std::uninitialized_fill_n(gap, count, copy);
  return iterator(gap);
}

template <typename T>
template <detail::InputIterator It>
inline typename SmartArray<T>::iterator SmartArray<T>::insert(const_iterator pos, It first, It last,
                                                              smartarray::source_location where) {
  const size_type index = index_of(pos, "insert");
  if constexpr (detail::ContiguousIteratorOf<It, T>) {
    return insert_span(
        index, std::span<const T>(std::to_address(first), static_cast<size_type>(last - first)),
        where);
  } else {
    return insert_span(index, staged(std::move(first), std::move(last)), where);
  }
}

template <typename T>
inline typename SmartArray<T>::iterator SmartArray<T>::erase(const_iterator first,
                                                             const_iterator last,
                                                             smartarray::source_location where) {
  const size_type begin = index_of(first, "erase");
  const size_type end = index_of(last, "erase");
#if SMARTARRAY_DEBUG_CHECKS
  SMARTARRAY_EXPECTS(begin <= end, logic_error, "SmartArray::erase: the range [", begin, ", ",
                     end, ") is reversed");
#endif
  if (begin == end) return iterator(host_ptr() + begin);
  if (end == size()) {
    core_.truncate(begin * sizeof(T));
    return iterator(host_ptr() + begin);
  }
  if (core_.erase_in_place(begin * sizeof(T), (end - begin) * sizeof(T))) {
    return iterator(host_ptr() + begin);
  }
  std::byte* host = core_.erase_range(begin * sizeof(T), (end - begin) * sizeof(T), where);
  return iterator(reinterpret_cast<T*>(host) + begin);
}

template <typename T>
template <typename... Args>
inline typename SmartArray<T>::reference SmartArray<T>::emplace_back(Args&&... args) {
  const size_type old_bytes = core_.size();
  if (core_.can_append_in_place(sizeof(T))) [[likely]] {
    T* const element = construct(core_.host_data() + old_bytes, std::forward<Args>(args)...);
    core_.commit_append(old_bytes + sizeof(T));
    return *element;
  }
  // Growth frees the storage that `args` may refer to: the value is made first.
  T* const element = append_grown(old_bytes, make_value(std::forward<Args>(args)...));
  // The size append_grown() stored, by the lock-free path's expression: with it in sight,
  // the compiler keeps the size in a register across a loop of appends.
  core_.commit_append(old_bytes + sizeof(T));
  return *element;
}

template <typename T>
inline void SmartArray<T>::pop_back() {
#if SMARTARRAY_DEBUG_CHECKS
  SMARTARRAY_EXPECTS(!empty(), logic_error, core_.describe(), ": pop_back on an empty array");
#endif
  core_.truncate(core_.size() - sizeof(T));
}

template <typename T>
inline void SmartArray<T>::resize(size_type n, const T& value) {
  const size_type old = size();
  if (n <= old) {
    core_.truncate(n * sizeof(T));
    return;
  }
  const T copy = value;
  T* host = grow_to(n, "resize");  // may reallocate: take the pointer it returns
  std::uninitialized_fill(host + old, host + n, copy);
}

// --- host access ---------------------------------------------------------------------------------

template <typename T>
[[nodiscard]] inline typename SmartArray<T>::reference SmartArray<T>::operator[](
    detail::IndexAt i) {
  check_element(i, "operator[]");
  if (!core_.host_writable()) [[unlikely]] write_element(i.index, i.where);
  return host_ptr()[i.index];
}

template <typename T>
[[nodiscard]] inline typename SmartArray<T>::const_reference SmartArray<T>::operator[](
    detail::IndexAt i) const {
  check_element(i, "operator[]");
  if (!core_.host_readable()) [[unlikely]] read_element(i.index, i.where);
  return host_ptr()[i.index];
}

// --- device access -------------------------------------------------------------------------------

template <typename T>
[[nodiscard]] inline DeviceView<T> SmartArray<T>::device_view(Access access, StreamRef stream,
                                                             smartarray::source_location where) {
  auto* ptr =
      reinterpret_cast<T*>(core_.acquire_device(access, stream, where, read_checked(access)));
  return DeviceView<T>(ptr, size(), view_stamp());
}

template <typename T>
[[nodiscard]] inline DeviceView<const T> SmartArray<T>::device_view(
    StreamRef stream, smartarray::source_location where) const {
  auto* ptr = reinterpret_cast<const T*>(
      core_.acquire_device(Access::read, stream, where, read_checked(Access::read)));
  return DeviceView<const T>(ptr, size(), view_stamp());
}

// --- Numba's SmartArray names --------------------------------------------------------------------

template <typename T>
[[nodiscard]] inline std::span<T> SmartArray<T>::host(smartarray::source_location where) {
  if (!core_.host_readable()) core_.acquire_host(Access::read, std::nullopt, where);
  core_.wait_host_readers();
  return {host_ptr(), size()};
}

template <typename T>
[[nodiscard]] inline DeviceView<T> SmartArray<T>::gpu(StreamRef stream,
                                                     smartarray::source_location where) {
  auto* ptr = reinterpret_cast<T*>(core_.acquire_device(Access::read, stream, where));
  core_.order_device_write(stream);
  return DeviceView<T>(ptr, size(), view_stamp());
}

// --- residency -----------------------------------------------------------------------------------

template <typename T>
inline void SmartArray<T>::copy_to(std::span<T> dest, StreamRef stream, bool wait,
                                   smartarray::source_location where) const {
  SMARTARRAY_EXPECTS(dest.size() >= size(), std::length_error,
                     "copy_to_host: the destination holds ", dest.size(),
                     " elements but the array has ", size());
  core_.copy_out(reinterpret_cast<std::byte*>(dest.data()), size() * sizeof(T), stream, wait,
                 where, read_checked(Access::read));
}

// --- private -------------------------------------------------------------------------------------

template <typename T>
[[nodiscard]] inline detail::ViewStamp SmartArray<T>::view_stamp() const noexcept {
#if SMARTARRAY_DEBUG_CHECKS
  return core_.view_stamp();
#else
  return {};
#endif
}

template <typename T>
inline void SmartArray<T>::write_element(size_type i, smartarray::source_location where) {
  const std::size_t offset = i * sizeof(T);
  if (core_.element_writable(offset, offset + sizeof(T) - 1)) return;
  core_.acquire_element(Access::read_write, offset, sizeof(T), where, false);
}

template <typename T>
inline void SmartArray<T>::read_element(size_type i, smartarray::source_location where) const {
  const std::size_t offset = i * sizeof(T);
  if (core_.element_readable(offset, offset + sizeof(T) - 1)) return;
  core_.acquire_element(Access::read, offset, sizeof(T), where, read_checked(Access::read));
}

template <typename T>
inline void SmartArray<T>::check_element([[maybe_unused]] const detail::IndexAt& i,
                                         [[maybe_unused]] const char* what) const {
#if SMARTARRAY_DEBUG_CHECKS
  if (i.index >= size()) [[unlikely]] {
    throw_no_element(detail::concat(what, "(", i.index, ")"), i.where);
  }
#endif
}

template <typename T>
inline void SmartArray<T>::check_not_empty(
    [[maybe_unused]] const char* what,
    [[maybe_unused]] const smartarray::source_location& where) const {
#if SMARTARRAY_DEBUG_CHECKS
  if (empty()) [[unlikely]] throw_no_element(detail::concat(what, "()"), where);
#endif
}

template <typename T>
[[noreturn]] inline void SmartArray<T>::throw_no_element(
    const std::string& call, const smartarray::source_location& where) const {
  throw logic_error(detail::concat(core_.describe(), ": ", call, " at ", where.file_name(), ":",
                                   where.line(), " is out of range for size ", size(),
                                   empty() ? " (an empty or moved-from array)" : ""));
}

template <typename T>
[[noreturn]] inline void SmartArray<T>::throw_too_long(size_type n, const char* what) {
  throw std::length_error(detail::concat("SmartArray::", what, "(", n, "): ", n,
                                         " elements of ", sizeof(T),
                                         " bytes exceed max_size() ", max_size()));
}

template <typename T>
template <typename It>
inline std::vector<T> SmartArray<T>::staged(It first, It last) {
  std::vector<T> values;
  if constexpr (detail::MultiPassIterator<It>) {
    values.reserve(static_cast<size_type>(std::distance(first, last)));
  }
  for (; first != last; ++first) values.emplace_back(*first);
  return values;
}

template <typename T>
[[gnu::noinline]] T* SmartArray<T>::append_grown(size_type old_bytes, T value) {
  if (old_bytes >= max_size() * sizeof(T)) [[unlikely]] {
    throw_too_long(old_bytes / sizeof(T) + 1, "push_back");
  }
  return place(core_.append(old_bytes + sizeof(T)) + old_bytes, value);
}

template <typename T>
inline T* SmartArray<T>::grow_exact(size_type n) {
  const size_type bytes = checked_bytes(n, "SmartArray");
  core_.reserve(bytes);
  return reinterpret_cast<T*>(core_.append(bytes));
}

template <typename T>
inline T* SmartArray<T>::open_gap(size_type index, size_type count, const char* what,
                                  const smartarray::source_location& where) {
  const size_type old = size();
  if (count > max_size() - old) [[unlikely]] throw_too_long(count, what);
  if (index == old) return grow_to(old + count, what) + index;
  if (core_.insert_in_place(index * sizeof(T), count * sizeof(T))) return host_ptr() + index;
  std::byte* host = core_.insert_gap(index * sizeof(T), count * sizeof(T), where);
  return reinterpret_cast<T*>(host) + index;
}

template <typename T>
template <typename... Args>
inline T* SmartArray<T>::emplace_at(size_type index, const smartarray::source_location& where,
                                    Args&&... args) {
  const T value = make_value(std::forward<Args>(args)...);
  T* slot = open_gap(index, 1, "insert", where);
  std::memcpy(static_cast<void*>(slot), std::addressof(value), sizeof(T));
  return slot;
}

template <typename T>
[[nodiscard]] inline bool SmartArray<T>::in_storage(std::span<const T> values) const noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(values.data());
  const auto base = reinterpret_cast<std::uintptr_t>(core_.host_data());
  return !values.empty() && base != 0 && address >= base && address - base < core_.capacity();
}

template <typename T>
inline typename SmartArray<T>::iterator SmartArray<T>::insert_span(
    size_type index, std::span<const T> values, const smartarray::source_location& where) {
  if (values.empty()) return iterator(host_ptr() + index);
  if (in_storage(values)) {
    const std::vector<T> copy(values.begin(), values.end());
    return insert_span(index, copy, where);
  }
  T* gap = open_gap(index, values.size(), "insert", where);
  std::memcpy(static_cast<void*>(gap), values.data(), values.size_bytes());
  return iterator(gap);
}

template <typename T>
inline void SmartArray<T>::assign_span(std::span<const T> values) {
  if (in_storage(values)) {
    const std::vector<T> copy(values.begin(), values.end());
    assign_span(copy);
    return;
  }
  T* host = overwrite_all(values.size());
  if (!values.empty()) std::memcpy(static_cast<void*>(host), values.data(), values.size_bytes());
}

template <typename T>
inline typename SmartArray<T>::size_type SmartArray<T>::index_of(const_iterator pos,
                                                                const char* what) const {
  const auto address = reinterpret_cast<std::uintptr_t>(pos.base());
  const auto base = reinterpret_cast<std::uintptr_t>(core_.host_data());
#if SMARTARRAY_DEBUG_CHECKS
  SMARTARRAY_EXPECTS(address >= base && address - base <= core_.size() &&
                         (address - base) % sizeof(T) == 0,
                     logic_error, "SmartArray::", what, ": the iterator ",
                     static_cast<const void*>(pos.base()), " is not a position in ",
                     core_.describe(), " (data ", static_cast<const void*>(host_ptr()), ", ",
                     size(), " elements)");
#else
  (void)what;
#endif
  return (address - base) / sizeof(T);
}

template <typename T>
inline T* SmartArray<T>::place(std::byte* slot, const T& value) noexcept {
  if constexpr (std::is_copy_constructible_v<T>) {
    return ::new (static_cast<void*>(slot)) T(value);
  } else {
    std::memcpy(slot, std::addressof(value), sizeof(T));
    return reinterpret_cast<T*>(slot);
  }
}

template <typename T>
template <typename... Args>
inline T* SmartArray<T>::construct(std::byte* slot, Args&&... args) {
  if constexpr (std::is_constructible_v<T, Args&&...>) {
    return ::new (static_cast<void*>(slot)) T(std::forward<Args>(args)...);
  } else {
    return ::new (static_cast<void*>(slot)) T{std::forward<Args>(args)...};
  }
}

template <typename T>
template <typename... Args>
inline T SmartArray<T>::make_value(Args&&... args) {
  if constexpr (std::is_constructible_v<T, Args&&...>) {
    return T(std::forward<Args>(args)...);
  } else {
    return T{std::forward<Args>(args)...};
  }
}

}  // inline namespace SMARTARRAY_VIEW_ABI

template <typename T, typename Pred>
typename SmartArray<T>::size_type erase_if(SmartArray<T>& array, Pred pred,
                                           smartarray::source_location where) {
  const std::span<const T> scan = std::as_const(array).host_view(std::nullopt, where);
  const auto match = std::find_if(scan.begin(), scan.end(), std::ref(pred));
  if (match == scan.end()) return 0;
  const std::span<T> host = array.host_view(Access::read_write, std::nullopt, where);
  T* const first = host.data() + (match - scan.begin());
  T* const last = host.data() + host.size();
  T* kept = first;
  for (T* it = first + 1; it != last; ++it) {
    if (!pred(std::as_const(*it))) *kept++ = *it;
  }
  const auto removed = static_cast<typename SmartArray<T>::size_type>(last - kept);
  array.erase(array.cbegin(where) + (kept - host.data()), array.cend(where), where);
  return removed;
}

}  // namespace smartarray
