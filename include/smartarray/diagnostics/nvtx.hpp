/**
 * @file diagnostics/nvtx.hpp
 * @brief NVTX ranges in the `smartarray` domain for Nsight Systems: one per migration, acquire and
 *        adapter call (docs/observability.md), and the switch that turns them off.
 *
 * The ranges are emitted only while a tool records NVTX (Nsight Systems, or any NVTX injection
 * library) and the switch is on: `SMARTARRAY_NVTX=0|1` (default 1, read once), or
 * `set_nvtx_enabled()`. Without a tool a range costs one load and one predictable branch.
 *
 * @code
 * sa::set_nvtx_enabled(false);  // this phase without ranges
 * @endcode
 */
#pragma once

#include <smartarray/config.hpp>

#include <atomic>
#include <cstdint>

namespace smartarray {

/**
 * @brief Turns smartarray's NVTX ranges on or off for the whole process, overriding
 *        `SMARTARRAY_NVTX`. Ranges already open are closed as usual.
 * @param enabled true to emit ranges whenever a tool records them.
 */
void set_nvtx_enabled(bool enabled) noexcept;

/// @brief The switch: `SMARTARRAY_NVTX` (`0` or `1`, default `1`, read once) until
///        `set_nvtx_enabled()` changes it. A bad value reads as `0` here; the first operation of
///        the library throws `logic_error` for it.
[[nodiscard]] bool nvtx_enabled() noexcept;

/// @brief True while ranges are emitted: the switch is on and a tool that records NVTX domains
///        was attached when the process made its first range.
[[nodiscard]] bool nvtx_recording() noexcept;

namespace detail {

struct TransferEvent;

/// Whether ranges are emitted: `nvtx_off` until a tool and the switch say otherwise. It starts
/// undecided, so that the first range decides (the environment is never read at static
/// initialisation).
inline constexpr std::uint8_t nvtx_off = 0;
inline constexpr std::uint8_t nvtx_on = 1;
inline constexpr std::uint8_t nvtx_undecided = 2;
inline std::atomic<std::uint8_t> nvtx_state{nvtx_undecided};

/// The one check of every range: false (nothing to do) unless a tool may be recording.
[[nodiscard]] inline bool nvtx_may_record() noexcept {
  return nvtx_state.load(std::memory_order_relaxed) != nvtx_off;
}

// Out of line (src/diagnostics/nvtx.cpp). Each push decides the state first, and returns whether
// it pushed a range.
/// "launch at train.cu:42"; no category, no payload.
[[nodiscard]] bool nvtx_push_call(const char* what,
                                  const smartarray::source_location& where) noexcept;
/// "acquire device read at train.cu:42": the array as the category, `bytes` as the payload.
[[nodiscard]] bool nvtx_push_acquire(const char* what, std::uint64_t bytes, std::uint64_t array_id,
                                     const char* label,
                                     const smartarray::source_location& where) noexcept;
/// "H2D device 0 (device access of a stale copy) at train.cu:42": the array as the category,
/// the bytes as the payload. The core's TransferScope alone opens these, and counts and traces
/// the same event, so that the ranges, the counters and the trace agree.
[[nodiscard]] bool nvtx_push_transfer(const TransferEvent& event) noexcept;
/// A mark named as nvtx_push_transfer() names a range: a message between processes, which
/// the library hands to MPI or NCCL rather than copying itself.
void nvtx_mark_transfer(const TransferEvent& event) noexcept;
/// Closes the innermost range of this thread in the domain.
void nvtx_pop() noexcept;

/// The ranges of adapter calls and acquires that one scope opened in the `smartarray` domain,
/// closed at its end, innermost first (a transfer's range is its TransferScope's, in the core).
/// Each opening costs one load and branch unless a tool records.
class NvtxRange {
 public:
  NvtxRange() noexcept = default;
  /// An adapter call's range, named `what` and the caller's line.
  NvtxRange(const char* what, const smartarray::source_location& where) noexcept {
    if (nvtx_may_record()) [[unlikely]] depth_ = nvtx_push_call(what, where) ? 1U : 0U;
  }
  ~NvtxRange() {
    for (; depth_ > 0; --depth_) nvtx_pop();
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

  /// Opens an acquire's range inside those of this scope.
  void push_acquire(const char* what, std::uint64_t bytes, std::uint64_t array_id,
                    const char* label, const smartarray::source_location& where) noexcept {
    if (nvtx_may_record()) [[unlikely]] {
      depth_ += nvtx_push_acquire(what, bytes, array_id, label, where) ? 1U : 0U;
    }
  }

 private:
  unsigned depth_ = 0;
};

}  // namespace detail
}  // namespace smartarray
