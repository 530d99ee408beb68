/**
 * @file interop/cccl_resource.hpp
 * @brief smartarray's resources as CCCL `cuda::mr` resources, and any CCCL resource (every RMM
 *        resource included) as a smartarray resource (namespace `smartarray::interop`).
 *
 * Two generations of CCCL's memory-resource concepts are in use, and both directions below model
 * or accept either:
 * - CCCL 3.0 (CUDA 13.0's toolkit): `cuda::mr::async_resource`, with `allocate(bytes, align)` and
 *   `allocate_async(bytes, align, stream)`, behind `LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE`
 *   (this header defines it when it is not defined, so include it before any other CCCL
 *   memory-resource header, or define the macro yourself);
 * - CCCL 3.2 and later (RMM 26 vendors 3.5): `cuda::mr::resource`, with `allocate(stream, bytes,
 *   align)` and `allocate_sync(bytes, align)`.
 *
 * `CcclResourceView` lets RMM containers and CCCL code allocate from smartarray's pool:
 *
 *     sa::interop::CcclResourceView pool{sa::default_device_resource()};
 *     rmm::device_uvector<float> v(n, stream, pool);      // any_resource copies the view
 *
 * `CcclDeviceResource` gives SmartArrays device storage from any CCCL resource, per array
 * (`ArrayOptions::device_resource`) or per device (`set_device_resource`):
 *
 *     sa::interop::CcclDeviceResource from_rmm{rmm_pool}; // rmm_pool must outlive it
 *     sa::set_device_resource(&from_rmm);
 *
 * When the CCCL resource throws `std::bad_alloc` (RMM's `rmm::out_of_memory` is one), the adaptor
 * evicts the device copies it holds, clean ones first, then the least recently used dirty ones
 * (written back), and retries; only when nothing is left to evict does it throw `out_of_memory`.
 */
#pragma once

#ifndef LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#endif
#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <smartarray/memory/evictable_resource.hpp>
#include <smartarray/memory/memory_resource.hpp>

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

namespace smartarray::interop {

/**
 * @brief A copyable, non-owning view of a smartarray `MemoryResource` that models CCCL's
 *        stream-ordered resource concept with the `device_accessible` property, in both
 *        generations (`cuda::mr::async_resource` of CCCL 3.0, `cuda::mr::resource` of CCCL 3.2+).
 *
 * Views compare equal when their resources do (`MemoryResource::is_equal`). The resource must
 * outlive every view and every block allocated through one.
 */
class CcclResourceView {
 public:
  /// @brief A view of `resource`.
  explicit CcclResourceView(MemoryResource& resource) noexcept : resource_(&resource) {}

  /// @brief The viewed resource.
  [[nodiscard]] MemoryResource& resource() const noexcept { return *resource_; }

  // CCCL 3.2 and later: the stream comes first.
  /// @brief `bytes` usable by work queued on `stream` after the call.
  [[nodiscard]] void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment) {
    return resource_->allocate(StreamRef{static_cast<void*>(stream.get())}, bytes, alignment);
  }
  /// @brief Releases a block whose last use was queued on `stream`.
  void deallocate(cuda::stream_ref stream, void* ptr, std::size_t bytes,
                  std::size_t alignment) noexcept {
    resource_->deallocate(StreamRef{static_cast<void*>(stream.get())}, ptr, bytes, alignment);
  }
  /// @brief `bytes` that the host may touch at once.
  [[nodiscard]] void* allocate_sync(std::size_t bytes, std::size_t alignment = default_alignment) {
    return resource_->allocate_sync(bytes, alignment);
  }
  /// @brief Releases a block that no queued work uses.
  void deallocate_sync(void* ptr, std::size_t bytes,
                       std::size_t alignment = default_alignment) noexcept {
    resource_->deallocate_sync(ptr, bytes, alignment);
  }

  // CCCL 3.0: the synchronous pair is `allocate`/`deallocate`, and the stream comes last.
  /// @brief As `allocate_sync`.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment = default_alignment) {
    return allocate_sync(bytes, alignment);
  }
  /// @brief As `deallocate_sync`.
  void deallocate(void* ptr, std::size_t bytes, std::size_t alignment = default_alignment) noexcept {
    deallocate_sync(ptr, bytes, alignment);
  }
  /// @brief As `allocate(stream, bytes, alignment)`.
  [[nodiscard]] void* allocate_async(std::size_t bytes, std::size_t alignment,
                                     cuda::stream_ref stream) {
    return allocate(stream, bytes, alignment);
  }
  /// @brief As `deallocate(stream, ptr, bytes, alignment)`.
  void deallocate_async(void* ptr, std::size_t bytes, std::size_t alignment,
                        cuda::stream_ref stream) noexcept {
    deallocate(stream, ptr, bytes, alignment);
  }

  /// @brief Equal when the viewed resources are (memory from one can be freed through the other).
  friend bool operator==(const CcclResourceView& a, const CcclResourceView& b) noexcept {
    return a.resource_ == b.resource_ || a.resource_->is_equal(*b.resource_);
  }
  /// @brief The memory is device-accessible.
  friend void get_property(const CcclResourceView&, cuda::mr::device_accessible) noexcept {}

 private:
  MemoryResource* resource_;
};

}  // namespace smartarray::interop

