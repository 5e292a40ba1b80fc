// The parameter and result types of a callable (function, function pointer, lambda, std::function),
// for deduction guides that read a batch type off a lambda:
//
//   # struct Batch { std::vector<int> items; };
//   auto f = [](const std::vector<int>& items, const Device&) { return Batch{items}; };
//   using Item = std::remove_cvref_t<callable_arg_t<decltype(f), 0>>::value_type;   // int
//   using B = callable_result_t<decltype(f)>;                                       // Batch
//
// Generic lambdas (auto parameters) have no fixed parameter types: they need explicit template
// arguments at the use site.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>

namespace ember {

template <class F>
struct callable_traits : callable_traits<decltype(&std::remove_cvref_t<F>::operator())> {};

template <class R, class... A>
struct callable_traits<R(A...)> {
  using result = R;
  using args = std::tuple<A...>;
};
template <class R, class... A>
struct callable_traits<R (*)(A...)> : callable_traits<R(A...)> {};
template <class R, class... A>
struct callable_traits<R (*)(A...) noexcept> : callable_traits<R(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...)> : callable_traits<R(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...) const> : callable_traits<R(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...) noexcept> : callable_traits<R(A...)> {};
template <class C, class R, class... A>
struct callable_traits<R (C::*)(A...) const noexcept> : callable_traits<R(A...)> {};

template <class F>
using callable_result_t = typename callable_traits<F>::result;
template <class F, size_t I>
using callable_arg_t = std::tuple_element_t<I, typename callable_traits<F>::args>;

}  // namespace ember
