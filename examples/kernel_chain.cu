// Ten kernels in a row that never return to the host until the end: what Numba's tutorials do by
// hand with `cuda.to_device` once, several kernel launches on device arrays, and one
// `copy_to_host`. Here the arrays move by themselves, and the counters prove that each input goes
// in once and the result comes back once. Built on transform, fill, copy and for_each_index, so it
// runs on both backends.
//
//   kernel_chain [--quick]
#include "example_support.hpp"

#include <smartarray/smartarray.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;

namespace {

struct Add {
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return x + y; }
};
struct Mul {
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return x * y; }
};
struct Axpy {
  SMARTARRAY_HOST_DEVICE float operator()(float a, float x, float y) const { return a * x + y; }
};
struct Clamp {
  SMARTARRAY_HOST_DEVICE float operator()(float x, float lo, float hi) const {
    return x < lo ? lo : (x > hi ? hi : x);
  }
};
/// v[i] = sqrt(|v[i]|), in place (a for_each_index body).
struct SqrtAbs {
  sa::DeviceView<float> v;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { v[i] = sqrtf(fabsf(v[i])); }
};

}  // namespace

int main(int argc, char** argv) {
  if (example::cuda_missing()) return example::skipped;
  example::print_backend();
  const std::size_t n = example::quick(argc, argv) ? 100'000 : 4'000'000;

  std::mt19937 rng(17);
  std::uniform_real_distribution<float> dist(-10.0F, 10.0F);
  std::vector<float> x0(n), y0(n), reference(n);
  for (auto& v : x0) v = dist(rng);
  for (auto& v : y0) v = dist(rng);
  for (std::size_t i = 0; i < n; ++i) {
    float t = x0[i] * y0[i];                            // 1
    float u = 0.5F * t + x0[i];                         // 2
    u = u < -20.0F ? -20.0F : (u > 20.0F ? 20.0F : u);  // 3
    float w = 1.0F;                                     // 4
    w = w + u;                                          // 5
    t = w;                                              // 6
    t = std::sqrt(std::fabs(t));                        // 7
    u = t * y0[i];                                      // 8
    float result = 2.0F * u + t;                        // 9
    result = result * result;                           // 10
    reference[i] = result;
  }

  sa::Stream stream;
  sa::SmartArray<float> x(x0), y(y0);      // host-valid inputs
  sa::SmartArray<float> t(n), u(n), w(n);  // temporaries: never copied either way
  sa::SmartArray<float> result(n);         // the output: copied back once

  const auto before = sa::global_transfer_stats();
  sa::transform(sa::out(t), Mul{}, x, y, stream);                                     // 1
  sa::transform(sa::out(u), Axpy{}, 0.5F, t, x, stream);                              // 2
  sa::transform(u, Clamp{}, u, -20.0F, 20.0F, stream);                                // 3
  sa::fill(w, 1.0F, stream);                                                          // 4
  sa::transform(w, Add{}, w, u, stream);                                              // 5
  sa::copy(t, w, stream);                                                             // 6
  sa::for_each_index(n, SqrtAbs{t.device_view(Access::read_write, stream)}, stream);  // 7
  sa::transform(sa::out(u), Mul{}, t, y, stream);                                     // 8
  sa::transform(sa::out(result), Axpy{}, 2.0F, u, t, stream);                         // 9
  sa::transform(result, Mul{}, result, result, stream);                               // 10
  const auto on_device = sa::global_transfer_stats() - before;
  std::printf("after ten kernels: %llu H2D, %llu D2H, %llu D2D (the copy of step 6)\n",
              static_cast<unsigned long long>(on_device.h2d_count),
              static_cast<unsigned long long>(on_device.d2h_count),
              static_cast<unsigned long long>(on_device.d2d_count));

  // nvcc fuses a * x + y into one rounding; the host rounds twice.
  bool ok =
      example::matches("result of the chain", std::as_const(result).host_view(), reference, 1e-5);
  ok &= example::transfers_are("the whole chain", sa::global_transfer_stats() - before, 2, 1);
  ok &= example::transfers_are("x", x.transfer_stats(), 1, 0);
  ok &= example::transfers_are("y", y.transfer_stats(), 1, 0);
  ok &= example::transfers_are("result", result.transfer_stats(), 0, 1);
  for (const auto* temporary : {&t, &u, &w}) {
    ok &= example::transfers_are("a temporary", temporary->transfer_stats(), 0, 0);
  }
  if (on_device.h2d_count != 2 || on_device.d2h_count != 0 || on_device.d2d_count != 1) {
    std::printf("UNEXPECTED: the chain went back to the host before the end\n");
    ok = false;
  }
  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
