// The generated CUDA sources of the linear-algebra family (matmul.cpp, conv.cpp, attention.cpp),
// declared here so the compile tests can build every variant without a GPU. Each function
// returns the source that the JIT compiles after its prelude; the comment names the entry
// points and the key under which the kernel file caches it.
#pragma once

#include <string>
#include <vector>

#include "ember/core/dtype.hpp"

namespace ember::cuda {

// matmul.cpp, key "matmul_int/<dt>": entry "matmul_int", dt in i64, i32, i16, i8, u8.
std::string int_matmul_source(DType dt);

// conv.cpp, key "conv_bias/<dt>": entry "conv_bias" (y[n, c, ...] += bias[c]), dt floating.
std::string conv_bias_source(DType dt);

// attention.cpp: the fused (flash) forward kernel, entry "flash_attn". The mask kind, causality
// and the sizes are run-time arguments; the config fixes the dtype and the padded head dims.
enum class AttnMask : int { none = 0, boolean = 1, additive = 2 };
struct FlashConfig {
  DType dtype = DType::f32;  // f32, f16 or bf16 (q, k, v, out and an additive mask)
  int head_dim = 64;         // E rounded up to a supported size (16, 32, 64, 128, 256)
  int value_dim = 64;        // Ev likewise
  bool tensor_cores = false;  // mma.sync path (f16 / bf16 with the head dims a multiple of 16)
  // tensor-core kernel: 2 (ldmatrix, cp.async double-buffered K / V, 64 rows a block), 3 (v2's
  // source with 128 rows a block over 8 warps, causal warps skipping tiles above the diagonal,
  // masking only on tiles that need it) or 1
  int version = 2;
  int min_blocks = 0;  // v3: __launch_bounds__ blocks per SM; 0: the default (flash_min_blocks)
  std::string key() const;    // "attention/flash/..." (determines the source)
};
std::string flash_attention_source(const FlashConfig& c);
// Rows of queries per block and threads per block of a config (the launch needs them).
int flash_block_rows(const FlashConfig& c);
int flash_min_blocks(const FlashConfig& c);
int flash_threads(const FlashConfig& c);
size_t flash_smem_bytes(const FlashConfig& c);
// Every config the kernel file can produce (for the compile tests).
std::vector<FlashConfig> all_flash_configs();

// attention.cpp, key "attention/softmax/<dt>/<mask dt or none>": entry "attn_softmax" (the
// fallback's masked, scaled row softmax over the materialised scores), dt f32 or f64.
std::string attention_softmax_source(DType dt, AttnMask mask, DType mask_dtype);

// attention.cpp, the flash backward (attention_backward on tensor cores), key
// "attention_backward/flash/<dt>/d<D>/m<mask kind>[/causal]": entries "attn_bwd_prep" (row log-sum-exp and
// rowsum(dout * out)), "attn_bwd_kv" (dk, dv and the fp32 dq accumulator) and "attn_bwd_dq"
// (dq from the accumulator). f16 / bf16, E == Ev == D in {32, 64, 128}; 32 * warps() threads a
// block (version 1: 4 warps, 64 keys a kv block / 64 rows a prep block; version 2: 8 warps,
// 128 keys / 128 rows, mask arithmetic only where needed, dq added with red.global.add.v2.f32).
struct FlashBackwardConfig {
  DType dtype = DType::f16;  // q, k, v, out, dout and an additive mask
  int head_dim = 64;
  AttnMask mask = AttnMask::none;
  bool causal = false;
  int min_blocks = 0;  // __launch_bounds__ blocks per SM of attn_bwd_kv; 0: the default for D
  int version = 1;
  int query_rows = 0;  // query rows per attn_bwd_kv step: v2 with D = 64 takes 32 unless this is 64
  int warps() const { return version == 2 ? 8 : 4; }
  std::string key() const;
};
int flash_backward_min_blocks(const FlashBackwardConfig& c);
// Keys per attn_bwd_kv block and query rows per attn_bwd_prep block (both 16 * warps()).
int flash_backward_block_keys(const FlashBackwardConfig& c);
std::string flash_backward_source(const FlashBackwardConfig& c);
// Dynamic shared memory of attn_bwd_prep (kernel 0) and attn_bwd_kv (kernel 1).
size_t flash_backward_smem_bytes(const FlashBackwardConfig& c, int kernel);
std::vector<FlashBackwardConfig> all_flash_backward_configs();

// attention.cpp, key "attention_backward/ds/<dt>": entry "attn_bwd_ds" (the materialised
// backward's dS = P (dP - rowsum(P dP)) scale, in place), dt f32 or f64.
std::string attention_backward_ds_source(DType dt);

}  // namespace ember::cuda
