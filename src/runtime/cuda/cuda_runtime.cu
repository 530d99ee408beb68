// The cuda backend: the runtime seam over the CUDA runtime API. Every call is checked.
//
// Several GPUs: memory and streams are made with their device current, and every call on a
// device's named default stream (default_stream(d)) makes that device current for the call. An
// event holds one CUDA event per device, made when it is first recorded on a stream of that
// device (CUDA records an event only on a stream of the device it was made on; any stream may
// wait for it). Peer access between two GPUs is enabled, both ways, by their first peer copy.
#include <smartarray/runtime/detail/cuda_check.hpp>
#include <smartarray/runtime/detail/runtime.hpp>
#include "runtime/cuda/cuda_graphs.hpp"

#include <cuda_runtime_api.h>

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace smartarray::detail {
namespace {

cudaMemcpyKind to_cuda(CopyKind kind) noexcept {
  switch (kind) {
    case CopyKind::host_to_device: return cudaMemcpyHostToDevice;
    case CopyKind::device_to_host: return cudaMemcpyDeviceToHost;
    case CopyKind::device_to_device: return cudaMemcpyDeviceToDevice;
    case CopyKind::host_to_host: return cudaMemcpyHostToHost;
    case CopyKind::peer: break;
  }
  return cudaMemcpyDefault;
}

/// Makes `device` current for a scope (nothing when it already is, or for -1).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (device < 0) return;
    int current = 0;
    SMARTARRAY_CUDA_TRY(cudaGetDevice(&current), "query the current device");
    if (current == device) return;
    SMARTARRAY_CUDA_TRY(cudaSetDevice(device), "make device ", device, " current");
    previous_ = current;
  }
  ~DeviceScope() {
    if (previous_ >= 0) SMARTARRAY_CUDA_LOG(cudaSetDevice(previous_), "restore the current device");
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

/// The CUDA stream behind `stream`, with the device of a named default stream current while the
/// call is made.
class OnStream {
 public:
  explicit OnStream(StreamRef stream)
      : scope_(stream.default_of_device()),
        stream_(stream.default_of_device() >= 0 ? nullptr
                                                : static_cast<cudaStream_t>(stream.handle())) {}
  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }

 private:
  DeviceScope scope_;
  cudaStream_t stream_;
};

/// An event: one CUDA event per device it was recorded on, and the device of its last record.
struct CudaEvent {
  std::array<cudaEvent_t, max_devices> per_device{};
  int recorded = -1;  ///< -1: never recorded, so already complete
};
CudaEvent& to_cuda(EventHandle event) noexcept { return *static_cast<CudaEvent*>(event); }

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

/// The stream priorities of a device: lower numbers are greater priorities.
struct PriorityRange {
  int least = 0;
  int greatest = 0;
};
/// The range of `device`, which must be current.
PriorityRange priority_range(int device) {
  PriorityRange range;
  SMARTARRAY_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&range.least, &range.greatest),
                      "query the stream priorities of device ", device);
  return range;
}

class CudaRuntime final : public Runtime {
 public:
  explicit CudaRuntime(int device) {
    SMARTARRAY_CUDA_TRY(cudaSetDevice(device), "select CUDA device ", device);
    int count = 0;
    SMARTARRAY_CUDA_TRY(cudaGetDeviceCount(&count), "count the CUDA devices");
    devices_ = std::min(count, max_devices);
    set_device_count(devices_);
    for (int d = 0; d < devices_; ++d) {
      cudaDeviceProp prop{};
      SMARTARRAY_CUDA_TRY(cudaGetDeviceProperties(&prop, d), "query device ", d);
      DeviceProperties& properties = properties_[static_cast<std::size_t>(d)];
      properties.name = prop.name;
      properties.ordinal = d;
      properties.multiprocessor_count = prop.multiProcessorCount;
      properties.compute_capability_major = prop.major;
      properties.compute_capability_minor = prop.minor;
      properties.total_memory = prop.totalGlobalMem;
      properties.can_map_host_memory = prop.canMapHostMemory != 0;
      properties.concurrent_managed_access = prop.concurrentManagedAccess != 0;
      properties.managed_memory = prop.managedMemory != 0;
      for (int owner = 0; owner < devices_; ++owner) {
        int can = 0;
        if (owner != d) {
          SMARTARRAY_CUDA_TRY(cudaDeviceCanAccessPeer(&can, d, owner), "ask whether device ", d,
                              " can access device ", owner);
        }
        can_access_[static_cast<std::size_t>(d)][static_cast<std::size_t>(owner)] = can != 0;
      }
    }
  }

