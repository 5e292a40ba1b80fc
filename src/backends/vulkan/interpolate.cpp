// interpolate: nearest (PyTorch's legacy rule, 1 to 3 spatial dims), linear and cubic (A =
// -0.75, borders clamped; 1 or 2 spatial dims), with align_corners.
//
// As the CPU backend (src/backends/cpu/pool.cpp): the spatial dims are lifted to 3 and each one's
// taps (source indices and weights, in the compute type) are tabulated on the host with
// PyTorch's area_pixel formulas, then uploaded; a kernel evaluates every output element in the
// CPU backend's order: out = sum_a w1[a] h(i1[a]), h(r) = sum_b w2[b] x[r, i2[b]].
#include <algorithm>
#include <cmath>

#include "glsl.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {

namespace {

struct InterpParams {
  uint32_t n = 0;
  int32_t off_x = 0, k1 = 1, k2 = 1;
  int32_t in[4] = {}, out[4] = {};
  int32_t i0 = 0, i1 = 0, i2 = 0, w1 = 0;  // offsets into the tables: nearest dims 0-2, or dim 1 and 2
  int32_t w2 = 0, mode = 0, pad[2] = {};
};
static_assert(sizeof(InterpParams) == 80);

bool interp_dtypes(const VulkanBackend& be, const Op& op) {
  const DType dt = op.in(0).dtype;
  return be.has_dtype(dt) && op.attr<InterpolateAttrs>().size.size() <= 3;
}

int64_t nearest_src(int64_t dst, int64_t in, int64_t out) {
  if (in == out) return dst;
  if (out == 2 * in) return dst >> 1;
  float scale = float(in) / float(out);
  return std::min(int64_t(std::floor(float(dst) * scale)), in - 1);
}

template <class A>
void taps(int64_t in, int64_t out, InterpMode mode, bool align, int& K, std::vector<int32_t>& idx, std::vector<A>& w) {
  if (in == 1 && out == 1) {
    K = 1;
    idx.push_back(0);
    w.push_back(A(1));
    return;
  }
  const A scale = align ? (out > 1 ? A(in - 1) / A(out - 1) : A(0)) : A(in) / A(out);
  auto source = [&](int64_t dst, bool cubic) {
    if (align) return scale * A(dst);
    A src = scale * (A(dst) + A(0.5)) - A(0.5);
    return (!cubic && src < A(0)) ? A(0) : src;
  };
  if (mode == InterpMode::linear) {
    K = 2;
    for (int64_t o = 0; o < out; ++o) {
      A real = source(o, false);
      int64_t i0 = std::min(int64_t(std::floor(real)), in - 1);
      A l1 = std::min(std::max(real - A(i0), A(0)), A(1));
      idx.push_back(int32_t(i0));
      idx.push_back(int32_t(i0 + (i0 < in - 1 ? 1 : 0)));
      w.push_back(A(1) - l1);
      w.push_back(l1);
    }
    return;
  }
  K = 4;
  const A a = A(-0.75);
  auto cc1 = [a](A x) { return ((a + A(2)) * x - (a + A(3))) * x * x + A(1); };
  auto cc2 = [a](A x) { return ((a * x - A(5) * a) * x + A(8) * a) * x - A(4) * a; };
  for (int64_t o = 0; o < out; ++o) {
    A real = source(o, true);
    A fl = std::floor(real);
    int64_t i0 = int64_t(fl);
    A tt = real - fl;
    w.push_back(cc2(tt + A(1)));
    w.push_back(cc1(tt));
    w.push_back(cc1(A(1) - tt));
    w.push_back(cc2(A(2) - tt));
    for (int j = 0; j < 4; ++j) idx.push_back(int32_t(std::clamp<int64_t>(i0 - 1 + j, 0, in - 1)));
  }
}

std::string interp_source(DType dt, bool nearest) {
  const DType wt = dt == DType::f64 ? DType::f64 : DType::f32;
  std::string s = glsl::header({dt, wt}, false);
  s += R"GLSL(
struct InterpParams { uint n; int off_x; int k1; int k2; ivec4 in_; ivec4 out_; int i0; int i1; int i2; int w1; int w2; int mode; int pad0; int pad1; };
layout(std430, binding = 6) readonly buffer InterpParamsBuf { InterpParams r; };
)GLSL";
  s += "#define C " + glsl::compute_type(dt) + "\n";
  s += glsl::buffer(0, dt, "o_", false);
  s += glsl::buffer(1, dt, "x_", true);
  s += glsl::buffer(2, DType::i32, "ix_", true);
  s += glsl::buffer(3, wt, "w_", true);
  s += "void main() {\n  uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
       "  for (uint e = gl_GlobalInvocationID.x; e < r.n; e += step) {\n"
       "    int q = int(e);\n    int o2 = q % r.out_[2]; q /= r.out_[2];\n    int o1 = q % r.out_[1]; q /= r.out_[1];\n"
       "    int o0 = q % r.out_[0]; int p = q / r.out_[0];\n"
       "    int xp = r.off_x + p * r.in_[0] * r.in_[1] * r.in_[2];\n";
  if (nearest) {
    s +=
        "    o_[int(e)] = x_[xp + (ix_[r.i0 + o0] * r.in_[1] + ix_[r.i1 + o1]) * r.in_[2] + ix_[r.i2 + o2]];\n  }\n}\n";
    return s;
  }
  const std::string ld = glsl::load(dt, "x_[xp + row * r.in_[2] + ix_[r.i2 + o2 * r.k2 + b]]");
  s += "    C v = C(0);\n"
       "    for (int a = 0; a < r.k1; ++a) {\n"
       "      int row = ix_[r.i1 + o1 * r.k1 + a];\n"
       "      int b = 0;\n"
       "      C h = " +
       ld +
       " * C(w_[r.w2 + o2 * r.k2]);\n"
       "      for (b = 1; b < r.k2; ++b) h += " +
       ld +
       " * C(w_[r.w2 + o2 * r.k2 + b]);\n"
       "      if (a == 0) v = h * C(w_[r.w1 + o1 * r.k1]);\n"
       "      else v += h * C(w_[r.w1 + o1 * r.k1 + a]);\n"
       "    }\n"
       "    o_[int(e)] = " +
       glsl::store(dt, "v") + ";\n  }\n}\n";
  return s;
}

