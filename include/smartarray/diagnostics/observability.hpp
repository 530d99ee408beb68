/**
 * @file diagnostics/observability.hpp
 * @brief Transfer and allocation counters (global and per array), the `ExpectTransfers` guard and
 *        the migration trace.
 *
 * Global counters are kept at the backend seam, so they are exact on both backends. Each SmartArray
 * also keeps its own counters. `SMARTARRAY_TRACE=1` prints one line per migration on stderr;
 * `SMARTARRAY_TRACE=/path` appends them to a file. Each line names the device (whatever the number
 * of devices), the array by its number (`SmartArray::id()`) and label (`set_label`), and the line
 * of the user's call that caused it:
 *
 *     smartarray: H2D device 0 4000 B array #3 "x" (device access of a stale copy) at train.cu:42
 */
#pragma once

#include <smartarray/config.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace smartarray {

/// @brief A snapshot of transfer and allocation counts.
struct TransferStats {
  std::uint64_t h2d_count = 0;         ///< host-to-device copies
  std::uint64_t h2d_bytes = 0;         ///< bytes copied host to device
  std::uint64_t d2h_count = 0;         ///< device-to-host copies
  std::uint64_t d2h_bytes = 0;         ///< bytes copied device to host
  std::uint64_t d2d_count = 0;         ///< device-to-device copies
  std::uint64_t d2d_bytes = 0;         ///< bytes copied device to device
  std::uint64_t prefetch_count = 0;    ///< managed-memory prefetches
  std::uint64_t prefetch_bytes = 0;    ///< bytes prefetched
  std::uint64_t allocation_count = 0;  ///< raw (upstream) allocations, or buffers for an array
  std::uint64_t allocation_bytes = 0;  ///< bytes of those allocations
  std::uint64_t wait_count = 0;        ///< host waits on events or streams
  std::uint64_t d2d_peer_count = 0;    ///< copies from one device to another (peer copies)
  std::uint64_t d2d_peer_bytes = 0;    ///< bytes copied device to device across devices
  /// Reads across devices without peer access, each staged through the host: its D2H and H2D
  /// copies count above too.
  std::uint64_t staged_count = 0;
  std::uint64_t staged_bytes = 0;      ///< bytes of those reads
  /// Messages that carried an array's elements to another process (the distributed layer): a
  /// point-to-point send, one per neighbour and direction of a halo exchange, one per collective.
  /// Payload only: no handshake or protocol bytes.
  std::uint64_t sent_count = 0;
  std::uint64_t sent_bytes = 0;      ///< bytes of those messages
  std::uint64_t received_count = 0;  ///< messages that brought elements from another process
  std::uint64_t received_bytes = 0;  ///< bytes of those messages

  /// @brief Field-wise difference (this minus `base`).
  [[nodiscard]] TransferStats operator-(const TransferStats& base) const noexcept;
  friend bool operator==(const TransferStats&, const TransferStats&) = default;
  /// @brief "h2d 1 (400 B), d2h 0 (0 B), ..." for messages.
  [[nodiscard]] std::string to_string() const;
};

/// @brief Thread-safe counters that produce `TransferStats` snapshots.
class TransferCounters {
 public:
  TransferCounters() = default;
  TransferCounters(const TransferCounters&) = delete;
  TransferCounters& operator=(const TransferCounters&) = delete;

  /// @brief The counts so far.
  [[nodiscard]] TransferStats snapshot() const noexcept;
  /// @brief Sets every count to zero.
  void reset() noexcept;

