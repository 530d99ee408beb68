/**
 * @file diagnostics/debug.hpp
 * @brief Debugging aids: catching host pointers kept across a device write.
 *
 * `data()`, `host_view()` and iterators hand out plain pointers into the host copy. A pointer
 * kept while a kernel writes the array, and read afterwards, sees the stale host copy. With the
 * stale-host guard on, every whole page of a stale host copy is made inaccessible until the array
 * takes it back (any host acquire does), so such a read stops the program with a message that
 * names the array, the bytes and the device access that made them stale:
 *
 *     smartarray: host pointer into SmartArray #3 used at byte 8192 of its host copy after the
 *     device wrote it (device_view at pipeline.cu:42); take the host copy again ...
 *
 * It costs two `mprotect` calls per host/device round trip, and a device write first waits for
 * the array's pending uploads (which read the pages it closes), so it is off by default: turn it
 * on with `set_stale_host_guard(true)` or `SMARTARRAY_STALE_HOST_GUARD=1` in debug runs. Only whole
 * pages inside the stale range are guarded (arrays of at least two pages are always covered);
 * the explicit and pageable modes are guarded (mapped and managed memory is never protected).
 */
#pragma once

namespace smartarray {

/// @brief Turns the stale-host guard on or off for host copies that go stale from now on.
void set_stale_host_guard(bool on);
/// @brief Whether the guard is on (initially: SMARTARRAY_STALE_HOST_GUARD=1 in the environment).
[[nodiscard]] bool stale_host_guard();

}  // namespace smartarray
