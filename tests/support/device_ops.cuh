// Device operations shared by the tests. nvcc cannot put extended __host__ __device__ lambdas in a
// GoogleTest body (a private member function), so tests call these namespace-scope helpers.
#pragma once

#include <smartarray/adapters/for_each_index.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/detail/runtime.hpp>

#include <future>
#include <memory>
#include <vector>

namespace smartarray::test {

/// a[i] = a[i] * 2 + 1 on the device, through a read_write view on `stream`.
template <typename T>
void scale_on_device(SmartArray<T>& a, StreamRef stream = {}) {
  auto v = a.device_view(Access::read_write, stream);
  for_each_index(v.size(), [v] SMARTARRAY_HOST_DEVICE(std::size_t i) { v[i] = v[i] * 2 + 1; },
                 stream);
}

/// The host reference of scale_on_device.
template <typename T>
std::vector<T> scaled(std::vector<T> values) {
  for (auto& x : values) x = x * 2 + 1;
  return values;
}

/// out = in on the device (in read, out discarded) on `stream`.
template <typename T>
void copy_on_device(SmartArray<T>& out, const SmartArray<T>& in, StreamRef stream = {}) {
  auto src = in.device_view(stream);
  auto dst = out.device_view(Access::discard, stream);
  for_each_index(dst.size(), [src, dst] SMARTARRAY_HOST_DEVICE(std::size_t i) { dst[i] = src[i]; },
                 stream);
}

/// Every element of a device view set to `value` on `stream`.
template <typename T>
void fill_view(DeviceView<T> v, T value, StreamRef stream = {}) {
  for_each_index(v.size(), [v, value] SMARTARRAY_HOST_DEVICE(std::size_t i) { v[i] = value; },
                 stream);
}

/// Every element of `a` set to `value` on the device (discard: nothing is copied in).
template <typename T>
void fill_on_device(SmartArray<T>& a, T value, StreamRef stream = {}) {
  fill_view(a.device_view(Access::discard, stream), value, stream);
}

/// Blocks `stream` until the returned promise is set: work queued behind it stays pending, which
/// proves that the host does not wait for it.
inline std::promise<void> gate(StreamRef stream) {
  std::promise<void> release;
  auto opened = std::make_shared<std::shared_future<void>>(release.get_future().share());
  detail::runtime().launch_host_func(stream, [opened] { opened->wait(); });
  return release;
}

/// The host contents of `a`, read through a const view (the device copy stays valid).
template <typename T>
std::vector<T> host_copy(const SmartArray<T>& a) {
  auto view = a.host_view();
  return {view.begin(), view.end()};
}

}  // namespace smartarray::test
