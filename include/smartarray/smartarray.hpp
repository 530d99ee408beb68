/**
 * @file smartarray.hpp
 * @brief Umbrella header: everything a user of smartarray needs.
 *
 * `smartarray/thrust_interop.hpp` is not included: it needs nvcc and pulls in Thrust, so files that
 * use Thrust include it themselves.
 */
#pragma once

#include <smartarray/algorithms.hpp>
#include <smartarray/config.hpp>
#include <smartarray/debug.hpp>
#include <smartarray/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/for_each_index.hpp>
#include <smartarray/host_registration.hpp>
#include <smartarray/launch.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/memory_mode.hpp>
#include <smartarray/numba.hpp>
#include <smartarray/observability.hpp>
#include <smartarray/out.hpp>
#include <smartarray/reduce.hpp>
#include <smartarray/residency.hpp>
#include <smartarray/runtime.hpp>
#include <smartarray/shaped_view.hpp>
#include <smartarray/smart_array.hpp>
#include <smartarray/stream.hpp>
#include <smartarray/transform.hpp>
