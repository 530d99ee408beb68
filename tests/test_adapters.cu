// The launch adapter (each argument's access intent deduced from the kernel's parameter types:
// device views, pointers, spans, shaped views and scalars; the call site it records; the shared
// memory overload) and shaped views (reshape on the host and in device code, ravel, contiguity,
// transposes in C and F order), with exact transfer counts. The algorithm adapters are in
// test_algorithm_adapters.cu. Every body runs on the host and on the cuda backend, except those
// that launch a raw __global__ kernel, which skip themselves on the host backend.
#include "support/adapter_outputs.hpp"
#include "support/test_support.hpp"

#include "support/device_ops.cuh"

#include "../examples/transpose_kernels.cuh"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::adapters::expect_close;
using sa::test::adapters::poisoned;

namespace {

constexpr std::size_t n = 5000;

// --- functors (namespace scope: nvcc cannot place device lambdas in a TEST body) ----------------

/// Reads a column-major matrix through a reshape done in device code.
struct ReadFOrder {
  sa::DeviceView<const float> flat;
  sa::DeviceView<float> out;
  std::size_t rows;
  std::size_t cols;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    const auto m = sa::reshape(flat, sa::f_order, rows, cols);
    out[i] = m(i / cols, i % cols);  // out is the same matrix in C order
  }
};

/// out = transpose(in) through mdspans, one element per index (runs on both backends).
template <typename Layout>
struct TransposeOp {
  sa::ShapedView<const float, 2, Layout> in;
  sa::ShapedView<float, 2, Layout> out;
  SMARTARRAY_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t r = i / in.extent(1);
    const std::size_t c = i % in.extent(1);
    out(c, r) = in(r, c);
  }
};

// --- kernels (raw __global__: cuda backend only) -------------------------------------------------

__global__ void axpy_kernel(float a, sa::DeviceView<const float> x, sa::DeviceView<float> y) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < y.size();
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    y[i] = a * x[i] + y[i];
  }
}

__global__ void fill_kernel(sa::DeviceView<float> out, float value) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < out.size();
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = value;
  }
}

__global__ void pointer_kernel(const float* in, float* inout, std::size_t count) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    inout[i] += in[i];
  }
}

__global__ void span_kernel(cuda::std::span<const float> in, cuda::std::span<float> out) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < out.size();
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i] * 2;
  }
}

/// Sums each block's slice in dynamic shared memory (exercises the shared_bytes overload).
__global__ void block_sum_kernel(sa::DeviceView<const float> in, sa::DeviceView<float> sums) {
  extern __shared__ float partial[];
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < in.size() ? in[i] : 0.0F;
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0;
    for (unsigned k = 0; k < blockDim.x; ++k) sum += partial[k];
    sums[blockIdx.x] = sum;
  }
}

/// Every parameter kind that launch understands, for the deduction tests.
__global__ void intents_kernel(sa::DeviceView<const float> read, sa::DeviceView<float> read_write,
                               sa::DeviceView<float> discarded, const float* read_pointer,
                               float* read_write_pointer, float scalar) {
  (void)read, (void)read_write, (void)discarded, (void)read_pointer, (void)read_write_pointer,
      (void)scalar;
}

__global__ void in_out_kernel(sa::DeviceView<const float> in, sa::DeviceView<float> out) {
  (void)in, (void)out;
}

__global__ void shaped_kernel(sa::ShapedView<const float, 2> in,
                              sa::ShapedView<float, 3, sa::FLayout> out) {
  (void)in, (void)out;
}

// A raw __global__ kernel cannot run on the host backend (GTEST_SKIP must be in the test body).
#define SKIP_ON_HOST_BACKEND()                                                  \
  if (sa::test::on_host_backend()) GTEST_SKIP() << "a raw __global__ kernel needs the cuda backend"

smartarray::source_location where_of(const sa::GridDim& grid) { return grid.where(); }
smartarray::source_location where_of(const sa::StreamAt& stream) { return stream.where(); }

}  // namespace

// --- launch: access intents from the kernel's parameter types ----------------------------------

TEST(Launch, TheGridArgumentRecordsTheCallSiteForTheTrace) {
  const auto where = where_of(8);
  EXPECT_EQ(where.line(), static_cast<std::uint_least32_t>(__LINE__ - 1));
  EXPECT_NE(std::string(where.file_name()).find("test_adapters.cu"), std::string::npos);
}

