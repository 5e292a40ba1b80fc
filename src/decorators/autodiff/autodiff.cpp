// The autodiff backend (recording) and the backward engine.
#include <algorithm>
#include <unordered_map>

#include "graph.hpp"

namespace ember::autodiff {

// ---------------------------------------------------------------------------------------
// rules, grad mode, nodes
// ---------------------------------------------------------------------------------------
const RuleTable& rules() {
  static const RuleTable table = [] {
    RuleTable t{};
    register_elementwise_rules(t);
    register_reduce_rules(t);
    register_layout_rules(t);
    register_nn_rules(t);
    return t;
  }();
  return table;
}

namespace {
thread_local bool t_grad_enabled = true;
std::atomic<uint64_t> g_next_id{1};

// Compute-bound ops keep their outputs under balanced checkpointing; everything else is
// memory-bound and recomputed.
bool compute_bound(OpKind k) {
  switch (k) {
    case OpKind::matmul: case OpKind::conv: case OpKind::conv_transpose: case OpKind::attention:
    case OpKind::sort: case OpKind::topk: case OpKind::nonzero: case OpKind::masked_select:
      return true;
    default:
      return op_info(k).family == OpFamily::Creation;
  }
}
}  // namespace

bool grad_enabled() { return t_grad_enabled; }
NoGradGuard::NoGradGuard() : prev_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = prev_; }

uint64_t next_node_id() { return g_next_id.fetch_add(1, std::memory_order_relaxed); }

Node::~Node() {
  // Unlink children we hold the last reference to into a local stack, so that destroying a
  // chain of any length uses constant stack depth.
  std::vector<std::shared_ptr<Node>> stack;
  auto take = [&](std::vector<Edge>& edges) {
    for (auto& e : edges)
      if (e.node && e.node.use_count() == 1) stack.push_back(std::move(e.node));
  };
  take(next);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    take(n->next);
  }
}

PrimitivePtr Node::input_value(size_t i) {
  if (!in_present[i]) return nullptr;
  if (saved_in[i]) return saved_in[i];
  const Edge& e = next[i];
  EMBER_CHECK(!freed, "backward: the graph through ", op_name(kind),
              " was already freed by an earlier backward (pass retain_graph to run backward twice)");
  EMBER_CHECK(e.node && e.node->recomputable, "autodiff: the backward of ", op_name(kind), " reads input ", i,
              ", which its rule did not save (a rule table bug)");
  return e.node->output_value(e.index);
}

PrimitivePtr Node::output_value(int j) {
  if (!saved_out.empty() && saved_out[j]) return saved_out[j];
  EMBER_CHECK(!freed, "backward: the graph through ", op_name(kind),
              " was already freed by an earlier backward (pass retain_graph to run backward twice)");
  if (recomputed.empty()) {
    EMBER_CHECK(recomputable, "autodiff: the backward reads output ", j, " of ", op_name(kind),
                ", which was not saved (a rule table bug)");
    Op op{kind, {}, attrs, out_meta};
    op.inputs.reserve(in_meta.size());
    for (size_t i = 0; i < in_meta.size(); ++i) op.inputs.push_back(input_value(i));
    recomputed = inner->execute(std::move(op));
  }
  return recomputed[j];
}

void Node::release() {
  freed = true;
  saved_in.clear();
  saved_out.clear();
  recomputed.clear();
  // Inputs no longer needed for recomputation; keep the edges (the graph's shape) so a second
  // backward reports "already freed" instead of silently missing gradients.
  if (!leaf) saved_in.assign(in_meta.size(), nullptr);
}

// ---------------------------------------------------------------------------------------
// the backend
// ---------------------------------------------------------------------------------------
namespace {

// Tensors of this backend wrap the inner backend's (AdPrimitive: the inner value and the graph
// edge), so execute, read, write and supports unwrap or wrap them; the rest is forwarded.
class AutodiffBackend final : public ForwardingBackend {
 public:
  AutodiffBackend(const std::shared_ptr<Backend>& inner, Checkpointing c) : ForwardingBackend(inner), strategy_(c) {
    name_ = inner->name() + "+autodiff" + (c == Checkpointing::balanced ? "(balanced)" : "");
  }

  std::string name() const override { return name_; }

