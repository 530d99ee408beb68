/**
 * @file core/array_options.hpp
 * @brief `ArrayOptions`, `TileSize`, `Allocator<T>` and `no_init`: the choices a SmartArray is
 *        made with.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/memory/memory_mode.hpp>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <memory>
#include <type_traits>

namespace smartarray {

/**
 * @brief The tile of an array's element access (docs/residency.md): `operator[]`, `at()`,
 *        `front()` and `back()` on a stale host copy fetch the tile that holds the element, and a
 *        write marks only that tile stale on the device.
 *
 * A power of two from 4 KiB to 1 GiB. The default, 4 KiB (one page), brings a host update of a few
 * elements closest to hand-written copies of just those elements on the GPU machine: the tiles
 * it uploads cost a kernel that reads them more than the tiles a read fetches cost the host
 * (docs/residency.md gives the measurement).
 */
class TileSize {
 public:
  /// @brief The smallest and largest tiles.
  static constexpr std::size_t min_bytes = std::size_t{4} << 10;
  static constexpr std::size_t max_bytes = std::size_t{1} << 30;  ///< @copydoc min_bytes
  /// @brief The default tile, 4 KiB.
  constexpr TileSize() noexcept = default;
  /**
   * @brief A tile of `bytes` bytes.
   * @param bytes a power of two in [min_bytes, max_bytes].
   * @throws std::invalid_argument naming `bytes` when it is not one.
   */
  constexpr explicit TileSize(std::size_t bytes) : shift_(shift_of(bytes)) {}
  /// @brief The tile size in bytes.
  [[nodiscard]] constexpr std::size_t bytes() const noexcept { return std::size_t{1} << shift_; }
  /// @brief log2 of bytes().
  [[nodiscard]] constexpr unsigned shift() const noexcept { return shift_; }
  /// @brief Equal when the sizes are.
  friend constexpr bool operator==(const TileSize&, const TileSize&) = default;

 private:
  static constexpr unsigned shift_of(std::size_t bytes) {
    if (bytes < min_bytes || bytes > max_bytes || (bytes & (bytes - 1)) != 0) {
      throw std::invalid_argument("TileSize(" + std::to_string(bytes) +
                                  "): a tile must be a power of two from " +
                                  std::to_string(min_bytes) + " to " +
                                  std::to_string(max_bytes) + " bytes");
    }
    unsigned shift = 0;
    while ((std::size_t{1} << shift) < bytes) ++shift;
    return shift;
  }
  unsigned shift_ = 12;
};

/// @brief Per-array choices made at construction. An `Allocator<T>` names the same choices, and
///        converts to them, so every constructor that takes options also takes an allocator.
struct ArrayOptions {
  /// Host storage; nullptr: `pinned_resource()`, falling back to pageable memory (with a notice)
  /// when pinned memory cannot be had. A resource given here is never replaced: its failures throw.
  MemoryResource* host_resource = nullptr;
  MemoryResource* device_resource = nullptr;  ///< device storage; nullptr: `device_resource()`
  /// How the data is stored and moved (memory_mode.hpp). Mapped and managed arrays take their one
  /// buffer from the backend directly, not from the resources above.
  MemoryMode mode = MemoryMode::explicit_copy;
  /// Mapped mode: pinned for every CUDA context (cudaHostAllocPortable).
  bool portable = false;
  /// Mapped mode: write-combined memory (cudaHostAllocWriteCombined): faster for the device to
  /// read over the bus, very slow for the host to read.
  bool write_combined = false;
  /// Explicit mode: throw instead of falling back to pageable memory when the default pinned
  /// resource cannot allocate.
  bool require_pinned = false;
  /// Managed mode: the data is read far more than written (cudaMemAdviseSetReadMostly): the host
  /// and the device each keep a read-only copy, so reads on both sides fault nothing, and a write
  /// invalidates the other copies. Ignored by the other modes.
  bool read_mostly = false;
  /// The tile of element access on a stale host copy.
  TileSize tile{};

  /// @brief Equal when every choice is the same (resources compare by address).
  friend constexpr bool operator==(const ArrayOptions&, const ArrayOptions&) = default;
};

