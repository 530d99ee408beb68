#include <smartarray/diagnostics/debug.hpp>
#include <smartarray/diagnostics/detail/host_guard.hpp>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

namespace smartarray {
namespace detail {
namespace {

/// What the fault handler reads: plain atomics, so that it stays async-signal-safe.
struct Record {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<std::uintptr_t> host{0};
  std::atomic<std::uint64_t> array_number{0};
  std::atomic<const char*> file{nullptr};
  std::atomic<std::uint32_t> line{0};
};
constexpr std::size_t max_records = 4096;
std::array<Record, max_records> records;

/// Off until set_stale_host_guard(), or SMARTARRAY_STALE_HOST_GUARD when the runtime starts.
std::atomic<bool> guard_on{false};

struct sigaction previous_handler {};

void write_text(const char* text) noexcept {
  std::size_t length = std::strlen(text);
  while (length > 0) {
    const ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0) return;
    text += written;
    length -= static_cast<std::size_t>(written);
  }
}

void write_number(std::uint64_t value) noexcept {
  char digits[24];
  char* at = digits + sizeof(digits) - 1;
  *at = '\0';
  do {
    *--at = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  write_text(at);
}

void on_fault(int signal, siginfo_t* info, void* context) {
  const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (const Record& record : records) {
    const std::uintptr_t begin = record.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= record.end.load(std::memory_order_acquire)) {
      continue;
    }
    const std::uint64_t number = record.array_number.load(std::memory_order_relaxed);
    write_text("smartarray: host pointer into ");
    if (number != 0) {
      write_text("SmartArray #");
      write_number(number);
    } else {
      write_text("a SmartArray");
    }
    write_text(" used at byte ");
    write_number(address - record.host.load(std::memory_order_relaxed));
    write_text(" of its host copy after the device wrote it (device access at ");
    const char* file = record.file.load(std::memory_order_relaxed);
    write_text(file != nullptr ? file : "?");
    write_text(":");
    write_number(record.line.load(std::memory_order_relaxed));
    write_text("); take the host copy again (operator[], host_view(), data(), begin()) after "
               "device work instead of keeping a pointer across it\n");
    ::signal(SIGSEGV, SIG_DFL);
    std::abort();
  }
  // Not ours: hand the fault to whoever handled it before.
  if ((previous_handler.sa_flags & SA_SIGINFO) != 0 && previous_handler.sa_sigaction != nullptr) {
    previous_handler.sa_sigaction(signal, info, context);
    return;
  }
  if (previous_handler.sa_handler == SIG_IGN) return;
  if (previous_handler.sa_handler != SIG_DFL && previous_handler.sa_handler != nullptr) {
    previous_handler.sa_handler(signal);
    return;
  }
  ::signal(SIGSEGV, SIG_DFL);  // the fault repeats and takes the default action
}

void install_handler_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGSEGV, &action, &previous_handler);
  });
}

/// Marks a free record taken (begin 1, end 0: it matches no address until it is filled).
Record* claim_record() noexcept {
  for (Record& record : records) {
    std::uintptr_t expected = 0;
    if (record.begin.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      return &record;
    }
  }
  return nullptr;
}

void release_record(Record& record) noexcept {
  record.end.store(0, std::memory_order_release);
  record.begin.store(0, std::memory_order_release);
}

}  // namespace

std::size_t page_size() noexcept {
  static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

GuardedPages guard_stale_host(std::byte* host, std::size_t stale_bytes, std::uint64_t array_number,
                              const char* file, std::uint32_t line) noexcept {
  if (!guard_on.load(std::memory_order_relaxed) || host == nullptr) return {};
  const std::size_t page = page_size();
  const auto first = (reinterpret_cast<std::uintptr_t>(host) + page - 1) / page * page;
  const auto last = (reinterpret_cast<std::uintptr_t>(host) + stale_bytes) / page * page;
  if (last <= first) return {};
  install_handler_once();
  Record* record = claim_record();
  if (record == nullptr) return {};  // every record in use: this copy goes unguarded
  record->host.store(reinterpret_cast<std::uintptr_t>(host), std::memory_order_relaxed);
  record->array_number.store(array_number, std::memory_order_relaxed);
  record->file.store(file, std::memory_order_relaxed);
  record->line.store(line, std::memory_order_relaxed);
  record->end.store(last, std::memory_order_release);
  record->begin.store(first, std::memory_order_release);
  GuardedPages pages{reinterpret_cast<std::byte*>(first), last - first, record};
  if (::mprotect(pages.begin, pages.bytes, PROT_NONE) != 0) {
    release_record(*record);
    return {};
  }
  return pages;
}

void unguard(GuardedPages& pages) noexcept {
  if (pages.empty()) return;
  if (::mprotect(pages.begin, pages.bytes, PROT_READ | PROT_WRITE) != 0) {
    std::cerr << "smartarray: unprotecting " << pages.bytes << " bytes of a host copy failed: "
              << std::strerror(errno) << "\n";
    std::abort();  // the memory goes back to a pool: handing it out inaccessible would be worse
  }
  release_record(*static_cast<Record*>(pages.record));
  pages = {};
}

}  // namespace detail

void set_stale_host_guard(bool on) { detail::guard_on.store(on, std::memory_order_relaxed); }
bool stale_host_guard() { return detail::guard_on.load(std::memory_order_relaxed); }

}  // namespace smartarray
