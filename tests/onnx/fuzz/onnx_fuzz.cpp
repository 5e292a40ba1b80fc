// libFuzzer target: the input is a whole .onnx file. Any outcome but success or an ember::Error
// (a crash, a sanitizer report, another exception, a leak) is a finding. A model that parses
// is walked completely: every tensor is converted (external data is refused without a base
// directory, so the fuzzer never touches the file system) and every type is printed. The
// input is also read as a standalone TensorProto.
#include <cstddef>
#include <cstdint>
#include <span>

#include "ember/onnx/model.hpp"

using namespace ember;
using namespace ember::onnx;

namespace {

uint64_t checksum = 0;

void visit_tensor(const TensorProto& t) {
  try {
    TensorData d = to_tensor_data(t);
    if (d.numel() != t.numel()) __builtin_trap();
    if (d.bytes().size() != static_cast<size_t>(d.numel()) * dtype_size(d.dtype())) __builtin_trap();
    for (std::byte b : d.bytes()) checksum += std::to_integer<uint8_t>(b);
  } catch (const Error&) {
  }
}

void visit_graph(const GraphProto& g) {
  for (const auto& t : g.initializers) visit_tensor(t);
  for (const auto* list : {&g.inputs, &g.outputs, &g.value_info})
    for (const auto& v : *list) checksum += type_string(v.type).size();
  for (const auto& n : g.nodes) {
    for (const auto& a : n.attributes) {
      checksum += attribute_type_name(a.type).size();
      if (a.type == AttributeType::tensor) visit_tensor(a.t);
      for (const auto& t : a.tensors) visit_tensor(t);
      if (a.g) visit_graph(*a.g);
      for (const auto& sub : a.graphs) visit_graph(sub);
      checksum += type_string(a.tp).size();
      for (const auto& tp : a.type_protos) checksum += type_string(tp).size();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    ModelProto m = parse_model(bytes);
    visit_graph(m.graph);
    checksum += static_cast<uint64_t>(m.opset());
  } catch (const Error&) {
  }
  // The same bytes as a standalone TensorProto (the .pb files of ONNX test cases).
  try {
    visit_tensor(parse_tensor_proto(bytes));
  } catch (const Error&) {
  }
  return 0;
}