TEST(Launch, TheStreamArgumentOfBindKernelArgsRecordsTheCallSite) {
  const sa::Stream stream;
  for (const auto& where : {where_of(stream), where_of(stream.ref()), where_of({})}) {
    EXPECT_EQ(where.line(), static_cast<std::uint_least32_t>(__LINE__ - 1));
    EXPECT_NE(std::string(where.file_name()).find("test_adapters.cu"), std::string::npos);
  }
  EXPECT_EQ(sa::StreamAt(stream).stream(), stream.ref());
}

TEST(Launch, BindKernelArgsTakesEachAccessFromTheParameterType) {
  sa::Stream stream;
  const auto values = random_values<float>(n);
  SmartArray<float> read(values), read_write(values), discarded = poisoned(n);
  SmartArray<float> read_pointer(values), read_write_pointer(values);
  std::tuple<sa::DeviceView<const float>, sa::DeviceView<float>, sa::DeviceView<float>,
             const float*, float*, float>
      args;
  {
    sa::ExpectTransfers expect({.h2d = 4, .d2h = 0});
    args = sa::bind_kernel_args(intents_kernel, stream, read, read_write, sa::out(discarded),
                                read_pointer, read_write_pointer, 2.5F);
  }
  EXPECT_EQ(discarded.transfer_stats().h2d_count, 0U);
  // read keeps the host valid; read_write and discard make it stale.
  EXPECT_TRUE(read.is_valid(sa::Side::host));
  EXPECT_FALSE(read_write.is_valid(sa::Side::host));
  EXPECT_FALSE(discarded.is_valid(sa::Side::host));
  EXPECT_TRUE(read_pointer.is_valid(sa::Side::host));
  EXPECT_FALSE(read_write_pointer.is_valid(sa::Side::host));
  for (auto* a : {&read, &read_write, &discarded, &read_pointer, &read_write_pointer}) {
    EXPECT_TRUE(a->is_valid(sa::Side::device));
  }
  EXPECT_EQ(std::get<0>(args).data(), std::as_const(read).device_view(stream).data());
  EXPECT_EQ(std::get<0>(args).size(), n);
  EXPECT_EQ(std::get<2>(args).data(), std::as_const(discarded).device_view(stream).data());
  EXPECT_EQ(std::get<3>(args), std::as_const(read_pointer).device_view(stream).data());
  EXPECT_EQ(std::get<4>(args), std::as_const(read_write_pointer).device_view(stream).data());
  EXPECT_EQ(std::get<5>(args), 2.5F);
}

TEST(Launch, AnArrayPassedAsInputAndThroughOutIsReadFirst) {
  SmartArray<float> a(random_values<float>(n));
  const sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
  const auto args = sa::bind_kernel_args(in_out_kernel, {}, a, sa::out(a));
  EXPECT_EQ(std::get<0>(args).data(), std::get<1>(args).data());
  EXPECT_FALSE(a.is_valid(sa::Side::host));
}

TEST(Launch, ShapedArgumentsBindToShapedViewParameters) {
  SmartArray<float> in(random_values<float>(12)), out = poisoned(24);
  const sa::ExpectTransfers expect({.h2d = 1, .d2h = 0});
  const auto [m, o] = sa::bind_kernel_args(shaped_kernel, {}, sa::shaped(in, sa::c_order, 3, 4),
                                           sa::shaped(sa::out(out), sa::f_order, 2, 3, 4));
  EXPECT_EQ(m.extent(0), 3U);
  EXPECT_EQ(m.extent(1), 4U);
  EXPECT_EQ(o.extent(2), 4U);
  EXPECT_EQ(o.stride(1), 2U);
  EXPECT_EQ(m.data_handle(), std::as_const(in).device_view().data());
  EXPECT_EQ(out.transfer_stats().h2d_count, 0U);
}

TEST(Launch, ShapedExtentsMustMatchTheArraySize) {
  SmartArray<float> in(random_values<float>(12));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    (void)sa::shaped(in, sa::c_order, 5, 3);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("12 elements"), std::string::npos) << message;
    EXPECT_NE(message.find("(5, 3)"), std::string::npos) << message;
    EXPECT_NE(message.find("(15)"), std::string::npos) << message;
  }
}

TEST(Launch, OnTheHostBackendARawKernelThrowsAndAcquiresNothing) {
  if (!sa::test::on_host_backend()) GTEST_SKIP() << "checks the host backend's refusal";
  SmartArray<float> x(random_values<float>(n)), y(random_values<float>(n));
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
  try {
    sa::launch(axpy_kernel, 4, 128, {}, 2.0F, x, y);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("needs the cuda backend"), std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(y.is_valid(sa::Side::host));
}

TEST(Launch, DeducedIntentsCopyOnlyWhatTheKernelReads) {
  SKIP_ON_HOST_BACKEND();
  sa::Stream stream;
  const auto vx = random_values<float>(n);
  const auto vy = random_values<float>(n);
  SmartArray<float> x(vx), y(vy);
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0});
    sa::launch(axpy_kernel, 8, 128, stream, 2.0F, x, y);
  }
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::launch(axpy_kernel, 8, 128, stream, 3.0F, x, y);
  }
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = 3.0F * vx[i] + (2.0F * vx[i] + vy[i]);
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 1});
    expect_close(host_copy(y), expected);
  }
  EXPECT_TRUE(x.is_valid(sa::Side::host));
}

