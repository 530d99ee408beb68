// Arrays in a given residency, the transfers of a device read and single-pass input ranges: the
// helpers that the std::vector interface suites (test_vector_api.cu, test_vector_modifiers.cu)
// share.
#pragma once

#include "support/device_ops.cuh"

#include <smartarray/core/smart_array.hpp>
#include <smartarray/diagnostics/observability.hpp>

#include <iomanip>
#include <iterator>
#include <limits>
#include <sstream>
#include <utility>
#include <vector>

namespace smartarray::test::vectors {

/// An input-only view of a vector: single pass, no size known in advance.
template <typename T>
std::pair<std::istream_iterator<T>, std::istream_iterator<T>> input_range(std::istringstream& in,
                                                                          const std::vector<T>& v) {
  std::ostringstream out;
  out << std::setprecision(std::numeric_limits<T>::max_digits10);
  for (const T& x : v) out << x << ' ';
  in.str(out.str());
  return {std::istream_iterator<T>(in), std::istream_iterator<T>()};
}

/// An array that is valid on both sides: written on the host, then read on the device.
inline SmartArray<float> both_valid(const std::vector<float>& values) {
  SmartArray<float> a(values);
  (void)std::as_const(a).device_view();
  return a;
}

/// An array whose only valid copy is on the device (a kernel wrote it).
inline SmartArray<float> device_written(const std::vector<float>& values) {
  SmartArray<float> a(values);
  scale_on_device(a);
  return a;
}

/// The transfers a device read of `a` makes now, with nothing else running.
inline TransferStats device_read_transfers(const SmartArray<float>& a) {
  const TransferStats before = a.transfer_stats();
  (void)a.device_view();
  return a.transfer_stats() - before;
}

}  // namespace smartarray::test::vectors
