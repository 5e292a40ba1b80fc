// Index-heavy and small ONNX ops computed on the host (their inputs are index lists or tiny):
// GatherND, ScatterND, Compress, ReverseSequence, Unique, Det, the window functions, and the
// (de)quantization ops.
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstring>
#include <map>
#include <numbers>
#include <numeric>

#include "ember/tensor/quantized_ops.hpp"
#include "ops.hpp"

namespace ember::onnx::detail {
namespace {

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < v.size(); ++i) p *= v[i];
  return p;
}

DynTensor host_tensor(const TensorData& d, const OpContext& c) { return DynTensor::from_data(d, c.device); }

OpResult gather_nd(OpContext& c) {
  TensorData data = c.in(0).into_data();
  std::vector<int64_t> idx = c.in(1).to_vector<int64_t>();
  const auto& D = data.shape().dims();
  const auto& I = c.in(1).shape().dims();
  size_t b = size_t(c.attr_i("batch_dims", 0));
  if (I.empty()) c.fail("indices must have at least one dim");
  size_t k = size_t(I.back());
  if (b + k > D.size() || b >= I.size()) c.fail("indices do not fit the data");
  for (size_t i = 0; i < b; ++i)
    if (I[i] != D[i]) c.fail("batch dims of data and indices differ");
  int64_t batches = product(D, 0, b), inner = product(D, b + k, D.size()), per_batch = product(D, b, D.size());
  int64_t m = product(I, b, I.size() - 1);
  size_t es = dtype_size(data.dtype());
  std::vector<int64_t> out_shape(I.begin(), I.end() - 1);
  for (size_t i = b + k; i < D.size(); ++i) out_shape.push_back(D[i]);
  TensorData out(Shape(out_shape), data.dtype());
  auto src = data.bytes();
  auto dst = out.bytes();
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t mi = 0; mi < m; ++mi) {
      int64_t off = 0;
      for (size_t j = 0; j < k; ++j) {
        int64_t v = idx[size_t((bi * m + mi) * int64_t(k) + int64_t(j))], n = D[b + j];
        if (v < 0) v += n;
        if (v < 0 || v >= n) c.fail("index " + std::to_string(v) + " out of range");
        off = off * n + v;
      }
      std::memcpy(dst.data() + size_t((bi * m + mi) * inner) * es,
                  src.data() + size_t(bi * per_batch + off * inner) * es, size_t(inner) * es);
    }
  return {host_tensor(out, c)};
}

OpResult scatter_nd(OpContext& c) {
  const DynTensor& x = c.in(0);
  std::vector<double> data = x.into_data().to_doubles();
  std::vector<int64_t> idx = c.in(1).to_vector<int64_t>();
  std::vector<double> upd = c.in(2).into_data().to_doubles();
  const auto& D = x.shape().dims();
  const auto& I = c.in(1).shape().dims();
  std::string red = c.attr_s("reduction", "none");
  if (red != "none" && red != "add" && red != "mul") c.unsupported("reduction '" + red + "'");
  if (I.empty()) c.fail("indices must have at least one dim");
  size_t k = size_t(I.back());
  if (k > D.size()) c.fail("indices do not fit the data");
  int64_t inner = product(D, k, D.size()), m = product(I, 0, I.size() - 1);
  if (int64_t(upd.size()) != m * inner) c.fail("updates do not match indices and data");
  for (int64_t mi = 0; mi < m; ++mi) {
    int64_t off = 0;
    for (size_t j = 0; j < k; ++j) {
      int64_t v = idx[size_t(mi * int64_t(k) + int64_t(j))], n = D[j];
      if (v < 0) v += n;
      if (v < 0 || v >= n) c.fail("index out of range");
      off = off * n + v;
    }
    for (int64_t e = 0; e < inner; ++e) {
      double& d = data[size_t(off * inner + e)];
      double u = upd[size_t(mi * inner + e)];
      d = red == "add" ? d + u : red == "mul" ? d * u : u;
    }
  }
  return {host_tensor(TensorData::from_doubles(data, x.shape(), x.dtype()), c)};
}

OpResult reverse_sequence(OpContext& c) {
  TensorData data = c.in(0).into_data();
  std::vector<int64_t> lens = c.in(1).to_vector<int64_t>();
  const auto& D = data.shape().dims();
  int r = int(D.size());
  int ba = normalize_axis(c.attr_i("batch_axis", 1), r, c), ta = normalize_axis(c.attr_i("time_axis", 0), r, c);
  TensorData out = data;
  size_t es = dtype_size(data.dtype());
  std::vector<int64_t> strides(size_t(r), 1);
  for (int d = r - 2; d >= 0; --d) strides[size_t(d)] = strides[size_t(d + 1)] * D[size_t(d + 1)];
  std::vector<int64_t> pos(size_t(r), 0);
  for (int64_t flat = 0; flat < data.numel(); ++flat) {
    int64_t rem = flat;
    for (int d = 0; d < r; ++d) {
      pos[size_t(d)] = rem / strides[size_t(d)];
      rem %= strides[size_t(d)];
    }
    if (pos[size_t(ba)] >= int64_t(lens.size())) c.fail("sequence_lens has too few values");
    int64_t t = pos[size_t(ta)], len = lens[size_t(pos[size_t(ba)])];
    if (len < 0 || len > D[size_t(ta)]) c.fail("sequence length " + std::to_string(len) + " out of range");
    if (t >= len) continue;
    int64_t src = flat + (len - 1 - 2 * t) * strides[size_t(ta)];
    std::memcpy(out.bytes().data() + size_t(flat) * es, data.bytes().data() + size_t(src) * es, es);
  }
  return {host_tensor(out, c)};
}

