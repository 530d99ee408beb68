// ApiModel's operations of the std::vector interface: growth, insert, erase, assign.
#pragma once

#include "support/api_model/checks.hpp"
#include "support/api_model/model.hpp"
#include "support/api_model/residency.hpp"
#include "support/input_iterator.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <list>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::test {

inline void ApiModel::push_back(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const std::size_t form = in.pick(4);
  if (room(x) == 0) return;
  if (form == 3 && n > 0) {  // an element of the array itself: copied before any growth
    const std::size_t at = in.pick(n);
    note(x, ".push_back(own [" + str(at) + "])");
    apply([&] { x.array.push_back(own(x, at)); },
          [&] {
            read_host(x);
            grow(x, n + 1);
            x.model.push_back(x.model[at]);
          });
    return;
  }
  const Element v = in.value();
  note(x, form == 0 ? ".push_back(v)" : form == 1 ? ".push_back(&&)" : ".emplace_back(v)");
  const Element* added = nullptr;
  apply(
      [&] {
        if (form == 0) {
          x.array.push_back(v);
        } else if (form == 1) {
          Element moved = v;
          x.array.push_back(std::move(moved));
        } else {
          added = &x.array.emplace_back(v);
        }
      },
      [&] {
        grow(x, n + 1);
        x.model.push_back(v);
        if (added != nullptr && *added != v) diverge(x, "emplace_back returned another value");
      });
}

inline void ApiModel::pop_back(Slot& x) {
  const std::size_t n = x.model.size();
  if (n == 0) return;
  note(x, ".pop_back()");
  apply([&] { x.array.pop_back(); }, [&] { truncate(x, n - 1); });
}

inline void ApiModel::resize(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const std::size_t m = std::min(in.pick(n + 13), max_elements);
  const std::size_t form = in.pick(3);
  if (form == 0) {
    note(x, ".resize(" + str(m) + ")");
    apply([&] { x.array.resize(m); }, [&] { resize_model(x, m, Element{}); });
  } else if (form == 1 || n == 0) {
    const Element v = in.value();
    note(x, ".resize(" + str(m) + ", v)");
    apply([&] { x.array.resize(m, v); }, [&] { resize_model(x, m, v); });
  } else {
    const std::size_t at = in.pick(n);
    note(x, ".resize(" + str(m) + ", own [" + str(at) + "])");
    apply([&] { x.array.resize(m, own(x, at)); },
          [&] {
            read_host(x);
            resize_model(x, m, x.model[at]);
          });
  }
}

inline void ApiModel::resize_model(Slot& x, std::size_t m, Element v) {
  if (m <= x.model.size()) {
    truncate(x, m);
    return;
  }
  grow(x, m);
  x.model.resize(m, v);
}

inline void ApiModel::clear(Slot& x) {
  note(x, ".clear()");
  apply([&] { x.array.clear(); }, [&] { truncate(x, 0); });
}

inline void ApiModel::reserve(ByteReader& in, Slot& x) {
  const std::size_t m = std::min(in.pick(2 * x.model.size() + 17), 2 * max_elements);
  note(x, ".reserve(" + str(m) + ")");
  apply([&] { x.array.reserve(m); },
        [&] {
          if (m > x.capacity) reallocate(x, m);
        });
}

inline void ApiModel::shrink_to_fit(Slot& x) {
  note(x, ".shrink_to_fit()");
  apply([&] { x.array.shrink_to_fit(); },
        [&] {
          if (x.capacity != x.model.size()) reallocate(x, x.model.size());
        });
}

