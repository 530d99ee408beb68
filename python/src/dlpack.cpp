// DLPack both ways (dlpack.hpp).
#include "dlpack.hpp"

#include <smartarray/runtime/detail/runtime.hpp>

#include <memory>
#include <string>
#include <vector>

namespace smartarray_python {
namespace {

struct ExportCtx {
  // The C++ array, kept alive while the consumer holds the tensor. Not the Python SmartArray: a
  // NumPy array made from the capsule is invisible to the garbage collector, so a reference to
  // the SmartArray could close a cycle that is never collected (an array holding such a view).
  std::shared_ptr<sa::SmartArray<std::byte>> array;
  std::vector<int64_t> shape, strides;
};

void delete_versioned(DLManagedTensorVersioned* t) {
  delete static_cast<ExportCtx*>(t->manager_ctx);
  delete t;
}
void delete_legacy(DLManagedTensor* t) {
  delete static_cast<ExportCtx*>(t->manager_ctx);
  delete t;
}
void capsule_versioned_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {  // never consumed
    auto* t = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    if (t && t->deleter) t->deleter(t);
  } else {
    PyErr_Clear();
  }
}
void capsule_legacy_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (t && t->deleter) t->deleter(t);
  } else {
    PyErr_Clear();
  }
}

}  // namespace

nb::object make_capsule(Core& core, bool versioned, bool on_host, int access,
                        std::uintptr_t stream, int device_id, std::uintptr_t consumer_stream) {
  void* data = on_host ? reinterpret_cast<void*>(core.host_ptr(access, std::nullopt))
                       : reinterpret_cast<void*>(core.device_ptr(access, stream));
  if (!on_host) sa::detail::stream_wait_stream(stream_of(consumer_stream), stream_of(stream));
  auto* ctx = new ExportCtx{core.shared, core.dl_shape, core.dl_strides};
  DLTensor tensor{};
  tensor.data = data;
  tensor.device = on_host ? DLDevice{kDLCPU, 0} : DLDevice{kDLCUDA, device_id};
  tensor.ndim = static_cast<int32_t>(ctx->shape.size());
  tensor.dtype = core.dl_dtype;
  tensor.shape = ctx->shape.data();
  tensor.strides = ctx->strides.data();
  tensor.byte_offset = 0;
  PyObject* capsule = nullptr;
  if (versioned) {
    auto* t = new DLManagedTensorVersioned{};
    t->version = {1, 0};
    t->manager_ctx = ctx;
    t->deleter = delete_versioned;
    t->flags = access == 0 ? kReadOnly : 0;
    t->dl_tensor = tensor;
    capsule = PyCapsule_New(t, "dltensor_versioned", capsule_versioned_destructor);
    if (!capsule) { delete_versioned(t); throw nb::python_error(); }
  } else {
    auto* t = new DLManagedTensor{};
    t->dl_tensor = tensor;
    t->manager_ctx = ctx;
    t->deleter = delete_legacy;
    capsule = PyCapsule_New(t, "dltensor", capsule_legacy_destructor);
    if (!capsule) { delete_legacy(t); throw nb::python_error(); }
  }
  return nb::steal(capsule);
}


nb::tuple import_capsule(nb::handle capsule_obj) {
  PyObject* capsule = capsule_obj.ptr();
  auto keep = std::make_unique<Imported>();
  DLTensor* t = nullptr;
  bool readonly = false;
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    keep->versioned = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    if (keep->versioned->version.major > 1) {
      const auto major = keep->versioned->version.major;
      keep->versioned = nullptr;  // the capsule stays unconsumed: its own destructor frees it
      throw std::invalid_argument("from_dlpack: DLPack major version " + std::to_string(major) +
                                  " is not supported (1 is)");
    }
    t = &keep->versioned->dl_tensor;
    readonly = (keep->versioned->flags & kReadOnly) != 0;
    PyCapsule_SetName(capsule, "used_dltensor_versioned");
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    keep->legacy = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    t = &keep->legacy->dl_tensor;
    PyCapsule_SetName(capsule, "used_dltensor");
  } else {
    PyErr_Clear();
    throw std::invalid_argument("from_dlpack: not an unconsumed DLPack capsule");
  }
  nb::list shape, strides;
  for (int i = 0; i < t->ndim; ++i) shape.append(t->shape[i]);
  nb::object strides_obj = nb::none();
  if (t->strides) {
    for (int i = 0; i < t->ndim; ++i) strides.append(t->strides[i]);
    strides_obj = strides;
  }
  auto ptr = reinterpret_cast<std::uintptr_t>(static_cast<char*>(t->data) + t->byte_offset);
  nb::object keeper = nb::cast(keep.release(), nb::rv_policy::take_ownership);
  return nb::make_tuple(ptr, t->device.device_type, t->device.device_id, shape, strides_obj,
                        nb::make_tuple(t->dtype.code, t->dtype.bits, t->dtype.lanes), readonly,
                        keeper);
}

}  // namespace smartarray_python
