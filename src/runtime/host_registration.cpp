// RAII registration of existing host memory.
#include <smartarray/runtime/detail/runtime.hpp>
#include <smartarray/error.hpp>
#include <smartarray/runtime/host_registration.hpp>

#include <utility>

namespace smartarray {
namespace {
unsigned to_pinned_flags(RegistrationFlags flags) noexcept {
  const auto bits = static_cast<unsigned>(flags);
  unsigned out = pinned_default;
  if (bits & static_cast<unsigned>(RegistrationFlags::mapped)) out |= pinned_mapped;
  if (bits & static_cast<unsigned>(RegistrationFlags::portable)) out |= pinned_portable;
  return out;
}
}  // namespace

HostRegistration::HostRegistration(void* ptr, std::size_t bytes, RegistrationFlags flags)
    : ptr_(ptr), bytes_(bytes), flags_(flags) {
  SMARTARRAY_EXPECTS(ptr != nullptr || bytes == 0, logic_error,
                     "HostRegistration: null pointer with ", bytes, " bytes");
  detail::runtime().register_host(ptr, bytes, to_pinned_flags(flags));
}

HostRegistration::~HostRegistration() {
  if (ptr_ != nullptr && bytes_ != 0) detail::runtime().unregister_host(ptr_);
}

HostRegistration::HostRegistration(HostRegistration&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      flags_(other.flags_) {}

HostRegistration& HostRegistration::operator=(HostRegistration&& other) noexcept {
  if (this != &other) {
    if (ptr_ != nullptr && bytes_ != 0) detail::runtime().unregister_host(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    flags_ = other.flags_;
  }
  return *this;
}

void* HostRegistration::device_pointer() const {
  SMARTARRAY_EXPECTS((static_cast<unsigned>(flags_) & static_cast<unsigned>(RegistrationFlags::mapped)) != 0,
                     logic_error, "HostRegistration::device_pointer: the range at ", ptr_, " (",
                     bytes_, " bytes) was not registered as mapped");
  return detail::runtime().mapped_device_pointer(ptr_);
}

}  // namespace smartarray
