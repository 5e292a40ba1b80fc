// The CUDA backend's fused elementwise groups (the fusion decorator's kernels on CUDA).
//
// One generated kernel per group: every node becomes the device function of its eager kernel
// (elementwise_op_function: the same body, so the same results), wrapped in a namespace, and
// one function applies the whole chain to one element, values staying in registers. Three
// entries around it:
//   fused_vec  every input dense (contiguous, the domain's shape) or one broadcast value, every
//              dense pointer aligned: 16-byte packs of the widest operand, then a tail;
//   fused32    anything else: broadcast, strided, offset inputs read through their strides
//              (views become index arithmetic), 32-bit index arithmetic;
//   fused64    the same past 2^31 elements.
// The source is specialised by the program's signature (ops, attributes baked in as constants,
// dtypes, the dataflow) and each input's mode, compiled once by NVRTC and cached in memory and
// on disk by the JIT (jit.cpp).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "cuda_backend.hpp"
#include "profile.hpp"
#include "elementwise_sources.hpp"
#include "ember/core/error.hpp"
#include "ember/core/fused_matmul.hpp"
#include "ember/core/hash.hpp"

namespace ember::cuda {

namespace {

constexpr int kThreads = 256;

DType arg_dtype(const FusedProgram& p, int32_t a) { return a < 0 ? p.inputs[size_t(~a)].dtype : p.nodes[size_t(a)].dtype; }

// The dtype that picks a node's eager kernel: its inputs' (where: its values').
DType kernel_dtype(const FusedProgram& p, const FusedProgram::Node& n) {
  return arg_dtype(p, n.kind == OpKind::where ? n.args[1] : n.args[0]);
}

std::string hexdouble(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%a", v);
  std::string s = b;
  if (s == "inf") return "ember_inf_d()";
  if (s == "-inf") return "(-ember_inf_d())";
  if (s == "nan" || s == "-nan") return "ember_nan_d()";
  return s;
}

std::string fmt_key(const std::string& sig, const std::string& modes) {
  const uint64_t h = fnv1a(modes, fnv1a("|", fnv1a(sig)));
  char b[40];
  std::snprintf(b, sizeof b, "fused/%016" PRIx64, h);
  return b;
}


// The device functions of the program's elementwise nodes, one namespace f<j> each (typedefs
// T0, T1, T2, O and `O ew_op(T0, T1, T2, const Attr&)`), after the common elementwise code.
std::string node_functions(const FusedProgram& p) {
  std::string s = elementwise_common_source();
  s += "\n";
  for (size_t j = 0; j < p.nodes.size(); ++j) {
    const auto& n = p.nodes[j];
    if (op_info(n.kind).family == OpFamily::Reduce) continue;
    s += "namespace f" + std::to_string(j) + " {\n";
    if (n.kind == OpKind::cast) {
      std::string from = device_type(arg_dtype(p, n.args[0])), to = device_type(n.dtype);
      s += "typedef " + from + " T0;\ntypedef " + from + " T1;\ntypedef " + from + " T2;\ntypedef " + to + " O;\n";
      s += "__device__ __forceinline__ O ew_op(T0 x0_, T1, T2, const Attr&) { return cast_value<O>(x0_); }\n";
    } else {
      s += elementwise_op_function(n.kind, kernel_dtype(p, n));
    }
    s += "}\n";
  }
  return s;
}

// "const Attr p<j> = {...};": node j's attributes as its eager kernel takes them.
std::string node_attr(const FusedProgram& p, size_t j) {
  const auto& n = p.nodes[j];
  bool scalar_exponent = false;
  if (n.kind == OpKind::pow && n.args[1] < 0) {
    const Shape& e = p.inputs[size_t(~n.args[1])].shape;
    int base_rank = n.args[0] < 0 ? p.inputs[size_t(~n.args[0])].shape.rank() : p.node_shape(j).rank();
    scalar_exponent = e.numel() == 1 && e.rank() <= base_rank;
  }
  EwAttr a = n.kind == OpKind::cast ? EwAttr{} : elementwise_attr(n.kind, n.attrs, kernel_dtype(p, n), scalar_exponent);
  return "const Attr p" + std::to_string(j) + " = {" + hexdouble(a.a) + ", " + hexdouble(a.b) + ", " +
         std::to_string(a.ia) + "LL, " + std::to_string(a.ib) + "LL};\n";
}
}  // namespace

std::string fused_kernel_source(const FusedProgram& p, const std::string& modes) {
  EMBER_CHECK(modes.size() == p.inputs.size(), "fused group: ", modes.size(), " input modes for ", p.inputs.size(),
              " inputs");
  std::string s = node_functions(p);
  auto in_t = [&](size_t i) { return std::string(device_type(p.inputs[i].dtype)); };
  auto out_t = [&](size_t k) { return std::string(device_type(p.nodes[size_t(p.outputs[k])].dtype)); };
  // one element: inputs by value, outputs by reference
  s += "__device__ __forceinline__ void fused_op(";
  for (size_t i = 0; i < p.inputs.size(); ++i) s += (i ? ", " : "") + in_t(i) + " in" + std::to_string(i);
  for (size_t k = 0; k < p.outputs.size(); ++k) s += ", " + out_t(k) + "& y" + std::to_string(k);
  s += ") {\n";
  for (size_t j = 0; j < p.nodes.size(); ++j) {
    const auto& n = p.nodes[j];
    const std::string ns = "f" + std::to_string(j);
    s += "  " + node_attr(p, j);
    auto arg = [&](size_t i, const char* type) {
      if (i >= n.args.size()) return ns + "::" + type + "()";
      int32_t x = n.args[i];
      return x < 0 ? "in" + std::to_string(~x) : "t" + std::to_string(x);
    };
    s += "  const " + ns + "::O t" + std::to_string(j) + " = " + ns + "::ew_op(" + arg(0, "T0") + ", " + arg(1, "T1") +
         ", " + arg(2, "T2") + ", p" + std::to_string(j) + ");\n";
  }
  for (size_t k = 0; k < p.outputs.size(); ++k)
    s += "  y" + std::to_string(k) + " = t" + std::to_string(p.outputs[k]) + ";\n";
  s += "}\n";

  // the widest operand among dense inputs and outputs sets the pack width
  size_t widest = 1;
  for (size_t i = 0; i < p.inputs.size(); ++i)
    if (modes[i] == 'd') widest = std::max(widest, dtype_size(p.inputs[i].dtype));
  for (int32_t o : p.outputs) widest = std::max(widest, dtype_size(p.nodes[size_t(o)].dtype));
  s += "#define FVEC " + std::to_string(16 / widest) + "\n";
  s += "template <class E> struct alignas(sizeof(E) * FVEC) FPack { E v[FVEC]; };\n";

  // parameters
  std::string params;
  for (size_t k = 0; k < p.outputs.size(); ++k) params += (k ? ", " : "") + out_t(k) + "* out" + std::to_string(k);
  for (size_t i = 0; i < p.inputs.size(); ++i) params += ", const " + in_t(i) + "* __restrict__ a" + std::to_string(i);
  auto call = [&](const std::vector<std::string>& in, const std::vector<std::string>& out) {
    std::string c = "fused_op(";
    for (size_t i = 0; i < in.size(); ++i) c += (i ? ", " : "") + in[i];
    for (const auto& o : out) c += ", " + o;
    return c + ");";
  };
  // fused_vec
  {
    s += "extern \"C\" __global__ void fused_vec(" + params + ", int64_t n) {\n";
    s += "  const int64_t tid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, nt = int64_t(gridDim.x) * blockDim.x;\n";
    for (size_t i = 0; i < p.inputs.size(); ++i)
      if (modes[i] != 'd')  // ('g' inputs never take this entry: the host checks)
        s += "  const " + in_t(i) + " s" + std::to_string(i) + " = a" + std::to_string(i) + "[0];\n";
    s += "  const int64_t np = n / FVEC;\n";
    s += "  for (int64_t v = tid; v < np; v += nt) {\n";
    std::vector<std::string> in, out;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const std::string si = std::to_string(i);
      if (modes[i] == 'd') {
        s += "    const FPack<" + in_t(i) + "> x" + si + " = reinterpret_cast<const FPack<" + in_t(i) + ">*>(a" + si +
             ")[v];\n";
        in.push_back("x" + si + ".v[e]");
      } else {
        in.push_back("s" + si);
      }
    }
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      s += "    FPack<" + out_t(k) + "> q" + std::to_string(k) + ";\n";
      out.push_back("q" + std::to_string(k) + ".v[e]");
    }
    s += "#pragma unroll\n    for (int e = 0; e < FVEC; ++e) " + call(in, out) + "\n";
    for (size_t k = 0; k < p.outputs.size(); ++k)
      s += "    reinterpret_cast<FPack<" + out_t(k) + ">*>(out" + std::to_string(k) + ")[v] = q" + std::to_string(k) +
           ";\n";
    s += "  }\n";
    s += "  for (int64_t i = np * FVEC + tid; i < n; i += nt) {\n";
    in.clear();
    out.clear();
    for (size_t i = 0; i < p.inputs.size(); ++i)
      in.push_back(modes[i] == 'd' ? "a" + std::to_string(i) + "[i]" : "s" + std::to_string(i));
    for (size_t k = 0; k < p.outputs.size(); ++k) out.push_back("out" + std::to_string(k) + "[i]");
    s += "    " + call(in, out) + "\n  }\n}\n";
  }
  // fused32 / fused64
  for (int bits : {32, 64}) {
    const std::string I = bits == 32 ? "uint32_t" : "int64_t";
    const std::string off = bits == 32 ? "offset_of32" : "offset_of";
    std::string sp;
    for (size_t i = 0; i < p.inputs.size(); ++i)
      if (modes[i] == 'g') sp += ", EMBER_GC Strides st" + std::to_string(i);
    s += "extern \"C\" __global__ void fused" + std::to_string(bits) + "(" + params + ", EMBER_GC Shape sh" + sp + ", " + I +
         " n) {\n";
    s += "  for (" + I + " i = " + I + "(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += " + I +
         "(gridDim.x) * blockDim.x) {\n";
    std::vector<std::string> in, out;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const std::string si = std::to_string(i);
      if (modes[i] == 'd') in.push_back("a" + si + "[i]");
      else if (modes[i] == 's') in.push_back("a" + si + "[0]");
      else in.push_back("a" + si + "[" + off + "(i, sh, st" + si + ")]");
    }
    for (size_t k = 0; k < p.outputs.size(); ++k) out.push_back("out" + std::to_string(k) + "[i]");
    s += "    " + call(in, out) + "\n  }\n}\n";
  }
  return s;
}