OpResult unique(OpContext& c) {
  const DynTensor& x = c.in(0);
  bool sorted = c.attr_i("sorted", 1) != 0;
  std::optional<int> axis;
  if (c.attr("axis")) axis = normalize_axis(c.attr_i("axis", 0), x.rank(), c);
  DynTensor src = axis ? movedim(x, *axis, 0) : reshape(x, {x.numel()});
  int64_t n = src.rank() ? src.shape()[0] : 1;
  std::vector<double> v = contiguous(src).into_data().to_doubles();
  int64_t w = n ? int64_t(v.size()) / n : 0;
  auto row = [&](int64_t i) { return std::vector<double>(v.begin() + i * w, v.begin() + (i + 1) * w); };
  std::vector<int64_t> first;                // first occurrence of each unique row, in output order
  std::map<std::vector<double>, int64_t> seen;  // row -> index into first
  std::vector<int64_t> inverse(static_cast<size_t>(n)), counts;
  for (int64_t i = 0; i < n; ++i) {
    auto [it, fresh] = seen.emplace(row(i), int64_t(first.size()));
    if (fresh) {
      first.push_back(i);
      counts.push_back(0);
    }
    inverse[size_t(i)] = it->second;
    ++counts[size_t(it->second)];
  }
  std::vector<int64_t> order(first.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted) std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row(first[size_t(a)]) < row(first[size_t(b)]); });
  std::vector<int64_t> rank_of(order.size()), idx, cnt;
  for (size_t r = 0; r < order.size(); ++r) {
    rank_of[size_t(order[r])] = int64_t(r);
    idx.push_back(first[size_t(order[r])]);
    cnt.push_back(counts[size_t(order[r])]);
  }
  for (auto& i : inverse) i = rank_of[size_t(i)];
  auto vec = [&](const std::vector<int64_t>& a) {
    return DynTensor::from_vector<int64_t>(a, Shape{int64_t(a.size())}, c.device);
  };
  DynTensor y = index_select(src, 0, vec(idx));
  if (axis) y = movedim(y, 0, *axis);
  return {y, vec(idx), vec(inverse), vec(cnt)};
}

OpResult det(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (!is_float(x.dtype()) || x.rank() < 2) c.unsupported("input of dtype " + std::string(dtype_name(x.dtype())) + " and rank " + std::to_string(x.rank()));
  int64_t m = x.shape()[-1];
  if (x.shape()[-2] != m) c.fail("matrices must be square");
  std::vector<double> v = x.into_data().to_doubles(), out;
  int64_t mats = m ? int64_t(v.size()) / (m * m) : 0;
  for (int64_t b = 0; b < mats; ++b) {
    std::vector<double> a(v.begin() + b * m * m, v.begin() + (b + 1) * m * m);
    double d = 1;
    for (int64_t i = 0; i < m; ++i) {
      int64_t p = i;
      for (int64_t r = i + 1; r < m; ++r)
        if (std::abs(a[size_t(r * m + i)]) > std::abs(a[size_t(p * m + i)])) p = r;
      if (a[size_t(p * m + i)] == 0) {
        d = 0;
        break;
      }
      if (p != i) {
        for (int64_t k = 0; k < m; ++k) std::swap(a[size_t(i * m + k)], a[size_t(p * m + k)]);
        d = -d;
      }
      d *= a[size_t(i * m + i)];
      for (int64_t r = i + 1; r < m; ++r) {
        double f = a[size_t(r * m + i)] / a[size_t(i * m + i)];
        for (int64_t k = i; k < m; ++k) a[size_t(r * m + k)] -= f * a[size_t(i * m + k)];
      }
    }
    out.push_back(d);
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().end() - 2);
  return {host_tensor(TensorData::from_doubles(out, Shape(shape), x.dtype()), c)};
}

enum class WindowKind { hann, hamming, blackman };

OpHandler window(WindowKind k) {
  return [k](OpContext& c) -> OpResult {
    int64_t size = int64_t(scalar_of(c.in(0)).value);
    DType dt = dtype_of_onnx(int32_t(c.attr_i("output_datatype", 1)), c);
    bool periodic = c.attr_i("periodic", 1) != 0;
    double n = double(periodic ? size : size - 1);
    std::vector<double> v;
    for (int64_t i = 0; i < size; ++i) {
      double t = 2 * std::numbers::pi * double(i) / n;
      switch (k) {
        case WindowKind::hann: v.push_back(0.5 - 0.5 * std::cos(t)); break;
        case WindowKind::hamming: v.push_back(25.0 / 46 - 21.0 / 46 * std::cos(t)); break;
        case WindowKind::blackman: v.push_back(0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2 * t)); break;
      }
    }
    return {host_tensor(TensorData::from_doubles(v, Shape{size}, dt), c)};
  };
}

// scale / zero point broadcast along `axis` of x when they are 1-d with more than one value.
DynTensor along_axis(const OpContext& c, DynTensor v, const DynTensor& x) {
  if (v.rank() == 0 || (v.rank() == 1 && v.numel() == 1 && x.rank() != 1)) return reshape(v, {});
  if (v.rank() != 1) c.unsupported("blocked quantization");
  int axis = normalize_axis(c.attr_i("axis", 1), x.rank(), c);
  Sizes s(size_t(x.rank()), 1);
  s[size_t(axis)] = v.numel();
  return reshape(v, s);
}

