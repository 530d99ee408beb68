// DLPack both ways: capsules over a SmartArray's host or device copy, and imports of a
// producer's capsule.
#pragma once

#include "core.hpp"

namespace smartarray_python {

/// Keeps an imported tensor alive; calls the producer's deleter when the last SmartArray over it
/// goes away.
struct Imported {
  DLManagedTensor* legacy = nullptr;
  DLManagedTensorVersioned* versioned = nullptr;
  Imported() = default;
  Imported(const Imported&) = delete;
  Imported& operator=(const Imported&) = delete;
  ~Imported() {
    if (versioned && versioned->deleter) versioned->deleter(versioned);
    if (legacy && legacy->deleter) legacy->deleter(legacy);
  }
};

/// A capsule over the host copy (device_type kDLCPU) or the device copy.
/// A device capsule is acquired on `stream` (the array's); `consumer_stream` then waits for it.
nb::object make_capsule(Core& core, bool versioned, bool on_host, int access, std::uintptr_t stream,
                        int device_id, std::uintptr_t consumer_stream);

/// (pointer, device type, device id, shape, strides or None, (code, bits, lanes), read-only,
/// keeper): the capsule is consumed, and the keeper calls the producer's deleter when it goes.
nb::tuple import_capsule(nb::handle capsule);

}  // namespace smartarray_python