std::string fused_rows_source(const FusedProgram& p, const std::string& modes, int threads, int items) {
  EMBER_CHECK(p.is_rows(), "fused rows: not a row program");
  EMBER_CHECK(modes.size() == 2 * p.inputs.size(), "fused rows: ", modes.size(), " mode letters for ",
              p.inputs.size(), " inputs");
  const size_t nn = p.nodes.size(), nin = p.inputs.size();
  const bool cached = items > 0;
  auto is_red = [&](size_t j) { return op_info(p.nodes[j].kind).family == OpFamily::Reduce; };
  auto js = [](size_t j) { return std::to_string(j); };
  auto in_t = [&](size_t i) { return std::string(device_type(p.inputs[i].dtype)); };
  auto node_t = [&](size_t j) { return std::string(device_type(p.nodes[j].dtype)); };
  // the accumulator type of a reduction: double for f64 operands, else float
  auto acc_t = [&](size_t j) { return arg_dtype(p, p.nodes[j].args[0]) == DType::f64 ? "double" : "float"; };

  std::string s = node_functions(p);
  s += "#define ROW_THREADS " + std::to_string(threads) + "\n";
  s += R"(
template <class A> __device__ __forceinline__ A row_max(A a, A b) { return (b != b || b > a) ? b : a; }
template <class A> __device__ __forceinline__ A row_min(A a, A b) { return (b != b || b < a) ? b : a; }
// The block's reduction of v (op 0 sum, 1 max, 2 min); every thread gets the result.
template <int OP, class A> __device__ __forceinline__ A row_combine(A a, A b) {
  return OP == 0 ? a + b : OP == 1 ? row_max(a, b) : row_min(a, b);
}
template <int OP, class A> __device__ __forceinline__ A block_reduce(A v, A identity, A* sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = row_combine<OP>(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (ROW_THREADS > 32) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < ROW_THREADS / 32 ? sh[lane] : identity;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = row_combine<OP>(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
  }
  return v;
}
)";
  // parameters
  std::string params;
  for (size_t k = 0; k < p.outputs.size(); ++k)
    params += (k ? ", " : "") + node_t(size_t(p.outputs[k])) + "* __restrict__ out" + js(k);
  for (size_t i = 0; i < nin; ++i) params += ", const " + in_t(i) + "* __restrict__ a" + js(i);
  params += ", EMBER_GC Shape sh, EMBER_GC Shape rsh";
  for (size_t i = 0; i < nin; ++i)
    if (modes[2 * i] == 'g') params += ", EMBER_GC Strides st" + js(i);
  for (size_t i = 0; i < nin; ++i)
    if (modes[2 * i + 1] == 'g') params += ", EMBER_GC Strides rst" + js(i);
  params += ", int64_t rows, int64_t cols";

  s += "extern \"C\" __global__ void __launch_bounds__(ROW_THREADS) fused_rows(" + params + ") {\n";
  s += "  __shared__ float shf[32];\n  __shared__ double shd[32];\n";
  s += "  const int tid = threadIdx.x;\n";
  for (size_t j = 0; j < nn; ++j)
    if (!is_red(j)) s += "  " + node_attr(p, j);
  for (size_t i = 0; i < nin; ++i)
    if (modes[2 * i] == 's' || modes[2 * i + 1] == 's') s += "  const " + in_t(i) + " s" + js(i) + " = a" + js(i) + "[0];\n";
  s += "  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {\n";
  s += "    const int64_t base = row * cols;\n";
  // per-row reads
  for (size_t i = 0; i < nin; ++i) {
    const char f = modes[2 * i], r = modes[2 * i + 1];
    if (f == 'r') s += "    const " + in_t(i) + " q" + js(i) + " = a" + js(i) + "[row];\n";
    if (r == 'r') s += "    const " + in_t(i) + " ri" + js(i) + " = a" + js(i) + "[row];\n";
    else if (r == 'g') s += "    const " + in_t(i) + " ri" + js(i) + " = a" + js(i) + "[offset_of(row, rsh, rst" + js(i) + ")];\n";
    else if (r == 's') s += "    const " + in_t(i) + " ri" + js(i) + " = s" + js(i) + ";\n";
  }
  // per-element values: full inputs read per element (d, c, g) and full nodes
  auto elem_input = [&](size_t i) { const char f = modes[2 * i]; return f == 'd' || f == 'c' || f == 'g'; };
  std::vector<char> have_in(nin, 0), have_node(nn, 0);  // cached mode: computed in an earlier pass
  if (cached) {
    for (size_t i = 0; i < nin; ++i)
      if (elem_input(i)) s += "    " + in_t(i) + " x" + js(i) + "[" + std::to_string(items) + "];\n";
    for (size_t j = 0; j < nn; ++j)
      if (!p.nodes[j].reduced) s += "    " + node_t(j) + " v" + js(j) + "[" + std::to_string(items) + "];\n";
  }
  auto load = [&](size_t i) {
    const char f = modes[2 * i];
    const std::string a = "a" + js(i);
    if (f == 'd') return a + "[base + c]";
    if (f == 'c') return a + "[c]";
    return a + "[offset_of(base + c, sh, st" + js(i) + ")]";
  };
  // the code of one pass's loop body: computes the full nodes `roots` need (not computed yet)
  // and returns the expression of each root
  auto pass_body = [&](const std::vector<int32_t>& roots, std::vector<char>& hin, std::vector<char>& hnode,
                       std::string& body) {
    std::vector<char> need(nn, 0), need_in(nin, 0);
    for (int32_t r : roots) {
      if (r >= 0 && !p.nodes[size_t(r)].reduced) need[size_t(r)] = 1;
      if (r < 0 && elem_input(size_t(~r))) need_in[size_t(~r)] = 1;
    }
    for (size_t j = nn; j-- > 0;) {
      if (!need[j] || hnode[j]) continue;
      for (int32_t x : p.nodes[j].args) {
        if (x >= 0 && !p.nodes[size_t(x)].reduced) need[size_t(x)] = 1;
        if (x < 0 && elem_input(size_t(~x))) need_in[size_t(~x)] = 1;
      }
    }
    const std::string at = cached ? "[it]" : "";
    for (size_t i = 0; i < nin; ++i)
      if (need_in[i] && !hin[i]) {
        body += cached ? "        x" + js(i) + "[it] = " + load(i) + ";\n"
                       : "        const " + in_t(i) + " x" + js(i) + " = " + load(i) + ";\n";
        hin[i] = 1;
      }
    for (size_t j = 0; j < nn; ++j) {
      if (!need[j] || hnode[j]) continue;
      const auto& n = p.nodes[j];
      std::string call = "f" + js(j) + "::ew_op(";
      for (size_t a = 0; a < 3; ++a) {
        if (a) call += ", ";
        if (a >= n.args.size()) {
          call += "f" + js(j) + "::T" + std::to_string(a) + "()";
          continue;
        }
        const int32_t x = n.args[a];
        if (x >= 0) call += p.nodes[size_t(x)].reduced ? "r" + js(size_t(x)) : "v" + js(size_t(x)) + at;
        else {
          const size_t i = size_t(~x);
          const char f = modes[2 * i];
          call += f == 's' ? "s" + js(i) : f == 'r' ? "q" + js(i) : "x" + js(i) + at;
        }
      }
      call += ", p" + js(j) + ")";
      body += cached ? "        v" + js(j) + "[it] = " + call + ";\n" : "        const " + node_t(j) + " v" + js(j) + " = " + call + ";\n";
      hnode[j] = 1;
    }
  };
  auto value = [&](int32_t x) {
    const std::string at = cached ? "[it]" : "";
    if (x >= 0) return "v" + js(size_t(x)) + at;
    const size_t i = size_t(~x);
    const char f = modes[2 * i];
    return f == 's' ? "s" + js(i) : f == 'r' ? "q" + js(i) : "x" + js(i) + at;
  };
  auto loop = [&](const std::string& body) {
    if (cached)
      return "#pragma unroll\n      for (int it = 0; it < " + std::to_string(items) +
             "; ++it) {\n        const int64_t c = int64_t(it) * ROW_THREADS + tid;\n        if (c < cols) {\n" + body +
             "        }\n      }\n";
    return "      for (int64_t c = tid; c < cols; c += ROW_THREADS) {\n" + body + "      }\n";
  };
  // the reduced nodes, in order
  for (size_t j = 0; j < nn; ++j) {
    const auto& n = p.nodes[j];
    if (!n.reduced) continue;
    const std::string J = js(j), T = node_t(j);
    if (!is_red(j)) {
      std::string call = "f" + J + "::ew_op(";
      for (size_t a = 0; a < 3; ++a) {
        if (a) call += ", ";
        if (a >= n.args.size()) call += "f" + J + "::T" + std::to_string(a) + "()";
        else call += n.args[a] >= 0 ? "r" + js(size_t(n.args[a])) : "ri" + js(size_t(~n.args[a]));
      }
      s += "    const " + T + " r" + J + " = " + call + ", p" + J + ");\n";
      continue;
    }
    const std::string A = acc_t(j), sh = A == std::string("double") ? "shd" : "shf";
    const bool dbl = A == std::string("double");
    const std::string inf = dbl ? "ember_inf_d()" : "ember_inf()";
    const int32_t x = n.args[0];
    s += "    " + A + " acc" + J + ", aux" + J + ";\n";
    // one pass over the row: a = init; a = step(a, v) per element; acc = the block's reduction
    auto fold_pass = [&](const std::string& init, const std::string& step, int op, const std::string& identity) {
      std::string b;
      if (cached) {
        pass_body({x}, have_in, have_node, b);
      } else {
        std::vector<char> hi(nin, 0), hn(nn, 0);
        pass_body({x}, hi, hn, b);
      }
      s += "    {\n      " + A + " a = " + init + ";\n";
      s += loop(b + "        { const " + A + " v = " + A + "(" + value(x) + "); " + step + " }\n");
      s += "      acc" + J + " = block_reduce<" + std::to_string(op) + ">(a, " + A + "(" + identity + "), " + sh + ");\n    }\n";
    };
    switch (n.kind) {
      case OpKind::sum: case OpKind::mean:
        fold_pass("0", "a += v;", 0, "0");
        if (n.kind == OpKind::mean) s += "    acc" + J + " = acc" + J + " / " + A + "(cols);\n";
        break;
      case OpKind::max: fold_pass("-" + inf, "a = row_max(a, v);", 1, "-" + inf); break;
      case OpKind::min: fold_pass(inf, "a = row_min(a, v);", 2, inf); break;
      case OpKind::var: case OpKind::std: {
        fold_pass("0", "a += v;", 0, "0");
        s += "    aux" + J + " = acc" + J + " / " + A + "(cols);\n";
        fold_pass("0", "const " + A + " d = v - aux" + J + "; a += d * d;", 0, "0");
        const std::string corr = std::to_string(std::get<ReduceAttrs>(n.attrs).correction);
        s += "    acc" + J + " = acc" + J + " / (cols - " + corr + " > 0 ? " + A + "(cols - " + corr + ") : " + A + "(0));\n";
        if (n.kind == OpKind::std) s += "    acc" + J + " = " + (dbl ? "sqrt" : "sqrtf") + "(acc" + J + ");\n";
        break;
      }
      case OpKind::logsumexp: {
        fold_pass("-" + inf, "a = row_max(a, v);", 1, "-" + inf);
        s += "    aux" + J + " = isinf(acc" + J + ") ? " + A + "(0) : acc" + J + ";\n";
        fold_pass("0", std::string("a += ") + (dbl ? "exp" : "expf") + "(v - aux" + J + ");", 0, "0");
        s += "    acc" + J + " = " + (dbl ? "log" : "logf") + "(acc" + J + ") + aux" + J + ";\n";
        break;
      }
      default:
        EMBER_CHECK(false, "fused rows: ", op_name(n.kind), " is not a row reduction");
    }
    s += "    const " + T + " r" + J + " = cast_value<" + T + ">(acc" + J + ");\n";
  }
  // outputs
  std::vector<int32_t> full_outs;
  for (int32_t o : p.outputs)
    if (!p.nodes[size_t(o)].reduced) full_outs.push_back(o);
  if (!full_outs.empty()) {
    std::string b;
    if (cached) {
      pass_body(full_outs, have_in, have_node, b);
    } else {
      std::vector<char> hi(nin, 0), hn(nn, 0);
      pass_body(full_outs, hi, hn, b);
    }
    for (size_t k = 0; k < p.outputs.size(); ++k)
      if (!p.nodes[size_t(p.outputs[k])].reduced) b += "        out" + js(k) + "[base + c] = " + value(p.outputs[k]) + ";\n";
    s += "    {\n" + loop(b) + "    }\n";
  }
  for (size_t k = 0; k < p.outputs.size(); ++k)
    if (p.nodes[size_t(p.outputs[k])].reduced) s += "    if (tid == 0) out" + js(k) + "[row] = r" + js(size_t(p.outputs[k])) + ";\n";
  s += "  }\n}\n";
  return s;
}