std::pair<double, double> int_range(DType dt, const OpContext& c) {
  if (dt == DType::u8) return {0, 255};
  if (dt == DType::i8) return {-128, 127};
  c.unsupported("quantized dtype " + std::string(dtype_name(dt)));
}


// Einsum on the host (the operands of ONNX models that use it are small): every index
// combination is visited once.
OpResult einsum(OpContext& c) {
  std::string eq;
  for (char ch : c.attr_s("equation", "")) if (ch != ' ') eq += ch;
  std::string lhs = eq, rhs;
  bool explicit_out = false;
  if (auto p = eq.find("->"); p != std::string::npos) {
    lhs = eq.substr(0, p);
    rhs = eq.substr(p + 2);
    explicit_out = true;
  }
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != c.num_inputs()) c.fail("equation has " + std::to_string(terms.size()) + " operands");
  DType dt = c.in(0).dtype();
  // Expand "..." into upper-case letters, aligned on the right.
  int ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    if (t.find("...") != std::string::npos) ell = std::max(ell, c.in(i).rank() - int(t.size() - 3));
  }
  auto expand_ell = [&](const std::string& t, int k) {
    auto p = t.find("...");
    if (p == std::string::npos) return t;
    std::string e;
    for (int j = ell - k; j < ell; ++j) e += char('A' + j);
    return t.substr(0, p) + e + t.substr(p + 3);
  };
  std::map<char, int64_t> size;
  std::map<char, int> count;
  std::vector<std::string> ops;
  std::vector<std::vector<double>> vals;
  for (size_t i = 0; i < terms.size(); ++i) {
    const DynTensor& x = c.in(i);
    if (x.dtype() != dt) c.fail("operands differ in dtype");
    int k = terms[i].find("...") != std::string::npos ? x.rank() - int(terms[i].size() - 3) : 0;
    std::string t = expand_ell(terms[i], k);
    if (int(t.size()) != x.rank()) c.fail("term '" + terms[i] + "' does not match the rank of operand " + std::to_string(i));
    for (size_t d = 0; d < t.size(); ++d) {
      int64_t n = x.shape()[int(d)];
      auto [it, fresh] = size.emplace(t[d], n);
      if (!fresh && it->second != n) c.unsupported("broadcasting of index '" + std::string(1, t[d]) + "'");
      ++count[t[d]];
    }
    ops.push_back(t);
    vals.push_back(x.into_data().to_doubles());
  }
  std::string out;
  if (explicit_out) {
    out = expand_ell(rhs, ell);
  } else {
    for (int j = 0; j < ell; ++j) out += char('A' + j);
    for (auto& [ch, n] : count)
      if (n == 1 && !(ch >= 'A' && ch <= 'Z')) out += ch;
  }
  std::string all = out;
  for (auto& [ch, n] : size)
    if (all.find(ch) == std::string::npos) all += ch;
  for (char ch : out)
    if (!size.count(ch)) c.fail("output index '" + std::string(1, ch) + "' appears in no operand");
  std::vector<int64_t> dims;
  for (char ch : all) dims.push_back(size[ch]);
  std::vector<int64_t> out_shape(dims.begin(), dims.begin() + long(out.size()));
  int64_t out_n = product(out_shape, 0, out_shape.size()), total = product(dims, 0, dims.size());
  std::vector<double> result(size_t(out_n), 0.0);
  std::vector<std::vector<int64_t>> strides(ops.size());  // per operand, per position in `all`
  for (size_t i = 0; i < ops.size(); ++i) {
    strides[i].assign(all.size(), 0);
    int64_t st = 1;
    for (int d = int(ops[i].size()) - 1; d >= 0; --d) {
      strides[i][all.find(ops[i][size_t(d)])] += st;
      st *= size[ops[i][size_t(d)]];
    }
  }
  std::vector<int64_t> pos(all.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rem = flat;
    for (int d = int(all.size()) - 1; d >= 0; --d) {
      pos[size_t(d)] = rem % dims[size_t(d)];
      rem /= dims[size_t(d)];
    }
    double p = 1;
    for (size_t i = 0; i < ops.size(); ++i) {
      int64_t off = 0;
      for (size_t d = 0; d < all.size(); ++d) off += pos[d] * strides[i][d];
      p *= vals[i][size_t(off)];
    }
    int64_t o = 0;
    for (size_t d = 0; d < out.size(); ++d) o = o * dims[d] + pos[d];
    result[size_t(o)] += p;
  }
  return {host_tensor(TensorData::from_doubles(result, Shape(out_shape), dt), c)};
}

