// A 1024 x 1024 matrix transpose, naive and through a shared-memory tile (32 x 32, padded to 33
// columns), in C and in F order: the transpose that Numba's shared-memory examples write with
// `cuda.shared.array((TILE, TILE + 1), float32)` and `cuda.syncthreads()`. The kernels take
// ShapedViews (cuda::std::mdspan) bound with shaped(...). Needs the cuda backend.
//
//   transpose [--quick] [--repeats K]
#include "example_support.hpp"
#include "transpose_kernels.cuh"

#include <smartarray/smartarray.hpp>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace sa = smartarray;

namespace {

/// Milliseconds per run of `body` on `stream`, timed with CUDA events.
template <typename Body>
float time_ms(sa::StreamRef stream, int repeats, Body body) {
  cudaEvent_t start = nullptr, stop = nullptr;
  SMARTARRAY_CUDA_TRY(cudaEventCreate(&start), "create a timing event");
  SMARTARRAY_CUDA_TRY(cudaEventCreate(&stop), "create a timing event");
  SMARTARRAY_CUDA_TRY(cudaEventRecord(start, stream.cuda_stream()), "record the start event");
  for (int r = 0; r < repeats; ++r) body();
  SMARTARRAY_CUDA_TRY(cudaEventRecord(stop, stream.cuda_stream()), "record the stop event");
  SMARTARRAY_CUDA_TRY(cudaEventSynchronize(stop), "wait for the stop event");
  float ms = 0;
  SMARTARRAY_CUDA_TRY(cudaEventElapsedTime(&ms, start, stop), "read the elapsed time");
  SMARTARRAY_CUDA_TRY(cudaEventDestroy(start), "destroy a timing event");
  SMARTARRAY_CUDA_TRY(cudaEventDestroy(stop), "destroy a timing event");
  return ms / static_cast<float>(repeats);
}

/// Transposes a rows x cols matrix in `Layout` order with both kernels; checks each against the
/// host reference and each run's transfers.
template <typename Layout>
bool check(const char* order, std::size_t rows, std::size_t cols, int repeats) {
  std::mt19937 rng(static_cast<unsigned>(rows * 31 + cols));
  std::uniform_real_distribution<float> dist(-100.0F, 100.0F);
  std::vector<float> values(rows * cols);
  for (auto& v : values) v = dist(rng);
  // reference(j, i) = values(i, j), with both matrices in `Layout` order.
  std::vector<float> reference(rows * cols);
  const auto in_ref = sa::reshape(std::span<const float>(values), Layout{}, rows, cols);
  const auto out_ref = sa::reshape(std::span<float>(reference), Layout{}, cols, rows);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) out_ref(j, i) = in_ref(i, j);
  }

  sa::Stream stream;
  const sa::SmartArray<float> in(values);
  bool ok = true;
  const struct {
    const char* name;
    void (*kernel)(sa::ShapedView<const float, 2, Layout>, sa::ShapedView<float, 2, Layout>);
  } variants[] = {{"naive", transpose::transpose_naive<Layout>},
                  {"tiled", transpose::transpose_tiled<Layout>}};
  for (const auto& variant : variants) {
    sa::SmartArray<float> out(rows * cols);
    const auto before = sa::global_transfer_stats();
    transpose::run<Layout>(variant.kernel, in, out, rows, cols, stream);
    char what[128];
    std::snprintf(what, sizeof what, "%s transpose, %s order, %zu x %zu", variant.name, order,
                  rows, cols);
    ok &= example::matches(what, std::as_const(out).host_view(), reference);
    // The input goes in once for both kernels; each output comes back once.
    ok &= example::transfers_are(what, sa::global_transfer_stats() - before,
                                 variant.kernel == variants[0].kernel ? 1 : 0, 1);
    const float ms = time_ms(stream, repeats, [&] {
      transpose::run<Layout>(variant.kernel, in, out, rows, cols, stream);
    });
    const double gbps = 2.0 * static_cast<double>(rows * cols * sizeof(float)) / (ms * 1e6);
    std::printf("  %s: %.4f ms per transpose, %.1f GB/s\n", variant.name, ms, gbps);
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (example::raw_kernels_unavailable()) return example::skipped;
  example::print_backend();
  int repeats = example::quick(argc, argv) ? 3 : 50;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[i + 1]);
  }
  bool ok = true;
  ok &= check<sa::CLayout>("C", 1024, 1024, repeats);
  ok &= check<sa::FLayout>("F", 1024, 1024, repeats);
  // Sizes that are not multiples of the tile exercise the bounds checks.
  ok &= check<sa::CLayout>("C", 1000, 600, 1);
  ok &= check<sa::FLayout>("F", 1000, 600, 1);
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
