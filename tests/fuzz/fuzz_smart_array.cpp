// The libFuzzer target: each input is one sequence of API operations (tests/support/api_model.hpp)
// on the host backend. A divergence from the model prints the difference and the operations, and
// aborts, so that libFuzzer keeps the input. The preset fuzz builds and runs it.
#include "support/api_model.hpp"

#include <smartarray/runtime/runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

namespace {

smartarray::test::ApiModelTotals& totals() {
  static smartarray::test::ApiModelTotals all;
  return all;
}
/// Runs of an input: libFuzzer runs some twice (again under LeakSanitizer when it saw more
/// allocations than frees).
std::uint64_t& executions() {
  static std::uint64_t count = 0;
  return count;
}

/// The line the fuzz test reports (run_fuzzer.cmake), printed when libFuzzer exits.
void print_totals() {
  const smartarray::test::ApiModelTotals& all = totals();
  std::printf(
      "fuzz_smart_array: %llu executions, %llu operations, %llu injected failures (%llu "
      "thrown and retried), 0 divergences\n",
      static_cast<unsigned long long>(executions()),
      static_cast<unsigned long long>(all.operations),
      static_cast<unsigned long long>(all.injected),
      static_cast<unsigned long long>(all.recovered));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The host backend, whatever the machine has: the fuzzer runs in CI without a GPU.
  setenv("SMARTARRAY_BACKEND", "host", 1);
  std::atexit(print_totals);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    totals() += smartarray::test::run_sequence(std::span<const std::uint8_t>(data, size), {});
  } catch (const smartarray::test::Divergence& divergence) {
    std::fprintf(stderr, "fuzz_smart_array: divergence from the model: %s\n", divergence.what());
    std::abort();
  }
  ++executions();
  return 0;
}