OpResult non_max_suppression(OpContext& c) {
  const DynTensor& boxes_t = c.in(0);
  const DynTensor& scores_t = c.in(1);
  if (boxes_t.rank() != 3 || scores_t.rank() != 3) c.fail("boxes and scores must be 3-d");
  int64_t max_out = c.has(2) ? int64_t(scalar_of(c.in(2)).value) : 0;
  double iou_th = c.has(3) ? scalar_of(c.in(3)).value : 0.0;
  std::optional<double> score_th;
  if (c.has(4)) score_th = scalar_of(c.in(4)).value;
  bool center = c.attr_i("center_point_box", 0) != 0;
  std::vector<double> boxes = boxes_t.into_data().to_doubles(), scores = scores_t.into_data().to_doubles();
  int64_t nb = boxes_t.shape()[0], n = boxes_t.shape()[1], nc = scores_t.shape()[1];
  auto corners = [&](int64_t b, int64_t i) {
    const double* p = &boxes[size_t((b * n + i) * 4)];
    double y1, x1, y2, x2;
    if (center) {
      x1 = p[0] - p[2] / 2; x2 = p[0] + p[2] / 2; y1 = p[1] - p[3] / 2; y2 = p[1] + p[3] / 2;
    } else {
      y1 = std::min(p[0], p[2]); y2 = std::max(p[0], p[2]); x1 = std::min(p[1], p[3]); x2 = std::max(p[1], p[3]);
    }
    return std::array<double, 4>{y1, x1, y2, x2};
  };
  auto iou = [&](int64_t b, int64_t i, int64_t j) {
    auto a = corners(b, i), o = corners(b, j);
    double ih = std::max(0.0, std::min(a[2], o[2]) - std::max(a[0], o[0]));
    double iw = std::max(0.0, std::min(a[3], o[3]) - std::max(a[1], o[1]));
    double inter = ih * iw;
    double ua = (a[2] - a[0]) * (a[3] - a[1]) + (o[2] - o[0]) * (o[3] - o[1]) - inter;
    return ua <= 0 ? 0.0 : inter / ua;
  };
  std::vector<int64_t> sel;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t k = 0; k < nc; ++k) {
      const double* sc = &scores[size_t((b * nc + k) * n)];
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < n; ++i)
        if (!score_th || sc[i] > *score_th) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (int64_t(kept.size()) >= max_out) break;
        bool ok = true;
        for (int64_t j : kept)
          if (iou(b, i, j) > iou_th) ok = false;
        if (ok) kept.push_back(i);
      }
      for (int64_t i : kept) sel.insert(sel.end(), {b, k, i});
    }
  return {DynTensor::from_vector<int64_t>(sel, Shape{int64_t(sel.size() / 3), 3}, c.device)};
}

