# What the codegen test projects (tests/onnx/codegen, tests/onnx/models/codegen) take from the
# main build at EMBER_BUILD_DIR: its compiler and build type, and its static libraries.

# Before project(): the main build's cache (as MAIN_*) and its compiler.
macro(ember_use_main_build_compiler)
  load_cache("${EMBER_BUILD_DIR}" READ_WITH_PREFIX MAIN_ CMAKE_CXX_COMPILER CMAKE_BUILD_TYPE EMBER_CUDNN_LIBRARY
             ember_SOURCE_DIR)
  if(NOT CMAKE_CXX_COMPILER)
    set(CMAKE_CXX_COMPILER "${MAIN_CMAKE_CXX_COMPILER}")
  endif()
endmacro()

# After project(): C++20, the main build's build type, ccache, threads.
macro(ember_use_main_build_settings)
  set(CMAKE_CXX_STANDARD 20)
  set(CMAKE_CXX_STANDARD_REQUIRED ON)
  set(CMAKE_CXX_EXTENSIONS OFF)
  if(NOT CMAKE_BUILD_TYPE)
    set(CMAKE_BUILD_TYPE "${MAIN_CMAKE_BUILD_TYPE}")
  endif()
  find_program(CCACHE_PROGRAM ccache)
  if(CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  endif()
  find_package(Threads REQUIRED)
endmacro()

# Links `target` against every ember library the main build made (and the CUDA libraries when
# it made the cuda backend), plus any further libraries given after the target.
function(ember_link_main_build target)
  set(libs "")
  foreach(lib onnx nn quant store tensor autodiff fusion cpu cuda core)
    if(EXISTS "${EMBER_BUILD_DIR}/src/libember_${lib}.a")
      list(APPEND libs "${EMBER_BUILD_DIR}/src/libember_${lib}.a")
    endif()
  endforeach()
  target_link_libraries(${target} PRIVATE -Wl,--start-group ${libs} -Wl,--end-group Threads::Threads ${ARGN}
                        ${CMAKE_DL_LIBS})
  if(EXISTS "${EMBER_BUILD_DIR}/src/libember_cuda.a")
    find_package(CUDAToolkit REQUIRED)
    # -u: keeps the CUDA backend's self-registration from the static library (docs/architecture.md)
    target_link_libraries(${target} PRIVATE CUDA::cudart CUDA::nvrtc CUDA::cublasLt ${MAIN_EMBER_CUDNN_LIBRARY})
    target_link_options(${target} PRIVATE "LINKER:-u,ember_cuda_backend_anchor")
  endif()
endfunction()
