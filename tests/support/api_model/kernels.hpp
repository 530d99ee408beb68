// The functors that the interpreter's kernels, transforms, maps and reductions run on the device.
#pragma once

#include "support/api_model/byte_reader.hpp"

#include <smartarray/smartarray.hpp>

#include <cstddef>

namespace smartarray::test {

/// `v[i] = v[i] * 2 + 1`.
struct ScaleOp {
  DeviceView<Element> v;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { v[i] = v[i] * 2U + 1U; }
};
/// `to[i] = from[i]`.
struct CopyOp {
  DeviceView<const Element> from;
  DeviceView<Element> to;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { to[i] = from[i]; }
};
/// `v[i] = value`.
struct FillOp {
  DeviceView<Element> v;
  Element value;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { v[i] = value; }
};
/// `y[i] = x[i] * k`, plus the old `y[i]` unless `y` was discarded.
struct AxpyOp {
  DeviceView<const Element> x;
  DeviceView<Element> y;
  Element k;
  bool discard;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    y[i] = discard ? x[i] * k : x[i] * k + y[i];
  }
};
/// `x * a + b`, for transform and map.
struct Affine {
  Element a;
  Element b;
  SMARTARRAY_HOST_DEVICE Element operator()(Element x) const { return x * a + b; }
};
/// `x * k + y`, for transform and map with two arrays and a scalar.
struct AddScaled {
  SMARTARRAY_HOST_DEVICE Element operator()(Element x, Element y, Element k) const {
    return x * k + y;
  }
};
/// The reductions.
struct Sum {
  SMARTARRAY_HOST_DEVICE Element operator()(Element a, Element b) const { return a + b; }
};
struct Max {
  SMARTARRAY_HOST_DEVICE Element operator()(Element a, Element b) const { return a < b ? b : a; }
};

/// The parameter types that `bind_kernel_args` reads the intents from: x read, y written.
inline void axpy_signature(DeviceView<const Element> x, DeviceView<Element> y, Element k) {
  (void)x, (void)y, (void)k;
}

}  // namespace smartarray::test