namespace {

class CudaFusedKernels final : public FusedKernels {
 public:
  explicit CudaFusedKernels(CudaBackend& be) : be_(be) {}

  bool can_fuse(const Op& op) const override {
    if (op.info().family == OpFamily::Reduce) return row_reduction(op);
    if (op.kind == OpKind::matmul)  // a producer: its epilogue joins it (run_matmul)
      return is_float(op.outputs[0].dtype) && op.outputs[0].shape.rank() <= kMaxRank && be_.supports(op);
    if (!is_elementwise(op.info().family) || op.outputs.size() != 1 || op.kind == OpKind::prelu) return false;
    if (op.outputs[0].shape.rank() > kMaxRank) return false;
    if (op.kind == OpKind::cast) return true;
    const DType dt = op.in(op.kind == OpKind::where ? 1 : 0).dtype;
    if (!elementwise_supports(op.kind, dt)) return false;
    switch (op.kind) {  // integer division by zero: as on the CPU, these stay eager
      case OpKind::div: case OpKind::remainder: case OpKind::fmod:
        return is_float(op.outputs[0].dtype);
      default:
        return true;
    }
  }

  // A reduction a row program runs (one block per row): sum, mean, max, min, var, std or
  // logsumexp of f32, f64, f16 or bf16 over trailing dims, with rows enough to fill the GPU or
  // rows short enough for one block (else the eager kernel, which splits long rows, is faster).
  bool row_reduction(const Op& op) const {
    const DType dt = op.in(0).dtype;
    switch (op.kind) {
      case OpKind::sum: case OpKind::mean: case OpKind::max: case OpKind::min:
      case OpKind::var: case OpKind::std: case OpKind::logsumexp: break;
      default: return false;
    }
    if (!is_float(dt) || op.outputs[0].dtype != dt) return false;
    int64_t rows = 0, cols = 0;
    if (op.in(0).shape.rank() > kMaxRank || !reduces_trailing_dims(op, rows, cols) || cols < 2 || rows < 1) return false;
    return rows >= int64_t(be_.sm_count()) || cols <= 16384;
  }

