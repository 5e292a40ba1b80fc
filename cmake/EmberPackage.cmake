# Installing ember for other projects (included by src/CMakeLists.txt): the libraries and
# headers, a relocatable CMake package (find_package(ember [COMPONENTS cuda vulkan])) and pkg-config
# files (ember.pc, ember-cuda.pc, ember-vulkan.pc), all in the install component `dev` (the libember-dev package of
# cmake/EmberDeb.cmake). README "Use ember in your project"; tests/consumers checks it.
include(CMakePackageConfigHelpers)

set(EMBER_LIBRARY_TARGETS ${EMBER_APP_TARGETS} ember_onnx ember_amp ember_optim ember_nn ember_quant ember_store ember_tensor
                          ember_autodiff ember_fusion ember_router ember_cpu ember_core)
if(EMBER_SHARED)
  set_target_properties(${EMBER_LIBRARY_TARGETS} PROPERTIES
                        VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  if(EMBER_HAS_CUDA)
    set_target_properties(ember_cuda PROPERTIES VERSION ${PROJECT_VERSION}
                                                SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  endif()
  if(EMBER_HAS_VULKAN)
    set_target_properties(ember_vulkan PROPERTIES VERSION ${PROJECT_VERSION}
                                                  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  endif()
endif()
# Export names without the ember_ prefix: ember_core is installed as ember::core.
foreach(t ember ${EMBER_LIBRARY_TARGETS})
  string(REGEX REPLACE "^ember_" "" export_name "${t}")
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${export_name})
endforeach()

set(_ember_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
install(TARGETS ember ${EMBER_LIBRARY_TARGETS} EXPORT emberTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dev)
install(EXPORT emberTargets NAMESPACE ember:: DESTINATION ${_ember_cmake_dir} COMPONENT dev)
if(EMBER_HAS_CUDA)
  # its own export set: loading the CPU targets never needs the CUDA toolkit
  set_target_properties(ember_cuda PROPERTIES EXPORT_NAME cuda)
  install(TARGETS ember_cuda EXPORT emberCudaTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dev)
  install(EXPORT emberCudaTargets NAMESPACE ember:: DESTINATION ${_ember_cmake_dir} COMPONENT dev)
endif()
if(EMBER_HAS_VULKAN)
  # its own export set: loading the CPU targets never needs the Vulkan loader
  set_target_properties(ember_vulkan PROPERTIES EXPORT_NAME vulkan)
  install(TARGETS ember_vulkan EXPORT emberVulkanTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dev)
  install(EXPORT emberVulkanTargets NAMESPACE ember:: DESTINATION ${_ember_cmake_dir} COMPONENT dev)
endif()
if(EMBER_HAS_DISTRIBUTED)
  # its own export set too: loading the other targets never needs Gloo
  set_target_properties(ember_distributed PROPERTIES EXPORT_NAME distributed)
  if(EMBER_SHARED)
    set_target_properties(ember_distributed PROPERTIES VERSION ${PROJECT_VERSION}
                                                       SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  endif()
  install(TARGETS ember_distributed EXPORT emberDistributedTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dev)
  install(EXPORT emberDistributedTargets NAMESPACE ember:: DESTINATION ${_ember_cmake_dir} COMPONENT dev)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ember DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/emberConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/emberConfig.cmake INSTALL_DESTINATION ${_ember_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/emberConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/emberConfig.cmake ${PROJECT_BINARY_DIR}/emberConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/EmberFindCuDNN.cmake DESTINATION ${_ember_cmake_dir} COMPONENT dev)

# pkg-config. A static library's dependencies go into Libs (plain `pkg-config --libs` must link),
# a shared library's into Libs.private.
set(_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
set(EMBER_PC_PREFIX_FROM_PCDIR "")
string(REPLACE "/" ";" _pc_parts "${_pc_dir}")
foreach(part ${_pc_parts})
  string(APPEND EMBER_PC_PREFIX_FROM_PCDIR "../")
endforeach()
string(REGEX REPLACE "/$" "" EMBER_PC_PREFIX_FROM_PCDIR "${EMBER_PC_PREFIX_FROM_PCDIR}")
set(_pc_libs "")
foreach(t ${EMBER_LIBRARY_TARGETS})
  string(APPEND _pc_libs " -l${t}")
endforeach()
set(_pc_modules "")
if(EMBER_HAS_APPS)
  set(_pc_modules "ncursesw zlib libpng libjpeg sqlite3")
endif()
if(CMAKE_DL_LIBS)
  set(_pc_deps "-pthread -l${CMAKE_DL_LIBS}")
else()
  set(_pc_deps "-pthread")
endif()
string(STRIP "${_pc_libs}" EMBER_PC_LIBS)
if(EMBER_SHARED)
  set(EMBER_PC_REQUIRES "")
  set(EMBER_PC_REQUIRES_PRIVATE "${_pc_modules}")
  set(EMBER_PC_LIBS_PRIVATE "${_pc_deps}")
else()
  set(EMBER_PC_REQUIRES "${_pc_modules}")
  set(EMBER_PC_REQUIRES_PRIVATE "")
  string(APPEND EMBER_PC_LIBS " ${_pc_deps}")
  set(EMBER_PC_LIBS_PRIVATE "")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/ember.pc.in ${PROJECT_BINARY_DIR}/ember.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ember.pc DESTINATION ${_pc_dir} COMPONENT dev)
if(EMBER_HAS_CUDA)
  set(EMBER_PC_CUDA_LIBDIR "${CUDAToolkit_LIBRARY_DIR}")
  get_filename_component(EMBER_PC_CUDNN_LIBDIR "${EMBER_CUDNN_LIBRARY}" DIRECTORY)
  set(_pc_cuda_deps "-L\${cudalibdir} -lcudart -lnvrtc -lcublasLt -L\${cudnnlibdir} -lcudnn")
  if(EMBER_SHARED)
    # (kept as needed under --as-needed: src/CMakeLists.txt)
    set(EMBER_PC_CUDA_LIB "-Wl,--push-state,--no-as-needed -lember_cuda -Wl,--pop-state")
    set(EMBER_PC_CUDA_LIBS "")
    set(EMBER_PC_CUDA_LIBS_PRIVATE "${_pc_cuda_deps}")
  else()
    set(EMBER_PC_CUDA_LIB "-lember_cuda")
    set(EMBER_PC_CUDA_LIBS "${_pc_cuda_deps}")
    set(EMBER_PC_CUDA_LIBS_PRIVATE "")
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/ember-cuda.pc.in ${PROJECT_BINARY_DIR}/ember-cuda.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/ember-cuda.pc DESTINATION ${_pc_dir} COMPONENT dev)
endif()
if(EMBER_HAS_VULKAN)
  if(EMBER_SHARED)
    set(EMBER_PC_VULKAN_LIB "-Wl,--push-state,--no-as-needed -lember_vulkan -Wl,--pop-state")
    set(EMBER_PC_VULKAN_LIBS "")
    set(EMBER_PC_VULKAN_LIBS_PRIVATE "-lvulkan ${EMBER_SHADERC_LINK}")
  else()
    set(EMBER_PC_VULKAN_LIB "-lember_vulkan")
    set(EMBER_PC_VULKAN_LIBS "-lvulkan ${EMBER_SHADERC_LINK}")
    set(EMBER_PC_VULKAN_LIBS_PRIVATE "")
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/ember-vulkan.pc.in ${PROJECT_BINARY_DIR}/ember-vulkan.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/ember-vulkan.pc DESTINATION ${_pc_dir} COMPONENT dev)
endif()
