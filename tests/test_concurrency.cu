// Several host threads over the shared pools and backend: arrays owned per thread, one const
// array read by many threads while its device copy is newer, and an array moved from thread to
// thread. Every body runs on both backends; the sanitizer CI job runs this binary under TSan.
//
// Worker threads collect what they found into strings that the test thread checks, so that no
// GoogleTest assertion runs off the test thread.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <latch>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::random_values;

namespace {

using sa::test::copy_on_device;
using sa::test::host_copy;
using sa::test::scale_on_device;
using sa::test::scaled;

constexpr int thread_count = 8;

/// What one worker thread found wrong; empty when all was right.
using Findings = std::vector<std::string>;

template <typename... Parts>
void note(Findings& findings, const Parts&... parts) {
  findings.push_back(sa::detail::concat(parts...));
}

template <typename T>
void check_contents(Findings& findings, const char* what, const std::vector<T>& got,
                    const std::vector<T>& want) {
  if (got == want) return;
  std::size_t first = 0;
  while (first < got.size() && first < want.size() && got[first] == want[first]) ++first;
  note(findings, what, ": size ", got.size(), " (want ", want.size(), "), first difference at ",
       first);
}

void check_counts(Findings& findings, const char* what, const sa::TransferStats& got,
                  std::uint64_t h2d, std::uint64_t d2h, std::uint64_t d2d) {
  if (got.h2d_count == h2d && got.d2h_count == d2h && got.d2d_count == d2d) return;
  note(findings, what, ": transfers ", got.to_string(), "; want h2d ", h2d, ", d2h ", d2h,
       ", d2d ", d2d);
}

/// Runs `work(i)` on `thread_count` threads and returns everything they found.
template <typename Work>
Findings run_threads(Work work) {
  std::vector<std::future<Findings>> results;
  for (int i = 0; i < thread_count; ++i) results.push_back(std::async(std::launch::async, work, i));
  Findings all;
  for (auto& result : results) {
    for (std::string& finding : result.get()) all.push_back(std::move(finding));
  }
  return all;
}

std::string joined(const Findings& findings) {
  std::ostringstream out;
  for (const std::string& finding : findings) out << "\n  " << finding;
  return out.str();
}

using sa::test::gate;

/// The inputs of one owner thread, drawn on the test thread (the test generator is not shared).
struct OwnerInputs {
  std::vector<float> values;
  std::vector<float> tail;
};

/// One round of an owner thread: allocate, write on the host, run kernels on its own stream, read
/// back, write on the host again, append, and check contents and each array's transfers.
void owner_round(Findings& findings, const OwnerInputs& in, sa::StreamRef stream) {
  const std::size_t n = in.values.size();
  SmartArray<float> a(in.values);
  a.reserve(n + in.tail.size());  // the device buffer is then sized for the appends too
  SmartArray<float> out(n);
  sa::test::poison(out.data(), n);

  scale_on_device(a, stream);
  scale_on_device(a, stream);
  copy_on_device(out, a, stream);
  std::vector<float> expected = scaled(scaled(in.values));
  check_contents(findings, "device result read on the host", host_copy(a), expected);
  check_contents(findings, "device copy read on the host", host_copy(out), expected);

  a[0] += 1.0F;  // a host write: the device copy of its tile becomes stale
  expected[0] += 1.0F;
  for (const float x : in.tail) a.push_back(x);
  expected.insert(expected.end(), in.tail.begin(), in.tail.end());
  scale_on_device(a, stream);
  check_contents(findings, "second device result", host_copy(a), scaled(expected));

  // The second upload is the written tile and the appended tail: one copy when they touch (an
  // array of one tile), two when tiles lie between them.
  const std::size_t second_uploads = n * sizeof(float) > sa::TileSize{}.bytes() ? 2 : 1;
  check_counts(findings, "array a", a.transfer_stats(), 1 + second_uploads, 2, 0);
  check_counts(findings, "array out", out.transfer_stats(), 0, 1, 0);
}

}  // namespace

TEST(Concurrency, EightThreadsOwnArraysAndStreamsOverTheSharedPools) {
  constexpr int rounds = 25;
  std::vector<OwnerInputs> inputs;
  for (int i = 0; i < thread_count; ++i) {
    // Different sizes per thread, so that the pools split and merge blocks of many sizes.
    inputs.push_back({random_values<float>(1000 + 517 * static_cast<std::size_t>(i)),
                      random_values<float>(3 + static_cast<std::size_t>(i))});
  }
  const Findings findings = run_threads([&inputs](int i) {
    Findings found;
    try {
      sa::Stream stream;
      for (int round = 0; round < rounds; ++round) owner_round(found, inputs[i], stream);
      stream.synchronize();
    } catch (const std::exception& error) {
      note(found, "thread ", i, " threw: ", error.what());
    }
    return found;
  });
  EXPECT_TRUE(findings.empty()) << joined(findings);
}

