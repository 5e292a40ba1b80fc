// The freestanding recurrent layers: see include/ember/kernels/rnn.hpp.
#include "ember/kernels/rnn.hpp"

#include "ember/kernels/elementwise.hpp"

namespace ember::kernels {

namespace {
// out[g] = bias[g] + dot(w[g, :], v) for g < rows.
void gate_products(int32_t rows, int32_t cols, const float* w, const float* v, const float* bias, float* out) {
  for (int32_t g = 0; g < rows; ++g) {
    float acc = bias ? bias[g] : 0.0f;
    const float* w_g = w + g * cols;
    for (int32_t i = 0; i < cols; ++i) acc += w_g[i] * v[i];
    out[g] = acc;
  }
}

void copy_or_zero(int32_t n, const float* src, float* dst) {
  for (int32_t i = 0; i < n; ++i) dst[i] = src ? src[i] : 0.0f;
}
}  // namespace

void lstm_f32(const RnnShape& s, const float* x, const float* w, const float* r, const float* bias, const float* h0,
              const float* c0, float* y, float* h, float* c, float* scratch) {
  const int32_t H = s.hidden_size, B = s.batch, I = s.input_size;
  copy_or_zero(B * H, h0, h);
  copy_or_zero(B * H, c0, c);
  float* gates = scratch;  // [4H]: i, o, f, c
  for (int32_t t = 0; t < s.seq_length; ++t)
    for (int32_t b = 0; b < B; ++b) {
      float* h_b = h + b * H;
      float* c_b = c + b * H;
      gate_products(4 * H, I, w, x + (t * B + b) * I, bias, gates);
      for (int32_t g = 0; g < 4 * H; ++g) {
        float acc = bias ? bias[4 * H + g] : 0.0f;
        const float* r_g = r + g * H;
        for (int32_t k = 0; k < H; ++k) acc += r_g[k] * h_b[k];
        gates[g] += acc;
      }
      for (int32_t k = 0; k < H; ++k) {
        const float i_gate = sigmoid_f32(gates[k]), o_gate = sigmoid_f32(gates[H + k]);
        const float f_gate = sigmoid_f32(gates[2 * H + k]), candidate = tanh_f32(gates[3 * H + k]);
        c_b[k] = f_gate * c_b[k] + i_gate * candidate;
        h_b[k] = o_gate * tanh_f32(c_b[k]);
      }
      if (y)
        for (int32_t k = 0; k < H; ++k) y[(t * B + b) * H + k] = h_b[k];
    }
}

void gru_f32(const RnnShape& s, bool linear_before_reset, const float* x, const float* w, const float* r,
             const float* bias, const float* h0, float* y, float* h, float* scratch) {
  const int32_t H = s.hidden_size, B = s.batch, I = s.input_size;
  copy_or_zero(B * H, h0, h);
  float* from_x = scratch;           // [3H]: x W^T + Wb, gates z, r, h
  float* from_h = scratch + 3 * H;   // [3H]: h R^T + Rb (z, r; h when linear_before_reset)
  float* reset_h = scratch + 6 * H;  // [H]: r * h (without linear_before_reset)
  const float* r_bias = bias ? bias + 3 * H : nullptr;
  for (int32_t t = 0; t < s.seq_length; ++t)
    for (int32_t b = 0; b < B; ++b) {
      float* h_b = h + b * H;
      gate_products(3 * H, I, w, x + (t * B + b) * I, bias, from_x);
      gate_products(linear_before_reset ? 3 * H : 2 * H, H, r, h_b, r_bias, from_h);
      if (!linear_before_reset) {
        for (int32_t k = 0; k < H; ++k) reset_h[k] = sigmoid_f32(from_x[H + k] + from_h[H + k]) * h_b[k];
        gate_products(H, H, r + 2 * H * H, reset_h, r_bias ? r_bias + 2 * H : nullptr, from_h + 2 * H);
      }
      for (int32_t k = 0; k < H; ++k) {
        const float z = sigmoid_f32(from_x[k] + from_h[k]);
        const float reset = sigmoid_f32(from_x[H + k] + from_h[H + k]);
        const float candidate =
            tanh_f32(from_x[2 * H + k] + (linear_before_reset ? reset * from_h[2 * H + k] : from_h[2 * H + k]));
        h_b[k] = (1.0f - z) * candidate + z * h_b[k];
      }
      if (y)
        for (int32_t k = 0; k < H; ++k) y[(t * B + b) * H + k] = h_b[k];
    }
}

}  // namespace ember::kernels