  std::vector<PrimitivePtr> execute(Op op) override {
    const size_t n = op.inputs.size();
    bool tracked = false;
    for (const auto& p : op.inputs)
      if (p && ad(p).edge.node) tracked = true;
    const Rule& rule = rules()[static_cast<size_t>(op.kind)];
    std::shared_ptr<Node> node;
    size_t asked = 0;  // with record_as: the outputs the caller asked for (the rewritten op may have more)
    if (tracked && rule.fn && t_grad_enabled) {
      if (rule.record_as) {
        asked = op.outputs.size();
        rule.record_as(op);
      }
      node = record(op, rule);
    }
    const uint32_t save_out = node && rule.save_outputs_of ? rule.save_outputs_of(op) : rule.save_outputs;
    // Unwrap. A wrapper we hold the only handle to gives up its inner value, so the inner
    // backend may reuse the buffer in place (unless the graph saved it).
    for (auto& p : op.inputs) {
      if (!p) continue;
      AdPrimitive& a = ad(p);
      p = p.use_count() == 1 ? std::move(a.inner) : a.inner;
    }
    (void)n;
    std::vector<PrimitivePtr> outs = inner_->execute(std::move(op));
    if (node && !node->recomputable) {
      node->saved_out.assign(outs.size(), nullptr);
      for (size_t j = 0; j < outs.size(); ++j)
        if (save_out & (1u << j)) node->saved_out[j] = outs[j];
    }
    for (size_t j = 0; j < outs.size(); ++j) {
      Edge e;
      if (node && is_float(outs[j]->dtype())) e = Edge{node, static_cast<int>(j)};
      outs[j] = std::make_shared<AdPrimitive>(std::move(outs[j]), std::move(e));
    }
    if (asked) outs.resize(asked);
    return outs;
  }

  TensorData read(const PrimitivePtr& p) override { return inner_->read(ad(p).inner); }
  std::optional<MemoryView> memory_view(const PrimitivePtr& p) override { return inner_->memory_view(ad(p).inner); }
  bool overwrite(const PrimitivePtr& dst, const TensorData& src) override { return inner_->overwrite(ad(dst).inner, src); }
  bool copy_into(const PrimitivePtr& dst, const PrimitivePtr& src) override {
    return inner_->copy_into(ad(dst).inner, ad(src).inner);
  }
  PrimitivePtr write(const TensorData& data) override {
    return std::make_shared<AdPrimitive>(inner_->write(data), Edge{});
  }
  PrimitivePtr write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) override {
    return std::make_shared<AdPrimitive>(inner_->write_bytes(meta, bytes), Edge{});
  }
  PrimitivePtr wrap_bytes(const TensorMeta& meta, std::span<const std::byte> bytes,
                          std::shared_ptr<const void> owner) override {
    return std::make_shared<AdPrimitive>(inner_->wrap_bytes(meta, bytes, std::move(owner)), Edge{});
  }
  bool supports(const Op& op) const override {
    Op o{op.kind, {}, op.attrs, op.outputs};
    for (const auto& p : op.inputs) o.inputs.push_back(p ? ad(p).inner : nullptr);
    return inner_->supports(o);
  }

 private:
  std::shared_ptr<Node> record(const Op& op, const Rule& rule) {
    auto node = std::make_shared<Node>();
    node->id = next_node_id();
    node->kind = op.kind;
    node->attrs = op.attrs;
    node->inner = inner_.get();
    node->rule = &rule;
    node->recomputable = strategy_ == Checkpointing::balanced && !compute_bound(op.kind);
    const size_t n = op.inputs.size();
    node->in_meta.resize(n);
    node->in_present.resize(n);
    node->next.resize(n);
    node->saved_in.resize(n);
    node->out_meta = op.outputs;
    // A recomputable node keeps every input it cannot itself recompute; other nodes keep
    // what their rule reads, unless the producer is recomputable.
    const uint32_t mask = node->recomputable ? kAllInputs : rule.save_inputs;
    for (size_t i = 0; i < n; ++i) {
      const PrimitivePtr& p = op.inputs[i];
      if (!p) continue;
      const AdPrimitive& a = ad(p);
      node->in_present[i] = true;
      node->in_meta[i] = a.meta();
      node->next[i] = a.edge;
      const bool want = i < 32 ? (mask >> i) & 1u : mask == kAllInputs;
      const bool recompute = strategy_ == Checkpointing::balanced && a.edge.node && a.edge.node->recomputable;
      if (want && !recompute) node->saved_in[i] = a.inner;
    }
    return node;
  }