// GridSample (4-d input), as PyTorch's grid_sample computes it.
double reflect_coordinate(double in, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  double lo = twice_low / 2, span = (twice_high - twice_low) / 2;
  in = std::fabs(in - lo);
  double extra = std::fmod(in, span);
  int64_t flips = int64_t(std::floor(in / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

OpResult grid_sample(OpContext& c) {
  const DynTensor& x = c.in(0);
  const DynTensor& grid = c.in(1);
  if (!is_float(x.dtype()) || x.rank() != 4 || grid.rank() != 4) c.unsupported("input other than 4-d floats");
  std::string mode = c.attr_s("mode", "bilinear"), padding = c.attr_s("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") c.unsupported("mode '" + mode + "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection") c.unsupported("padding_mode '" + padding + "'");
  bool align = c.attr_i("align_corners", 0) != 0;
  int64_t n = x.shape()[0], ch = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  int64_t ho = grid.shape()[1], wo = grid.shape()[2];
  std::vector<double> in = x.into_data().to_doubles(), g = grid.into_data().to_doubles();
  std::vector<double> out(size_t(n * ch * ho * wo));
  auto unnormalize = [&](double v, int64_t size) {
    return align ? (v + 1) / 2 * double(size - 1) : ((v + 1) * double(size) - 1) / 2;
  };
  auto coordinates = [&](double v, int64_t size) {
    if (padding == "border") return std::clamp(v, 0.0, double(size - 1));
    if (padding == "reflection") {
      v = align ? reflect_coordinate(v, 0, 2 * double(size - 1)) : reflect_coordinate(v, -1, 2 * double(size) - 1);
      return std::clamp(v, 0.0, double(size - 1));
    }
    return v;
  };
  auto at = [&](int64_t b, int64_t k, int64_t yy, int64_t xx) -> double {
    if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0;
    return in[size_t(((b * ch + k) * H + yy) * W + xx)];
  };
  auto cubic = [](double t) {
    const double A = -0.75;
    auto c1 = [&](double v) { return ((A + 2) * v - (A + 3)) * v * v + 1; };
    auto c2 = [&](double v) { return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A; };
    return std::array<double, 4>{c2(t + 1), c1(t), c1(1 - t), c2(2 - t)};
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j) {
        double gx = g[size_t(((b * ho + i) * wo + j) * 2)], gy = g[size_t(((b * ho + i) * wo + j) * 2 + 1)];
        double ix = unnormalize(gx, W), iy = unnormalize(gy, H);
        for (int64_t k = 0; k < ch; ++k) {
          double v = 0;
          if (mode == "bicubic") {
            double fx = std::floor(ix), fy = std::floor(iy);
            auto wx = cubic(ix - fx), wy = cubic(iy - fy);
            for (int a = 0; a < 4; ++a)
              for (int e = 0; e < 4; ++e) {
                double yy = coordinates(fy - 1 + a, H), xx = coordinates(fx - 1 + e, W);
                v += wy[size_t(a)] * wx[size_t(e)] * at(b, k, int64_t(yy), int64_t(xx));
              }
          } else {
            double cx = coordinates(ix, W), cy = coordinates(iy, H);
            if (mode == "nearest") {
              v = at(b, k, int64_t(std::nearbyint(cy)), int64_t(std::nearbyint(cx)));
            } else {
              double x0 = std::floor(cx), y0 = std::floor(cy), tx = cx - x0, ty = cy - y0;
              int64_t xi = int64_t(x0), yi = int64_t(y0);
              v = at(b, k, yi, xi) * (1 - tx) * (1 - ty) + at(b, k, yi, xi + 1) * tx * (1 - ty) +
                  at(b, k, yi + 1, xi) * (1 - tx) * ty + at(b, k, yi + 1, xi + 1) * tx * ty;
            }
          }
          out[size_t(((b * ch + k) * ho + i) * wo + j)] = v;
        }
      }
  return {host_tensor(TensorData::from_doubles(out, Shape{n, ch, ho, wo}, x.dtype()), c)};
}

// DFT and STFT (naive O(n^2) transforms on the host; a real input has a last dim of 1, a complex
// one of 2).
using Complex = std::complex<double>;

std::vector<Complex> dft_line(const std::vector<Complex>& x, int64_t bins, bool inverse) {
  int64_t n = int64_t(x.size());
  std::vector<Complex> y(static_cast<size_t>(bins));
  double sign = inverse ? 1 : -1;
  for (int64_t k = 0; k < bins; ++k) {
    Complex acc = 0;
    for (int64_t t = 0; t < n; ++t) {
      double a = sign * 2 * std::numbers::pi * double((k * t) % n) / double(n);
      acc += x[size_t(t)] * Complex(std::cos(a), std::sin(a));
    }
    y[size_t(k)] = inverse ? acc / double(n) : acc;
  }
  return y;
}

OpResult dft(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (!is_float(x.dtype()) || x.rank() < 3) c.unsupported("input other than [batch, ..., 1|2] floats");
  int r = x.rank();
  int64_t comp = x.shape()[-1];
  if (comp != 1 && comp != 2) c.fail("the last dim must be 1 (real) or 2 (complex)");
  int axis = normalize_axis(c.attr_i("axis", 1), r - 1, c);
  if (axis == 0) c.fail("axis 0 is the batch dim");
  bool inverse = c.attr_i("inverse", 0) != 0, onesided = c.attr_i("onesided", 0) != 0;
  if (onesided && (comp == 2 || inverse)) c.unsupported("onesided with a complex input or inverse");
  int64_t n_in = x.shape()[axis], n = c.has(1) ? int64_t(scalar_of(c.in(1)).value) : n_in;
  int64_t bins = onesided ? n / 2 + 1 : n;
  std::vector<double> v = x.into_data().to_doubles();
  std::vector<int64_t> dims = x.shape().dims();
  int64_t outer = product(dims, 0, size_t(axis)), inner = product(dims, size_t(axis + 1), size_t(r - 1));
  std::vector<int64_t> out_dims = dims;
  out_dims[size_t(axis)] = bins;
  out_dims.back() = 2;
  std::vector<double> out(size_t(outer * bins * inner * 2));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<Complex> line(size_t(n), 0.0);
      for (int64_t t = 0; t < std::min(n, n_in); ++t) {
        size_t at = size_t(((o * n_in + t) * inner + i) * comp);
        line[size_t(t)] = Complex(v[at], comp == 2 ? v[at + 1] : 0.0);
      }
      std::vector<Complex> y = dft_line(line, bins, inverse);
      for (int64_t k = 0; k < bins; ++k) {
        size_t at = size_t(((o * bins + k) * inner + i) * 2);
        out[at] = y[size_t(k)].real();
        out[at + 1] = y[size_t(k)].imag();
      }
    }
  return {host_tensor(TensorData::from_doubles(out, Shape(out_dims), x.dtype()), c)};
}

OpResult stft(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (!is_float(x.dtype()) || x.rank() != 3) c.unsupported("input other than [batch, length, 1|2] floats");
  int64_t comp = x.shape()[2], batch = x.shape()[0], length = x.shape()[1];
  if (comp != 1 && comp != 2) c.fail("the last dim must be 1 (real) or 2 (complex)");
  int64_t step = int64_t(scalar_of(c.in(1)).value);
  std::vector<double> window;
  if (c.has(2)) window = c.in(2).into_data().to_doubles();
  int64_t L = c.has(3) ? int64_t(scalar_of(c.in(3)).value) : int64_t(window.size());
  if (L <= 0 || step <= 0) c.fail("frame_length and frame_step must be positive");
  if (!window.empty() && int64_t(window.size()) != L) c.fail("window and frame_length differ");
  bool onesided = c.attr_i("onesided", 1) != 0;
  if (onesided && comp == 2) c.unsupported("onesided with a complex input");
  int64_t frames = (length - L) / step + 1, bins = onesided ? L / 2 + 1 : L;
  std::vector<double> v = x.into_data().to_doubles(), out(size_t(batch * frames * bins * 2));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      std::vector<Complex> line(static_cast<size_t>(L));
      for (int64_t t = 0; t < L; ++t) {
        size_t at = size_t((b * length + f * step + t) * comp);
        double w = window.empty() ? 1.0 : window[size_t(t)];
        line[size_t(t)] = Complex(v[at], comp == 2 ? v[at + 1] : 0.0) * w;
      }
      std::vector<Complex> y = dft_line(line, bins, false);
      for (int64_t k = 0; k < bins; ++k) {
        size_t at = size_t(((b * frames + f) * bins + k) * 2);
        out[at] = y[size_t(k)].real();
        out[at + 1] = y[size_t(k)].imag();
      }
    }
  return {host_tensor(TensorData::from_doubles(out, Shape{batch, frames, bins, 2}, x.dtype()), c)};
}

// TfIdfVectorizer over integer tokens: every n-gram (min..max_gram_length) with a gap of 0..
// max_skip_count between its tokens (unigrams once) that is in the pool adds to its column.
OpResult tfidf(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (!is_int(x.dtype())) c.unsupported("dtype " + std::string(dtype_name(x.dtype())));
  if (x.rank() < 1 || x.rank() > 2) c.fail("input must be 1-d or 2-d");
  std::string mode = c.attr_s("mode", "TF");
  int64_t min_n = c.attr_i("min_gram_length", 1), max_n = c.attr_i("max_gram_length", 1), skips = c.attr_i("max_skip_count", 0);
  std::vector<int64_t> counts = c.attr_ints("ngram_counts").value_or(std::vector<int64_t>{});
  std::vector<int64_t> indexes = c.attr_ints("ngram_indexes").value_or(std::vector<int64_t>{});
  std::vector<int64_t> pool = c.attr_ints("pool_int64s").value_or(std::vector<int64_t>{});
  std::vector<float> weights = c.attr_floats("weights").value_or(std::vector<float>{});
  if (pool.empty()) c.unsupported("pool_strings");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") c.fail("mode '" + mode + "'");
  std::map<std::vector<int64_t>, int64_t> ids;  // n-gram -> id
  int64_t id = 0;
  for (size_t g = 0; g < counts.size(); ++g) {
    int64_t n = int64_t(g) + 1, start = counts[g], end = g + 1 < counts.size() ? counts[g + 1] : int64_t(pool.size());
    if (start < 0 || end > int64_t(pool.size()) || start > end || (end - start) % n) c.fail("ngram_counts do not fit the pool");
    for (int64_t p = start; p < end; p += n) ids[std::vector<int64_t>(pool.begin() + p, pool.begin() + p + n)] = id++;
  }
  if (int64_t(indexes.size()) != id) c.fail("ngram_indexes must have one entry per n-gram");
  int64_t cols = indexes.empty() ? 0 : *std::max_element(indexes.begin(), indexes.end()) + 1;
  int64_t rows = x.rank() == 2 ? x.shape()[0] : 1, len = x.shape()[-1];
  std::vector<int64_t> v = x.to_vector<int64_t>();
  std::vector<double> out(size_t(rows * cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* row = v.data() + r * len;
    for (int64_t n = min_n; n <= max_n; ++n)
      for (int64_t sk = 0; sk <= (n == 1 ? 0 : skips); ++sk)
        for (int64_t i = 0; i + (n - 1) * (sk + 1) < len; ++i) {
          std::vector<int64_t> gram;
          for (int64_t j = 0; j < n; ++j) gram.push_back(row[i + j * (sk + 1)]);
          auto it = ids.find(gram);
          if (it != ids.end()) out[size_t(r * cols + indexes[size_t(it->second)])] += 1;
        }
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < int64_t(indexes.size()); ++k) {
      double& o = out[size_t(r * cols + indexes[size_t(k)])];
      double w = weights.empty() ? 1.0 : double(weights.at(size_t(k)));
      if (mode == "IDF") o = o > 0 ? w : 0;
      else if (mode == "TFIDF") o *= w;
    }
  Shape shape = x.rank() == 2 ? Shape{rows, cols} : Shape{cols};
  return {host_tensor(TensorData::from_doubles(out, shape, DType::f32), c)};
}

// RoiAlign (as onnxruntime computes it: bilinear samples on a sampling_ratio grid per bin).
OpResult roi_align(OpContext& c) {
  const DynTensor& x = c.in(0);
  if (!is_float(x.dtype()) || x.rank() != 4) c.unsupported("input other than 4-d floats");
  std::string mode = c.attr_s("mode", "avg");
  std::string ctm = c.attr_s("coordinate_transformation_mode", c.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (mode != "avg" && mode != "max") c.fail("mode '" + mode + "'");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") c.fail("coordinate_transformation_mode '" + ctm + "'");
  int64_t oh = c.attr_i("output_height", 1), ow = c.attr_i("output_width", 1), ratio = c.attr_i("sampling_ratio", 0);
  double scale = c.attr_f("spatial_scale", 1.0f), offset = ctm == "half_pixel" ? 0.5 : 0.0;
  int64_t C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  std::vector<double> v = x.into_data().to_doubles(), rois = c.in(1).into_data().to_doubles();
  std::vector<int64_t> bi = c.in(2).to_vector<int64_t>();
  int64_t n = int64_t(bi.size());
  if (int64_t(rois.size()) != 4 * n) c.fail("rois must be [num_rois, 4]");
  std::vector<double> out(size_t(n * C * oh * ow), 0.0);
  for (int64_t r = 0; r < n; ++r) {
    if (bi[size_t(r)] < 0 || bi[size_t(r)] >= x.shape()[0]) c.fail("batch index out of range");
    double sw = rois[size_t(4 * r)] * scale - offset, sh = rois[size_t(4 * r + 1)] * scale - offset;
    double ew = rois[size_t(4 * r + 2)] * scale - offset, eh = rois[size_t(4 * r + 3)] * scale - offset;
    double rw = ew - sw, rh = eh - sh;
    if (ctm == "output_half_pixel") {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    double bh = rh / double(oh), bw = rw / double(ow);
    int64_t gh = ratio > 0 ? ratio : int64_t(std::ceil(rh / double(oh)));
    int64_t gw = ratio > 0 ? ratio : int64_t(std::ceil(rw / double(ow)));
    double count = double(std::max<int64_t>(gh * gw, 1));
    for (int64_t k = 0; k < C; ++k) {
      const double* plane = &v[size_t((bi[size_t(r)] * C + k) * H * W)];
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double y = sh + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
              double xx = sw + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw);
              double val = 0;
              if (!(y < -1.0 || y > double(H) || xx < -1.0 || xx > double(W))) {
                y = std::max(y, 0.0);
                xx = std::max(xx, 0.0);
                int64_t yl = int64_t(y), xl = int64_t(xx), yh, xh;
                if (yl >= H - 1) yh = yl = H - 1, y = double(yl);
                else yh = yl + 1;
                if (xl >= W - 1) xh = xl = W - 1, xx = double(xl);
                else xh = xl + 1;
                double ly = y - double(yl), lx = xx - double(xl), hy = 1 - ly, hx = 1 - lx;
                double a = hy * hx * plane[yl * W + xl], b = hy * lx * plane[yl * W + xh];
                double cc = ly * hx * plane[yh * W + xl], d = ly * lx * plane[yh * W + xh];
                val = mode == "avg" ? a + b + cc + d : std::max(std::max(std::max(a, b), cc), d);
              }
              if (mode == "avg") acc += val;
              else acc = first ? val : std::max(acc, val);
              first = false;
            }
          out[size_t(((r * C + k) * oh + ph) * ow + pw)] = mode == "avg" ? acc / count : acc;
        }
    }
  }
  return {host_tensor(TensorData::from_doubles(out, Shape{n, C, oh, ow}, x.dtype()), c)};
}

// The optimizers of ai.onnx.preview.training: inputs R, T, then n tensors of each state
// group (X, G, V, H); outputs the new X, V, H groups.
OpHandler optimizer(const std::string& kind) {
  return [kind](OpContext& c) -> OpResult {
    double r = scalar_of(c.in(0)).value, t = scalar_of(c.in(1)).value;
    size_t groups = kind == "Adam" ? 4 : 3, n = (c.num_inputs() - 2) / groups;
    if (n == 0 || (c.num_inputs() - 2) % groups != 0) c.fail("inputs must be R, T and equal groups of tensors");
    double norm = c.attr_f("norm_coefficient", 0.0f);
    OpResult xs, vs, hs;
    for (size_t i = 0; i < n; ++i) {
      DynTensor x = c.in(2 + i), g = c.in(2 + n + i), v = c.in(2 + 2 * n + i);
      DynTensor gr = add(mul(x, norm), g);
      if (kind == "Adagrad") {
        double eps = c.attr_f("epsilon", 0.0f), decay = c.attr_f("decay_factor", 0.0f);
        double ra = r / (1 + t * decay);
        DynTensor hn = add(v, mul(gr, gr));
        xs.push_back(sub(x, mul(div(gr, add(sqrt(hn), eps)), ra)));
        vs.push_back(hn);
      } else if (kind == "Momentum") {
        double alpha = c.attr_f("alpha", 0.0f), beta = c.attr_f("beta", 0.0f);
        std::string mode = c.attr_s("mode", "standard");
        DynTensor vn = add(mul(v, alpha), mul(gr, t > 0 ? beta : 1.0));
        if (mode == "standard") xs.push_back(sub(x, mul(vn, r)));
        else if (mode == "nesterov") xs.push_back(sub(x, mul(add(gr, mul(vn, alpha)), r)));
        else c.unsupported("mode '" + mode + "'");
        vs.push_back(vn);
      } else {
        double alpha = c.attr_f("alpha", 0.9f), beta = c.attr_f("beta", 0.999f), eps = c.attr_f("epsilon", 0.0f);
        double post = c.attr_f("norm_coefficient_post", 0.0f);
        DynTensor h = c.in(2 + 3 * n + i);
        DynTensor vn = add(mul(v, alpha), mul(gr, 1 - alpha));
        DynTensor hn = add(mul(h, beta), mul(mul(gr, gr), 1 - beta));
        double ra = t > 0 ? r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : r;
        DynTensor xn = sub(x, mul(div(vn, add(sqrt(hn), eps)), ra));
        xs.push_back(mul(xn, 1 - post));
        vs.push_back(vn);
        hs.push_back(hn);
      }
    }
    xs.insert(xs.end(), vs.begin(), vs.end());
    xs.insert(xs.end(), hs.begin(), hs.end());
    return xs;
  };
}

}  // namespace

