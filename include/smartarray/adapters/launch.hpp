/**
 * @file adapters/launch.hpp
 * @brief `launch(kernel, grid, block, [shared_bytes,] stream, args...)`: launches a `__global__`
 *        kernel on SmartArrays, taking each array's access intent from the kernel's own parameter
 *        types.
 *
 * For each `SmartArray` argument `a` or `Slice` argument `s`, the type of the kernel parameter it
 * binds to decides the access (`out(...)` wraps either):
 *
 * | parameter                                                     | argument   | access       |
 * | ------------------------------------------------------------- | ---------- | ------------ |
 * | `DeviceView<const T>`, `const T*`, `cuda::std::span<const T>` | `a`, `s`   | `read`       |
 * | `DeviceView<T>`, `T*`, `cuda::std::span<T>`                   | `a`, `s`   | `read_write` |
 * | `DeviceView<T>`, `T*`, `cuda::std::span<T>`                   | `out(...)` | `discard`    |
 *
 * A slice `s` (`a.slice(first, count)`, core/slice.hpp) binds as its range only: the parameter
 * gets a view of its `count` elements, and the acquire copies only the bytes of that range that
 * the device lacks. A slice is a view, so a temporary one is fine as an argument.
 *
 * A `ShapedView` parameter (a `cuda::std::mdspan`) takes `shaped(x, layout, extents...)`, where
 * `x` is an array, a slice or `out(...)` of either, with the same rule for its element type.
 *
 * Other arguments pass through, converted to the parameter's type as in a plain call. An array
 * or slice of the wrong element type, a const array or a `Slice<const T>` bound to a writing
 * parameter and `out(...)` bound to a read-only parameter are compile errors.
 *
 * Arrays and slices are acquired on `stream` before the kernel is queued on it, so the kernel runs
 * after the copies it needs and after the arrays' earlier work on other streams; the host does not
 * wait. Arguments bound with `out(...)` are acquired last, so an array passed both as an input and
 * through `out()` keeps its contents (read, then discard, is read_write).
 *
 * The kernel is launched with `cudaLaunchKernel`, so this header also works from files compiled by
 * a plain C++ compiler (the kernel must be defined in a file compiled by nvcc). A raw `__global__`
 * kernel cannot run on the host backend: there, `launch` throws `logic_error`.
 *
 * @code
 * __global__ void axpy(float a, sa::DeviceView<const float> x, sa::DeviceView<float> y);
 * sa::launch(axpy, blocks, 256, stream, 2.0f, x, y);   // x: read, y: read_write
 * sa::launch(axpy, blocks, 256, stream, 2.0f, x.slice(0, n), y.slice(n, n));  // n elements each
 * @endcode
 */
#pragma once

#include <smartarray/config.hpp>
#include <smartarray/diagnostics/nvtx.hpp>
#include <smartarray/views/device_view.hpp>
#include <smartarray/error.hpp>
#include <smartarray/adapters/out.hpp>
#include <smartarray/core/residency.hpp>
#include <smartarray/runtime/runtime.hpp>
#include <smartarray/views/shaped_view.hpp>
#include <smartarray/core/smart_array.hpp>
#include <smartarray/runtime/stream.hpp>
#include <smartarray/adapters/detail/adapter_traits.hpp>
#include <smartarray/core/detail/chunked_access.hpp>
#include <smartarray/runtime/detail/cuda_check.hpp>

#include <cuda/std/mdspan>
#include <cuda/std/span>
#include <cuda_runtime_api.h>

#include <array>
#include <concepts>
#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace smartarray {

/**
 * @brief An array argument of `launch` with an N-d shape, bound to a `ShapedView` parameter. Made
 *        by `shaped(a, layout, extents...)`.
 * @tparam A `SmartArray<T>&`, `const SmartArray<T>&`, `Slice<T>`, `Slice<const T>` or `Out<T>`.
 * @tparam Layout `CLayout` or `FLayout`.
 * @tparam Rank the number of extents.
 */
template <typename A, typename Layout, std::size_t Rank>
class Shaped {
 public:
  /// @brief The extents type.
  using extents_type = cuda::std::dextents<std::size_t, Rank>;
  /// @brief Wraps `array` with `extents` (checked by `shaped`).
  Shaped(A array, extents_type extents) noexcept : array_(array), extents_(extents) {}
  /// @brief The wrapped array argument.
  [[nodiscard]] A argument() const noexcept { return array_; }
  /// @brief The extents.
  [[nodiscard]] const extents_type& extents() const noexcept { return extents_; }

