// Backward rules: one per differentiable IR op, registered in a table indexed by OpKind.
//
// A rule receives a BackwardCtx (the op's attributes, input/output metadata, the saved
// tensors it asked for, and the upstream gradients) and returns one gradient per input
// (an undefined Val where the input gets none). Rules compute with `Val`, a primitive on
// the backend that runs the backward: the inner backend normally, or the autodiff backend
// itself when create_graph is set (then every op a rule emits is recorded again, which is
// what makes second-order gradients work). Rules therefore only emit IR ops through the
// helpers below, never touch kernels, and work on any backend.
//
//   Rule r;                                 // d/dx exp(x) = exp(x) * g
//   r.save_outputs = 1;                     // bit i: keep output i for backward
//   r.fn = [](BackwardCtx& c) -> Grads { return {c.grad(0) * c.output(0)}; };
//   table[size_t(OpKind::exp)] = r;
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "ember/core/backend.hpp"
#include "ember/core/error.hpp"
#include "ember/core/op.hpp"
#include "ember/core/tensor_data.hpp"

namespace ember::autodiff {

// A value in a backward computation.
class Val {
 public:
  Val() = default;
  Val(Backend* be, PrimitivePtr p) : be_(be), p_(std::move(p)) {}
  bool defined() const { return p_ != nullptr; }
  const TensorMeta& meta() const { return p_->meta(); }
  const Shape& shape() const { return p_->shape(); }
  DType dtype() const { return p_->dtype(); }
  int rank() const { return p_->shape().rank(); }
  int64_t numel() const { return p_->shape().numel(); }
  Backend* backend() const { return be_; }
  const PrimitivePtr& prim() const { return p_; }

 private:
  Backend* be_ = nullptr;
  PrimitivePtr p_;
};
using Grads = std::vector<Val>;

// ---- emitting ops (make_op validates; errors name the op) ----
// Runs `k` on the backend of the first defined input; undefined inputs stay null (optional
// inputs such as bias). Returns output 0 / every output.
Val run(OpKind k, std::vector<Val> in, OpAttrs attrs = NoAttrs{});
std::vector<Val> run_all(OpKind k, std::vector<Val> in, OpAttrs attrs = NoAttrs{});
Val create(Backend* be, OpKind k, CreateAttrs attrs);
Val scalar(Backend* be, double v, DType dt);  // a 0-d tensor
Val full(Backend* be, const Shape& s, double v, DType dt);
Val zeros_like(const Val& x);
Val ones_like(const Val& x);
Val full_like(const Val& x, double v);
Val from_host(Backend* be, const TensorData& data);  // host-built index/weight tensors

// arithmetic (same dtype; broadcasting; a double becomes a 0-d tensor of the other operand's dtype)
Val operator+(const Val& a, const Val& b);
Val operator-(const Val& a, const Val& b);
Val operator*(const Val& a, const Val& b);
Val operator/(const Val& a, const Val& b);
Val operator+(const Val& a, double b);
Val operator-(const Val& a, double b);
Val operator*(const Val& a, double b);
Val operator/(const Val& a, double b);
Val operator+(double a, const Val& b);
Val operator-(double a, const Val& b);
Val operator*(double a, const Val& b);
Val operator/(double a, const Val& b);
Val operator-(const Val& a);
inline Val un(OpKind k, const Val& x) { return run(k, {x}); }
Val pow(const Val& a, double b);
Val pow(const Val& a, const Val& b);
Val cast(const Val& x, DType dt);
Val where(const Val& cond, const Val& a, const Val& b);
Val where(const Val& cond, const Val& a, double b);
Val where(const Val& cond, double a, const Val& b);
// comparisons -> bool
Val cmp(OpKind k, const Val& a, const Val& b);
Val cmp(OpKind k, const Val& a, double b);
Val logical_and(const Val& a, const Val& b);
Val logical_not(const Val& a);

// ---- reductions and shape ----
Val sum(const Val& x, std::vector<int> dims, bool keepdim);  // dims empty: every dim
Val mean(const Val& x, std::vector<int> dims, bool keepdim);
// Undo broadcasting: sums g over the dims that were broadcast from `to`, reshapes to `to`.
Val sum_to(const Val& g, const Shape& to);
// A reduction's output (or gradient) brought back to the input shape: re-inserts the
// reduced dims when !keepdim (dims empty = all), then expands to `in`.
Val unreduce(const Val& g, const Shape& in, const std::vector<int>& dims, bool keepdim);
Val reshape(const Val& x, const Shape& s);
Val expand(const Val& x, const Shape& s);
Val permute(const Val& x, std::vector<int> dims);
Val transpose(const Val& x, int d0, int d1);  // negative dims allowed
Val unsqueeze(const Val& x, int dim);
Val matmul(const Val& a, const Val& b);       // IR matmul: rank >= 2, batch dims broadcast
Val contiguous(const Val& x);
Val slice(const Val& x, SliceAttrs a);
Val narrow(const Val& x, int dim, int64_t start, int64_t length);
Val slice_assign(const Val& x, SliceAttrs a, const Val& v);
Val cat(std::vector<Val> xs, int dim);
Val gather(const Val& x, int dim, const Val& index);
Val scatter(const Val& x, int dim, const Val& index, const Val& src);
Val scatter_add(const Val& x, int dim, const Val& index, const Val& src);
Val index_select(const Val& x, int dim, const Val& index);
Val index_add(const Val& x, int dim, const Val& index, const Val& src);
Val flip(const Val& x, std::vector<int> dims);
Val cumsum(const Val& x, int dim);

// ---- the rule interface ----
class BackwardCtx {
 public:
  virtual ~BackwardCtx() = default;
  OpKind kind() const { return kind_; }
  const OpAttrs& attrs() const { return *attrs_; }
  template <class A>
  const A& attr() const { return std::get<A>(*attrs_); }
  size_t num_inputs() const { return in_meta_->size(); }
  size_t num_outputs() const { return out_meta_->size(); }
  bool has_input(size_t i) const { return (*in_present_)[i]; }  // optional inputs may be absent
  const TensorMeta& in(size_t i) const { return (*in_meta_)[i]; }
  const TensorMeta& out(size_t i) const { return (*out_meta_)[i]; }
  // Whether input i is tracked (a rule may skip computing gradients nobody needs).
  virtual bool needs_grad(size_t i) const = 0;
  // Saved tensors (the rule's save masks say which exist); undefined for absent inputs.
  virtual Val input(size_t i) = 0;
  virtual Val output(size_t i) = 0;
  // Upstream gradient of output i (zeros when nothing flowed into it).
  virtual Val grad(size_t i) = 0;
  virtual Backend* backend() const = 0;
  // Whether this backward is itself recorded (create_graph): a rule that emits an op without
  // a rule of its own (a fused backward) must then use differentiable ops instead.
  virtual bool create_graph() const = 0;
  // Whether input i is the transpose of a tracked matrix (permute {1, 0} of a 2-d tensor, as
  // nn::Linear's weight^T): a rule may then compute the input's gradient in the layout that
  // makes the matrix's own gradient contiguous after the permute's rule transposes it back.
  virtual bool input_is_transpose(size_t /*i*/) const { return false; }

