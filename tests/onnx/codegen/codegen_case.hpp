// One generated node-test model, as the codegen conformance runner sees it (the generated
// group_*.cpp files register them).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

struct CodegenCase {
  std::string name;  // the node-test case (the directory under onnx-node/node)
  std::vector<std::string> input_names;
  // Loads the weights file and runs the generated forward() on the inputs (graph order).
  std::function<std::vector<ember::DynTensor>(const std::string& weights, const std::vector<ember::DynTensor>&)> run;
};

void register_codegen_cases(std::vector<CodegenCase>& out);  // generated: registry.cpp
