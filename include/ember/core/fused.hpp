// A fused group of elementwise ops: what the fusion decorator hands a backend to run as one
// kernel, and the optional backend service that runs it.
//
//   FusedProgram p;                       // y = exp(x0 - x1), broadcasting x1 over rows
//   p.shape = {8192, 4096};
//   p.inputs = {{{8192, 4096}, DType::f32}, {{8192, 1}, DType::f32}};
//   p.nodes = {{OpKind::sub, NoAttrs{}, {~0, ~1}, DType::f32}, {OpKind::exp, NoAttrs{}, {0}, DType::f32}};
//   p.outputs = {1};
//   # Backend& backend = given<Backend>();
//   # PrimitivePtr x0 = given<PrimitivePtr>(), x1 = x0;
//   auto out = backend.fused_kernels()->run(p, {x0, x1});
//
// Every node's output has the shape `shape` (the group's iteration domain); an input has any
// shape that broadcasts to it (numpy rules) and any strides, so views of materialised tensors
// (transposes, slices, expands) are read through index arithmetic, not copied. The nodes are in
// topological order and each is a valid elementwise op (make_op accepted it).
//
// A row program (reduce_from >= 0) also holds reductions over the trailing dims
// [reduce_from, rank) of `shape`: the domain is rows x cols (the leading dims' product times the
// trailing dims'). Its nodes live on one of two levels:
//   full     shape `shape`, one value per element (as above);
//   reduced  shape `reduced_shape`, one value per row: the reductions (sum, mean, max, min,
//            var, std, logsumexp of one full value over the trailing dims) and elementwise ops
//            whose operands are reduced values or inputs broadcastable to `reduced_shape`.
// A full node may read a reduced value when reduced_shape keeps the reduced dims (keepdim: the
// value broadcasts along the row). Softmax written from primitives is one row program:
//   m = max(x, -1, keepdim) [reduced]; e = exp(x - m) [full]; s = sum(e, -1, keepdim) [reduced];
//   y = e / s [full].
//
// A column program (reduce_to > 0, reduce_from < 0) reduces the leading dims [0, reduce_to) and
// keeps the trailing ones: a reduced node has one value per column, which a full node may read
// whether or not the reductions keep their dims (it broadcasts along the leading dims). The bias
// gradient sum(dy * gelu'(x), 0) is one; column_sweeps() orders its passes over the rows (a
// reduction reading a finished column, as x - mean(x, 0) squared and summed, runs after it).
// With both set (0 < reduce_to < reduce_from) a row program keeps the middle dims instead, its
// rows the kept indices (BatchNorm's {0, 2, 3}; keepdim for full nodes to read per-row values).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/op.hpp"

namespace ember {

// A fused group of elementwise ops (and, in row/column programs, reductions); see the file's comment.
struct FusedProgram {
  // One op of the group; its output is the temporary t<index> that later nodes read.
  struct Node {
    OpKind kind;    // the op (elementwise, or a reduction in row/column programs)
    OpAttrs attrs;  // its attributes, as make_op normalised them
    std::vector<int32_t> args;  // a >= 0: node a (earlier); a < 0: input ~a
    DType dtype;                // the output dtype (the shape is the group's)
    bool reduced = false;       // row / column programs: a per-row / per-column node (reduced_shape)
  };
  Shape shape;                    // the iteration domain
  std::vector<TensorMeta> inputs; // each broadcastable to `shape`
  std::vector<Node> nodes;        // the ops, in topological order
  std::vector<int32_t> outputs;   // the nodes materialised, in the order run() returns them
  int reduce_from = -1;           // row programs: the first reduced dim of `shape`; else -1
  Shape reduced_shape;            // row and column programs: the reduced nodes' shape
  int reduce_to = 0;              // column programs: the reduced leading dims [0, reduce_to); else 0

  bool is_rows() const { return reduce_from >= 0; }  // a row program (reductions over trailing dims)
  bool is_cols() const { return reduce_to > 0; }  // a column program (reductions over leading dims)
  // The shape node j computes (`shape`, or `reduced_shape` for a reduced node).
  const Shape& node_shape(size_t j) const { return nodes[j].reduced ? reduced_shape : shape; }

  // The plan cache key: ops, attributes, dtypes, the dataflow and each input's dtype and
  // broadcast pattern; not the tensors' ids, and not the sizes (only the rank).
  std::string signature() const;
  // One line per node for EMBER_LOG=fusion: "t2 = exp(t1) f32".
  std::string describe() const;
};

// For a reduction op (sum, mean, ...): whether it reduces trailing dims (a row program's shape
// of reduction: ReduceAttrs.dims = [from, rank), or every dim), and then its rows (the kept
// dims' product) and cols (the reduced dims').
bool reduces_trailing_dims(const Op& op, int64_t& rows, int64_t& cols);
// Whether it reduces leading dims and keeps at least one (a column program's: ReduceAttrs.dims =
// [0, to), to < rank), and then its rows (the reduced dims' product) and cols (the kept dims').
bool reduces_leading_dims(const Op& op, int64_t& rows, int64_t& cols);

// A column program's passes over its rows ("sweeps"), for both backends: per node, the number of
// sweeps that must be finished before it can run (a reduction's first pass runs in that sweep;
// var, std and logsumexp take two, so their value is ready two sweeps later). The program needs
// `count` sweeps for its reductions.
struct ColumnSweeps {
  std::vector<int> first;  // per node
  int count = 0;  // the sweeps the program needs
  static int passes(OpKind reduction);  // 2 for var, std and logsumexp, else 1
  int ready(const FusedProgram& p, size_t node) const;  // sweeps done before node's value exists
};
// The sweep plan of column program `p`.
ColumnSweeps column_sweeps(const FusedProgram& p);

// The service a backend offers the fusion decorator (Backend::fused_kernels()).
class FusedKernels {
 public:
  virtual ~FusedKernels() = default;
  // Whether `op` (an op with validated metadata) may join a fused group: an elementwise op, or
  // a reduction the backend runs inside row programs (see FusedProgram).
  virtual bool can_fuse(const Op& op) const = 0;
  // Runs `p` over `inputs` (this backend's primitives, in the order of p.inputs) and returns
  // the outputs in the order of p.outputs. An input whose use_count() is 1 belongs to the call:
  // its buffer may become an output's.
  virtual std::vector<PrimitivePtr> run(const FusedProgram& p, std::vector<PrimitivePtr> inputs) = 0;
  // A name for logs and traces of the kernel that runs `p` ("cpu_fused" or a CUDA kernel name).
  virtual std::string kernel_name(const FusedProgram& p) const = 0;
};

}  // namespace ember
