/**
 * @file error.hpp
 * @brief The exception types of smartarray and the precondition macro.
 *
 * Every exception derives from a standard type so that callers can catch it generically. Messages
 * name the operation and its numbers (bytes, index, size, stream).
 */
#pragma once

#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

namespace smartarray {

/**
 * @brief A CUDA runtime call failed (or an injected copy failure on any backend).
 *
 * Carries the numeric status so that callers can branch on it.
 */
class cuda_error : public std::runtime_error {
 public:
  /**
   * @brief Builds the error.
   * @param message the full message, naming the operation, bytes and the CUDA error name.
   * @param status the numeric `cudaError_t` value (or -1 for an injected failure).
   */
  cuda_error(const std::string& message, int status) : std::runtime_error(message), status_(status) {}
  /// @brief The numeric `cudaError_t` status.
  [[nodiscard]] int status() const noexcept { return status_; }

 private:
  int status_;
};

/**
 * @brief An allocation could not be satisfied, even after the pool's out-of-memory chain.
 *
 * Derives from std::bad_alloc like every allocator failure, but carries a full message.
 */
class out_of_memory : public std::bad_alloc {
 public:
  /// @brief Builds the error with its full message (requested bytes, pool use, largest free block).
  explicit out_of_memory(std::string message) : message_(std::move(message)) {}
  /// @brief The message.
  [[nodiscard]] const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

/**
 * @brief A precondition was violated (bad argument, misuse detected in a debug build).
 */
class logic_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
/// Builds a message from streamable parts.
template <typename... Parts>
[[nodiscard]] std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace smartarray

/**
 * @brief Throws `exception_type` with a message built from the remaining arguments unless `cond`.
 *
 * Example: `SMARTARRAY_EXPECTS(i < n, std::out_of_range, "at(", i, "): size is ", n);`
 */
#define SMARTARRAY_EXPECTS(cond, exception_type, ...)                          \
  do {                                                                         \
    if (!(cond)) [[unlikely]] {                                                \
      throw exception_type(::smartarray::detail::concat(__VA_ARGS__));         \
    }                                                                          \
  } while (false)
