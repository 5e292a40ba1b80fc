// Static (post-training) quantization of an ONNX model, in ONNX Runtime's QOperator format, and
// writing a ModelProto back to a file.
//
//   # DynTensor x0 = randn({1, 3, 224, 224}), x1 = randn({1, 3, 224, 224});
//   std::vector<onnx::CalibrationSample> calib = {{{"input", x0}}, {{"input", x1}}};
//   onnx::quantize_static("resnet18.onnx", "resnet18_int8.onnx", calib);
//   auto m = onnx::Model::load("resnet18_int8.onnx");       // QLinearConv, QLinearAdd, ...
//
// quantize_static runs the f32 model on every calibration sample, records the min and max of
// every f32 value the graph computes (and of its inputs), and rewrites the graph as follows:
//   Conv (+ a Relu that is its only reader)  -> QLinearConv, u8 activations, i8 weights symmetric
//                                               per output channel, i32 bias; with a Relu the
//                                               output range is the Relu's (zero point 0, so
//                                               saturation at 0 is the Relu)
//   com.microsoft FusedConv, activation Relu or none, no residual input: the same
//   Add (+ a Relu that is its only reader)   -> com.microsoft QLinearAdd (likewise)
//   MaxPool whose input is already u8        -> MaxPool on u8 (same scale and zero point)
//   anything else                            -> left f32; DequantizeLinear before it where its
//                                               input is only available as u8
//
// QuantizeLinear is inserted where an f32 value first feeds a quantized node (the graph input,
// typically) and DequantizeLinear where a u8 value feeds an f32 node or is a graph output, so the
// graph's inputs and outputs keep their names and f32 types. GlobalAveragePool and the Gemm /
// MatMul head stay f32 (ember has no QLinearGlobalAveragePool handler; the head is a small share
// of the time and the most sensitive to rounding). Activations are per tensor u8 affine with
// PyTorch's MinMaxObserver formula (docs/quantization.md): min' = min(min, 0), max' = max(max, 0),
// scale = (max' - min') / 255 (1 for an all-zero tensor), zero_point = round(-min' / scale).
// Weights: scale_c = max|w_c| / 127 (1 for an all-zero channel), q = round(w / scale_c); the
// bias becomes round(b_c / (x_scale * scale_c)) in i32. Only the main graph is rewritten
// (subgraphs of If / Loop stay f32). The default domain's opset must be at least 10.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "ember/onnx/model.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::onnx {

// One calibration sample: a tensor for every graph input that has no initializer.
using CalibrationSample = std::map<std::string, DynTensor>;

// How quantize_static chooses activation ranges, and what it leaves f32.
struct QuantizeOptions {
  // 100: min-max ranges. Below (e.g. 99.99): each activation's range is [quantile(1 - p/100),
  // quantile(p/100)] of all its values over the calibration set (every value is kept in memory
  // while calibrating), clipping outliers as ONNX Runtime's Percentile calibration does.
  double percentile = 100;
  // Nodes (by name, or by their first output's name when unnamed) to keep in f32.
  std::vector<std::string> exclude_nodes;
};

// What quantize_static did (for the CLI and tests).
struct QuantizeReport {
  int quantized_convs = 0;  // Conv / FusedConv nodes now QLinearConv
  int quantized_adds = 0;   // Add nodes now QLinearAdd
  int u8_max_pools = 0;     // MaxPool nodes that now run on u8
  int quantize_nodes = 0;   // QuantizeLinear nodes inserted
  int dequantize_nodes = 0; // DequantizeLinear nodes inserted
  int samples = 0;          // calibration samples run
};

// The quantized model (see the file's comment). Errors (ember::Error) for an empty calibration
// set, a percentile outside (50, 100], a sample that lacks a model input or whose shape or dtype does not fit the model's
// declaration (the runtime's message, prefixed with the sample's index), an opset below 10, and
// a Conv whose weight is not an f32 initializer is left f32 (not an error). The result's
// initializers hold their data inline (raw_data), so it needs no base_dir.
ModelProto quantize_static(const ModelProto& model, const std::vector<CalibrationSample>& calibration,
                           const QuantizeOptions& options = {}, QuantizeReport* report = nullptr);
// The same from a file to a file: reads in_path (external data relative to it), writes out_path
// atomically (a temporary file in the same directory, then a rename).
QuantizeReport quantize_static(const std::string& in_path, const std::string& out_path,
                               const std::vector<CalibrationSample>& calibration, const QuantizeOptions& options = {});

// The protobuf wire-format bytes of a model: every field ModelProto keeps, initializers with
// their data inline (external data is read from base_dir, the model's own when empty).
// Model-local functions are not written (ModelProto keeps only their names): an Error if any.
std::vector<std::byte> serialize_model(const ModelProto& model, const std::string& base_dir = "");
// serialize_model written to `path` atomically (temporary file + rename); errors name the path.
void save_model(const ModelProto& model, const std::string& path, const std::string& base_dir = "");

}  // namespace ember::onnx