  void add_h2d(std::uint64_t bytes) noexcept { add(h2d_count_, h2d_bytes_, bytes); }
  void add_d2h(std::uint64_t bytes) noexcept { add(d2h_count_, d2h_bytes_, bytes); }
  void add_d2d(std::uint64_t bytes) noexcept { add(d2d_count_, d2d_bytes_, bytes); }
  void add_d2d_peer(std::uint64_t bytes) noexcept { add(d2d_peer_count_, d2d_peer_bytes_, bytes); }
  void add_staged(std::uint64_t bytes) noexcept { add(staged_count_, staged_bytes_, bytes); }
  void add_prefetch(std::uint64_t bytes) noexcept { add(prefetch_count_, prefetch_bytes_, bytes); }
  void add_sent(std::uint64_t bytes) noexcept { add(sent_count_, sent_bytes_, bytes); }
  void add_received(std::uint64_t bytes) noexcept {
    add(received_count_, received_bytes_, bytes);
  }
  void add_allocation(std::uint64_t bytes) noexcept {
    add(allocation_count_, allocation_bytes_, bytes);
  }
  void add_wait() noexcept { wait_count_.fetch_add(1, std::memory_order_relaxed); }

 private:
  static void add(std::atomic<std::uint64_t>& count, std::atomic<std::uint64_t>& total,
                  std::uint64_t bytes) noexcept {
    count.fetch_add(1, std::memory_order_relaxed);
    total.fetch_add(bytes, std::memory_order_relaxed);
  }
  std::atomic<std::uint64_t> h2d_count_{0}, h2d_bytes_{0}, d2h_count_{0}, d2h_bytes_{0};
  std::atomic<std::uint64_t> d2d_count_{0}, d2d_bytes_{0}, prefetch_count_{0}, prefetch_bytes_{0};
  std::atomic<std::uint64_t> allocation_count_{0}, allocation_bytes_{0}, wait_count_{0};
  std::atomic<std::uint64_t> d2d_peer_count_{0}, d2d_peer_bytes_{0}, staged_count_{0},
      staged_bytes_{0};
  std::atomic<std::uint64_t> sent_count_{0}, sent_bytes_{0}, received_count_{0},
      received_bytes_{0};
};

/// @brief The process-wide counters, kept at the backend seam.
[[nodiscard]] TransferCounters& global_counters() noexcept;
/// @brief A snapshot of the process-wide counters.
[[nodiscard]] TransferStats global_transfer_stats() noexcept;
/**
 * @brief The counters of one device: the transfers into and out of its memory. A copy up or down
 *        counts on its device, a peer copy on the device it goes to, a staged read's D2H on the
 *        device it comes from and its H2D (and the staged count) on the device it goes to.
 *        Allocations and waits are counted globally only.
 * @param device the device ordinal (0 to `device_count() - 1`).
 * @throws logic_error naming the ordinal and the device count when `device` is not a device of
 *         the active backend.
 */
[[nodiscard]] TransferCounters& device_counters(int device);
/// @brief A snapshot of `device_counters(device)`.
/// @param device the device ordinal (0 to `device_count() - 1`).
/// @throws logic_error as device_counters().
[[nodiscard]] TransferStats device_transfer_stats(int device);

/// @brief The transfers a scope is expected to make. Counts default to zero and are always checked;
///        byte totals are checked only when given.
struct Transfers {
  std::uint64_t h2d = 0;                       ///< host-to-device copies
  std::uint64_t d2h = 0;                       ///< device-to-host copies
  std::uint64_t d2d = 0;                       ///< device-to-device copies
  std::optional<std::uint64_t> h2d_bytes{};    ///< bytes host to device, if checked
  std::optional<std::uint64_t> d2h_bytes{};    ///< bytes device to host, if checked
  std::optional<std::uint64_t> d2d_bytes{};    ///< bytes device to device, if checked
  std::uint64_t d2d_peer = 0;                  ///< peer copies between devices
  std::optional<std::uint64_t> d2d_peer_bytes{};  ///< bytes of peer copies, if checked
  std::uint64_t staged = 0;                    ///< reads across devices staged through the host
  std::uint64_t sent = 0;                      ///< messages sent to other processes
  std::uint64_t received = 0;                  ///< messages received from other processes
  std::optional<std::uint64_t> sent_bytes{};      ///< bytes sent, if checked
  std::optional<std::uint64_t> received_bytes{};  ///< bytes received, if checked
};

