#include "parallel_copy.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>

namespace smartarray::detail {
namespace {

/// Below this a copy is not split: waking the workers would cost more than it saves.
constexpr std::size_t min_split_bytes = std::size_t{1} << 20;
/// Parts per copy, the calling thread's included: enough to saturate PCIe from host memory.
constexpr unsigned max_parts = 4;

/// Workers that each copy one part of the current copy, then wait for the next. The pool lives as
/// long as the process (its threads end with it).
class CopyPool {
 public:
  CopyPool() {
    const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
    parts_ = std::clamp(cores / 2, 2U, max_parts);  // two on small machines: the split path runs in CI too
    for (unsigned w = 1; w < parts_; ++w) std::thread([this, w] { work(w); }).detach();
  }
  CopyPool(const CopyPool&) = delete;
  CopyPool& operator=(const CopyPool&) = delete;

  void copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes < min_split_bytes) {
      std::memcpy(dst, src, bytes);
      return;
    }
    std::unique_lock caller(callers_);  // one split copy at a time; others wait their turn
    {
      std::lock_guard lock(mutex_);
      dst_ = static_cast<std::byte*>(dst);
      src_ = static_cast<const std::byte*>(src);
      bytes_ = bytes;
      pending_ = parts_ - 1;
      ++round_;
    }
    start_.notify_all();
    copy_part(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void copy_part(unsigned part) const {
    const std::size_t share = (bytes_ / parts_ + 63) / 64 * 64;
    const std::size_t begin = std::min(bytes_, share * part);
    const std::size_t end = part + 1 == parts_ ? bytes_ : std::min(bytes_, begin + share);
    if (end > begin) std::memcpy(dst_ + begin, src_ + begin, end - begin);
  }

  [[noreturn]] void work(unsigned part) {
    std::uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      start_.wait(lock, [&] { return round_ != seen; });
      seen = round_;
      lock.unlock();
      copy_part(part);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  unsigned parts_ = 2;
  std::mutex callers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  std::byte* dst_ = nullptr;
  const std::byte* src_ = nullptr;
  std::size_t bytes_ = 0;
  unsigned pending_ = 0;
  std::uint64_t round_ = 0;
};

}  // namespace

void parallel_copy(void* dst, const void* src, std::size_t bytes) noexcept {
  static CopyPool* const pool = new CopyPool();  // outlives every array, even static ones
  pool->copy(dst, src, bytes);
}

}  // namespace smartarray::detail