  std::string kernel_name(const FusedProgram& p) const override {
    if (has_producer(p)) return "cublaslt_matmul+" + kernel_name(split_producer(p, true).rest);
    return (p.is_rows() ? "rows_" : "") + fmt_key(p.signature(), "");
  }

  // A matmul program: the product through the backend's own matmul (cuBLASLt, with its bias
  // epilogue for the matmul's bias or for a bias add folded into it), then the rest as one
  // fused kernel reading the product, whose buffer an output takes when nothing else needs it.
  std::vector<PrimitivePtr> run_matmul(const FusedProgram& p, std::vector<PrimitivePtr> inputs) {
    const ProducerSplit split = split_producer(p, true);
    std::vector<PrimitivePtr> operands{inputs[size_t(split.a_input)], inputs[size_t(split.b_input)]};
    if (split.bias_input >= 0) operands.push_back(inputs[size_t(split.bias_input)]);
    PrimitivePtr prod = be_.execute(make_op(OpKind::matmul, std::move(operands), p.nodes[0].attrs))[0];
    std::vector<PrimitivePtr> routs;
    const bool prod_out = std::find(split.outputs.begin(), split.outputs.end(), -1) != split.outputs.end();
    if (!split.rest.nodes.empty()) {
      std::vector<PrimitivePtr> rin(split.rest.inputs.size());
      rin[0] = prod_out ? prod : std::move(prod);
      for (size_t i = 0; i < inputs.size(); ++i)
        if (split.rest_input[i] >= 0) rin[size_t(split.rest_input[i])] = std::move(inputs[i]);
      inputs.clear();
      routs = run(split.rest, std::move(rin));
    }
    std::vector<PrimitivePtr> outs;
    for (int32_t k : split.outputs) outs.push_back(k < 0 ? prod : routs[size_t(k)]);
    return outs;
  }

