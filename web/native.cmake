# The native programs of the web layer (docs/web.md), in build/web/: included by the top-level
# CMakeLists.txt in a native build (web/CMakeLists.txt is the wasm module's).
#   digits_web_train           trains the digit recogniser's model (web/demos/digits)
#   ember_web_reference        runs a model through the wasm module's C functions, natively
#   ember_web_fashion_samples  writes Fashion-MNIST test images as JSON for the Fashion demo
find_package(ZLIB REQUIRED)  # examples/common/digits.hpp reads digits.csv.gz

add_executable(digits_web_train ${CMAKE_CURRENT_LIST_DIR}/demos/digits/train.cpp)
target_link_libraries(digits_web_train PRIVATE ember::data ember::optim ZLIB::ZLIB ember_warnings)

# The same api.cpp and architectures (models.cpp) as the wasm module, so that native and browser
# predictions come from one code path.
add_executable(ember_web_reference ${CMAKE_CURRENT_LIST_DIR}/tools/web_reference.cpp ${CMAKE_CURRENT_LIST_DIR}/models.cpp)
target_link_libraries(ember_web_reference PRIVATE ember_web ember_warnings)

add_executable(ember_web_fashion_samples ${CMAKE_CURRENT_LIST_DIR}/tools/fashion_samples.cpp)
target_link_libraries(ember_web_fashion_samples PRIVATE ember::data ember_warnings)

set_target_properties(digits_web_train ember_web_reference ember_web_fashion_samples
                      PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/web)
