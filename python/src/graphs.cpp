// smartarray's own streams (sa::Stream) and graphs (sa::capture, sa::Graph) for Python. The
// capture calls back into Python: an exception that `fn` raises unwinds through the capture
// session, whose destructor ends the capture and leaves every array as it was.
#include "graphs.hpp"
#include "core.hpp"

#include <nanobind/stl/string.h>

#include <smartarray/graph/capture.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstdint>
#include <new>
#include <string>

namespace smartarray_python {

namespace {

std::uintptr_t handle_of(const sa::Stream& stream) {
  return reinterpret_cast<std::uintptr_t>(stream.ref().handle());
}

nb::list arrays_of(const sa::Graph& graph) {
  nb::list arrays;
  for (const sa::GraphArray& array : graph.arrays()) {
    nb::dict d;
    d["id"] = array.id;
    d["name"] = array.name;
    d["device"] = array.device;
    d["bytes_read"] = array.bytes_read;
    d["bytes_written"] = array.bytes_written;
    arrays.append(d);
  }
  return arrays;
}

}  // namespace

void bind_graphs(nb::module_& m) {
  // Destroying it waits for its work and makes the arrays and pools forget it (~Stream).
  nb::class_<sa::Stream>(m, "_Stream")
      .def("__init__",
           [](sa::Stream* self, int device, bool high) {
             new (self) sa::Stream(sa::Device{device},
                                   high ? sa::StreamPriority::high : sa::StreamPriority::normal);
           },
           nb::arg("device"), nb::arg("high"))
      .def_prop_ro("handle", &handle_of)
      .def_prop_ro("_device", [](const sa::Stream& s) { return s.device().ordinal; })
      .def_prop_ro("_priority",
                   [](const sa::Stream& s) { return std::string(sa::to_string(s.priority())); })
      .def("synchronize", &sa::Stream::synchronize, nb::call_guard<nb::gil_scoped_release>(),
           "Blocks until the work queued on the stream is done.")
      .def("query", &sa::Stream::query, "True when the work queued on the stream is done.");

  nb::class_<sa::Graph>(m, "_Graph")
      .def("launch", [](sa::Graph& g, std::uintptr_t stream) { g.launch(stream_of(stream)); })
      .def("arrays", &arrays_of)
      .def_prop_ro("device", &sa::Graph::device)
      .def_prop_ro("launches", &sa::Graph::launches);

  // `file` is a parameter, so it outlives the session, which names it in every error.
  m.def("_capture", [](std::uintptr_t stream, nb::callable fn, std::string file, unsigned line) {
    sa::detail::CaptureSession session(stream_of(stream), file.c_str(), line);
    fn();
    return session.finish();
  });
  m.def("_capturing", [] { return sa::detail::active_capture() != nullptr; });
  m.def("_refuse_in_capture", [](const std::string& call, const std::string& why) {
    if (sa::detail::active_capture() != nullptr) {
      sa::detail::refuse_in_capture(call.c_str(), why.c_str());
    }
  });
}

}  // namespace smartarray_python
