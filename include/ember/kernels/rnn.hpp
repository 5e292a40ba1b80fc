// Freestanding recurrent layers over raw float32 pointers, as ONNX defines them: one layer, one
// direction (forward), default activations (sigmoid, tanh). Weights in ONNX's layout (gates
// i, o, f, c for the LSTM; z, r, h for the GRU). The caller passes the scratch memory.
//
//   # float x[5 * 1 * 3] = {}, w[4 * 2 * 3] = {}, r[4 * 2 * 2] = {}, y[5 * 1 * 2], h[2], c[2], scratch[8];
//   ember::kernels::RnnShape s{.seq_length = 5, .batch = 1, .input_size = 3, .hidden_size = 2};
//   ember::kernels::lstm_f32(s, x, w, r, nullptr, nullptr, nullptr, y, h, c, scratch);
#pragma once

#include <cstdint>

#include "ember/core/config.hpp"

namespace ember::kernels {

// The sizes of a recurrent layer's run.
struct RnnShape {
  int32_t seq_length = 1;   // time steps
  int32_t batch = 1;        // independent sequences
  int32_t input_size = 1;   // features of each step's input
  int32_t hidden_size = 1;  // H: features of the hidden state
};

// Floats of scratch lstm_f32 needs: 4 * hidden_size.
inline constexpr int32_t lstm_scratch_floats(const RnnShape& s) { return 4 * s.hidden_size; }
// Floats of scratch gru_f32 needs: 7 * hidden_size.
inline constexpr int32_t gru_scratch_floats(const RnnShape& s) { return 7 * s.hidden_size; }

// ONNX LSTM: x [seq, batch, input], w [4H, input], r [4H, H], bias [8H] (Wb then Rb; null: 0),
// h0 and c0 [batch, H] (null: 0). Writes y [seq, batch, H] when not null and the final states to
// h and c [batch, H] (which also hold the running state). No buffer may overlap another.
void lstm_f32(const RnnShape& shape, const float* x, const float* w, const float* r, const float* bias, const float* h0,
              const float* c0, float* y, float* h, float* c, float* scratch);
// ONNX GRU: as lstm_f32 with 3 gates (w [3H, input], r [3H, H], bias [6H]) and no cell state;
// linear_before_reset as the ONNX attribute (PyTorch exports 1).
void gru_f32(const RnnShape& shape, bool linear_before_reset, const float* x, const float* w, const float* r,
             const float* bias, const float* h0, float* y, float* h, float* scratch);

}  // namespace ember::kernels
