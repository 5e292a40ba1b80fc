# cuDNN beside the CUDA toolkit, as the imported target EmberCuDNN::cudnn. ember's build uses it
# (src/CMakeLists.txt) and so does an installed emberConfig.cmake for the cuda component: the
# library is found where the consumer's machine has it, not where ember was built. Needs
# find_package(CUDAToolkit) first; sets EMBER_CUDNN_LIBRARY and EMBER_CUDNN_INCLUDE (cache).
if(NOT TARGET EmberCuDNN::cudnn)
  find_library(EMBER_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(EMBER_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(EMBER_CUDNN_LIBRARY AND EMBER_CUDNN_INCLUDE)
    add_library(EmberCuDNN::cudnn UNKNOWN IMPORTED)
    set_target_properties(EmberCuDNN::cudnn PROPERTIES IMPORTED_LOCATION "${EMBER_CUDNN_LIBRARY}"
                                                       INTERFACE_INCLUDE_DIRECTORIES "${EMBER_CUDNN_INCLUDE}")
  endif()
endif()
