# Debian packages (issue 29): `cpack -G DEB` in a build directory writes
#   libember-dev  the headers, static libraries, CMake package and pkg-config files (component dev)
#   ember-tools   the command-line tools: ember-onnx, and ember-run where Gloo was found (component tools)
# installed under /usr. Their version is the project's (include/ember/version.hpp). The dev
# package depends on what find_package(ember) and `pkg-config ember` need: the find_dependency
# calls of cmake/emberConfig.cmake.in and the Requires of ember.pc, named by their Debian 12
# packages below; the tools' dependencies come from dpkg-shlibdeps. tests/consumers/deb.sh builds
# the packages, checks them and builds the consumers against them.
set(CPACK_PACKAGE_NAME ember)
set(CPACK_PACKAGE_VENDOR ember)
set(CPACK_PACKAGE_CONTACT "ember developers <ember@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "C++20 tensor library and deep-learning framework")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # NAME_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.invalid/ember")

# One line per find_dependency of emberConfig.cmake.in (static libraries: their link interfaces
# name these libraries); a C++20 standard library for the headers.
set(_ember_dev_depends "libstdc++-12-dev | libstdc++-dev" "nlohmann-json3-dev")
if(EMBER_HAS_APPS)
  list(APPEND _ember_dev_depends
       "zlib1g-dev"           # find_dependency(ZLIB), ember.pc: zlib
       "libpng-dev"           # PNG, libpng
       "libjpeg-dev"          # JPEG, libjpeg
       "libsqlite3-dev"       # SQLite3, sqlite3
       "libncurses-dev"       # pkg_check_modules(ncursesw), ncursesw
       "pkgconf | pkg-config")  # find_dependency(PkgConfig)
endif()
# ember::distributed (find_package(ember COMPONENTS distributed)) links Gloo; the rest does not
if(EMBER_HAS_DISTRIBUTED)
  set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "libgloo-dev")
endif()
if(EMBER_SHARED)
  message(WARNING "ember: the .deb packages hold static libraries; configure with EMBER_SHARED=OFF to package")
endif()
string(JOIN ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ${_ember_dev_depends})
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libember-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "C++20 tensor library and deep-learning framework (development files)\n"
    "Headers, static libraries, the CMake package (find_package(ember)) and pkg-config files of ember.")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ember-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION science)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
set(_ember_tools_text "ember-onnx: describes, runs and compiles to C++ ONNX models with ember.")
if(EMBER_HAS_DISTRIBUTED)
  string(APPEND _ember_tools_text " ember-run: starts the processes of a data-parallel job.")
endif()
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "C++20 tensor library and deep-learning framework (tools)\n${_ember_tools_text}")
include(CPack)