  BackendKind kind() const noexcept override { return BackendKind::cuda; }
  int current_device() const override {
    int device = 0;
    SMARTARRAY_CUDA_TRY(cudaGetDevice(&device), "query the current device");
    return device;
  }

  void memory_info(int device, std::size_t& free_bytes, std::size_t& total_bytes) override {
    check_device(device, "device memory information");
    const DeviceScope scope(device);
    SMARTARRAY_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes), "query the memory of device ",
                        device);
  }

  void* mapped_device_pointer(void* host_ptr) override {
    void* device_ptr = nullptr;
    SMARTARRAY_CUDA_TRY(cudaHostGetDevicePointer(&device_ptr, host_ptr, 0),
                        "device pointer of mapped host memory at ", host_ptr);
    return device_ptr;
  }

  void launch_host_func(StreamRef stream, std::function<void()> fn) override {
    const OnStream on(stream);
    if (CaptureState* const capture = active_capture(); capture != nullptr && is_capturing(stream)) {
      // A graph's host node runs at every replay: the graph keeps the function.
      auto kept = std::make_shared<std::function<void()>>(std::move(fn));
      SMARTARRAY_CUDA_TRY(cudaLaunchHostFunc(on.get(), &run_kept_host_func, kept.get()),
                          "capture a host function on stream ", stream.handle());
      capture->keep_alive.push_back(kept);
      return;
    }
    auto owned = std::make_unique<std::function<void()>>(std::move(fn));
    SMARTARRAY_CUDA_TRY(cudaLaunchHostFunc(on.get(), &run_host_func, owned.get()),
                        "launch a host function on stream ", stream.handle());
    owned.release();  // run_host_func deletes it
  }

  GraphHandle end_capture(StreamRef stream) override {
    return cuda_graphs::end(static_cast<cudaStream_t>(stream.handle()));
  }
  void abort_capture(StreamRef stream) noexcept override {
    cuda_graphs::abort(static_cast<cudaStream_t>(stream.handle()));
  }
  bool is_capturing(StreamRef stream) override {
    const OnStream on(stream);
    return on.get() != nullptr && cuda_graphs::capturing(on.get());
  }
  void launch_graph(GraphHandle graph, StreamRef stream) override {
    const OnStream on(stream);
    cuda_graphs::launch(graph, on.get());
  }
  void destroy_graph(GraphHandle graph) noexcept override { cuda_graphs::destroy(graph); }

  StreamRef do_create_stream(int device, StreamPriority priority) override {
    const DeviceScope scope(device);
    const PriorityRange range = priority_range(device);
    cudaStream_t stream = nullptr;
    SMARTARRAY_CUDA_TRY(
        cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking,
                                     priority == StreamPriority::high ? range.greatest
                                                                      : range.least),
        "create a stream of ", to_string(priority), " priority on device ", device);
    return StreamRef{static_cast<void*>(stream)};
  }
  StreamPriority do_stream_priority(StreamRef stream) override {
    int value = 0;
    SMARTARRAY_CUDA_TRY(cudaStreamGetPriority(static_cast<cudaStream_t>(stream.handle()), &value),
                        "query the priority of stream ", stream.handle());
    // Lower numbers are greater priorities.
    const int device = stream_device(stream);
    const DeviceScope scope(device);
    return value < priority_range(device).least ? StreamPriority::high : StreamPriority::normal;
  }
  // A foreign cudaStream_t cannot be checked: querying a destroyed one is undefined behaviour.
  void do_check_stream(StreamRef /*stream*/) override {}

  void do_destroy_stream(StreamRef stream) noexcept override {
    const cudaStream_t handle = static_cast<cudaStream_t>(stream.handle());
    SMARTARRAY_CUDA_LOG(cudaStreamSynchronize(handle), "drain a stream before destroying it");
    SMARTARRAY_CUDA_LOG(cudaStreamDestroy(handle), "destroy a stream");
  }
  int do_stream_device(StreamRef stream) override {
#if CUDART_VERSION >= 12080
    int device = 0;
    SMARTARRAY_CUDA_TRY(cudaStreamGetDevice(static_cast<cudaStream_t>(stream.handle()), &device),
                        "query the device of stream ", stream.handle());
    return device;
#else  // before CUDA 12.8 no call tells; a stream made elsewhere is taken for the current device's
    (void)stream;
    return current_device();
#endif
  }
  bool query(StreamRef stream) override {
    const OnStream on(stream);
    const cudaError_t status = cudaStreamQuery(on.get());
    if (status == cudaErrorNotReady) return false;
    SMARTARRAY_CUDA_TRY(status, "query stream ", stream.handle());
    return true;
  }

  EventHandle create_event() override { return new CudaEvent; }
  void destroy_event(EventHandle event) noexcept override {
    std::unique_ptr<CudaEvent> owned(&to_cuda(event));
    for (cudaEvent_t per_device : owned->per_device) {
      if (per_device != nullptr) {
        SMARTARRAY_CUDA_LOG(cudaEventDestroy(per_device), "destroy an event");
      }
    }
  }
  void do_record(EventHandle event, StreamRef stream) override {
    CudaEvent& target = to_cuda(event);
    const int device = stream_device(stream);
    cudaEvent_t& per_device = target.per_device[static_cast<std::size_t>(device)];
    if (per_device == nullptr) {
      const DeviceScope scope(device);
      SMARTARRAY_CUDA_TRY(cudaEventCreateWithFlags(&per_device, cudaEventDisableTiming),
                          "create an event on device ", device);
    }
    const OnStream on(stream);
    SMARTARRAY_CUDA_TRY(cudaEventRecord(per_device, on.get()), "record an event on stream ",
                        stream.handle());
    target.recorded = device;
  }
  void stream_wait(StreamRef stream, EventHandle event) override {
    const CudaEvent& waited = to_cuda(event);
    if (waited.recorded < 0) return;  // never recorded: nothing to wait for
    const OnStream on(stream);
    SMARTARRAY_CUDA_TRY(
        cudaStreamWaitEvent(on.get(), waited.per_device[static_cast<std::size_t>(waited.recorded)],
                            0),
        "make stream ", stream.handle(), " wait on an event");
  }
  bool query(EventHandle event) override {
    const CudaEvent& queried = to_cuda(event);
    if (queried.recorded < 0) return true;
    const cudaError_t status =
        cudaEventQuery(queried.per_device[static_cast<std::size_t>(queried.recorded)]);
    if (status == cudaErrorNotReady) return false;
    SMARTARRAY_CUDA_TRY(status, "query an event");
    return true;
  }

 protected:
  void do_set_current_device(int device) override {
    SMARTARRAY_CUDA_TRY(cudaSetDevice(device), "make device ", device, " current");
  }
  bool do_can_access_peer(int reader, int owner) override {
    return can_access_[static_cast<std::size_t>(reader)][static_cast<std::size_t>(owner)];
  }
  const DeviceProperties& do_properties(int device) const noexcept override {
    return properties_[static_cast<std::size_t>(device)];
  }
  void* do_allocate_device(std::size_t bytes, int device) override {
    const DeviceScope scope(devices_ > 1 ? device : -1);
    void* ptr = nullptr;
    SMARTARRAY_CUDA_TRY(cudaMalloc(&ptr, bytes), "allocate ", bytes, " bytes of memory on device ",
                        device);
    return ptr;
  }
  void do_free_device(void* ptr, int device) noexcept override {
    int current = 0;
    const bool switch_device =
        devices_ > 1 && cudaGetDevice(&current) == cudaSuccess && current != device;
    if (switch_device) SMARTARRAY_CUDA_LOG(cudaSetDevice(device), "make the owner device current");
    SMARTARRAY_CUDA_LOG(cudaFree(ptr), "free device memory");
    if (switch_device) SMARTARRAY_CUDA_LOG(cudaSetDevice(current), "restore the current device");
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
    const OnStream on(stream);
    SMARTARRAY_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, to_cuda(kind), on.get()), "copy ", bytes,
                        " bytes (", static_cast<int>(kind), ") on stream ", stream.handle());
  }
  void do_copy_peer_async(void* dst, int dst_device, const void* src, int src_device,
                          std::size_t bytes, StreamRef stream) override {
    enable_peer_access(dst_device, src_device);
    const OnStream on(stream);
    SMARTARRAY_CUDA_TRY(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, on.get()),
                        "copy ", bytes, " bytes from device ", src_device, " to device ",
                        dst_device, " on stream ", stream.handle());
  }
  bool do_copy_to_device_now(std::span<const CopyRange> copies, StreamRef stream) override {
#if CUDART_VERSION >= 12080
    // cudaMemcpyBatchAsync rejects the legacy default stream. Under a capture (also one that the
    // caller opened with cudaStreamBeginCapture) it would lose the copy's data: the sources are
    // read at the call, and a replay copies whatever they hold then.
    if (stream.is_default() || stream.default_of_device() >= 0 ||
        static_cast<cudaStream_t>(stream.handle()) == cudaStreamLegacy) {
      return false;
    }
    const cudaStream_t on = static_cast<cudaStream_t>(stream.handle());
    if (cuda_graphs::capturing(on)) return false;
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
    attributes.dstLocHint.id = stream_device(stream);
    std::size_t first_copy = 0;
#if CUDART_VERSION >= 13000
    const cudaError_t status =
        cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), copies.size(), &attributes,
                             &first_copy, 1, on);
