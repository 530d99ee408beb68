// The backend seam's common half: backend selection, the counted and fault-injectable wrappers
// around each backend's do_* functions, recycled events, and the public stream API.
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/runtime/detail/capture.hpp>
#include "detail/environment.hpp"
#include <smartarray/diagnostics/debug.hpp>
#include <smartarray/error.hpp>
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/diagnostics/testing.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace smartarray {
namespace detail {
namespace {

/// One armed failure per fault kind; `remaining` counts down to the failing operation.
struct FaultSlot {
  std::atomic<std::uint64_t> operations{0};
  std::atomic<std::uint64_t> remaining{0};  // 0 = disarmed

  /// Counts one operation while armed; true when it is the one that must fail. Disarmed, it is
  /// one load: every pool allocation passes here.
  bool tick() noexcept {
    std::uint64_t left = remaining.load(std::memory_order_relaxed);
    if (left == 0) return false;
    operations.fetch_add(1, std::memory_order_relaxed);
    while (left != 0) {
      if (remaining.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
        return left == 1;
      }
    }
    return false;
  }
};

FaultSlot& fault_slot(testing::Fault what) noexcept {
  static FaultSlot slots[2];
  return slots[what == testing::Fault::allocation ? 0 : 1];
}

/// testing::set_peer_access_enabled(false) turns every peer pair off.
std::atomic<bool> peer_access_enabled{true};

/// The settings that no backend reads: checked when the first operation starts the runtime.
void check_environment() {
  (void)trace_setting(std::getenv("SMARTARRAY_TRACE"));
  (void)environment_switch("SMARTARRAY_NVTX", true);  // the NVTX ranges take a bad value as 0
  if (std::getenv("SMARTARRAY_STALE_HOST_GUARD") != nullptr) {
    set_stale_host_guard(environment_switch("SMARTARRAY_STALE_HOST_GUARD", false));
  }
}

Runtime* select_runtime() {
  check_environment();
  const char* wanted = std::getenv("SMARTARRAY_BACKEND");
  if (wanted != nullptr && *wanted != '\0') {
    const std::string_view name{wanted};
    if (name == "host") return make_host_runtime();
    if (name == "cuda") {
      Runtime* cuda = make_cuda_runtime();
      if (cuda == nullptr) {
        throw cuda_error("SMARTARRAY_BACKEND=cuda, but no usable CUDA device is present", -1);
      }
      return cuda;
    }
    throw logic_error(concat("SMARTARRAY_BACKEND='", name, "': expected 'cuda' or 'host'"));
  }
  if (Runtime* cuda = make_cuda_runtime()) return cuda;
  std::cerr << "smartarray: no CUDA device found; using the host backend (an emulated device)\n";
  return make_host_runtime();
}

}  // namespace

const char* copy_kind_name(CopyKind kind) noexcept {
  switch (kind) {
    case CopyKind::host_to_device: return "host-to-device";
    case CopyKind::device_to_host: return "device-to-host";
    case CopyKind::device_to_device: return "device-to-device";
    case CopyKind::host_to_host: return "host-to-host";
    case CopyKind::peer: return "peer";
  }
  return "unknown";
}

void check_injected_allocation_failure(std::size_t bytes, const char* what) {
  if (fault_slot(testing::Fault::allocation).tick()) {
    throw out_of_memory(concat(what, " of ", bytes, " bytes: injected allocation failure #",
                               fault_slot(testing::Fault::allocation).operations.load()));
  }
}

namespace {
void check_injected_copy_failure(std::size_t bytes, const char* what, StreamRef stream) {
  if (fault_slot(testing::Fault::copy).tick()) {
    throw cuda_error(concat(what, " of ", bytes, " bytes on stream ", stream.handle(),
                            ": injected copy failure #",
                            fault_slot(testing::Fault::copy).operations.load()),
                     -1);
  }
}
}  // namespace

Runtime& runtime() {
  // Never destroyed: streams, pools and arrays with static lifetime may outlive any destruction order.
  static Runtime* const instance = select_runtime();
  return *instance;
}

void Runtime::check_device(int device, const char* what) const {
  SMARTARRAY_EXPECTS(device >= 0 && device < device_count(), logic_error, what, ": device ",
                     device, " does not exist; the ", to_string(kind()), " backend has ",
                     device_count(), device_count() == 1 ? " device" : " devices",
                     kind() == BackendKind::host ? " (SMARTARRAY_HOST_DEVICES sets how many)" : "");
}

const DeviceProperties& Runtime::properties(int device) const {
  check_device(device, "device properties");
  return do_properties(device);
}

void Runtime::set_current_device(int device) {
  check_device(device, "set the current device");
  do_set_current_device(device);
}

bool Runtime::can_access_peer(int reader, int owner) {
  check_device(reader, "peer access");
  check_device(owner, "peer access");
  if (reader == owner) return true;
  return peer_access_enabled.load(std::memory_order_relaxed) && do_can_access_peer(reader, owner);
}

void* Runtime::allocate_device(std::size_t bytes, int device) {
  if (bytes == 0) return nullptr;
  check_device(device, "device allocation");
  check_injected_allocation_failure(bytes, "device allocation");
  void* ptr = do_allocate_device(bytes, device);
  global_counters().add_allocation(bytes);
  return ptr;
}
void Runtime::free_device(void* ptr, int device) noexcept {
  if (ptr != nullptr) do_free_device(ptr, device);
}
void* Runtime::allocate_pinned(std::size_t bytes, unsigned flags) {
  if (bytes == 0) return nullptr;
  check_injected_allocation_failure(bytes, "pinned host allocation");
  void* ptr = do_allocate_pinned(bytes, flags);
  global_counters().add_allocation(bytes);
  return ptr;
}
void Runtime::free_pinned(void* ptr) noexcept {
  if (ptr != nullptr) do_free_pinned(ptr);
}
void* Runtime::allocate_managed(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  check_injected_allocation_failure(bytes, "managed allocation");
  void* ptr = do_allocate_managed(bytes);
  global_counters().add_allocation(bytes);
  return ptr;
}
void Runtime::free_managed(void* ptr) noexcept {
  if (ptr != nullptr) do_free_managed(ptr);
}
void Runtime::register_host(void* ptr, std::size_t bytes, unsigned flags) {
  SMARTARRAY_EXPECTS(ptr != nullptr || bytes == 0, logic_error,
                     "register_host: null pointer with ", bytes, " bytes");
  if (bytes == 0) return;
  do_register_host(ptr, bytes, flags);
}
void Runtime::unregister_host(void* ptr) noexcept {
  if (ptr != nullptr) do_unregister_host(ptr);
}

void Runtime::copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                         StreamRef stream) {
  if (bytes == 0) return;
  SMARTARRAY_EXPECTS(dst != nullptr && src != nullptr, logic_error, copy_kind_name(kind),
                     " copy of ", bytes, " bytes with a null pointer (dst ", dst, ", src ", src,
                     ")");
  check_injected_copy_failure(bytes, copy_kind_name(kind), stream);
  do_copy_async(dst, src, bytes, kind, stream);
}

void Runtime::copy_peer_async(void* dst, int dst_device, const void* src, int src_device,
                              std::size_t bytes, StreamRef stream) {
  if (bytes == 0) return;
  SMARTARRAY_EXPECTS(dst != nullptr && src != nullptr, logic_error, "peer copy of ", bytes,
                     " bytes from device ", src_device, " to device ", dst_device,
                     " with a null pointer (dst ", dst, ", src ", src, ")");
  SMARTARRAY_EXPECTS(dst_device != src_device && can_access_peer(dst_device, src_device),
                     logic_error, "peer copy of ", bytes, " bytes from device ", src_device,
                     " to device ", dst_device, ": the devices cannot copy from each other");
  check_injected_copy_failure(bytes, copy_kind_name(CopyKind::peer), stream);
  do_copy_peer_async(dst, dst_device, src, src_device, bytes, stream);
}

bool Runtime::copy_to_device_now(std::span<const CopyRange> copies, StreamRef stream) {
  // SMARTARRAY_BATCHED_UPLOADS=0: small uploads take the asynchronous path with its event.
  // compute-sanitizer's initcheck (CUDA 13.0) does not see cudaMemcpyBatchAsync write its
  // destination and reports every read of those bytes; the sanitize phase of
  // scripts/gpu_check.sh sets it there.
  static const bool batched = [] {
    return environment_switch("SMARTARRAY_BATCHED_UPLOADS", true);
  }();
  // Batched copies read their sources at the call: a capture would record them, lose that, and
  // replay the copy of whatever the sources hold then.
  if (!batched || active_capture() != nullptr) return false;
  for (const CopyRange& copy : copies) {
    SMARTARRAY_EXPECTS(copy.dst != nullptr && copy.src != nullptr, logic_error,
                       copy_kind_name(CopyKind::host_to_device), " copy of ", copy.bytes,
                       " bytes with a null pointer (dst ", copy.dst, ", src ", copy.src, ")");
    check_injected_copy_failure(copy.bytes, copy_kind_name(CopyKind::host_to_device), stream);
  }
  return do_copy_to_device_now(copies, stream);
}

void Runtime::advise_read_mostly(const void* ptr, std::size_t bytes) {
  if (bytes == 0) return;
  do_advise_read_mostly(ptr, bytes);
}

void Runtime::prefetch_async(const void* ptr, std::size_t bytes, Location where,
                             StreamRef stream) {
  if (bytes == 0) return;
  check_injected_copy_failure(bytes, "managed prefetch", stream);
  do_prefetch_async(ptr, bytes, where, stream);
}

namespace {
/// The device of each stream that was asked about, so that a device acquire on several devices
/// asks the backend once per stream. Streams are dropped when forgotten or destroyed: a later
/// stream with the same handle may live on another device.
struct StreamDevices {
  std::mutex mutex;
  std::unordered_map<void*, int> devices;
};
StreamDevices& stream_devices() {
  static auto* known = new StreamDevices;  // outlives every stream
  return *known;
}
void forget_stream_device(StreamRef stream) noexcept {
  StreamDevices& known = stream_devices();
  std::lock_guard lock(known.mutex);
  known.devices.erase(stream.handle());
}

}  // namespace

namespace {
struct RetiredStreams {
  std::mutex mutex;
  // Each handle with the generation at which it last retired.
  std::unordered_map<void*, std::uint64_t> handles;
  std::atomic<std::uint64_t> generation{0};
  // The handles of streams that the library made and destroyed, until it makes one with the same
  // handle again.
  std::unordered_set<void*> destroyed;
  std::atomic<std::size_t> destroyed_count{0};
};
RetiredStreams& retired_streams() {
  static auto* retired = new RetiredStreams;  // outlives every stream holder
  return *retired;
}

/// Notes that the library made (`alive`) or destroyed `stream`.
void note_library_stream(StreamRef stream, bool alive) {
  auto& retired = retired_streams();
  std::lock_guard lock(retired.mutex);
  if (alive) {
    retired.destroyed.erase(stream.handle());
  } else {
    retired.destroyed.insert(stream.handle());
  }
  retired.destroyed_count.store(retired.destroyed.size(), std::memory_order_relaxed);
}
}  // namespace

StreamRef Runtime::create_stream(int device, StreamPriority priority) {
  check_device(device, "create a stream");
  SMARTARRAY_EXPECTS(priority == StreamPriority::normal || priority == StreamPriority::high,
                     logic_error, "create a stream on device ", device, ": StreamPriority ",
                     static_cast<int>(priority), " is not a priority (normal or high)");
  const StreamRef stream = do_create_stream(device, priority);
  note_library_stream(stream, true);
  if (device_count() > 1) {
    StreamDevices& known = stream_devices();
    std::lock_guard lock(known.mutex);
    known.devices[stream.handle()] = device;
  }
  return stream;
}

void Runtime::destroy_stream(StreamRef stream) noexcept {
  forget_stream_device(stream);
  do_destroy_stream(stream);
  try {
    note_library_stream(stream, false);
  } catch (const std::exception& error) {  // no memory for the note: the stream goes unchecked
    std::cerr << "smartarray: destroy_stream: " << error.what() << "\n";
  }
}

StreamPriority Runtime::stream_priority(StreamRef stream) {
  check_stream(stream);
  if (stream.is_default() || stream.default_of_device() >= 0) return StreamPriority::normal;
  return do_stream_priority(stream);
}

int Runtime::stream_device_of_several(StreamRef stream) {
  if (stream.is_default()) return current_device();
  if (const int device = stream.default_of_device(); device >= 0) {
    check_device(device, "the default stream of a device");
    return device;
  }
  StreamDevices& known = stream_devices();
  {
    std::lock_guard lock(known.mutex);
    const auto it = known.devices.find(stream.handle());
    if (it != known.devices.end()) return it->second;
  }
  check_stream(stream);  // the backend must not be asked about a destroyed stream
  const int device = do_stream_device(stream);
  std::lock_guard lock(known.mutex);
  known.devices[stream.handle()] = device;
  return device;
}

StreamRef Runtime::default_stream(int device) {
  check_device(device, "the default stream of a device");
  if (device_count() == 1) return StreamRef{};
  return StreamRef{reinterpret_cast<void*>(device_default_stream_base +
                                           static_cast<std::uintptr_t>(device))};
}

namespace {
/// Events are created once and recycled: creating one per acquire would cost microseconds.
class EventFreeList {
 public:
  EventHandle take() {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        EventHandle event = free_.back();
        free_.pop_back();
        return event;
      }
    }
    return runtime().create_event();
  }
  void give(EventHandle event) noexcept {
    std::lock_guard lock(mutex_);
    free_.push_back(event);
  }

 private:
  std::mutex mutex_;
  std::vector<EventHandle> free_;
};

