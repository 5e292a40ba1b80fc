// Matmul programs: a fused group that starts with a matmul (what the fusion decorator hands a
// backend when elementwise ops follow a product), and how a backend cuts one into the product
// and the elementwise rest. For y = relu(x @ w + b) * r, the program p has the nodes matmul(in0, in1),
// add(t0, in2), relu(t1), mul(t2, in3), and
//
//   # const FusedProgram& p = given<FusedProgram>();
//   ProducerSplit s = split_producer(p, /*fold_bias=*/true);
//   // product = matmul(in s.a_input, in s.b_input, bias in s.bias_input)  (cuBLASLt's bias epilogue)
//   // s.rest = relu(in0) * in1 over the product (in0) and r (in1)
//
// In a matmul program node 0 is a matmul reading inputs only (with or without a bias) whose
// product is the program's domain; every other node is elementwise over it (bias, activation,
// residual add, scale: the matmul's epilogue). No reductions join it. The CPU runs the rest over
// each block of the product while the block is in cache; CUDA runs it as one kernel reading the
// product.
#pragma once

#include <cstdint>
#include <vector>

#include "ember/core/fused.hpp"

namespace ember {

// Whether `p` is a matmul program (its node 0 is a matmul).
inline bool has_producer(const FusedProgram& p) { return !p.nodes.empty() && p.nodes[0].kind == OpKind::matmul; }

// A matmul program cut into its product and the elementwise rest. The product is of p's inputs
// a_input and b_input, plus bias_input (>= 0) when the bias goes into the product: the matmul's
// own bias, or, with fold_bias, an add of the bare product and a vector [N] of its dtype that
// nothing else reads. Otherwise a bias is the rest's first node (an add). `rest` has the
// domain's shape; its input 0 is the product, then the inputs of p that its nodes read
// (rest_input[i]: where p's input i is among them, or -1); outputs[k] is p's output k: -1 for
// the product itself, else the index of the rest's output.
struct ProducerSplit {
  // p's input that is the product's left operand; then b_input, its right operand
  int32_t a_input = -1, b_input = -1, bias_input = -1;  // p's input added by the product's bias epilogue, or -1
  FusedProgram rest;  // the elementwise epilogue over the product (no nodes when there is none)
  std::vector<int32_t> rest_input;  // per input of p: its index among rest's inputs, or -1
  std::vector<int32_t> outputs;  // per output of p: -1 for the product, else rest's output index
};
// Cuts matmul program `p` into the product and the rest (throws an Error when has_producer(p) is
// false); `fold_bias` lets an add of a bias vector move into the product (a bias epilogue).
ProducerSplit split_producer(const FusedProgram& p, bool fold_bias);

}  // namespace ember