  Checkpointing strategy_;
  std::string name_;
};

AutodiffBackend* as_autodiff(Backend& b) { return dynamic_cast<AutodiffBackend*>(&b); }

}  // namespace

std::shared_ptr<Backend> wrap(std::shared_ptr<Backend> inner, Checkpointing strategy) {
  EMBER_CHECK(inner != nullptr, "autodiff: no backend to wrap");
  EMBER_CHECK(!is_autodiff(*inner), "autodiff: ", inner->name(), " already has the autodiff decorator");
  return std::make_shared<AutodiffBackend>(std::move(inner), strategy);
}

bool is_autodiff(const Backend& b) { return dynamic_cast<const AutodiffBackend*>(&b) != nullptr; }

std::shared_ptr<Backend> inner_of(const Backend& b) {
  auto* a = dynamic_cast<const AutodiffBackend*>(&b);
  EMBER_CHECK(a, "autodiff: ", b.name(), " has no autodiff decorator");
  return a->inner();
}

PrimitivePtr require_grad(Backend& b, const PrimitivePtr& p) {
  EMBER_CHECK(as_autodiff(b), "require_grad: tensor of shape ", p->shape(), " is on ", b.name(),
              ", which has no autodiff (use a device made with .autodiff(), e.g. Device::cpu().autodiff())");
  EMBER_CHECK(is_float(p->dtype()), "require_grad: tensor of shape ", p->shape(), " has dtype ", p->dtype(),
              "; only floating tensors can require grad");
  AdPrimitive& a = ad(p);
  if (a.edge.node) {
    if (!a.edge.node->leaf) {  // an intermediate: ask backward to report its gradient too
      auto& r = a.edge.node->retain;
      if (r.empty()) r.assign(a.edge.node->out_meta.size(), false);
      r[a.edge.index] = true;
    }
    return p;
  }
  auto leaf = std::make_shared<Node>();
  leaf->id = next_node_id();
  leaf->leaf = true;
  leaf->out_meta = {a.meta()};
  return std::make_shared<AdPrimitive>(a.inner, Edge{std::move(leaf), 0});
}

LeafIdentity leaf_identity(const PrimitivePtr& p) {
  auto* a = dynamic_cast<const AdPrimitive*>(p.get());
  if (!a || !a->edge.node || !a->edge.node->leaf) return nullptr;
  return a->edge.node;
}

PrimitivePtr require_grad_as(Backend& b, const PrimitivePtr& p, const LeafIdentity& id) {
  if (!id) return require_grad(b, p);
  auto node = std::const_pointer_cast<Node>(std::static_pointer_cast<const Node>(id));
  const bool fits = node->out_meta.size() == 1 && node->out_meta[0].shape == p->shape() &&
                    node->out_meta[0].dtype == p->dtype();
  if (!fits || !as_autodiff(b) || !is_float(p->dtype()) || ad(p).edge.node) return require_grad(b, p);
  return std::make_shared<AdPrimitive>(ad(p).inner, Edge{std::move(node), 0});
}

bool is_tracked(const PrimitivePtr& p) {
  auto* a = dynamic_cast<const AdPrimitive*>(p.get());
  return a && a->edge.node;
}

PrimitivePtr wrap_value(PrimitivePtr inner) { return std::make_shared<AdPrimitive>(std::move(inner), Edge{}); }

PrimitivePtr inner_value(const PrimitivePtr& p) {
  auto* a = dynamic_cast<const AdPrimitive*>(p.get());
  return a ? a->inner : p;
}

PrimitivePtr detach(const PrimitivePtr& p) {
  auto* a = dynamic_cast<const AdPrimitive*>(p.get());
  if (!a || !a->edge.node) return p;
  return std::make_shared<AdPrimitive>(a->inner, Edge{});
}

