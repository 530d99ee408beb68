// A global counter incremented by every thread: Numba's `cuda.atomic.add(counter, 0, 1)` next to
// the racy `counter[0] += 1`. The racy kernel loses updates (threads read the same old value and
// write back the same new one), so its count is printed and only checked to be at most the true
// count; the atomic kernel must count every thread. Needs the cuda backend.
//
//   atomic_counter [--quick]
#include "example_support.hpp"

#include <smartarray/smartarray.hpp>

#include <cstdio>
#include <utility>

namespace sa = smartarray;

namespace {

/// A read, an add and a write that other threads interleave with: most increments are lost.
__global__ void count_racy(sa::DeviceView<int> counter) { counter[0] = counter[0] + 1; }

/// One indivisible read-modify-write per thread: no increment is lost.
__global__ void count_atomic(sa::DeviceView<int> counter) { atomicAdd(&counter[0], 1); }

/// Zeroes the counter on the device (nothing is copied in), runs `kernel` once per thread and
/// returns the count (one copy back).
int count(void (*kernel)(sa::DeviceView<int>), unsigned blocks, unsigned block,
          sa::StreamRef stream) {
  sa::SmartArray<int> counter(1);
  sa::fill(counter, 0, stream);
  sa::launch(kernel, blocks, block, stream, counter);  // DeviceView<int>: read_write, no copy
  return std::as_const(counter)[0];
}

}  // namespace

int main(int argc, char** argv) {
  if (example::raw_kernels_unavailable()) return example::skipped;
  example::print_backend();
  const unsigned block = 256;
  const unsigned blocks = example::quick(argc, argv) ? 1024 : 16384;
  const long long threads = static_cast<long long>(blocks) * block;

  sa::Stream stream;
  const auto before = sa::global_transfer_stats();
  const int racy = count(count_racy, blocks, block, stream);
  const int atomic = count(count_atomic, blocks, block, stream);
  std::printf("%lld threads incremented one counter\n", threads);
  std::printf("  racy   counter[0] = counter[0] + 1: %d (%lld updates lost)\n", racy,
              threads - racy);
  std::printf("  atomic atomicAdd(&counter[0], 1):   %d\n", atomic);

  bool ok = true;
  if (racy < 1 || racy > threads) {
    std::printf("FAILED: the racy count %d is outside [1, %lld]\n", racy, threads);
    ok = false;
  }
  if (atomic != threads) {
    std::printf("FAILED: the atomic count %d differs from %lld\n", atomic, threads);
    ok = false;
  }
  ok &= example::transfers_are("two counters zeroed on the device and read back",
                               sa::global_transfer_stats() - before, 0, 2);
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
