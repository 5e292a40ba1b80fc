// ember::Error and the one check macro every layer uses.
//
//   EMBER_CHECK(a.rank() == b.rank(), "matmul: ranks differ: ", a.shape(), " vs ", b.shape());
//
// The message should name the op, the offending argument and the shapes/dtypes involved.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <class... Args>
[[noreturn]] void throw_error(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  throw Error(os.str());
}
}  // namespace detail

}  // namespace ember

#define EMBER_CHECK(cond, ...)                                    \
  do {                                                            \
    if (!(cond)) [[unlikely]] ::ember::detail::throw_error(__VA_ARGS__); \
  } while (0)

#define EMBER_FAIL(...) ::ember::detail::throw_error(__VA_ARGS__)
