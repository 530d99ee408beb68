// The allocator bindings of the extension (allocators.cpp): the C entry points through which
// PyTorch, CuPy and Numba allocate from smartarray's device pools, and the pools' figures.
#pragma once

#include <nanobind/nanobind.h>

namespace smartarray_python {

/// Adds the allocator functions to the extension module (names starting with an underscore; the
/// public API is python/smartarray/_allocators.py).
void bind_allocators(nanobind::module_& m);

}  // namespace smartarray_python
