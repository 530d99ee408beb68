/**
 * @file core/detail/smart_array_support.hpp
 * @brief Private: what SmartArray<T> is built from besides the core: the conversions between its
 * options and the core's, its iterator concepts, and the operands that carry a caller's source
 * location into element access, `emplace` and the comparisons.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/core/array_options.hpp>
#include <smartarray/core/detail/array_core.hpp>
#include <smartarray/views/device_view.hpp>

#include <concepts>
#include <cstddef>
#include <iterator>
#include <type_traits>

namespace smartarray {

namespace detail {

/// The storage choices of `options` that the core needs.
[[nodiscard]] constexpr StorageOptions storage_options(const ArrayOptions& options) noexcept {
  return {.mode = options.mode,
          .pinned_flags = (options.portable ? unsigned{pinned_portable} : 0U) |
                          (options.write_combined ? unsigned{pinned_write_combined} : 0U),
          .require_pinned = options.require_pinned,
          .read_mostly = options.read_mostly,
          .tile_shift = static_cast<std::uint8_t>(options.tile.shift())};
}
/// The resources of `options` (nullptr: the default).
[[nodiscard]] constexpr ResourceChoice resource_choice(const ArrayOptions& options) noexcept {
  return {options.host_resource, options.device_resource};
}
/// The options that `storage` and `resources` came from.
[[nodiscard]] constexpr ArrayOptions array_options(const StorageOptions& storage,
                                                   const ResourceChoice& resources) noexcept {
  return {.host_resource = resources.host,
          .device_resource = resources.device,
          .mode = storage.mode,
          .portable = (storage.pinned_flags & unsigned{pinned_portable}) != 0,
          .write_combined = (storage.pinned_flags & unsigned{pinned_write_combined}) != 0,
          .require_pinned = storage.require_pinned,
          .read_mostly = storage.read_mostly,
          .tile = TileSize(std::size_t{1} << storage.tile_shift)};
}

/// Builds the device-only and wrapping arrays of numba.hpp, which need the core.
struct ArrayFactory;
/// Copies out-of-core chunks through the core (chunked_access.hpp).
struct ChunkedAccess;
/// Records an array's messages to and from other processes (array_messages.hpp).
struct ArrayMessages;

/// `std::vector`'s synth-three-way: `<=>` where the element has it, else built from `<`.
template <typename T>
concept SynthComparable = std::three_way_comparable<T> || requires(const T& a, const T& b) {
  { a < b } -> std::convertible_to<bool>;
};
struct SynthThreeWay {
  template <SynthComparable T>
  constexpr auto operator()(const T& a, const T& b) const {
    if constexpr (std::three_way_comparable<T>) {
      return a <=> b;
    } else {
      if (a < b) return std::weak_ordering::less;
      if (b < a) return std::weak_ordering::greater;
      return std::weak_ordering::equivalent;
    }
  }
};

/// Iterators over `T` objects laid out contiguously: a range of them is copied with one memcpy
/// (not volatile ones: each of their reads must happen, one by one).
template <typename It, typename T>
concept ContiguousIteratorOf =
    std::contiguous_iterator<It> && std::is_same_v<std::remove_cv_t<std::iter_value_t<It>>, T> &&
    !std::is_volatile_v<std::remove_reference_t<std::iter_reference_t<It>>>;

/// An iterator whose `iterator_category` says it is an input iterator (what `std::vector`'s
/// iterator-pair members accept: a non-const `operator*` or a proxy reference is fine).
template <typename It>
concept LegacyInputIterator =
    requires { typename std::iterator_traits<It>::iterator_category; } &&
    std::derived_from<typename std::iterator_traits<It>::iterator_category,
                      std::input_iterator_tag>;
/// The iterators that the iterator-pair members take: legacy and C++20 input iterators.
template <typename It>
concept InputIterator = LegacyInputIterator<It> || std::input_iterator<It>;
/// Input iterators whose range can be walked twice (measured first, then copied).
template <typename It>
concept MultiPassIterator =
    std::forward_iterator<It> ||
    (LegacyInputIterator<It> &&
     std::derived_from<typename std::iterator_traits<It>::iterator_category,
                       std::forward_iterator_tag>);

/// The index argument of `SmartArray::operator[]`: the index and the caller's source location,
/// which an operator cannot take as a parameter of its own. Converting the index captures it.
struct IndexAt {
  /// @brief The index `i`, used at `where`.
  template <typename I>
    requires std::convertible_to<I, std::size_t>
  constexpr IndexAt(  // NOLINT(google-explicit-constructor)
      I i, smartarray::source_location caller = smartarray::source_location::current()) noexcept
      : index(static_cast<std::size_t>(i)), where(caller) {}
  std::size_t index;
  smartarray::source_location where;
};

/// The position argument of `SmartArray::emplace`, a variadic member that cannot end with a
/// defaulted source location: converting the position captures the caller's.
template <typename Iterator>
struct PositionAt {
  /// @brief The position `pos`, used at `where`.
  template <typename I>
    requires std::convertible_to<const I&, Iterator>
  constexpr PositionAt(  // NOLINT(google-explicit-constructor)
      const I& position,
      smartarray::source_location caller = smartarray::source_location::current()) noexcept
      : pos(position), where(caller) {}
  Iterator pos;
  smartarray::source_location where;
};

/// An operand of SmartArray's `==` and `<=>`, which converting the array to it gives the
/// caller's source location.
template <typename T>
struct Compared {
  /// @brief `array`, compared at `where`.
  Compared(const SmartArray<T>& compared,  // NOLINT(google-explicit-constructor)
           smartarray::source_location caller = smartarray::source_location::current()) noexcept
      : array(compared), where(caller) {}
  const SmartArray<T>& array;
  smartarray::source_location where;
};

}  // namespace detail

}  // namespace smartarray
