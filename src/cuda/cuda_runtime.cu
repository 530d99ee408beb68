// The cuda backend: the runtime seam over the CUDA runtime API. Every call is checked.
#include <smartarray/runtime/detail/cuda_check.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <cuda_runtime_api.h>

#include <array>
#include <functional>
#include <memory>

namespace smartarray::detail {
namespace {

cudaMemcpyKind to_cuda(CopyKind kind) noexcept {
  switch (kind) {
    case CopyKind::host_to_device: return cudaMemcpyHostToDevice;
    case CopyKind::device_to_host: return cudaMemcpyDeviceToHost;
    case CopyKind::device_to_device: return cudaMemcpyDeviceToDevice;
    case CopyKind::host_to_host: return cudaMemcpyHostToHost;
  }
  return cudaMemcpyDefault;
}

cudaStream_t to_cuda(StreamRef stream) noexcept { return static_cast<cudaStream_t>(stream.handle()); }
cudaEvent_t to_cuda(EventHandle event) noexcept { return static_cast<cudaEvent_t>(event); }

unsigned to_cuda_host_alloc_flags(unsigned flags) noexcept {
  unsigned out = cudaHostAllocDefault;
  if (flags & pinned_mapped) out |= cudaHostAllocMapped;
  if (flags & pinned_portable) out |= cudaHostAllocPortable;
  if (flags & pinned_write_combined) out |= cudaHostAllocWriteCombined;
  return out;
}

unsigned to_cuda_register_flags(unsigned flags) noexcept {
  unsigned out = cudaHostRegisterDefault;
  if (flags & pinned_mapped) out |= cudaHostRegisterMapped;
  if (flags & pinned_portable) out |= cudaHostRegisterPortable;
  return out;
}

// CUDA 13 names the target of cudaMemAdvise and cudaMemPrefetchAsync by a cudaMemLocation; CUDA 12
// by a device ordinal, cudaCpuDeviceId for the host. (CUDA 12's cudaMemLocation forms, the _v2
// calls, need a 12.2 driver; the ordinal forms work on any 12.x driver.)
#if CUDART_VERSION >= 13000
cudaMemLocation to_cuda(Location where, int device) noexcept {
  cudaMemLocation location{};
  location.type = where == Location::host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
  location.id = where == Location::host ? 0 : device;
  return location;
}
#else
int to_cuda(Location where, int device) noexcept {
  return where == Location::host ? cudaCpuDeviceId : device;
}
#endif

class CudaRuntime final : public Runtime {
 public:
  explicit CudaRuntime(int device) {
    SMARTARRAY_CUDA_TRY(cudaSetDevice(device), "select CUDA device ", device);
    cudaDeviceProp prop{};
    SMARTARRAY_CUDA_TRY(cudaGetDeviceProperties(&prop, device), "query device ", device);
    properties_.name = prop.name;
    properties_.ordinal = device;
    properties_.multiprocessor_count = prop.multiProcessorCount;
    properties_.compute_capability_major = prop.major;
    properties_.compute_capability_minor = prop.minor;
    properties_.total_memory = prop.totalGlobalMem;
    properties_.can_map_host_memory = prop.canMapHostMemory != 0;
    properties_.concurrent_managed_access = prop.concurrentManagedAccess != 0;
    properties_.managed_memory = prop.managedMemory != 0;
  }

  BackendKind kind() const noexcept override { return BackendKind::cuda; }
  const DeviceProperties& properties() const noexcept override { return properties_; }

  void memory_info(std::size_t& free_bytes, std::size_t& total_bytes) override {
    SMARTARRAY_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes), "query device memory");
  }

