// ApiModel's host access: element reads and writes, host views, copies to the host.
#pragma once

#include "support/api_model/checks.hpp"
#include "support/api_model/model.hpp"
#include "support/api_model/residency.hpp"

#include <algorithm>
#include <compare>
#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::test {

/// True when one tile holds the whole array: element access then moves what the model's
/// whole-array residency says (a host suffix, a device prefix). On a larger array it moves only
/// its tiles, which test_range_property models; the element accesses here then come after a
/// bulk access that makes the host copy whole, as the model assumes.
inline bool ApiModel::one_tile(const Slot& s) {
  return s.model.size() * sizeof(Element) <= s.array.get_allocator().options().tile.bytes();
}

/// Element `at` of `s`'s array, read as the model assumes (see one_tile()).
inline const Element& ApiModel::own(const Slot& s, std::size_t at) {
  if (!one_tile(s)) (void)std::as_const(s.array).data();
  return std::as_const(s.array)[at];
}

inline void ApiModel::const_reads(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const std::size_t at = n > 0 ? in.pick(n) : 0;
  note(x, " const reads at " + str(at));
  const SmartArray<Element>& c = x.array;
  apply(
      [&] {
        if (!one_tile(x)) (void)c.data();
        if (n > 0 &&
            (c[at] != x.model[at] || c.at(at) != x.model[at] || c.front() != x.model.front() ||
             c.back() != x.model.back() || c.data()[at] != x.model[at])) {
          diverge(x, "a const element read differs from the model");
        }
        if (!std::equal(c.crbegin(), c.crend(), x.model.rbegin(), x.model.rend()) ||
            !std::equal(c.begin(), c.end(), x.model.begin(), x.model.end()) ||
            !std::equal(c.cbegin(), c.cend(), x.model.begin(), x.model.end())) {
          diverge(x, "const iteration differs from the model");
        }
        try {
          (void)c.at(n);
          diverge(x, "at(size()) did not throw");
        } catch (const std::out_of_range&) {
        }
      },
      [&] { read_host(x); });
}

inline void ApiModel::mutable_access(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const std::size_t form = in.pick(6);
  if (n == 0) return;
  const std::size_t at = in.pick(n);
  const Element v = in.value();
  note(x, " mutable access (form " + str(form) + ") at " + str(at));
  apply(
      [&] {
        if (form <= 2 && !one_tile(x)) (void)x.array.data();
        if (form == 0) {
          x.array[at] = v;
        } else if (form == 1) {
          x.array.at(at) = v;
        } else if (form == 2) {
          x.array.front() = v;
          x.array.back() += 1U;
        } else if (form == 3) {
          for (Element& e : x.array) e += 3U;
        } else if (form == 4) {
          std::sort(x.array.begin(), x.array.end());
        } else {
          *x.array.rbegin() = v;
          x.array.data()[0] ^= 5U;
        }
      },
      [&] {
        write_host(x);
        if (form == 0 || form == 1) {
          x.model[at] = v;
        } else if (form == 2) {
          x.model.front() = v;
          x.model.back() += 1U;
        } else if (form == 3) {
          for (Element& e : x.model) e += 3U;
        } else if (form == 4) {
          std::sort(x.model.begin(), x.model.end());
        } else {
          x.model.back() = v;
          x.model[0] ^= 5U;
        }
      });
}

inline void ApiModel::host_view(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const std::size_t form = in.pick(4);
  std::optional<StreamRef> stream;
  std::string on;
  if (in.flag()) {
    stream = pick_stream(in, on);
    on = " on " + on;
  }
  std::vector<Element> seen;
  switch (form) {
    case 0:
      note(x, " const host_view()" + on);
      apply(
          [&] {
            const std::span<const Element> view = std::as_const(x.array).host_view(stream);
            seen.assign(view.begin(), view.end());
          },
          [&] {
            read_host(x);
            expect_equal(x, seen, x.model, "a const host view");
          });
      return;
    case 1:
      note(x, ".host_view(read)" + on);
      apply(
          [&] {
            const std::span<Element> view = x.array.host_view(Access::read, stream);
            seen.assign(view.begin(), view.end());
          },
          [&] {
            read_host(x);
            expect_equal(x, seen, x.model, "a read host view");
          });
      return;
    case 2: {
      const std::size_t at = n > 0 ? in.pick(n) : 0;
      const Element v = in.value();
      note(x, ".host_view(read_write)" + on + " and a write at " + str(at));
      apply(
          [&] {
            const std::span<Element> view = x.array.host_view(Access::read_write, stream);
            seen.assign(view.begin(), view.end());
            if (n > 0) view[at] = v;
          },
          [&] {
            write_host(x);
            expect_equal(x, seen, x.model, "a read_write host view");
            if (n > 0) x.model[at] = v;
          });
      return;
    }
    default: {
      const std::vector<Element> fresh = in.values(n);
      note(x, ".host_view(discard)" + on + " and an overwrite");
      apply(
          [&] {
            const std::span<Element> view = x.array.host_view(Access::discard, stream);
            std::copy(fresh.begin(), fresh.end(), view.begin());
          },
          [&] {
            if (n > 0) overwrite_host(x);
            x.model = fresh;
          });
      return;
    }
  }
}

