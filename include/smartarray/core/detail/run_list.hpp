/**
 * @file core/detail/run_list.hpp
 * @brief Private: the run-length representation of which places hold which bytes of an array: byte
 * ranges, places (the host and each device), holder masks and the runs of a residency state (see
 * residency_state.hpp).
 */
#pragma once

#include <smartarray/core/residency.hpp>
#include <smartarray/core/detail/small_vector.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>

namespace smartarray::detail {

/// The bytes [begin, end) of an array.
struct ByteRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  [[nodiscard]] constexpr std::size_t size() const noexcept { return end - begin; }
  [[nodiscard]] constexpr bool empty() const noexcept { return begin >= end; }
  friend constexpr bool operator==(const ByteRange&, const ByteRange&) = default;
};

/// One copy of an array's data: the host's, or a device's.
struct Place {
  Side side = Side::host;
  std::uint8_t device = 0;  ///< for the device side
  constexpr Place() noexcept = default;
  /// The host, or device 0: with one device, a side is a place.
  constexpr Place(Side on) noexcept : side(on) {}  // NOLINT(google-explicit-constructor)
  constexpr Place(Side on, int ordinal) noexcept
      : side(on), device(static_cast<std::uint8_t>(on == Side::device ? ordinal : 0)) {}
  /// The place's bit in a holder mask.
  [[nodiscard]] constexpr std::uint32_t bit() const noexcept {
    return side == Side::host ? 1U : 2U << device;
  }
  friend constexpr bool operator==(const Place&, const Place&) = default;
};

/// Which places hold a run's bytes: a mask of Place::bit(). With one device it is one of the three
/// named values; `device` and `both` name device 0.
enum class Holder : std::uint32_t { host = 1, device = 2, both = 3 };

/// The bit of a holder whose bytes were discarded (their values are unspecified): every place
/// holds them, so no plan copies them, and a place holds data there only where its own bit is
/// set too (a read on it since). Above every place's bit (max_devices <= 30).
inline constexpr std::uint32_t unspecified_bit = 1U << 31;

[[nodiscard]] constexpr std::uint32_t bits(Holder holder) noexcept {
  return static_cast<std::uint32_t>(holder);
}
/// The place holds the bytes: its copy is current, or they are unspecified.
[[nodiscard]] constexpr bool holds(Holder holder, Place place) noexcept {
  return (bits(holder) & (place.bit() | unspecified_bit)) != 0;
}
/// The place's buffer holds the bytes' values: what a copy out of it reads.
[[nodiscard]] constexpr bool holds_data(Holder holder, Place place) noexcept {
  return (bits(holder) & place.bit()) != 0;
}
/// The devices whose buffers hold a holder's bytes, as a mask of device ordinals (bit d: device d).
[[nodiscard]] constexpr std::uint32_t devices_of(Holder holder) noexcept {
  return (bits(holder) & ~unspecified_bit) >> 1;
}
/// The lowest device of a non-empty mask of device ordinals.
[[nodiscard]] constexpr int lowest_device(std::uint32_t devices) noexcept {
  return std::countr_zero(devices);
}

/// One run: from `begin` to the next run's begin, `holder` holds the bytes.
struct Run {
  std::size_t begin = 0;
  Holder holder = Holder::host;
  friend constexpr bool operator==(const Run&, const Run&) = default;
};

/// The runs of a state: empty means one run [0, infinity) held by the host.
using RunList = SmallVector<Run, 6>;

}  // namespace smartarray::detail