inline void ApiModel::insert(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const std::size_t form = in.pick(12);
  const std::size_t k = in.pick(n + 1);
  const std::size_t limit = std::min<std::size_t>(room(x), 8);
  if (limit < 2 || (form == 11 && n == 0)) return;
  SmartArray<Element>& a = x.array;
  ConstIterator it{};
  std::size_t index = k;
  bool writes = false;  // the position came from begin() or end(): a host write
  std::vector<Element> inserted;
  std::list<Element> list;
  std::function<void()> call;
  switch (form) {
    case 0:
      inserted = {in.value()};
      note(x, ".insert(cbegin() + " + str(k) + ", v)");
      call = [&] { it = a.insert(a.cbegin() + k, inserted[0]); };
      break;
    case 1:
      inserted = {in.value()};
      writes = true;
      note(x, ".insert(begin() + " + str(k) + ", &&)");
      call = [&] {
        Element moved = inserted[0];
        it = a.insert(a.begin() + k, std::move(moved));
      };
      break;
    case 2:
      inserted = {in.value()};
      index = n;
      note(x, ".insert(cend(), v)");
      call = [&] { it = a.insert(a.cend(), inserted[0]); };
      break;
    case 3:
      inserted = {in.value()};
      index = n;
      writes = true;
      note(x, ".insert(end(), v)");
      call = [&] { it = a.insert(a.end(), inserted[0]); };
      break;
    case 4: {
      const std::size_t count = in.pick(limit + 1);
      const Element v = in.value();
      inserted.assign(count, v);
      note(x, ".insert(cbegin() + " + str(k) + ", " + str(count) + ", v)");
      call = [&, count, v] { it = a.insert(a.cbegin() + k, count, v); };
      break;
    }
    case 5:
      inserted = in.values(in.pick(limit + 1));
      note(x, ".insert(cbegin() + " + str(k) + ", vector of " + str(inserted.size()) + ")");
      call = [&] { it = a.insert(a.cbegin() + k, inserted.begin(), inserted.end()); };
      break;
    case 6:
      inserted = in.values(in.pick(limit + 1));
      list.assign(inserted.begin(), inserted.end());
      note(x, ".insert(cbegin() + " + str(k) + ", list of " + str(inserted.size()) + ")");
      call = [&] { it = a.insert(a.cbegin() + k, list.begin(), list.end()); };
      break;
    case 7:
      inserted = in.values(in.pick(limit + 1));
      note(x, ".insert(cbegin() + " + str(k) + ", input range of " + str(inserted.size()) + ")");
      call = [&] {
        it = a.insert(a.cbegin() + k, InputIterator<Element>(inserted.data()),
                      InputIterator<Element>(inserted.data() + inserted.size()));
      };
      break;
    case 8: {  // a range of the array itself
      const std::size_t first = in.pick(n + 1);
      const std::size_t last = std::min(first + in.pick(limit + 1), n);
      inserted.assign(x.model.begin() + static_cast<std::ptrdiff_t>(first),
                      x.model.begin() + static_cast<std::ptrdiff_t>(last));
      note(x, ".insert(cbegin() + " + str(k) + ", own [" + str(first) + ", " + str(last) + "))");
      call = [&, first, last] {
        it = a.insert(a.cbegin() + k, a.cbegin() + first, a.cbegin() + last);
      };
      break;
    }
    case 9:
      inserted = in.values(2);
      note(x, ".insert(cbegin() + " + str(k) + ", {v, w})");
      call = [&] { it = a.insert(a.cbegin() + k, {inserted[0], inserted[1]}); };
      break;
    case 10:
      inserted = {in.value()};
      note(x, ".emplace(cbegin() + " + str(k) + ", v)");
      call = [&] { it = a.emplace(a.cbegin() + k, inserted[0]); };
      break;
    default: {  // copies of an element of the array itself
      const std::size_t count = in.pick(limit + 1);
      const std::size_t at = in.pick(n);
      inserted.assign(count, x.model[at]);
      note(x, ".insert(cbegin() + " + str(k) + ", " + str(count) + ", own [" + str(at) + "])");
      call = [&, count, at] { it = a.insert(a.cbegin() + k, count, own(x, at)); };
      break;
    }
  }
  apply(call, [&] {
    access_host(x, writes);
    insert_model(x, index, inserted);
    check_iterator(x, it, index);
  });
}

inline void ApiModel::erase(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const std::size_t form = in.pick(5);
  if (n == 0 && (form == 0 || form == 2)) return;
  SmartArray<Element>& a = x.array;
  ConstIterator it{};
  std::size_t first = 0;
  std::size_t last = 0;
  bool writes = false;
  std::function<void()> call;
  switch (form) {
    case 0:
      first = in.pick(n);
      last = first + 1;
      note(x, ".erase(cbegin() + " + str(first) + ")");
      call = [&] { it = a.erase(a.cbegin() + first); };
      break;
    case 1:
      first = in.pick(n + 1);
      last = std::min(n, first + in.pick(9));
      note(x, ".erase(cbegin() + " + str(first) + ", cbegin() + " + str(last) + ")");
      call = [&] { it = a.erase(a.cbegin() + first, a.cbegin() + last); };
      break;
    case 2:
      first = in.pick(n);
      last = first + 1;
      writes = true;
      note(x, ".erase(begin() + " + str(first) + ")");
      call = [&] { it = a.erase(a.begin() + first); };
      break;
    case 3:
      first = n - in.pick(std::min<std::size_t>(n, 5) + 1);
      last = n;
      note(x, ".erase(cend() - " + str(n - first) + ", cend())");
      call = [&] { it = a.erase(a.cend() - (n - first), a.cend()); };
      break;
    default:
      first = last = in.pick(n + 1);
      note(x, ".erase(cbegin() + " + str(first) + ", cbegin() + " + str(first) + ")");
      call = [&] { it = a.erase(a.cbegin() + first, a.cbegin() + first); };
      break;
  }
  apply(call, [&] {
    access_host(x, writes);
    erase_model(x, first, last);
    check_iterator(x, it, first);
  });
}

