// A single-pass iterator over contiguous values, for tests that drive the input-iterator paths of
// SmartArray (constructors, assign, insert). Plain C++: the libFuzzer target includes it too.
#pragma once

#include <cstddef>
#include <iterator>

namespace smartarray::test {

// In a named namespace: nvcc flags unreferenced members of classes with internal linkage, and
// ranges need the postfix increment of a legacy input iterator even where it is not called.
/// A single-pass iterator over `T` values: ranges of it take the input-iterator paths.
template <typename T>
class InputIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = const T*;
  using reference = const T&;

  InputIterator() = default;
  explicit InputIterator(const T* at) : at_(at) {}
  reference operator*() const { return *at_; }
  InputIterator& operator++() {
    ++at_;
    return *this;
  }
  InputIterator operator++(int) {
    InputIterator before = *this;
    ++at_;
    return before;
  }
  friend bool operator==(const InputIterator&, const InputIterator&) = default;

 private:
  const T* at_ = nullptr;
};

static_assert(std::input_iterator<InputIterator<int>> && !std::forward_iterator<InputIterator<int>>);

}  // namespace smartarray::test
