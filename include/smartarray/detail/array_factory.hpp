/**
 * @file detail/array_factory.hpp
 * @brief Private: the constructions that need the core of a fresh SmartArray (device-only arrays
 *        for `device_array` and `map`, wrapped external device memory for `wrap_device`).
 */
#pragma once

#include <smartarray/smart_array.hpp>
#include <smartarray/stream.hpp>

#include <cstddef>

namespace smartarray {

namespace detail {

/// The constructions that need the core of a fresh array.
struct ArrayFactory {
  template <typename T>
  static SmartArray<T> device_only(std::size_t n, StreamRef stream, const ArrayOptions& options) {
    SmartArray<T> array(options);
    array.core_.make_device_only(SmartArray<T>::checked_bytes(n, "device_array"), stream);
    return array;
  }
  template <typename T>
  static SmartArray<T> wrap(T* ptr, std::size_t n, const ArrayOptions& options) {
    SmartArray<T> array(options);
    array.core_.wrap_device(reinterpret_cast<std::byte*>(ptr),
                            SmartArray<T>::checked_bytes(n, "wrap_device"));
    return array;
  }
};

}  // namespace detail

}  // namespace smartarray