std::vector<PrimitivePtr> interpolate_kernel(VulkanBackend& be, Op& op) {
  const auto& a = op.attr<InterpolateAttrs>();
  VulkanTensorPtr x = be.contiguous(op.inputs[0]);
  auto out = be.alloc(op.outputs[0]);
  const int64_t n = out->numel();
  if (n == 0) return {out};
  EMBER_CHECK(x->numel() > 0, op.name(), ": input ", x->shape(), " is empty but the output ", out->shape(), " is not");
  EMBER_CHECK(n <= INT32_MAX && x->numel() <= INT32_MAX, op.name(), ": too many elements for 32-bit indexing");
  const int nd = int(a.size.size());
  const Shape& is = x->shape();
  const Shape& os = out->shape();
  InterpParams p;
  p.n = uint32_t(n);
  p.off_x = int32_t(x->offset);
  for (int i = 0; i < 3; ++i) p.in[i] = p.out[i] = 1;
  for (int i = 0; i < nd; ++i) {
    p.in[3 - nd + i] = int32_t(is[is.rank() - nd + i]);
    p.out[3 - nd + i] = int32_t(os[os.rank() - nd + i]);
  }
  const DType dt = x->dtype();
  const bool nearest = a.mode == InterpMode::nearest;
  std::vector<int32_t> idx;
  TensorData weights;
  if (nearest) {
    int32_t* at[3] = {&p.i0, &p.i1, &p.i2};
    for (int i = 0; i < 3; ++i) {
      *at[i] = int32_t(idx.size());
      for (int64_t o = 0; o < p.out[i]; ++o) idx.push_back(int32_t(nearest_src(o, p.in[i], p.out[i])));
    }
    weights = TensorData::from_vector<float>({0.f}, Shape{1});
  } else {
    auto build = [&]<class A>() {
      std::vector<A> w;
      p.i1 = int32_t(idx.size());
      p.w1 = int32_t(w.size());
      taps<A>(p.in[1], p.out[1], a.mode, a.align_corners, p.k1, idx, w);
      p.i2 = int32_t(idx.size());
      p.w2 = int32_t(w.size());
      taps<A>(p.in[2], p.out[2], a.mode, a.align_corners, p.k2, idx, w);
      weights = TensorData::from_vector<A>(w, Shape{int64_t(w.size())});
    };
    if (dt == DType::f64)
      build.template operator()<double>();
    else
      build.template operator()<float>();
  }
  auto itab = be.write(TensorData::from_vector<int32_t>(idx, Shape{int64_t(idx.size())}));
  auto wtab = be.write(weights);
  const std::string key =
      std::string(nearest ? "interpolate/nearest/" : "interpolate/taps/") + std::string(dtype_name(dt));
  VkPipeline pipe = be.shaders().get(op.name(), key, [dt, nearest] { return interp_source(dt, nearest); });
  be.dispatch(pipe, {out->buffer, x->buffer, as_vk(itab).buffer, as_vk(wtab).buffer, nullptr, nullptr}, &p, sizeof p,
              be.groups_for(n));
  return {out};
}

}  // namespace

void register_interpolate_kernels(KernelTable& t, DTypeTable& d) {
  t[size_t(OpKind::interpolate)] = interpolate_kernel;
  d[size_t(OpKind::interpolate)] = interp_dtypes;
}

}  // namespace ember::vulkan