/**
 * @brief A scoped guard that fails when the transfers made in its scope differ from the declared ones.
 *
 * On a mismatch the destructor calls the failure handler (by default: print to stderr and abort;
 * tests install one that records a test failure). It never throws.
 *
 * @code
 * {
 *   smartarray::ExpectTransfers expect({.h2d = 1, .d2h = 0});
 *   kernel<<<g, b>>>(a.device_view(smartarray::Access::read));
 * }
 * @endcode
 */
class ExpectTransfers {
 public:
  /// @brief Watches the global counters.
  explicit ExpectTransfers(Transfers expected,
                           smartarray::source_location where = smartarray::source_location::current());
  /// @brief Watches `counters` (for example an array's own, `a.counters()`).
  ExpectTransfers(const TransferCounters& counters, Transfers expected,
                  smartarray::source_location where = smartarray::source_location::current());
  ~ExpectTransfers();
  ExpectTransfers(const ExpectTransfers&) = delete;
  ExpectTransfers& operator=(const ExpectTransfers&) = delete;

  /// @brief An empty string when the scope so far matches, else what differs.
  [[nodiscard]] std::string mismatch() const;
  /// @brief The transfers made since construction.
  [[nodiscard]] TransferStats observed() const noexcept;

 private:
  const TransferCounters* counters_;
  TransferStats start_;
  Transfers expected_;
  smartarray::source_location where_;
};

/// @brief Replaces the handler that `ExpectTransfers` calls on a mismatch. Returns the old one.
std::function<void(const std::string&)> set_expect_transfers_handler(
    std::function<void(const std::string&)> handler);

/// @brief True when `SMARTARRAY_TRACE` is set (read once).
[[nodiscard]] bool trace_enabled() noexcept;

namespace detail {
/// The kinds of logical transfer. `d2d_peer` goes from one device to another; `staged` is not a
/// copy but marks a read across devices that went through the host (its two copies are their own
/// events).
enum class TransferKind : std::uint8_t {
  h2d,
  d2h,
  d2d,
  prefetch_to_host,
  prefetch_to_device,
  d2d_peer,
  staged,
  sent,      ///< a message to another process (`peer` names its rank)
  received,  ///< a message from another process (`peer` names its rank)
};
/// "H2D", "D2H", "P2P", "SEND", ...: the direction of `kind` as traces and NVTX ranges name it.
[[nodiscard]] const char* transfer_direction(TransferKind kind) noexcept;

/// One logical transfer of an array's data (a staged copy is one transfer, however many chunks it
/// takes): its kind and bytes, why it was made, the array (number and label, nullptr for none),
/// the user's call it serves, and the devices: the one whose counters it goes to (the device a copy
/// goes to or comes from, the destination of a peer copy or a staged read), and the source of a
/// peer copy or staged read.
struct TransferEvent {
  TransferKind kind;
  std::uint64_t bytes;
  const char* reason;
  std::uint64_t array_id;
  const char* label;
  smartarray::source_location where;
  std::int16_t device = 0;
  std::int16_t source_device = -1;
  std::int32_t peer = -1;  ///< the other rank of a `sent` or `received` message; -1: all ranks
};

/// The one place where transfers are recorded. Each sink learns of `event` from here: the global
/// counters (which `ExpectTransfers` and `global_transfer_stats` read), the array's own counters
/// (`array`, or nullptr), and the trace (one line, when tracing).
void emit_transfer(const TransferEvent& event, TransferCounters* array) noexcept;
/// The counters of device `device`, which must be in [0, max_devices) (device_counters() checks
/// the ordinal against the backend's devices, which this layer does not know).
[[nodiscard]] TransferCounters& device_counters_unchecked(int device) noexcept;
}  // namespace detail

}  // namespace smartarray
