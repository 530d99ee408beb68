// The host backend: emulated devices for machines without a GPU.
//
// "Device" memory is a separate host allocation (never an alias of host memory), filled with a
// poison pattern when it is made and when it is freed. Each stream is an in-order queue served by
// its own worker thread (host/host_stream.hpp), and every queued operation first sleeps for
// SMARTARRAY_HOST_LATENCY_US, so that a missing wait in library code shows up as wrong data.
// Copies and prefetches check the memory they are given, which catches mixed-up directions and
// overruns of device buffers at the call site.
//
// SMARTARRAY_HOST_DEVICES (default 1) devices are emulated, each with its own memory (of
// SMARTARRAY_HOST_DEVICE_MEMORY bytes), default stream and streams. A copy into or out of device
// memory must run on a stream of that device, and a peer copy between two devices needs peer
// access (SMARTARRAY_HOST_PEER_ACCESS, default 1), so that library code that mixes up devices fails
// here as it would, or would run slowly, on GPUs.
#include "runtime/host/allocation_table.hpp"
#include "runtime/host/host_stream.hpp"
#include "runtime/host_memory.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include <smartarray/config.hpp>
#include <smartarray/detail/environment.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace smartarray::detail {
namespace {

/// Written over fresh allocations, so that reading memory nobody wrote gives a recognizable value.
constexpr unsigned char fresh_poison = 0xCD;
/// Written over freed allocations, so that a late access through a stale pointer is recognizable.
constexpr unsigned char freed_poison = 0xDD;
/// The emulated device size when SMARTARRAY_HOST_DEVICE_MEMORY is not set.
constexpr std::size_t default_device_memory = std::size_t{16} << 30;

/// The longest emulated latency of a queued operation (10 s): longer would look like a hang.
constexpr std::uint64_t max_latency_us = 10'000'000;
/// The largest emulated device (1 PiB): its size is only a budget, never allocated at once.
constexpr std::uint64_t max_device_memory = std::uint64_t{1} << 50;

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

/// The calling thread's current device (as the CUDA runtime keeps one per thread).
thread_local int current_device_of_thread = 0;

/// A position in a stream's queue: done once `stream` has run its first `ticket` tasks.
struct Marker {
  std::shared_ptr<HostStream> stream;  // null: never recorded, so already complete
  std::uint64_t ticket = 0;
};

/// An event: the marker of its latest record.
class HostEvent {
 public:
  void set(Marker marker) {
    std::lock_guard lock(mutex_);
    marker_ = std::move(marker);
  }
  [[nodiscard]] Marker get() const {
    std::lock_guard lock(mutex_);
    return marker_;
  }

 private:
  mutable std::mutex mutex_;
  Marker marker_;
};

class HostRuntime final : public Runtime {
 public:
  // The settings are read here rather than once per process, so that a test can make a runtime
  // with its own latency, capacity or devices.
  HostRuntime()
      : latency_(environment_number("SMARTARRAY_HOST_LATENCY_US", 0, max_latency_us).value_or(0)),
        capacity_(environment_number("SMARTARRAY_HOST_DEVICE_MEMORY", 1, max_device_memory,
                                     EnvUnit::bytes)
                      .value_or(default_device_memory)),
        devices_(static_cast<int>(
            environment_number("SMARTARRAY_HOST_DEVICES", 1, max_devices).value_or(1))),
        peer_access_(environment_switch("SMARTARRAY_HOST_PEER_ACCESS", true)) {
    set_device_count(devices_);
    for (int device = 0; device < devices_; ++device) {
      DeviceProperties& properties = properties_[static_cast<std::size_t>(device)];
      properties.name = devices_ == 1
                            ? std::string("emulated host device (smartarray host backend)")
                            : concat("emulated host device ", device, " (smartarray host backend)");
      properties.ordinal = device;
      properties.multiprocessor_count =
          static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
      properties.compute_capability_major = 0;
      properties.compute_capability_minor = 0;
      properties.total_memory = capacity_;
      properties.can_map_host_memory = true;
      properties.managed_memory = true;
      properties.concurrent_managed_access = true;
    }
  }