EventFreeList& event_free_list() {
  static auto* list = new EventFreeList;  // outlives every user, like the runtime
  return *list;
}
}  // namespace

PooledEvent::PooledEvent() : event_(event_free_list().take()) {}
PooledEvent::~PooledEvent() {
  if (event_ != nullptr) event_free_list().give(event_);
}
PooledEvent& PooledEvent::operator=(PooledEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) event_free_list().give(event_);
    event_ = other.event_;
    other.event_ = nullptr;
  }
  return *this;
}


void retire_stream(StreamRef stream) {
  if (stream.is_default()) return;
  auto& retired = retired_streams();
  std::lock_guard lock(retired.mutex);
  retired.handles[stream.handle()] = retired.generation.fetch_add(1, std::memory_order_release) + 1;
}

void Runtime::check_stream(StreamRef stream) {
  if (stream.is_default()) return;
  if (const int device = stream.default_of_device(); device >= 0) {
    check_device(device, "the default stream of a device");
    return;
  }
  auto& retired = retired_streams();
  if (retired.destroyed_count.load(std::memory_order_relaxed) != 0) {
    std::lock_guard lock(retired.mutex);
    SMARTARRAY_EXPECTS(!retired.destroyed.contains(stream.handle()), logic_error, "stream ",
                       stream.handle(), " is not a live stream: it was destroyed");
  }
  do_check_stream(stream);
}

