// The Conan package's test: y = 3x + y on random integers with `transform`, on the backend present
// (the host backend without a GPU). Checks every value against a host loop and the copies made:
// two in for the transform, one out to read the result. Exits non-zero on a mismatch.
#include <smartarray/smartarray.hpp>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

namespace sa = smartarray;

namespace {

struct Saxpy {
  std::int64_t a;
  SMARTARRAY_HOST_DEVICE std::int64_t operator()(std::int64_t x, std::int64_t y) const {
    return a * x + y;
  }
};

bool copies_are(const char* what, const sa::TransferStats& made, std::uint64_t h2d,
                std::uint64_t d2h) {
  const bool ok = made.h2d_count == h2d && made.d2h_count == d2h;
  std::printf("%s: %s (expected %llu H2D, %llu D2H)\n", what, made.to_string().c_str(),
              static_cast<unsigned long long>(h2d), static_cast<unsigned long long>(d2h));
  return ok;
}

}  // namespace

int main() {
  constexpr std::size_t n = 10000;
  std::mt19937_64 rng(20250101);
  std::uniform_int_distribution<std::int64_t> dist(1, 1000);
  std::vector<std::int64_t> xs(n), ys(n);
  for (auto& v : xs) v = dist(rng);
  for (auto& v : ys) v = dist(rng);

  sa::SmartArray<std::int64_t> x(xs), y(ys), out(n, -1);
  sa::Stream stream;
  auto before = sa::global_transfer_stats();
  sa::transform(sa::out(out), Saxpy{3}, x, y, stream);
  bool ok = copies_are("transform", sa::global_transfer_stats() - before, 2, 0);

  before = sa::global_transfer_stats();
  const auto result = out.host_view(stream);
  ok &= copies_are("reading the result", sa::global_transfer_stats() - before, 0, 1);
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (result[i] != 3 * xs[i] + ys[i]) ++mismatches;
  }
  std::printf("smartarray %s backend: transform over %zu elements, %zu mismatches: %s\n",
              sa::to_string(sa::backend()), n, mismatches, ok && mismatches == 0 ? "OK" : "FAILED");
  return ok && mismatches == 0 ? 0 : 1;
}
