// The host's memory, for requests that the kernel's overcommit would grant and then kill.
#pragma once

#include <sys/sysinfo.h>

#include <cstddef>
#include <limits>

namespace smartarray::detail {

/// Bytes of physical memory, plus swap when `with_swap`. A buffer larger than that can never be
/// written whole: with overcommit on (vm.overcommit_memory=1) the allocation succeeds and the
/// process is killed when its pages are touched, so such requests are refused up front.
inline std::size_t host_memory_bytes(bool with_swap) noexcept {
  struct sysinfo info {};
  if (::sysinfo(&info) != 0) return std::numeric_limits<std::size_t>::max();
  const std::size_t units = info.totalram + (with_swap ? info.totalswap : 0);
  return units * info.mem_unit;
}

}  // namespace smartarray::detail
