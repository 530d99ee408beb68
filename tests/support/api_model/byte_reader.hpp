// The interpreter's input: its element type, and the bytes that each operation is decoded from.
#pragma once

#include <smartarray/smartarray.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace smartarray::test {

/// The element type: unsigned, so that the device's arithmetic wraps exactly as the model's does.
using Element = std::uint32_t;
/// What insert and erase return.
using ConstIterator = SmartArray<Element>::const_iterator;

/// Written over outputs before a kernel writes them; never produced as an input value.
inline constexpr Element poison_element = 0xA5A5A5A5U;

/// The input of the interpreter. Reads past the end give zeros, so that every input decodes.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> bytes) noexcept : bytes_(bytes) {}

  [[nodiscard]] bool exhausted() const noexcept { return at_ >= bytes_.size(); }
  std::uint8_t byte() noexcept { return at_ < bytes_.size() ? bytes_[at_++] : std::uint8_t{0}; }
  /// A number in [0, bound), for bounds up to 65536: one byte up to 256, two above.
  std::size_t pick(std::size_t bound) noexcept {
    std::size_t raw = byte();
    if (bound > 256) raw = raw << 8U | byte();
    return raw % bound;
  }
  bool flag() noexcept { return (byte() & 1U) != 0; }
  /// An input value from two bytes, spread over all 32 bits: never zero (zeros hide unwritten
  /// outputs) and never the poison.
  Element value() noexcept { return usable(mix(seed())); }
  /// `count` input values from one two-byte seed, to spare the fuzzer's bytes.
  std::vector<Element> values(std::size_t count) noexcept {
    Element state = seed();
    std::vector<Element> out(count);
    for (Element& v : out) v = usable(mix(state += 0x9E3779B9U));
    return out;
  }

 private:
  Element seed() noexcept {
    const Element high = byte();
    return high << 8U | byte();
  }
  /// The splitmix32 finalizer: distinct seeds give distinct values.
  static Element mix(Element z) noexcept {
    z = (z ^ (z >> 16U)) * 0x85EBCA6BU;
    z = (z ^ (z >> 13U)) * 0xC2B2AE35U;
    return z ^ (z >> 16U);
  }
  static Element usable(Element raw) noexcept {
    return raw == 0 || raw == poison_element ? Element{1} : raw;
  }

  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
};

}  // namespace smartarray::test