inline void ApiModel::compare(Slot& x, Slot& y) {
  note(x, std::string(" comparisons with ") + y.name);
  bool equal = false;
  bool less = false;
  bool self = false;
  std::strong_ordering order = std::strong_ordering::equal;
  apply(
      [&] {
        equal = x.array == y.array;
        order = x.array <=> y.array;
        less = x.array < y.array;
        self = x.array == x.array;
      },
      [&] {
        read_host(x);
        read_host(y);
        if (equal != (x.model == y.model) || order != (x.model <=> y.model) ||
            less != (x.model < y.model) || !self) {
          diverge(x, "a comparison differs from the model's");
        }
      });
}

inline void ApiModel::copy_to_host(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const std::size_t form = in.pick(6);
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  if (form == 5) {
    if (n == 0) return;
    note(x, ".copy_to(a destination of " + str(n - 1) + ")");
    expect_throw<std::length_error>(x, "copy_to into a short destination", [&] {
      std::vector<Element> short_dest(n - 1);
      x.array.copy_to(std::span<Element>(short_dest), stream);
    });
    return;
  }
  note(x, " copy to host (form " + str(form) + ") on " + on);
  std::vector<Element> dest;
  apply(
      [&] {
        dest.assign(n, poison_element);
        const std::span<Element> to(dest);
        if (form == 0) {
          x.array.copy_to(to, stream);
        } else if (form == 1) {
          x.array.copy_to(to, stream, false);
          synchronize(stream);
        } else if (form == 2) {
          dest = smartarray::copy_to_host(x.array, stream);
        } else if (form == 3) {
          smartarray::copy_to_host(x.array, to, stream);
        } else {
          const AutoSynchronize done(stream);
          copy_to_host_async(x.array, to, stream);
        }
      },
      [&] {
        // The stale host prefix comes straight from the device; the residency stays.
        if (!single_buffer(x.mode) && x.host_begin > 0) add_d2h<Element>(x, x.host_begin);
        expect_equal(x, dest, x.model, "the copy to the host");
      });
}

inline void ApiModel::numba_host(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  if (x.host_begin > 0 && in.flag()) {
    note(x, ".host_changed() on a stale host copy");
    expect_throw<logic_error>(x, "host_changed() on a stale host copy",
                              [&] { x.array.host_changed(); });
    return;
  }
  const std::size_t at = n > 0 ? in.pick(n) : 0;
  const Element v = in.value();
  note(x, ".host(), a write at " + str(at) + ", host_changed()");
  apply(
      [&] {
        const std::span<Element> host = x.array.host();
        if (n > 0) host[at] = v;
        x.array.host_changed();
      },
      [&] {
        read_host(x);
        x.device_end = 0;
        if (n > 0) x.model[at] = v;
      });
}

/// A new array of another memory mode made from the old contents, moved into `x`.
inline void ApiModel::change_mode(ByteReader& in, Slot& x) {
  const std::size_t form = in.pick(3);
  const MemoryMode mode = pick_mode(in);
  const ArrayOptions options = pick_options(in, mode);
  note(x, std::string(" becomes ") + to_string(mode) + (options.read_mostly ? " read-mostly" : "") +
              (form == 0   ? " (from cbegin, cend)"
               : form == 1 ? " (from a const host view)"
                           : " (from copy_to_host)"));
  if (form == 2) {
    // Two calls: a retry of the second must not repeat the first one's copy.
    std::vector<Element> copied;
    apply([&] { copied = smartarray::copy_to_host(x.array); },
          [&] {
            // Straight from the device: the residency stays as it was.
            if (!single_buffer(x.mode) && x.host_begin > 0) add_d2h<Element>(x, x.host_begin);
          });
    apply([&] { x.array = SmartArray<Element>(copied, options); },
          [&] { fresh_model(x, x.model, mode); });
    return;
  }
  apply(
      [&] {
        if (form == 0) {
          x.array = SmartArray<Element>(x.array.cbegin(), x.array.cend(), options);
        } else {
          x.array = SmartArray<Element>(std::as_const(x.array).host_view(), options);
        }
      },
      [&] {
        read_host(x);
        fresh_model(x, x.model, mode);
      });
}

inline void ApiModel::length_errors(ByteReader& in, Slot& x) {
  const std::size_t form = in.pick(6);
  const std::size_t too_many = SmartArray<Element>::max_size() + 1;
  note(x, " a size past max_size() (form " + str(form) + ")");
  if (form == 5) {
    // cend() reads the host first; the insert then throws before changing anything.
    const std::size_t count = SmartArray<Element>::max_size() - x.model.size() + 1;
    expect_throw<std::length_error>(x, "insert past max_size()",
                                    [&] { x.array.insert(x.array.cend(), count, Element{1}); });
    read_host(x);
    return;
  }
  expect_throw<std::length_error>(x, "a size past max_size()", [&] {
    if (form == 0) {
      x.array.reserve(too_many);
    } else if (form == 1) {
      x.array.resize(too_many);
    } else if (form == 2) {
      x.array.resize(too_many, Element{1});
    } else if (form == 3) {
      x.array.assign(too_many, Element{1});
    } else {
      const SmartArray<Element> huge(too_many);
    }
  });
}

}  // namespace smartarray::test
