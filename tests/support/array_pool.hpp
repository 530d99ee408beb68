// A device pool of a fixed number of 1 MiB blocks, for tests of what happens when a pool runs out.
#pragma once

#include <smartarray/core/array_options.hpp>
#include <smartarray/memory/pool_resource.hpp>
#include <smartarray/memory/upstream_resources.hpp>

#include <cstddef>
#include <string>
#include <utility>

namespace smartarray::test {

/// A device pool of exactly `blocks` one-array blocks of `block_bytes` that may not grow further,
/// and the options of arrays whose device copies it holds.
struct ArrayPool {
  static constexpr std::size_t block_bytes = std::size_t{1} << 20;

  explicit ArrayPool(std::size_t blocks, std::string name = "array pool")
      : pool(upstream, options_for(blocks, std::move(name))) {}
  static PoolOptions options_for(std::size_t blocks, std::string name) {
    PoolOptions options;
    options.chunk_size = block_bytes;
    options.max_chunk_size = block_bytes;
    options.maximum_size = blocks * block_bytes;
    options.name = std::move(name);
    return options;
  }
  DeviceMemoryResource upstream;
  PoolResource pool;
  ArrayOptions arrays{.device_resource = &pool};
};

}  // namespace smartarray::test
