// bench_stream's element-wise operations: the hand-written kernels' bodies (hand::, one element
// or one 16-byte vector per thread, as BabelStream's CUDA kernels) and the functors that
// smartarray's calls take. Included by bench_stream.cu only: like the rest of that binary, it
// defines its names in an unnamed namespace.
#pragma once

#include <smartarray/smartarray.hpp>

#include <cstddef>

namespace sa = smartarray;

namespace {

// --- the hand-written element-wise kernels -------------------------------------------------------

/// The 16 bytes that one vector access of the hand-written kernels moves: 4 floats or 2 doubles.
template <typename T>
struct alignas(16) Vector16 {
  static constexpr unsigned lanes = 16 / sizeof(T);
  T lane[lanes];
};

template <typename T>
SMARTARRAY_HOST_DEVICE Vector16<T> load16(const T* p, std::size_t vector) {
  return reinterpret_cast<const Vector16<T>*>(p)[vector];
}
template <typename T>
SMARTARRAY_HOST_DEVICE void store16(T* p, std::size_t vector, const Vector16<T>& v) {
  reinterpret_cast<Vector16<T>*>(p)[vector] = v;
}

// Each body does element i (`body(i)`) or the lanes of vector j (`body.vector(j)`), on raw
// pointers, as BabelStream's CUDA kernels do.
namespace hand {

template <typename T>
struct Copy {  // c = a
  const T* a;
  T* c;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { c[i] = a[i]; }
  SMARTARRAY_HOST_DEVICE void vector(std::size_t j) const { store16(c, j, load16(a, j)); }
};

template <typename T>
struct Scale {  // b = s c
  T* b;
  const T* c;
  T s;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { b[i] = s * c[i]; }
  SMARTARRAY_HOST_DEVICE void vector(std::size_t j) const {
    const Vector16<T> vc = load16(c, j);
    Vector16<T> vb;
    for (unsigned k = 0; k < Vector16<T>::lanes; ++k) vb.lane[k] = s * vc.lane[k];
    store16(b, j, vb);
  }
};

template <typename T>
struct Add {  // c = a + b
  const T* a;
  const T* b;
  T* c;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { c[i] = a[i] + b[i]; }
  SMARTARRAY_HOST_DEVICE void vector(std::size_t j) const {
    const Vector16<T> va = load16(a, j);
    const Vector16<T> vb = load16(b, j);
    Vector16<T> vc;
    for (unsigned k = 0; k < Vector16<T>::lanes; ++k) vc.lane[k] = va.lane[k] + vb.lane[k];
    store16(c, j, vc);
  }
};

template <typename T>
struct Triad {  // a = b + s c
  T* a;
  const T* b;
  const T* c;
  T s;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { a[i] = b[i] + s * c[i]; }
  SMARTARRAY_HOST_DEVICE void vector(std::size_t j) const {
    const Vector16<T> vb = load16(b, j);
    const Vector16<T> vc = load16(c, j);
    Vector16<T> va;
    for (unsigned k = 0; k < Vector16<T>::lanes; ++k) va.lane[k] = vb.lane[k] + s * vc.lane[k];
    store16(a, j, va);
  }
};

template <typename T>
struct Nstream {  // a += b + s c
  T* a;
  const T* b;
  const T* c;
  T s;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const { a[i] += b[i] + s * c[i]; }
  SMARTARRAY_HOST_DEVICE void vector(std::size_t j) const {
    Vector16<T> va = load16(a, j);
    const Vector16<T> vb = load16(b, j);
    const Vector16<T> vc = load16(c, j);
    for (unsigned k = 0; k < Vector16<T>::lanes; ++k) va.lane[k] += vb.lane[k] + s * vc.lane[k];
    store16(a, j, va);
  }
};

/// The vectorized kernel of a body: thread j does vector j, and the thread of the short last
/// vector does its elements one by one.
template <typename T, typename Body>
struct ByVectors {
  Body body;
  std::size_t n;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t j) const {
    constexpr unsigned lanes = Vector16<T>::lanes;
    if ((j + 1) * lanes <= n) {
      body.vector(j);
    } else {
      for (std::size_t i = j * lanes; i < n; ++i) body(i);
    }
  }
};

}  // namespace hand

// --- the functors that smartarray's calls take (docs/adapters.md) --------------------------------

template <typename T>
struct Copy {
  SMARTARRAY_HOST_DEVICE T operator()(T a) const { return a; }
};
template <typename T>
struct Scale {
  SMARTARRAY_HOST_DEVICE T operator()(T s, T c) const { return s * c; }
};
template <typename T>
struct Add {
  SMARTARRAY_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct Triad {
  SMARTARRAY_HOST_DEVICE T operator()(T b, T s, T c) const { return b + s * c; }
};
template <typename T>
struct Nstream {
  SMARTARRAY_HOST_DEVICE T operator()(T a, T b, T s, T c) const { return a + b + s * c; }
};
struct Plus {
  template <typename T>
  SMARTARRAY_HOST_DEVICE T operator()(T x, T y) const {
    return x + y;
  }
};
struct Times {
  template <typename T>
  SMARTARRAY_HOST_DEVICE T operator()(T x, T y) const {
    return x * y;
  }
};

}  // namespace