TEST(Launch, OutCopiesNothingIn) {
  SKIP_ON_HOST_BACKEND();
  SmartArray<float> a = poisoned(n);
  const float value = sa::test::random_value<float>();
  {
    sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});
    sa::launch(fill_kernel, 8, 128, {}, sa::out(a), value);
  }
  EXPECT_EQ(host_copy(a), std::vector<float>(n, value));
}

TEST(Launch, PointerAndSpanParameters) {
  SKIP_ON_HOST_BACKEND();
  sa::Stream stream;
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  SmartArray<float> a(va), b(vb), c = poisoned(n);
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0});
    sa::launch(pointer_kernel, 8, 128, stream, a, b, n);     // b += a
    sa::launch(span_kernel, 8, 128, stream, b, sa::out(c));  // c = 2 b
  }
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = (vb[i] + va[i]) * 2;
  EXPECT_EQ(host_copy(c), expected);
}

TEST(Launch, SharedMemoryOverload) {
  SKIP_ON_HOST_BACKEND();
  constexpr unsigned block = 128;
  const auto values = random_values<float>(n);
  SmartArray<float> in(values);
  const unsigned blocks = (n + block - 1) / block;
  SmartArray<float> sums = poisoned(blocks);
  sa::launch(block_sum_kernel, blocks, block, block * sizeof(float), {}, in, sa::out(sums));
  const auto got = host_copy(sums);
  for (unsigned b = 0; b < blocks; ++b) {
    float expected = 0;
    for (std::size_t i = b * block; i < std::min<std::size_t>(n, (b + 1) * block); ++i) {
      expected += values[i];
    }
    EXPECT_NEAR(got[b], expected, 1e-3F * std::max(1.0F, std::fabs(expected))) << b;
  }
}

TEST(Launch, ABadConfigurationThrowsCudaError) {
  SKIP_ON_HOST_BACKEND();
  SmartArray<float> a(random_values<float>(n));
  EXPECT_THROW(sa::launch(fill_kernel, 1, 4096, {}, sa::out(a), 1.0F), sa::cuda_error);
  sa::launch(fill_kernel, 1, 128, {}, sa::out(a), 1.0F);  // the error did not stick
  EXPECT_EQ(host_copy(a), std::vector<float>(n, 1.0F));
}

// --- shaped views -------------------------------------------------------------------------------

TEST(ShapedView, CAndFOrderIndexHostMemory) {
  SmartArray<float> a(random_values<float>(12));
  const auto flat = a.host_view(Access::read);
  const auto c = sa::reshape(flat, sa::c_order, 3, 4);
  const auto f = sa::reshape(flat, sa::f_order, 3, 4);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(c(i, j), flat[i * 4 + j]);
      EXPECT_EQ(f(i, j), flat[j * 3 + i]);
    }
  }
  EXPECT_TRUE(sa::is_c_contiguous(c));
  EXPECT_FALSE(sa::is_f_contiguous(c));
  EXPECT_TRUE(sa::is_f_contiguous(f));
  EXPECT_FALSE(sa::is_c_contiguous(f));
  EXPECT_EQ(sa::ravel(c).data(), flat.data());
  EXPECT_EQ(sa::ravel(f).size(), 12U);
  const auto again = sa::reshape(c, sa::c_order, 2, 2, 3);
  EXPECT_EQ(again(1, 0, 2), flat[6 + 2]);
  const auto column = sa::reshape(flat, sa::c_order, 12, 1);
  EXPECT_TRUE(sa::is_c_contiguous(column) && sa::is_f_contiguous(column));
  static_assert(std::is_trivially_copyable_v<sa::ShapedView<const float, 3, sa::FLayout>>);
}