namespace smartarray::detail {
/// CCCL 3.2 and later: `allocate(stream, bytes, align)` and `allocate_sync(bytes, align)`.
template <class R>
concept cccl_stream_first_resource =
    requires(R& r, cuda::stream_ref s, void* p, std::size_t n) {
      { r.allocate(s, n, n) } -> std::same_as<void*>;
      r.deallocate(s, p, n, n);
      { r.allocate_sync(n, n) } -> std::same_as<void*>;
      r.deallocate_sync(p, n, n);
    };
/// CCCL 3.0: `allocate_async(bytes, align, stream)` and `allocate(bytes, align)`.
template <class R>
concept cccl_stream_last_resource =
    requires(R& r, cuda::stream_ref s, void* p, std::size_t n) {
      { r.allocate_async(n, n, s) } -> std::same_as<void*>;
      r.deallocate_async(p, n, n, s);
      { r.allocate(n, n) } -> std::same_as<void*>;
      r.deallocate(p, n, n);
    };
}  // namespace smartarray::detail

namespace smartarray::interop {

/// @brief A stream-ordered CCCL memory resource of either generation.
template <class R>
concept cccl_stream_resource =
    detail::cccl_stream_first_resource<R> || detail::cccl_stream_last_resource<R>;

/**
 * @brief Device memory from a CCCL stream-ordered resource (any RMM resource, a
 *        `cuda::mr::resource_ref`, `rmm::device_async_resource_ref`, ...), with eviction.
 *
 * An lvalue is referred to and must outlive the adaptor; an rvalue (a resource ref, a shared RMM
 * resource handle) is moved into it. When the upstream throws `std::bad_alloc`, the eviction hooks
 * run (SmartArray's drops the device copies this adaptor holds) and the request is retried; once
 * a round of hooks gives nothing back through this adaptor (whatever they report),
 * `out_of_memory` names the request and the upstream's message. Other exceptions pass through
 * unchanged.
 */
class CcclDeviceResource final : public EvictableResource {
 public:
  /// @brief An adaptor over `upstream` (see the class comment for lvalues and rvalues).
  template <class Resource>
    requires cccl_stream_resource<std::remove_cvref_t<Resource>>
  explicit CcclDeviceResource(Resource&& upstream) {
    using R = std::remove_cvref_t<Resource>;
    if constexpr (std::is_lvalue_reference_v<Resource>) {
      upstream_ = const_cast<R*>(std::addressof(upstream));
    } else {
      auto owned = std::make_shared<R>(std::move(upstream));
      upstream_ = owned.get();
      owned_ = std::move(owned);
    }
    allocate_ = &allocate_with<R>;
    deallocate_ = &deallocate_with<R>;
  }

  /// @brief Device memory.
  [[nodiscard]] MemoryKind kind() const noexcept override { return MemoryKind::device; }

 private:
  template <class R>
  static void* allocate_with(void* upstream, StreamRef stream, std::size_t bytes,
                             std::size_t alignment, bool host) {
    R& r = *static_cast<R*>(upstream);
    if constexpr (detail::cccl_stream_first_resource<R>) {
      return host ? r.allocate_sync(bytes, alignment)
                  : r.allocate(cuda::stream_ref{to_cuda(stream)}, bytes, alignment);
    } else {
      return host ? r.allocate(bytes, alignment)
                  : r.allocate_async(bytes, alignment, cuda::stream_ref{to_cuda(stream)});
    }
  }
  template <class R>
  static void deallocate_with(void* upstream, StreamRef stream, void* ptr, std::size_t bytes,
                              std::size_t alignment, bool host) noexcept {
    R& r = *static_cast<R*>(upstream);
    if constexpr (detail::cccl_stream_first_resource<R>) {
      if (host) {
        r.deallocate_sync(ptr, bytes, alignment);
      } else {
        r.deallocate(cuda::stream_ref{to_cuda(stream)}, ptr, bytes, alignment);
      }
    } else {
      if (host) {
        r.deallocate(ptr, bytes, alignment);
      } else {
        r.deallocate_async(ptr, bytes, alignment, cuda::stream_ref{to_cuda(stream)});
      }
    }
  }
  [[nodiscard]] static cudaStream_t to_cuda(StreamRef stream) noexcept {
    return static_cast<cudaStream_t>(stream.handle());
  }

  void* do_allocate(StreamRef stream, std::size_t bytes, std::size_t alignment, bool host) override;
  void do_deallocate(StreamRef stream, void* ptr, std::size_t bytes, std::size_t alignment,
                     bool host) noexcept override;

  void* upstream_ = nullptr;
  std::shared_ptr<void> owned_;
  /// Bytes ever given back through this adaptor: whether a round of eviction hooks freed any.
  std::atomic<std::uint64_t> given_back_{0};
  void* (*allocate_)(void*, StreamRef, std::size_t, std::size_t, bool) = nullptr;
  void (*deallocate_)(void*, StreamRef, void*, std::size_t, std::size_t, bool) noexcept = nullptr;
};

}  // namespace smartarray::interop
