// ApiModel's whole-array operations: copy and move assignment, construction, swap.
#pragma once

#include "support/api_model/checks.hpp"
#include "support/api_model/model.hpp"
#include "support/api_model/residency.hpp"
#include "support/input_iterator.hpp"

#include <cstddef>
#include <list>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::test {

inline void ApiModel::copy_assign(Slot& x, Slot& y) {
  if (&x == &y) {
    note(x, " = itself");
    const SmartArray<Element>& self = x.array;
    apply([&] { x.array = self; }, [] {});
    return;
  }
  note(x, std::string(" = ") + y.name + " (copy)");
  apply([&] { x.array = y.array; },
        [&] {
          // The copy of the device side counts on the assigned array.
          const std::size_t device = copy_model(x, y);
          if (device > 0) add_d2d<Element>(x, device);
        });
}

inline void ApiModel::move_assign(Slot& x, Slot& y) {
  note(x, std::string(" = std::move(") + y.name + ")");
  apply([&] { x.array = std::move(y.array); },
        [&] {
          if (&x == &y) return;
          x.model = y.model;
          x.mode = y.mode;
          x.capacity = y.capacity;
          x.host_begin = y.host_begin;
          x.device_end = y.device_end;
          x.device_capacity = y.device_capacity;
          moved_from(y);
        });
}

inline void ApiModel::copy_construct(Slot& x, Slot& y) {
  note(x, std::string(" = SmartArray(") + y.name + ") (copy construction, moved in)");
  apply(
      [&] {
        SmartArray<Element> copy(std::as_const(y.array));
        x.array = std::move(copy);
      },
      [&] { (void)copy_model(x, y); });  // the copy's transfers count on the temporary
}