inline void ApiModel::erase_value(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const bool by_value = in.flag();
  std::size_t removed = 0;
  if (by_value) {
    const Element victim = n > 0 && in.flag() ? x.model[in.pick(n)] : in.value();
    note(x, " erase(a, v)");
    apply([&] { removed = smartarray::erase(x.array, victim); },
          [&] {
            read_host(x);  // before the model loses elements: a prefetch moves the old size
            erase_value_model(x, removed, std::erase(x.model, victim));
          });
    return;
  }
  const auto divisor = static_cast<Element>(2 + in.pick(8));
  const auto predicate = [divisor](Element v) { return v % divisor == 0; };
  note(x, " erase_if(a, % " + str(divisor) + ")");
  apply([&] { removed = smartarray::erase_if(x.array, predicate); },
        [&] {
          read_host(x);
          erase_value_model(x, removed, std::erase_if(x.model, predicate));
        });
}

/// erase(a, v) and erase_if after their host read: the device copy is stale when something was
/// removed.
inline void ApiModel::erase_value_model(Slot& x, std::size_t removed, std::size_t expected) {
  if (removed != expected) diverge(x, "erase removed " + str(removed) + ", not " + str(expected));
  if (removed > 0) x.device_end = 0;
  truncate(x, x.model.size());
}

inline void ApiModel::assign(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const std::size_t form = in.pick(8);
  const std::size_t m = std::min(in.pick(2 * n + 9), max_elements);
  switch (form) {
    case 0: {
      const Element v = in.value();
      note(x, ".assign(" + str(m) + ", v)");
      apply([&] { x.array.assign(m, v); }, [&] { assign_model(x, std::vector<Element>(m, v)); });
      return;
    }
    case 1: {
      const std::vector<Element> range = in.values(m);
      note(x, ".assign(vector of " + str(m) + ")");
      apply([&] { x.array.assign(range.begin(), range.end()); }, [&] { assign_model(x, range); });
      return;
    }
    case 2: {
      const std::vector<Element> range = in.values(m);
      const std::list<Element> list(range.begin(), range.end());
      note(x, ".assign(list of " + str(m) + ")");
      apply([&] { x.array.assign(list.begin(), list.end()); }, [&] { assign_model(x, range); });
      return;
    }
    case 3: {
      const std::vector<Element> range = in.values(m);
      note(x, ".assign(input range of " + str(m) + ")");
      apply(
          [&] {
            x.array.assign(InputIterator<Element>(range.data()),
                           InputIterator<Element>(range.data() + range.size()));
          },
          [&] { assign_model(x, range); });
      return;
    }
    case 4: {
      const Element v = in.value();
      note(x, " = {v, v + 1}");
      apply([&] { x.array = {v, v + 1U}; }, [&] { assign_model(x, {v, v + 1U}); });
      return;
    }
    case 5: {
      const Element v = in.value();
      note(x, ".assign({v})");
      apply([&] { x.array.assign({v}); }, [&] { assign_model(x, {v}); });
      return;
    }
    case 6: {  // a range of the array itself
      const std::size_t first = in.pick(n + 1);
      const std::size_t last = first + in.pick(n - first + 1);
      note(x, ".assign(own [" + str(first) + ", " + str(last) + "))");
      apply([&] { x.array.assign(x.array.cbegin() + first, x.array.cbegin() + last); },
            [&] {
              read_host(x);
              assign_model(
                  x, std::vector<Element>(x.model.begin() + static_cast<std::ptrdiff_t>(first),
                                          x.model.begin() + static_cast<std::ptrdiff_t>(last)));
            });
      return;
    }
    default: {  // copies of an element of the array itself
      if (n == 0) return;
      const std::size_t at = in.pick(n);
      note(x, ".assign(" + str(m) + ", own [" + str(at) + "])");
      apply([&] { x.array.assign(m, own(x, at)); },
            [&] {
              read_host(x);
              assign_model(x, std::vector<Element>(m, x.model[at]));
            });
      return;
    }
  }
}

}  // namespace smartarray::test
