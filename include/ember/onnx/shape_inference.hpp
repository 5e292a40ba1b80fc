// Static analysis of ONNX graphs: shape/type inference and constant folding.
//
//   onnx::ModelProto m = onnx::load_model("model.onnx");
//   std::map<std::string, onnx::InferredType> types = onnx::infer_shapes(m.graph, m.opset());
//   std::cout << types.at("output").str() << "\n";          // "FLOAT[batch,1000]"
//   onnx::FoldStats s = onnx::fold_constants(m.graph, m.opset(), Device::cpu(), m.base_dir);
//
// infer_shapes starts from the graph inputs' declared types, the initializers and Constant
// nodes, then applies one rule per op type in node order. Dims are static, symbolic (a
// dim_param such as "batch") or unknown. Small integer tensors built from shapes (Shape ->
// Gather -> Unsqueeze -> Concat -> Reshape) are followed element by element, symbolic elements
// included, so a Reshape whose shape is computed from its input's shape keeps "batch". Ops
// without a rule leave their outputs unknown (not an error). Declared value_info and graph
// outputs refine what is inferred; an ember::Error names the value and both types when a
// declared static dim, rank or element type contradicts an inferred one.
//
// fold_constants evaluates, once, every deterministic node of the default domain whose inputs
// are all constants (initializers that no graph input overrides, outputs of folded nodes) and
// replaces it with initializers; Shape and Size of values whose shape is fully static fold too.
// It repeats until nothing changes. Control flow, random ops and training-mode Dropout stay.
// An Identity of a constant becomes an alias (its readers read the constant) rather than a
// copy. Declared types that contradict inference do not stop folding (Shape then stays).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ember/core/device.hpp"
#include "ember/onnx/model.hpp"

namespace ember::onnx {

// What inference knows about a value: its element type (0: unknown) and shape.
struct InferredType {
  int32_t elem_type = 0;                        // a DataType value
  std::optional<std::vector<Dimension>> shape;  // nullopt: rank unknown
  bool fully_static() const;                    // shape known with every dim a value
  std::string str() const;                      // "FLOAT[batch,3,?]", "?[rank unknown]"
};

// The type of every value of the graph (inputs, initializers, node outputs) by name. opset is
// the default domain's imported version; base_dir is where external initializer data is read
// (only small integer initializers are read, for shape arguments).
std::map<std::string, InferredType> infer_shapes(const GraphProto& graph, int64_t opset,
                                                 const std::string& base_dir = "");

// What fold_constants did to a graph.
struct FoldStats {
  int64_t nodes_before = 0;  // nodes of the top-level graph before folding
  int64_t nodes_folded = 0;  // nodes replaced by initializers
  int64_t passes = 0;        // passes until nothing more folded
  int64_t initializers_added = 0;  // initializers created for folded outputs
  int64_t initializers_removed = 0;  // initializers that no remaining node or output reads
};

inline constexpr int64_t kMaxFoldGrowth = int64_t(1) << 16;  // element count fold_constants may grow a value to
// Folds constant subgraphs of `graph` in place (see above), running nodes through the
// runtime's handlers (onnx::run_node) on `device`. Outputs larger than both their inputs and
// kMaxFoldGrowth elements (ConstantOfShape, Expand, Tile of big shapes) are not materialised.
FoldStats fold_constants(GraphProto& graph, int64_t opset, const Device& device = Device::cpu(),
                         const std::string& base_dir = "");

// Fuses each Conv of `graph` (not its subgraphs) whose output only one node reads, and which is
// not a graph output, with that reader when it is a Relu, a Clip of constant bounds, or an Add
// (and then with a Relu or Clip that alone reads the sum): one com.microsoft FusedConv node,
// Y = activation(Conv(X, W, B) + Z), as ONNX Runtime's graph optimizer writes it, placed where
// the last fused node was. The runtime runs the add and the clamp in the conv's kernel
// (conv_fused). Model::load does this after fold_constants; returns the number of fused Convs.
// `accept`, when given, says which Convs may fuse (codegen: those it writes as nn layers).
int64_t fuse_conv_epilogues(GraphProto& graph, int64_t opset, const std::string& base_dir = "",
                            const std::function<bool(const NodeProto&)>& accept = {});

}  // namespace ember::onnx