/**
 * @brief The `allocator_type` of `SmartArray<T>`: a copyable, comparable value that names an
 *        array's `ArrayOptions` (its memory resources and memory mode).
 *
 * Generic code that passes allocators around works unchanged: `a.get_allocator()` returns the
 * options `a` was made with, and every constructor that takes `ArrayOptions` takes an allocator
 * (it converts to its options), so `V(n, alloc)`, `V(first, last, alloc)`, `V(other, alloc)` and
 * `V(std::move(other), alloc)` make arrays with the same resources. The array never allocates
 * through `allocate()`: it is there for code that allocates through `std::allocator_traits`, and
 * hands out host memory from the named host resource.
 *
 * Copy assignment, move assignment and swap take the other array's options along, as they always
 * did: the propagation traits say so.
 *
 * @tparam T the element type.
 */
template <typename T>
class Allocator {
 public:
  using value_type = T;                                          ///< what allocate() is for
  using propagate_on_container_copy_assignment = std::true_type;  ///< `a = b` takes b's options
  using propagate_on_container_move_assignment = std::true_type;  ///< so does a move
  using propagate_on_container_swap = std::true_type;             ///< and a swap
  using is_always_equal = std::false_type;                       ///< allocators can differ

  /// @brief The default options: the default resources, explicit mode.
  constexpr Allocator() noexcept = default;
  /// @brief An allocator naming `options`.
  /// @param options the resources and memory mode.
  constexpr explicit Allocator(const ArrayOptions& options) noexcept : options_(options) {}
  /// @brief The same options for another element type.
  /// @param other the allocator to take the options of.
  template <typename U>
  constexpr Allocator(const Allocator<U>& other) noexcept  // NOLINT(google-explicit-constructor)
      : options_(other.options()) {}
  /// @brief The default options: `std::allocator` holds no state.
  template <typename U>
  constexpr Allocator(const std::allocator<U>& /*unused*/) noexcept {}  // NOLINT(google-explicit-constructor)

  /// @brief The options this allocator names.
  [[nodiscard]] constexpr const ArrayOptions& options() const noexcept { return options_; }
  /// @brief The options this allocator names, so that it can be passed where options are taken.
  constexpr operator const ArrayOptions&() const noexcept {  // NOLINT(google-explicit-constructor)
    return options_;
  }

  /**
   * @brief Host memory for `n` elements from the host resource (`pinned_resource()` when none is
   *        named), aligned to at least 256 bytes.
   * @param n the number of elements.
   * @throws std::bad_array_new_length when `n` elements do not fit in a size_t.
   * @throws out_of_memory when the resource cannot allocate.
   */
  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(host_memory().allocate_sync(n * sizeof(T), alignment));
  }
  /// @brief Gives back memory from allocate().
  /// @param p the memory.
  /// @param n the number of elements it was allocated for.
  void deallocate(T* p, std::size_t n) noexcept {
    host_memory().deallocate_sync(p, n * sizeof(T), alignment);
  }

 private:
  static constexpr std::size_t alignment = std::max(alignof(T), default_alignment);
  [[nodiscard]] MemoryResource& host_memory() const {
    return options_.host_resource != nullptr ? *options_.host_resource : pinned_resource();
  }

  ArrayOptions options_{};
};

/// @brief Equal when both name the same options: arrays made with either are interchangeable.
/// @param a one allocator.
/// @param b the other.
template <typename T, typename U>
[[nodiscard]] constexpr bool operator==(const Allocator<T>& a, const Allocator<U>& b) noexcept {
  return a.options() == b.options();
}

/// @brief Equal when `a` names the default options, which is what a `std::allocator` means.
/// @param a the allocator.
template <typename T, typename U>
[[nodiscard]] constexpr bool operator==(const Allocator<T>& a,
                                        const std::allocator<U>& /*default_options*/) noexcept {
  return a.options() == ArrayOptions{};
}

/// @brief The tag type of `no_init`.
struct NoInit {
  explicit NoInit() = default;
};
/// @brief Asks a constructor for elements that are not written: `SmartArray<T>(n, no_init)`.
inline constexpr NoInit no_init{};

}  // namespace smartarray
