#include "core/parallel_copy.hpp"

#include <smartarray/diagnostics/detail/host_guard.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>

namespace smartarray::detail {
namespace {

/// Below this a job is not split: waking the workers would cost more than it saves.
constexpr std::size_t min_split_bytes = std::size_t{1} << 20;
/// Parts per job, the calling thread's included. One thread moves about 6 GB/s on a cloud Xeon;
/// 8 saturate its memory (64 GB/s measured on an H100 system's 16 host cores), above PCIe's 50.
constexpr unsigned max_parts = 8;
/// How long a worker keeps polling for the next part before it sleeps. A staged transfer asks for
/// its next chunk well within this, so its chunks never pay for a wake-up; an idle pool sleeps.
constexpr std::chrono::microseconds poll_window{200};

void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Writes the byte at `p` with its own value. A compare-exchange, not a store: another thread's
/// write in between is kept, and no compiler folds it into a load, as it may an atomic `or 0`.
void rewrite_byte(std::byte* p) noexcept {
  std::atomic_ref<unsigned char> byte(*reinterpret_cast<unsigned char*>(p));
  unsigned char value = byte.load(std::memory_order_relaxed);
  while (!byte.compare_exchange_weak(value, value, std::memory_order_relaxed)) {
  }
}

/// Rewrites the first byte of every page that starts in [begin, end), and `begin` itself when
/// `from_begin` (the first part: its page may start before the range).
void prefault_part(std::byte* begin, std::byte* end, bool from_begin) noexcept {
  const std::size_t page = page_size();
  const auto length = static_cast<std::size_t>(end - begin);
  // The offset of the first page that starts in the range.
  const std::size_t first = (page - reinterpret_cast<std::uintptr_t>(begin) % page) % page;
  if (from_begin && first != 0) rewrite_byte(begin);
  for (std::size_t offset = first; offset < length; offset += page) rewrite_byte(begin + offset);
}

enum class Job { copy, prefault };

/// `job` over [begin, end) of the range; `first` for the part that starts the range.
void do_range(Job job, std::byte* dst, const std::byte* src, std::size_t begin, std::size_t end,
              bool first) noexcept {
  if (end <= begin) return;
  if (job == Job::copy) {
    std::memcpy(dst + begin, src + begin, end - begin);
  } else {
    prefault_part(dst + begin, dst + end, first);
  }
}

/// Workers that each do one part of the current job (a copy or a prefault), then poll briefly
/// for the next before they sleep. The pool lives as long as the process (its threads end with
/// it).
class WorkPool {
 public:
  WorkPool() {
    const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
    parts_ = std::clamp(cores / 2, 2U, max_parts);  // two on small machines: the split path runs in CI too
    for (unsigned w = 1; w < parts_; ++w) std::thread([this, w] { work(w); }).detach();
  }
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  /// Does a large `job` over `bytes` bytes, split over the workers and the calling thread.
  void run(Job job, void* dst, const void* src, std::size_t bytes) {
    std::unique_lock caller(callers_);  // one split job at a time; others wait their turn
    // Published to the workers by the release increment of round_.
    job_ = job;
    dst_ = static_cast<std::byte*>(dst);
    src_ = static_cast<const std::byte*>(src);
    bytes_ = bytes;
    pending_.store(parts_ - 1, std::memory_order_relaxed);
    round_.fetch_add(1, std::memory_order_release);
    {
      // A worker that decided to sleep before the increment is counted by now, or sees it.
      std::lock_guard lock(mutex_);
      if (sleeping_ > 0) start_.notify_all();
    }
    do_part(0);
    // The workers' parts take as long as this thread's (or a wake-up): wait by polling.
    while (pending_.load(std::memory_order_acquire) != 0) pause();
  }

 private:
  void do_part(unsigned part) const {
    const std::size_t share = (bytes_ / parts_ + 63) / 64 * 64;
    const std::size_t begin = std::min(bytes_, share * part);
    const std::size_t end = part + 1 == parts_ ? bytes_ : std::min(bytes_, begin + share);
    do_range(job_, dst_, src_, begin, end, part == 0);
  }

  /// The round after `seen`: polled for poll_window, then waited for asleep.
  std::uint64_t next_round(std::uint64_t seen) {
    const auto deadline = std::chrono::steady_clock::now() + poll_window;
    for (unsigned spin = 1;; ++spin) {
      const std::uint64_t round = round_.load(std::memory_order_acquire);
      if (round != seen) return round;
      if (spin % 64 == 0 && std::chrono::steady_clock::now() > deadline) break;
      pause();
    }
    std::unique_lock lock(mutex_);
    ++sleeping_;
    start_.wait(lock, [&] { return round_.load(std::memory_order_acquire) != seen; });
    --sleeping_;
    return round_.load(std::memory_order_acquire);
  }

  [[noreturn]] void work(unsigned part) {
    std::uint64_t seen = 0;
    for (;;) {
      // Rounds cannot pass a worker: the caller waits for every part before the next round.
      seen = next_round(seen);
      do_part(part);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  unsigned parts_ = 2;
  std::mutex callers_;
  std::mutex mutex_;
  std::condition_variable start_;
  unsigned sleeping_ = 0;  // guarded by mutex_
  Job job_ = Job::copy;
  std::byte* dst_ = nullptr;
  const std::byte* src_ = nullptr;
  std::size_t bytes_ = 0;
  std::atomic<unsigned> pending_{0};
  std::atomic<std::uint64_t> round_{0};
};

WorkPool& work_pool() {
  static WorkPool* const pool = new WorkPool();  // outlives every array, even static ones
  return *pool;
}

/// Does `job` on this thread when small; a large one is split, and only then is the pool (with
/// its threads) made: a program that copies nothing large starts no thread.
void run_job(Job job, void* dst, const void* src, std::size_t bytes) noexcept {
  if (bytes < min_split_bytes) {
    do_range(job, static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), 0, bytes, true);
    return;
  }
  work_pool().run(job, dst, src, bytes);
}

}  // namespace

void parallel_copy(void* dst, const void* src, std::size_t bytes) noexcept {
  run_job(Job::copy, dst, src, bytes);
}

void parallel_prefault_for_write(void* data, std::size_t bytes) noexcept {
  run_job(Job::prefault, data, nullptr, bytes);
}

}  // namespace smartarray::detail