  // The process-wide runtime is never destroyed; this runs only for runtimes that tests make.
  ~HostRuntime() override {
    for (const auto& stream : take_all_streams()) stream->stop_and_join();
    std::size_t count = 0;
    std::size_t bytes = 0;
    std::vector<AllocationTable*> tables{&pinned_, &managed_};
    for (int device = 0; device < devices_; ++device) tables.push_back(&device_table(device));
    for (AllocationTable* table : tables) {
      for (const HostRange& range : table->take_all()) {
        ++count;
        bytes += range.bytes;
        release(range);
      }
    }
    if (count != 0) {
      std::cerr << "smartarray: host backend destroyed with " << count << " live allocations ("
                << bytes << " bytes); releasing them\n";
    }
  }
  HostRuntime(const HostRuntime&) = delete;
  HostRuntime& operator=(const HostRuntime&) = delete;

  [[nodiscard]] BackendKind kind() const noexcept override { return BackendKind::host; }
  [[nodiscard]] int current_device() const override { return current_device_of_thread; }

  void memory_info(int device, std::size_t& free_bytes, std::size_t& total_bytes) override {
    check_device(device, "device memory information");
    total_bytes = capacity_;
    free_bytes = capacity_ - in_use(device).load(std::memory_order_relaxed);
  }

  [[nodiscard]] void* mapped_device_pointer(void* host_ptr) override {
    // The emulated device sees host memory at its host address.
    if (is_mapped(host_ptr, 1)) return host_ptr;
    throw logic_error(concat("mapped_device_pointer: host memory at ", host_ptr,
                             " is not inside a mapped pinned allocation or a mapped registration"));
  }

  void launch_host_func(StreamRef stream, std::function<void()> fn) override {
    std::shared_ptr<HostStream> queue = stream_for(stream);
    SMARTARRAY_EXPECTS(fn != nullptr, logic_error, "launch_host_func on ", queue->name(),
                       ": the function is empty");
    queue->enqueue(std::move(fn));
  }

  [[nodiscard]] StreamRef do_create_stream(int device) override {
    std::shared_ptr<HostStream> stream = make_stream(false, device);
    std::lock_guard lock(streams_mutex_);
    streams_.emplace(stream.get(), stream);
    return StreamRef{stream.get()};
  }

  void do_check_stream(StreamRef stream) override { (void)stream_for(stream); }

  void do_destroy_stream(StreamRef stream) noexcept override {
    if (stream.is_default() || stream.default_of_device() >= 0) {
      std::cerr << "smartarray: destroy_stream: the default stream cannot be destroyed\n";
      return;
    }
    std::shared_ptr<HostStream> queue;
    {
      std::lock_guard lock(streams_mutex_);
      const auto it = streams_.find(stream.handle());
      if (it == streams_.end()) {
        std::cerr << "smartarray: destroy_stream: " << stream.handle()
                  << " is not a live stream of the host backend\n";
        return;
      }
      queue = std::move(it->second);
      streams_.erase(it);
    }
    // Events recorded on the stream may keep its queue object alive; its worker ends here.
    queue->stop_and_join();
    if (std::optional<std::string> error = queue->take_error()) {
      std::cerr << "smartarray: destroy_stream: " << *error
                << " (never reported by a synchronize)\n";
    }
  }

  [[nodiscard]] bool query(StreamRef stream) override { return stream_for(stream)->idle(); }

  [[nodiscard]] int do_stream_device(StreamRef stream) override {
    return stream_for(stream)->device();
  }

  [[nodiscard]] EventHandle create_event() override {
    auto event = std::make_unique<HostEvent>();
    EventHandle handle = event.get();
    std::lock_guard lock(events_mutex_);
    events_.emplace(handle, std::move(event));
    return handle;
  }

  void destroy_event(EventHandle event) noexcept override {
    std::unique_ptr<HostEvent> owned;  // destroyed after the lock is released
    {
      std::lock_guard lock(events_mutex_);
      const auto it = events_.find(event);
      if (it == events_.end()) {
        std::cerr << "smartarray: destroy_event: " << event
                  << " is not a live event of the host backend\n";
        return;
      }
      owned = std::move(it->second);
      events_.erase(it);
    }
  }

  void record(EventHandle event, StreamRef stream) override {
    std::shared_ptr<HostStream> queue = stream_for(stream);
    HostEvent& target = event_for(event);
    const std::uint64_t ticket = queue->tail();
    target.set(Marker{std::move(queue), ticket});
  }

  void stream_wait(StreamRef stream, EventHandle event) override {
    std::shared_ptr<HostStream> waiter = stream_for(stream);
    Marker marker = event_for(event).get();
    if (marker.stream == nullptr) return;  // never recorded: nothing to wait for
    waiter->enqueue([marker = std::move(marker)] { marker.stream->wait_for(marker.ticket); });
  }

