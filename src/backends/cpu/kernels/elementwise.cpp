// The freestanding elementwise kernels: see include/ember/kernels/elementwise.hpp.
#include "ember/kernels/elementwise.hpp"

#include "ember/core/bit.hpp"

namespace ember::kernels {

float exp_f32(float x) {
  if (x != x) return x;
  if (x > 88.72283f) return kInfinity;
  if (x < -87.33654f) return 0.0f;
  // x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, Cody and Waite), then e^r by its Taylor
  // series to degree 7 (the remainder is below float32's rounding) and 2^n from the exponent bits.
  const float t = x * 1.44269504f;
  int32_t n = int32_t(t + (t >= 0.0f ? 0.5f : -0.5f));
  float r = x - float(n) * 0.693359375f;
  r = r - float(n) * -2.12194440e-4f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  if (n > 127) {  // 2^128 is not a float; e^x still is up to 88.72
    p *= 2.0f;
    --n;
  }
  return p * bit_cast<float>(uint32_t(n + 127) << 23);
}

float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

float tanh_f32(float x) {
  const float a = x < 0.0f ? -x : x;
  if (a > 9.0f) return x < 0.0f ? -1.0f : 1.0f;
  if (a < 0.0625f) {  // (e - 1) / (e + 1) would cancel; the series is exact to float here
    const float x2 = x * x;
    return x * (1.0f - x2 * (1.0f / 3.0f - x2 * (2.0f / 15.0f)));
  }
  const float e = exp_f32(2.0f * x);
  return (e - 1.0f) / (e + 1.0f);
}

void clamp_f32(int32_t n, const float* x, float* y, Clamp clamp) {
  for (int32_t i = 0; i < n; ++i) {
    const float v = x[i] < clamp.lo ? clamp.lo : x[i];
    y[i] = v > clamp.hi ? clamp.hi : v;
  }
}

void sigmoid_f32(int32_t n, const float* x, float* y) {
  for (int32_t i = 0; i < n; ++i) y[i] = sigmoid_f32(x[i]);
}

void tanh_f32(int32_t n, const float* x, float* y) {
  for (int32_t i = 0; i < n; ++i) y[i] = tanh_f32(x[i]);
}

void softmax_f32(int32_t rows, int32_t cols, const float* x, float* y) {
  for (int32_t r = 0; r < rows; ++r, x += cols, y += cols) {
    float top = x[0];
    for (int32_t i = 1; i < cols; ++i) top = x[i] > top ? x[i] : top;
    float sum = 0.0f;
    for (int32_t i = 0; i < cols; ++i) {
      y[i] = exp_f32(x[i] - top);
      sum += y[i];
    }
    for (int32_t i = 0; i < cols; ++i) y[i] = y[i] / sum;
  }
}

void softmax_axis_f32(int32_t outer, int32_t n, int32_t inner, const float* x, float* y) {
  for (int32_t o = 0; o < outer; ++o)
    for (int32_t i = 0; i < inner; ++i) {
      const float* xs = x + o * n * inner + i;
      float* ys = y + o * n * inner + i;
      float top = xs[0];
      for (int32_t k = 1; k < n; ++k) top = xs[k * inner] > top ? xs[k * inner] : top;
      float sum = 0.0f;
      for (int32_t k = 0; k < n; ++k) {
        ys[k * inner] = exp_f32(xs[k * inner] - top);
        sum += ys[k * inner];
      }
      for (int32_t k = 0; k < n; ++k) ys[k * inner] = ys[k * inner] / sum;
    }
}

void add_f32(int32_t n, const float* a, const float* b, float* y, Clamp clamp) {
  for (int32_t i = 0; i < n; ++i) {
    const float v = a[i] + b[i];
    const float lo = v < clamp.lo ? clamp.lo : v;
    y[i] = lo > clamp.hi ? clamp.hi : lo;
  }
}

void add_channel_f32(int32_t outer, int32_t channels, int32_t inner, const float* x, const float* b, float* y,
                     Clamp clamp) {
  for (int32_t o = 0; o < outer; ++o)
    for (int32_t c = 0; c < channels; ++c)
      for (int32_t i = 0; i < inner; ++i, ++x, ++y) {
        const float v = *x + b[c];
        const float lo = v < clamp.lo ? clamp.lo : v;
        *y = lo > clamp.hi ? clamp.hi : lo;
      }
}

void scale_shift_f32(int32_t outer, int32_t channels, int32_t inner, const float* x, const float* scale,
                     const float* shift, float* y, Clamp clamp) {
  for (int32_t o = 0; o < outer; ++o)
    for (int32_t c = 0; c < channels; ++c)
      for (int32_t i = 0; i < inner; ++i, ++x, ++y) {
        const float v = *x * scale[c] + shift[c];
        const float lo = v < clamp.lo ? clamp.lo : v;
        *y = lo > clamp.hi ? clamp.hi : lo;
      }
}

void concat_f32(int32_t outer, int32_t count, const float* const* parts, const int32_t* widths, float* y) {
  for (int32_t o = 0; o < outer; ++o)
    for (int32_t p = 0; p < count; ++p) {
      const float* src = parts[p] + o * widths[p];
      for (int32_t i = 0; i < widths[p]; ++i) *y++ = src[i];
    }
}

void gather_f32(int32_t outer, int32_t axis_size, int32_t inner, int32_t count, const int32_t* indices,
                const float* EMBER_RESTRICT x, float* EMBER_RESTRICT y) {
  for (int32_t o = 0; o < outer; ++o)
    for (int32_t j = 0; j < count; ++j) {
      const float* src = x + (o * axis_size + indices[j]) * inner;
      for (int32_t i = 0; i < inner; ++i) *y++ = src[i];
    }
}

Status transpose_f32(int32_t rank, const int32_t* dims, const int32_t* perm, const float* EMBER_RESTRICT x,
                     float* EMBER_RESTRICT y) {
  if (rank < 1 || rank > kMaxTransposeRank) return fail("transpose", "rank must be 1 to 6");
  int32_t stride[kMaxTransposeRank], out_dims[kMaxTransposeRank], out_stride[kMaxTransposeRank];
  int32_t total = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    stride[i] = total;
    total *= dims[i];
  }
  for (int32_t i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank) return fail("transpose", "perm names an axis out of range");
    out_dims[i] = dims[perm[i]];
    out_stride[i] = stride[perm[i]];  // x's stride along y's axis i
  }
  int32_t index[kMaxTransposeRank] = {};
  int32_t offset = 0;
  for (int32_t n = 0; n < total; ++n) {
    y[n] = x[offset];
    for (int32_t i = rank - 1; i >= 0; --i) {  // the next index of y, odometer style
      offset += out_stride[i];
      if (++index[i] < out_dims[i]) break;
      offset -= out_stride[i] * out_dims[i];
      index[i] = 0;
    }
  }
  return Status::ok;
}

}  // namespace ember::kernels