 private:
  A array_;
  extents_type extents_;
};

/**
 * @brief Gives an array argument of `launch` a shape, to bind it to a `ShapedView` parameter.
 * @param array a `SmartArray` (const for read-only parameters), a `Slice` (`Slice<const T>` for
 *        read-only parameters) or `out(...)` of either.
 * @param layout `c_order` or `f_order`; it must match the parameter's layout.
 * @param extents one extent per dimension.
 * @throws logic_error when the product of the extents differs from the array's or slice's size.
 */
template <typename A, typename Layout, std::integral... Extents>
  requires(sizeof...(Extents) >= 1 && detail::is_order_layout_v<Layout>)
[[nodiscard]] auto shaped(A&& array, Layout layout, Extents... extents) {
  static_assert(detail::is_smart_array_v<A> || detail::is_slice_v<A> || detail::is_out_v<A>,
                "shaped(a, layout, extents...) takes a SmartArray, a Slice or out(...)");
  static_assert(!detail::is_smart_array_v<A> || std::is_lvalue_reference_v<A>,
                "shaped(a, layout, extents...) needs an array that outlives the launch, not a "
                "temporary");
  (void)layout;
  // Arrays are held by reference; slices and out(...), which are handles, by value.
  using Argument = std::conditional_t<detail::is_smart_array_v<A>, A, std::remove_cvref_t<A>>;
  detail::check_reshape("shaped", array.size(), extents...);
  return Shaped<Argument, Layout, sizeof...(Extents)>(
      std::forward<A>(array),
      cuda::std::dextents<std::size_t, sizeof...(Extents)>(static_cast<std::size_t>(extents)...));
}

/**
 * @brief A launch's grid size that also records the caller's source location, so that the
 *        migration trace names the line of the `launch` call.
 */
class GridDim {
 public:
  /**
   * @brief Converts anything that `dim3` takes (an integer, a `dim3`).
   * @param grid the number of blocks.
   * @param where the caller's source location (defaulted).
   */
  template <typename G>
    requires std::convertible_to<G, dim3>
  GridDim(G grid, smartarray::source_location where = smartarray::source_location::current())  // NOLINT
      : dim_(grid), where_(where) {}
  /// @brief The grid size.
  [[nodiscard]] dim3 dim() const noexcept { return dim_; }
  /// @brief Where the launch was called.
  [[nodiscard]] const smartarray::source_location& where() const noexcept { return where_; }

 private:
  dim3 dim_;
  smartarray::source_location where_;
};

/**
 * @brief The stream argument of `bind_kernel_args`, which also records the caller's source
 *        location (a variadic function cannot end with a defaulted one).
 */
class StreamAt {
 public:
  /// @brief The default stream (`{}`).
  /// @param where the caller's source location (defaulted).
  StreamAt(smartarray::source_location where = smartarray::source_location::current())  // NOLINT
      : where_(where) {}
  /**
   * @brief Converts anything that `StreamRef` takes (a `StreamRef`, a `Stream`, a `cudaStream_t`).
   * @param stream the stream.
   * @param where the caller's source location (defaulted).
   */
  template <typename S>
    requires std::convertible_to<const S&, StreamRef>
  StreamAt(const S& stream,  // NOLINT
           smartarray::source_location where = smartarray::source_location::current())
      : stream_(stream), where_(where) {}
  /// @brief The stream.
  [[nodiscard]] StreamRef stream() const noexcept { return stream_; }
  /// @brief Where bind_kernel_args was called.
  [[nodiscard]] const smartarray::source_location& where() const noexcept { return where_; }

 private:
  StreamRef stream_{};
  smartarray::source_location where_;
};

