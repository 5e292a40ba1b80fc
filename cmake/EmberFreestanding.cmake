# -DEMBER_FREESTANDING=ON (docs/embedded.md): the freestanding profile, for a target without an
# operating system. It builds what of ember runs there: the kernels of src/backends/cpu/kernels/
# (the CPU backend's own source files, include/ember/kernels/) as the static library
# ember_kernels, with EMBER_FREESTANDING=1, no exceptions, no RTTI, no thread-safe statics. The
# tensor layer, nn and the runtime allocate and throw, so they are not part of it: a model reaches
# a microcontroller as `ember-onnx generate --target cortex-m` code over these kernels.
#
#   cmake -S . -B build-cortex-m -G Ninja -DEMBER_FREESTANDING=ON \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/arm-none-eabi-cortex-m4.cmake
#   cmake --build build-cortex-m      # build-cortex-m/libember_kernels.a
file(GLOB EMBER_KERNEL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/backends/cpu/kernels/*.cpp)
add_library(ember_kernels STATIC ${EMBER_KERNEL_SOURCES})
target_include_directories(ember_kernels PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                                $<INSTALL_INTERFACE:include>)
target_compile_definitions(ember_kernels PUBLIC EMBER_FREESTANDING=1)
# -ffp-contract=off: no fused multiply-adds, so results round as on the host (the qemu tests
# compare the two to the bit).
target_compile_options(ember_kernels PUBLIC $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti -fno-threadsafe-statics>
                                            -ffreestanding -ffp-contract=off
                       PRIVATE -ffunction-sections -fdata-sections)
target_link_libraries(ember_kernels PRIVATE ember_warnings)
add_library(ember::kernels ALIAS ember_kernels)
install(TARGETS ember_kernels ARCHIVE DESTINATION lib)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ember/kernels DESTINATION include/ember)
# Of core, the header-only pieces that need no heap or exceptions: the profile, bit_cast, f16/bf16.
install(FILES ${PROJECT_SOURCE_DIR}/include/ember/core/config.hpp ${PROJECT_SOURCE_DIR}/include/ember/core/bit.hpp
              ${PROJECT_SOURCE_DIR}/include/ember/core/half.hpp DESTINATION include/ember/core)
