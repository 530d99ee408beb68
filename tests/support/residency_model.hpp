// The residency rules that the tests' models of an array share (docs/design.md): the host copy is
// valid on a suffix [host_begin, n) and a separate device copy on a prefix [0, device_end); each
// rule adds the transfers it makes to `expected` (docs/vector.md lists them per operation).
// Plain C++: the fuzzer builds it with clang.
#pragma once

#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/core/residency.hpp>

#include <algorithm>
#include <cstddef>

namespace smartarray::test {

/// The residency part of a model of one array, and the transfers the current step must make.
struct Residency {
  std::size_t host_begin = 0;       // the host copy is valid on [host_begin, n)
  std::size_t device_end = 0;       // the device copy is valid on [0, device_end)
  std::size_t device_capacity = 0;  // elements of the device buffer; 0: none (or one buffer)
  TransferStats expected{};         // the transfers this step must make
};

template <typename Element>
void add_h2d(Residency& r, std::size_t elements) {
  r.expected.h2d_count += 1;
  r.expected.h2d_bytes += elements * sizeof(Element);
}
template <typename Element>
void add_d2h(Residency& r, std::size_t elements) {
  r.expected.d2h_count += 1;
  r.expected.d2h_bytes += elements * sizeof(Element);
}
template <typename Element>
void add_d2d(Residency& r, std::size_t elements) {
  r.expected.d2d_count += 1;
  r.expected.d2d_bytes += elements * sizeof(Element);
}

/// A host read with a separate device copy: a stale prefix comes back in one copy.
template <typename Element>
void read_separate_host(Residency& r) {
  if (r.host_begin > 0) add_d2h<Element>(r, r.host_begin);
  r.host_begin = 0;
}

/// After a device acquire of all `n` elements: the device copy is whole, and a writer leaves the
/// host copy stale.
inline void note_device_acquired(Residency& r, std::size_t n, Access access) {
  r.device_end = n;
  if (access != Access::read) r.host_begin = n;
}

/// A device acquire of all `n` (> 0) elements with a separate device buffer, which follows the
/// host capacity: a reallocation moves the valid prefix unless the access overwrites everything,
/// and a stale tail is uploaded in one copy.
template <typename Element>
void acquire_separate_device(Residency& r, std::size_t n, std::size_t host_capacity,
                             Access access) {
  if (r.device_capacity < n) {
    if (r.device_capacity > 0 && access != Access::discard && r.device_end > 0) {
      add_d2d<Element>(r, r.device_end);
    }
    r.device_capacity = std::max(host_capacity, n);
  }
  if (access != Access::discard && r.device_end < n) add_h2d<Element>(r, n - r.device_end);
  note_device_acquired(r, n, access);
}

/// A truncation to `m` elements: each side keeps what it held.
inline void truncate_residency(Residency& r, std::size_t m) {
  r.host_begin = std::min(r.host_begin, m);
  r.device_end = std::min(r.device_end, m);
}

/// A host overwrite of every element (discard): nothing is copied, the device copy is stale.
inline void overwrite_host(Residency& r) { r.host_begin = r.device_end = 0; }

}  // namespace smartarray::test