namespace detail {

template <typename A>
struct IsShaped : std::false_type {};
template <typename A, typename L, std::size_t R>
struct IsShaped<Shaped<A, L, R>> : std::true_type {};
template <typename A>
inline constexpr bool is_shaped_v = IsShaped<std::remove_cvref_t<A>>::value;

/// True for the arguments that `launch` binds through an acquire: arrays, slices, `out(...)`,
/// `shaped(...)`.
template <typename A>
inline constexpr bool is_array_argument_v =
    is_smart_array_v<A> || is_slice_v<A> || is_out_v<A> || is_shaped_v<A>;

/// What an array argument is, once `shaped()` is looked through. `source` gives what is acquired:
/// the array, the slice or the `Out`, each of which has the device_view overloads of an array.
template <typename A>
struct ArrayArgument {
  using inner = std::remove_reference_t<A>;
  using array_type = std::remove_cvref_t<A>;
  static constexpr bool is_out = false;
  static constexpr bool is_const = std::is_const_v<inner>;
  static constexpr bool is_shaped = false;
  static decltype(auto) source(A& argument) { return (argument); }
};
template <typename T>
struct ArrayArgument<Slice<T>> {
  using array_type = SmartArray<std::remove_const_t<T>>;
  static constexpr bool is_out = false;
  static constexpr bool is_const = std::is_const_v<T>;
  static constexpr bool is_shaped = false;
  static Slice<T> source(const Slice<T>& argument) { return argument; }
};
template <typename T>
struct ArrayArgument<Out<T>> {
  using array_type = SmartArray<T>;
  static constexpr bool is_out = true;
  static constexpr bool is_const = false;
  static constexpr bool is_shaped = false;
  static Out<T> source(const Out<T>& argument) { return argument; }
};
template <typename A, typename L, std::size_t R>
struct ArrayArgument<Shaped<A, L, R>> : ArrayArgument<A> {
  using layout = L;
  static constexpr std::size_t rank = R;
  static constexpr bool is_shaped = true;
  static decltype(auto) source(const Shaped<A, L, R>& argument) {
    return ArrayArgument<A>::source(argument.argument());
  }
};
template <typename A>
using ArrayArgumentOf = ArrayArgument<std::conditional_t<is_smart_array_v<A>, A,
                                                         std::remove_cvref_t<A>>>;

/// What a kernel parameter type can bind an array to. `element` carries the constness that
/// decides the access.
template <typename P>
struct KernelParam {
  static constexpr bool is_view = false;
  static constexpr bool is_shaped = false;
  using element = void;
};
template <typename E>
struct KernelParam<DeviceView<E>> {
  static constexpr bool is_view = true;
  static constexpr bool is_shaped = false;
  using element = E;
  static DeviceView<E> from(DeviceView<E> view) noexcept { return view; }
};
template <typename E>
struct KernelParam<E*> {
  static constexpr bool is_view = !std::is_void_v<E>;
  static constexpr bool is_shaped = false;
  using element = E;
  static E* from(DeviceView<E> view) { return view.data(); }
};
template <typename E>
struct KernelParam<cuda::std::span<E>> {
  static constexpr bool is_view = true;
  static constexpr bool is_shaped = false;
  using element = E;
  static cuda::std::span<E> from(DeviceView<E> view) { return view.span(); }
};
template <typename E, typename X, typename L>
struct KernelParam<cuda::std::mdspan<E, X, L, cuda::std::default_accessor<E>>> {
  static constexpr bool is_view = true;
  static constexpr bool is_shaped = true;
  using element = E;
  using layout = L;
  static constexpr std::size_t rank = X::rank();
};

/// The access that binding argument `A` to parameter `P` needs.
template <typename P, typename A>
constexpr Access binding_access() {
  if constexpr (std::is_const_v<typename KernelParam<P>::element>) {
    return Access::read;
  } else if constexpr (ArrayArgumentOf<A>::is_out) {
    return Access::discard;
  } else {
    return Access::read_write;
  }
}

/// Checks an array binding at compile time; true when the binding is well formed.
template <typename P, typename A>
constexpr bool check_array_binding() {
  using Param = KernelParam<P>;
  using Arg = ArrayArgumentOf<A>;
  static_assert(Param::is_view,
                "launch: a SmartArray argument binds to a kernel parameter of type DeviceView<T>, "
                "DeviceView<const T>, T*, const T* or cuda::std::span<T> (or, through "
                "shaped(...), ShapedView<T, Rank, Layout>), and so do a Slice and out(...); this "
                "parameter is none of those");
  if constexpr (Param::is_view) {
    using E = typename Param::element;
    using T = typename Arg::array_type::value_type;
    constexpr bool same_type = std::is_same_v<std::remove_const_t<E>, T>;
    static_assert(same_type,
                  "launch: the SmartArray's element type differs from the element type of the "
                  "kernel parameter it binds to (for a Slice or out(...), its array's element "
                  "type)");
    constexpr bool writable_ok = std::is_const_v<E> || !Arg::is_const;
    static_assert(writable_ok,
                  "launch: a const SmartArray cannot bind to a writing kernel parameter "
                  "(DeviceView<T> or T*), nor can a Slice<const T>: make the parameter "
                  "DeviceView<const T> or const T*, or pass a non-const array or a Slice<T>");
    constexpr bool out_ok = !(Arg::is_out && std::is_const_v<E>);
    static_assert(out_ok,
                  "launch: out(a) binds only to a writable kernel parameter (DeviceView<T> or T*), "
                  "as does out(s) of a slice: out() says that the kernel overwrites the array or "
                  "the slice, but this parameter is read-only");
    constexpr bool shape_ok = Arg::is_shaped == Param::is_shaped;
    static_assert(shape_ok || !Arg::is_shaped,
                  "launch: a shaped(a, layout, extents...) argument binds to a ShapedView "
                  "(cuda::std::mdspan) kernel parameter");
    static_assert(shape_ok || Arg::is_shaped,
                  "launch: a ShapedView (cuda::std::mdspan) kernel parameter needs its array or "
                  "slice wrapped in shaped(a, layout, extents...)");
    if constexpr (same_type && writable_ok && out_ok && shape_ok) {
      if constexpr (Arg::is_shaped) {
        constexpr bool layout_ok = std::is_same_v<typename Arg::layout, typename Param::layout>;
        static_assert(layout_ok,
                      "launch: the layout given to shaped(...) differs from the ShapedView "
                      "parameter's layout (c_order is CLayout, f_order is FLayout)");
        constexpr bool rank_ok = Arg::rank == Param::rank;
        static_assert(rank_ok,
                      "launch: the number of extents given to shaped(...) differs from the "
                      "ShapedView parameter's rank");
        return layout_ok && rank_ok;
      } else {
        return true;
      }
    }
  }
  return false;
}

/// Acquires the array or slice of argument `A` for parameter `P` and returns the parameter's
/// value.
template <typename P, typename A>
P acquire_parameter(std::remove_reference_t<A>& argument, StreamRef stream,
                    const smartarray::source_location& where) {
  using Arg = ArrayArgumentOf<A>;
  using E = typename KernelParam<P>::element;
  constexpr Access access = binding_access<P, A>();
  decltype(auto) source = Arg::source(argument);
  DeviceView<E> view;
  if constexpr (access == Access::read) {
    view = std::as_const(source).device_view(stream, where);
  } else {
    view = source.device_view(access, stream, where);
  }
  if constexpr (KernelParam<P>::is_shaped) {
    return P(view.data(), typename P::extents_type(argument.extents()));
  } else {
    return KernelParam<P>::from(view);
  }
}

/// First pass: binds every argument except those under `out()`, which get a placeholder.
template <typename P, typename A>
P bind_argument(A&& argument, StreamRef stream, const smartarray::source_location& where) {
  if constexpr (!is_array_argument_v<A>) {
    static_assert(std::is_convertible_v<A&&, P>,
                  "launch: an argument does not convert to the type of its kernel parameter");
    return std::forward<A>(argument);
  } else if constexpr (!check_array_binding<P, A>()) {
    return P{};
  } else if constexpr (binding_access<P, A>() == Access::discard) {
    return P{};
  } else {
    return acquire_parameter<P, A>(argument, stream, where);
  }
}

/// Second pass: binds the arguments under `out()`, after every read of the first pass.
template <typename P, typename A>
void bind_discarded(P& parameter, std::remove_reference_t<A>& argument, StreamRef stream,
                    const smartarray::source_location& where) {
  if constexpr (is_array_argument_v<A>) {
    if constexpr (check_array_binding<P, A>() && binding_access<P, A>() == Access::discard) {
      parameter = acquire_parameter<P, A>(argument, stream, where);
    }
  }
}

/// check_in_range() of an argument, looking through shaped(...).
template <typename A>
void check_argument_range(const A& argument) {
  if constexpr (is_shaped_v<A>) {
    check_in_range(argument.argument());
  } else {
    check_in_range(argument);
  }
}

/// The device-buffer bytes of a launch argument (chunked_access.hpp), looking through
/// shaped(...).
template <typename A>
std::size_t launch_bytes_of(const A& argument) {
  if constexpr (is_shaped_v<A>) {
    return device_bytes_of(chunk_operand(argument.argument()));
  } else {
    return device_bytes_of(chunk_operand(argument));
  }
}
/// array_bytes_of() of a launch argument, looking through shaped(...).
template <typename A>
std::size_t launch_array_bytes_of(const A& argument) noexcept {
  if constexpr (is_shaped_v<A>) {
    return array_bytes_of(chunk_operand(argument.argument()));
  } else {
    return array_bytes_of(chunk_operand(argument));
  }
}

/// Throws out_of_memory, naming the bytes and the budget, when the arrays of one launch need more
/// device memory than the device budget: a raw kernel needs them all on the device at once, and
/// evicting its own arguments to make room would thrash.
template <typename... Args>
void check_launch_budget(StreamRef stream, const Args&... args) {
  // Every launch asks: first the sizes alone, which rule out all launches that fit.
  const std::size_t budget = device_budget(stream_device(stream).ordinal);
  if ((launch_array_bytes_of(args) + ... + std::size_t{0}) <= budget) return;
  const std::size_t bytes = (launch_bytes_of(args) + ... + std::size_t{0});
  if (bytes <= budget) return;
  throw out_of_memory(concat(
      "launch of a kernel over arrays of ", bytes, " bytes: more than the device budget of ",
      budget, " bytes (set_device_budget, SMARTARRAY_DEVICE_BUDGET). A raw kernel needs all its "
      "arrays on the device at once; transform and map run arrays that do not fit in chunks"));
}

template <typename... Params>
struct TypeList {};

template <typename... Params, std::size_t... I, typename... Args>
std::tuple<Params...> bind_kernel_args(TypeList<Params...>, std::index_sequence<I...>,
                                       StreamRef stream, const smartarray::source_location& where,
                                       Args&&... args) {
  (check_argument_range(args), ...);
  check_launch_budget(stream, args...);
  std::tuple<Params...> parameters{
      bind_argument<Params>(std::forward<Args>(args), stream, where)...};
  (bind_discarded<Params, Args>(std::get<I>(parameters), args, stream, where), ...);
  return parameters;
}

/// Throws unless the cuda backend is active: a `__global__` kernel cannot run on the host backend.
inline void require_cuda_backend(dim3 grid, dim3 block, StreamRef stream) {
  SMARTARRAY_EXPECTS(backend() == BackendKind::cuda, logic_error,
                     "launch of a __global__ kernel (grid ", grid.x, "x", grid.y, "x", grid.z,
                     ", block ", block.x, "x", block.y, "x", block.z, ") on stream ",
                     stream.handle(),
                     ": a raw kernel needs the cuda backend, and the active backend is host; "
                     "use for_each_index or transform for code that must run on both backends");
}

/// Throws `cuda_error` for a failed launch, after clearing the thread's sticky last error.
inline void check_launch(cudaError_t status, dim3 grid, dim3 block, std::size_t shared_bytes,
                         StreamRef stream) {
  if (status == cudaSuccess) [[likely]] return;
  (void)cudaGetLastError();  // the launch also set the thread's last error; the throw carries it
  throw_cuda_error(status, "cudaLaunchKernel",
                   concat("launch of a kernel with grid ", grid.x, "x", grid.y, "x", grid.z,
                          ", block ", block.x, "x", block.y, "x", block.z, ", ", shared_bytes,
                          " bytes of shared memory on stream ", stream.handle()),
                   __FILE__, __LINE__);
}

template <typename... Params>
void launch_kernel(const void* kernel, dim3 grid, dim3 block, std::size_t shared_bytes,
                   StreamRef stream, std::tuple<Params...>& parameters) {
  // cudaLaunchKernel copies the parameters when it returns, so pointers into the tuple suffice.
  std::array<void*, sizeof...(Params)> pointers = std::apply(
      [](auto&... parameter) {
        return std::array<void*, sizeof...(Params)>{
            static_cast<void*>(std::addressof(parameter))...};
      },
      parameters);
  const DeviceGuard on_device(stream_device(stream));
  // A device's named default stream is its legacy default stream, now that the device is current
  // (StreamRef::cuda_stream(), which a file compiled without nvcc may not have: it depends on
  // cuda_runtime_api.h coming before stream.hpp).
  const cudaStream_t on = stream.default_of_device() >= 0
                              ? cudaStreamLegacy
                              : static_cast<cudaStream_t>(stream.handle());
  check_launch(cudaLaunchKernel(kernel, grid, block, pointers.data(), shared_bytes, on), grid,
               block, shared_bytes, stream);
}

}  // namespace detail

