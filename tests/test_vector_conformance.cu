// Drop-in conformance: the parts of the std::vector contract that generic code and conformance
// suites lean on, each checked against std::vector with the same element sequences, with the
// transfers each one makes. The allocator interface and its constructors and deduction guides,
// element types that defeat `&x` or that only convert explicitly, legacy input iterators, the
// iterators' class interface (`--a.end()`), and the constant, noexcept default constructor.
// Every body runs on the host backend and on the cuda backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <compare>
#include <concepts>
#include <cstdint>
#include <iterator>
#include <list>
#include <memory>
#include <optional>
#include <smartarray/smartarray.hpp>
#include <type_traits>
#include <utility>
#include <vector>

#include "support/device_ops.cuh"
#include "support/input_iterator.hpp"
#include "support/test_support.hpp"

namespace sa = smartarray;
using sa::Access;
using sa::Side;
using sa::SmartArray;
using sa::test::host_copy;
using sa::test::random_values;
using sa::test::scale_on_device;
using sa::test::scaled;

namespace hostile {

/// A trivially copyable element whose address cannot be taken with `&`: the member operator is
/// deleted, and so is a namespace-scope one that argument-dependent lookup finds for every type
/// with this namespace among its template arguments (SmartArray<Unaddressable> included).
struct Unaddressable {
  std::uint32_t value = 0;
  void operator&() const = delete;
};
template <typename U>
void operator&(U&&) = delete;

}  // namespace hostile

// In a named namespace: nvcc flags unreferenced members of classes with internal linkage, and a
// legacy iterator needs its postfix increment whether or not it is called.
namespace conformance {

/// A trivially copyable element that an integer converts to only explicitly: a range of integers
/// must construct each element (`T(*it)`), not assign it.
struct Tenths {
  Tenths() = default;
  explicit Tenths(std::int32_t whole) : value(whole * 10) {}
  std::int32_t value = 0;
  friend bool operator==(const Tenths&, const Tenths&) = default;
};


/// A legacy input iterator that is no C++20 `std::input_iterator`: its `operator*` is non-const
/// and returns a proxy that converts to the value.
class ProxyInputIterator {
 public:
  struct Proxy {
    const std::int32_t* at;
    operator std::int32_t() const { return *at; }  // NOLINT(google-explicit-constructor)
  };
  using iterator_category = std::input_iterator_tag;
  using value_type = std::int32_t;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = Proxy;

  ProxyInputIterator() = default;
  explicit ProxyInputIterator(const std::int32_t* at) : at_(at) {}
  Proxy operator*() { return Proxy{at_}; }  // NOLINT(readability-make-member-function-const)
  ProxyInputIterator& operator++() {
    ++at_;
    return *this;
  }
  ProxyInputIterator operator++(int) {
    ProxyInputIterator before = *this;
    ++at_;
    return before;
  }
  friend bool operator==(const ProxyInputIterator&, const ProxyInputIterator&) = default;

 private:
  const std::int32_t* at_ = nullptr;
};

/// A legacy forward iterator that is no C++20 `std::forward_iterator` (non-const `operator*`):
/// its ranges are measured first and allocated once.
class MutableForwardIterator {
 public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = std::int32_t;
  using difference_type = std::ptrdiff_t;
  using pointer = std::int32_t*;
  using reference = std::int32_t&;

  MutableForwardIterator() = default;
  explicit MutableForwardIterator(std::int32_t* at) : at_(at) {}
  std::int32_t& operator*() { return *at_; }  // NOLINT(readability-make-member-function-const)
  MutableForwardIterator& operator++() {
    ++at_;
    return *this;
  }
  MutableForwardIterator operator++(int) {
    MutableForwardIterator before = *this;
    ++at_;
    return before;
  }
  friend bool operator==(const MutableForwardIterator&, const MutableForwardIterator&) = default;

 private:
  std::int32_t* at_ = nullptr;
};

}  // namespace conformance

