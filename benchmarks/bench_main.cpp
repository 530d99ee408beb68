// The shared main and the provenance of every benchmark binary (see bench_main.hpp).
#include "bench_main.hpp"

#include "bench_git_commit.hpp"  // generated at build time: SMARTARRAY_BENCH_GIT_COMMIT

#include <smartarray/runtime/detail/cuda_check.hpp>
#include <smartarray/runtime/runtime.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#if __has_include(<cuda/version>)
#include <cuda/version>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

// Set by benchmarks/CMakeLists.txt for this file only.
#ifndef SMARTARRAY_BENCH_VERSION
#define SMARTARRAY_BENCH_VERSION "unknown"
#endif
#ifndef SMARTARRAY_BENCH_BUILD_TYPE
#define SMARTARRAY_BENCH_BUILD_TYPE "unknown"
#endif
#ifndef SMARTARRAY_BENCH_CUDA_ARCHITECTURES
#define SMARTARRAY_BENCH_CUDA_ARCHITECTURES "unknown"
#endif
#ifndef SMARTARRAY_BENCH_GOOGLE_BENCHMARK_VERSION
#define SMARTARRAY_BENCH_GOOGLE_BENCHMARK_VERSION "unknown"
#endif
#ifndef SMARTARRAY_BENCH_GIT_COMMIT
#define SMARTARRAY_BENCH_GIT_COMMIT "unknown"
#endif

namespace smartarray::bench {
namespace {

constexpr const char* no_gpu = "none (host backend)";

/// A CUDA version number (12040) as "12.4".
std::string cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

/// `query()`, or "unknown (why)" when it throws: provenance never stops a benchmark.
template <typename Query>
std::string or_unknown(Query&& query) {
  try {
    return query();
  } catch (const std::exception& e) {
    return std::string("unknown (") + e.what() + ")";
  }
}

std::string git_commit() {
  const char* env = std::getenv("SMARTARRAY_GIT_COMMIT");
  if (env != nullptr && *env != '\0') return env;
  return SMARTARRAY_BENCH_GIT_COMMIT;
}

/// The NVIDIA kernel module's version ("580.159.04"), from /proc/driver/nvidia/version.
std::string kernel_driver_version() {
  std::ifstream file("/proc/driver/nvidia/version");
  std::string line;
  const std::regex version(R"((\d+\.\d+(\.\d+)?))");
  while (std::getline(file, line)) {
    if (line.find("Kernel Module") == std::string::npos) continue;
    std::smatch found;
    const std::string rest = line.substr(line.find("Kernel Module"));
    if (std::regex_search(rest, found, version)) return found.str(1);
  }
  return "unknown";
}

std::string cccl_version() {
#if defined(CCCL_MAJOR_VERSION) && defined(CCCL_MINOR_VERSION) && defined(CCCL_PATCH_VERSION)
  return std::to_string(CCCL_MAJOR_VERSION) + "." + std::to_string(CCCL_MINOR_VERSION) + "." +
         std::to_string(CCCL_PATCH_VERSION);
#else
  return "unknown";
#endif
}

}  // namespace

std::vector<std::pair<std::string, std::string>> provenance() {
  const bool cuda = backend() == BackendKind::cuda;
  std::vector<std::pair<std::string, std::string>> out{
      {"git_commit", git_commit()},
      {"smartarray_version", SMARTARRAY_BENCH_VERSION},
      {"build_type", SMARTARRAY_BENCH_BUILD_TYPE},
      {"backend", to_string(backend())},
  };
  if (cuda) {
    const DeviceProperties& device = device_properties();
    out.emplace_back("gpu_name", device.name);
    out.emplace_back("gpu_compute_capability",
                     std::to_string(device.compute_capability_major) + "." +
                         std::to_string(device.compute_capability_minor));
    out.emplace_back("gpu_driver", kernel_driver_version());
    out.emplace_back("cuda_driver", or_unknown([] {
                       int version = 0;
                       SMARTARRAY_CUDA_TRY(cudaDriverGetVersion(&version),
                                           "read the CUDA driver version");
                       return cuda_version(version);
                     }));
  } else {
    for (const char* key : {"gpu_name", "gpu_compute_capability", "gpu_driver", "cuda_driver"}) {
      out.emplace_back(key, no_gpu);
    }
  }
  out.emplace_back("cuda_runtime", or_unknown([] {
                     int version = 0;
                     SMARTARRAY_CUDA_TRY(cudaRuntimeGetVersion(&version),
                                         "read the CUDA runtime version");
                     return cuda_version(version);
                   }));
  out.emplace_back("cuda_toolkit", cuda_version(CUDART_VERSION));
  out.emplace_back("cuda_architectures", SMARTARRAY_BENCH_CUDA_ARCHITECTURES);
  out.emplace_back("cccl_version", cccl_version());
  out.emplace_back("google_benchmark", SMARTARRAY_BENCH_GOOGLE_BENCHMARK_VERSION);
  return out;
}

void add_provenance() {
  for (const auto& [key, value] : provenance()) benchmark::AddCustomContext(key, value);
}

bool initialize(std::vector<char*>& args) {
  static std::deque<std::string> rewritten;  // what the rewritten flags point to
  portable_min_time_flags(args, rewritten);
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);  // argv[argc], which Initialize reads when it removes its flags
  benchmark::Initialize(&count, args.data());
  args.resize(static_cast<std::size_t>(count));
  args.push_back(nullptr);
  const bool unrecognized = benchmark::ReportUnrecognizedArguments(count, args.data());
  args.pop_back();
  return !unrecognized;
}

int run_main(int argc, char** argv, void (*register_benchmarks)(bool quick),
             const int* failures) {
  const bool quick = std::any_of(argv + 1, argv + argc,
                                 [](const char* arg) { return std::strcmp(arg, "--quick") == 0; });
  static char quick_min_time[] = "--benchmark_min_time=0.01";
  std::vector<char*> args{argv[0]};
  if (quick) args.push_back(quick_min_time);  // a flag given later overrides it
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") != 0) args.push_back(argv[i]);
  }
  if (!initialize(args)) return 1;
  register_benchmarks(quick);
  add_provenance();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return *failures == 0 ? 0 : 1;
}

int run_main(int argc, char** argv, void (*register_benchmarks)()) {
  std::vector<char*> args(argv, argv + argc);
  static char default_name[] = "benchmark";
  if (args.empty()) args.push_back(default_name);
  if (!initialize(args)) return 1;
  if (register_benchmarks != nullptr) register_benchmarks();
  add_provenance();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace smartarray::bench