#else  // CUDA 12.8 and 12.9 also report the index of a failed copy
    std::size_t failed = 0;
    const cudaError_t status =
        cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), copies.size(), &attributes,
                             &first_copy, 1, &failed, on);
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
    const auto device = to_cuda(Location::device, 0);
    SMARTARRAY_CUDA_TRY(cudaMemAdvise(ptr, bytes, cudaMemAdviseSetReadMostly, device),
                        "advise ", bytes, " bytes of managed memory at ", ptr, " as read mostly");
  }
  void do_prefetch_async(const void* ptr, std::size_t bytes, Location where,
                         StreamRef stream) override {
    const auto location = to_cuda(where, stream_device(stream));
    const char* to = where == Location::host ? "host" : "device";
    const OnStream on(stream);
#if CUDART_VERSION >= 13000
    SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(ptr, bytes, location, 0, on.get()), "prefetch ",
                        bytes, " bytes of managed memory to the ", to, " on stream ",
                        stream.handle());
#else  // CUDA 12's cudaMemPrefetchAsync has no flags argument
    SMARTARRAY_CUDA_TRY(cudaMemPrefetchAsync(ptr, bytes, location, on.get()), "prefetch ",
                        bytes, " bytes of managed memory to the ", to, " on stream ",
                        stream.handle());