namespace {

constexpr std::size_t n = 1000;

using conformance::MutableForwardIterator;
using conformance::ProxyInputIterator;
using conformance::Tenths;
using hostile::Unaddressable;

static_assert(std::is_trivially_copyable_v<Unaddressable>);
static_assert(std::is_trivially_copyable_v<Tenths>);
static_assert(!std::is_convertible_v<std::int32_t, Tenths>);
static_assert(!std::input_iterator<ProxyInputIterator>);
static_assert(!std::forward_iterator<MutableForwardIterator>);

// --- the default constructor: constant and noexcept, as std::vector's ----------------------------

#if defined(__cpp_lib_constexpr_vector)  // libstdc++ 11: see SMARTARRAY_CONSTEXPR_EMPTY
constinit
#endif
SmartArray<int> constant_initialized;

static_assert(std::is_nothrow_default_constructible_v<SmartArray<int>>);
static_assert(std::is_nothrow_default_constructible_v<std::vector<int>>);
static_assert(noexcept(SmartArray<float>()));
static_assert(std::is_nothrow_constructible_v<SmartArray<int>, const sa::ArrayOptions&>);
static_assert(std::is_nothrow_constructible_v<SmartArray<int>, const sa::Allocator<int>&>);
static_assert(std::is_nothrow_move_constructible_v<SmartArray<Unaddressable>>);
// Containers of arrays move them when they grow, as they move vectors.
static_assert(std::is_nothrow_move_constructible_v<std::optional<SmartArray<int>>>);
// The comparisons satisfy the concepts that generic code checks, as std::vector's do.
static_assert(std::equality_comparable<SmartArray<int>>);
static_assert(std::totally_ordered<SmartArray<int>>);
static_assert(std::three_way_comparable<SmartArray<int>, std::strong_ordering>);
static_assert(std::three_way_comparable<SmartArray<float>, std::partial_ordering>);
static_assert(!std::three_way_comparable<SmartArray<Unaddressable>>);

// --- the allocator interface --------------------------------------------------------------------

static_assert(std::is_same_v<SmartArray<int>::allocator_type, sa::Allocator<int>>);
static_assert(std::uses_allocator_v<SmartArray<int>, sa::Allocator<int>>);
static_assert(std::is_same_v<std::allocator_traits<sa::Allocator<int>>::rebind_alloc<double>,
                             sa::Allocator<double>>);
using AllocatorTraits = std::allocator_traits<sa::Allocator<int>>;
static_assert(AllocatorTraits::propagate_on_container_copy_assignment::value);
static_assert(AllocatorTraits::propagate_on_container_move_assignment::value);
static_assert(AllocatorTraits::propagate_on_container_swap::value);
static_assert(!AllocatorTraits::is_always_equal::value);

/// The element sequences that generic allocator-aware code produces with container `V` and
/// allocator `alloc`, and checks on the way that every container reports `alloc`.
template <typename V>
std::vector<std::vector<std::int32_t>> allocator_aware_sequences(
    const typename V::allocator_type& alloc, const std::vector<std::int32_t>& values) {
  std::vector<std::vector<std::int32_t>> seen;
  const auto record = [&](const V& v) {
    EXPECT_TRUE(v.get_allocator() == alloc);
    seen.emplace_back(v.begin(), v.end());
  };
  V empty(alloc);
  record(empty);
  const V counted(values.size(), alloc);
  record(counted);
  const V filled(values.size(), values[0], alloc);
  record(filled);
  V ranged(values.begin(), values.end(), alloc);
  record(ranged);
  const std::list<std::int32_t> list(values.begin(), values.end());
  const V from_list(list.begin(), list.end(), alloc);
  record(from_list);
  const V listed({values[1], values[2], values[3]}, alloc);
  record(listed);
  V copied(ranged, alloc);
  record(copied);
  const V moved(std::move(copied), alloc);
  record(moved);
  V assigned(alloc);
  assigned = from_list;  // propagates from_list's allocator, which is `alloc`
  record(assigned);
  empty.swap(assigned);
  record(empty);
  record(assigned);
  // Code that allocates through the allocator itself, rebound as node-based containers do.
  using Traits = std::allocator_traits<typename V::allocator_type>;
  typename Traits::template rebind_alloc<double> rebound(alloc);
  EXPECT_TRUE(rebound == alloc);
  typename V::allocator_type allocating = ranged.get_allocator();
  std::int32_t* block = Traits::allocate(allocating, values.size());
  std::copy(values.begin(), values.end(), block);
  seen.emplace_back(block, block + values.size());
  Traits::deallocate(allocating, block, values.size());
  return seen;
}

TEST(Conformance, AllocatorAwareCodeSeesWhatItSeesWithStdVector) {
  const auto values = random_values<std::int32_t>(n);
  const auto expected =
      allocator_aware_sequences<std::vector<std::int32_t>>(std::allocator<std::int32_t>{}, values);
  const sa::ExpectTransfers expect({});  // host data only: nothing moves between host and device
  EXPECT_EQ(allocator_aware_sequences<SmartArray<std::int32_t>>(sa::Allocator<std::int32_t>{},
                                                                values),
            expected);
  // The same with resources of the arrays' own: every array allocates from them.
  sa::StatisticsAdaptor host(sa::pinned_resource());
  sa::StatisticsAdaptor device(sa::device_resource());
  const sa::Allocator<std::int32_t> named(
      sa::ArrayOptions{.host_resource = &host, .device_resource = &device});
  EXPECT_FALSE(named == sa::Allocator<std::int32_t>{});
  EXPECT_EQ(allocator_aware_sequences<SmartArray<std::int32_t>>(named, values), expected);
  EXPECT_GE(host.stats().total_count, 8U);
  EXPECT_EQ(host.stats().current_count, 0U);
  EXPECT_EQ(device.stats().total_count, 0U);
}

TEST(Conformance, GetAllocatorReturnsTheOptionsTheArrayWasMadeWith) {
  sa::StatisticsAdaptor host(sa::pinned_resource());
  const sa::ArrayOptions options{.host_resource = &host, .mode = sa::MemoryMode::pageable};
  const SmartArray<float> a(random_values<float>(n), options);
  EXPECT_EQ(a.get_allocator().options(), options);
  EXPECT_EQ(SmartArray<float>().get_allocator().options(), sa::ArrayOptions{});
  // A copy keeps the options; copy assignment, move assignment and swap take the source's.
  const SmartArray<float> copy(a);
  EXPECT_EQ(copy.get_allocator(), a.get_allocator());
  SmartArray<float> assigned;
  assigned = a;
  EXPECT_EQ(assigned.get_allocator(), a.get_allocator());
  SmartArray<float> swapped;
  swapped.swap(assigned);
  EXPECT_EQ(swapped.get_allocator(), a.get_allocator());
  EXPECT_EQ(assigned.get_allocator(), sa::Allocator<float>{});
  // An allocator converts to the options it names, and back.
  const sa::Allocator<double> rebound(a.get_allocator());
  EXPECT_EQ(sa::ArrayOptions(rebound), options);
  EXPECT_EQ(host_copy(swapped), host_copy(a));
}

TEST(Conformance, AllocatorExtendedCopyWithTheSameModeCopiesEachValidSide) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);  // only the device copy is valid
  sa::StatisticsAdaptor device(sa::device_resource());
  const sa::Allocator<float> alloc(sa::ArrayOptions{.device_resource = &device});
  const sa::TransferStats before = a.transfer_stats();
  const SmartArray<float> copy(a, alloc);
  EXPECT_EQ(a.transfer_stats(), before);
  EXPECT_EQ(copy.transfer_stats().d2d_count, 1U);
  EXPECT_EQ(copy.transfer_stats().d2d_bytes, n * sizeof(float));
  EXPECT_EQ(copy.transfer_stats().d2h_count, 0U);
  EXPECT_EQ(device.stats().current_count, 1U);  // the copy's device buffer
  EXPECT_FALSE(copy.is_valid(Side::host));
  EXPECT_EQ(copy.get_allocator(), alloc);
  {
    const sa::ExpectTransfers expect({.d2h = 1});
    EXPECT_EQ(host_copy(copy), scaled(values));
  }
}

