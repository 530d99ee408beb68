/**
 * @file smartarray.hpp
 * @brief Umbrella header: everything a user of smartarray needs.
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/for_each_index.hpp>
#include <smartarray/memory/default_resources.hpp>
#include <smartarray/memory/memory_resource.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/statistics_adaptor.hpp>
#include <smartarray/memory/upstream_resources.hpp>
#include <smartarray/observability.hpp>
#include <smartarray/residency.hpp>
#include <smartarray/runtime.hpp>
#include <smartarray/smart_array.hpp>
#include <smartarray/stream.hpp>