  void* mapped_device_pointer(void* host_ptr) override {
    void* device_ptr = nullptr;
    SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&device_ptr, host_ptr, 0),
                        "device pointer of mapped host memory at ", host_ptr);
    return device_ptr;
  }

  void launch_host_func(StreamRef stream, std::function<void()> fn) override {
    auto owned = std::make_unique<std::function<void()>>(std::move(fn));
    SMARTARRAY_CUDA_TRY(cudaLaunchHostFunc(to_cuda(stream), &run_host_func, owned.get()),
                        "launch a host function on stream ", stream.handle());
    owned.release();  // run_host_func deletes it
  }

  StreamRef create_stream() override {
    cudaStream_t stream = nullptr;
    SMARTARRAY_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                        "create a stream");
    return StreamRef{static_cast<void*>(stream)};
  }
  void destroy_stream(StreamRef stream) noexcept override {
    SMARTARRAY_CUDA_LOG(cudaStreamSynchronize(to_cuda(stream)), "drain a stream before destroying it");
    SMARTARRAY_CUDA_LOG(cudaStreamDestroy(to_cuda(stream)), "destroy a stream");
  }
  bool query(StreamRef stream) override {
    const cudaError_t status = cudaStreamQuery(to_cuda(stream));
    if (status == cudaErrorNotReady) return false;
    SMARTARRAY_CUDA_TRY(status, "query stream ", stream.handle());
    return true;
  }

  EventHandle create_event() override {
    cudaEvent_t event = nullptr;
    SMARTARRAY_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "create an event");
    return event;
  }
  void destroy_event(EventHandle event) noexcept override {
    SMARTARRAY_CUDA_LOG(cudaEventDestroy(to_cuda(event)), "destroy an event");
  }
  void record(EventHandle event, StreamRef stream) override {
    SMARTARRAY_CUDA_TRY(cudaEventRecord(to_cuda(event), to_cuda(stream)), "record an event on stream ",
                        stream.handle());
  }
  void stream_wait(StreamRef stream, EventHandle event) override {
    SMARTARRAY_CUDA_TRY(cudaStreamWaitEvent(to_cuda(stream), to_cuda(event), 0),
                        "make stream ", stream.handle(), " wait on an event");
  }
  bool query(EventHandle event) override {
    const cudaError_t status = cudaEventQuery(to_cuda(event));
    if (status == cudaErrorNotReady) return false;
    SMARTARRAY_CUDA_TRY(status, "query an event");
    return true;
  }

 protected:
  void* do_allocate_device(std::size_t bytes) override {
    void* ptr = nullptr;
    SMARTARRAY_CUDA_TRY(cudaMalloc(&ptr, bytes), "allocate ", bytes, " bytes of device memory");
    return ptr;
  }
  void do_free_device(void* ptr) noexcept override {
    SMARTARRAY_CUDA_LOG(cudaFree(ptr), "free device memory");
  }
  void* do_allocate_pinned(std::size_t bytes, unsigned flags) override {
    void* ptr = nullptr;
    SMARTARRAY_CUDA_TRY(cudaHostAlloc(&ptr, bytes, to_cuda_host_alloc_flags(flags)), "allocate ",
                        bytes, " bytes of pinned host memory (flags ", flags, ")");
    return ptr;
  }
  void do_free_pinned(void* ptr) noexcept override {
    SMARTARRAY_CUDA_LOG(cudaFreeHost(ptr), "free pinned host memory");
  }
  void* do_allocate_managed(std::size_t bytes) override {
    void* ptr = nullptr;
    SMARTARRAY_CUDA_TRY(cudaMallocManaged(&ptr, bytes, cudaMemAttachGlobal), "allocate ", bytes,
                        " bytes of managed memory");
    return ptr;
  }
  void do_free_managed(void* ptr) noexcept override {
    SMARTARRAY_CUDA_LOG(cudaFree(ptr), "free managed memory");
  }
  void do_register_host(void* ptr, std::size_t bytes, unsigned flags) override {
    const cudaError_t status = cudaHostRegister(ptr, bytes, to_cuda_register_flags(flags));
    if (status == cudaErrorHostMemoryAlreadyRegistered) {
      (void)cudaGetLastError();
      throw logic_error(concat("register_host: host memory at ", ptr, " (", bytes,
                               " bytes) is already registered"));
    }
    SMARTARRAY_CUDA_TRY(status, "register ", bytes, " bytes of host memory at ", ptr);
  }
  void do_unregister_host(void* ptr) noexcept override {
    SMARTARRAY_CUDA_LOG(cudaHostUnregister(ptr), "unregister host memory");
  }
  void do_copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                     StreamRef stream) override {
    SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, to_cuda(kind), to_cuda(stream)), "copy ",
                        bytes, " bytes (", static_cast<int>(kind), ") on stream ", stream.handle());
  }
  bool do_copy_to_device_now(std::span<const CopyRange> copies, StreamRef stream) override {
#if CUDART_VERSION >= 12080
    // cudaMemcpyBatchAsync rejects the legacy default stream.
    if (stream.is_default() || to_cuda(stream) == cudaStreamLegacy) return false;
    constexpr std::size_t most = 8;
    if (copies.size() > most) return false;
    std::array<void*, most> dsts{};
    std::array<void*, most> srcs{};
    std::array<std::size_t, most> sizes{};
    for (std::size_t i = 0; i < copies.size(); ++i) {
      dsts[i] = copies[i].dst;
      srcs[i] = const_cast<void*>(copies[i].src);  // CUDA 12's signature; never written
      sizes[i] = copies[i].bytes;
    }
    cudaMemcpyAttributes attributes{};
    attributes.srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    attributes.srcLocHint.type = cudaMemLocationTypeHost;
    attributes.dstLocHint.type = cudaMemLocationTypeDevice;
    attributes.dstLocHint.id = properties_.ordinal;
    std::size_t first_copy = 0;
#if CUDART_VERSION >= 13000
    const cudaError_t status =
        cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), copies.size(), &attributes,
                             &first_copy, 1, to_cuda(stream));