  [[nodiscard]] bool query(EventHandle event) override {
    const Marker marker = event_for(event).get();
    return marker.stream == nullptr || marker.stream->reached(marker.ticket);
  }

 protected:
  void do_set_current_device(int device) override { current_device_of_thread = device; }
  bool do_can_access_peer(int, int) override { return peer_access_; }
  [[nodiscard]] const DeviceProperties& do_properties(int device) const noexcept override {
    return properties_[static_cast<std::size_t>(device)];
  }

  void* do_allocate_device(std::size_t bytes, int device) override {
    return allocate_counted(device_table(device), device, bytes,
                            device_count() == 1 ? std::string("allocate device memory")
                                                : concat("allocate memory of device ", device));
  }
  void do_free_device(void* ptr, int device) noexcept override {
    free_counted(device_table(device), device, ptr, "free_device");
  }

  void* do_allocate_pinned(std::size_t bytes, unsigned flags) override {
    return allocate(pinned_, bytes, flags, "allocate pinned host memory");
  }
  void do_free_pinned(void* ptr) noexcept override {
    if (std::optional<HostRange> range = forget(pinned_, ptr, "free_pinned")) release(*range);
  }

  // Managed memory is host memory here, but it counts against the emulated device's capacity:
  // that keeps "never ask for more managed memory than the device has free" observable.
  // It counts against device 0, the device that the one-buffer modes prefetch to.
  void* do_allocate_managed(std::size_t bytes) override {
    return allocate_counted(managed_, 0, bytes, "allocate managed memory");
  }
  void do_free_managed(void* ptr) noexcept override {
    free_counted(managed_, 0, ptr, "free_managed");
  }

  void do_register_host(void* ptr, std::size_t bytes, unsigned flags) override {
    std::vector<std::pair<const AllocationTable*, const char*>> owned_kinds{
        {&managed_, "managed"}, {&pinned_, "pinned"}};
    for (int device = 0; device < devices_; ++device) {
      owned_kinds.emplace_back(&device_table(device), "device");
    }
    for (const auto& [table, kind_name] : owned_kinds) {
      if (std::optional<HostRange> owner = table->find_overlapping(ptr, bytes)) {
        throw logic_error(concat("register_host: host memory at ", ptr, " (", bytes,
                                 " bytes) overlaps the ", kind_name, " allocation at ",
                                 owner->ptr, " (", owner->bytes, " bytes)"));
      }
    }
    if (std::optional<HostRange> other = registered_.insert_if_disjoint({ptr, bytes, flags})) {
      throw logic_error(concat("register_host: host memory at ", ptr, " (", bytes,
                               " bytes) is already registered (as part of ", other->ptr, ", ",
                               other->bytes, " bytes)"));
    }
  }

  void do_unregister_host(void* ptr) noexcept override {
    if (!registered_.erase(ptr)) {
      std::cerr << "smartarray: unregister_host: no registration starts at " << ptr << "\n";
    }
  }

  void do_copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind,
                     StreamRef stream) override {
    if (bytes == 0) return;
    std::shared_ptr<HostStream> queue = stream_for(stream);
    check_copy(dst, src, bytes, kind, *queue);
    queue->enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  }