 protected:
  OpKind kind_{};
  const OpAttrs* attrs_ = nullptr;
  const std::vector<TensorMeta>* in_meta_ = nullptr;
  const std::vector<bool>* in_present_ = nullptr;
  const std::vector<TensorMeta>* out_meta_ = nullptr;
};

using BackwardFn = std::function<Grads(BackwardCtx&)>;
inline constexpr uint32_t kAllInputs = 0xffffffffu;

struct Rule {
  BackwardFn fn;              // null: the op is not differentiable (floating outputs of it are untracked)
  uint32_t save_inputs = 0;   // bit i: backward reads input(i)
  uint32_t save_outputs = 0;  // bit i: backward reads output(i)
  uint32_t (*save_outputs_of)(const Op&) = nullptr;  // when set, the save_outputs of this op
  // When set, rewrites an op that is recorded (a tracked input, grad enabled) before it runs, so
  // that it also computes what the backward reads (max_pool without indices gets them); the
  // caller still receives only the outputs of the op it asked for.
  void (*record_as)(Op&) = nullptr;
};
using RuleTable = std::array<Rule, kNumOps>;

// The whole table (built once from the register_* functions below).
const RuleTable& rules();

// One function per rules_*.cpp file.
void register_elementwise_rules(RuleTable& t);  // unary, binary, activations, where, lerp, clamp, cast, prelu
void register_reduce_rules(RuleTable& t);       // reductions, softmax, scans, sort/topk, matmul
void register_layout_rules(RuleTable& t);       // views, layout ops, cat/pad/slice_assign, indexing
void register_nn_rules(RuleTable& t);           // conv, pools, interpolate, norms, attention

}  // namespace ember::autodiff
