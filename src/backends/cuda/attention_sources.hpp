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
  std::string key() const;    // "attention/flash/..." (determines the source)
};
std::string flash_attention_source(const FlashConfig& c);
// Rows of queries per block and threads per block of a config (the launch needs them).
int flash_block_rows(const FlashConfig& c);
int flash_threads(const FlashConfig& c);
size_t flash_smem_bytes(const FlashConfig& c);
// Every config the kernel file can produce (for the compile tests).
std::vector<FlashConfig> all_flash_configs();

// attention.cpp, key "attention/softmax/<dt>/<mask dt or none>": entry "attn_softmax" (the
// fallback's masked, scaled row softmax over the materialised scores), dt f32 or f64.
std::string attention_softmax_source(DType dt, AttnMask mask, DType mask_dtype);

}  // namespace ember::cuda
