// The command-line reading the examples share: `--name value` options and flags, with errors
// that name the program and the option (an ember::Error, so main's handler prints it).
//
//   examples::ArgReader r("wgan", argc, argv);
//   while (r.next()) {
//     if (r.is("--epochs")) a.epochs = r.count();
//     else if (r.is("--lr")) a.lr = r.number();
//     else if (r.is("--out")) a.out = r.value();
//     else r.unknown("--epochs, --lr, --out");
//   }
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "ember/core/error.hpp"

namespace examples {

class ArgReader {
 public:
  ArgReader(std::string program, int argc, char** argv) : program_(std::move(program)), argc_(argc), argv_(argv) {}

  // Moves to the next argument; false after the last.
  bool next() {
    if (++i_ >= argc_) return false;
    key_ = argv_[i_];
    return true;
  }
  bool is(const char* name) const { return key_ == name; }
  const std::string& key() const { return key_; }

  // The argument after the option.
  std::string value() {
    EMBER_CHECK(i_ + 1 < argc_, program_, ": ", key_, " needs a value");
    return argv_[++i_];
  }
  // A positive number.
  double number() {
    const std::string v = value();
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    EMBER_CHECK(!v.empty() && *end == 0 && x > 0, program_, ": ", key_, " takes a positive number, not '", v, "'");
    return x;
  }
  // A positive number, truncated to an integer (a count of epochs, steps, images).
  int64_t count() { return int64_t(number()); }

  [[noreturn]] void unknown(const std::string& known) const {
    EMBER_FAIL(program_, ": unknown argument ", key_, " (use ", known, ")");
  }

 private:
  std::string program_;
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string key_;
};

}  // namespace examples
