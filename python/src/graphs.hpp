// The stream and graph bindings of the extension (graphs.cpp): smartarray's own streams and
// sa::capture with its Graph. The public API is python/smartarray/_streams.py and _graphs.py.
#pragma once

#include <nanobind/nanobind.h>

namespace smartarray_python {

/// Adds _Stream, _Graph, _capture, _capturing and _refuse_in_capture to the extension module.
void bind_graphs(nanobind::module_& m);

}  // namespace smartarray_python
