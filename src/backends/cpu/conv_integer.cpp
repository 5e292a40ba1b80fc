// The conv_integer op on the cpu backend (conv_integer.hpp): im2col of the bytes of x, then the
// int8 GEMM of qgemm.cpp per image and channel group.
#include "conv_integer.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu_backend.hpp"
#include "cpu_features.hpp"
#include "gemm.hpp"
#include "qgemm.hpp"
#include "thread_pool.hpp"

namespace ember::cpu {
namespace {

constexpr int64_t kDefaultColBytes = int64_t(16) << 20;  // the largest im2col block

// Columns [r0 OW, r1 OW) of the im2col matrix of one image's channel group (xg: its first channel)
// into col (rows `width` apart): row (c, kd, kh, kw), column (od, oh, ow) holds
// x[c, od sd - pd + kd dd, oh sh - ph + kh dh, ow sw - pw + kw dw], or zp outside x.
void im2col(const ConvIntegerGeometry& g, int64_t Cg, const uint8_t* xg, uint8_t zp, int64_t r0, int64_t r1,
            uint8_t* col, bool threaded) {
  const auto &in = g.in, &k = g.kernel, &s = g.stride, &p = g.pad, &d = g.dilation;
  const int64_t OH = g.out[1], OW = g.out[2], kvol = k[0] * k[1] * k[2], width = (r1 - r0) * OW;
  auto rows = [&](int64_t k0, int64_t k1) {
    for (int64_t kr = k0; kr < k1; ++kr) {
      const int64_t c = kr / kvol, t = kr % kvol, a = t / (k[1] * k[2]), b = (t / k[2]) % k[1], e = t % k[2];
      const uint8_t* xc = xg + c * in[0] * in[1] * in[2];
      uint8_t* dst = col + kr * width;
      // the outputs ow whose tap iw = ow sw + off lies in [0, in[2]): [ow0, ow1)
      const int64_t off = e * d[2] - p[2];
      const int64_t ow0 = std::min(OW, off >= 0 ? 0 : (-off + s[2] - 1) / s[2]);
      const int64_t ow1 = std::max(ow0, std::min(OW, in[2] - off <= 0 ? 0 : (in[2] - off + s[2] - 1) / s[2]));
      for (int64_t r = r0; r < r1; ++r, dst += OW) {
        const int64_t id = (r / OH) * s[0] - p[0] + a * d[0], ih = (r % OH) * s[1] - p[1] + b * d[1];
        if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1]) {
          std::memset(dst, zp, size_t(OW));
          continue;
        }
        const uint8_t* xrow = xc + (id * in[1] + ih) * in[2];
        for (int64_t ow = 0; ow < ow0; ++ow) dst[ow] = zp;  // a pad or two: no call
        if (s[2] == 1) {
          std::memcpy(dst + ow0, xrow + ow0 + off, size_t(ow1 - ow0));
        } else {
          for (int64_t ow = ow0; ow < ow1; ++ow) dst[ow] = xrow[ow * s[2] + off];
        }
        for (int64_t ow = ow1; ow < OW; ++ow) dst[ow] = zp;
      }
    }
  };
  const int64_t K = Cg * kvol;
  if (threaded)
    parallel_for(0, K, std::max<int64_t>(1, 16384 / std::max<int64_t>(width, 1)), rows);
  else
    rows(0, K);
}

// ---- the AVX-512 VNNI path: the group's weights packed once per call, the im2col columns packed
// a 32-column panel at a time straight into the micro-kernel's layout (qgemm.hpp), the zero points
// and the +-128 shifts corrected by row and column sums as qgemm.cpp does.

// A group's weights as qgemm_kernel_vnni's A panels (w + 128 for i8 w: u8), and each row's sum.
struct PackedWeights {
  std::vector<uint8_t> panels;  // per panel of kVnniMR rows: KG groups of kVnniMR x 4 bytes
  std::vector<uint32_t> rowsum;
};

PackedWeights pack_weights(const uint8_t* w, bool w_signed, int64_t rows, int64_t K) {
  constexpr int MR = detail::kVnniMR;
  const int64_t KG = (K + 3) / 4, mp = (rows + MR - 1) / MR;
  PackedWeights pw{std::vector<uint8_t>(size_t(mp * KG * MR * 4), 0), std::vector<uint32_t>(size_t(rows), 0)};
  const uint8_t flip = w_signed ? 0x80 : 0;
  for (int64_t i = 0; i < rows; ++i) {
    uint8_t* dst = pw.panels.data() + (i / MR) * KG * MR * 4 + (i % MR) * 4;
    uint32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      const uint8_t v = w[i * K + k] ^ flip;
      dst[(k / 4) * MR * 4 + k % 4] = v;
      sum += v;
    }
    pw.rowsum[size_t(i)] = sum;
  }
  return pw;
}

