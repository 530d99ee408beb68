/**
 * @file memory/default_resources.hpp
 * @brief The per-device default resources that every SmartArray allocates from, and how to replace
 *        them.
 *
 * For each device there is a built-in device resource and a built-in pinned resource, each a
 * `StatisticsAdaptor` over a `PoolResource` over the raw upstream:
 *
 *     StatisticsAdaptor -> PoolResource ("device 0 pool") -> DeviceMemoryResource
 *     StatisticsAdaptor -> PoolResource ("pinned pool") -> PinnedMemoryResource
 *
 * They are built on first use over the active backend and never destroyed: arrays, streams and the
 * backend itself may outlive any order of static destruction. `set_device_resource` and
 * `set_pinned_resource` replace the resource that new arrays use; an array can also be given its
 * own.
 *
 * Each device has its own device pool, budget and eviction: an array's copy on device 1 comes
 * from device 1's resource, and filling device 1 evicts copies on device 1 only. Pinned host
 * memory serves every device (the CUDA runtime makes it accessible to all of them), so every
 * ordinal names the one pinned pool; the ordinal is still checked.
 *
 * Every function below throws logic_error for an ordinal that is not a device of the active
 * backend.
 */
#pragma once

#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>

#include <cstddef>
#include <optional>

namespace smartarray {

/**
 * @brief The built-in device pool of `device`.
 * @param device the device ordinal.
 */
[[nodiscard]] PoolResource& default_device_pool(int device = 0);

/// @brief The smallest device budget, 4 KiB: one tile of the smallest size (`TileSize`), the unit
///        in which arrays move. A smaller budget holds no tile of any array.
inline constexpr std::size_t min_device_budget = std::size_t{4} << 10;
/// @brief The largest device budget, 1 EiB (2^60 bytes): far above any device, and still far
///        from overflowing the pool's arithmetic.
inline constexpr std::size_t max_device_budget = std::size_t{1} << 60;

/**
 * @brief The device budget: the most memory the built-in device pool may hold (its maximum size),
 *        or, when none was set, the device's total memory.
 *
 * `transform`, `map`, `reduce`, `fill` and `copy` run a call whose arrays need more device
 * memory than this in chunks (docs/residency.md); `launch` refuses such a call with
 * `out_of_memory`. `SMARTARRAY_DEVICE_BUDGET` sets it when the pool is built: a number of bytes,
 * or one followed by K, M, G or T (powers of 1024), from `min_device_budget` to
 * `max_device_budget` (4 KiB to 1 EiB). On the host backend the device's memory is
 * `SMARTARRAY_HOST_DEVICE_MEMORY`.
 * `SMARTARRAY_DEVICE_BUDGET` applies to every device.
 * @param device the device ordinal.
 * @throws logic_error naming the variable, its value and the range when SMARTARRAY_DEVICE_BUDGET
 *         is not a size in that range (and so does every call that builds the pool, until it is
 *         fixed).
 */
[[nodiscard]] std::size_t device_budget(int device = 0);
/**
 * @brief Sets the device budget: the maximum size of the built-in device pool, rounded down to
 *        the pool's granularity (256 bytes). Memory it holds above a lowered budget stays until
 *        trimmed or evicted; the pool only stops growing.
 * @param bytes the budget, from `min_device_budget` to `max_device_budget` (4 KiB to 1 EiB);
 *        none (the device's memory) when empty.
 * @param device the device ordinal.
 * @throws logic_error naming `bytes` and the range when it lies outside it; the budget is then
 *         unchanged.
 */
void set_device_budget(std::optional<std::size_t> bytes, int device = 0);

/**
 * @brief The built-in pinned host pool, which every device shares.
 * @param device the device ordinal.
 */
[[nodiscard]] PoolResource& default_pinned_pool(int device = 0);

/**
 * @brief The built-in device resource of `device`: statistics over `default_device_pool`.
 * @param device the device ordinal.
 */
[[nodiscard]] StatisticsAdaptor& default_device_resource(int device = 0);

/**
 * @brief The built-in pinned resource for `device`: statistics over `default_pinned_pool`.
 * @param device the device ordinal.
 */
[[nodiscard]] StatisticsAdaptor& default_pinned_resource(int device = 0);

/**
 * @brief The device resource that new arrays use: the one last set, else the built-in one.
 * @param device the device ordinal.
 */
[[nodiscard]] MemoryResource& device_resource(int device = 0);

/**
 * @brief The pinned host resource that new arrays use: the one last set, else the built-in one.
 * @param device the device ordinal.
 */
[[nodiscard]] MemoryResource& pinned_resource(int device = 0);

/**
 * @brief Makes new arrays take device memory from `resource`. Arrays that exist keep theirs.
 * @param resource the new resource, which must outlive every array that uses it; nullptr restores
 *        the built-in one.
 * @param device the device ordinal.
 * @return the previous resource, or nullptr when it was the built-in one, so that setting the
 *         returned value back restores it.
 */
MemoryResource* set_device_resource(MemoryResource* resource, int device = 0);

/**
 * @brief Makes new arrays take pinned host memory from `resource` (for every device, as the
 *        pinned pool is shared). Arrays that exist keep theirs.
 * @param resource the new resource, which must outlive every array that uses it; nullptr restores
 *        the built-in one.
 * @param device the device ordinal.
 * @return the previous resource, or nullptr when it was the built-in one.
 */
MemoryResource* set_pinned_resource(MemoryResource* resource, int device = 0);

}  // namespace smartarray