/**
 * @brief Acquires every array argument as the kernel's parameter types ask (see the file comment)
 *        and returns the kernel's arguments, ready for `<<<>>>` or `cudaLaunchKernel`.
 *
 * `launch` is this plus the launch. It also runs on the host backend, where it only acquires.
 *
 * @param kernel the kernel whose parameter types decide each access.
 * @param stream the stream the kernel will run on; the arrays are acquired on it. It also records
 *        the caller's source location, for the migration trace.
 * @param args one argument per kernel parameter.
 * @return the parameter values, in order.
 * @throws std::out_of_range when a slice argument no longer lies inside its array (the array
 *         shrank); nothing is acquired.
 * @throws out_of_memory or cuda_error when an acquire fails.
 */
template <typename... Params, typename... Args>
  requires(sizeof...(Params) == sizeof...(Args))
[[nodiscard]] std::tuple<Params...> bind_kernel_args(void (*kernel)(Params...), StreamAt stream,
                                                     Args&&... args) {
  (void)kernel;
  const detail::NvtxRange nvtx("bind_kernel_args", stream.where());
  return detail::bind_kernel_args(detail::TypeList<Params...>{},
                                  std::index_sequence_for<Params...>{}, stream.stream(),
                                  stream.where(), std::forward<Args>(args)...);
}