// C [rows, width] (rows ldc apart) = the product of the packed weights and the columns of b
// (K x width, rows ldb apart), zero points corrected: alpha_i = w_zp[i] (+128 for i8 w), beta =
// x_zp (-128 for u8 x), C = sum A'B' - beta rowsum_i - alpha_i colsum_j + K alpha_i beta (mod 2^32).
void vnni_product(const PackedWeights& pw, int64_t rows, int64_t K, const int32_t* w_zp, bool w_signed,
                  const uint8_t* b, int64_t ldb, int64_t width, bool x_signed, int32_t x_zp, int32_t* c, int64_t ldc) {
  constexpr int MR = detail::kVnniMR, NR = detail::kVnniNR;
  const int64_t KG = (K + 3) / 4, mp = (rows + MR - 1) / MR, np = (width + NR - 1) / NR;
  const uint32_t beta = uint32_t(x_zp) + (x_signed ? 0u : uint32_t(-128)), kk = uint32_t(K);
  parallel_for(0, np, 1, [&](int64_t q0, int64_t q1) {
    std::vector<int8_t> bp(size_t(KG * NR * 4));
    int32_t colsum[NR];
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t j0 = q * NR;
      const int n = int(std::min<int64_t>(NR, width - j0));
      detail::conv_integer_pack_columns_vnni(b, ldb, K, j0, n, x_signed, bp.data(), colsum);
      for (int64_t qm = 0; qm < mp; ++qm) {
        const int m = int(std::min<int64_t>(MR, rows - qm * MR));
        int32_t* ct = c + qm * MR * ldc + j0;
        detail::qgemm_kernel_vnni(KG, pw.panels.data() + qm * KG * MR * 4, bp.data(), ct, ldc, m, n, false);
        for (int r = 0; r < m; ++r) {
          const int64_t i = qm * MR + r;
          const uint32_t alpha = uint32_t(w_zp[i]) + (w_signed ? 128u : 0u);
          const uint32_t row_term = kk * alpha * beta - beta * pw.rowsum[size_t(i)];
          uint32_t* cr = reinterpret_cast<uint32_t*>(ct + r * ldc);
          for (int j = 0; j < n; ++j) cr[j] += row_term - alpha * uint32_t(colsum[j]);
        }
      }
    }
  });
}

}  // namespace

namespace detail {

void conv_integer_u8i8_isa(int isa, const ConvIntegerGeometry& g, const uint8_t* x, bool x_signed, const uint8_t* w,
                           bool w_signed, int32_t x_zp, const int32_t* w_zp, int32_t* y, int64_t col_bytes) {
  const int64_t Cg = g.C / g.groups, Mg = g.M / g.groups;
  const int64_t kvol = g.kernel[0] * g.kernel[1] * g.kernel[2], K = Cg * kvol;
  const int64_t in_vol = g.in[0] * g.in[1] * g.in[2], rows = g.out[0] * g.out[1], OW = g.out[2], P = rows * OW;
  if (g.N == 0 || g.M == 0 || P == 0) return;
  const bool vnni = K > 0 && std::min(isa, qgemm_best_isa()) >= kIsaAvx512 && features().avx512vnni;
  // a 1x1 kernel with stride 1 and no padding: x's channels are already the GEMM's B rows
  bool direct = kvol == 1;
  for (int i = 0; i < 3; ++i) direct = direct && g.stride[size_t(i)] == 1 && g.pad[size_t(i)] == 0;
  if (col_bytes < 0) col_bytes = kDefaultColBytes;
  const int64_t block_rows = direct ? rows : std::clamp<int64_t>(col_bytes / std::max<int64_t>(K * OW, 1), 1, rows);
  const std::vector<int32_t> zb(vnni ? 0 : size_t(direct ? P : block_rows * OW), x_zp);
  const uint8_t zp_byte = uint8_t(x_zp);
  std::vector<PackedWeights> packed;
  if (vnni)
    for (int64_t gi = 0; gi < g.groups; ++gi) packed.push_back(pack_weights(w + gi * Mg * K, w_signed, Mg, K));
  // C [Mg, width] of group gi (rows P apart) from B (K x width, rows ldb apart)
  auto product = [&](int64_t gi, const uint8_t* b, int64_t ldb, int64_t width, int32_t* c) {
    if (vnni)
      vnni_product(packed[size_t(gi)], Mg, K, w_zp + gi * Mg, w_signed, b, ldb, width, x_signed, x_zp, c, P);
    else
      qgemm_u8i8_isa(isa, Mg, width, K, w + gi * Mg * K, K, w_signed, b, ldb, x_signed, w_zp + gi * Mg, zb.data(), c,
                     P);
  };
  // one (image, group): its product(s), threaded inside unless called from a parallel chunk
  auto item = [&](int64_t it, bool threaded, std::vector<uint8_t>& col) {
    const int64_t n = it / g.groups, gi = it % g.groups;
    const uint8_t* xg = x + (n * g.C + gi * Cg) * in_vol;
    int32_t* yg = y + (n * g.M + gi * Mg) * P;
    if (direct) return product(gi, xg, P, P, yg);
    for (int64_t r0 = 0; r0 < rows; r0 += block_rows) {
      const int64_t r1 = std::min(rows, r0 + block_rows), width = (r1 - r0) * OW;
      col.resize(size_t(K * width));
      im2col(g, Cg, xg, zp_byte, r0, r1, col.data(), threaded);
      product(gi, col.data(), width, width, yg + r0 * OW);
    }
  };
  const int64_t items = g.N * g.groups, threads = ThreadPool::global().size();
  // many small products (depthwise, grouped, a batch of small images): one (image, group) a task
  if (threads > 1 && items >= 2 * threads && Mg * K * P < (int64_t(1) << 24)) {
    parallel_for(0, items, 1, [&](int64_t i0, int64_t i1) {
      std::vector<uint8_t> col;
      for (int64_t it = i0; it < i1; ++it) item(it, false, col);
    });
    return;
  }
  std::vector<uint8_t> col;
  for (int64_t it = 0; it < items; ++it) item(it, true, col);
}

}  // namespace detail

