// Test entry point shared by every test binary (the environment: backend_environment.hpp).
#include "support/backend_environment.hpp"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // gtest takes ownership
  ::testing::AddGlobalTestEnvironment(new smartarray::test::BackendEnvironment);
  return RUN_ALL_TESTS();
}
