// The generated CUDA sources of the reduction-like families (reduce.cpp, softmax.cpp, norm.cpp,
// scan.cpp, sort.cpp), exposed so that tests can compile every variant without a GPU
// (tests/backends/cuda/reduce_compile_test.cpp). Each *_variants() function lists every
// (key, source) pair its file can hand to Jit::get.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/dtype.hpp"
#include "ember/core/op.hpp"
#include "jit.hpp"

namespace ember::cuda {

// Device helpers shared by every source of these files (warp shuffles of any scalar type,
// float/double math overloads). Defined in reduce.cpp.
const std::string& reduce_family_helpers();

// The smallest power of two >= v (v >= 1).
int64_t pow2_ceil(int64_t v);

// The most elements of a row one thread of the softmax / layer-norm row kernels holds.
constexpr int kMaxRegElems = 32;

// How softmax and layer norm spread a row of `items` items (16-byte vectors of W elements when
// `vec`, else single elements) over a group of `tpr` threads (a power of two up to 1024), each
// holding `nv` items (a power of two; the row is too long for registers when nv * W exceeds
// kMaxRegElems).
struct RowLayout {
  int64_t tpr;
  int64_t nv;
};
RowLayout row_layout(int64_t items, int W, bool vec);

// reduce.cpp: sum mean prod max min any all var std norm logsumexp argmax argmin max_dim
// min_dim. `norm_kind` (norm only): 0 count nonzero, 1 sum |x|, 2 euclidean, 3 max |x|,
// 4 min |x|, 5 general p.
std::string reduce_key(OpKind op, DType dt, int norm_kind = 0);
std::string reduce_source(OpKind op, DType dt, int norm_kind = 0);
std::vector<KernelSource> reduce_variants();

// softmax.cpp: softmax / log_softmax (one module per dtype holds both); cross_entropy and its
// backward (another module per dtype). softmax_variants() lists both.
std::string softmax_source(DType dt);
std::string cross_entropy_source(DType dt);
std::vector<KernelSource> softmax_variants();

// norm.cpp: layer_norm, its backward and batch_norm.
std::string layer_norm_source(DType dt);
std::string layer_norm_backward_source(DType dt);
std::string batch_norm_source(DType dt);
std::vector<KernelSource> norm_variants();

// scan.cpp: cumsum cumprod cummax cummin.
std::string scan_source(OpKind op, DType dt);
std::vector<KernelSource> scan_variants();

// sort.cpp: sort and topk (one module per dtype).
std::string sort_source(DType dt);
std::vector<KernelSource> sort_variants();

}  // namespace ember::cuda
