// ApiModel's streams, the stale-host guard, misuse, and armed failures.
#pragma once

#include "support/api_model/checks.hpp"
#include "support/api_model/kernels.hpp"
#include "support/api_model/model.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace smartarray::test {

inline void ApiModel::streams(ByteReader& in) {
  const std::size_t form = in.pick(6);
  const std::size_t which = in.pick(streams_.size());
  const std::string owned = "s" + str(which + 1);
  std::string on;
  const StreamRef stream = pick_stream(in, on);
  switch (form) {
    case 0:
      // Arrays whose pending work names the old stream drop it; its handle may come back.
      note("(streams) " + owned + " replaced by a new stream");
      streams_[which] = Stream();
      return;
    case 1:
      note("(streams) " + owned + ".synchronize()");
      streams_[which].synchronize();
      return;
    case 2:
      note("(streams) synchronize(" + on + ")");
      synchronize(stream);
      return;
    case 3:
      note("(streams) synchronize_device()");
      synchronize_device();
      return;
    case 4: {
      note("(streams) AutoSynchronize(" + on + ")");
      const AutoSynchronize scope(stream);
      return;
    }
    default:
      note("(streams) " + owned + ".query()");
      (void)streams_[which].query();
      return;
  }
}

/// The stale-host guard (debug.hpp) protects the stale pages of host copies that go stale from
/// now on; the model's checks read host copies only where they are valid.
inline void ApiModel::toggle_stale_host_guard(ByteReader& in) {
  const bool on = in.flag();
  note(std::string("(debug) set_stale_host_guard(") + (on ? "true" : "false") + ")");
  set_stale_host_guard(on);
}

/// A call with one bad argument: a stream destroyed just before (nothing made since can have
/// taken its handle), a handle that is no stream (host backend), a device that does not exist,
/// or a range past the end. It must throw and change nothing: no transfer, no validity, no value.
inline void ApiModel::misuse(ByteReader& in, Slot& x, Slot& y) {
  ++totals_.misuses;
  const std::size_t form = in.pick(9);
  const Element v = in.value();
  if (form == 8) {
    const int offset = static_cast<int>(in.pick(100));
    const int bad = in.flag() ? device_count() + offset : -1 - offset;
    note(x, " (misuse) is_valid and device_transfer_stats of device " + std::to_string(bad));
    expect_throw<logic_error>(x, "is_valid of a device that does not exist",
                              [&] { (void)x.array.is_valid(Device{bad}); });
    expect_throw<logic_error>(x, "device_transfer_stats of a device that does not exist",
                              [&] { (void)device_transfer_stats(bad); });
    return;
  }
  if (form == 7) {
    const std::size_t n = x.model.size();
    const std::size_t first = in.pick(n + 2);
    const std::size_t count = in.flag() ? std::numeric_limits<std::size_t>::max() - in.pick(4)
                                        : n - std::min(n, first) + 1 + in.pick(4);
    note(x, " (misuse) slice(" + str(first) + ", " + str(count) + ") and at(" + str(n) + ")");
    expect_throw<std::out_of_range>(x, "a slice past the end",
                                    [&] { (void)x.array.slice(first, count); });
    expect_throw<std::out_of_range>(x, "at() past the end", [&] { (void)x.array.at(n); });
    return;
  }
  StreamRef bad;
  std::string name = "a destroyed stream";
  if (in.flag() && backend() == BackendKind::host) {
    bad = StreamRef{reinterpret_cast<void*>(std::uintptr_t{0x4d2})};
    name = "a handle that is no stream";
  } else {
    const Stream made;
    bad = made.ref();
  }
  note(x, " (misuse) form " + str(form) + " on " + name);
  expect_throw<logic_error>(x, "a call on a stream that is not live", [&] {
    switch (form) {
      case 0: (void)std::as_const(x.array).device_view(bad); break;
      case 1: (void)x.array.device_view(Access::read_write, bad); break;
      case 2: (void)x.array.device_view(Access::discard, bad); break;
      case 3: (void)x.array.host_view(Access::read_write, bad); break;
      case 4: smartarray::fill(x.array, v, bad); break;
      case 5: smartarray::copy(y.array, std::as_const(x.array), bad); break;
      default: smartarray::transform(y.array, Affine{v, v}, std::as_const(x.array), bad); break;
    }
  });
}

/// Arms a failure of the k-th allocation or copy that the calls of the next operations make.
inline void ApiModel::inject(ByteReader& in) {
  armed_kind_ = in.flag() ? testing::Fault::allocation : testing::Fault::copy;
  armed_left_ = 1 + in.pick(4);
  armed_steps_ = armed_operations;
  note(std::string("(inject) ") +
       (armed_kind_ == testing::Fault::allocation ? "allocation" : "copy") + " failure #" +
       str(armed_left_) + " armed for the next " + str(armed_operations) + " operations");
}

}  // namespace smartarray::test