TEST(Conformance, AllocatorExtendedCopyToAnotherModeReadsTheSourceOnce) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);
  const sa::Allocator<float> pageable(sa::ArrayOptions{.mode = sa::MemoryMode::pageable});
  SmartArray<float> copy;
  {
    // The device copy comes straight into the new array's host copy; `a` stays host-stale.
    const sa::ExpectTransfers expect({.d2h = 1, .d2h_bytes = n * sizeof(float)});
    copy = SmartArray<float>(a, pageable);
  }
  EXPECT_EQ(a.transfer_stats().d2h_count, 1U);
  EXPECT_FALSE(a.is_valid(Side::host));
  EXPECT_TRUE(a.is_valid(Side::device));
  EXPECT_TRUE(copy.is_valid(Side::host));
  EXPECT_EQ(copy.memory_mode(), sa::MemoryMode::pageable);
  const sa::ExpectTransfers expect({});
  EXPECT_EQ(host_copy(copy), scaled(values));
}

TEST(Conformance, AllocatorExtendedMoveIsConstantTimeWithEqualAllocators) {
  const auto values = random_values<float>(n);
  SmartArray<float> a(values);
  scale_on_device(a);
  {
    const sa::ExpectTransfers expect({});
    const SmartArray<float> b(std::move(a), a.get_allocator());
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the contract says so
    EXPECT_TRUE(b.is_valid(Side::device));
    EXPECT_FALSE(b.is_valid(Side::host));
  }
  SmartArray<float> c(values);
  scale_on_device(c);
  const sa::Allocator<float> pageable(sa::ArrayOptions{.mode = sa::MemoryMode::pageable});
  {
    const sa::ExpectTransfers expect({.d2h = 1});
    const SmartArray<float> d(std::move(c), pageable);
    EXPECT_TRUE(c.empty());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(d.get_allocator(), pageable);
    EXPECT_EQ(host_copy(d), scaled(values));
  }
}

