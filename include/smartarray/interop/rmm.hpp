/**
 * @file interop/rmm.hpp
 * @brief RMM's out-of-memory evicts SmartArrays' device copies: `sa::interop::eviction_callback`
 *        for `rmm::mr::failure_callback_resource_adaptor`, and `sa::interop::with_eviction`, which
 *        wraps an RMM resource in one.
 *
 * RMM itself is not a dependency of smartarray: include this header only in code built against
 * RMM (26.x, which needs CCCL 3.3 or later: put RMM's vendored CCCL before the toolkit's, as the
 * `rmm` preset does). The other directions need no RMM header:
 * `smartarray/interop/cccl_resource.hpp` gives RMM containers smartarray's pool
 * (`CcclResourceView`) and SmartArrays RMM's resources (`CcclDeviceResource`).
 *
 *     auto rmm_pool = rmm::mr::pool_memory_resource(rmm::mr::cuda_memory_resource{}, initial);
 *     auto evicting = sa::interop::with_eviction(rmm_pool);
 *     rmm::mr::set_current_device_resource(evicting);
 *     // an allocation that fails first drops SmartArrays' device copies, then retries
 */
#pragma once

#if !__has_include(<rmm/mr/failure_callback_resource_adaptor.hpp>)
#error "smartarray/interop/rmm.hpp needs RMM's headers (librmm) on the include path"
#endif

#include <smartarray/core/memory_pressure.hpp>
#include <smartarray/runtime/device.hpp>

#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/resource_ref.hpp>

#include <cstddef>
#include <utility>

namespace smartarray::interop {

/**
 * @brief An RMM failure callback (`rmm::mr::failure_callback_t`): drops one more of SmartArrays'
 *        device copies on a device, clean ones first, then the least recently used dirty ones
 *        (written back), and returns the built-in pool's free chunks to the system
 *        (`release_device_memory`).
 *
 * RMM retries the allocation after each call that returns true, so copies go one at a time until
 * the allocation fits: no more is evicted than the failed allocation needs.
 * @param bytes the size of the allocation that failed (unused: the shortfall is not known).
 * @param device_ordinal nullptr for the current device, else a pointer to an `int` ordinal.
 * @return true (retry the allocation) when anything was freed; false (RMM rethrows) otherwise.
 */
inline bool eviction_callback(std::size_t bytes, void* device_ordinal) {
  (void)bytes;
  const int device = device_ordinal != nullptr ? *static_cast<const int*>(device_ordinal)
                                               : current_device().ordinal;
  const DeviceMemoryRelease release = release_device_memory(1, device);
  return release.evicted_bytes > 0 || release.returned_bytes > 0;
}

/**
 * @brief `upstream` behind a `failure_callback_resource_adaptor` whose callback is
 *        `eviction_callback` for the current device at the time of the failure.
 * @param upstream any RMM or CCCL device resource (moved or copied in; RMM's resources are shared
 *        handles).
 */
[[nodiscard]] inline rmm::mr::failure_callback_resource_adaptor<> with_eviction(
    cuda::mr::any_resource<cuda::mr::device_accessible> upstream) {
  return rmm::mr::failure_callback_resource_adaptor<>(std::move(upstream), eviction_callback,
                                                       nullptr);
}

}  // namespace smartarray::interop
