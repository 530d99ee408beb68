/**
 * @file core/detail/array_factory.hpp
 * @brief Private: the constructions that need the core of a fresh SmartArray (device-only arrays
 *        for `device_array` and `map`, wrapped external device memory for `wrap_device`), and
 *        the free functions' operations on an array's core (`copy`).
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>

namespace smartarray {

namespace detail {

/// The constructions that need the core of a fresh array, and the operations of the free
/// functions that need an array's core.
struct ArrayFactory {
  /// The device-to-device copy of `copy`, counted on `dst`; `copier` (optional) enqueues it.
  template <typename T>
  static void copy_device(SmartArray<T>& dst, const DeviceView<T>& to,
                          const DeviceView<const T>& from, StreamRef stream,
                          const smartarray::source_location& where,
                          ArrayCore::DeviceCopier copier = nullptr) {
    dst.core_.copy_device_in(reinterpret_cast<std::byte*>(to.data()),
                             reinterpret_cast<const std::byte*>(from.data()), from.size_bytes(),
                             stream, where, copier);
  }
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
