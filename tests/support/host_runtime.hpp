// Shared by the host runtime tests: private host runtimes, their owned streams and events, errors.
#pragma once

#include <smartarray/runtime/detail/runtime.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace smartarray::test::host_runtime {

/// Sets (or, with nullptr, unsets) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// A private host runtime of one device, with `latency_us` per queued operation and
/// `device_memory` bytes of emulated device memory (the default size when nullptr).
inline std::unique_ptr<smartarray::detail::Runtime> make_runtime(
    std::uint64_t latency_us = 0, const char* device_memory = nullptr) {
  const std::string latency_text = std::to_string(latency_us);
  ScopedEnv latency("SMARTARRAY_HOST_LATENCY_US", latency_text.c_str());
  ScopedEnv memory("SMARTARRAY_HOST_DEVICE_MEMORY", device_memory);
  ScopedEnv devices("SMARTARRAY_HOST_DEVICES", "1");
  return std::unique_ptr<smartarray::detail::Runtime>(smartarray::detail::make_host_runtime());
}

/// A stream of a test's runtime, destroyed at the end of the scope.
class OwnedStream {
 public:
  explicit OwnedStream(smartarray::detail::Runtime& rt) : rt_(rt), ref_(rt.create_stream()) {}
  ~OwnedStream() { rt_.destroy_stream(ref_); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  operator StreamRef() const { return ref_; }  // NOLINT

 private:
  smartarray::detail::Runtime& rt_;
  StreamRef ref_;
};

/// An event of a test's runtime, destroyed at the end of the scope.
class OwnedEvent {
 public:
  explicit OwnedEvent(smartarray::detail::Runtime& rt) : rt_(rt), event_(rt.create_event()) {}
  ~OwnedEvent() { rt_.destroy_event(event_); }
  OwnedEvent(const OwnedEvent&) = delete;
  OwnedEvent& operator=(const OwnedEvent&) = delete;
  operator smartarray::detail::EventHandle() const { return event_; }  // NOLINT

 private:
  smartarray::detail::Runtime& rt_;
  smartarray::detail::EventHandle event_;
};

/// The message of the `Exception` that `fn` throws (a failure when it throws nothing).
template <typename Exception, typename Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const Exception& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace smartarray::test::host_runtime
