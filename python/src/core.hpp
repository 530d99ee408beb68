// The C++ state behind one Python SmartArray (the _Core class of the extension), and the
// conversions of the arguments that Python passes as ints.
#pragma once

#include <nanobind/nanobind.h>

#include <smartarray/smartarray.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace smartarray_python {

namespace nb = nanobind;
namespace sa = smartarray;

// DLPack 1.x (dlpack.h), the subset used here.
struct DLPackVersion { uint32_t major; uint32_t minor; };
struct DLDevice { int32_t device_type; int32_t device_id; };
struct DLDataType { uint8_t code; uint8_t bits; uint16_t lanes; };
struct DLTensor {
  void* data; DLDevice device; int32_t ndim; DLDataType dtype;
  int64_t* shape; int64_t* strides; uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor; void* manager_ctx; void (*deleter)(DLManagedTensor*);
};
struct DLManagedTensorVersioned {
  DLPackVersion version; void* manager_ctx; void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags; DLTensor dl_tensor;
};
constexpr uint64_t kReadOnly = 1;
constexpr int32_t kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;

inline sa::StreamRef stream_of(std::uintptr_t handle) {
  return sa::StreamRef(reinterpret_cast<void*>(handle));
}

inline sa::Access access_of(int access) {
  switch (access) {
    case 0: return sa::Access::read;
    case 1: return sa::Access::read_write;
    case 2: return sa::Access::discard;
  }
  throw std::invalid_argument("access must be 0 (read), 1 (read_write) or 2 (discard)");
}

/// The C++ state of one Python SmartArray.
struct Core {
  // Shared by the views that reshape() and ravel() make: one residency, several layouts.
  std::shared_ptr<sa::SmartArray<std::byte>> shared = std::make_shared<sa::SmartArray<std::byte>>();
  sa::SmartArray<std::byte>& arr() const { return *shared; }
  // Layout, for the buffer protocol and DLPack (set by the Python class).
  std::vector<Py_ssize_t> shape{0};
  std::vector<Py_ssize_t> strides{1};
  std::string format = "B";
  Py_ssize_t itemsize = 1;
  std::vector<int64_t> dl_shape{0}, dl_strides{1};  // strides in elements
  DLDataType dl_dtype{1, 8, 1};
  int exports = 0;  // live buffer-protocol exports
  bool writable_export = false;  // a _HostBuffer made by SmartArray.buffer(writable=True)

  std::size_t nbytes() const { return arr().size(); }
  std::uintptr_t host_ptr(int access, std::optional<std::uintptr_t> stream) {
    std::optional<sa::StreamRef> s;
    if (stream) s = stream_of(*stream);
    return reinterpret_cast<std::uintptr_t>(arr().host_view(access_of(access), s).data());
  }
  std::uintptr_t device_ptr(int access, std::uintptr_t stream) {
    return reinterpret_cast<std::uintptr_t>(arr().device_view(access_of(access), stream_of(stream)).data());
  }
};

}  // namespace smartarray_python