/**
 * @brief Launches `kernel` on `stream` with `shared_bytes` of dynamic shared memory, acquiring each
 *        array argument as the kernel's parameter types ask (see the file comment).
 * @param kernel a `__global__` function.
 * @param grid the number of blocks (an integer or a `dim3`).
 * @param block the number of threads per block.
 * @param shared_bytes dynamic shared memory per block.
 * @param stream the stream to run on.
 * @param args one argument per kernel parameter.
 * @throws logic_error on the host backend, where a raw kernel cannot run (nothing is acquired).
 * @throws std::out_of_range when a slice argument no longer lies inside its array (the array
 *         shrank); nothing is acquired.
 * @throws cuda_error when the launch fails; out_of_memory or cuda_error when an acquire fails.
 */
template <typename... Params, typename... Args>
  requires(sizeof...(Params) == sizeof...(Args))
void launch(void (*kernel)(Params...), GridDim grid, dim3 block, std::size_t shared_bytes,
            StreamRef stream, Args&&... args) {
  const detail::NvtxRange nvtx("launch", grid.where());
  detail::require_cuda_backend(grid.dim(), block, stream);
  auto parameters =
      detail::bind_kernel_args(detail::TypeList<Params...>{}, std::index_sequence_for<Params...>{},
                               stream, grid.where(), std::forward<Args>(args)...);
  detail::launch_kernel(reinterpret_cast<const void*>(kernel), grid.dim(), block, shared_bytes,
                        stream, parameters);
}

