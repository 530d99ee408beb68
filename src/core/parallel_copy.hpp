// Private: host work spread over a few threads, for jobs that one thread would bound. The
// staging memcpy of a pageable transfer, and an array built from a large host range: one thread's
// memcpy moves a fraction of what PCIe carries (about 6 of 50 GB/s on an H100 system). The first
// write to each page of managed memory that a prefetch brought back to the host: each takes a
// fault, which one thread would take in turn.
#pragma once

#include <smartarray/core/detail/array_core.hpp>  // parallel_copy, which SmartArray's constructors use

#include <cstddef>

namespace smartarray::detail {

/// Writes each page of [data, data + bytes) once, leaving its contents as they were (an atomic
/// compare-exchange of one byte with itself, so a concurrent write is never undone), split over
/// the same threads as parallel_copy. The host's later writes then find the pages writable.
void parallel_prefault_for_write(void* data, std::size_t bytes) noexcept;

}  // namespace smartarray::detail
