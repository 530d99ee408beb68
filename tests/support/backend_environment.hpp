// The test binaries' GoogleTest environment: the backend comes from SMARTARRAY_BACKEND (CTest sets
// it per registration); a cuda run on a machine without a device skips every test and prints the
// marker that CTest turns into "skipped"; ExpectTransfers reports a mismatch as a test failure.
#pragma once

#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace smartarray::test {

class BackendEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* wanted = std::getenv("SMARTARRAY_BACKEND");
    if (wanted != nullptr && std::strcmp(wanted, "cuda") == 0 &&
        !smartarray::cuda_device_available()) {
      std::cout << "SMARTARRAY_NO_CUDA_DEVICE: no CUDA device, the cuda run is skipped\n";
      GTEST_SKIP() << "no CUDA device";
    }
    std::cout << "backend: " << smartarray::to_string(smartarray::backend()) << ", device: "
              << smartarray::device_properties().name << "\n";
    smartarray::set_expect_transfers_handler(
        [](const std::string& message) { ADD_FAILURE() << message; });
  }
};

}  // namespace smartarray::test