TEST(Conformance, DeductionGuidesTakeAnAllocator) {
  const auto values = random_values<std::int32_t>(n);
  const sa::Allocator<std::int32_t> alloc;
  const SmartArray from_range(values.begin(), values.end(), alloc);
  static_assert(std::is_same_v<decltype(from_range), const SmartArray<std::int32_t>>);
  const SmartArray filled(std::size_t{3}, 2.5, sa::Allocator<double>{});
  static_assert(std::is_same_v<decltype(filled), const SmartArray<double>>);
  const SmartArray copied(from_range, alloc);
  static_assert(std::is_same_v<decltype(copied), const SmartArray<std::int32_t>>);
  const SmartArray listed({1.5F, 2.5F}, sa::Allocator<float>{});
  static_assert(std::is_same_v<decltype(listed), const SmartArray<float>>);
  const std::vector std_range(values.begin(), values.end(), std::allocator<std::int32_t>{});
  EXPECT_EQ(host_copy(from_range), std_range);
  EXPECT_EQ(host_copy(copied), std_range);
  EXPECT_EQ(host_copy(filled), std::vector<double>(3, 2.5));
  // uses-allocator construction, as std::pmr-style containers of containers do it.
  const auto made = std::make_obj_using_allocator<SmartArray<std::int32_t>>(alloc, std::size_t{5});
  EXPECT_EQ(host_copy(made), std::vector<std::int32_t>(5));
}

// --- element types that generic code trips over ------------------------------------------------

std::vector<std::uint32_t> numbers(const std::vector<Unaddressable>& v) {
  std::vector<std::uint32_t> out;
  for (const Unaddressable& x : v) out.push_back(x.value);
  return out;
}
std::vector<std::uint32_t> numbers(const SmartArray<Unaddressable>& a) {
  std::vector<std::uint32_t> out;
  for (const Unaddressable& x : a) out.push_back(x.value);
  return out;
}