#endif
  }
  void do_synchronize(StreamRef stream) override {
    const OnStream on(stream);
    SMARTARRAY_CUDA_TRY(cudaStreamSynchronize(on.get()), "synchronize stream ", stream.handle());
  }
  void do_synchronize_device() override {
    SMARTARRAY_CUDA_TRY(cudaDeviceSynchronize(), "synchronize the device");
  }
  void do_synchronize(EventHandle event) override {
    const CudaEvent& waited = to_cuda(event);
    if (waited.recorded < 0) return;
    SMARTARRAY_CUDA_TRY(
        cudaEventSynchronize(waited.per_device[static_cast<std::size_t>(waited.recorded)]),
        "wait on an event");
  }

 private:
  /// Enables peer access between two devices, both ways, once.
  void enable_peer_access(int a, int b) {
    std::lock_guard lock(peer_mutex_);
    for (const auto& [reader, owner] : {std::pair{a, b}, std::pair{b, a}}) {
      bool& enabled =
          peer_enabled_[static_cast<std::size_t>(reader)][static_cast<std::size_t>(owner)];
      if (enabled || !do_can_access_peer(reader, owner)) continue;
      const DeviceScope scope(reader);
      const cudaError_t status = cudaDeviceEnablePeerAccess(owner, 0);
      if (status == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();
      } else {
        SMARTARRAY_CUDA_TRY(status, "enable peer access of device ", reader, " to device ", owner);
      }
      enabled = true;
    }
  }

  void do_begin_capture(StreamRef stream) override {
    cuda_graphs::begin(static_cast<cudaStream_t>(stream.handle()));
  }

  static void CUDART_CB run_kept_host_func(void* data) {
    (*static_cast<std::function<void()>*>(data))();
  }
  static void CUDART_CB run_host_func(void* data) {
    std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()>*>(data));
    (*fn)();
  }

  int devices_ = 1;
  std::array<DeviceProperties, max_devices> properties_;
  std::array<std::array<bool, max_devices>, max_devices> can_access_{};
  std::mutex peer_mutex_;
  std::array<std::array<bool, max_devices>, max_devices> peer_enabled_{};
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
