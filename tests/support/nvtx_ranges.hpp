// Shared by the NVTX tests: the runs, the trace file, and this thread's smartarray ranges.
#pragma once

#include "support/nvtx_recorder.hpp"

#include <smartarray/config.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace smartarray::test::nvtx {

// The trace sink is read once, on the first migration of the process: set it before any test runs.
inline const std::string trace_path = [] {
  std::string path =
      ::testing::TempDir() + "smartarray_nvtx_trace_" + std::to_string(::getpid()) + ".log";
  std::remove(path.c_str());
  ::setenv("SMARTARRAY_TRACE", path.c_str(), 1);
  return path;
}();

inline bool tool_attached() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  return path != nullptr && *path != '\0';
}
inline bool switched_off() {
  const char* value = std::getenv("SMARTARRAY_NVTX");
  return value != nullptr && std::strcmp(value, "0") == 0;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The trace lines written since `start` (a length of the trace file).
inline std::vector<std::string> trace_lines_since(std::size_t start) {
  std::istringstream text(read_file(trace_path).substr(start));
  std::vector<std::string> lines;
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  return lines;
}

/// A range of the smartarray domain on this thread, and the index of the one it is inside.
struct Range {
  nvtx::Record open;
  int parent = -1;
  bool closed = false;
};

/// The ranges of the smartarray domain that this thread opened since record `first` (other
/// domains, such as CCCL's, are left out); every one must be closed.
inline std::vector<Range> ranges_since(std::size_t first) {
  const std::uint64_t me = std::hash<std::thread::id>{}(std::this_thread::get_id());
  const std::vector<nvtx::Record> records = nvtx::records();
  std::vector<Range> ranges;
  std::vector<int> open;
  for (std::size_t i = first; i < records.size(); ++i) {
    const nvtx::Record& record = records[i];
    if (record.domain != "smartarray" || record.thread != me ||
        record.kind == nvtx::Record::Kind::mark) {
      continue;
    }
    if (record.kind == nvtx::Record::Kind::push) {
      ranges.push_back({record, open.empty() ? -1 : open.back(), false});
      open.push_back(static_cast<int>(ranges.size()) - 1);
    } else if (!open.empty()) {
      ranges[static_cast<std::size_t>(open.back())].closed = true;
      open.pop_back();
    } else {
      ADD_FAILURE() << "a pop without a push";
    }
  }
  EXPECT_TRUE(open.empty()) << open.size() << " ranges left open";
  return ranges;
}

/// A migration's range: "H2D device 0 (reason) at file:line".
inline const std::regex migration_message(R"(^(.*?) (device \d+(?: -> \d+)?) \((.*)\) at (.+)$)");
/// A trace line: "smartarray: H2D device 0 4000 B array #3 "x" (reason) at file:line".
inline const std::regex trace_line(
    R"(^smartarray: (.*?) (device \d+(?: -> \d+)?) (\d+) B (array #(\d+)(?: ".*")?) \((.*)\) at (.+)$)");

inline bool is_migration(const Range& range) {
  return range.open.message.rfind("acquire ", 0) != 0 &&
         std::regex_match(range.open.message, migration_message);
}

/// "/<file>:<line>": how a range or trace line ends that names `line` of the file of `where`.
inline std::string call_site(source_location where, int line) {
  const std::string file = where.file_name();
  const std::size_t slash = file.rfind('/');
  const std::string name = file.substr(slash == std::string::npos ? 0 : slash + 1);
  return "/" + name + ":" + std::to_string(line);
}

/// True when `range` starts with `start` and names `line` of the caller's file as its call site.
inline bool named(const Range& range, const std::string& start, int line,
                  source_location where = source_location::current()) {
  const std::string site = call_site(where, line);
  const std::string& message = range.open.message;
  return message.rfind(start, 0) == 0 && message.size() >= site.size() &&
         message.compare(message.size() - site.size(), site.size(), site) == 0;
}

/// "<what> at .../<the caller's file>:<line>", as a range names a call of that file.
inline bool at_line(const Range& range, const std::string& what, int line,
                    source_location where = source_location::current()) {
  return named(range, what + " at ", line, where);
}

struct Twice {
  SMARTARRAY_HOST_DEVICE float operator()(float x) const { return 2.0F * x; }
};

}  // namespace smartarray::test::nvtx
