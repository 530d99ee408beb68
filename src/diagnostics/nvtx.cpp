// NVTX ranges in the smartarray domain (see diagnostics/nvtx.hpp and docs/observability.md). The
// NVTX v3 calls live here only: the public headers never include nvtx3.
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/error.hpp>
#include "detail/environment.hpp"

#include <nvtx3/nvToolsExt.h>

#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace smartarray {
namespace detail {
namespace {

/// What one registered message stands for: an operation (an adapter's or acquire's name, or a
/// transfer's reason), the call site, and for a transfer its kind, devices and peer.
struct MessageKey {
  const void* what;
  const char* file;
  std::uint32_t line;
  std::int32_t kind;  ///< -1: not a transfer
  std::int32_t devices;
  std::int32_t peer;
  friend bool operator==(const MessageKey&, const MessageKey&) = default;
};

struct MessageKeyHash {
  std::size_t operator()(const MessageKey& key) const noexcept {
    std::size_t hash = std::hash<const void*>{}(key.what);
    for (const std::size_t part :
         {std::hash<const void*>{}(key.file), std::size_t{key.line},
          static_cast<std::size_t>(key.kind), static_cast<std::size_t>(key.devices),
          static_cast<std::size_t>(key.peer)}) {
      hash = (hash ^ part) * 1099511628211U;
    }
    return hash;
  }
};

/// A registered message. The text stays for a tool that registers no strings.
struct Message {
  nvtxStringHandle_t handle;
  std::string text;
};

/// Categories named so far are forgotten past this many (and named again when met again): a
/// program that makes arrays in a loop must not grow the table without end.
constexpr std::size_t max_named_categories = std::size_t{1} << 16;

bool switch_from_environment() noexcept {
  try {
    return environment_switch("SMARTARRAY_NVTX", true);
  } catch (const std::exception&) {
    return false;  // the runtime's start reports the bad value
  }
}

/// The switch, the domain and what it registered. The domain is made by the first range (never
/// with the switch off); nvtx_state turns on, with release order, only once it is set.
struct NvtxDomain {
  std::mutex mutex;
  bool enabled = switch_from_environment();
  bool created = false;
  nvtxDomainHandle_t handle = nullptr;  ///< null when no tool records domains
  std::unordered_map<MessageKey, Message, MessageKeyHash> messages;
  /// The label each category was named with.
  std::unordered_map<std::uint32_t, std::string> category_labels;
};

NvtxDomain& nvtx_domain() {
  static NvtxDomain* const domain = new NvtxDomain;  // never destroyed: ranges close during exit
  return *domain;
}

/// Sets nvtx_state from the switch and the domain (caller holds the mutex).
void decide(NvtxDomain& domain) {
  if (domain.enabled && !domain.created) {
    domain.created = true;
    domain.handle = nvtxDomainCreateA("smartarray");
  }
  const bool on = domain.enabled && domain.handle != nullptr;
  nvtx_state.store(on ? nvtx_on : nvtx_off, std::memory_order_release);
}

/// The domain when ranges are emitted, else nullptr; the first call decides.
NvtxDomain* recording_domain() {
  std::uint8_t state = nvtx_state.load(std::memory_order_acquire);
  NvtxDomain& domain = nvtx_domain();
  if (state == nvtx_undecided) {
    std::lock_guard lock(domain.mutex);
    if (nvtx_state.load(std::memory_order_relaxed) == nvtx_undecided) decide(domain);
    state = nvtx_state.load(std::memory_order_relaxed);
  }
  return state == nvtx_on ? &domain : nullptr;
}

/// What a push needs of a message, copied out under the mutex (the text is never changed).
struct Registered {
  nvtxStringHandle_t handle;
  const char* text;
};

/// The message of `key`, registered once with the text `make_text()` (caller holds the mutex).
template <typename MakeText>
Registered message(NvtxDomain& domain, const MessageKey& key, MakeText&& make_text) {
  auto found = domain.messages.find(key);
  if (found == domain.messages.end()) {
    std::string text = make_text();
    nvtxStringHandle_t handle = nvtxDomainRegisterStringA(domain.handle, text.c_str());
    found = domain.messages.emplace(key, Message{handle, std::move(text)}).first;
  }
  return {found->second.handle, found->second.text.c_str()};
}

/// The category of array `array_id`, named `array #3 "label"` when first met or relabeled (caller
/// holds the mutex).
std::uint32_t array_category(NvtxDomain& domain, std::uint64_t array_id, const char* label) {
  const auto category = static_cast<std::uint32_t>(array_id);
  if (domain.category_labels.size() >= max_named_categories) domain.category_labels.clear();
  const char* const now = label != nullptr ? label : "";
  auto [named, fresh] = domain.category_labels.try_emplace(category);
  if (fresh || named->second != now) {
    named->second = now;
    const std::string name = label != nullptr ? concat("array #", array_id, " \"", label, "\"")
                                              : concat("array #", array_id);
    nvtxDomainNameCategoryA(domain.handle, category, name.c_str());
  }
  return category;
}

/// One event's attributes: a registered message, an optional category, payload and color.
nvtxEventAttributes_t attributes(Registered message, std::uint32_t category,
                                 const std::uint64_t* bytes, std::uint32_t argb) {
  nvtxEventAttributes_t event{};
  event.version = NVTX_VERSION;
  event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  event.category = category;
  if (argb != 0) {
    event.colorType = NVTX_COLOR_ARGB;
    event.color = argb;
  }
  if (bytes != nullptr) {
    event.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    event.payload.ullValue = *bytes;
  }
  if (message.handle != nullptr) {
    event.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    event.message.registered = message.handle;
  } else {
    event.messageType = NVTX_MESSAGE_TYPE_ASCII;
    event.message.ascii = message.text;
  }
  return event;
}

/// The timeline color of a transfer's direction.
std::uint32_t transfer_color(TransferKind kind) noexcept {
  switch (kind) {
    case TransferKind::h2d: return 0xFF76B900U;
    case TransferKind::d2h: return 0xFFE6194BU;
    case TransferKind::d2d:
    case TransferKind::d2d_peer: return 0xFF4363D8U;
    case TransferKind::prefetch_to_host:
    case TransferKind::prefetch_to_device: return 0xFFF58231U;
    case TransferKind::staged: return 0xFF911EB4U;
    case TransferKind::sent:
    case TransferKind::received: return 0xFF808080U;
  }
  return 0;
}

/// "H2D device 0 (reason) at file:line", "P2P device 1 -> 0 (...)", "SEND to rank 1 (...)": the
/// trace line's words (observability.cpp) less the bytes and the array, which the payload and
/// the category carry.
std::string transfer_text(const TransferEvent& event) {
  std::string where;
  if (event.kind == TransferKind::sent || event.kind == TransferKind::received) {
    where = concat(event.kind == TransferKind::sent ? " to " : " from ",
                   event.peer >= 0 ? concat("rank ", event.peer) : std::string("all ranks"));
  } else if (event.source_device >= 0) {
    where = concat(" device ", event.source_device, " -> ", event.device);
  } else {
    where = concat(" device ", event.device);
  }
  return concat(transfer_direction(event.kind), where, " (", event.reason, ") at ",
                event.where.file_name(), ":", event.where.line());
}

/// A call's or an acquire's range: "<what> at file:line", and for an acquire (`bytes` given) the
/// array as the category and the bytes as the payload.
nvtxEventAttributes_t call_event(NvtxDomain& domain, const char* what,
                                 const smartarray::source_location& where,
                                 const std::uint64_t* bytes, std::uint64_t array_id,
                                 const char* label) {
  const MessageKey key{what, where.file_name(), static_cast<std::uint32_t>(where.line()), -1, 0, 0};
  std::lock_guard lock(domain.mutex);
  const Registered text = message(
      domain, key, [&] { return concat(what, " at ", where.file_name(), ":", where.line()); });
  const std::uint32_t category = bytes != nullptr ? array_category(domain, array_id, label) : 0;
  return attributes(text, category, bytes, 0);
}

/// A transfer's range or mark: its message, the array as the category, the bytes as the payload.
nvtxEventAttributes_t transfer_event(NvtxDomain& domain, const TransferEvent& event) {
  const MessageKey key{event.reason,
                       event.where.file_name(),
                       static_cast<std::uint32_t>(event.where.line()),
                       static_cast<std::int32_t>(event.kind),
                       event.device * 65536 + event.source_device,
                       event.peer};
  std::lock_guard lock(domain.mutex);
  const Registered text = message(domain, key, [&] { return transfer_text(event); });
  const std::uint32_t category = array_category(domain, event.array_id, event.label);
  return attributes(text, category, &event.bytes, transfer_color(event.kind));
}

/// Emits what `describe(domain)` describes with `emit` (a push or a mark) when recording; true
/// when it did.
template <typename Describe, typename Emit>
bool emit(Describe&& describe, Emit&& emit_event) noexcept {
  try {
    NvtxDomain* const domain = recording_domain();
    if (domain == nullptr) return false;
    const nvtxEventAttributes_t event = describe(*domain);
    emit_event(domain->handle, &event);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void push_range(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* event) {
  nvtxDomainRangePushEx(domain, event);
}

}  // namespace

bool nvtx_push_call(const char* what, const smartarray::source_location& where) noexcept {
  return emit(
      [&](NvtxDomain& domain) { return call_event(domain, what, where, nullptr, 0, nullptr); },
      push_range);
}

bool nvtx_push_acquire(const char* what, std::uint64_t bytes, std::uint64_t array_id,
                       const char* label, const smartarray::source_location& where) noexcept {
  return emit(
      [&](NvtxDomain& domain) { return call_event(domain, what, where, &bytes, array_id, label); },
      push_range);
}

bool nvtx_push_transfer(const TransferEvent& event) noexcept {
  return emit([&](NvtxDomain& domain) { return transfer_event(domain, event); }, push_range);
}

void nvtx_mark_transfer(const TransferEvent& event) noexcept {
  if (!nvtx_may_record()) return;
  (void)emit([&](NvtxDomain& domain) { return transfer_event(domain, event); },
             [](nvtxDomainHandle_t domain, const nvtxEventAttributes_t* mark) {
               nvtxDomainMarkEx(domain, mark);
             });
}

void nvtx_pop() noexcept { nvtxDomainRangePop(nvtx_domain().handle); }

}  // namespace detail

void set_nvtx_enabled(bool enabled) noexcept {
  detail::NvtxDomain& domain = detail::nvtx_domain();
  std::lock_guard lock(domain.mutex);
  domain.enabled = enabled;
  detail::decide(domain);
}

bool nvtx_enabled() noexcept {
  detail::NvtxDomain& domain = detail::nvtx_domain();
  std::lock_guard lock(domain.mutex);
  return domain.enabled;
}

bool nvtx_recording() noexcept {
  try {
    return detail::recording_domain() != nullptr;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace smartarray
