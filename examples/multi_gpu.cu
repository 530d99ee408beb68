// Two GPUs on one array: each device computes its half of z = a * x + y through slices, then the
// second device reduces all of z (its own half is there; the first half comes by one peer copy,
// GPU to GPU), and the host gathers z (one copy down from each device). Runs on both backends and
// on any number of devices: with one, both halves and the reduction run on it.
//
//   multi_gpu [--quick]
//   SMARTARRAY_BACKEND=host SMARTARRAY_HOST_DEVICES=2 multi_gpu --quick   # two emulated devices
//
// Without peer access (SMARTARRAY_HOST_PEER_ACCESS=0 on the host backend, or GPUs that cannot
// reach each other) the first half goes to the second device through the host copy: one copy
// down, one up, counted as a staged read; the host then holds that half and gathers only the rest.
#include "example_support.hpp"

#include <smartarray/smartarray.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>
#include <vector>

namespace sa = smartarray;

namespace {

struct Saxpy {
  float a;
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return a * x + y; }
};

struct Maximum {
  SMARTARRAY_HOST_DEVICE float operator()(float p, float q) const { return p < q ? q : p; }
};

/// The transfers the example makes: `devices` (1 or 2) devices, `peers` whether they reach each
/// other.
struct Expected {
  std::uint64_t h2d;
  std::uint64_t d2h;
  std::uint64_t peer;
  std::uint64_t staged;
};
Expected expected_transfers(int devices, bool peers) {
  // Four slices go up (x and y, each half to its device); the reduction's result comes down.
  if (devices == 1) return {4, 2, 0, 0};  // z lies on one device: it comes down in one copy
  if (peers) return {4, 3, 1, 0};         // z's first half goes across once, each half comes down
  return {5, 3, 0, 1};  // the first half goes down and up, then only the second half comes down
}

}  // namespace

int main(int argc, char** argv) {
  if (example::cuda_missing()) return example::skipped;
  example::print_backend();
  const std::size_t n = example::quick(argc, argv) ? 100'000 : 16'000'000;
  const int devices = std::min(sa::device_count(), 2);
  const bool peers = devices == 2 && sa::peer_access(sa::Device{1}, sa::Device{0});
  std::printf("devices: %d of %d%s\n", devices, sa::device_count(),
              devices == 2 ? (peers ? ", with peer access" : ", without peer access") : "");

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-100.0F, 100.0F);
  std::vector<float> x0(n), y0(n), reference(n);
  for (auto& v : x0) v = dist(rng);
  for (auto& v : y0) v = dist(rng);
  constexpr float a = 2.5F;
  for (std::size_t i = 0; i < n; ++i) reference[i] = a * x0[i] + y0[i];

  // One stream per device; with one device both are on it.
  std::vector<sa::Stream> streams;
  for (int d = 0; d < 2; ++d) streams.emplace_back(sa::Device{std::min(d, devices - 1)});

  sa::SmartArray<float> x(x0), y(y0), z(n);
  const auto before = sa::global_transfer_stats();
  // Each device computes its half: only its half of x and y goes up to it, and z's half is
  // overwritten there (nothing copied in).
  const std::size_t half = n / 2;
  for (int d = 0; d < 2; ++d) {
    const std::size_t first = d == 0 ? 0 : half;
    const std::size_t count = d == 0 ? half : n - half;
    sa::transform(z.slice(first, count), Saxpy{a}, x.slice(first, count), y.slice(first, count),
                  streams[static_cast<std::size_t>(d)]);
  }
  // The second device reduces all of z: its copy of the first half comes from the first device.
  const float largest = sa::reduce(z, -1e30F, Maximum{}, streams[1]);
  // The host gathers z: each half from a device that holds it.
  const std::span<const float> gathered = std::as_const(z).host_view();

  // A GPU fuses a * x + y into one multiply-add, which rounds once, where the host rounds a * x
  // first: the two differ by up to half an ulp of a * x (|a * x| < 256: 2^-17, about 7.6e-6), which
  // is large next to a small z. Compare within 1e-5 (relative, with an absolute floor of 1e-5).
  constexpr double tolerance = 1e-5;
  bool ok = example::matches("z = a * x + y, computed by halves", gathered, reference, tolerance);
  const float want = *std::max_element(reference.begin(), reference.end());
  std::printf("max(z) on device %d: %g (host reference %g)\n", streams[1].device().ordinal,
              static_cast<double>(largest), static_cast<double>(want));
  ok &= std::abs(static_cast<double>(largest) - want) <= tolerance * std::abs(want);
  const sa::TransferStats made = sa::global_transfer_stats() - before;
  const Expected expect = expected_transfers(devices, peers);
  std::printf("transfers: %s\n", made.to_string().c_str());
  if (made.h2d_count != expect.h2d || made.d2h_count != expect.d2h ||
      made.d2d_peer_count != expect.peer || made.staged_count != expect.staged) {
    std::printf("UNEXPECTED transfers: expected %llu H2D, %llu D2H, %llu peer, %llu staged\n",
                static_cast<unsigned long long>(expect.h2d),
                static_cast<unsigned long long>(expect.d2h),
                static_cast<unsigned long long>(expect.peer),
                static_cast<unsigned long long>(expect.staged));
    ok = false;
  }
  for (int d = 0; d < devices; ++d) {
    std::printf("device %d: %s\n", d, sa::device_transfer_stats(d).to_string().c_str());
  }
  std::printf(ok ? "multi_gpu: OK\n" : "multi_gpu: FAILED\n");
  return ok ? 0 : 1;
}