void register_misc_ops(OpTable& t) {
  t["GridSample"] = grid_sample;
  t["DFT"] = dft;
  t["RoiAlign"] = roi_align;
  t["TfIdfVectorizer"] = tfidf;
  t["STFT"] = stft;
  for (const char* k : {"Adagrad", "Adam", "Momentum"})
    t[std::string("ai.onnx.preview.training::") + k] = optimizer(k);
  t["Einsum"] = einsum;
  t["NonMaxSuppression"] = non_max_suppression;
  t["GatherND"] = gather_nd;
  t["ScatterND"] = scatter_nd;
  t["ReverseSequence"] = reverse_sequence;
  t["Unique"] = unique;
  t["Det"] = det;
  t["HannWindow"] = window(WindowKind::hann);
  t["HammingWindow"] = window(WindowKind::hamming);
  t["BlackmanWindow"] = window(WindowKind::blackman);
  t["Compress"] = [](OpContext& c) -> OpResult {
    DynTensor x = c.in(0);
    std::vector<bool> cond = c.in(1).to_vector<bool>();
    int axis = 0;
    if (c.attr("axis")) axis = normalize_axis(c.attr_i("axis", 0), x.rank(), c);
    else x = reshape(x, {x.numel()});
    std::vector<int64_t> keep;
    for (size_t i = 0; i < cond.size() && int64_t(i) < x.shape()[axis]; ++i)
      if (cond[i]) keep.push_back(int64_t(i));
    return {index_select(x, axis, DynTensor::from_vector<int64_t>(keep, Shape{int64_t(keep.size())}, c.device))};
  };
  t["QuantizeLinear"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    DType out = c.has(2) ? c.in(2).dtype() : DType::u8;
    auto [lo, hi] = int_range(out, c);
    DynTensor y = round(div(cast(x, DType::f32), cast(along_axis(c, c.in(1), x), DType::f32)));
    if (c.has(2)) y = add(y, cast(along_axis(c, c.in(2), x), DType::f32));
    return {cast(clamp(y, Scalar(lo), Scalar(hi)), out)};
  };
  t["DequantizeLinear"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    if (x.dtype() == DType::i32 && c.has(2)) c.unsupported("int32 with a zero point");
    DynTensor v = cast(x, DType::f32);
    if (c.has(2)) v = sub(v, cast(along_axis(c, c.in(2), x), DType::f32));
    return {mul(v, cast(along_axis(c, c.in(1), x), DType::f32))};
  };
  // com.microsoft's QLinearAdd (ONNX Runtime's quantized models): inputs A, A_scale, A_zero_point,
  // B, B_scale, B_zero_point, C_scale, C_zero_point (zero points optional, scales and zero points
  // one value each); C = saturate(round((A_scale (A - A_zp) + B_scale (B - B_zp)) / C_scale) + C_zp),
  // rounding half to even, u8 or i8 like A, broadcasting A against B. Computed in f32: the
  // qlinear_add op, or where a backend lacks it the ops it stands for.
  t["com.microsoft::QLinearAdd"] = [](OpContext& c) -> OpResult {
    const DynTensor& a = c.in(0);
    const DynTensor& b = c.in(3);
    if (a.dtype() != b.dtype())
      c.fail("A is " + std::string(dtype_name(a.dtype())) + " but B is " + std::string(dtype_name(b.dtype())));
    auto [lo, hi] = int_range(a.dtype(), c);
    auto one_value = [&](size_t i, const char* name, bool zero_point) {
      const DynTensor& v = c.in(i);
      if (v.numel() != 1) c.unsupported(std::string(name) + " of " + std::to_string(v.numel()) + " values (per-channel)");
      if (zero_point && v.dtype() != a.dtype())
        c.fail(std::string(name) + " is " + std::string(dtype_name(v.dtype())) + ", not A's " +
               std::string(dtype_name(a.dtype())));
      return cast(reshape(v, {}), DType::f32);
    };
    // one pass where the backend has the qlinear_add op (the cpu), else the ops it stands for
    for (auto [i, name, zp] : {std::tuple{size_t(1), "A_scale", false}, std::tuple{size_t(2), "A_zero_point", true},
                               std::tuple{size_t(4), "B_scale", false}, std::tuple{size_t(5), "B_zero_point", true},
                               std::tuple{size_t(6), "C_scale", false}, std::tuple{size_t(7), "C_zero_point", true}})
      if (c.has(i)) one_value(i, name, zp);
    auto given = [&](size_t i) { return c.has(i) ? std::optional<DynTensor>(reshape(c.in(i), {})) : std::nullopt; };
    try {
      return {qlinear_add(a, cast(reshape(c.in(1), {}), DType::f32), given(2), b, cast(reshape(c.in(4), {}), DType::f32),
                          given(5), cast(reshape(c.in(6), {}), DType::f32), given(7))};
    } catch (const NotImplemented&) {
    }
    auto real = [&](size_t x, size_t scale, size_t zero_point, const char* sname, const char* zname) {
      DynTensor v = cast(c.in(x), DType::f32);
      if (c.has(zero_point)) v = sub(v, one_value(zero_point, zname, true));
      return mul(v, one_value(scale, sname, false));
    };
    DynTensor sum = add(real(0, 1, 2, "A_scale", "A_zero_point"), real(3, 4, 5, "B_scale", "B_zero_point"));
    DynTensor q = round(div(sum, one_value(6, "C_scale", false)));
    if (c.has(7)) q = add(q, one_value(7, "C_zero_point", true));
    return {cast(clamp(q, Scalar(lo), Scalar(hi)), a.dtype())};
  };
  t["DynamicQuantizeLinear"] = [](OpContext& c) -> OpResult {
    const DynTensor& x = c.in(0);
    if (x.dtype() != DType::f32) c.unsupported("dtype " + std::string(dtype_name(x.dtype())));
    std::vector<float> v = x.to_vector<float>();
    float mn = 0, mx = 0;
    for (float f : v) {
      mn = std::min(mn, f);
      mx = std::max(mx, f);
    }
    float scale = (mx - mn) / 255.0f;
    if (scale == 0) c.unsupported("an all-zero input");
    float zp = std::nearbyint(0.0f - mn / scale);
    zp = std::clamp(zp, 0.0f, 255.0f);
    DynTensor q = add(round(div(x, DynTensor::full(Shape{}, Scalar(double(scale)), DType::f32, c.device))), double(zp));
    return {cast(clamp(q, Scalar(0.0), Scalar(255.0)), DType::u8),
            DynTensor::from_vector<float>({scale}, Shape{}, c.device),
            DynTensor::from_vector<uint8_t>({uint8_t(zp)}, Shape{}, c.device)};
  };
}

}  // namespace ember::onnx::detail
