/**
 * @file core/detail/array_messages.hpp
 * @brief Private: the distributed layer records each message of an array's elements to or from
 *        another process here, on the array's counters (SmartArray grants this class alone access
 *        to its core).
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/diagnostics/observability.hpp>

#include <cstddef>

namespace smartarray::detail {

struct ArrayMessages {
  /// Records a message of `bytes` bytes of `array` sent to process `peer`.
  template <typename T>
  static void sent(const SmartArray<T>& array, std::size_t bytes, int peer, const char* reason,
                   const smartarray::source_location& where) {
    array.core_.note_message(TransferKind::sent, bytes, peer, reason, where);
  }
  /// Records a message of `bytes` bytes received into `array` from process `peer`.
  template <typename T>
  static void received(const SmartArray<T>& array, std::size_t bytes, int peer,
                       const char* reason, const smartarray::source_location& where) {
    array.core_.note_message(TransferKind::received, bytes, peer, reason, where);
  }
};

}  // namespace smartarray::detail
