// ONNX to C++ code generation (issue 7, `ember-onnx generate`).
//
//   onnx::generate(onnx::load_model("resnet18.onnx"), "out", "resnet18");
//   // writes out/resnet18.hpp, out/resnet18.cpp and out/resnet18.safetensors (the weights)
//
// The generated struct computes the graph in forward(), one statement per ONNX node (a MatMul
// and the Add of its bias make one), named after the ONNX values (sanitised identifiers;
// PyTorch's scoped names "/layer1/layer1.0/conv1/Conv_output_0" read as "layer1_0_conv1_conv")
// with a comment naming the node:
//   struct resnet18 {
//     ember::nn::Conv2d conv1;             // node '/conv1/Conv' (Conv)
//     ember::nn::Linear fc;                // node '/fc/Gemm' (Gemm)
//     EMBER_MODULE(conv1, ..., fc)         // the layers form an nn module
//     static resnet18 load(const std::string& weights, ember::Device device = ember::Device::default_device());
//     std::vector<ember::DynTensor> forward(const ember::DynTensor& input) const;
//     std::vector<ember::DynTensor> run(const std::vector<ember::DynTensor>& inputs) const;  // graph-input order
//   };
//   // forward():  ember::DynTensor conv1_conv = conv1.forward(input);
//   //             ember::DynTensor relu = ember::relu(conv1_conv);
//   //             ember::DynTensor maxpool = ember::max_pool2d(relu, {.kernel_size = {3, 3}, ...});
//
// Where a pattern matches exactly, nodes become nn layers, members built from their configs in
// load(), with parameters stored in the weights file under their state_dict names
// ("conv1.weight", "fc.bias", ...):
//   - Gemm (transA 0, alpha = beta = 1) and MatMul followed by the Add of a bias, with FLOAT
//     initializer weights and a 1-D bias: nn::Linear (the weight stored as [out, in]);
//   - Conv with FLOAT initializer weights and symmetric pads (or SAME_UPPER at stride 1): nn::Conv1d/2d/3d;
//   - inference BatchNormalization with FLOAT initializer statistics on an input of known
//     rank: nn::BatchNorm1d/2d/3d in eval mode;
//   - LayerNormalization over the last axis with 1-D FLOAT initializer scale and bias: nn::LayerNorm.
// Other nodes become direct ember tensor-op calls where the op's handler is that call for the
// operand types the generator can tell (Add, Sub, Mul, MatMul, Div, Relu, Tanh, Sigmoid, Erf, Exp,
// Log, Sqrt, Identity, Clip with constant bounds, MaxPool / AveragePool with symmetric pads,
// GlobalAveragePool / GlobalMaxPool, Flatten (axis 1), Softmax / LogSoftmax (opset 13+), Concat,
// Reshape to a constant shape, Transpose, Unsqueeze of one axis); every other node is a call to
// onnx::run_node() with the node (type, attributes spelled out with the helpers below) built once
// as a constant. Identity / Constant nodes that only fed layer weights or inlined constants are
// left out; the remaining initializers are DynTensor members, stored under their ONNX names.
// forward() expects its inputs on the device the struct was loaded onto. Code with layers links
// ember::nn besides ember::onnx.
// Not supported (an ember::NotImplemented "codegen: unsupported ..."): graph attributes (If, Loop,
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

// What generate_cortex_m wrote, and the memory the generated code takes.
struct CortexMReport {
  int64_t weight_bytes = 0;     // the const weight arrays (flash), after folding and re-layout
  int64_t arena_bytes = 0;      // the static activation arena (RAM), planned by liveness
  int64_t unplanned_bytes = 0;  // what one buffer per tensor would take instead
  int64_t nodes = 0;            // nodes of the graph after constant folding
  int64_t steps = 0;            // kernel calls in run() (fused nodes and reshapes take none)
  std::vector<std::vector<int64_t>> input_shapes, output_shapes;  // the graph's inputs and outputs
  std::vector<int64_t> input_sizes, output_sizes;                 // their element counts
  std::vector<std::string> files;                                 // the files written
};

// `ember-onnx generate --target cortex-m` (docs/embedded.md): writes out_dir/name.hpp and
// out_dir/name.cpp, freestanding C++ for a microcontroller (no heap, no exceptions, no RTTI, no
// threads, no files), and out_dir/name.json (the report's numbers). The weights become const
// float arrays (flash); activations live in one static arena whose buffers are placed by
// liveness, so tensors whose lifetimes do not overlap share bytes. run() calls the kernels of
// include/ember/kernels/, fusing Conv + BatchNormalization + Relu/Clip, Gemm or MatMul + Add +
// Relu/Clip and Add + Relu/Clip into one call each; reshapes cost nothing. Every value must
// have a static shape and be FLOAT. Supported: Conv (1-D, 2-D, grouped, depthwise), Gemm,
// MatMul by a constant, Add, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, Relu, Clip,
// Sigmoid, Tanh, Softmax, BatchNormalization, Concat, Reshape, Flatten, Squeeze, Unsqueeze,
// Transpose, Identity, Dropout, Gather (constant indices), LSTM and GRU (one layer, forward), and
// the int8 ops of ember-onnx quantize's models (QuantizeLinear, DequantizeLinear, QLinearConv,
// com.microsoft QLinearAdd, MaxPool on u8; u8 activations). Any other node is an
// ember::NotImplemented naming the node and its op type, before anything is written.
CortexMReport generate_cortex_m(const ModelProto& model, const std::string& out_dir, const std::string& name);

// Builders used by the generated code to spell out a node.
namespace gen {
AttributeProto attr_int(std::string name, int64_t v);  // an INT attribute `name` = v
AttributeProto attr_float(std::string name, float v);  // a FLOAT attribute `name` = v
AttributeProto attr_string(std::string name, std::string v);  // a STRING attribute `name` = v (bytes)
AttributeProto attr_ints(std::string name, std::vector<int64_t> v);  // an INTS attribute `name` = v
AttributeProto attr_floats(std::string name, std::vector<float> v);  // a FLOATS attribute `name` = v
AttributeProto attr_strings(std::string name, std::vector<std::string> v);  // a STRINGS attribute `name` = v
AttributeProto attr_tensor(std::string name, TensorProto v);  // a TENSOR attribute `name` = v
// A tensor of an ONNX DataType and dims; `hex` is its raw little-endian bytes in hexadecimal.
TensorProto tensor(int32_t data_type, std::vector<int64_t> dims, std::string_view hex);
// A node with these fields (domain "" for the default one; "" in inputs/outputs for omitted ones).
NodeProto node(std::string op_type, std::string name, std::string domain, std::vector<std::string> inputs,
               std::vector<std::string> outputs, std::vector<AttributeProto> attributes = {});
}  // namespace gen

}  // namespace ember::onnx