  void do_copy_peer_async(void* dst, int dst_device, const void* src, int src_device,
                          std::size_t bytes, StreamRef stream) override {
    std::shared_ptr<HostStream> queue = stream_for(stream);
    const auto on = [&](const void* ptr, int device, const char* role) {
      SMARTARRAY_EXPECTS(device_table(device).find_containing(ptr, bytes).has_value(), logic_error,
                         "peer copy of ", bytes, " bytes on ", queue->name(), ": the ", role,
                         " at ", ptr, " is not inside one allocation of device ", device);
    };
    on(dst, dst_device, "destination");
    on(src, src_device, "source");
    SMARTARRAY_EXPECTS(queue->device() == dst_device || queue->device() == src_device, logic_error,
                       "peer copy of ", bytes, " bytes from device ", src_device, " to device ",
                       dst_device, " on ", queue->name(), ", which is neither's");
    queue->enqueue([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  }

  bool do_copy_to_device_now(std::span<const CopyRange> copies, StreamRef stream) override {
    std::shared_ptr<HostStream> queue = stream_for(stream);
    std::size_t total = 0;
    for (const CopyRange& copy : copies) {
      check_copy(copy.dst, copy.src, copy.bytes, CopyKind::host_to_device, *queue);
      total += copy.bytes;
    }
    // The sources are read now, as the driver reads them during the call; the destinations are
    // written in stream order.
    std::vector<std::byte> read(total);
    std::vector<std::pair<void*, std::size_t>> targets;
    targets.reserve(copies.size());
    std::size_t offset = 0;
    for (const CopyRange& copy : copies) {
      std::memcpy(read.data() + offset, copy.src, copy.bytes);
      targets.emplace_back(copy.dst, copy.bytes);
      offset += copy.bytes;
    }
    queue->enqueue([read = std::move(read), targets = std::move(targets)] {
      std::size_t from = 0;
      for (const auto& [dst, bytes] : targets) {
        std::memcpy(dst, read.data() + from, bytes);
        from += bytes;
      }
    });
    return true;
  }

  void do_advise_read_mostly(const void* ptr, std::size_t bytes) override {
    // One memory serves both sides here: the advice changes nothing but is checked as CUDA would.
    SMARTARRAY_EXPECTS(managed_.find_containing(ptr, bytes).has_value(), logic_error,
                       "read-mostly advice for ", bytes, " bytes at ", ptr,
                       ": the range is not inside one managed allocation");
  }
  void do_prefetch_async(const void* ptr, std::size_t bytes, Location where,
                         StreamRef stream) override {
    if (bytes == 0) return;
    std::shared_ptr<HostStream> queue = stream_for(stream);
    SMARTARRAY_EXPECTS(managed_.find_containing(ptr, bytes).has_value(), logic_error,
                       "prefetch of ", bytes, " bytes at ", ptr, " to the ",
                       where == Location::host ? "host" : "device", " on ", queue->name(),
                       ": the range is not inside one managed allocation");
    // Managed memory already is host memory; the task only keeps the stream's timing honest.
    queue->enqueue([] {});
  }

  void do_synchronize(StreamRef stream) override {
    std::shared_ptr<HostStream> queue = stream_for(stream);
    block_until(*queue, queue->tail(), "synchronize");
    report_error(*queue);
  }

  void do_synchronize_device() override {
    std::vector<std::shared_ptr<HostStream>> queues = all_streams();
    std::erase_if(queues, [device = current_device()](const std::shared_ptr<HostStream>& queue) {
      return queue->device() != device;
    });
    for (const auto& queue : queues) block_until(*queue, queue->tail(), "synchronize_device");
    for (const auto& queue : queues) report_error(*queue);
  }

  void do_synchronize(EventHandle event) override {
    const Marker marker = event_for(event).get();
    if (marker.stream == nullptr) return;
    block_until(*marker.stream, marker.ticket, "synchronize an event");
    report_error(*marker.stream);
  }

 private:
  std::shared_ptr<HostStream> make_stream(bool is_default, int device) {
    try {
      return std::make_shared<HostStream>(is_default, device, devices_ > 1, latency_);
    } catch (const std::system_error& error) {
      throw cuda_error(concat("create a stream: cannot start its worker thread: ", error.what()),
                       -1);
    }
  }

  /// The queue behind `stream`, creating a device's default stream on first use.
  /// @throws logic_error for a handle that is not a live stream of this runtime.
  std::shared_ptr<HostStream> stream_for(StreamRef stream) {
    const int default_of = stream.is_default() ? current_device() : stream.default_of_device();
    std::lock_guard lock(streams_mutex_);
    if (default_of >= 0) {
      SMARTARRAY_EXPECTS(default_of < devices_, logic_error, "the default stream of device ",
                         default_of, ": the host backend has ", devices_, " devices");
      std::shared_ptr<HostStream>& queue = default_streams_[static_cast<std::size_t>(default_of)];
      if (queue == nullptr) queue = make_stream(true, default_of);
      return queue;
    }
    const auto it = streams_.find(stream.handle());
    SMARTARRAY_EXPECTS(it != streams_.end(), logic_error, "stream ", stream.handle(),
                       " is not a live stream of the host backend (destroyed, or made by "
                       "another backend)");
    return it->second;
  }

  std::vector<std::shared_ptr<HostStream>> all_streams() {
    std::lock_guard lock(streams_mutex_);
    std::vector<std::shared_ptr<HostStream>> queues;
    queues.reserve(streams_.size() + default_streams_.size());
    for (const auto& queue : default_streams_) {
      if (queue != nullptr) queues.push_back(queue);
    }
    for (const auto& entry : streams_) queues.push_back(entry.second);
    return queues;
  }

  std::vector<std::shared_ptr<HostStream>> take_all_streams() {
    std::vector<std::shared_ptr<HostStream>> queues = all_streams();
    std::lock_guard lock(streams_mutex_);
    streams_.clear();
    for (auto& queue : default_streams_) queue.reset();
    return queues;
  }

  /// @throws logic_error for a handle that is not a live event of this runtime.
  HostEvent& event_for(EventHandle event) {
    std::lock_guard lock(events_mutex_);
    const auto it = events_.find(event);
    SMARTARRAY_EXPECTS(it != events_.end(), logic_error, "event ", event,
                       " is not a live event of the host backend (destroyed, or made by another "
                       "backend)");
    return *it->second;
  }

  /// Blocks the calling thread until `stream` reaches `ticket`.
  /// @throws logic_error when called from a host function that the wait itself would wait for.
  static void block_until(HostStream& stream, std::uint64_t ticket, const char* what) {
    SMARTARRAY_EXPECTS(HostStream::current() != &stream || stream.reached(ticket), logic_error,
                       what, " from a host function running on ", stream.name(),
                       " would wait for itself");
    stream.wait_for(ticket);
  }

  /// Throws the first failure of a host function on `stream` since the last report.
  static void report_error(HostStream& stream) {
    if (std::optional<std::string> error = stream.take_error()) throw cuda_error(*error, -1);
  }

  /// Waits for all queued work, as cudaFree does, so that no queued copy touches freed memory.
  void wait_for_queued_work() noexcept {
    // A host function must not call the runtime (as in CUDA); if it frees memory anyway, waiting
    // for its own stream would deadlock.
    if (HostStream::current() != nullptr) return;
    for (const auto& queue : all_streams()) queue->wait_for(queue->tail());
  }

  static void* allocate(AllocationTable& table, std::size_t bytes, unsigned flags,
                        const char* what) {
    // Pinned memory is resident: like cudaHostAlloc, refuse more than the host's physical memory
    // (which overcommit would grant, and then kill the process while poisoning it).
    const std::size_t physical = host_memory_bytes(false);
    if (bytes > physical) {
      throw out_of_memory(concat(what, " of ", bytes, " bytes: the host has ", physical,
                                 " bytes of physical memory"));
    }
    void* ptr = ::operator new(bytes, std::align_val_t{default_alignment}, std::nothrow);
    if (ptr == nullptr) {
      throw out_of_memory(concat(what, " of ", bytes, " bytes: the host is out of memory"));
    }
    std::memset(ptr, fresh_poison, bytes);
    table.insert({ptr, bytes, flags});
    return ptr;
  }

  /// An allocation that counts against the capacity of emulated `device` (device and managed).
  void* allocate_counted(AllocationTable& table, int device, std::size_t bytes,
                         const std::string& what) {
    std::atomic<std::size_t>& used_bytes = in_use(device);
    std::size_t used = used_bytes.load(std::memory_order_relaxed);
    do {
      if (bytes > capacity_ - used) {
        throw out_of_memory(concat(what, " of ", bytes, " bytes: the emulated device",
                                   devices_ > 1 ? concat(" ", device) : std::string(), " has ",
                                   used, " of ", capacity_,
                                   " bytes in use (SMARTARRAY_HOST_DEVICE_MEMORY sets its size)"));
      }
    } while (!used_bytes.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    try {
      return allocate(table, bytes, pinned_default, what.c_str());
    } catch (...) {
      used_bytes.fetch_sub(bytes, std::memory_order_relaxed);
      throw;
    }
  }

  void free_counted(AllocationTable& table, int device, void* ptr, const char* what) noexcept {
    if (std::optional<HostRange> range = forget(table, ptr, what)) {
      release(*range);
      in_use(device).fetch_sub(range->bytes, std::memory_order_relaxed);
    }
  }

  [[nodiscard]] AllocationTable& device_table(int device) noexcept {
    return device_[static_cast<std::size_t>(device)];
  }
  [[nodiscard]] const AllocationTable& device_table(int device) const noexcept {
    return device_[static_cast<std::size_t>(device)];
  }
  [[nodiscard]] std::atomic<std::size_t>& in_use(int device) noexcept {
    return device_in_use_[static_cast<std::size_t>(device)];
  }

  /// Removes `ptr` from `table` once no queued work can touch it; reports an unknown pointer.
  std::optional<HostRange> forget(AllocationTable& table, void* ptr, const char* what) noexcept {
    wait_for_queued_work();
    std::optional<HostRange> range = table.erase(ptr);
    if (!range) {
      std::cerr << "smartarray: " << what << ": " << ptr
                << " is not a live allocation of that kind (freed twice, or by the wrong "
                   "function)\n";
    }
    return range;
  }

  static void release(const HostRange& range) noexcept {
    std::memset(range.ptr, freed_poison, range.bytes);
    ::operator delete(range.ptr, std::align_val_t{default_alignment});
  }

  /// True when `[ptr, ptr + bytes)` lies in mapped pinned memory (allocated or registered).
  bool is_mapped(const void* ptr, std::size_t bytes) const {
    for (const AllocationTable* table : {&pinned_, &registered_}) {
      const std::optional<HostRange> range = table->find_containing(ptr, bytes);
      if (range && (range->flags & pinned_mapped) != 0) return true;
    }
    return false;
  }

  /// True when `device` may touch `[ptr, ptr + bytes)`: its own memory, managed or mapped memory.
  bool device_accessible(const void* ptr, std::size_t bytes, int device) const {
    return device_table(device).find_containing(ptr, bytes) ||
           managed_.find_containing(ptr, bytes) || is_mapped(ptr, bytes);
  }

  /// True when `[ptr, ptr + bytes)` overlaps memory of any device.
  bool overlaps_device_memory(const void* ptr, std::size_t bytes) const {
    for (int device = 0; device < devices_; ++device) {
      if (device_table(device).find_overlapping(ptr, bytes)) return true;
    }
    return false;
  }

  /// Checks each side of a copy against its direction, so that a swapped pointer or an overrun
  /// of a device buffer fails at the call site instead of corrupting memory later.
  void check_copy(const void* dst, const void* src, std::size_t bytes, CopyKind kind,
                  const HostStream& queue) const {
    const bool device_dst = kind == CopyKind::host_to_device || kind == CopyKind::device_to_device;
    const bool device_src = kind == CopyKind::device_to_host || kind == CopyKind::device_to_device;
    const auto check_side = [&](const void* ptr, bool device_side, const char* role) {
      if (device_side) {
        SMARTARRAY_EXPECTS(device_accessible(ptr, bytes, queue.device()), logic_error,
                           copy_kind_name(kind), " copy of ", bytes, " bytes on ", queue.name(),
                           ": the ", role, " at ", ptr, " is not inside one ",
                           devices_ > 1 ? concat("allocation of device ", queue.device())
                                        : std::string("device"),
                           ", managed or mapped allocation");
      } else {
        SMARTARRAY_EXPECTS(!overlaps_device_memory(ptr, bytes), logic_error,
                           copy_kind_name(kind), " copy of ", bytes, " bytes on ", queue.name(),
                           ": the ", role, " at ", ptr,
                           " is device memory, but this direction expects host memory");
      }
    };
    check_side(dst, device_dst, "destination");
    check_side(src, device_src, "source");
    const auto d = reinterpret_cast<std::uintptr_t>(dst);
    const auto s = reinterpret_cast<std::uintptr_t>(src);
    SMARTARRAY_EXPECTS(d + bytes <= s || s + bytes <= d, logic_error, copy_kind_name(kind),
                       " copy of ", bytes, " bytes on ", queue.name(), ": source ", src,
                       " and destination ", dst, " overlap");
  }

  const std::chrono::microseconds latency_;
  const std::size_t capacity_;
  const int devices_;
  const bool peer_access_;
  std::array<DeviceProperties, max_devices> properties_;
  // Each device's bytes in use (managed memory counts on device 0), against capacity_.
  std::array<std::atomic<std::size_t>, max_devices> device_in_use_{};

  std::array<AllocationTable, max_devices> device_;
  AllocationTable pinned_;
  AllocationTable managed_;
  AllocationTable registered_;

  std::mutex streams_mutex_;
  std::array<std::shared_ptr<HostStream>, max_devices> default_streams_;  // made on first use
  std::unordered_map<const void*, std::shared_ptr<HostStream>> streams_;

  std::mutex events_mutex_;
  std::unordered_map<const void*, std::unique_ptr<HostEvent>> events_;
};

}  // namespace

Runtime* make_host_runtime() { return new HostRuntime(); }

}  // namespace smartarray::detail
