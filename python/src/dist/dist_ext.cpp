// smartarray._dist: the distributed layer (smartarray::dist) for Python SmartArrays, built where
// CMake finds MPI. Arrays come in as the address of their SmartArray<std::byte>
// (SmartArray._array_address) with their dtype's name; the core those arrays live in is the one
// of smartarray._ext, whose smartarray symbols this module links against (python/CMakeLists.txt),
// so that both modules share one runtime, one set of pools and one set of counters.
#include "calls.hpp"
#include "elements.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <smartarray/distributed.hpp>
#include <smartarray/distributed/detail/agreement.hpp>
#include <smartarray/error.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace nb = nanobind;
namespace sa = smartarray;
using namespace smartarray_python::dist;
namespace sdd = smartarray::dist::detail;

namespace {

Bytes& array_at(std::uintptr_t address) { return *reinterpret_cast<Bytes*>(address); }

sa::StreamRef stream_of(std::uintptr_t handle) {
  return sa::StreamRef(reinterpret_cast<void*>(handle));
}

/// mpi4py's handle of a communicator (MPI._handleof): a pointer in Open MPI, an int in MPICH.
template <typename Handle = MPI_Comm>
Handle comm_of(std::uintptr_t handle) {
  if constexpr (std::is_pointer_v<Handle>) {
    return reinterpret_cast<Handle>(handle);
  } else {
    return static_cast<Handle>(handle);
  }
}

sd::Transport transport_of(const std::string& name) {
  for (const sd::Transport t :
       {sd::Transport::nccl, sd::Transport::mpi_device, sd::Transport::mpi_host}) {
    if (name == sd::to_string(t)) return t;
  }
  throw std::invalid_argument("Communicator: unknown transport '" + name +
                              "' (expected 'nccl', 'mpi_device' or 'mpi_host')");
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

}  // namespace

NB_MODULE(_dist, m) {
  m.doc() = "smartarray's distributed layer (smartarray::dist) over MPI and NCCL";

  // smartarray::logic_error is a bad argument: ValueError, as in smartarray._ext. A plain
  // std::logic_error is a dtype_error (the agreement rebuilds it as one on the other ranks):
  // TypeError.
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const sa::logic_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::out_of_range& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const std::length_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::domain_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::logic_error& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });

  m.def("mpi_library_version", &mpi_library_version,
        "The MPI library this module is linked with (MPI_Get_library_version).");
  m.def("nccl_built", [] { return sd::transport_available(sd::Transport::nccl); });

  nb::class_<sd::Communicator>(m, "_Communicator")
      .def(
          "__init__",
          [](sd::Communicator* self, std::uintptr_t handle, std::optional<int> device,
             std::optional<std::string> transport) {
            sd::CommunicatorOptions options;
            if (device) options.device = sa::Device{*device};
            if (transport) options.transport = transport_of(*transport);
            const MPI_Comm comm = comm_of(handle);
            nb::gil_scoped_release nogil;
            new (self) sd::Communicator(comm, options);
          },
          nb::arg("handle"), nb::arg("device").none(), nb::arg("transport").none())
      .def_prop_ro("rank", &sd::Communicator::rank)
      .def_prop_ro("size", &sd::Communicator::size)
      .def_prop_ro("transport",
                   [](const sd::Communicator& c) {
                     return std::string(sd::to_string(c.transport()));
                   })
      .def_prop_ro("device", [](const sd::Communicator& c) { return c.device().ordinal; })
      .def_prop_ro("local_rank", &sd::Communicator::local_rank)
      .def_prop_ro("local_size", &sd::Communicator::local_size);

  using Comm = const sd::Communicator&;
  const auto nogil = nb::call_guard<nb::gil_scoped_release>();
  m.def("exchange_halos",
        [](std::uintptr_t a, const std::string& dtype, std::int64_t width, bool periodic, Comm comm,
           std::uintptr_t stream) {
          exchange_halos(array_at(a), elements_of(dtype), width, periodic, comm, stream_of(stream));
        }, nogil);
  m.def("all_reduce",
        [](std::uintptr_t a, const std::string& dtype, const std::string& op, Comm comm,
           std::uintptr_t stream) {
          all_reduce(array_at(a), elements_of(dtype), op, comm, stream_of(stream));
        }, nogil);
  m.def("broadcast",
        [](std::uintptr_t a, const std::string& dtype, int root, Comm comm, std::uintptr_t stream) {
          broadcast(array_at(a), elements_of(dtype), root, comm, stream_of(stream));
        }, nogil);
  m.def("all_gather",
        [](std::uintptr_t in, const std::string& in_dtype, std::uintptr_t out,
           const std::string& out_dtype, Comm comm, std::uintptr_t stream) {
          all_gather(array_at(in), elements_of(in_dtype), array_at(out), elements_of(out_dtype),
                     comm, stream_of(stream));
        }, nogil);
  m.def("reduce_scatter",
        [](std::uintptr_t in, const std::string& in_dtype, std::uintptr_t out,
           const std::string& out_dtype, const std::string& op, Comm comm, std::uintptr_t stream) {
          reduce_scatter(array_at(in), elements_of(in_dtype), array_at(out),
                         elements_of(out_dtype), op, comm, stream_of(stream));
        }, nogil);
  // A bad argument of this rank's call, found in Python before the call reached the library (an
  // argument of the wrong type): this rank joins the call's agreement with it, so that every other
  // rank raises too instead of waiting for this one, and then returns (its caller raises its own
  // error). Without the communicator's size check there is no agreement, as in C++.
  m.def("refuse",
        [](const std::string& what, Comm comm, const std::string& message) {
          if (!comm.checks_sizes()) return;
          try {
            sdd::agree(what.c_str(), sdd::usable(what.c_str(), comm), comm.rank(), {},
                       std::make_exception_ptr(std::invalid_argument(message)));
          } catch (const std::invalid_argument&) {
            // The agreement rethrows this rank's own failure: the caller raises the original.
          }
        }, nogil);
  // Point to point: dist::send and dist::recv of a byte range (the elements of a slice).
  m.def("send",
        [](std::uintptr_t a, std::size_t first, std::size_t bytes, int dest, int tag, Comm comm,
           std::uintptr_t stream) {
          sd::send(std::as_const(array_at(a)).slice(first, bytes), dest, tag, comm,
                   stream_of(stream));
        }, nogil);
  m.def("recv",
        [](std::uintptr_t a, std::size_t first, std::size_t bytes, int source, int tag, Comm comm,
           std::uintptr_t stream) {
          sd::recv(array_at(a).slice(first, bytes), source, tag, comm, stream_of(stream));
        }, nogil);
}
