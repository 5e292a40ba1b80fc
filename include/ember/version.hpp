// ember's version: the one place it is written. CMakeLists.txt reads the three numbers below into
// project(ember VERSION ...), from which ember.pc, the CMake package's version file and the .deb
// packages take it; ember::version() returns the version compiled into the linked library.
//
//   #include <ember/version.hpp>
//   static_assert(EMBER_VERSION_MAJOR >= 0);
//   std::string v = ember::version();  // "0.1.0"
//   # run
#pragma once

#define EMBER_VERSION_MAJOR 0
#define EMBER_VERSION_MINOR 1
#define EMBER_VERSION_PATCH 0

#define EMBER_VERSION_STRINGIFY_(x) #x
#define EMBER_VERSION_STRINGIFY(x) EMBER_VERSION_STRINGIFY_(x)
// "MAJOR.MINOR.PATCH"
#define EMBER_VERSION_STRING                   \
  EMBER_VERSION_STRINGIFY(EMBER_VERSION_MAJOR) \
  "." EMBER_VERSION_STRINGIFY(EMBER_VERSION_MINOR) "." EMBER_VERSION_STRINGIFY(EMBER_VERSION_PATCH)

namespace ember {

// The version of the library linked in, which differs from EMBER_VERSION_STRING (the headers
// compiled against) only when a program mixes headers and libraries of different versions.
const char* version();

}  // namespace ember
