// The long-running property test: random sequences of the whole API, run against the model of
// tests/support/api_model.hpp (the libFuzzer target's interpreter, fed here with pseudo-random
// bytes). After every operation each array's contents, size, capacity, mode and validity equal the
// model's and its transfer counters equal the minimum that the residency contract allows. Calls
// with a bad argument (a destroyed or bogus stream, a device that does not exist, a range past the
// end) are interleaved with the valid ones: each must throw and change nothing.
//
// This file is compiled by nvcc, so on the cuda backend the adapters launch real kernels, mapped
// and managed arrays live in real mapped and managed memory, and launch() also runs raw
// __global__ kernels. SMARTARRAY_PROPERTY_OPS (operations in all) and SMARTARRAY_PROPERTY_SEED
// override the defaults; the GPU script runs a longer one. The last line says how many operations
// ran: "property test: <backend>: <ops> operations, <sequences> sequences, 0 divergences".
#include "support/api_model.hpp"
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <vector>

namespace sa = smartarray;
using sa::test::Element;

using smartarray::test::env_or;

namespace {

constexpr std::uint64_t default_seed = 20261122;
/// On the host backend, two cores: 3 s in a Release build, 6 to 11 s in a Debug build, 30 to 50 s
/// under ASan, under TSan or at 100 us of latency per queued operation (the sanitizer job's runs).
constexpr std::uint64_t default_operations = 200000;
constexpr std::uint64_t operations_per_sequence = 400;
/// An operation reads fewer than 16 bytes on average, so a sequence never runs out of input.
constexpr std::size_t bytes_per_operation = 16;

__global__ void axpy_kernel(sa::DeviceView<const Element> x, sa::DeviceView<Element> y, Element k) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < y.size(); i += stride) {
    y[i] = x[i] * k + y[i];
  }
}

__global__ void scale_into_kernel(sa::DeviceView<const Element> x, sa::DeviceView<Element> y,
                                  Element k) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < y.size(); i += stride) {
    y[i] = x[i] * k;
  }
}

/// The model's raw-kernel hook: launch() takes each array's intent from the kernel's parameters.
void launch_axpy(const sa::SmartArray<Element>& x, sa::SmartArray<Element>& y, bool discard,
                 Element k, sa::StreamRef stream) {
  constexpr unsigned block = 128;
  const auto blocks =
      static_cast<unsigned>(std::clamp<std::size_t>((y.size() + block - 1) / block, 1, 64));
  if (discard) {
    sa::launch(scale_into_kernel, blocks, block, stream, x, sa::out(y), k);
  } else {
    sa::launch(axpy_kernel, blocks, block, stream, x, y, k);
  }
}

}  // namespace

TEST(Property, RandomApiSequencesMatchTheModel) {
  const std::uint64_t seed = env_or("SMARTARRAY_PROPERTY_SEED", default_seed);
  const std::uint64_t operations = env_or("SMARTARRAY_PROPERTY_OPS", default_operations);
  sa::test::ApiModelOptions options;
  if (!sa::test::on_host_backend()) options.launch_axpy = launch_axpy;

  sa::test::ApiModelTotals totals;
  std::uint64_t sequences = 0;
  std::vector<std::uint8_t> input(operations_per_sequence * bytes_per_operation);
  while (totals.operations < operations) {
    std::mt19937_64 bytes(seed * 1'000'003 + sequences);
    std::generate(input.begin(), input.end(),
                  [&bytes] { return static_cast<std::uint8_t>(bytes()); });
    const std::uint64_t length = std::min(operations_per_sequence, operations - totals.operations);
    try {
      const sa::test::ApiModelTotals made = sa::test::run_sequence(input, options, length);
      ASSERT_EQ(made.operations, length) << "sequence " << sequences << " ran out of input";
      totals += made;
    } catch (const sa::test::Divergence& divergence) {
      FAIL() << "seed " << seed << " (SMARTARRAY_PROPERTY_SEED), sequence " << sequences << ": "
             << divergence.what();
    }
    ++sequences;
  }
  std::cout << "property test: " << sa::to_string(sa::backend()) << ": " << totals.operations
            << " operations, " << sequences << " sequences, 0 divergences (" << totals.injected
            << " injected failures, " << totals.recovered << " thrown and retried, "
            << totals.misuses << " misuses rejected; seed " << seed << ")\n";
}
