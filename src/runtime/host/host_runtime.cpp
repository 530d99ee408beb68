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
#include "runtime/host/host_runtime.hpp"

#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/config.hpp>
#include "detail/environment.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

namespace smartarray::detail {
namespace {

/// The emulated device size when SMARTARRAY_HOST_DEVICE_MEMORY is not set.
constexpr std::size_t default_device_memory = std::size_t{16} << 30;

/// The longest emulated latency of a queued operation (10 s): longer would look like a hang.
constexpr std::uint64_t max_latency_us = 10'000'000;
/// The largest emulated device (1 PiB): its size is only a budget, never allocated at once.
constexpr std::uint64_t max_device_memory = std::uint64_t{1} << 50;

/// The calling thread's current device (as the CUDA runtime keeps one per thread).
thread_local int current_device_of_thread = 0;

}  // namespace

// The settings are read here rather than once per process, so that a test can make a runtime
// with its own latency, capacity or devices.
HostRuntime::HostRuntime()
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
HostRuntime::~HostRuntime() {
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

int HostRuntime::current_device() const { return current_device_of_thread; }

void HostRuntime::do_set_current_device(int device) { current_device_of_thread = device; }

Runtime* make_host_runtime() { return new HostRuntime(); }

}  // namespace smartarray::detail
