// What the tests' NVTX injection library (nvtx_recorder.cpp) recorded. NVTX loads it when
// NVTX_INJECTION64_PATH names it; a test links it too, and reads the one process-wide log here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace smartarray::test::nvtx {

/// One NVTX event, in the order the process made them.
struct Record {
  enum class Kind { push, pop, mark };
  Kind kind = Kind::push;
  std::string domain;          ///< the domain's name ("" for none)
  std::string message;         ///< registered or ASCII text (push and mark)
  std::uint32_t category = 0;  ///< 0: none
  std::string category_name;   ///< the category's name when the event was made ("": unnamed)
  bool has_payload = false;    ///< an unsigned 64-bit payload came with it
  std::uint64_t payload = 0;
  std::uint64_t thread = 0;  ///< which thread made it
};

/// Every event so far.
[[nodiscard]] std::vector<Record> records();
/// How many times NVTX initialized the recorder: once per executable or shared library that
/// makes NVTX calls, and only when NVTX_INJECTION64_PATH names the recorder.
[[nodiscard]] int initializations();
/// The names of the domains created, each once.
[[nodiscard]] std::vector<std::string> domains();

}  // namespace smartarray::test::nvtx
