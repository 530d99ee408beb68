// ApiModel's device work: device views, the adapters, reductions and kernel launches.
#pragma once

#include "support/api_model/checks.hpp"
#include "support/api_model/kernels.hpp"
#include "support/api_model/model.hpp"
#include "support/api_model/residency.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace smartarray::test {

inline void ApiModel::device_read(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  const bool through_const = in.flag();
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  note(x, std::string(through_const ? " const" : "") + ".device_view(read) on " + on +
              ", a kernel copies it out");
  std::vector<Element> seen;
  apply(
      [&] {
        SmartArray<Element> out(n, poison_element);
        const DeviceView<const Element> from = through_const
                                                   ? std::as_const(x.array).device_view(stream)
                                                   : x.array.device_view(Access::read, stream);
        for_each_index(n, CopyOp{from, out.device_view(Access::discard, stream)}, stream);
        seen = contents(out);
      },
      [&] {
        acquire_device(x, Access::read);
        expect_equal(x, seen, x.model, "what a kernel read");
      });
}

inline void ApiModel::device_read_write(ByteReader& in, Slot& x) {
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  note(x, ".device_view(read_write) on " + on + ", a kernel scales it");
  apply(
      [&] {
        const DeviceView<Element> view = x.array.device_view(Access::read_write, stream);
        for_each_index(view.size(), ScaleOp{view}, stream);
      },
      [&] {
        acquire_device(x, Access::read_write);
        for (Element& e : x.model) e = e * 2U + 1U;
      });
}

inline void ApiModel::device_discard(ByteReader& in, Slot& x) {
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  const Element v = in.value();
  note(x, ".device_view(discard) on " + on + ", a kernel fills it");
  apply(
      [&] {
        const DeviceView<Element> view = x.array.device_view(Access::discard, stream);
        for_each_index(view.size(), FillOp{view, v}, stream);
      },
      [&] {
        acquire_device(x, Access::discard);
        std::fill(x.model.begin(), x.model.end(), v);
      });
}

inline void ApiModel::numba_gpu(ByteReader& in, Slot& x) {
  const std::size_t n = x.model.size();
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  if (x.device_end < n && in.flag()) {
    note(x, ".gpu_changed() on a stale device copy");
    expect_throw<logic_error>(x, "gpu_changed() on a stale device copy",
                              [&] { x.array.gpu_changed(stream); });
    return;
  }
  note(x, ".gpu(" + on + "), a kernel writes through it, gpu_changed()");
  apply(
      [&] {
        const DeviceView<Element> view = x.array.gpu(stream);
        for_each_index(view.size(), ScaleOp{view}, stream);
        x.array.gpu_changed(stream);
      },
      [&] {
        acquire_device(x, Access::read);
        x.host_begin = n;
        for (Element& e : x.model) e = e * 2U + 1U;
      });
}

inline void ApiModel::transform(ByteReader& in, Slot& x, Slot& y) {
  const std::size_t form = in.pick(5);
  const Affine f{in.value(), in.value()};
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  const auto affine = [&f](const std::vector<Element>& from) {
    std::vector<Element> to(from.size());
    std::transform(from.begin(), from.end(), to.begin(), f);
    return to;
  };
  if (form == 0) {
    note(x, " transform(a, f, a) in place on " + on);
    apply([&] { smartarray::transform(x.array, f, x.array, stream); },
          [&] {
            acquire_device(x, Access::read);
            acquire_device(x, Access::read_write);
            x.model = affine(x.model);
          });
    return;
  }
  const bool same_size = x.model.size() == y.model.size();
  if (form == 1) {  // a view operand, acquired by the caller
    note(y,
         std::string(" transform(out(") + y.name + "), f, " + x.name + ".device_view()) on " + on);
    std::optional<DeviceView<const Element>> view;
    apply([&] { view = std::as_const(x.array).device_view(stream); },
          [&] { acquire_device(x, Access::read); });
    if (!same_size) {
      expect_throw<logic_error>(y, "transform of a view of another size",
                                [&] { smartarray::transform(out(y.array), f, *view, stream); });
      return;
    }
    // The view is no operand that transform knows: the output is discarded even if it is x.
    apply([&] { smartarray::transform(out(y.array), f, *view, stream); },
          [&] {
            acquire_device(y, Access::discard);
            y.model = affine(x.model);
          });
    return;
  }
  const Element k = form == 4 ? in.value() : Element{1};
  note(y, std::string(" transform (form ") + str(form) + ") of " + x.name + " on " + on);
  if (!same_size) {  // sizes are checked before anything is acquired
    expect_throw<logic_error>(y, "transform of arrays of different sizes",
                              [&] { smartarray::transform(out(y.array), f, x.array, stream); });
    return;
  }
  apply(
      [&] {
        if (form == 2) {
          smartarray::transform(out(y.array), f, x.array, stream);
        } else if (form == 3) {
          smartarray::transform(y.array, f, x.array);  // the default stream
        } else {
          smartarray::transform(y.array, AddScaled{}, x.array, y.array, k, stream);
        }
      },
      [&] {
        // Operands first, then the output: read_write when it is also an operand.
        acquire_device(x, Access::read);
        if (form == 4) {
          acquire_device(y, Access::read);
          acquire_device(y, Access::read_write);
          for (std::size_t i = 0; i < y.model.size(); ++i) {
            y.model[i] = AddScaled{}(x.model[i], y.model[i], k);
          }
        } else {
          acquire_device(y, &x == &y ? Access::read_write : Access::discard);
          y.model = affine(x.model);
        }
      });
}