TEST(Concurrency, EightThreadsReadOneConstArrayWhileItsDeviceCopyIsNewer) {
  constexpr std::size_t n = 5000;
  const auto values = random_values<double>(n);
  sa::Stream stream;
  // One tile holds the whole array: the readers' element accesses make one copy in all.
  SmartArray<double> a(values, {.tile = sa::TileSize(std::size_t{1} << 16)});
  // On the host backend a gate holds the kernel back until every reader waits, so that they all
  // meet the stale host copy at once. The cuda run only queues the kernel: under compute-sanitizer
  // a host thread blocked on a stream that a host function holds never wakes up.
  std::optional<std::promise<void>> release;
  if (sa::test::on_host_backend()) release = gate(stream);
  scale_on_device(a, stream);  // the host copy is stale from here
  const SmartArray<double>& shared = a;
  const std::vector<double> expected = scaled(values);

  const auto before = a.transfer_stats();
  const auto global_before = sa::global_transfer_stats();
  std::latch arrived(thread_count);
  std::vector<std::future<Findings>> readers;
  for (int i = 0; i < thread_count; ++i) {
    readers.push_back(std::async(std::launch::async, [&, i] {
      Findings found;
      arrived.count_down();
      try {
        // The first reader copies and waits on the array's copy; the others wait on its lock.
        const double first = shared[static_cast<std::size_t>(i)];
        if (first != expected[static_cast<std::size_t>(i)]) {
          note(found, "reader ", i, ": element ", i, " is ", first, ", want ",
               expected[static_cast<std::size_t>(i)]);
        }
        std::vector<double> seen(n);
        for (std::size_t k = 0; k < n; ++k) seen[k] = shared[k];
        check_contents(found, "elements read one by one", seen, expected);
        check_contents(found, "host_view", host_copy(shared), expected);
      } catch (const std::exception& error) {
        note(found, "reader ", i, " threw: ", error.what());
      }
      return found;
    }));
  }
  arrived.wait();
  if (release) {
    // Let the readers reach the slow path while the kernel still waits behind the gate.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release->set_value();
  }
  Findings findings;
  for (auto& reader : readers) {
    for (std::string& finding : reader.get()) findings.push_back(std::move(finding));
  }
  EXPECT_TRUE(findings.empty()) << joined(findings);

  const auto in_total = sa::global_transfer_stats() - global_before;
  EXPECT_EQ(in_total.d2h_count, 1U) << in_total.to_string();
  EXPECT_EQ(in_total.h2d_count, 0U) << in_total.to_string();
  const auto made = a.transfer_stats() - before;
  EXPECT_EQ(made.d2h_count, 1U) << made.to_string();
  EXPECT_EQ(made.d2h_bytes, n * sizeof(double));
  EXPECT_EQ(made.h2d_count, 0U);
  EXPECT_TRUE(a.is_valid(sa::Side::host));
  EXPECT_TRUE(a.is_valid(sa::Side::device));  // reads keep the device copy valid
}

TEST(Concurrency, OneArrayMovesFromThreadToThread) {
  constexpr std::size_t n = 3000;
  const auto values = random_values<std::int64_t>(n);
  // Each hop runs on its own thread and its own stream. Streams outlive the array's work on them.
  std::vector<sa::Stream> streams(thread_count);
  std::vector<std::promise<SmartArray<std::int64_t>>> hands(thread_count + 1);
  // Per-array counters stay with the array object they counted in, so the chain is measured on the
  // global counters: nothing else in this process moves data meanwhile.
  const auto before = sa::global_transfer_stats();
  std::vector<std::future<Findings>> hops;
  for (int hop = 0; hop < thread_count; ++hop) {
    hops.push_back(std::async(std::launch::async, [&, hop] {
      Findings found;
      try {
        // One tile holds the whole array: a host write fetches and uploads all of it.
        SmartArray<std::int64_t> a =
            hop == 0 ? SmartArray<std::int64_t>(values, {.tile = sa::TileSize(std::size_t{1} << 16)})
                     : hands[static_cast<std::size_t>(hop)].get_future().get();
        const sa::StreamRef stream = streams[static_cast<std::size_t>(hop)];
        scale_on_device(a, stream);  // ordered after the previous hop's kernel on its stream
        if (hop % 2 == 1) {
          a[static_cast<std::size_t>(hop)] += hop;  // a host read_write: one copy back
        }
        SmartArray<std::int64_t> handed(std::move(a));
        if (!a.empty()) note(found, "hop ", hop, ": the moved-from array is not empty");  // NOLINT
        hands[static_cast<std::size_t>(hop) + 1].set_value(std::move(handed));
      } catch (const std::exception& error) {
        note(found, "hop ", hop, " threw: ", error.what());
        hands[static_cast<std::size_t>(hop) + 1].set_exception(std::current_exception());
      }
      return found;
    }));
  }
  SmartArray<std::int64_t> a;
  EXPECT_NO_THROW(a = hands[thread_count].get_future().get());
  Findings findings;
  for (auto& hop : hops) {
    for (std::string& finding : hop.get()) findings.push_back(std::move(finding));
  }
  EXPECT_TRUE(findings.empty()) << joined(findings);

  std::vector<std::int64_t> expected = values;
  for (int hop = 0; hop < thread_count; ++hop) {
    expected = scaled(expected);
    if (hop % 2 == 1) expected[static_cast<std::size_t>(hop)] += hop;
  }
  EXPECT_EQ(host_copy(a), expected);
  // Even hops find the host copy newest and upload it; odd hops copy the kernel's result back for
  // their host write. The last hop wrote on the host, so the final read copies nothing.
  const std::uint64_t host_writes = thread_count / 2;
  const auto made = sa::global_transfer_stats() - before;
  EXPECT_EQ(made.h2d_count, host_writes) << made.to_string();
  EXPECT_EQ(made.d2h_count, host_writes) << made.to_string();
  EXPECT_EQ(made.d2d_count, 0U) << made.to_string();
}
