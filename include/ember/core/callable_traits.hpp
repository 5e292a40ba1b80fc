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

#ifndef EMBER_DOXYGEN
// The traits of a function object (a lambda, std::function): those of its operator().
template <class F>
struct callable_traits : callable_traits<decltype(&std::remove_cvref_t<F>::operator())> {};
#endif

// The traits of a function type; every other specialisation reduces to this one.
template <class R, class... A>
struct callable_traits<R(A...)> {
  using result = R;  // the return type
  using args = std::tuple<A...>;  // the parameter types, as declared (references and const kept)
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

// The return type of callable F.
template <class F>
using callable_result_t = typename callable_traits<F>::result;
// The type of callable F's parameter I (from 0), as declared.
template <class F, size_t I>
using callable_arg_t = std::tuple_element_t<I, typename callable_traits<F>::args>;

}  // namespace ember
