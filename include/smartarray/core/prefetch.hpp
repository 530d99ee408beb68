/**
 * @file core/prefetch.hpp
 * @brief `Prefetch`: the token of an asynchronous copy to the host started by `prefetch_to_host`.
 *
 * `a.prefetch_to_host(stream)` (and `a.slice(i, n).prefetch_to_host(stream)`) queues the copies of
 * the stale bytes of the range and returns at once with a token. The host may do other work, then
 * `wait()` for the copies or ask whether they are `ready()`. Waiting is optional: the first host
 * access of the range waits for exactly those copies (not for the whole stream) and copies nothing
 * more.
 *
 * A token is independent of its array: it stays valid after the array was destroyed, resized or
 * moved. Those operations wait for the array's pending prefetch copies themselves (the host buffer
 * they write must not change or be freed under them), so a token of such an array is ready and
 * `wait()` returns at once.
 */
#pragma once

#include <memory>
#include <utility>

namespace smartarray {
namespace detail {
struct PrefetchCopies;
}  // namespace detail

/**
 * @brief The pending copies of one `prefetch_to_host` call. Copyable; the copies share one state.
 */
class Prefetch {
 public:
  /// @brief A token with nothing pending: ready.
  Prefetch() noexcept = default;
  /// @brief The token of `copies` (null: nothing was queued). Made by `prefetch_to_host`.
  explicit Prefetch(std::shared_ptr<detail::PrefetchCopies> copies) noexcept
      : copies_(std::move(copies)) {}

  /**
   * @brief Blocks the host until the prefetch's copies are done (at once when they are, or when
   *        nothing was queued). Waits only for those copies, not for later work on their streams.
   * @throws cuda_error when a copy failed.
   */
  void wait() const;
  /**
   * @brief True when the prefetch's copies are done; never blocks.
   * @throws cuda_error when the backend cannot tell.
   */
  [[nodiscard]] bool ready() const;

 private:
  std::shared_ptr<detail::PrefetchCopies> copies_;
};

}  // namespace smartarray
