// RMM and smartarray on one GPU: RMM containers allocate from smartarray's pool, SmartArrays
// allocate from RMM resources (and are evicted when those run out), and RMM's failure callback
// evicts SmartArrays' device copies. Built by the rmm preset against librmm; cuda backend only.
#include "support/test_support.hpp"

#include "support/device_ops.cuh"
#include "support/eviction_trio.cuh"

#include <smartarray/interop/rmm.hpp>
#include <smartarray/interop/cccl_resource.hpp>
#include <smartarray/smartarray.hpp>

#include <rmm/device_buffer.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <csignal>
#include <cstddef>
#include <vector>

#include <execinfo.h>
#include <unistd.h>

namespace sa = smartarray;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;

static_assert(cuda::mr::resource_with<sa::interop::CcclResourceView, cuda::mr::device_accessible>);
static_assert(cuda::mr::resource_with<rmm::mr::pool_memory_resource, cuda::mr::device_accessible>);
static_assert(sa::interop::cccl_stream_resource<rmm::mr::pool_memory_resource>);
static_assert(sa::interop::cccl_stream_resource<rmm::device_async_resource_ref>);

namespace {

constexpr std::size_t block_bytes = std::size_t{1} << 20;
constexpr std::size_t n = block_bytes / sizeof(float);

void check(cudaError_t status) { ASSERT_EQ(status, cudaSuccess) << cudaGetErrorString(status); }

/// The values of `count` floats at device address `data`.
std::vector<float> device_values(const float* data, std::size_t count, cudaStream_t stream) {
  std::vector<float> values(count, -1.0F);
  check(cudaMemcpyAsync(values.data(), data, count * sizeof(float), cudaMemcpyDeviceToHost,
                        stream));
  check(cudaStreamSynchronize(stream));
  return values;
}

/// A crash prints the stack (librmm's frames by name) before the default action: the GPU machines
/// have no debugger. This binary is never run under a sanitizer, whose own handler it would take.
void print_stack_and_reraise(int signal) {
  void* frames[64];
  const int count = backtrace(frames, 64);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}
[[maybe_unused]] const bool stack_on_crash = [] {
  std::signal(SIGSEGV, print_stack_and_reraise);
  std::signal(SIGBUS, print_stack_and_reraise);
  return true;
}();

class Rmm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (sa::test::on_host_backend()) GTEST_SKIP() << "RMM's resources need the cuda backend";
  }
};

}  // namespace

TEST_F(Rmm, ADeviceUvectorAllocatesFromSmartarraysPool) {
  sa::StatisticsAdaptor& counted = sa::default_device_resource();
  const sa::MemoryStats before = counted.stats();
  sa::Stream stream;
  const auto cuda_stream = static_cast<cudaStream_t>(stream.ref().handle());
  const auto values = random_values<float>(n);
  {
    rmm::device_uvector<float> v(n, cuda::stream_ref{cuda_stream},
                                 sa::interop::CcclResourceView{counted});
    EXPECT_EQ(counted.stats().current_count, before.current_count + 1);
    EXPECT_EQ(counted.stats().current_bytes, before.current_bytes + block_bytes);
    check(cudaMemcpyAsync(v.data(), values.data(), block_bytes, cudaMemcpyHostToDevice,
                          cuda_stream));
    EXPECT_EQ(device_values(v.data(), n, cuda_stream), values);
    rmm::device_buffer buffer(3000, cuda::stream_ref{cuda_stream},
                              sa::interop::CcclResourceView{counted});
    EXPECT_EQ(counted.stats().current_count, before.current_count + 2);
  }
  EXPECT_EQ(counted.stats().current_count, before.current_count);
  stream.synchronize();
}

TEST_F(Rmm, SmartArraysAllocateFromAnRmmPool) {
  rmm::mr::pool_memory_resource pool(rmm::mr::cuda_memory_resource{}, 8 * block_bytes);
  // Counted through a limiting adaptor that never limits: its allocated bytes are the pool's use.
  rmm::mr::limiting_resource_adaptor counted(pool, 64 * block_bytes);
  sa::interop::CcclDeviceResource from_rmm{counted};
  const auto values = random_values<float>(n);
  {
    SmartArray<float> a(values, sa::ArrayOptions{.device_resource = &from_rmm});
    scale_on_device(a);
    EXPECT_EQ(counted.get_allocated_bytes(), block_bytes);
    EXPECT_EQ(host_copy(a), scaled(values));
    EXPECT_EQ(a.transfer_stats().h2d_count, 1U);
    EXPECT_EQ(a.transfer_stats().d2h_count, 1U);
  }
  check(cudaDeviceSynchronize());
  EXPECT_EQ(counted.get_allocated_bytes(), 0U);
}

TEST_F(Rmm, AnRmmResourceThatRunsOutEvictsTheCopiesItHolds) {
  rmm::mr::limiting_resource_adaptor limited(rmm::mr::cuda_memory_resource{}, 3 * block_bytes);
  sa::interop::CcclDeviceResource from_rmm{limited};
  const sa::ArrayOptions options{.device_resource = &from_rmm};
  sa::test::EvictionTrio trio(n, options);  // full: d and e dirty, c clean
  SmartArray<float> f(random_values<float>(2 * n), options);
  (void)f.device_view();  // c goes first, then d, the older dirty copy
  EXPECT_EQ(limited.get_allocated_bytes(), 3 * block_bytes);
  trio.expect_clean_then_oldest_dirty_evicted();
}

TEST_F(Rmm, RmmsFailureCallbackEvictsSmartArraysThenRetries) {
  // SmartArrays and an RMM container share one limited RMM resource. The container's allocation
  // fails, and the callback frees SmartArrays' copies: the clean one, then the oldest dirty one.
  rmm::mr::limiting_resource_adaptor limited(rmm::mr::cuda_memory_resource{}, 4 * block_bytes);
  sa::interop::CcclDeviceResource from_rmm{limited};
  sa::test::EvictionTrio trio(n, sa::ArrayOptions{.device_resource = &from_rmm});
  auto evicting = sa::interop::with_eviction(limited);
  sa::Stream stream;
  rmm::device_buffer buffer(3 * block_bytes,
                            cuda::stream_ref{static_cast<cudaStream_t>(stream.ref().handle())},
                            evicting);
  EXPECT_EQ(buffer.size(), 3 * block_bytes);
  trio.expect_clean_then_oldest_dirty_evicted();
}

TEST_F(Rmm, TheFailureCallbackSaysNoWhenNothingIsLeftToEvict) {
  rmm::mr::limiting_resource_adaptor limited(rmm::mr::cuda_memory_resource{}, block_bytes);
  auto evicting = sa::interop::with_eviction(limited);
  EXPECT_THROW(rmm::device_buffer(2 * block_bytes, cuda::stream_ref{cudaStream_t{}}, evicting),
               rmm::out_of_memory);
}