/// A new array from one of the constructors or Numba's factories, moved into `x`.
inline void ApiModel::construct(ByteReader& in, Slot& x) {
  const std::size_t form = in.pick(14);
  const MemoryMode mode = pick_mode(in);
  const ArrayOptions options = pick_options(in, mode);
  const std::string in_mode =
      std::string(", ") + to_string(mode) + (options.read_mostly ? ", read-mostly)" : ")");
  const std::size_t n = form == 4 ? 2 : form == 7 || form == 8 ? 0 : pick_size(in);
  switch (form) {
    case 0:
      note(x, " = SmartArray(" + str(n) + in_mode);
      apply([&] { x.array = SmartArray<Element>(n, options); },
            [&] { fresh_model(x, std::vector<Element>(n), mode); });
      return;
    case 1: {
      const Element v = in.value();
      note(x, " = SmartArray(" + str(n) + ", v" + in_mode);
      apply([&] { x.array = SmartArray<Element>(n, v, options); },
            [&] { fresh_model(x, std::vector<Element>(n, v), mode); });
      return;
    }
    case 2: {
      const std::vector<Element> values = in.values(n);
      const std::list<Element> list(values.begin(), values.end());
      note(x, " = SmartArray(list of " + str(n) + in_mode);
      apply([&] { x.array = SmartArray(list.begin(), list.end(), options); },
            [&] { fresh_model(x, values, mode); });
      return;
    }
    case 3: {
      const std::vector<Element> values = in.values(n);
      note(x, " = SmartArray(input range of " + str(n) + in_mode);
      apply(
          [&] {
            x.array =
                SmartArray<Element>(InputIterator<Element>(values.data()),
                                    InputIterator<Element>(values.data() + values.size()), options);
          },
          [&] {
            // Input ranges grow as push_back does.
            fresh_model(x, values, mode);
            x.capacity = 0;
            for (std::size_t size = 1; size <= n; ++size) {
              if (size > x.capacity) x.capacity = grown(size, x.capacity);
            }
          });
      return;
    }
    case 4: {
      const Element v = in.value();
      note(x, " = SmartArray({v, v + 1}" + in_mode);
      apply(
          [&] {
            x.array = SmartArray<Element>({v, v + 1U}, options);
          },
          [&] {
            fresh_model(x, {v, v + 1U}, mode);
          });
      return;
    }
    case 5: {
      const std::vector<Element> values = in.values(n);
      note(x, " = SmartArray(span of " + str(n) + in_mode);
      apply([&] { x.array = SmartArray<Element>(std::span<const Element>(values), options); },
            [&] { fresh_model(x, values, mode); });
      return;
    }
    case 6: {
      const std::vector<Element> values = in.values(n);
      note(x, " = SmartArray(vector of " + str(n) + in_mode);
      apply([&] { x.array = SmartArray<Element>(values, options); },
            [&] { fresh_model(x, values, mode); });
      return;
    }
    case 7:
      note(x, " = SmartArray(" + std::string(to_string(mode)) + ")");
      apply([&] { x.array = SmartArray<Element>(options); }, [&] { fresh_model(x, {}, mode); });
      return;
    case 8:
      note(x, " = SmartArray()");
      apply([&] { x.array = SmartArray<Element>(); },
            [&] { fresh_model(x, {}, MemoryMode::explicit_copy); });
      return;
    case 9:
      note(x, " = pinned_array(" + str(n) + ")");
      apply([&] { x.array = pinned_array<Element>(n); },
            [&] { fresh_model(x, std::vector<Element>(n), MemoryMode::explicit_copy); });
      return;
    case 10: {
      if (!device_properties().can_map_host_memory) return;
      const bool portable = in.flag();
      const bool write_combined = in.flag();
      note(x, " = mapped_array(" + str(n) + ", portable " + str(portable) + ", wc " +
                  str(write_combined) + ")");
      apply([&] { x.array = mapped_array<Element>(n, portable, write_combined); },
            [&] { fresh_model(x, std::vector<Element>(n), MemoryMode::mapped); });
      return;
    }
    case 11: {
      const std::vector<Element> values = in.values(n);
      std::string on;
      const StreamRef stream = pick_stream(in, on);
      note(x, " = to_device(vector of " + str(n) + ", " + on + in_mode);
      apply([&] { x.array = to_device(values, stream, options); },
            [&] {
              // Valid on both sides; the upload counts on the returned temporary.
              fresh_model(x, values, mode);
              x.device_end = n;
              x.device_capacity = single_buffer(mode) ? 0 : n;
            });
      return;
    }
    default: {
      // Numba's device_array, or device_array_like (the size and mode of another array):
      // uninitialized, so a fill on the device follows before anything reads it.
      const Slot* like = form == 12 ? nullptr : &pick_slot(in);
      const Element v = in.value();
      std::string on;
      const StreamRef stream = pick_stream(in, on);
      const std::size_t size = like != nullptr ? like->model.size() : n;
      const MemoryMode made = like != nullptr ? like->mode : mode;
      if (like != nullptr) {
        note(x, std::string(" = device_array_like(") + like->name + ", " + on + ")");
        apply([&] { x.array = device_array_like(like->array, stream); },
              [&] { device_only_model(x, std::vector<Element>(size, v), made); });
      } else {
        note(x, " = device_array(" + str(n) + ", " + on + in_mode);
        apply([&] { x.array = device_array<Element>(n, stream, options); },
              [&] { device_only_model(x, std::vector<Element>(n, v), mode); });
      }
      note(x, " fill(v) on " + on);
      apply([&] { smartarray::fill(x.array, v, stream); },
            [&] { acquire_device(x, Access::discard); });
      return;
    }
  }
}

inline void ApiModel::swap(ByteReader& in, Slot& x, Slot& y) {
  const std::size_t form = in.pick(3);
  note(x, std::string(" swap with ") + y.name +
              (form == 0   ? " (member)"
               : form == 1 ? " (smartarray::swap)"
                           : " (std::swap)"));
  apply(
      [&] {
        if (form == 0) {
          x.array.swap(y.array);
        } else if (form == 1) {
          smartarray::swap(x.array, y.array);
        } else {
          std::swap(x.array, y.array);
        }
      },
      [&] {
        if (&x != &y) swap_models(x, y);
      });
}

}  // namespace smartarray::test