// ---------------------------------------------------------------------------------------
// the engine
// ---------------------------------------------------------------------------------------
namespace {

class Ctx final : public BackwardCtx {
 public:
  Ctx(const std::shared_ptr<Node>& n, Backend* be, bool create, std::vector<Val>& grads)
      : node_(n), be_(be), create_(create), grads_(grads) {
    kind_ = n->kind;
    attrs_ = &n->attrs;
    in_meta_ = &n->in_meta;
    in_present_ = &n->in_present;
    out_meta_ = &n->out_meta;
  }
  bool needs_grad(size_t i) const override { return node_->next[i].node != nullptr; }
  bool create_graph() const override { return create_; }
  bool input_is_transpose(size_t i) const override {
    const Node* p = node_->next[i].node.get();
    if (!p || p->kind != OpKind::permute || p->in_meta.empty() || p->in_meta[0].shape.rank() != 2) return false;
    const auto& dims = std::get<DimsAttrs>(p->attrs).dims;
    return dims.size() == 2 && dims[0] == 1 && dims[1] == 0;
  }
  Val input(size_t i) override {
    PrimitivePtr v = node_->input_value(i);
    if (!v) return {};
    return wrap(std::move(v), node_->next[i]);
  }
  Val output(size_t j) override {
    return wrap(node_->output_value(static_cast<int>(j)), Edge{node_, static_cast<int>(j)});
  }
  Val grad(size_t j) override {
    if (!grads_[j].defined()) {
      const TensorMeta& m = node_->out_meta[j];
      grads_[j] = full(be_, m.shape, 0.0, m.dtype);
    }
    return grads_[j];
  }
  Backend* backend() const override { return be_; }

 private:
  Val wrap(PrimitivePtr v, Edge e) const {
    if (!create_) return Val(be_, std::move(v));
    return Val(be_, std::make_shared<AdPrimitive>(std::move(v), std::move(e)));
  }
  std::shared_ptr<Node> node_;
  Backend* be_;
  bool create_;
  std::vector<Val>& grads_;
};

void accumulate(Val& slot, Val g) {
  if (!slot.defined()) {
    slot = std::move(g);
    return;
  }
  std::vector<Val> in;
  in.reserve(2);
  in.push_back(std::move(slot));
  in.push_back(std::move(g));
  slot = run(OpKind::add, std::move(in));
}

// The gradient flowing into one output of a node while its consumers' rules run: the sum of the
// dense contributions, and the gradients of slices of it kept apart (a slice's rule would make a
// zero tensor of the whole with the part written in, and the parts would then be added: for the
// three row blocks of an attention projection, 3 fills, 3 writes and 2 sums of the weight's size,
// where one concatenation does).
struct Slot {
  Val dense;
  std::vector<std::pair<SliceAttrs, Val>> pieces;
};

bool whole(const SliceRange& r, int64_t size) { return r.start == 0 && r.step == 1 && r.length() == size; }

// Whether two strided boxes may share an element (their spans overlap in every dim).
bool may_overlap(const SliceAttrs& a, const SliceAttrs& b) {
  for (size_t i = 0; i < a.ranges.size(); ++i) {
    const SliceRange &x = a.ranges[i], &y = b.ranges[i];
    const int64_t x_last = x.start + (x.length() - 1) * x.step, y_last = y.start + (y.length() - 1) * y.step;
    if (x.length() == 0 || y.length() == 0 || x_last < y.start || y_last < x.start) return false;
  }
  return true;
}

// The dim along which every piece is a contiguous run, whole in every other dim, with no two
// runs overlapping: the pieces then concatenate (zeros in the gaps). -1 when there is none.
int concat_dim(std::vector<std::pair<SliceAttrs, Val>>& pieces, const Shape& shape) {
  for (int d = 0; d < shape.rank(); ++d) {
    bool ok = true;
    for (const auto& [a, g] : pieces) {
      for (int i = 0; i < shape.rank() && ok; ++i)
        ok = i == d ? a.ranges[size_t(i)].step == 1 : whole(a.ranges[size_t(i)], shape[i]);
      if (!ok) break;
    }
    if (!ok) continue;
    std::sort(pieces.begin(), pieces.end(), [d](const auto& x, const auto& y) {
      return x.first.ranges[size_t(d)].start < y.first.ranges[size_t(d)].start;
    });
    for (size_t k = 1; k < pieces.size() && ok; ++k)
      ok = pieces[k].first.ranges[size_t(d)].start >= pieces[k - 1].first.ranges[size_t(d)].end;
    if (ok) return d;
  }
  return -1;
}

// The slot's gradient as one tensor of `m`'s shape (undefined when nothing flowed in).
Val settle(Backend* be, Slot slot, const TensorMeta& m) {
  if (slot.pieces.empty()) return std::move(slot.dense);
  Val sparse;
  if (const int d = concat_dim(slot.pieces, m.shape); d >= 0) {
    std::vector<Val> parts;
    int64_t at = 0;
    auto gap = [&](int64_t until) {
      if (until <= at) return;
      Shape s = m.shape;
      s[d] = until - at;
      parts.push_back(full(be, s, 0.0, m.dtype));
    };
    for (auto& [a, g] : slot.pieces) {
      gap(a.ranges[size_t(d)].start);
      parts.push_back(std::move(g));
      at = a.ranges[size_t(d)].end;
    }
    gap(m.shape[d]);
    sparse = cat(std::move(parts), d);
  } else {
    sparse = full(be, m.shape, 0.0, m.dtype);
    for (size_t k = 0; k < slot.pieces.size(); ++k) {
      auto& [a, g] = slot.pieces[k];
      bool overlap = false;
      for (size_t j = 0; j < k && !overlap; ++j) overlap = may_overlap(slot.pieces[j].first, a);
      Val v = overlap ? run(OpKind::add, {slice(sparse, a), std::move(g)}) : std::move(g);
      sparse = slice_assign(sparse, a, v);
    }
  }
  accumulate(slot.dense, std::move(sparse));
  return std::move(slot.dense);
}

}  // namespace

