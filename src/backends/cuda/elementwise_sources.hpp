// The generated CUDA sources of the elementwise (elementwise.cpp), creation (creation.cpp) and
// layout (layout.cpp) kernel families, exposed so that tests can compile every variant with
// compile_cubin() on machines without a GPU.
//
// Every source is compiled after the JIT prelude (jit.cpp). A key names its source uniquely and
// starts with the op name ("add/f32", "full/b4", "pad/b2", "random_normal/f16").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/op.hpp"
#include "jit.hpp"

namespace ember::cuda {

// ---- elementwise.cpp ----

// Scalar attributes every elementwise kernel takes by value (same layout as the kernels'
// `Attr`): clamp (a, b = min, max; ia, ib = integer bounds), leaky_relu (a = slope), softplus
// (a = beta, b = threshold), pow (ia = 1 when the exponent is one broadcast value).
struct EwAttr {
  double a = 0, b = 0;
  int64_t ia = 0, ib = 0;
};

// The ops with a generated elementwise kernel: the Unary, FloatUnary, Predicate, BitwiseUnary,
// Binary, FloatBinary, Compare, Bitwise, Where and Ternary families, and prelu.
std::vector<OpKind> elementwise_ops();
// The dtypes the kernel of `kind` accepts: of its inputs (where: of its values, the condition
// is bool), by the family's rule and the CPU backend's restrictions (div and leaky_relu only on
// floating types, shifts not on bool).
std::vector<DType> elementwise_dtypes(OpKind kind);
bool elementwise_supports(OpKind kind, DType dt);
// "add/f32": the key of the kernel of `kind` on inputs of dtype `dt`.
std::string elementwise_key(OpKind kind, DType dt);
// Its source, with the entries flat, flat_vec, strided_vec32, strided32 and strided64 (prelu:
// prelu32, prelu64). Throws Error when the dtype is not supported.
std::string elementwise_source(OpKind kind, DType dt);
// Every (key, source) pair the elementwise family can generate.
std::vector<KernelSource> elementwise_kernel_sources();
// The pieces of a source, for generators that combine several ops in one kernel (fused.cpp):
// the code every elementwise source starts with (the Attr struct and the helpers), and the
// typedefs T0, T1, T2, O, C plus the device function `O ew_op(T0, T1, T2, const Attr&)` of
// (kind, dt), to be wrapped in a namespace per op.
const char* elementwise_common_source();
std::string elementwise_op_function(OpKind kind, DType dt);
// The attributes of an elementwise op on inputs of dtype `dt` as its kernel takes them
// (scalar_exponent: pow's exponent is one value broadcast over the base).
EwAttr elementwise_attr(OpKind kind, const OpAttrs& attrs, DType dt, bool scalar_exponent);

// ---- fused.cpp ----

// The kernel of a fused elementwise group (entries fused_vec, fused32, fused64). `modes` has
// one letter per input: 'd' dense (contiguous, the domain's shape), 's' one value broadcast,
// 'g' read through its strides.
std::string fused_kernel_source(const FusedProgram& p, const std::string& modes);
// The kernel of a row program (FusedProgram::reduce_from >= 0): entry fused_rows, one block of
// `threads` threads per row; each thread keeps `items` elements of every per-element value in
// registers across the passes (0: the passes recompute them). `modes` has two letters per input:
// how the full level reads it (d dense, c per column, r per row, s one value, g strided, - not
// read) and how the reduced level does (r, s, g, -). With `vec` > 1 (items a multiple of it, cols
// too, the dense and per-column inputs and the outputs aligned to vec elements) each thread takes
// vectors of `vec` consecutive elements and reads and writes them whole. `exact`: the caller
// guarantees cols == threads * items, so the kernel tests no column against cols.
std::string fused_rows_source(const FusedProgram& p, const std::string& modes, int threads, int items, int vec = 1,
                              bool exact = false);
// The kernels of a column program (FusedProgram::reduce_to > 0): entries cols_sweep<s> (a pass
// over the rows, 32 x 8 threads a block, a block per 32 columns and chunk of rows), cols_epi<k>
// (per column: the chunks merged in order, the pass ended, the epilogue) and cols_out (full
// outputs that read per-column values). `modes` as for rows, the full level's 'c' being a value
// per column (a[c]) and 'r' one per row (a[r]), the reduced level's 'r' dense over the columns.
std::string fused_cols_source(const FusedProgram& p, const std::string& modes);

// ---- creation.cpp ----

// Every (key, source) pair the creation family can generate (full, arange, linspace, eye,
// random_*), and the generators themselves.
std::vector<KernelSource> creation_kernel_sources();
std::string fill_source(size_t elem_bytes);        // "full/b<N>": fill, fill16
std::string arange_source(DType dt);               // "arange/<dt>": arange
std::string linspace_source(DType dt);             // "linspace/<dt>": linspace
std::string eye_source(size_t elem_bytes);         // "eye/b<N>": eye
std::string random_source(OpKind kind, DType dt);  // "random_uniform/<dt>", ...: gen

// ---- layout.cpp ----

// Every (key, source) pair the layout family can generate (pad, tril, triu; flip, roll, cat
// and slice_assign are copies through copy_view), and the generators.
std::vector<KernelSource> layout_kernel_sources();
std::string pad_source(size_t elem_bytes);              // "pad/b<N>": pad32, pad64
std::string tri_source(bool lower, size_t elem_bytes);  // "tril/b<N>", "triu/b<N>": contig, strided

// ---- copy.cpp ----

// Every (key, source) pair copy_view can generate: "copy/<to>/<from>" (linear, strided32,
// strided64, tiles) for every pair of dtypes, and "copy/rows16_batch".
std::vector<KernelSource> copy_kernel_sources();

}  // namespace ember::cuda