void conv_integer_u8i8(const ConvIntegerGeometry& g, const uint8_t* x, bool x_signed, const uint8_t* w,
                       bool w_signed, int32_t x_zp, const int32_t* w_zp, int32_t* y) {
  detail::conv_integer_u8i8_isa(detail::kIsaAvx512, g, x, x_signed, w, w_signed, x_zp, w_zp, y);
}

namespace {

// A zero point's value(s) as i32: `count` values (one repeated, or one each); zeros when absent.
std::vector<int32_t> zero_point_values(const Op& op, size_t i, int64_t count) {
  std::vector<int32_t> z(size_t(count), 0);
  if (op.inputs.size() <= i || !op.inputs[i]) return z;
  auto t = contiguous(op.inputs[i]);
  const uint8_t* p = t->data<uint8_t>();
  const bool is_signed = t->dtype() == DType::i8;
  for (int64_t k = 0; k < count; ++k) {
    const uint8_t v = p[t->numel() == 1 ? 0 : k];
    z[size_t(k)] = is_signed ? int32_t(int8_t(v)) : int32_t(v);
  }
  return z;
}

std::vector<PrimitivePtr> conv_integer_kernel(CpuBackend&, Op& op) {
  auto out = alloc(op.outputs[0]);
  if (out->numel() == 0) return {out};
  const auto& a = op.attr<ConvAttrs>();
  auto x = contiguous(op.inputs[0]);
  auto w = contiguous(op.inputs[1]);
  const Shape &xs = x->shape(), &ws = w->shape(), &ys = op.outputs[0].shape;
  const int nd = xs.rank() - 2, lead = 3 - nd;  // spatial dim i is geometry dim lead + i
  ConvIntegerGeometry g;
  g.N = xs[0];
  g.C = xs[1];
  g.M = ws[0];
  g.groups = a.groups;
  for (int i = 0; i < nd; ++i) {
    const size_t j = size_t(lead + i);
    g.in[j] = xs[2 + i];
    g.kernel[j] = ws[2 + i];
    g.out[j] = ys[2 + i];
    g.stride[j] = a.stride[size_t(i)];
    g.pad[j] = a.padding[size_t(i)];  // the begin side; the end side only bounds the output size
    g.dilation[j] = a.dilation[size_t(i)];
  }
  const std::vector<int32_t> x_zp = zero_point_values(op, 2, 1), w_zp = zero_point_values(op, 3, g.M);
  conv_integer_u8i8(g, x->data<uint8_t>(), x->dtype() == DType::i8, w->data<uint8_t>(), w->dtype() == DType::i8,
                    x_zp[0], w_zp.data(), out->data<int32_t>());
  return {out};
}

}  // namespace

void register_conv_integer_kernels(KernelTable& t) { t[size_t(OpKind::conv_integer)] = conv_integer_kernel; }

}  // namespace ember::cpu
