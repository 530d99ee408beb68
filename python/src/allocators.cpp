// Other libraries allocate from smartarray's device pools, so that their out-of-memory evicts
// SmartArrays' device copies (clean ones first, then dirty ones, written back) before it fails:
// - PyTorch: CUDAPluggableAllocator over smartarray_torch_malloc / smartarray_torch_free;
// - CuPy: CFunctionAllocator over smartarray_cupy_malloc / smartarray_cupy_free;
// - Numba: smartarray.NumbaMemoryManager, through _device_allocate / _device_free.
// The allocations themselves are the C++ library's (smartarray/interop/external_allocator.hpp);
// this file holds what each library's calling convention needs on top: the C entry points and
// how they report failures, CuPy's stream and block sizes, and the bindings.
// python/smartarray/_allocators.py builds the Python side. The C entry points are exported from
// the extension module itself, so the libraries load them from its file.
#include "allocators.hpp"

#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <sys/types.h>

#include <smartarray/error.hpp>
#include <smartarray/interop/external_allocator.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iostream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#define SMARTARRAY_C_API extern "C" __attribute__((visibility("default")))

namespace nb = nanobind;
namespace sa = smartarray;

namespace {

/// The message of the last failed allocation through the C entry points, per thread.
thread_local std::string last_error;

/// Inside a catch block: keeps "<who> of <bytes> bytes on device <device>: <what>" in last_error
/// for the caller to throw or to hand to Python.
void remember_failure(const char* who, std::size_t bytes, int device) {
  std::string message = "unknown error";
  try {
    throw;
  } catch (const std::exception& error) {
    message = error.what();
  } catch (...) {
  }
  last_error = sa::detail::concat(who, " of ", bytes, " bytes on device ", device, ": ", message);
}

/// CuPy's live blocks, with what its free does not pass again: the size (CuPy's free passes none)
/// and the device, which the free's device must match. Never destroyed: CuPy may free blocks
/// during interpreter shutdown.
struct CupyBlock {
  std::size_t size;
  int device;
};
struct CupyBlocks {
  std::mutex mutex;
  std::unordered_map<void*, CupyBlock> blocks;
};
CupyBlocks& cupy_blocks() {
  static auto* map = new CupyBlocks;
  return *map;
}

/// CuPy's current stream on the calling thread, through the C function at `getter` (CuPy's own
/// `get_current_stream_ptr`, found by _allocators.py); nullptr (the default stream) without one.
void* cupy_current_stream(void* getter) noexcept {
  if (getter == nullptr) return nullptr;
  const PyGILState_STATE gil = PyGILState_Ensure();
  std::intptr_t stream = reinterpret_cast<std::intptr_t (*)()>(getter)();
  if (stream == -1 && PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    stream = 0;
  }
  PyGILState_Release(gil);
  return reinterpret_cast<void*>(stream);
}

/// Releases the GIL, when the calling thread holds it, for the lifetime of the object: making
/// room may write device copies back to the host, which other Python threads need not wait for.
class WithoutGil {
 public:
  WithoutGil() noexcept : saved_(PyGILState_Check() ? PyEval_SaveThread() : nullptr) {}
  ~WithoutGil() {
    if (saved_ != nullptr) PyEval_RestoreThread(saved_);
  }
  WithoutGil(const WithoutGil&) = delete;
  WithoutGil& operator=(const WithoutGil&) = delete;

 private:
  PyThreadState* saved_;
};

nb::dict stats_dict(const sa::MemoryStats& s, std::size_t bytes_in_use) {
  nb::dict d;
  d["current_bytes"] = s.current_bytes;
  d["current_count"] = s.current_count;
  d["peak_bytes"] = s.peak_bytes;
  d["peak_count"] = s.peak_count;
  d["total_bytes"] = s.total_bytes;
  d["total_count"] = s.total_count;
  d["bytes_in_use"] = bytes_in_use;
  d["reserved_bytes"] = s.reserved_bytes;
  d["largest_free_block"] = s.largest_free_block;
  d["upstream_allocations"] = s.upstream_allocations;
  d["fragmentation"] = s.fragmentation;
  return d;
}

void check_device(int device) { sa::detail::runtime().check_device(device, "allocators"); }

}  // namespace