TEST(ShapedView, StridedViewsReportTheirContiguity) {
  std::vector<float> storage(24);
  using Strided = cuda::std::layout_stride;
  using Extents = cuda::std::dextents<std::size_t, 2>;
  const cuda::std::array<std::size_t, 2> c_strides{4, 1}, gap_strides{8, 1};
  const cuda::std::mdspan<float, Extents, Strided> dense(
      storage.data(), Strided::mapping<Extents>(Extents(3, 4), c_strides));
  const cuda::std::mdspan<float, Extents, Strided> every_other_row(
      storage.data(), Strided::mapping<Extents>(Extents(3, 4), gap_strides));
  EXPECT_TRUE(sa::is_c_contiguous(dense));
  EXPECT_FALSE(sa::is_f_contiguous(dense));
  EXPECT_FALSE(sa::is_c_contiguous(every_other_row));
  EXPECT_FALSE(sa::is_f_contiguous(every_other_row));
  EXPECT_THROW((void)sa::ravel(every_other_row), sa::logic_error);
}

TEST(ShapedView, ErrorsNameTheSizeAndTheExtents) {
  SmartArray<float> a(random_values<float>(12));
  try {
    (void)sa::reshape(a.device_view(Access::read), sa::c_order, 3, 5);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("reshape of 12 elements to extents (3, 5)"), std::string::npos)
        << message;
    EXPECT_NE(message.find("(15)"), std::string::npos) << message;
  }
  const auto c = sa::reshape(a.host_view(Access::read), sa::c_order, 3, 4);
  try {
    (void)sa::reshape(c, sa::f_order, 4, 3);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("would need a copy"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)sa::reshape(a.host_view(Access::read), sa::f_order, 0, 12), sa::logic_error);
}

TEST(ShapedView, ReshapeWorksInDeviceCode) {
  constexpr std::size_t rows = 37, cols = 23;
  const auto values = random_values<float>(rows * cols);
  SmartArray<float> f_matrix(values);
  SmartArray<float> c_matrix = poisoned(rows * cols);
  sa::for_each_index(rows * cols, ReadFOrder{std::as_const(f_matrix).device_view(),
                                             c_matrix.device_view(Access::discard), rows, cols});
  const auto got = host_copy(c_matrix);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) ASSERT_EQ(got[i * cols + j], values[j * rows + i]);
  }
}

template <typename Layout>
void check_transpose_through_for_each_index(std::size_t rows, std::size_t cols) {
  const auto values = random_values<float>(rows * cols);
  SmartArray<float> in(values);
  SmartArray<float> out = poisoned(rows * cols);
  const sa::ExpectTransfers expect({.h2d = 1, .d2h = 1});
  const TransposeOp<Layout> op{sa::reshape(std::as_const(in).device_view(), Layout{}, rows, cols),
                               sa::reshape(out.device_view(Access::discard), Layout{}, cols, rows)};
  sa::for_each_index(rows * cols, op);
  const auto got = host_copy(out);
  const auto host_in = sa::reshape(std::span<const float>(values), Layout{}, rows, cols);
  const auto host_out = sa::reshape(std::span<const float>(got), Layout{}, cols, rows);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      ASSERT_EQ(host_out(j, i), host_in(i, j)) << i << "," << j;
    }
  }
}

TEST(ShapedView, TransposeMatchesTheHostReferenceInCAndFOrder) {
  check_transpose_through_for_each_index<sa::CLayout>(64, 48);
  check_transpose_through_for_each_index<sa::FLayout>(64, 48);
}

template <typename Layout>
void check_transpose_kernels(std::size_t rows, std::size_t cols) {
  const auto values = random_values<float>(rows * cols);
  SmartArray<float> in(values);
  const auto host_in = sa::reshape(std::span<const float>(values), Layout{}, rows, cols);
  for (auto* kernel : {&transpose::transpose_naive<Layout>, &transpose::transpose_tiled<Layout>}) {
    SmartArray<float> out = poisoned(rows * cols);
    {
      sa::ExpectTransfers expect({.h2d = kernel == &transpose::transpose_naive<Layout> ? 1U : 0U});
      transpose::run<Layout>(kernel, in, out, rows, cols, {});
    }
    const auto got = host_copy(out);
    const auto host_out = sa::reshape(std::span<const float>(got), Layout{}, cols, rows);
    for (std::size_t i = 0; i < rows; ++i) {
      for (std::size_t j = 0; j < cols; ++j) {
        ASSERT_EQ(host_out(j, i), host_in(i, j)) << i << "," << j;
      }
    }
  }
}

TEST(ShapedView, TransposeKernelsMatchTheHostReferenceInCAndFOrder) {
  SKIP_ON_HOST_BACKEND();
  check_transpose_kernels<sa::CLayout>(1024, 1024);
  check_transpose_kernels<sa::FLayout>(1024, 1024);
  check_transpose_kernels<sa::CLayout>(100, 37);  // partial tiles
  check_transpose_kernels<sa::FLayout>(100, 37);
}
