// Counters, the ExpectTransfers guard and the migration trace.
#include <smartarray/diagnostics/observability.hpp>
#include "detail/environment.hpp"
#include <smartarray/error.hpp>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <sstream>

namespace smartarray {

TransferStats TransferStats::operator-(const TransferStats& base) const noexcept {
  return {h2d_count - base.h2d_count,           h2d_bytes - base.h2d_bytes,
          d2h_count - base.d2h_count,           d2h_bytes - base.d2h_bytes,
          d2d_count - base.d2d_count,           d2d_bytes - base.d2d_bytes,
          prefetch_count - base.prefetch_count, prefetch_bytes - base.prefetch_bytes,
          allocation_count - base.allocation_count, allocation_bytes - base.allocation_bytes,
          wait_count - base.wait_count,         d2d_peer_count - base.d2d_peer_count,
          d2d_peer_bytes - base.d2d_peer_bytes, staged_count - base.staged_count,
          staged_bytes - base.staged_bytes,     sent_count - base.sent_count,
          sent_bytes - base.sent_bytes,         received_count - base.received_count,
          received_bytes - base.received_bytes};
}

std::string TransferStats::to_string() const {
  std::ostringstream out;
  out << "h2d " << h2d_count << " (" << h2d_bytes << " B), d2h " << d2h_count << " ("
      << d2h_bytes << " B), d2d " << d2d_count << " (" << d2d_bytes << " B), prefetch "
      << prefetch_count << " (" << prefetch_bytes << " B), allocations " << allocation_count
      << " (" << allocation_bytes << " B), waits " << wait_count;
  // Only where a peer copy or a staged read happened: single-device output is unchanged.
  if (d2d_peer_count != 0 || staged_count != 0) {
    out << ", peer " << d2d_peer_count << " (" << d2d_peer_bytes << " B), staged "
        << staged_count << " (" << staged_bytes << " B)";
  }
  // Only where a message was sent or received: output without the distributed layer is unchanged.
  if (sent_count != 0 || received_count != 0) {
    out << ", sent " << sent_count << " (" << sent_bytes << " B), received " << received_count
        << " (" << received_bytes << " B)";
  }
  return out.str();
}

TransferStats TransferCounters::snapshot() const noexcept {
  constexpr auto relaxed = std::memory_order_relaxed;
  return {h2d_count_.load(relaxed),        h2d_bytes_.load(relaxed),
          d2h_count_.load(relaxed),        d2h_bytes_.load(relaxed),
          d2d_count_.load(relaxed),        d2d_bytes_.load(relaxed),
          prefetch_count_.load(relaxed),   prefetch_bytes_.load(relaxed),
          allocation_count_.load(relaxed), allocation_bytes_.load(relaxed),
          wait_count_.load(relaxed),       d2d_peer_count_.load(relaxed),
          d2d_peer_bytes_.load(relaxed),   staged_count_.load(relaxed),
          staged_bytes_.load(relaxed),     sent_count_.load(relaxed),
          sent_bytes_.load(relaxed),       received_count_.load(relaxed),
          received_bytes_.load(relaxed)};
}

void TransferCounters::reset() noexcept {
  for (auto* counter : {&h2d_count_, &h2d_bytes_, &d2h_count_, &d2h_bytes_, &d2d_count_,
                        &d2d_bytes_, &prefetch_count_, &prefetch_bytes_, &allocation_count_,
                        &allocation_bytes_, &wait_count_, &d2d_peer_count_, &d2d_peer_bytes_,
                        &staged_count_, &staged_bytes_, &sent_count_, &sent_bytes_,
                        &received_count_, &received_bytes_}) {
    counter->store(0, std::memory_order_relaxed);
  }
}

TransferCounters& global_counters() noexcept {
  static TransferCounters counters;
  return counters;
}

TransferStats global_transfer_stats() noexcept { return global_counters().snapshot(); }

TransferCounters& detail::device_counters_unchecked(int device) noexcept {
  static std::array<TransferCounters, max_devices> counters;
  return counters[static_cast<std::size_t>(device)];
}

namespace {
std::mutex& handler_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::function<void(const std::string&)>& expect_handler() {
  static std::function<void(const std::string&)> handler = [](const std::string& message) {
    std::cerr << message << std::endl;
    std::abort();
  };
  return handler;
}
}  // namespace

std::function<void(const std::string&)> set_expect_transfers_handler(
    std::function<void(const std::string&)> handler) {
  std::lock_guard lock(handler_mutex());
  auto old = std::move(expect_handler());
  expect_handler() = std::move(handler);
  return old;
}

ExpectTransfers::ExpectTransfers(Transfers expected, smartarray::source_location where)
    : ExpectTransfers(global_counters(), expected, where) {}

ExpectTransfers::ExpectTransfers(const TransferCounters& counters, Transfers expected,
                                 smartarray::source_location where)
    : counters_(&counters), start_(counters.snapshot()), expected_(expected), where_(where) {}

TransferStats ExpectTransfers::observed() const noexcept { return counters_->snapshot() - start_; }

std::string ExpectTransfers::mismatch() const {
  const TransferStats seen = observed();
  std::ostringstream out;
  auto check = [&](const char* what, std::uint64_t want, std::uint64_t got) {
    if (want != got) out << " " << what << ": expected " << want << ", observed " << got << ";";
  };
  check("h2d copies", expected_.h2d, seen.h2d_count);
  check("d2h copies", expected_.d2h, seen.d2h_count);
  check("d2d copies", expected_.d2d, seen.d2d_count);
  check("peer copies", expected_.d2d_peer, seen.d2d_peer_count);
  check("staged reads", expected_.staged, seen.staged_count);
  check("messages sent", expected_.sent, seen.sent_count);
  check("messages received", expected_.received, seen.received_count);
  if (expected_.h2d_bytes) check("h2d bytes", *expected_.h2d_bytes, seen.h2d_bytes);
  if (expected_.d2h_bytes) check("d2h bytes", *expected_.d2h_bytes, seen.d2h_bytes);
  if (expected_.d2d_bytes) check("d2d bytes", *expected_.d2d_bytes, seen.d2d_bytes);
  if (expected_.d2d_peer_bytes) check("peer bytes", *expected_.d2d_peer_bytes, seen.d2d_peer_bytes);
  if (expected_.sent_bytes) check("bytes sent", *expected_.sent_bytes, seen.sent_bytes);
  if (expected_.received_bytes) {
    check("bytes received", *expected_.received_bytes, seen.received_bytes);
  }
  return out.str();
}

ExpectTransfers::~ExpectTransfers() {
  if (std::uncaught_exceptions() > 0) return;  // the scope failed already; don't pile on
  const std::string problems = mismatch();
  if (problems.empty()) return;
  std::ostringstream message;
  message << "ExpectTransfers at " << where_.file_name() << ":" << where_.line()
          << " failed:" << problems << " (observed " << observed().to_string() << ")";
  std::lock_guard lock(handler_mutex());
  try {
    expect_handler()(message.str());
  } catch (...) {
    std::cerr << message.str() << "\n";
  }
}

namespace {
/// Where trace lines go: nullptr when tracing is off. A setting that cannot be used turns tracing
/// off here; the first operation reports it (the runtime checks the setting when it starts).
std::FILE* trace_sink() noexcept {
  static std::FILE* const sink = []() -> std::FILE* {
    try {
      const detail::TraceSetting setting = detail::trace_setting(std::getenv("SMARTARRAY_TRACE"));
      switch (setting.kind) {
        case detail::TraceSetting::Kind::off: return nullptr;
        case detail::TraceSetting::Kind::stderr_stream: return stderr;
        case detail::TraceSetting::Kind::file: return std::fopen(setting.path.c_str(), "a");
      }
    } catch (const std::exception&) {
    }
    return nullptr;
  }();
  return sink;
}
}  // namespace

bool trace_enabled() noexcept { return trace_sink() != nullptr; }

namespace detail {

const char* transfer_direction(TransferKind kind) noexcept {
  switch (kind) {
    case TransferKind::h2d: return "H2D";
    case TransferKind::d2h: return "D2H";
    case TransferKind::d2d: return "D2D";
    case TransferKind::prefetch_to_host: return "prefetch to host";
    case TransferKind::prefetch_to_device: return "prefetch to device";
    case TransferKind::d2d_peer: return "P2P";
    case TransferKind::staged: return "staged read";
    case TransferKind::sent: return "SEND";
    case TransferKind::received: return "RECV";
  }
  return "?";
}

namespace {

void add(TransferCounters& counters, const TransferEvent& event) noexcept {
  switch (event.kind) {
    case TransferKind::h2d: counters.add_h2d(event.bytes); break;
    case TransferKind::d2h: counters.add_d2h(event.bytes); break;
    case TransferKind::d2d: counters.add_d2d(event.bytes); break;
    case TransferKind::prefetch_to_host:
    case TransferKind::prefetch_to_device: counters.add_prefetch(event.bytes); break;
    case TransferKind::d2d_peer: counters.add_d2d_peer(event.bytes); break;
    case TransferKind::staged: counters.add_staged(event.bytes); break;
    case TransferKind::sent: counters.add_sent(event.bytes); break;
    case TransferKind::received: counters.add_received(event.bytes); break;
  }
}

/// " device 1", " device 0 -> 1", whatever the number of devices: one format on every machine.
std::string devices_of(const TransferEvent& event) {
  if (event.source_device >= 0) return concat(" device ", event.source_device, " -> ", event.device);
  return concat(" device ", event.device);
}

/// One trace line: direction, bytes, the array's number and label, reason and call site; a message
/// names its peer rank before the reason ("SEND 4096 B to rank 1 (halo) array #3 at ...").
void trace(std::FILE* sink, const TransferEvent& event) noexcept {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (event.kind == TransferKind::sent || event.kind == TransferKind::received) {
    // A collective's message goes to and comes from every rank: its peer is -1.
    char peer[32] = "all ranks";
    if (event.peer >= 0) std::snprintf(peer, sizeof(peer), "rank %d", static_cast<int>(event.peer));
    std::fprintf(sink, "smartarray: %s %llu B %s %s (%s) array #%llu%s%s%s at %s:%u\n",
                 transfer_direction(event.kind), static_cast<unsigned long long>(event.bytes),
                 event.kind == TransferKind::sent ? "to" : "from", peer, event.reason,
                 static_cast<unsigned long long>(event.array_id),
                 event.label != nullptr ? " \"" : "", event.label != nullptr ? event.label : "",
                 event.label != nullptr ? "\"" : "", event.where.file_name(),
                 static_cast<unsigned>(event.where.line()));
    std::fflush(sink);
    return;
  }
  std::fprintf(sink, "smartarray: %s%s %llu B array #%llu%s%s%s (%s) at %s:%u\n",
               transfer_direction(event.kind), devices_of(event).c_str(),
               static_cast<unsigned long long>(event.bytes),
               static_cast<unsigned long long>(event.array_id), event.label != nullptr ? " \"" : "",
               event.label != nullptr ? event.label : "", event.label != nullptr ? "\"" : "",
               event.reason, event.where.file_name(), static_cast<unsigned>(event.where.line()));
  std::fflush(sink);
}

}  // namespace

void emit_transfer(const TransferEvent& event, TransferCounters* array) noexcept {
  add(global_counters(), event);
  if (array != nullptr) add(*array, event);
  if (event.device >= 0 && event.device < max_devices) add(device_counters_unchecked(event.device), event);
  if (std::FILE* sink = trace_sink()) trace(sink, event);
}
}  // namespace detail

}  // namespace smartarray