// --- PyTorch: torch.cuda.memory.CUDAPluggableAllocator ------------------------------------------

/// PyTorch's pluggable malloc: `size` bytes on `device` for work on `stream` (PyTorch's current
/// stream). PyTorch does not check the pointer it gets back: the way to report a failure is a
/// C++ exception, which PyTorch turns into a RuntimeError with its message (as RMM's allocator
/// does). So a failure throws std::runtime_error naming the request and the pool's state, and
/// nothing else crosses: smartarray's own exception types stay inside.
SMARTARRAY_C_API void* smartarray_torch_malloc(ssize_t size, int device, cudaStream_t stream) {
  if (size <= 0) return nullptr;
  try {
    return sa::interop::allocate(static_cast<std::size_t>(size), device, stream);
  } catch (...) {
    remember_failure("smartarray_torch_malloc", static_cast<std::size_t>(size), device);
  }
  throw std::runtime_error(last_error);
}

/// PyTorch's pluggable free: `stream` is the stream of the allocation, which PyTorch keeps.
SMARTARRAY_C_API void smartarray_torch_free(void* ptr, ssize_t size, int device,
                                            cudaStream_t stream) {
  sa::interop::deallocate(ptr, static_cast<std::size_t>(size), device, stream);
}

// --- CuPy: cupy.cuda.memory.CFunctionAllocator --------------------------------------------------

/// CuPy's malloc: `size` bytes on `device` for work on CuPy's current stream (read through
/// `param`, see cupy_current_stream). Returns nullptr on failure, with the message kept for
/// smartarray's allocator (_allocators.py), which raises CuPy's OutOfMemoryError: CuPy checks no
/// pointer and its C frames let no exception through.
SMARTARRAY_C_API void* smartarray_cupy_malloc(void* param, std::size_t size, int device) {
  if (size == 0) return nullptr;
  void* const stream = cupy_current_stream(param);
  try {
    void* ptr = nullptr;
    {
      const WithoutGil nogil;
      ptr = sa::interop::allocate(size, device, stream);
    }
    try {
      CupyBlocks& map = cupy_blocks();
      const std::lock_guard lock(map.mutex);
      map.blocks.emplace(ptr, CupyBlock{size, device});
    } catch (...) {
      sa::interop::deallocate_after_blocking_work(ptr, size, device);
      throw;
    }
    return ptr;
  } catch (...) {
    remember_failure("smartarray_cupy_malloc", size, device);
  }
  return nullptr;
}

/// CuPy's free. CuPy says neither the size nor the stream: the size comes from the map, and the
/// block is released after the work of every blocking stream (deallocate_after_blocking_work), not
/// on the stream of the allocation, which CuPy may have destroyed by now. Work on a non-blocking
/// stream must be complete before the array is dropped. A free that cannot release the block (a
/// pointer of no block, a device other than the block's, a failed release) is reported on stderr
/// and forgets nothing: the block stays allocated and in the map, and a free with its device
/// releases it.
SMARTARRAY_C_API void smartarray_cupy_free(void*, void* ptr, int device) {
  if (ptr == nullptr) return;
  CupyBlocks& map = cupy_blocks();
  std::size_t size = 0;
  {
    const std::lock_guard lock(map.mutex);
    const auto found = map.blocks.find(ptr);
    if (found == map.blocks.end()) {
      std::cerr << "smartarray: smartarray_cupy_free of " << ptr << " on device " << device
                << ": not a block of smartarray_cupy_malloc (left alone)\n";
      return;
    }
    if (found->second.device != device) {
      std::cerr << "smartarray: smartarray_cupy_free of " << ptr << " on device " << device
                << ": the block is device " << found->second.device
                << "'s (left allocated: free it with its device)\n";
      return;
    }
    size = found->second.size;
    map.blocks.erase(found);
  }
  if (sa::interop::deallocate_after_blocking_work(ptr, size, device)) return;
  // Not released: still the caller's block, so no other malloc can have it meanwhile.
  try {
    const std::lock_guard lock(map.mutex);
    map.blocks.emplace(ptr, CupyBlock{size, device});
  } catch (const std::exception& error) {
    std::cerr << "smartarray: smartarray_cupy_free of " << ptr << ": the block could not be "
              << "kept for a later free: " << error.what() << "\n";
  }
}