namespace {
struct ForgetSubscribers {
  std::mutex mutex;
  std::uint64_t next_id = 1;
  std::vector<std::pair<std::uint64_t, std::function<void(StreamRef)>>> subscribers;
};
ForgetSubscribers& forget_subscribers() {
  static auto* subscribers = new ForgetSubscribers;  // outlives every pool, leaked ones included
  return *subscribers;
}
}  // namespace

std::uint64_t subscribe_to_forgotten_streams(std::function<void(StreamRef)> on_forget) {
  ForgetSubscribers& all = forget_subscribers();
  std::lock_guard lock(all.mutex);
  const std::uint64_t id = all.next_id++;
  all.subscribers.emplace_back(id, std::move(on_forget));
  return id;
}

void unsubscribe_from_forgotten_streams(std::uint64_t id) noexcept {
  ForgetSubscribers& all = forget_subscribers();
  std::lock_guard lock(all.mutex);
  std::erase_if(all.subscribers, [id](const auto& entry) { return entry.first == id; });
}

void forget_drained_stream(StreamRef stream) noexcept {
  forget_stream_device(stream);
  {
    ForgetSubscribers& all = forget_subscribers();
    std::lock_guard lock(all.mutex);
    for (const auto& entry : all.subscribers) entry.second(stream);
  }
  retire_stream(stream);
}