/**
 * @brief Launches `kernel` on `stream` without dynamic shared memory; see the overload above.
 * @param kernel a `__global__` function.
 * @param grid the number of blocks (an integer or a `dim3`).
 * @param block the number of threads per block.
 * @param stream the stream to run on.
 * @param args one argument per kernel parameter.
 * @throws logic_error on the host backend, where a raw kernel cannot run (nothing is acquired).
 * @throws std::out_of_range when a slice argument no longer lies inside its array (the array
 *         shrank); nothing is acquired.
 * @throws cuda_error when the launch fails; out_of_memory or cuda_error when an acquire fails.
 */
template <typename... Params, typename... Args>
  requires(sizeof...(Params) == sizeof...(Args))
void launch(void (*kernel)(Params...), GridDim grid, dim3 block, StreamRef stream,
            Args&&... args) {
  const detail::NvtxRange nvtx("launch", grid.where());
  detail::require_cuda_backend(grid.dim(), block, stream);
  auto parameters =
      detail::bind_kernel_args(detail::TypeList<Params...>{}, std::index_sequence_for<Params...>{},
                               stream, grid.where(), std::forward<Args>(args)...);
  detail::launch_kernel(reinterpret_cast<const void*>(kernel), grid.dim(), block, 0, stream,
                        parameters);
}

}  // namespace smartarray
