// ONNX to C++ code generation (issue 7, `ember-onnx generate`).
//
//   onnx::generate(onnx::load_model("mlp.onnx"), "out", "mlp");
//   // writes out/mlp.hpp, out/mlp.cpp and out/mlp.safetensors (the initializers)
//
// The generated struct holds the initializers as DynTensor members and computes the graph in
// forward(), one statement per ONNX node, named after the ONNX values (sanitised identifiers)
// with a comment naming the node:
//
//   struct mlp {
//     ember::DynTensor fc1_weight;  // initializer 'fc1.weight' FLOAT [4, 3]
//     static mlp load(const std::string& weights, ember::Device device = ember::Device::default_device());
//     std::vector<ember::DynTensor> forward(const ember::DynTensor& x) const;
//     std::vector<ember::DynTensor> run(const std::vector<ember::DynTensor>& inputs) const;  // graph-input order
//   };
//
// Common elementwise ops and MatMul become direct ember tensor-op calls (ember::add,
// ember::matmul, ember::relu, ...); every other op is a call to onnx::run_node() with the
// node (type, attributes spelled out with the helpers below) built once as a constant.
// forward() expects its inputs on the device the struct was loaded onto.
// Not supported (an ember::Error "codegen: unsupported ..."): graph attributes (If, Loop,
// Scan), sparse tensor and type attributes, initializers of dtypes ember has no type for.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "ember/onnx/model.hpp"

namespace ember::onnx {

// Writes out_dir/name.hpp, out_dir/name.cpp and out_dir/name.safetensors (creating out_dir).
// `name` must be a C++ identifier; it names the struct and the files.
void generate(const ModelProto& model, const std::string& out_dir, const std::string& name);

// Builders used by the generated code to spell out a node.
namespace gen {
AttributeProto attr_int(std::string name, int64_t v);
AttributeProto attr_float(std::string name, float v);
AttributeProto attr_string(std::string name, std::string v);
AttributeProto attr_ints(std::string name, std::vector<int64_t> v);
AttributeProto attr_floats(std::string name, std::vector<float> v);
AttributeProto attr_strings(std::string name, std::vector<std::string> v);
AttributeProto attr_tensor(std::string name, TensorProto v);
// A tensor of an ONNX DataType and dims; `hex` is its raw little-endian bytes in hexadecimal.
TensorProto tensor(int32_t data_type, std::vector<int64_t> dims, std::string_view hex);
NodeProto node(std::string op_type, std::string name, std::string domain, std::vector<std::string> inputs,
               std::vector<std::string> outputs, std::vector<AttributeProto> attributes = {});
}  // namespace gen

}  // namespace ember::onnx
