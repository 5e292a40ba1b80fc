// The autodiff graph: tracked primitives point at the node that produced them; a node points
// at the producers of its inputs (edges) and keeps what its backward rule needs.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "ember/decorators/autodiff.hpp"
#include "rules.hpp"

namespace ember::autodiff {

struct Node;

// Output `index` of `node`; a null node means "not tracked".
struct Edge {
  std::shared_ptr<Node> node;
  int index = 0;
};

// The autodiff backend's primitive: the inner backend's value plus its place in the graph.
class AdPrimitive final : public Primitive {
 public:
  AdPrimitive(PrimitivePtr inner_value, Edge e) : Primitive(inner_value->meta()), inner(std::move(inner_value)), edge(std::move(e)) {}
  PrimitivePtr inner;
  Edge edge;
};

inline AdPrimitive& ad(const PrimitivePtr& p) { return static_cast<AdPrimitive&>(*p); }

struct Node {
  ~Node();  // iterative: dropping a long chain must not overflow the stack

  uint64_t id = 0;
  bool leaf = false;
  bool recomputable = false;   // balanced checkpointing: outputs are recomputed, not kept
  bool freed = false;          // saved tensors released by a backward without retain_graph
  OpKind kind{};
  OpAttrs attrs;
  Backend* inner = nullptr;    // runs recomputations
  const Rule* rule = nullptr;
  std::vector<TensorMeta> in_meta, out_meta;
  std::vector<bool> in_present;
  std::vector<Edge> next;                 // producer of each input (null node: untracked)
  std::vector<PrimitivePtr> saved_in;     // inner values kept for backward / recompute (null: not kept)
  std::vector<PrimitivePtr> saved_out;
  std::vector<PrimitivePtr> recomputed;   // balanced: outputs recomputed during backward
  std::vector<bool> retain;               // outputs whose gradient backward reports (require_grad on an intermediate)

  // Inner value of input i / output j, recomputing through recomputable producers.
  PrimitivePtr input_value(size_t i);
  PrimitivePtr output_value(int j);
  void release();
};

uint64_t next_node_id();

}  // namespace ember::autodiff
