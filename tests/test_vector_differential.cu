// Differential test of SmartArray<T> against std::vector<T>: random sequences drawn from every
// member of the vector interface, mixed with device kernels that read, write or overwrite the
// arrays through device views on several streams. After each step the contents, the size and the
// iterator results equal those of a std::vector model, and each array's transfer counters equal the
// minimum that the residency contract (docs/vector.md) allows for that step, computed from a model
// of the residency: the host copy is valid on a suffix [host_begin, n), the device copy on a prefix
// [0, device_end). This file holds the operations; the models, the random choices and the checks
// are the harness's (support/vector_differential.cuh).
//
// Fixed seed by default; SMARTARRAY_DIFF_SEQUENCES and SMARTARRAY_DIFF_SEED override it (the GPU
// script runs a longer one), and SMARTARRAY_DIFF_FIRST starts at a later sequence. A failure prints
// the seed, the sequence and the operations so far.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <iterator>
#include <list>
#include <smartarray/smartarray.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "support/device_ops.cuh"
#include "support/test_support.hpp"
#include "support/vector_differential.cuh"

namespace sa = smartarray;
using sa::Access;
using sa::SmartArray;

using smartarray::test::env_or;

namespace {

using sa::test::differential::ConstIterator;
using sa::test::differential::InputIterator;
using sa::test::differential::Slot;
using sa::test::differential::steps_per_sequence;
using sa::test::differential::T;

constexpr std::uint64_t default_seed = 20240611;
constexpr std::size_t default_sequences = 4000;
constexpr T poison = 0xA5A5A5A5U;

/// The operations of a sequence: every member of the vector interface, and device work.
class Differential final : public sa::test::differential::Sequence {
 public:
  using Sequence::Sequence;