class Engine {
 public:
  static GradientMap run(AutodiffBackend& self, const PrimitivePtr& root, const PrimitivePtr& upstream,
                         BackwardOptions opts) {
    const AdPrimitive& r = ad(root);
    EMBER_CHECK(r.edge.node, "backward: tensor of shape ", root->shape(),
                " does not require grad (no input of the ops that made it called require_grad())");
    const bool create = opts.create_graph;
    const bool retain = opts.retain_graph || create;
    Backend* be = create ? static_cast<Backend*>(&self) : self.inner().get();
    auto wrap_in = [&](const PrimitivePtr& p) { return create ? Val(be, p) : Val(be, ad(p).inner); };

    Val seed;
    if (upstream) {
      EMBER_CHECK(upstream->shape() == root->shape(), "backward: the upstream gradient has shape ",
                  upstream->shape(), " but the tensor has shape ", root->shape());
      seed = cast(wrap_in(upstream), root->dtype());
    } else {
      EMBER_CHECK(root->shape().numel() == 1, "backward: tensor of shape ", root->shape(),
                  " is not a scalar; pass the upstream gradient: backward(upstream)");
      seed = full(be, root->shape(), 1.0, root->dtype());
    }

    // Dependency counts over the reachable graph.
    std::unordered_map<Node*, int> deps;
    {
      std::vector<Node*> stack{r.edge.node.get()};
      deps[r.edge.node.get()] = 0;
      while (!stack.empty()) {
        Node* n = stack.back();
        stack.pop_back();
        for (const Edge& e : n->next) {
          if (!e.node) continue;
          auto [it, fresh] = deps.try_emplace(e.node.get(), 0);
          ++it->second;
          if (fresh) stack.push_back(e.node.get());
        }
      }
    }

    GradientMap out;
    std::unordered_map<Node*, std::vector<Slot>> pending;
    pending[r.edge.node.get()].resize(r.edge.node->out_meta.size());
    pending[r.edge.node.get()][r.edge.index].dense = std::move(seed);
    const Rule* slice_rule = &rules()[size_t(OpKind::slice)];
    std::vector<std::shared_ptr<Node>> ready{r.edge.node};
    auto report = [&](const Node& n, int j, const Val& g) {
      PrimitivePtr p = create ? g.prim() : std::make_shared<AdPrimitive>(g.prim(), Edge{});
      out.grads_[{n.id, j}] = std::move(p);
    };

    while (!ready.empty()) {
      std::shared_ptr<Node> node = std::move(ready.back());
      ready.pop_back();
      out.visited_.insert(node->id);
      std::vector<Val> grads(node->out_meta.size());
      {
        std::vector<Slot> slots = std::move(pending[node.get()]);
        pending.erase(node.get());
        for (size_t j = 0; j < slots.size() && j < grads.size(); ++j)
          grads[j] = settle(be, std::move(slots[j]), node->out_meta[j]);
      }
      if (node->leaf) {
        if (grads[0].defined()) {
          report(*node, 0, grads[0]);
          if (opts.on_leaf_gradient) opts.on_leaf_gradient(node->id, out.grads_[{node->id, 0}]);
        }
        continue;
      }
      for (size_t j = 0; j < node->retain.size(); ++j)
        if (node->retain[j] && grads[j].defined()) report(*node, static_cast<int>(j), grads[j]);
      bool any = false;
      for (const Val& g : grads) any = any || g.defined();
      if (!any) {  // nothing flowed in (e.g. only an integer output was used): nothing flows out
        for (const Edge& e : node->next)
          if (e.node && --deps[e.node.get()] == 0) ready.push_back(e.node);
        if (!retain) node->release();
        continue;
      }
      EMBER_CHECK(!node->freed, "backward: the graph of this tensor (through ", op_name(node->kind), ", output shape ",
                  node->out_meta[0].shape, ") was already freed by an earlier backward; pass retain_graph to "
                  "run backward twice");
      if (node->rule == slice_rule && node->next[0].node && grads[0].shape() != node->in_meta[0].shape) {
        // a part of its input: placed when the input's gradient is settled (Slot)
        const Edge& e = node->next[0];
        auto& slots = pending[e.node.get()];
        if (slots.empty()) slots.resize(e.node->out_meta.size());
        slots[size_t(e.index)].pieces.emplace_back(std::get<SliceAttrs>(node->attrs), cast(grads[0], node->in_meta[0].dtype));
        if (--deps[e.node.get()] == 0) ready.push_back(e.node);
        if (!retain) node->release();
        continue;
      }
      Grads in_grads;
      {
        Ctx ctx(node, be, create, grads);
        in_grads = node->rule->fn(ctx);
      }
      grads.clear();
      EMBER_CHECK(in_grads.size() <= node->next.size(), "autodiff: the rule of ", op_name(node->kind), " returned ",
                  in_grads.size(), " gradients for ", node->next.size(), " inputs");
      for (size_t i = 0; i < node->next.size(); ++i) {
        const Edge& e = node->next[i];
        if (!e.node) continue;
        if (i < in_grads.size() && in_grads[i].defined()) {
          Val g = std::move(in_grads[i]);
          const TensorMeta& m = node->in_meta[i];
          EMBER_CHECK(g.shape() == m.shape, "autodiff: the rule of ", op_name(node->kind), " gave input ", i,
                      " a gradient of shape ", g.shape(), " for an input of shape ", m.shape);
          g = cast(g, m.dtype);
          auto& slots = pending[e.node.get()];
          if (slots.empty()) slots.resize(e.node->out_meta.size());
          accumulate(slots[size_t(e.index)].dense, std::move(g));
        }
        if (--deps[e.node.get()] == 0) ready.push_back(e.node);
      }
      in_grads.clear();
      if (!retain) node->release();
    }
    return out;
  }
};