inline void ApiModel::map(ByteReader& in, Slot& x, Slot& y) {
  const std::size_t form = in.pick(3);
  const Affine f{in.value(), in.value()};
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  const std::size_t n = x.model.size();
  std::vector<Element> mapped(n);
  std::transform(x.model.begin(), x.model.end(), mapped.begin(), f);
  if (form == 0) {
    note(x, " map(f, a) on " + on + ", read back");
    std::vector<Element> seen;
    apply([&] { seen = contents(smartarray::map(f, x.array, stream)); },
          [&] {
            acquire_device(x, Access::read);
            expect_equal(x, seen, mapped, "map's result");
          });
    return;
  }
  const Element k = form == 2 ? in.value() : Element{1};
  note(y, std::string(" = map (form ") + str(form) + ") of " + x.name + " on " + on);
  if (form == 2) {
    if (y.model.size() != n) {
      expect_throw<logic_error>(y, "map over arrays of different sizes", [&] {
        (void)smartarray::map(AddScaled{}, x.array, y.array, k, stream);
      });
      return;
    }
    for (std::size_t i = 0; i < n; ++i) mapped[i] = AddScaled{}(x.model[i], y.model[i], k);
  }
  apply(
      [&] {
        if (form == 1) {
          y.array = smartarray::map(f, x.array, stream);
        } else {
          y.array = smartarray::map(AddScaled{}, x.array, y.array, k, stream);
        }
      },
      [&] {
        acquire_device(x, Access::read);
        if (form == 2) acquire_device(y, Access::read);
        // The result is a new explicit array, valid on the device only.
        device_only_model(y, mapped, MemoryMode::explicit_copy);
      });
}

inline void ApiModel::fill(ByteReader& in, Slot& x) {
  const Element v = in.value();
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  note(x, " fill(a, v) on " + on);
  apply([&] { smartarray::fill(x.array, v, stream); },
        [&] {
          acquire_device(x, Access::discard);
          std::fill(x.model.begin(), x.model.end(), v);
        });
}

inline void ApiModel::copy(ByteReader& in, Slot& x, Slot& y) {
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  note(y, std::string(" copy(") + y.name + ", " + x.name + ") on " + on);
  if (x.model.size() != y.model.size()) {
    expect_throw<logic_error>(y, "copy between arrays of different sizes",
                              [&] { smartarray::copy(y.array, std::as_const(x.array), stream); });
    return;
  }
  // A failed device-to-device copy leaves the destination partly written: the call promises
  // nothing about it until it succeeds.
  apply([&] { smartarray::copy(y.array, std::as_const(x.array), stream); },
        [&] {
          if (&x == &y || x.model.empty()) return;
          acquire_device(x, Access::read);
          acquire_device(y, Access::discard);
          y.model = x.model;
          add_d2d<Element>(y, y.model.size());  // counted on the destination
        },
        &y);
}

inline void ApiModel::reduce(ByteReader& in, Slot& x) {
  const std::size_t form = in.pick(3);
  const Element init = in.value();
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  note(x, (form == 0   ? " reduce(a, init, sum) on "
           : form == 1 ? " reduce(a, init, max) on "
                       : " reduce_async(a, init, sum) on ") +
              on);
  Element result = 0;
  apply(
      [&] {
        if (form == 0) {
          result = smartarray::reduce(x.array, init, Sum{}, stream);
        } else if (form == 1) {
          result = smartarray::reduce(x.array, init, Max{}, stream);
        } else {
          const SmartArray<Element> pending = reduce_async(x.array, init, Sum{}, stream);
          result = pending.host_view(stream)[0];
        }
      },
      [&] {
        acquire_device(x, Access::read);
        Element expected = init;
        for (const Element e : x.model) expected = form == 1 ? Max{}(expected, e) : expected + e;
        if (result != expected) diverge(x, "reduce returned another value");
      });
}

/// launch.hpp: intents from the kernel's parameter types, through a raw kernel when the front
/// end has one, else through bind_kernel_args and for_each_index. `y` is `x` when the sizes
/// differ.
inline void ApiModel::bind_kernel(ByteReader& in, Slot& x, Slot& picked) {
  Slot& y = x.model.size() == picked.model.size() ? picked : x;
  const bool discard = in.flag();
  const bool raw = options_.launch_axpy && in.flag();
  const Element k = in.value();
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  note(y, std::string(raw ? " launch" : " bind_kernel_args") + "(axpy, " + x.name + ", " +
              (discard ? "out(" + std::string(1, y.name) + ")" : std::string(1, y.name)) + ") on " +
              on);
  apply(
      [&] {
        if (raw) {
          options_.launch_axpy(x.array, y.array, discard, k, stream);
          return;
        }
        const auto [xv, yv, scale] =
            discard
                ? bind_kernel_args(axpy_signature, stream, std::as_const(x.array), out(y.array), k)
                : bind_kernel_args(axpy_signature, stream, std::as_const(x.array), y.array, k);
        for_each_index(yv.size(), AxpyOp{xv, yv, scale, discard}, stream);
      },
      [&] {
        // Arrays in parameter order; out() arrays after all the others.
        acquire_device(x, Access::read);
        acquire_device(y, discard ? Access::discard : Access::read_write);
        for (std::size_t i = 0; i < y.model.size(); ++i) {
          y.model[i] = discard ? x.model[i] * k : x.model[i] * k + y.model[i];
        }
      });
}

}  // namespace smartarray::test
