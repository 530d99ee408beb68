// The one place where the supported GoogleTest versions (1.11 to 1.15) differ for this suite.
#pragma once

#include <gtest/gtest.h>

// GoogleTest 1.12 added GTEST_FLAG_SET; 1.11 sets a flag by assigning to GTEST_FLAG(name).
#ifdef GTEST_FLAG_SET
#define SMARTARRAY_GTEST_FLAG_SET(name, value) GTEST_FLAG_SET(name, value)
#else
#define SMARTARRAY_GTEST_FLAG_SET(name, value) (void)(::testing::GTEST_FLAG(name) = (value))
#endif
