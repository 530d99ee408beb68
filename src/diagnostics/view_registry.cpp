#include <smartarray/diagnostics/detail/view_registry.hpp>
#include <smartarray/error.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

namespace smartarray::detail {
namespace {

struct Slot {
  std::atomic<std::uint64_t> generation{1};
  std::atomic<ViewChange> last_change{ViewChange::none};
  /// The array's number in messages (ArrayCore::id): unique over the process, unlike the slot.
  std::atomic<std::uint64_t> array_number{0};
  /// The generation at which the current array took the slot: older views are of an earlier,
  /// destroyed array.
  std::atomic<std::uint64_t> first_generation{0};
};

/// Slots in chunks that are never freed, so that a view of a destroyed array can still be read.
constexpr std::size_t chunk_slots = 4096;
constexpr std::size_t max_chunks = 16384;

struct Registry {
  std::array<std::atomic<Slot*>, max_chunks> chunks{};
  std::mutex mutex;
  std::deque<std::uint32_t> free_slots;
  std::uint32_t next_slot = 1;
};

Registry& registry() {
  static Registry* const instance = new Registry();  // outlives every array, even static ones
  return *instance;
}

Slot& slot_at(std::uint32_t slot) noexcept {
  return registry().chunks[slot / chunk_slots].load(std::memory_order_acquire)[slot % chunk_slots];
}

const char* to_words(ViewChange why) noexcept {
  switch (why) {
    case ViewChange::resized: return "resized";
    case ViewChange::reallocated: return "given a new device buffer (reallocation or eviction)";
    case ViewChange::host_write: return "acquired for writing on the host (the device copy is stale)";
    case ViewChange::destroyed: return "destroyed";
    case ViewChange::none: break;
  }
  return "changed";
}

}  // namespace

std::uint32_t acquire_view_slot(std::uint64_t array_id) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::uint32_t slot = 0;
  if (!r.free_slots.empty()) {
    slot = r.free_slots.front();
    r.free_slots.pop_front();
  } else {
    SMARTARRAY_EXPECTS(r.next_slot < chunk_slots * max_chunks, out_of_memory,
                       "device view tracking: more than ", chunk_slots * max_chunks,
                       " arrays with device views alive at once");
    slot = r.next_slot++;
    auto& chunk = r.chunks[slot / chunk_slots];
    if (chunk.load(std::memory_order_relaxed) == nullptr) {
      chunk.store(new Slot[chunk_slots], std::memory_order_release);
    }
  }
  Slot& s = slot_at(slot);
  s.first_generation.store(s.generation.fetch_add(1, std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
  s.last_change.store(ViewChange::none, std::memory_order_relaxed);
  s.array_number.store(array_id, std::memory_order_relaxed);
  return slot;
}

void release_view_slot(std::uint32_t slot) noexcept {
  note_view_change(slot, ViewChange::destroyed);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.free_slots.push_back(slot);
}

ViewStamp view_stamp(std::uint32_t slot) noexcept {
  if (slot == 0) return {};
  return {slot, slot_at(slot).generation.load(std::memory_order_relaxed)};
}

void note_view_change(std::uint32_t slot, ViewChange why) noexcept {
  Slot& s = slot_at(slot);
  s.last_change.store(why, std::memory_order_relaxed);
  s.generation.fetch_add(1, std::memory_order_release);
}

void check_view(const ViewStamp& stamp, std::size_t elements, const char* operation) {
  if (stamp.slot == 0) return;
  const Slot& s = slot_at(stamp.slot);
  if (s.generation.load(std::memory_order_acquire) == stamp.generation) return;
  const bool reused = stamp.generation < s.first_generation.load(std::memory_order_relaxed);
  const ViewChange why = reused ? ViewChange::destroyed : s.last_change.load(std::memory_order_relaxed);
  const std::string array =
      reused ? std::string("a SmartArray") : concat("SmartArray #", s.array_number.load(std::memory_order_relaxed));
  throw logic_error(concat("DeviceView of ", array, " (", elements, " elements when the view was made) used by ", operation,
                           " after the array was ", to_words(why),
                           "; take a new view with device_view()"));
}

}  // namespace smartarray::detail