TEST(Conformance, AnElementWithoutAnAddressOperatorWorksEverywhere) {
  std::vector<Unaddressable> model;
  SmartArray<Unaddressable> a;
  std::vector<Unaddressable> values;
  for (const std::uint32_t v : random_values<std::uint32_t>(n)) values.push_back({v});
  model.assign(values.begin(), values.end());
  a.assign(values.begin(), values.end());
  const Unaddressable extra{7U};
  model.push_back(extra);
  a.push_back(extra);
  model.push_back(Unaddressable{8U});
  a.push_back(Unaddressable{8U});
  model.emplace_back(extra);
  a.emplace_back(extra);
  model.insert(model.begin() + 3, extra);
  a.insert(a.cbegin() + 3, extra);
  model.insert(model.begin() + 4, 2, Unaddressable{9U});
  a.insert(a.cbegin() + 4, 2, Unaddressable{9U});
  model.insert(model.end(), values.begin(), values.begin() + 5);
  a.insert(a.cend(), values.begin(), values.begin() + 5);
  model.emplace(model.begin() + 1, Unaddressable{10U});
  a.emplace(a.cbegin() + 1, Unaddressable{10U});
  model.erase(model.begin() + 2);
  a.erase(a.cbegin() + 2);
  model.resize(model.size() + 3, extra);
  a.resize(a.size() + 3, extra);
  EXPECT_EQ(numbers(a), numbers(model));

  SmartArray<Unaddressable> b;
  b = a;
  EXPECT_EQ(numbers(b), numbers(model));
  SmartArray<Unaddressable> c;
  c = std::move(b);
  EXPECT_EQ(numbers(c), numbers(model));
  c.assign(4, extra);
  EXPECT_EQ(numbers(c), std::vector<std::uint32_t>(4, 7U));
  swap(a, c);
  EXPECT_EQ(numbers(c), numbers(model));
}

TEST(Conformance, AnExplicitConvertingConstructorBuildsEachElement) {
  const auto ints = random_values<std::int32_t>(n);
  const std::list<std::int32_t> list(ints.begin(), ints.end());
  const std::vector<Tenths> model(ints.begin(), ints.end());
  const sa::ExpectTransfers expect({});
  // Contiguous, forward and input ranges of int: each element is constructed from an int.
  EXPECT_EQ(host_copy(SmartArray<Tenths>(ints.begin(), ints.end())), model);
  EXPECT_EQ(host_copy(SmartArray<Tenths>(list.begin(), list.end())), model);
  const sa::test::InputIterator<std::int32_t> first(ints.data());
  const sa::test::InputIterator<std::int32_t> last(ints.data() + ints.size());
  EXPECT_EQ(host_copy(SmartArray<Tenths>(first, last)), model);

  // std::vector's assign and insert of a range also need `T = *it`; SmartArray's construct each
  // element as its constructor does, so they take this type too. The model is built from
  // constructed vectors.
  SmartArray<Tenths> a;
  a.assign(list.begin(), list.end());
  std::vector<Tenths> v(list.begin(), list.end());
  a.insert(a.cbegin() + 5, ints.begin(), ints.begin() + 10);
  const std::vector<Tenths> ten(ints.begin(), ints.begin() + 10);
  v.insert(v.begin() + 5, ten.begin(), ten.end());
  a.insert(a.cend(), first, sa::test::InputIterator<std::int32_t>(ints.data() + 3));
  const std::vector<Tenths> three(ints.begin(), ints.begin() + 3);
  v.insert(v.end(), three.begin(), three.end());
  a.emplace_back(ints[4]);
  v.emplace_back(ints[4]);
  a.emplace(a.cbegin(), ints[5]);
  v.emplace(v.begin(), ints[5]);
  EXPECT_EQ(host_copy(a), v);
}

// --- legacy iterators ---------------------------------------------------------------------------