#else  // CUDA 12.8 and 12.9 also report the index of a failed copy
    std::size_t failed = 0;
    const cudaError_t status =
        cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), copies.size(), &attributes,
                             &first_copy, 1, &failed, to_cuda(stream));
#endif
    if (status == cudaErrorNotSupported || status == cudaErrorCallRequiresNewerDriver) {
      (void)cudaGetLastError();
      return false;
    }
    SMARTARRAY_CUDA_TRY(status, "copy ", copies.size(), " ranges host to device on stream ",
                        stream.handle());
    return true;
#else
    (void)copies;
    (void)stream;
    return false;
#endif
  }

  void do_advise_read_mostly(const void* ptr, std::size_t bytes) override {
    // The device is ignored by this advice, but it must name a valid location.
    const auto device = to_cuda(Location::device, properties_.ordinal);
    SMARTARRAY_CUDA_TRY(cudaMemAdvise(ptr, bytes, cudaMemAdviseSetReadMostly, device),
                        "advise ", bytes, " bytes of managed memory at ", ptr, " as read mostly");
  }
  void do_prefetch_async(const void* ptr, std::size_t bytes, Location where,
                         StreamRef stream) override {
    const auto location = to_cuda(where, properties_.ordinal);
    const char* to = where == Location::host ? "host" : "device";
#if CUDART_VERSION >= 13000
    SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(ptr, bytes, location, 0, to_cuda(stream)), "prefetch ",
                        bytes, " bytes of managed memory to the ", to, " on stream ",
                        stream.handle());
#else  // CUDA 12's cudaMemPrefetchAsync has no flags argument
    SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(ptr, bytes, location, to_cuda(stream)), "prefetch ",
                        bytes, " bytes of managed memory to the ", to, " on stream ",
                        stream.handle());
#endif
  }
  void do_synchronize(StreamRef stream) override {
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(to_cuda(stream)), "synchronize stream ",
                        stream.handle());
  }
  void do_synchronize_device() override {
    SMARTARRAY_CUDA_TRY(cudaDeviceSynchronize(), "synchronize the device");
  }
  void do_synchronize(EventHandle event) override {
    SMARTARRAY_CUDA_TRY(cudaEventSynchronize(to_cuda(event)), "wait on an event");
  }

 private:
  static void CUDART_CB run_host_func(void* data) {
    std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()>*>(data));
    (*fn)();
  }

  DeviceProperties properties_;
};

}  // namespace

bool cuda_runtime_has_device() noexcept {
  static const bool present = [] {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) (void)cudaGetLastError();
    return status == cudaSuccess && count > 0;
  }();
  return present;
}

Runtime* make_cuda_runtime() {
  if (!cuda_runtime_has_device()) return nullptr;
  int device = 0;
  SMARTARRAY_CUDA_TRY(cudaGetDevice(&device), "query the current device");
  return new CudaRuntime(device);
}

}  // namespace smartarray::detail