bool stream_retired_since(StreamRef stream, std::uint64_t seen) {
  if (stream.is_default()) return false;
  auto& retired = retired_streams();
  std::lock_guard lock(retired.mutex);
  const auto it = retired.handles.find(stream.handle());
  return it != retired.handles.end() && it->second > seen;
}

std::uint64_t retired_stream_generation() noexcept {
  return retired_streams().generation.load(std::memory_order_acquire);
}

void stream_wait_stream(StreamRef waiter, StreamRef producer) {
  if (waiter == producer) return;
  PooledEvent event;
  runtime().record(event.get(), producer);
  runtime().stream_wait(waiter, event.get());
}

void host_wait_stream(StreamRef stream) {
  PooledEvent event;
  runtime().record(event.get(), stream);
  runtime().synchronize(event.get());
}

}  // namespace detail

namespace testing {
void inject_failure(Fault what, std::uint64_t nth) {
  detail::fault_slot(what).remaining.store(nth, std::memory_order_relaxed);
}
void clear_injected_failures() {
  inject_failure(Fault::allocation, 0);
  inject_failure(Fault::copy, 0);
}
std::uint64_t operation_count(Fault what) {
  return detail::fault_slot(what).operations.load(std::memory_order_relaxed);
}
bool failure_pending(Fault what) {
  return detail::fault_slot(what).remaining.load(std::memory_order_relaxed) != 0;
}
void set_peer_access_enabled(bool enabled) {
  detail::peer_access_enabled.store(enabled, std::memory_order_relaxed);
}
}  // namespace testing

