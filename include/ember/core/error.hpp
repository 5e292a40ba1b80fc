// ember::Error and the one check macro every layer uses.
//
//   # DynTensor a = DynTensor::zeros({2, 3}), b = DynTensor::zeros({3});
//   EMBER_CHECK(a.rank() == b.rank(), "matmul: ranks differ: ", a.shape(), " vs ", b.shape());
//
// The message should name the op, the offending argument and the shapes/dtypes involved.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

// The exception every ember failure throws (bad shapes or dtypes, unsupported ops, I/O errors);
// what() names the op, the argument and the shapes involved.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}  // an error with message `what`
};

// An op, dtype, attribute or mode that exists (in ember's IR, in the ONNX spec) but that this
// backend or importer does not implement. It is an Error, so callers that catch Error still do;
// callers that sort failures (the ONNX node tests, a router falling back to another backend)
// catch this type instead of matching words in a message.
class NotImplemented : public Error {
 public:
  explicit NotImplemented(const std::string& what) : Error(what) {}  // an error with message `what`
};

namespace detail {
template <class... Args>
[[noreturn]] void throw_error(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  throw Error(os.str());
}
template <class... Args>
[[noreturn]] void throw_not_implemented(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  throw NotImplemented(os.str());
}
}  // namespace detail

}  // namespace ember

#define EMBER_CHECK(cond, ...)                                    \
  do {                                                            \
    if (!(cond)) [[unlikely]] ::ember::detail::throw_error(__VA_ARGS__); \
  } while (0)

#define EMBER_FAIL(...) ::ember::detail::throw_error(__VA_ARGS__)
// Throws ember::NotImplemented: for what is valid but has no implementation here.
#define EMBER_NOT_IMPLEMENTED(...) ::ember::detail::throw_not_implemented(__VA_ARGS__)
