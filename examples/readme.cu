#include <smartarray/smartarray.hpp>

#include <cstdio>
#include <utility>

namespace sa = smartarray;

struct Saxpy {  // runs on the GPU, and on the host backend without one
  float a;
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return a * x + y; }
};

int main() {
  sa::SmartArray<float> x(1 << 20, 1.0f), y(1 << 20, 2.0f);  // host-valid, pinned, pooled
  sa::Stream stream;
  for (int k = 0; k < 10; ++k)                     // x and y are copied in once, y stays there
    sa::transform(y, Saxpy{2.0f}, x, y, stream);   // y = 2x + y on the device, in place
  const float first = std::as_const(y)[0];         // copies back y[0]'s 4 KiB tile only
  std::printf("y[0] = %g (expected 22)\n", first);
  std::printf("copies: %s\n", sa::global_transfer_stats().to_string().c_str());
  return first == 22.0f ? 0 : 1;
}
