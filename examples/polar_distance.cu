// The distance between two points given in polar coordinates, through a device function: Numba's
// `@cuda.jit(device=True)` polar_to_cartesian called from the `@vectorize` polar_distance. Here the
// device function is a plain `SMARTARRAY_HOST_DEVICE` function and the ufunc a functor given to
// transform. Runs on both backends.
//
//   polar_distance [--quick]
#include "example_support.hpp"

#include <smartarray/smartarray.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

namespace sa = smartarray;

namespace {

struct Point {
  float x;
  float y;
};

/// The device function: callable from any kernel or functor, on the GPU and on the host.
SMARTARRAY_HOST_DEVICE Point polar_to_cartesian(float rho, float theta) {
  return {rho * cosf(theta), rho * sinf(theta)};
}

struct PolarDistance {
  SMARTARRAY_HOST_DEVICE float operator()(float rho1, float theta1, float rho2,
                                          float theta2) const {
    const Point p = polar_to_cartesian(rho1, theta1);
    const Point q = polar_to_cartesian(rho2, theta2);
    return sqrtf((p.x - q.x) * (p.x - q.x) + (p.y - q.y) * (p.y - q.y));
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (example::cuda_missing()) return example::skipped;
  example::print_backend();
  const std::size_t n = example::quick(argc, argv) ? 100'000 : 1'000'000;

  std::mt19937 rng(5);
  std::uniform_real_distribution<float> radius(0.5F, 1.5F);
  std::uniform_real_distribution<float> angle(-3.14159F, 3.14159F);
  std::vector<float> rho1(n), theta1(n), rho2(n), theta2(n), reference(n);
  for (std::size_t i = 0; i < n; ++i) {
    rho1[i] = radius(rng);
    theta1[i] = angle(rng);
    rho2[i] = radius(rng);
    theta2[i] = angle(rng);
    const double dx = rho1[i] * std::cos(static_cast<double>(theta1[i])) -
                      rho2[i] * std::cos(static_cast<double>(theta2[i]));
    const double dy = rho1[i] * std::sin(static_cast<double>(theta1[i])) -
                      rho2[i] * std::sin(static_cast<double>(theta2[i]));
    reference[i] = static_cast<float>(std::sqrt(dx * dx + dy * dy));
  }

  sa::Stream stream;
  const sa::SmartArray<float> r1(rho1), t1(theta1), r2(rho2), t2(theta2);
  sa::SmartArray<float> distance(n);
  const auto before = sa::global_transfer_stats();
  sa::transform(sa::out(distance), PolarDistance{}, r1, t1, r2, t2, stream);
  // Float cos/sin and a subtraction of nearby points: compare to the double reference within 1e-4
  // (the distances are at most 3).
  bool ok = example::matches("polar_distance(rho1, theta1, rho2, theta2)",
                             std::as_const(distance).host_view(), reference, 1e-4);
  ok &= example::transfers_are("transform over four inputs, then reading the distances",
                               sa::global_transfer_stats() - before, 4, 1);
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