TEST(Conformance, LegacyInputIteratorsAreTakenAsByStdVector) {
  auto values = random_values<std::int32_t>(n);
  const ProxyInputIterator first(values.data());
  const ProxyInputIterator last(values.data() + values.size());
  const std::vector<std::int32_t> model(first, last);
  const sa::ExpectTransfers expect({});
  const SmartArray<std::int32_t> a(first, last);
  EXPECT_EQ(host_copy(a), model);
  const SmartArray deduced(first, last);  // CTAD from the iterator's value_type
  static_assert(std::is_same_v<decltype(deduced), const SmartArray<std::int32_t>>);
  EXPECT_EQ(host_copy(deduced), model);

  SmartArray<std::int32_t> b(random_values<std::int32_t>(4));
  std::vector<std::int32_t> v = host_copy(b);
  b.assign(first, last);
  v.assign(first, last);
  b.insert(b.cbegin() + 2, first, ProxyInputIterator(values.data() + 5));
  v.insert(v.begin() + 2, first, ProxyInputIterator(values.data() + 5));
  EXPECT_EQ(host_copy(b), v);

  // A legacy forward iterator with a non-const operator*: measured first, allocated once.
  const MutableForwardIterator forward_first(values.data());
  const MutableForwardIterator forward_last(values.data() + values.size());
  const SmartArray<std::int32_t> c(forward_first, forward_last);
  EXPECT_EQ(c.capacity(), n);
  EXPECT_EQ(host_copy(c), values);
  const std::vector<std::int32_t> w(forward_first, forward_last);
  EXPECT_EQ(host_copy(c), w);
}

// --- iterators ---------------------------------------------------------------------------------

TEST(Conformance, IteratorsIncrementAndDecrementAsTemporaries) {
  const auto values = random_values<std::int32_t>(n);
  std::vector<std::int32_t> v(values);
  SmartArray<std::int32_t> a(values);
  (void)std::as_const(a).device_view();  // both sides valid
  {
    // Const iterators read: nothing is copied and the device copy stays valid.
    const sa::ExpectTransfers expect({});
    EXPECT_EQ(*--std::as_const(a).end(), *--std::as_const(v).end());
    EXPECT_EQ(*++std::as_const(a).begin(), *++std::as_const(v).begin());
    EXPECT_EQ(*--a.cend(), v.back());
    EXPECT_EQ(std::as_const(a).end() - std::as_const(a).begin(),
              static_cast<std::ptrdiff_t>(n));
    EXPECT_EQ(*std::prev(a.cend(), 2), v[n - 2]);
    EXPECT_EQ(a.crbegin()[1], v.crbegin()[1]);
    EXPECT_TRUE(a.is_valid(Side::device));
  }
  // Mutable iterators: --a.end() is an lvalue to write through, as for std::vector.
  *--a.end() = 5;
  *--v.end() = 5;
  *++a.begin() = 6;
  *++v.begin() = 6;
  EXPECT_FALSE(a.is_valid(Side::device));
  SmartArray<std::int32_t>::const_iterator mixed = a.begin();  // converts, as for std::vector
  EXPECT_TRUE(mixed == a.begin());
  EXPECT_TRUE(a.begin() < a.cend());
  EXPECT_EQ(a.cend() - a.begin(), static_cast<std::ptrdiff_t>(n));
  EXPECT_EQ(std::to_address(a.cbegin() + 3), a.data() + 3);
  EXPECT_EQ(&*(a.cbegin() + 3), std::as_const(a).data() + 3);
  auto it = a.begin();
  it += 4;
  it -= 1;
  EXPECT_EQ(it[1], v[4]);
  EXPECT_EQ(*(2 + it), v[5]);
  std::sort(a.begin(), a.end());
  std::sort(v.begin(), v.end());
  std::reverse(a.rbegin(), a.rend());
  std::reverse(v.rbegin(), v.rend());
  EXPECT_EQ(host_copy(a), v);
  EXPECT_EQ(SmartArray<std::int32_t>::iterator{}, SmartArray<std::int32_t>::iterator{});
}

// --- the default constructor -------------------------------------------------------------------

TEST(Conformance, ConstantInitializedArrayWorksOnFirstUse) {
  // Constant-initialized at compile time (no resource, no backend); usable like any other.
  EXPECT_TRUE(constant_initialized.empty());
  EXPECT_EQ(constant_initialized.get_allocator(), sa::Allocator<int>{});
  const auto values = random_values<int>(n);
  {
    const sa::ExpectTransfers expect({});
    constant_initialized.assign(values.begin(), values.end());
  }
  scale_on_device(constant_initialized);
  {
    const sa::ExpectTransfers expect({.d2h = 1});
    EXPECT_EQ(host_copy(constant_initialized), scaled(values));
  }
  constant_initialized = SmartArray<int>();
  EXPECT_TRUE(constant_initialized.empty());
}

}  // namespace