GradientMap backward(Backend& b, const PrimitivePtr& root, const PrimitivePtr& upstream, BackwardOptions opts) {
  AutodiffBackend* self = as_autodiff(b);
  EMBER_CHECK(self, "backward: tensor of shape ", root->shape(), " is on ", b.name(),
              ", which has no autodiff (use a device made with .autodiff(), e.g. Device::cpu().autodiff())");
  return Engine::run(*self, root, upstream, opts);
}

std::optional<uint64_t> leaf_key(const PrimitivePtr& p) {
  auto* a = dynamic_cast<const AdPrimitive*>(p.get());
  if (!a || !a->edge.node || !a->edge.node->leaf) return std::nullopt;
  return a->edge.node->id;
}

std::optional<PrimitivePtr> GradientMap::get(const PrimitivePtr& x) const {
  auto* a = dynamic_cast<const AdPrimitive*>(x.get());
  EMBER_CHECK(a, "grad: tensor of shape ", x->shape(), " is not on an autodiff device");
  EMBER_CHECK(a->edge.node, "grad: tensor of shape ", x->shape(),
              " does not require grad (call require_grad() on it before the forward pass)");
  const Node& n = *a->edge.node;
  auto it = grads_.find({n.id, a->edge.index});
  if (it != grads_.end()) return it->second;
  if (n.leaf) return std::nullopt;
  EMBER_CHECK(visited_.count(n.id), "grad: tensor of shape ", x->shape(),
              " belongs to another graph: the backward that produced these gradients did not reach it");
  throw Error("grad: tensor of shape " + x->shape().str() +
              " is an intermediate result; call require_grad() on it before backward() to keep its gradient");
}

bool GradientMap::remove(const PrimitivePtr& x) {
  auto* a = dynamic_cast<const AdPrimitive*>(x.get());
  if (!a || !a->edge.node) return false;
  return grads_.erase({a->edge.node->id, a->edge.index}) > 0;
}

}  // namespace ember::autodiff
