/**
 * @file core/residency.hpp
 * @brief The residency vocabulary: sides and access intents.
 */
#pragma once

namespace smartarray {

/// @brief One of the two copies of an array's data.
enum class Side {
  host,    ///< the host copy (pinned, pooled)
  device,  ///< the device copy (pooled device memory)
};

/**
 * @brief What an access will do with the data. It decides what is copied and what becomes stale.
 *
 * - `read`: a stale side is refreshed with one copy; both sides are then valid.
 * - `read_write`: as `read`, then the other side is marked stale.
 * - `discard`: everything will be overwritten; nothing is copied and the other side is marked stale.
 */
enum class Access { read, read_write, discard };

/// @brief "host" or "device".
[[nodiscard]] constexpr const char* to_string(Side side) noexcept {
  return side == Side::host ? "host" : "device";
}
/// @brief "read", "read_write" or "discard".
[[nodiscard]] constexpr const char* to_string(Access access) noexcept {
  return access == Access::read ? "read" : access == Access::read_write ? "read_write" : "discard";
}

}  // namespace smartarray
