// The adapters' narrow view of the backend (runtime/detail/stream_work.hpp).
#include <smartarray/runtime/detail/stream_work.hpp>

#include <smartarray/runtime/detail/runtime.hpp>

#include <utility>

namespace smartarray::detail {

void check_stream(StreamRef stream) { runtime().check_stream(stream); }

void launch_host_func(StreamRef stream, std::function<void()> fn) {
  runtime().launch_host_func(stream, std::move(fn));
}

}  // namespace smartarray::detail
