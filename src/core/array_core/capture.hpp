/**
 * @file core/array_core/capture.hpp
 * @brief Private: what a capture learns about each array it touches, and what a graph keeps of it
 * to replay with exact residency (the graph layer, graph/capture.hpp, drives both).
 *
 * Inside a capture a device acquire copies nothing and changes no validity. It records instead:
 * - the bytes the graph reads on the capture's device before writing them there (the graph's
 *   precondition: they must be valid on that device before each replay);
 * - the bytes it writes there (its postcondition: after a replay only that device holds them);
 * - the device buffer it binds, and the size.
 *
 * The array's stream-order tracker of that device is set aside at the first touch, so that work
 * inside the capture orders only after other captured work (a graph may not wait for work
 * outside it), and put back when the capture ends. A launch orders the graph after the array's
 * pending work through the ordinary acquires.
 */
#pragma once

#include <smartarray/core/detail/run_list.hpp>
#include <smartarray/core/detail/stream_order.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace smartarray::detail {

class ArrayCore;

/// Ranges of bytes, disjoint and sorted, merged when they touch.
class RangeSet {
 public:
  void add(ByteRange range);
  /// The parts of `range` that no range of the set covers, in order.
  [[nodiscard]] std::vector<ByteRange> uncovered(ByteRange range) const;
  [[nodiscard]] const std::vector<ByteRange>& ranges() const noexcept { return ranges_; }
  [[nodiscard]] bool empty() const noexcept { return ranges_.empty(); }
  /// The bytes the set covers.
  [[nodiscard]] std::size_t bytes() const noexcept;

 private:
  std::vector<ByteRange> ranges_;
};

/// Held by an array and by every graph that binds it: whether the array object still exists, and
/// how many graphs bind it (its device copy is not evicted while any does).
struct GraphToken {
  std::atomic<bool> alive{true};
  std::atomic<int> pins{0};
};

/// What a graph needs of one array and leaves behind, and what it binds.
struct GraphBinding {
  ArrayCore* array = nullptr;
  std::shared_ptr<GraphToken> token;
  std::uint64_t id = 0;
  /// The array's name at capture (`SmartArray #3 "x"`), for messages once it is gone.
  std::string name;
  int device = 0;
  /// The size in bytes and the device buffer that the graph's work uses.
  std::size_t size = 0;
  const std::byte* bound = nullptr;
  RangeSet reads;   ///< valid on `device` before each replay
  RangeSet writes;  ///< held by `device` alone after each replay
};

/// One array touched by a capture.
struct CapturedArray {
  GraphBinding binding;
  /// The array's stream-order tracker of the capture's device, set aside at the first touch.
  std::unique_ptr<StreamOrder> saved_order;
  /// The array released its data during the capture (destroyed, or assigned over).
  bool released = false;
};

/// The arrays a capture touched so far, and the first misuse that makes its graph unusable.
class ArrayCapture {
 public:
  explicit ArrayCapture(int device) noexcept : device_(device) {}
  ArrayCapture(const ArrayCapture&) = delete;
  ArrayCapture& operator=(const ArrayCapture&) = delete;
  ~ArrayCapture();

  [[nodiscard]] int device() const noexcept { return device_; }
  /// The entry of `array`, or nullptr.
  [[nodiscard]] CapturedArray* find(const ArrayCore* array) noexcept;
  /// The entry of `array`, made at its first touch (the caller sets its tracker aside).
  CapturedArray& touch(ArrayCore& array);
  /// `a` and `b` exchanged their data (swap, move): each entry follows the data.
  void exchanged(const ArrayCore* a, const ArrayCore* b) noexcept;
  /// `array` released its data.
  void released(const ArrayCore* array) noexcept;
  /// Notes the first misuse; the capture then fails with it when it ends.
  void fail(std::string why) noexcept;
  [[nodiscard]] const std::string& failure() const noexcept { return failure_; }
  [[nodiscard]] std::vector<CapturedArray>& arrays() noexcept { return arrays_; }

 private:
  int device_;
  std::vector<CapturedArray> arrays_;
  std::string failure_;
};

/// The capture of the calling thread, as the arrays see it (set by the graph layer), or nullptr.
inline thread_local ArrayCapture* active_array_capture = nullptr;

}  // namespace smartarray::detail
