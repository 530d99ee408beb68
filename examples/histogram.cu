// A histogram with atomics: Numba's `@cuda.jit` histogram kernel, where each thread of a
// grid-stride loop finds the bin of its values and adds one with `cuda.atomic.add`. Needs the cuda
// backend.
//
//   histogram [--quick]
#include "example_support.hpp"

#include <smartarray/smartarray.hpp>

#include <cstdio>
#include <random>
#include <utility>
#include <vector>

namespace sa = smartarray;

namespace {

/// Values outside [xmin, xmin + bins * bin_width) are not counted.
__global__ void histogram_kernel(sa::DeviceView<const float> x, float xmin, float bin_width,
                                 sa::DeviceView<int> bins) {
  const std::size_t start = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = start; i < x.size(); i += stride) {
    const float position = (x[i] - xmin) / bin_width;
    if (position >= 0.0F) {
      const auto bin = static_cast<std::size_t>(position);
      if (bin < bins.size()) atomicAdd(&bins[bin], 1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (example::raw_kernels_unavailable()) return example::skipped;
  example::print_backend();
  const std::size_t n = example::quick(argc, argv) ? 1'000'000 : 100'000'000;
  const std::size_t bin_count = 100;
  const float xmin = -4.0F;
  const float xmax = 4.0F;
  // Computed once, here, so that the host reference bins with exactly the same float.
  const float bin_width = (xmax - xmin) / static_cast<float>(bin_count);

  std::mt19937 rng(13);
  std::normal_distribution<float> dist(0.0F, 1.5F);
  std::vector<float> x0(n);
  for (auto& v : x0) v = dist(rng);
  std::vector<int> reference(bin_count, 0);
  for (const float v : x0) {
    const float position = (v - xmin) / bin_width;
    if (position >= 0.0F && static_cast<std::size_t>(position) < bin_count) {
      ++reference[static_cast<std::size_t>(position)];
    }
  }

  sa::Stream stream;
  const sa::SmartArray<float> x(x0);
  sa::SmartArray<int> bins(bin_count);
  const unsigned block = 256;
  const unsigned blocks = static_cast<unsigned>(sa::device_properties().multiprocessor_count) * 8;
  const auto before = sa::global_transfer_stats();
  sa::fill(bins, 0, stream);  // discard: nothing is copied in
  sa::launch(histogram_kernel, blocks, block, stream, x, xmin, bin_width, bins);
  bool ok = example::matches("histogram of x", std::as_const(bins).host_view(), reference);
  ok &= example::transfers_are("x in, bins out", sa::global_transfer_stats() - before, 1, 1);
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
