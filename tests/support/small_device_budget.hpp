// A device budget small enough that the adapters take their out-of-core path, set for one test
// and restored after it, and the number of chunks a call takes under it (the fixture of the
// out-of-core tests).
#pragma once

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>

namespace smartarray::test {

class SmallDeviceBudget : public ::testing::Test {
 protected:
  /// 8 MiB. On the host backend a smaller budget from the environment stays.
  static constexpr std::size_t budget = std::size_t{8} << 20;

  void SetUp() override {
    if (backend() == BackendKind::cuda || device_budget() > budget) {
      previous_ = default_device_pool().maximum_size();
      set_device_budget(budget);
      restore_ = true;
    }
    // Leave no earlier test's memory in the pool: the budget is what the chunks may take.
    (void)default_device_pool().trim();
  }
  void TearDown() override {
    if (restore_) set_device_budget(previous_);
  }
  /// The chunks of a call over `count` elements with `element_bytes` bytes of arrays per element
  /// (core/detail/chunked_access.hpp).
  static std::size_t chunks_of(std::size_t count, std::size_t element_bytes) {
    const std::size_t chunk =
        device_budget() / 2 / (detail::chunk_slots * element_bytes) / 256 * 256;
    return (count + chunk - 1) / chunk;
  }

 private:
  std::optional<std::size_t> previous_;
  bool restore_ = false;
};

}  // namespace smartarray::test
