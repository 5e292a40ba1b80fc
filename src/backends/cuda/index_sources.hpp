// Generated CUDA sources of the index (index.cpp), pool (pool.cpp) and interpolate
// (interpolate.cpp) kernel families, declared here so that tests can compile every variant
// without a GPU. Each function returns the source of one module (compiled after the JIT
// prelude); the cache key of a module is "<op>/<the arguments>" as built by the kernel files.
#pragma once

#include <string>

#include "ember/core/dtype.hpp"
#include "ember/core/op.hpp"

namespace ember::cuda {

// ---- index.cpp ----
// The element type of pure data movement: the unsigned integer type of `bytes` (1, 2, 4, 8).
const char* bits_type(size_t bytes);
// gather / index_select: out[i] = x[offset(i) + index[i] * xsd] ("gather32", "gather64").
std::string gather_source(size_t elem_bytes, DType index);
// scatter / index_copy (add = false, any element size: `dt` only selects the size) and
// scatter_add / index_add (add = true, the real dtype): "column32/64" (one thread per column
// along dim, in order), "elem_add32/64" (atomics), "claim32/64" + "place32/64" (last write wins).
std::string scatter_source(DType dt, DType index, bool add);
// Validation of every element of a 1-d index: "check".
std::string index_check_source(DType index);
// nonzero over a tensor of dtype `dt`: "count32/64", "write32/64" (and the shared "scan").
std::string nonzero_source(DType dt);
// masked_select of elements of `elem_bytes` bytes: "count32/64", "write32/64", "scan".
std::string masked_select_source(size_t elem_bytes);

// ---- pool.cpp ----
enum class PoolKernel { avg, max, max_values, adaptive_avg };  // max_values: max_pool without indices
// The window of avg_pool / max_pool in 3 spatial dims (1-d and 2-d problems lifted: kernel 1,
// stride 1, no padding in the leading dims). Their kernels are compiled for one window, so that
// its taps unroll and its divisions are by constants.
struct PoolWindow {
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, p[3] = {0, 0, 0}, d[3] = {1, 1, 1};
  std::string key() const;  // "k1x3x3/s1x2x2/p0x1x1/d1x1x1"
};
// Device code shared by the pool and interpolate kernels (pool.cpp): GRID_LOOP and decode(),
// which splits an output index into plane and three spatial coordinates.
const char* spatial_kernel_helpers();
// "pool32", "pool64" (one thread per output) and, for adaptive_avg, "warp32/64", "block32/64"
// (a warp or a block per output, for large windows). `w` is the window of avg and max.
std::string pool_source(DType dt, PoolKernel kind, const PoolWindow& w = {});

// ---- interpolate.cpp ----
// nearest: by element size (dt selects it); linear / cubic: the floating dtype. "interp32/64".
std::string interpolate_source(DType dt, InterpMode mode);

}  // namespace ember::cuda