  std::vector<PrimitivePtr> run(const FusedProgram& p, std::vector<PrimitivePtr> inputs) override {
    EMBER_CHECK(inputs.size() == p.inputs.size(), "fused group: ", inputs.size(), " inputs for ", p.inputs.size());
    EMBER_CHECK(p.shape.rank() <= kMaxRank, "fused group: rank ", p.shape.rank(), " is above ", kMaxRank);
    if (has_producer(p)) return run_matmul(p, std::move(inputs));
    // GPU time of the group for EMBER_TRACE and the EMBER_CUDA_PROFILE table
    OpProfiler::Scope timed([&] {
      const std::string name = kernel_name(p);
      return OpProfiler::Label{name, name + " " + p.shape.str() + " (" + std::to_string(p.nodes.size()) + " ops)",
                               p.describe()};
    }, be_.stream());
    if (p.is_rows()) return run_rows(p, std::move(inputs));
    const Shape& shape = p.shape;
    const int64_t n = shape.numel();
    const size_t nin = inputs.size();
    // modes: 'd' dense, 's' one value, 'g' read through strides
    std::string modes(nin, 'g');
    for (size_t i = 0; i < nin; ++i) {
      const CudaTensor& t = as_cuda(inputs[i]);
      if (t.numel() == 1) modes[i] = 's';
      else if (t.shape() == shape && t.is_contiguous()) modes[i] = 'd';
    }
    // outputs: a dense input's buffer when the call holds it alone, else new
    std::vector<CudaTensorPtr> outs;
    std::vector<bool> reused(nin, false);
    for (int32_t o : p.outputs) {
      TensorMeta meta{shape, p.nodes[size_t(o)].dtype};
      const size_t bytes = size_t(n) * dtype_size(meta.dtype);
      CudaTensorPtr out;
      for (size_t i = 0; i < nin && !out; ++i) {
        if (reused[i] || modes[i] != 'd' || inputs[i].use_count() != 1) continue;
        const CudaTensor& t = as_cuda(inputs[i]);
        if (t.buffer.use_count() == 1 && t.offset == 0 && t.buffer->bytes == bytes &&
            dtype_size(t.dtype()) == dtype_size(meta.dtype)) {
          out = std::make_shared<CudaTensor>(meta, t.buffer, contiguous_strides(shape), 0);
          reused[i] = true;
        }
      }
      outs.push_back(out ? out : alloc(be_, meta));
    }
    if (n == 0) return {outs.begin(), outs.end()};

    const std::string key = fmt_key(p.signature(), modes);
    auto source = [&] { return fused_kernel_source(p, modes); };
    // the pack path: no strided input, every dense pointer on its pack's boundary
    size_t widest = 1;
    for (size_t i = 0; i < nin; ++i)
      if (modes[i] == 'd') widest = std::max(widest, dtype_size(p.inputs[i].dtype));
    for (int32_t o : p.outputs) widest = std::max(widest, dtype_size(p.nodes[size_t(o)].dtype));
    const int64_t vec = int64_t(16 / widest);
    bool packed = modes.find('g') == std::string::npos;
    auto aligned = [&](const void* ptr, DType dt) {
      return reinterpret_cast<uintptr_t>(ptr) % (uintptr_t(dtype_size(dt)) * uintptr_t(vec)) == 0;
    };
    for (size_t i = 0; i < nin && packed; ++i)
      if (modes[i] == 'd' && !aligned(as_cuda(inputs[i]).raw(), p.inputs[i].dtype)) packed = false;
    for (size_t k = 0; k < outs.size() && packed; ++k)
      if (!aligned(outs[k]->raw(), outs[k]->dtype())) packed = false;

    std::vector<void*> ptrs;
    for (auto& o : outs) ptrs.push_back(o->raw());
    for (auto& in : inputs) ptrs.push_back(as_cuda(in).raw());
    std::vector<void*> params;
    for (auto& ptr : ptrs) params.push_back(&ptr);
    const int64_t max_blocks = int64_t(be_.sm_count()) * 16;
    if (packed) {
      int64_t work = std::max<int64_t>(n / vec, 1);
      int64_t blocks = std::min((work + kThreads - 1) / kThreads, max_blocks);
      int64_t nn = n;
      params.push_back(&nn);
      params.push_back(nullptr);
      be_.launch_raw(be_.jit().get(key, "fused_vec", source), dim3(unsigned(blocks)), dim3(kThreads), 0, params.data());
    } else {
      ShapeArg sh;
      sh.rank = shape.rank();
      for (int d = 0; d < shape.rank(); ++d) sh.size[d] = shape[d];
      std::vector<StridesArg> strides;
      strides.reserve(nin);
      for (size_t i = 0; i < nin; ++i)
        if (modes[i] == 'g') {
          StridesArg st;
          auto bs = broadcast_strides(as_cuda(inputs[i]), shape);
          for (size_t d = 0; d < bs.size(); ++d) st.v[d] = bs[d];
          strides.push_back(st);
        }
      params.push_back(&sh);
      for (auto& st : strides) params.push_back(&st);
      const bool small = n < (int64_t(1) << 31);
      uint32_t n32 = uint32_t(n);
      int64_t n64 = n;
      params.push_back(small ? static_cast<void*>(&n32) : static_cast<void*>(&n64));
      params.push_back(nullptr);
      int64_t blocks = std::min((n + kThreads - 1) / kThreads, max_blocks);
      be_.launch_raw(be_.jit().get(key, small ? "fused32" : "fused64", source), dim3(unsigned(blocks)), dim3(kThreads),
                     0, params.data());
    }
    return {outs.begin(), outs.end()};
  }

