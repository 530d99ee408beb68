// The normal probability density over many values, with the mean and the standard deviation as
// scalars: Numba's `@vectorize` gaussian_pdf(x, mean, sigma) called with two scalar arguments.
// map broadcasts the scalars to every element. Runs on both backends.
//
//   gaussian_pdf [--quick]
#include "example_support.hpp"

#include <smartarray/smartarray.hpp>

#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>
#include <vector>

namespace sa = smartarray;

namespace {

constexpr float inv_sqrt_2pi = 0.3989422804014327F;

struct GaussianPdf {
  SMARTARRAY_HOST_DEVICE float operator()(float x, float mean, float sigma) const {
    const float z = (x - mean) / sigma;
    return inv_sqrt_2pi * expf(-0.5F * z * z) / sigma;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (example::cuda_missing()) return example::skipped;
  example::print_backend();
  const std::size_t n = example::quick(argc, argv) ? 100'000 : 1'000'000;
  const float mean = 0.0F;
  const float sigma = 1.0F;

  std::mt19937 rng(3);
  std::normal_distribution<float> dist(mean, sigma);
  std::vector<float> x0(n), reference(n);
  for (auto& v : x0) v = dist(rng);
  for (std::size_t i = 0; i < n; ++i) {
    const double z = (static_cast<double>(x0[i]) - mean) / sigma;
    reference[i] =
        static_cast<float>(std::exp(-0.5 * z * z) / (sigma * std::sqrt(2 * std::numbers::pi)));
  }

  sa::Stream stream;
  const sa::SmartArray<float> x(x0);
  const auto before = sa::global_transfer_stats();
  const sa::SmartArray<float> pdf = sa::map(GaussianPdf{}, x, mean, sigma, stream);
  // A few float ulps apart from the double-precision reference (expf, fused multiply-adds).
  bool ok = example::matches("pdf = gaussian_pdf(x, mean, sigma)", pdf.host_view(), reference,
                             1e-5);
  ok &= example::transfers_are("map over x, then reading pdf", sa::global_transfer_stats() - before,
                               1, 1);
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
