// An iterator over contiguous values that is not a pointer, for tests that drive the iterator-pair
// paths of SmartArray (constructors, assign, insert): single-pass by default, or of another
// category. Like the libc++ tests' iterators it deletes the comma operator, so that a library
// that applies it to the caller's iterators does not compile. Plain C++: the libFuzzer target
// includes it too.
#pragma once

#include <cstddef>
#include <iterator>

namespace smartarray::test {

// In a named namespace: nvcc flags unreferenced members of classes with internal linkage, and
// ranges need the postfix increment of a legacy input iterator even where it is not called.
/// An iterator over `T` values of category `Category`: ranges of the default, single-pass one take
/// the input-iterator paths.
template <typename T, typename Category = std::input_iterator_tag>
class InputIterator {
 public:
  using iterator_category = Category;
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
  template <typename U>
  void operator,(const U&) const = delete;

 private:
  const T* at_ = nullptr;
};

static_assert(std::input_iterator<InputIterator<int>> && !std::forward_iterator<InputIterator<int>>);

}  // namespace smartarray::test
