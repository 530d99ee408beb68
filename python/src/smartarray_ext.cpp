// The smartarray Python extension: a type-erased SmartArray<std::byte> (the residency, transfers
// and streams stay in C++; core.hpp), the buffer protocol, and DLPack capsules (dlpack.hpp). Shape,
// dtype and order live in the Python class (python/smartarray/_array.py), which subclasses _Core
// and hands the layout down through _set_layout for the buffer protocol. Plain C++: the public
// headers compile with g++.
#include "allocators.hpp"
#include "core.hpp"
#include "dlpack.hpp"
#include "graphs.hpp"

#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/optional.h>

#include <smartarray/smartarray.hpp>
#include <smartarray/interop/numba.hpp>
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/runtime/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace nb = nanobind;
namespace sa = smartarray;
using namespace smartarray_python;

namespace {

/// A device ordinal from Python: ValueError (std::invalid_argument) naming it and the count.
sa::Device device_of(int device) {
  const int count = sa::device_count();
  if (device < 0 || device >= count) {
    throw std::invalid_argument(sa::detail::concat(
        "device ordinal ", device, " is out of range: the ", sa::to_string(sa::backend()),
        " backend has ", count, count == 1 ? " device (ordinal 0)" : " devices (ordinals 0 to ",
        count == 1 ? "" : std::to_string(count - 1) + ")"));
  }
  return sa::Device{device};
}

/// The device that holds the device memory at `ptr`, -1 when it is not device memory of a known
/// device (cuda backend only: the host backend imports no device memory).
int pointer_device(std::uintptr_t ptr) {
  if (sa::backend() != sa::BackendKind::cuda || ptr == 0) return -1;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, reinterpret_cast<const void*>(ptr)) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return attributes.type == cudaMemoryTypeDevice ? attributes.device : -1;
}

sa::MemoryMode mode_of(const std::string& mode) {
  if (mode == "explicit") return sa::MemoryMode::explicit_copy;
  if (mode == "pageable") return sa::MemoryMode::pageable;
  if (mode == "mapped") return sa::MemoryMode::mapped;
  if (mode == "managed") return sa::MemoryMode::managed;
  throw std::invalid_argument("mode must be 'explicit', 'pageable', 'mapped' or 'managed', not '" +
                              mode + "'");
}

nb::dict stats_dict(const sa::TransferStats& s) {
  nb::dict d;
  d["h2d_count"] = s.h2d_count; d["h2d_bytes"] = s.h2d_bytes;
  d["d2h_count"] = s.d2h_count; d["d2h_bytes"] = s.d2h_bytes;
  d["d2d_count"] = s.d2d_count; d["d2d_bytes"] = s.d2d_bytes;
  d["prefetch_count"] = s.prefetch_count; d["prefetch_bytes"] = s.prefetch_bytes;
  d["allocation_count"] = s.allocation_count; d["allocation_bytes"] = s.allocation_bytes;
  d["d2d_peer_count"] = s.d2d_peer_count; d["d2d_peer_bytes"] = s.d2d_peer_bytes;
  d["staged_count"] = s.staged_count; d["staged_bytes"] = s.staged_bytes;
  d["sent_count"] = s.sent_count; d["sent_bytes"] = s.sent_bytes;
  d["received_count"] = s.received_count; d["received_bytes"] = s.received_bytes;
  d["wait_count"] = s.wait_count;
  return d;
}

// --- buffer protocol ----------------------------------------------------------------------------

int core_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  Core* core = nb::inst_ptr<Core>(self);
  const bool writable = (flags & PyBUF_WRITABLE) != 0 || core->writable_export;
  void* ptr = nullptr;
  try {
    // A writable export is a read_write host acquire (the device copy becomes stale: NumPy may
    // write through it); a read-only one is a read acquire.
    ptr = reinterpret_cast<void*>(core->host_ptr(writable ? 1 : 0, std::nullopt));
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    view->obj = nullptr;
    return -1;
  }
  view->buf = ptr;
  view->obj = Py_NewRef(self);
  view->len = static_cast<Py_ssize_t>(core->nbytes());
  view->readonly = writable ? 0 : 1;
  view->itemsize = core->itemsize;
  view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(core->format.c_str()) : nullptr;
  view->ndim = static_cast<int>(core->shape.size());
  view->shape = (flags & PyBUF_ND) ? core->shape.data() : nullptr;
  view->strides = ((flags & PyBUF_STRIDES) == PyBUF_STRIDES) ? core->strides.data() : nullptr;
  view->suboffsets = nullptr;
  view->internal = nullptr;
  if (!(flags & PyBUF_STRIDES)) {
    // Callers that want no strides need C-contiguous memory.
    Py_ssize_t expect = core->itemsize;
    bool c_contig = true;
    for (int i = view->ndim - 1; i >= 0; --i) {
      if (core->shape[i] > 1 && core->strides[i] != expect) c_contig = false;
      expect *= core->shape[i];
    }
    if (!c_contig) {
      Py_CLEAR(view->obj);
      PyErr_SetString(PyExc_BufferError, "SmartArray: the array is not C-contiguous");
      return -1;
    }
  }
  ++core->exports;
  return 0;
}