 private:
  void operate(Slot& x, Slot& y) override {
    const std::size_t n = x.model.size();
    const std::size_t k = pick(n + 1);  // a position in [0, n]
    switch (pick(48)) {                 // 38 to 47: device work
      case 0: {
        const T v = value();
        note(x, ".push_back(const&)");
        x.array.push_back(v);
        x.model.push_back(v);
        break;
      }
      case 1: {
        T v = value();
        note(x, ".push_back(&&)");
        x.model.push_back(v);
        x.array.push_back(std::move(v));
        break;
      }
      case 2: {
        const T v = value();
        note(x, ".emplace_back()");
        T& added = x.array.emplace_back(v);
        x.model.push_back(v);
        if (added != v) fail(x, "emplace_back returned a reference to another value");
        break;
      }
      case 3: {
        if (n == 0) break;
        note(x, ".pop_back()");
        x.array.pop_back();
        truncate(x, n - 1);
        break;
      }
      case 4: {
        const std::size_t m = pick(n + 12);
        note(x, ".resize(" + std::to_string(m) + ")");
        x.array.resize(m);
        if (m < n) truncate(x, m);
        x.model.resize(m);
        break;
      }
      case 5: {
        const std::size_t m = pick(n + 12);
        const T v = value();
        note(x, ".resize(" + std::to_string(m) + ", v)");
        x.array.resize(m, v);
        if (m < n) truncate(x, m);
        x.model.resize(m, v);
        break;
      }
      case 6: {
        note(x, ".clear()");
        x.array.clear();
        truncate(x, 0);
        break;
      }
      case 7: {
        const std::size_t m = pick(2 * n + 16);
        note(x, ".reserve(" + std::to_string(m) + ")");
        x.array.reserve(m);
        if (x.array.capacity() < m) fail(x, "reserve left a smaller capacity");
        break;
      }
      case 8: {
        note(x, ".shrink_to_fit()");
        x.array.shrink_to_fit();
        if (x.array.capacity() != n) fail(x, "shrink_to_fit left a larger capacity");
        break;
      }
      case 9: {  // a position from cbegin() (a host read), one value
        const T v = value();
        note(x, ".insert(cbegin() + " + std::to_string(k) + ", v)");
        read_host(x);
        const ConstIterator it = x.array.insert(x.array.cbegin() + k, v);
        insert_model(x, k, {v});
        check_iterator(x, it, k);
        break;
      }
      case 10: {  // a position from begin() (a host write), an rvalue
        T v = value();
        note(x, ".insert(begin() + " + std::to_string(k) + ", &&)");
        write_host(x);
        insert_model(x, k, {v});
        const ConstIterator it = x.array.insert(x.array.begin() + k, std::move(v));
        check_iterator(x, it, k);
        break;
      }
      case 11: {
        const T v = value();
        note(x, ".insert(cend(), v)");
        read_host(x);
        const ConstIterator it = x.array.insert(x.array.cend(), v);
        insert_model(x, n, {v});
        check_iterator(x, it, n);
        break;
      }
      case 12: {
        const T v = value();
        note(x, ".insert(end(), v)");
        write_host(x);
        const ConstIterator it = x.array.insert(x.array.end(), v);
        insert_model(x, n, {v});
        check_iterator(x, it, n);
        break;
      }
      case 13: {
        const std::size_t count = pick(6);
        const T v = value();
        note(x, ".insert(cbegin() + " + std::to_string(k) + ", " + std::to_string(count) + ", v)");
        read_host(x);
        const ConstIterator it = x.array.insert(x.array.cbegin() + k, count, v);
        insert_model(x, k, std::vector<T>(count, v));
        check_iterator(x, it, k);
        break;
      }
      case 14: {
        const std::vector<T> range = values(pick(9));
        note(x, ".insert(cbegin() + " + std::to_string(k) + ", vector range of " +
                    std::to_string(range.size()) + ")");
        read_host(x);
        const ConstIterator it = x.array.insert(x.array.cbegin() + k, range.begin(), range.end());
        insert_model(x, k, range);
        check_iterator(x, it, k);
        break;
      }
      case 15: {
        const std::vector<T> range = values(pick(9));
        const std::list<T> list(range.begin(), range.end());
        note(x, ".insert(cbegin() + " + std::to_string(k) + ", list range of " +
                    std::to_string(range.size()) + ")");
        read_host(x);
        const ConstIterator it = x.array.insert(x.array.cbegin() + k, list.begin(), list.end());
        insert_model(x, k, range);
        check_iterator(x, it, k);
        break;
      }
      case 16: {
        const std::vector<T> range = values(pick(9));
        note(x, ".insert(cbegin() + " + std::to_string(k) + ", input range of " +
                    std::to_string(range.size()) + ")");
        read_host(x);
        const ConstIterator it = x.array.insert(x.array.cbegin() + k, InputIterator(range.data()),
                                     InputIterator(range.data() + range.size()));
        insert_model(x, k, range);
        check_iterator(x, it, k);
        break;
      }
      case 17: {  // a range of the array itself
        const std::size_t first = pick(n + 1);
        const std::size_t last = pick_between(first, n);
        note(x, ".insert(cbegin() + " + std::to_string(k) + ", own [" + std::to_string(first) +
                    ", " + std::to_string(last) + "))");
        read_host(x);
        const std::vector<T> range(x.model.begin() + static_cast<std::ptrdiff_t>(first),
                                   x.model.begin() + static_cast<std::ptrdiff_t>(last));
        const ConstIterator it =
            x.array.insert(x.array.cbegin() + k, x.array.cbegin() + first, x.array.cbegin() + last);
        insert_model(x, k, range);
        check_iterator(x, it, k);
        break;
      }
      case 18: {
        const T v = value(), w = value();
        note(x, ".insert(cbegin() + " + std::to_string(k) + ", {v, w})");
        read_host(x);
        const ConstIterator it = x.array.insert(x.array.cbegin() + k, {v, w});
        insert_model(x, k, {v, w});
        check_iterator(x, it, k);
        break;
      }
      case 19: {
        const T v = value();
        note(x, ".emplace(cbegin() + " + std::to_string(k) + ", v)");
        read_host(x);
        const ConstIterator it = x.array.emplace(x.array.cbegin() + k, v);
        insert_model(x, k, {v});
        check_iterator(x, it, k);
        break;
      }
      case 20: {
        if (n == 0) break;
        const std::size_t at = pick(n);
        note(x, ".erase(cbegin() + " + std::to_string(at) + ")");
        read_host(x);
        const ConstIterator it = x.array.erase(x.array.cbegin() + at);
        erase_model(x, at, at + 1);
        check_iterator(x, it, at);
        break;
      }
      case 21: {
        const std::size_t first = pick(n + 1);
        const std::size_t last = pick_between(first, std::min(n, first + 8));
        note(x, ".erase(cbegin() + " + std::to_string(first) + ", cbegin() + " +
                    std::to_string(last) + ")");
        read_host(x);
        const ConstIterator it = x.array.erase(x.array.cbegin() + first, x.array.cbegin() + last);
        erase_model(x, first, last);
        check_iterator(x, it, first);
        break;
      }
      case 22: {
        if (n == 0) break;
        const std::size_t at = pick(n);
        note(x, ".erase(begin() + " + std::to_string(at) + ")");
        write_host(x);
        const ConstIterator it = x.array.erase(x.array.begin() + at);
        erase_model(x, at, at + 1);
        check_iterator(x, it, at);
        break;
      }
      case 23: {
        const std::size_t count = pick(std::min<std::size_t>(n, 5) + 1);
        note(x, ".erase(cend() - " + std::to_string(count) + ", cend())");
        read_host(x);
        const ConstIterator it = x.array.erase(x.array.cend() - count, x.array.cend());
        erase_model(x, n - count, n);
        check_iterator(x, it, n - count);
        break;
      }
      case 24: {
        const T victim = n > 0 && pick(3) != 0 ? x.model[pick(n)] : value();
        note(x, " erase(a, v)");
        read_host(x);
        const std::size_t removed = erase(x.array, victim);
        if (removed != std::erase(x.model, victim)) fail(x, "erase removed another count");
        if (removed > 0) x.device_end = 0;
        truncate(x, x.model.size());
        break;
      }
      case 25: {
        const T divisor = static_cast<T>(pick_between(2, 9));
        const auto predicate = [divisor](T v) { return v % divisor == 0; };
        note(x, " erase_if(a, % " + std::to_string(divisor) + ")");
        read_host(x);
        const std::size_t removed = erase_if(x.array, predicate);
        if (removed != std::erase_if(x.model, predicate)) fail(x, "erase_if removed another count");
        if (removed > 0) x.device_end = 0;
        truncate(x, x.model.size());
        break;
      }
      case 26: {
        const std::size_t m = pick(2 * n + 8);
        const T v = value();
        note(x, ".assign(" + std::to_string(m) + ", v)");
        x.array.assign(m, v);
        x.model.assign(m, v);
        sa::test::overwrite_host(x);
        break;
      }
      case 27: {
        const std::vector<T> range = values(pick(2 * n + 8));
        const std::size_t form = pick(5);
        note(x, ".assign(form " + std::to_string(form) + ", " + std::to_string(range.size()) +
                    " values)");
        if (form == 0) {
          x.array.assign(range.begin(), range.end());
        } else if (form == 1) {
          const std::list<T> list(range.begin(), range.end());
          x.array.assign(list.begin(), list.end());
        } else if (form == 2) {
          x.array.assign(InputIterator(range.data()), InputIterator(range.data() + range.size()));
        } else if (form == 3 && range.size() >= 2) {
          x.array = {range[0], range[1]};
          x.model = {range[0], range[1]};
          sa::test::overwrite_host(x);
          break;
        } else {
          x.array.assign({range.empty() ? T{1} : range[0]});
          x.model = {range.empty() ? T{1} : range[0]};
          sa::test::overwrite_host(x);
          break;
        }
        x.model = range;
        sa::test::overwrite_host(x);
        break;
      }
      case 28: {  // assign from its own elements
        const std::size_t first = pick(n + 1);
        const std::size_t last = pick_between(first, n);
        note(x, ".assign(own [" + std::to_string(first) + ", " + std::to_string(last) + "))");
        read_host(x);
        x.array.assign(x.array.cbegin() + first, x.array.cbegin() + last);
        x.model = std::vector<T>(x.model.begin() + static_cast<std::ptrdiff_t>(first),
                                 x.model.begin() + static_cast<std::ptrdiff_t>(last));
        sa::test::overwrite_host(x);
        break;
      }
      case 29: {
        if (pick(4) == 0) {
          note(x, " = itself");
          const SmartArray<T>& self = x.array;
          x.array = self;
          break;
        }
        note(x, " = " + std::string(y.name) + " (copy)");
        x.array = y.array;
        x.model = y.model;
        x.host_begin = y.host_begin;
        x.device_end = y.device_end;
        x.device_capacity = y.device_end > 0 ? y.model.size() : 0;
        if (y.device_end > 0) {
          x.expected.d2d_count += 1;
          x.expected.d2d_bytes += y.device_end * sizeof(T);
        }
        break;
      }
      case 30: {
        note(x, " = std::move(" + std::string(y.name) + ")");
        x.array = std::move(y.array);
        x.model = std::exchange(y.model, {});
        x.host_begin = std::exchange(y.host_begin, 0);
        x.device_end = std::exchange(y.device_end, 0);
        x.device_capacity = std::exchange(y.device_capacity, 0);
        break;
      }
      case 31: {  // a fresh array from one of the constructors, moved in
        const std::vector<T> range = values(pick(30));
        const std::size_t form = pick(7);
        note(x, " = SmartArray(form " + std::to_string(form) + ", " + std::to_string(range.size()) +
                    ")");
        const T v = range.empty() ? T{7} : range[0];
        if (form == 0) {
          x.array = SmartArray<T>(range.size());
          x.model.assign(range.size(), T{});
        } else if (form == 1) {
          x.array = SmartArray<T>(range.size(), v);
          x.model.assign(range.size(), v);
        } else if (form == 2) {
          const std::list<T> list(range.begin(), range.end());
          x.array = SmartArray<T>(list.begin(), list.end());
          x.model = range;
        } else if (form == 3) {
          x.array = SmartArray<T>(InputIterator(range.data()),
                                  InputIterator(range.data() + range.size()));
          x.model = range;
        } else if (form == 4) {
          x.array = SmartArray<T>{v, v + 1};
          x.model = {v, v + 1};
        } else if (form == 5) {
          x.array = SmartArray<T>(std::span<const T>(range));
          x.model = range;
        } else {
          x.array = SmartArray<T>(range);
          x.model = range;
        }
        x.host_begin = x.device_end = x.device_capacity = 0;
        break;
      }
      case 32: {
        const std::size_t form = pick(3);
        note(x, " swap with " + std::string(y.name) + " (form " + std::to_string(form) + ")");
        if (form == 0) {
          x.array.swap(y.array);
        } else if (form == 1) {
          swap(x.array, y.array);
        } else {
          std::swap(x.array, y.array);
        }
        std::swap(x.model, y.model);
        std::swap(x.host_begin, y.host_begin);
        std::swap(x.device_end, y.device_end);
        std::swap(x.device_capacity, y.device_capacity);
        break;
      }
      case 33: {  // const reads: the device copy stays valid
        note(x, " const reads");
        const SmartArray<T>& c = x.array;
        if (n > 0) {
          read_host(x);
          if (!one_tile(x)) (void)c.data();
          const std::size_t at = pick(n);
          if (c[at] != x.model[at] || c.at(at) != x.model[at] || c.front() != x.model.front() ||
              c.back() != x.model.back() || c.data()[at] != x.model[at]) {
            fail(x, "a const element read differs from the model");
          }
          if (!std::equal(c.crbegin(), c.crend(), x.model.rbegin(), x.model.rend()) ||
              !std::equal(c.begin(), c.end(), x.model.begin(), x.model.end())) {
            fail(x, "const iteration differs from the model");
          }
        }
        try {
          (void)c.at(n);
          fail(x, "at(size()) did not throw");
        } catch (const std::out_of_range&) {
        }
        break;
      }
      case 34: {  // mutable access: the host changes, once
        if (n == 0) break;
        const std::size_t form = pick(6);
        note(x, " mutable access (form " + std::to_string(form) + ")");
        write_host(x);
        if (form <= 2 && !one_tile(x)) (void)x.array.data();
        const std::size_t at = pick(n);
        const T v = value();
        if (form == 0) {
          x.array[at] = v;
          x.model[at] = v;
        } else if (form == 1) {
          x.array.at(at) = v;
          x.model.at(at) = v;
        } else if (form == 2) {
          x.array.front() = v;
          x.array.back() += 1;
          x.model.front() = v;
          x.model.back() += 1;
        } else if (form == 3) {
          for (T& e : x.array) e += 3;
          for (T& e : x.model) e += 3;
        } else if (form == 4) {
          std::sort(x.array.begin(), x.array.end());
          std::sort(x.model.begin(), x.model.end());
        } else {
          *x.array.rbegin() = v;
          x.array.data()[0] ^= 5;
          *x.model.rbegin() = v;
          x.model[0] ^= 5;
        }
        break;
      }
      case 35: {
        note(x, ".host_view(discard) and overwrite");
        const std::vector<T> fresh = values(n);
        const std::span<T> host = x.array.host_view(Access::discard);
        std::copy(fresh.begin(), fresh.end(), host.begin());
        if (n > 0) sa::test::overwrite_host(x);
        x.model = fresh;
        break;
      }
      case 36: {
        note(x, " comparisons with " + std::string(y.name));
        const bool same_size = x.model.size() == y.model.size();
        const bool equal = x.array == y.array;
        if (same_size) {
          read_host(x);
          read_host(y);
        }
        const auto order = x.array <=> y.array;
        read_host(x);
        read_host(y);
        if (equal != (x.model == y.model) || order != (x.model <=> y.model) ||
            (x.array < y.array) != (x.model < y.model) || !(x.array == x.array)) {
          fail(x, "a comparison differs from the model's");
        }
        break;
      }
      case 37: {  // a position taken before device work, used after it
        const bool erasing = n > 0 && pick(2) == 0;
        const std::size_t at = erasing ? pick(n) : k;
        note(x, std::string(erasing ? ".erase" : ".insert") +
                    " at a position taken before a "
                    "device write, index " +
                    std::to_string(at));
        read_host(x);
        const ConstIterator base = x.array.cbegin();
        sa::test::scale_on_device(x.array, stream());
        acquire_device(x, Access::read_write);
        x.model = sa::test::scaled(x.model);
        if (erasing) {
          const ConstIterator it = x.array.erase(base + at);
          erase_model(x, at, at + 1);
          check_iterator(x, it, at);
        } else {
          const T v = value();
          const ConstIterator it = x.array.insert(base + at, v);
          insert_model(x, at, {v});
          check_iterator(x, it, at);
        }
        break;
      }
      default: {  // device work: read, read-write or overwrite, on one of three streams
        const std::size_t kind = pick(3);
        const sa::StreamRef on = stream();
        if (kind == 0) {
          note(x, " device read");
          SmartArray<T> out(n, poison);
          sa::test::copy_on_device(out, x.array, on);
          acquire_device(x, Access::read);
          if (sa::test::host_copy(out) != x.model) fail(x, "a device read saw other values");
        } else if (kind == 1) {
          note(x, " device read_write");
          sa::test::scale_on_device(x.array, on);
          acquire_device(x, Access::read_write);
          x.model = sa::test::scaled(x.model);
        } else {
          const T v = value();
          note(x, " device discard");
          sa::test::fill_on_device(x.array, v, on);
          acquire_device(x, Access::discard);
          std::fill(x.model.begin(), x.model.end(), v);
        }
        break;
      }
    }
  }
};

}  // namespace

TEST(VectorDifferential, RandomSequencesMatchStdVectorWithMinimalTransfers) {
  const std::uint64_t seed = env_or("SMARTARRAY_DIFF_SEED", default_seed);
  const std::uint64_t sequences = env_or("SMARTARRAY_DIFF_SEQUENCES", default_sequences);
  // SMARTARRAY_DIFF_FIRST=N starts at sequence N: a failure's sequence alone, with
  // SMARTARRAY_DIFF_SEQUENCES=1.
  const std::uint64_t first = env_or("SMARTARRAY_DIFF_FIRST", std::uint64_t{0});
  std::cout << "differential: " << sequences << " sequences of " << steps_per_sequence
            << " steps from sequence " << first << ", seed " << seed << "\n";
  const std::array<sa::Stream, 2> streams{};
  for (std::uint64_t sequence = first; sequence < first + sequences; ++sequence) {
    const std::string failure = Differential(seed, sequence, streams).run();
    ASSERT_TRUE(failure.empty()) << failure;
  }
}
