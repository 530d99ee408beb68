// The adapters from a file compiled by a plain C++ compiler (no nvcc): the headers compile with
// the strict host warnings, the host backend runs every functor on the host, and on the cuda
// backend the adapters that need a kernel of their own say that the caller must be compiled by
// nvcc.
#include "support/functors.hpp"
#include "support/test_support.hpp"

#include <smartarray/smartarray.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;
using sa::test::random_values;

namespace {

constexpr std::size_t n = 3000;

using smartarray::test::Add;

template <typename T>
std::vector<T> host_copy(const SmartArray<T>& a) {
  const auto view = a.host_view();
  return {view.begin(), view.end()};
}

/// Constant-initialized in a plain C++ file too: the default constructor is constexpr there.
#if defined(__cpp_lib_constexpr_vector)  // libstdc++ 11: see SMARTARRAY_CONSTEXPR_EMPTY
constinit
#endif
SmartArray<float> constant_initialized;
static_assert(std::is_nothrow_default_constructible_v<SmartArray<float>>);
static_assert(std::contiguous_iterator<SmartArray<float>::iterator>);

/// A kernel's host-side signature: binding works without nvcc; launching needs the kernel's
/// definition from a file that nvcc compiled, so this one is never launched.
void kernel_signature(sa::DeviceView<const float> in, sa::DeviceView<float> out, float scale) {
  (void)in, (void)out, (void)scale;
}

}  // namespace

TEST(PlainCxx, TransformMapReduceFillRunOnTheHostBackend) {
  if (!sa::test::on_host_backend()) GTEST_SKIP() << "checks the host backend";
  const auto va = random_values<float>(n);
  const auto vb = random_values<float>(n);
  SmartArray<float> a(va), b(vb), c(n);
  {
    sa::ExpectTransfers expect({.h2d = 2, .d2h = 0});
    sa::transform(sa::out(c), Add{}, a, b);
  }
  std::vector<float> expected(n);
  for (std::size_t i = 0; i < n; ++i) expected[i] = va[i] + vb[i];
  EXPECT_EQ(host_copy(c), expected);
  EXPECT_EQ(host_copy(sa::map(Add{}, a, 1.0F)).at(7), va[7] + 1.0F);
  SmartArray<int> counts(std::vector<int>(n, 2));
  EXPECT_EQ(sa::reduce(counts, 5, std::plus<int>{}), 5 + 2 * static_cast<int>(n));
  sa::fill(counts, 9);
  EXPECT_EQ(host_copy(counts), std::vector<int>(n, 9));
}

TEST(PlainCxx, CopyAndArgumentBindingNeedNoKernel) {
  const auto values = random_values<float>(n);
  SmartArray<float> src(values), dst(n);
  {
    sa::ExpectTransfers expect({.h2d = 1, .d2h = 0, .d2d = 1});
    sa::copy(dst, src);
  }
  EXPECT_EQ(host_copy(dst), values);
  const auto [in, out, scale] = sa::bind_kernel_args(kernel_signature, {}, src, sa::out(dst), 2.0F);
  EXPECT_EQ(in.data(), std::as_const(src).device_view().data());
  EXPECT_EQ(out.size(), n);
  EXPECT_EQ(scale, 2.0F);
  const auto m = sa::reshape(dst.host_view(Access::read), sa::f_order, 30, 100);
  EXPECT_EQ(m(1, 2), values[2 * 30 + 1]);
}

TEST(PlainCxx, VectorConformanceHoldsWithoutNvcc) {
  const auto values = random_values<float>(n);
  {
    const sa::ExpectTransfers expect({});
    constant_initialized.assign(values.begin(), values.end());
    EXPECT_EQ(*--constant_initialized.end(), values.back());
    EXPECT_EQ(*++std::as_const(constant_initialized).begin(), values[1]);
    const SmartArray<float> copy(constant_initialized, constant_initialized.get_allocator());
    EXPECT_EQ(host_copy(copy), values);
  }
  constant_initialized.clear();
  constant_initialized.shrink_to_fit();
}

TEST(PlainCxx, OnTheCudaBackendKernelAdaptersAskForNvcc) {
  if (sa::test::on_host_backend()) GTEST_SKIP() << "checks the cuda backend";
  SmartArray<float> a(random_values<float>(n)), c(n);
  const sa::ExpectTransfers expect({.h2d = 0, .d2h = 0});  // refused before anything is acquired
  try {
    sa::transform(sa::out(c), Add{}, a, a);
    ADD_FAILURE() << "expected logic_error";
  } catch (const sa::logic_error& error) {
    EXPECT_NE(std::string(error.what()).find("compiled by nvcc"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)sa::reduce(a, 0.0F, std::plus<float>{}), sa::logic_error);
  EXPECT_THROW(sa::fill(c, 1.0F), sa::logic_error);
  EXPECT_TRUE(c.is_valid(sa::Side::host));
}
