# The wasm build (CMake preset `wasm`, Debian's emscripten 3.1.6; docs/web.md). Included by the
# top-level CMakeLists.txt when the toolchain is Emscripten's.
#
# - C++ exceptions on (emscripten turns them off by default): ember::Error reaches the JavaScript
#   API as a message. -fexceptions is emscripten's JavaScript-based unwinding, which every browser
#   runs.
# - WASM SIMD128 (-msimd128): the CPU backend's wasm kernels; every current browser has it.
# - EMBER_WASM_THREADS=ON: the multi-threaded variant (pthreads over SharedArrayBuffer, so the
#   page must be cross-origin isolated: web/serve.sh sends the COOP/COEP headers).
# - nlohmann_json: the header-only library from the host's /usr/include, seen through a folder
#   holding only it, so that emscripten's own libc headers are not shadowed by the host's.
option(EMBER_WASM_THREADS "wasm: the multi-threaded (pthreads) variant" OFF)
add_compile_options(-fexceptions -msimd128)
add_link_options(-fexceptions)
if(EMBER_WASM_THREADS)
  add_compile_options(-pthread)
  add_link_options(-pthread)
endif()

if(NOT TARGET nlohmann_json::nlohmann_json)
  set(_ember_json_dir ${CMAKE_BINARY_DIR}/host-headers)
  if(NOT EXISTS ${_ember_json_dir}/nlohmann/json.hpp)
    file(MAKE_DIRECTORY ${_ember_json_dir})
    file(CREATE_LINK /usr/include/nlohmann ${_ember_json_dir}/nlohmann SYMBOLIC)
  endif()
  if(NOT EXISTS ${_ember_json_dir}/nlohmann/json.hpp)
    message(FATAL_ERROR "wasm build: /usr/include/nlohmann/json.hpp not found (apt-get install nlohmann-json3-dev)")
  endif()
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED GLOBAL)
  set_target_properties(nlohmann_json::nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${_ember_json_dir})
  set(nlohmann_json_FOUND TRUE)
endif()