// --- Python -------------------------------------------------------------------------------------

void smartarray_python::bind_allocators(nb::module_& m) {
  m.def("_allocator_functions", [] {
    nb::dict d;
    d["torch_malloc"] = reinterpret_cast<std::uintptr_t>(&smartarray_torch_malloc);
    d["torch_free"] = reinterpret_cast<std::uintptr_t>(&smartarray_torch_free);
    d["cupy_malloc"] = reinterpret_cast<std::uintptr_t>(&smartarray_cupy_malloc);
    d["cupy_free"] = reinterpret_cast<std::uintptr_t>(&smartarray_cupy_free);
    return d;
  });
  m.def("_allocator_error", [] { return last_error; },
        "The message of the calling thread's last failed allocation through the C entry points.");
  // A Cython module's exported C function (its __pyx_capi__ capsule), when the capsule's name (the
  // function's C signature) starts with `signature`; else 0.
  m.def("_capsule_function", [](nb::handle capsule, const std::string& signature) {
    if (!PyCapsule_CheckExact(capsule.ptr())) return std::uintptr_t{0};
    const char* const name = PyCapsule_GetName(capsule.ptr());
    if (name == nullptr || std::strncmp(name, signature.c_str(), signature.size()) != 0) {
      PyErr_Clear();
      return std::uintptr_t{0};
    }
    void* const function = PyCapsule_GetPointer(capsule.ptr(), name);
    if (function == nullptr) PyErr_Clear();
    return reinterpret_cast<std::uintptr_t>(function);
  });
  // The stream that the function at `stream_function` returns (as CuPy's malloc reads it).
  m.def("_current_stream_of", [](std::uintptr_t stream_function) {
    return reinterpret_cast<std::uintptr_t>(
        cupy_current_stream(reinterpret_cast<void*>(stream_function)));
  });
  m.def("_device_allocate", [](std::size_t bytes, int device, std::uintptr_t stream) {
    nb::gil_scoped_release nogil;
    return reinterpret_cast<std::uintptr_t>(
        sa::interop::allocate(bytes, device, reinterpret_cast<void*>(stream)));
  });
  m.def("_device_free", [](std::uintptr_t ptr, std::size_t bytes, int device) {
    sa::interop::deallocate_after_blocking_work(reinterpret_cast<void*>(ptr), bytes, device);
  });
  m.def("_pinned_allocate", [](std::size_t bytes) {
    nb::gil_scoped_release nogil;
    return reinterpret_cast<std::uintptr_t>(sa::pinned_resource().allocate_sync(bytes));
  });
  m.def("_pinned_free", [](std::uintptr_t ptr, std::size_t bytes) {
    sa::pinned_resource().deallocate_sync(reinterpret_cast<void*>(ptr), bytes);
  });
  m.def("_memory_info", [](int device) {
    check_device(device);
    std::size_t free_bytes = 0, total_bytes = 0;
    sa::detail::runtime().memory_info(device, free_bytes, total_bytes);
    return nb::make_tuple(free_bytes, total_bytes);
  });
  m.def("_device_memory_stats", [](int device) {
    check_device(device);
    return stats_dict(sa::default_device_resource(device).stats(),
                      sa::default_device_pool(device).bytes_in_use());
  });
  m.def("_pinned_memory_stats", [] {
    return stats_dict(sa::default_pinned_resource().stats(),
                      sa::default_pinned_pool().bytes_in_use());
  });
  m.def("_device_budget", [](int device) {
    check_device(device);
    return sa::device_budget(device);
  });
  m.def("_set_device_budget", [](std::optional<std::size_t> bytes, int device) {
    check_device(device);
    sa::set_device_budget(bytes, device);
  });
  m.attr("_max_device_budget") = sa::max_device_budget;
}
