// Elementwise addition as a ufunc: Numba's `@vectorize(..., target='cuda')` add, written with
// smartarray's transform (into an existing array) and map (into a new one). Runs on both backends.
//
//   vector_add [--quick]
//
// The inputs are copied to the device once; the second addition copies nothing in; reading the
// result on the host copies it back once.
#include "example_support.hpp"

#include <smartarray/smartarray.hpp>

#include <cstdio>
#include <random>
#include <utility>
#include <vector>

namespace sa = smartarray;

namespace {

/// The ufunc body; `SMARTARRAY_HOST_DEVICE` lets it run on the GPU and on the host backend.
struct Add {
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return x + y; }
};

}  // namespace

int main(int argc, char** argv) {
  if (example::cuda_missing()) return example::skipped;
  example::print_backend();
  const std::size_t n = example::quick(argc, argv) ? 100'000 : 10'000'000;

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-100.0F, 100.0F);
  std::vector<float> a0(n), b0(n), reference(n);
  for (auto& v : a0) v = dist(rng);
  for (auto& v : b0) v = dist(rng);
  for (std::size_t i = 0; i < n; ++i) reference[i] = a0[i] + b0[i];

  sa::Stream stream;
  sa::SmartArray<float> a(a0), b(b0), c(n);
  bool ok = true;

  // transform: like `add(a, b, out=c)`. c is overwritten, so nothing is copied into it.
  auto before = sa::global_transfer_stats();
  sa::transform(sa::out(c), Add{}, a, b, stream);
  ok &= example::transfers_are("transform(out(c), add, a, b)", sa::global_transfer_stats() - before,
                               2, 0);

  // The inputs are now valid on the device too: a second call copies nothing.
  before = sa::global_transfer_stats();
  sa::transform(sa::out(c), Add{}, a, b, stream);
  ok &= example::transfers_are("the same transform again", sa::global_transfer_stats() - before, 0,
                               0);

  before = sa::global_transfer_stats();
  ok &= example::matches("c = a + b", std::as_const(c).host_view(), reference);
  ok &= example::transfers_are("reading c on the host", sa::global_transfer_stats() - before, 0, 1);

  // map: like `d = add(a, b)`, a new array that stays on the device until the host reads it.
  before = sa::global_transfer_stats();
  const sa::SmartArray<float> d = sa::map(Add{}, a, b, stream);
  ok &= example::matches("d = map(add, a, b)", d.host_view(), reference);
  ok &= example::transfers_are("map, then reading d", sa::global_transfer_stats() - before, 0, 1);

  std::printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
