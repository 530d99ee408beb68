/**
 * @file smartarray.hpp
 * @brief Umbrella header: everything a user of smartarray needs.
 *
 * Of the interop layer (`smartarray/interop/`), only `numba.hpp` is included. Files that bridge to
 * another library include its bridge themselves: `thrust.hpp` needs nvcc and pulls in Thrust,
 * `rmm.hpp` needs RMM's headers, `cccl_resource.hpp` sets CCCL's memory-resource macro before any
 * other CCCL memory-resource header, and `external_allocator.hpp` serves other libraries'
 * allocator hooks.
 */
#pragma once

#include <smartarray/adapters/algorithms.hpp>
#include <smartarray/config.hpp>
#include <smartarray/diagnostics/debug.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/graph.hpp>
#include <smartarray/runtime/host_registration.hpp>
#include <smartarray/adapters/launch.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/memory/memory_mode.hpp>
#include <smartarray/interop/numba.hpp>
#include <smartarray/diagnostics/observability.hpp>
#include <smartarray/adapters/out.hpp>
#include <smartarray/adapters/reduce.hpp>
#include <smartarray/adapters/transform_reduce.hpp>
#include <smartarray/core/memory_pressure.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/views/shaped_view.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/adapters/transform.hpp>