void core_releasebuffer(PyObject* self, Py_buffer*) { --nb::inst_ptr<Core>(self)->exports; }

PyType_Slot core_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(core_getbuffer)},
                            {Py_bf_releasebuffer, reinterpret_cast<void*>(core_releasebuffer)},
                            {0, nullptr}};

}  // namespace

NB_MODULE(_ext, m) {
  m.doc() = "smartarray's C++ core (SmartArray<std::byte> with Python-side shape and dtype)";

  // smartarray::logic_error is a bad argument (a destroyed stream, a device that does not exist, a
  // bad SMARTARRAY_* value) or a misuse: ValueError, as NumPy raises for bad values.
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const sa::logic_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  nb::class_<Imported>(m, "_Imported");

  // The buffer protocol is on _HostBuffer (SmartArray.buffer()), not on SmartArray itself: Numba
  // types any buffer-protocol object as a host buffer before it looks at
  // __cuda_array_interface__, so a SmartArray passed to a cuda.jit kernel must not be one.
  struct HostBuffer : Core {};
  nb::class_<Core>(m, "_Core")
      .def(nb::init<>())
      .def("_alloc_host",
           [](Core& c, std::uintptr_t src, std::size_t nbytes, const std::string& mode, bool pinned,
              bool portable, bool write_combined) {
             sa::ArrayOptions options{.mode = mode_of(mode), .portable = portable,
                                      .write_combined = write_combined, .require_pinned = pinned};
             if (src != 0) {
               std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(src), nbytes);
               *c.shared = sa::SmartArray<std::byte>(bytes, options);
             } else {
               *c.shared = sa::SmartArray<std::byte>(nbytes, options);
             }
           },
           nb::arg("src"), nb::arg("nbytes"), nb::arg("mode") = "explicit", nb::arg("pinned") = false,
           nb::arg("portable") = false, nb::arg("write_combined") = false)
      .def("_alloc_device",
           [](Core& c, std::size_t nbytes, std::uintptr_t stream, const std::string& mode) {
             *c.shared = sa::device_array<std::byte>(nbytes, stream_of(stream),
                                                   sa::ArrayOptions{.mode = mode_of(mode)});
           })
      .def("_wrap_device",
           [](Core& c, std::uintptr_t ptr, std::size_t nbytes, int device) {
             // wrap_device makes the memory the copy of the current device.
             const sa::DeviceGuard on(device_of(device));
             *c.shared = sa::wrap_device<std::byte>(reinterpret_cast<std::byte*>(ptr), nbytes);
           })
      .def("_set_layout",
           [](Core& c, std::vector<Py_ssize_t> shape, std::vector<Py_ssize_t> strides,
              std::string format, Py_ssize_t itemsize, std::tuple<int, int, int> dl_dtype) {
             if (c.exports != 0) throw std::runtime_error("SmartArray: a buffer export is live");
             c.shape = std::move(shape);
             c.strides = std::move(strides);
             c.format = std::move(format);
             c.itemsize = itemsize;
             c.dl_shape.assign(c.shape.begin(), c.shape.end());
             c.dl_strides.clear();
             for (Py_ssize_t s : c.strides) c.dl_strides.push_back(s / itemsize);
             c.dl_dtype = DLDataType{static_cast<uint8_t>(std::get<0>(dl_dtype)),
                                     static_cast<uint8_t>(std::get<1>(dl_dtype)),
                                     static_cast<uint16_t>(std::get<2>(dl_dtype))};
           })
      .def("_share", [](Core& c, const Core& other) { c.shared = other.shared; })
      .def_prop_ro("_nbytes", &Core::nbytes)
      // The address of the SmartArray<std::byte>, for smartarray._dist (which shares this
      // module's core); valid while the Python array lives.
      .def_prop_ro("_array_address",
                   [](const Core& c) { return reinterpret_cast<std::uintptr_t>(c.shared.get()); })
      .def("_host_ptr", &Core::host_ptr, nb::arg("access"), nb::arg("stream") = nb::none())
      .def("_device_ptr", &Core::device_ptr)
      .def("_host",
           [](Core& c) { return reinterpret_cast<std::uintptr_t>(c.arr().host().data()); })
      // Numba's gpu() and gpu_changed() (the C++ members of those names), under host/device
      // names here: the device copy, not marked changed; then the mark.
      .def("_device_unmarked",
           [](Core& c, std::uintptr_t stream) {
             return reinterpret_cast<std::uintptr_t>(c.arr().gpu(stream_of(stream)).data());
           })
      .def("_host_changed", [](Core& c) { c.arr().host_changed(); })
      .def("_device_changed",
           [](Core& c, std::uintptr_t stream) { c.arr().gpu_changed(stream_of(stream)); })
      .def("_prefetch_to_host",
           [](const Core& c, std::uintptr_t stream) {
             return c.arr().prefetch_to_host(stream_of(stream));
           })
      .def("_prefetch_to_device",
           [](const Core& c, std::uintptr_t stream) {
             c.arr().prefetch_to_device(stream_of(stream));
           })
      .def("_discard", [](Core& c) { c.arr().discard(); })
      // copy_to_device from another SmartArray: one device-to-device copy (sa::copy).
      .def("_copy_from",
           [](Core& c, const Core& src, std::uintptr_t stream) {
             sa::copy(c.arr(), src.arr(), stream_of(stream));
           })
      .def("_copy_to",
           [](const Core& c, std::uintptr_t dest, std::size_t nbytes, std::uintptr_t stream) {
             c.arr().copy_to(std::span<std::byte>(reinterpret_cast<std::byte*>(dest), nbytes),
                             stream_of(stream));
           })
      .def("_is_valid_on_host", [](const Core& c) { return c.arr().is_valid(sa::Side::host); })
      .def("_is_valid_on", [](const Core& c, int device) {
             return c.arr().is_valid(device_of(device));
           })
      .def("_transfer_stats", [](const Core& c) { return stats_dict(c.arr().transfer_stats()); })
      .def_prop_ro("_id", [](const Core& c) { return c.arr().id(); })
      .def("_set_label", [](Core& c, std::string label) { c.arr().set_label(std::move(label)); })
      .def("_label", [](const Core& c) { return c.arr().label(); })
      .def("_memory_mode", [](const Core& c) { return std::string(sa::to_string(c.arr().memory_mode())); })
      .def("_dlpack", &make_capsule, nb::arg("versioned"), nb::arg("on_host"), nb::arg("access"),
           nb::arg("stream"), nb::arg("device_id"), nb::arg("consumer_stream") = 0);

  nb::class_<sa::Prefetch>(m, "Prefetch",
                          "The token of SmartArray.prefetch_to_host(): its copies to the host.")
      .def("wait", &sa::Prefetch::wait, nb::call_guard<nb::gil_scoped_release>(),
           "Blocks until the prefetch's copies are done (at once when nothing was queued).")
      .def("ready", &sa::Prefetch::ready, "True when the prefetch's copies are done; never blocks.");

  nb::class_<HostBuffer, Core>(m, "_HostBuffer", nb::type_slots(core_slots))
      .def(nb::init<>())
      .def("_set_writable", [](HostBuffer& c, bool w) { c.writable_export = w; });

  m.def("_import_capsule", &import_capsule);
  m.def("backend", [] { return std::string(sa::to_string(sa::backend())); },
        "The backend in use: 'cuda' or 'host' (SMARTARRAY_BACKEND chooses; default: cuda when a "
        "GPU is present).");
  m.def("device_count", [] { return sa::device_count(); },
        "The number of devices of the active backend (GPUs, or emulated devices on the host "
        "backend: SMARTARRAY_HOST_DEVICES).");
  m.def("_current_device", [] { return sa::current_device().ordinal; });
  m.def("_set_current_device", [](int device) { sa::set_current_device(device_of(device)); });
  m.def("_device_properties", [](int device) {
    const sa::DeviceProperties& p = sa::device_properties(device_of(device));
    return nb::make_tuple(p.name, p.compute_capability_major, p.compute_capability_minor,
                          p.total_memory);
  });
  m.def("_peer_access", [](int reader, int owner) {
    return sa::peer_access(device_of(reader), device_of(owner));
  });
  m.def("_default_stream", [](int device) {
    return reinterpret_cast<std::uintptr_t>(sa::default_stream(device_of(device)).handle());
  });
  m.def("_stream_device", [](std::uintptr_t stream) {
    return sa::stream_device(stream_of(stream)).ordinal;
  });
  // A stream that the library made and destroyed is rejected on both backends, and on the host
  // backend any handle that is no live stream; the cuda backend trusts a foreign cudaStream_t,
  // which it cannot check without undefined behaviour.
  m.def("_check_stream",
        [](std::uintptr_t stream) { sa::detail::runtime().check_stream(stream_of(stream)); });
  m.def("_pointer_device", &pointer_device);
  m.attr("_default_stream_base") = sa::detail::device_default_stream_base;
  m.attr("_default_stream_end") = sa::detail::device_default_stream_base + sa::max_devices;
  m.def("_global_transfer_stats", [] { return stats_dict(sa::global_transfer_stats()); });
  m.def("_device_transfer_stats", [](int device) {
    return stats_dict(sa::device_transfer_stats(device_of(device).ordinal));
  });
  m.def("_synchronize", [](std::uintptr_t stream) {
    nb::gil_scoped_release nogil;
    sa::synchronize(stream_of(stream));
  });
  m.def("forget_stream", [](std::uintptr_t stream) {
    nb::gil_scoped_release nogil;
    sa::forget_stream(stream_of(stream));
  }, "Waits for a stream's work and makes the pools and arrays forget it (before it is destroyed).");
  m.def("synchronize_device", [] {
    nb::gil_scoped_release nogil;
    sa::synchronize_device();
  });
  m.def("trace_enabled", [] { return sa::trace_enabled(); });
  bind_allocators(m);
  bind_graphs(m);
}
