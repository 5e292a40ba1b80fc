# ember_onnx_generate(TARGET MODEL.onnx [NAME name] [OUT_DIR dir])
#
# Turns an ONNX model into C++ at build time with `ember-onnx generate` (issue 7, codegen):
# writes OUT_DIR/NAME.hpp, NAME.cpp and NAME.safetensors (OUT_DIR defaults to
# ${CMAKE_CURRENT_BINARY_DIR}/onnx-gen/NAME; NAME to the model's file name as an identifier),
# adds NAME.cpp to TARGET, puts OUT_DIR on its include path and links it to ember. The code
# is regenerated when the model or the tool changes. The weights file path is available to
# the target as the compile definition <NAME>_WEIGHTS (upper-cased NAME).
#
#   ember_onnx_generate(my_app models/resnet18.onnx NAME resnet18)
#   // #include "resnet18.hpp"  ...  auto net = resnet18::load(RESNET18_WEIGHTS, ember::Device::cpu());
function(ember_onnx_generate target model)
  cmake_parse_arguments(ARG "" "NAME;OUT_DIR" "" ${ARGN})
  get_filename_component(model_abs "${model}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT ARG_NAME)
    get_filename_component(ARG_NAME "${model}" NAME_WE)
    string(MAKE_C_IDENTIFIER "${ARG_NAME}" ARG_NAME)
  endif()
  if(NOT ARG_OUT_DIR)
    set(ARG_OUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/onnx-gen/${ARG_NAME}")
  endif()
  set(outputs "${ARG_OUT_DIR}/${ARG_NAME}.hpp" "${ARG_OUT_DIR}/${ARG_NAME}.cpp" "${ARG_OUT_DIR}/${ARG_NAME}.safetensors")
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ember-onnx generate "${model_abs}" --out "${ARG_OUT_DIR}" --name "${ARG_NAME}"
    DEPENDS "${model_abs}" ember-onnx
    COMMENT "ember-onnx generate ${model} -> ${ARG_NAME}.hpp/.cpp/.safetensors"
    VERBATIM)
  target_sources(${target} PRIVATE "${ARG_OUT_DIR}/${ARG_NAME}.cpp" "${ARG_OUT_DIR}/${ARG_NAME}.hpp")
  target_include_directories(${target} PRIVATE "${ARG_OUT_DIR}")
  target_link_libraries(${target} PRIVATE ember::ember)
  string(TOUPPER "${ARG_NAME}" upper)
  target_compile_definitions(${target} PRIVATE ${upper}_WEIGHTS="${ARG_OUT_DIR}/${ARG_NAME}.safetensors")
endfunction()