const char* to_string(BackendKind kind) noexcept {
  return kind == BackendKind::cuda ? "cuda" : "host";
}
BackendKind backend() { return detail::runtime().kind(); }
const DeviceProperties& device_properties() { return detail::runtime().properties(); }
bool cuda_device_available() noexcept { return detail::cuda_runtime_has_device(); }

int device_count() { return detail::runtime().device_count(); }

TransferCounters& device_counters(int device) {
  detail::runtime().check_device(device, "device_transfer_stats");
  return detail::device_counters_unchecked(device);
}
TransferStats device_transfer_stats(int device) { return device_counters(device).snapshot(); }
Device current_device() { return Device{detail::runtime().current_device()}; }
void set_current_device(Device device) { detail::runtime().set_current_device(device.ordinal); }
bool peer_access(Device reader, Device owner) {
  return detail::runtime().can_access_peer(reader.ordinal, owner.ordinal);
}
const DeviceProperties& device_properties(Device device) {
  return detail::runtime().properties(device.ordinal);
}

DeviceGuard::DeviceGuard(Device device) {
  detail::Runtime& rt = detail::runtime();
  if (rt.device_count() == 1) {
    rt.check_device(device.ordinal, "DeviceGuard");
    return;
  }
  const int previous = rt.current_device();
  if (previous == device.ordinal) return;
  rt.set_current_device(device.ordinal);
  previous_ = previous;
}
DeviceGuard::~DeviceGuard() {
  if (previous_ < 0) return;
  try {
    detail::runtime().set_current_device(previous_);
  } catch (const std::exception& error) {
    std::cerr << "smartarray: DeviceGuard could not make device " << previous_
              << " current again: " << error.what() << "\n";
  }
}

const char* to_string(StreamPriority priority) noexcept {
  switch (priority) {
    case StreamPriority::normal: return "normal";
    case StreamPriority::high: return "high";
  }
  return "unknown";
}
StreamPriority stream_priority(StreamRef stream) {
  return detail::runtime().stream_priority(stream);
}

StreamRef default_stream(Device device) { return detail::runtime().default_stream(device.ordinal); }
Device stream_device(StreamRef stream) { return Device{detail::runtime().stream_device(stream)}; }

Stream::Stream() : ref_(detail::runtime().create_stream()) {}
Stream::Stream(Device device) : ref_(detail::runtime().create_stream(device.ordinal)) {}
Stream::Stream(Device device, StreamPriority priority)
    : ref_(detail::runtime().create_stream(device.ordinal, priority)) {}
Device Stream::device() const { return stream_device(ref_); }
StreamPriority Stream::priority() const { return stream_priority(ref_); }
namespace detail {
void release_stream(StreamRef stream) noexcept {
  if (stream.is_default() || keep_stream_until_capture_ends(stream)) return;
  try {
    runtime().synchronize(stream);
  } catch (const std::exception& error) {
    std::cerr << "smartarray: draining stream " << stream.handle() << " failed: " << error.what()
              << "\n";
  }
  forget_drained_stream(stream);
  runtime().destroy_stream(stream);
}
}  // namespace detail

void forget_stream(StreamRef stream) {
  if (stream.is_default()) return;
  detail::runtime().synchronize(stream);
  detail::forget_drained_stream(stream);
}

Stream::~Stream() { detail::release_stream(ref_); }
Stream::Stream(Stream&& other) noexcept : ref_(other.ref_) { other.ref_ = StreamRef{}; }
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    detail::release_stream(ref_);
    ref_ = other.ref_;
    other.ref_ = StreamRef{};
  }
  return *this;
}
void Stream::synchronize() const { detail::runtime().synchronize(ref_); }
bool Stream::query() const { return detail::runtime().query(ref_); }

void synchronize(StreamRef stream) { detail::runtime().synchronize(stream); }
void synchronize_device() { detail::runtime().synchronize_device(); }

AutoSynchronize::~AutoSynchronize() {
  try {
    detail::runtime().synchronize(stream_);
  } catch (const std::exception& error) {
    std::cerr << "smartarray: AutoSynchronize of stream " << stream_.handle()
              << " failed: " << error.what() << "\n";
  }
}

}  // namespace smartarray
