// The parser of the SMARTARRAY_* environment variables. See detail/environment.hpp.
#include "detail/environment.hpp"
#include <smartarray/error.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace smartarray::detail {
namespace {

/// `bytes` in the largest binary unit that divides it: "16 GiB", "1536 B".
std::string bytes_text(std::uint64_t bytes) {
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (unit < 6 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return concat(bytes, " ", units[unit]);
}

std::string range_text(std::uint64_t min, std::uint64_t max, EnvUnit unit) {
  if (unit == EnvUnit::bytes) {
    return concat(bytes_text(min), " to ", bytes_text(max),
                  ", as bytes or a number followed by K, M, G or T");
  }
  return concat(min, " to ", max);
}

/// The shift of a byte suffix, or -1 for none that is known.
int suffix_shift(std::string_view suffix) {
  if (suffix.empty()) return 0;
  if (suffix.size() != 1) return -1;
  switch (suffix.front()) {
    case 'K': return 10;
    case 'M': return 20;
    case 'G': return 30;
    case 'T': return 40;
    default: return -1;
  }
}

}  // namespace

std::optional<std::uint64_t> environment_number(const char* name, std::uint64_t min,
                                                std::uint64_t max, EnvUnit unit) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  const auto bad = [&] {
    return logic_error(concat(name, "='", text, "' is not a number in the range ",
                              range_text(min, max, unit)));
  };
  const std::string_view value{text};
  std::size_t digits = 0;
  while (digits < value.size() && value[digits] >= '0' && value[digits] <= '9') ++digits;
  const int shift = unit == EnvUnit::bytes ? suffix_shift(value.substr(digits))
                                           : (digits == value.size() ? 0 : -1);
  if (digits == 0 || shift < 0) throw bad();
  std::uint64_t number = 0;
  for (std::size_t i = 0; i < digits; ++i) {
    const auto digit = static_cast<std::uint64_t>(value[i] - '0');
    if (number > (UINT64_MAX - digit) / 10) throw bad();
    number = number * 10 + digit;
  }
  if (number > (UINT64_MAX >> shift)) throw bad();
  number <<= shift;
  if (number < min || number > max) throw bad();
  return number;
}

bool environment_switch(const char* name, bool fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  if (std::strcmp(text, "0") == 0) return false;
  if (std::strcmp(text, "1") == 0) return true;
  throw logic_error(concat(name, "='", text, "' is not a switch: expected 0 or 1"));
}

TraceSetting trace_setting(const char* value) {
  const std::string_view text = value == nullptr ? std::string_view{} : std::string_view{value};
  for (const std::string_view off : {"", "0", "false", "off", "no"}) {
    if (text == off) return {};
  }
  for (const std::string_view on : {"1", "true", "on", "yes", "stderr"}) {
    if (text == on) return {TraceSetting::Kind::stderr_stream, {}};
  }
  errno = 0;
  std::FILE* file = std::fopen(value, "a");
  if (file == nullptr) {
    const int reason = errno;
    throw logic_error(concat("SMARTARRAY_TRACE='", text, "': cannot open the file for appending (",
                             std::strerror(reason),
                             "); give a writable path, 1 for standard error or 0 for none"));
  }
  std::fclose(file);
  return {TraceSetting::Kind::file, std::string(text)};
}

}  // namespace smartarray::detail
