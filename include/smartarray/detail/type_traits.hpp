/**
 * @file detail/type_traits.hpp
 * @brief Private: the trait that the layers' "is this a X<T>?" questions share.
 */
#pragma once

#include <type_traits>

namespace smartarray::detail {

template <typename A, template <typename> class Template>
struct IsSpecialization : std::false_type {};
template <typename T, template <typename> class Template>
struct IsSpecialization<Template<T>, Template> : std::true_type {};
/// True when `A`, with any cv-ref qualification, is `Template<T>` for some `T`.
template <typename A, template <typename> class Template>
inline constexpr bool is_specialization_v =
    IsSpecialization<std::remove_cvref_t<A>, Template>::value;

}  // namespace smartarray::detail
