#include <smartarray/smartarray.hpp>

#include <cstdio>
#include <utility>

namespace sa = smartarray;

__global__ void saxpy(float a, sa::DeviceView<const float> x, sa::DeviceView<float> y) {
  for (auto i = blockIdx.x * blockDim.x + threadIdx.x; i < y.size(); i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

int main() try {
  sa::SmartArray<float> x(1 << 20, 1.0f), y(1 << 20, 2.0f);
  sa::Stream stream;
  for (int k = 0; k < 10; ++k)  // x: read, y: read_write, from saxpy's parameter types
    sa::launch(saxpy, 264, 256, stream, 2.0f, x, y);  // a checked launch
  const float first = std::as_const(y)[0];
  std::printf("y[0] = %g (expected 22)\n", first);
  return first == 22.0f ? 0 : 1;
} catch (const sa::logic_error& e) {  // a raw kernel on the host backend, without a GPU
  std::printf("%s\n", e.what());
  return 1;
}
