// Element-wise functors shared by the adapter tests; __host__ __device__ under nvcc and plain
// C++ elsewhere (SMARTARRAY_HOST_DEVICE), so that the plain C++ tests use them too.
#pragma once

#include <smartarray/config.hpp>

namespace smartarray::test {

/// x + y.
struct Add {
  SMARTARRAY_HOST_DEVICE float operator()(float x, float y) const { return x + y; }
};

}  // namespace smartarray::test
