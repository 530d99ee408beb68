/**
 * @file detail/environment.hpp
 * @brief Private: the one parser of the `SMARTARRAY_*` environment variables.
 *
 * Each variable is read when the first operation that needs it runs, never at static
 * initialisation, so that a bad value is an exception of that operation: it names the variable,
 * the value and the allowed range.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace smartarray::detail {

/// What the number of a variable counts.
enum class EnvUnit {
  count,  ///< a plain decimal number
  bytes,  ///< a decimal number of bytes, or followed by K, M, G or T (powers of 1024)
};

/**
 * @brief The number in the environment variable `name`, or nothing when it is unset or empty.
 * @param name the variable.
 * @param min the smallest value allowed.
 * @param max the largest value allowed.
 * @param unit what the number counts.
 * @throws logic_error naming the variable, its value and the range [min, max] when the value is
 *         not a decimal number (a sign, spaces and hexadecimal are not), has an unknown suffix,
 *         overflows, or lies outside the range.
 */
[[nodiscard]] std::optional<std::uint64_t> environment_number(const char* name, std::uint64_t min,
                                                              std::uint64_t max,
                                                              EnvUnit unit = EnvUnit::count);

/**
 * @brief A switch in the environment variable `name`: `0` or `1`.
 * @param name the variable.
 * @param fallback the value when it is unset or empty.
 * @throws logic_error naming the variable and its value for anything else.
 */
[[nodiscard]] bool environment_switch(const char* name, bool fallback);

/// Where SMARTARRAY_TRACE sends its lines.
struct TraceSetting {
  enum class Kind { off, stderr_stream, file };
  Kind kind = Kind::off;
  std::string path;  ///< the file, for Kind::file
};

/**
 * @brief Reads a SMARTARRAY_TRACE value: unset, empty, `0`, `false`, `off` or `no` turn tracing
 *        off; `1`, `true`, `on`, `yes` or `stderr` send it to standard error; anything else is a
 *        file that the lines are appended to.
 * @param value the variable's value (nullptr when unset).
 * @throws logic_error naming the variable, the path and the system's reason when the file cannot
 *         be opened for appending (it is opened and closed once to check).
 */
[[nodiscard]] TraceSetting trace_setting(const char* value);

}  // namespace smartarray::detail
