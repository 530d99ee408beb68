/**
 * @file runtime/host_registration.hpp
 * @brief `HostRegistration`: RAII page-locking of existing host memory (Numba's `cuda.pinned`).
 */
#pragma once

#include <cstddef>
#include <span>

namespace smartarray {

/// @brief How registered host memory may be used.
enum class RegistrationFlags : unsigned {
  none = 0,
  mapped = 1U << 0,    ///< also map it into the device address space
  portable = 1U << 1,  ///< pinned for every CUDA context
};

/**
 * @brief Page-locks an existing host range for its lifetime (cudaHostRegister / Unregister), so
 *        that copies from and to it run at pinned-memory speed.
 *
 * The memory stays owned by the caller; it must outlive the registration.
 */
class HostRegistration {
 public:
  /**
   * @brief Registers `bytes` bytes at `ptr`.
   * @throws logic_error when `ptr` is null with a nonzero size, or when the range is already
   *         registered.
   * @throws cuda_error when the backend refuses the registration.
   */
  HostRegistration(void* ptr, std::size_t bytes, RegistrationFlags flags = RegistrationFlags::none);
  /// @brief Registers the memory of `range`.
  template <typename T>
  explicit HostRegistration(std::span<T> range, RegistrationFlags flags = RegistrationFlags::none)
      : HostRegistration(static_cast<void*>(const_cast<std::remove_const_t<T>*>(range.data())),
                         range.size_bytes(), flags) {}
  /// @brief Unregisters the range. Never throws.
  ~HostRegistration();
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  /// @brief Takes over the registration of `other`, which is left empty.
  HostRegistration(HostRegistration&& other) noexcept;
  /// @brief Unregisters this range and takes over that of `other`.
  HostRegistration& operator=(HostRegistration&& other) noexcept;

  /// @brief The registered host address.
  [[nodiscard]] void* data() const noexcept { return ptr_; }
  /// @brief The registered size in bytes.
  [[nodiscard]] std::size_t size_bytes() const noexcept { return bytes_; }
  /// @brief The device address of a range registered with `RegistrationFlags::mapped`.
  /// @throws logic_error when the range is not mapped.
  [[nodiscard]] void* device_pointer() const;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  RegistrationFlags flags_ = RegistrationFlags::none;
};

}  // namespace smartarray