  std::vector<PrimitivePtr> run_rows(const FusedProgram& p, std::vector<PrimitivePtr> inputs) {
    const Shape& shape = p.shape;
    const int rf = p.reduce_from, rank = shape.rank();
    int64_t rows = 1, cols = 1;
    for (int d = 0; d < rank; ++d) (d < rf ? rows : cols) *= shape[d];
    const size_t nin = inputs.size(), nn = p.nodes.size();
    // who reads each input at which level
    std::vector<char> in_full(nin, 0), in_red(nin, 0);
    for (size_t j = 0; j < nn; ++j) {
      const auto& node = p.nodes[j];
      const bool full_reader = !node.reduced || op_info(node.kind).family == OpFamily::Reduce;
      for (int32_t x : node.args)
        if (x < 0) (full_reader ? in_full : in_red)[size_t(~x)] = 1;
    }
    // modes, two letters per input: at the full level d (dense), c (per column: broadcast over
    // the rows, dense along them), r (per row), s (one value), g (strided), - (not read); at
    // the reduced level r (one per row, dense), s, g, -
    std::string modes(2 * nin, '-');
    std::vector<std::vector<int64_t>> fstr(nin), rstr(nin);
    auto dense_over = [](const Shape& sh, const std::vector<int64_t>& st, int lo, int hi) {
      int64_t e = 1;
      for (int d = hi - 1; d >= lo; --d) {
        if (sh[d] != 1 && st[size_t(d)] != e) return false;
        e *= sh[d];
      }
      return true;
    };
    auto zero_over = [](const Shape& sh, const std::vector<int64_t>& st, int lo, int hi) {
      for (int d = lo; d < hi; ++d)
        if (sh[d] != 1 && st[size_t(d)] != 0) return false;
      return true;
    };
    for (size_t i = 0; i < nin; ++i) {
      const CudaTensor& t = as_cuda(inputs[i]);
      if (in_full[i]) {
        char m = 'g';
        if (t.numel() == 1) m = 's';
        else {
          fstr[i] = broadcast_strides(t, shape);
          const auto& st = fstr[i];
          if (dense_over(shape, st, 0, rank)) m = 'd';
          else if (zero_over(shape, st, 0, rf) && dense_over(shape, st, rf, rank)) m = 'c';
          else if (zero_over(shape, st, rf, rank) && dense_over(shape, st, 0, rf)) m = 'r';
        }
        modes[2 * i] = m;
      }
      if (in_red[i]) {
        char m = 'g';
        if (t.numel() == 1) m = 's';
        else {
          rstr[i] = broadcast_strides(t, p.reduced_shape);
          if (dense_over(p.reduced_shape, rstr[i], 0, p.reduced_shape.rank())) m = 'r';
        }
        modes[2 * i + 1] = m;
      }
    }
    // outputs: a full one may take a dense input's buffer held by the call alone
    std::vector<CudaTensorPtr> outs;
    std::vector<bool> reused(nin, false);
    for (int32_t o : p.outputs) {
      const auto& node = p.nodes[size_t(o)];
      TensorMeta meta{p.node_shape(size_t(o)), node.dtype};
      const size_t bytes = size_t(meta.shape.numel()) * dtype_size(meta.dtype);
      CudaTensorPtr out;
      for (size_t i = 0; i < nin && !out && !node.reduced; ++i) {
        if (reused[i] || modes[2 * i] != 'd' || inputs[i].use_count() != 1) continue;
        const CudaTensor& t = as_cuda(inputs[i]);
        if (t.buffer.use_count() == 1 && t.offset == 0 && t.is_contiguous() && t.buffer->bytes == bytes &&
            dtype_size(t.dtype()) == dtype_size(meta.dtype)) {
          out = std::make_shared<CudaTensor>(meta, t.buffer, contiguous_strides(shape), 0);
          reused[i] = true;
        }
      }
      outs.push_back(out ? out : alloc(be_, meta));
    }
    if (rows * cols == 0) return {outs.begin(), outs.end()};

    // a block per row; each thread keeps `items` elements of every per-element value in
    // registers when the row fits, else the passes recompute them from memory
    int values = 0;
    for (size_t j = 0; j < nn; ++j) values += !p.nodes[j].reduced;
    for (size_t i = 0; i < nin; ++i) values += modes[2 * i] == 'd' || modes[2 * i] == 'c' || modes[2 * i] == 'g';
    const int64_t items_max = std::clamp<int64_t>(96 / std::max(values, 1), 2, 16);
    int threads = 32;
    while (threads < 1024 && int64_t(threads) * items_max < cols) threads *= 2;
    int items = int((cols + threads - 1) / threads);
    if (int64_t(items) > items_max) items = 0;  // (threads == 1024 here)
    const std::string key = fmt_key(p.signature(), modes + "|rows" + std::to_string(threads) + "x" + std::to_string(items));
    auto source = [&] { return fused_rows_source(p, modes, threads, items); };

    std::vector<void*> ptrs;
    for (auto& o : outs) ptrs.push_back(o->raw());
    for (auto& in : inputs) ptrs.push_back(as_cuda(in).raw());
    std::vector<void*> params;
    for (auto& ptr : ptrs) params.push_back(&ptr);
    auto shape_arg = [](const Shape& s) {
      ShapeArg a;
      a.rank = s.rank();
      for (int d = 0; d < s.rank(); ++d) a.size[d] = s[d];
      return a;
    };
    ShapeArg sh = shape_arg(shape), rsh = shape_arg(p.reduced_shape);
    params.push_back(&sh);
    params.push_back(&rsh);
    std::vector<StridesArg> strides;
    strides.reserve(2 * nin);
    for (int level = 0; level < 2; ++level)
      for (size_t i = 0; i < nin; ++i)
        if (modes[2 * i + size_t(level)] == 'g') {
          StridesArg st;
          const auto& v = level == 0 ? fstr[i] : rstr[i];
          for (size_t d = 0; d < v.size(); ++d) st.v[d] = v[d];
          strides.push_back(st);
          params.push_back(&strides.back());
        }
    int64_t rows_arg = rows, cols_arg = cols;
    params.push_back(&rows_arg);
    params.push_back(&cols_arg);
    params.push_back(nullptr);
    const int64_t blocks = std::min<int64_t>(rows, int64_t(be_.sm_count()) * std::max(1, 2048 / threads));
    be_.launch_raw(be_.jit().get(key, "fused_rows", source), dim3(unsigned(blocks)), dim3(unsigned(threads)), 0,
                   params.data());
    return {outs.begin(), outs.end()};
  }

 private:
  CudaBackend& be_;
};

}  // namespace

std::unique_ptr<FusedKernels> make_fused_kernels(CudaBackend& be) { return std::make_unique<CudaFusedKernels>(be); }

}  // namespace ember::cuda
