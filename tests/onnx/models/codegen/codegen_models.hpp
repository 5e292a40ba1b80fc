// One generated real model, as ember_onnx_codegen_models sees it (the models.cpp that
// run_codegen_models.sh writes registers them).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

struct CodegenModel {
  std::string name;  // the manifest's name, also the generated struct's
  // Loads the weights file and runs the generated forward() on the inputs (graph order).
  std::function<std::vector<ember::DynTensor>(const std::string& weights, const std::vector<ember::DynTensor>&)> run;
};

void register_codegen_models(std::vector<CodegenModel>& out);  // generated: models.cpp
