// One whole sequence of the interpreter: its steps, its final checks, and the pools' balance.
#pragma once

#include "support/api_model/byte_reader.hpp"
#include "support/api_model/model.hpp"

#include <smartarray/smartarray.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

namespace smartarray::test {

/**
 * Runs one sequence: an ApiModel over `input` until the input or `max_operations` is used up,
 * then the final checks, and checks that the default pools got every block back.
 * @throws Divergence naming the difference and listing the operations.
 */
inline ApiModelTotals run_sequence(
    std::span<const std::uint8_t> input, const ApiModelOptions& options,
    std::uint64_t max_operations = std::numeric_limits<std::uint64_t>::max()) {
  const std::size_t device_in_use = default_device_pool().bytes_in_use();
  const std::size_t pinned_in_use = default_pinned_pool().bytes_in_use();
  const bool guard = stale_host_guard();
  ApiModelTotals totals;
  {
    ByteReader in(input);
    ApiModel model(options);
    while (!in.exhausted() && model.totals().operations < max_operations) model.step(in);
    model.check();
    totals = model.totals();
  }
  set_stale_host_guard(guard);
  if (default_device_pool().bytes_in_use() != device_in_use ||
      default_pinned_pool().bytes_in_use() != pinned_in_use) {
    throw Divergence("the default pools hold " +
                     std::to_string(default_device_pool().bytes_in_use()) + " device and " +
                     std::to_string(default_pinned_pool().bytes_in_use()) +
                     " pinned bytes after the sequence, " + std::to_string(device_in_use) +
                     " and " + std::to_string(pinned_in_use) + " before it");
  }
  return totals;
}

}  // namespace smartarray::test
