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
#include <cstdlib>
#include <cstring>
#include <functional>

#include "cuda_backend.hpp"
#include "elementwise_sources.hpp"
#include "matmul.hpp"
#include "ember/core/error.hpp"
#include "ember/core/fused_matmul.hpp"
#include "ember/core/hash.hpp"
#include "profile.hpp"

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
    // two packs a thread in flight, the grid one pass over them (the host sizes it), as the
    // eager flat_vec does
    auto pack_step = [&](const std::vector<std::string>& at) {
      std::string b;
      std::vector<std::vector<std::string>> ins(at.size()), outs(at.size());
      for (size_t u = 0; u < at.size(); ++u) {
        const std::string su = std::to_string(u);
        for (size_t i = 0; i < p.inputs.size(); ++i) {
          const std::string si = std::to_string(i);
          if (modes[i] == 'd') {
            b += "    const FPack<" + in_t(i) + "> x" + si + "_" + su + " = reinterpret_cast<const FPack<" + in_t(i) +
                 ">*>(a" + si + ")[" + at[u] + "];\n";
            ins[u].push_back("x" + si + "_" + su + ".v[e]");
          } else {
            ins[u].push_back("s" + si);
          }
        }
        for (size_t k = 0; k < p.outputs.size(); ++k) {
          b += "    FPack<" + out_t(k) + "> q" + std::to_string(k) + "_" + su + ";\n";
          outs[u].push_back("q" + std::to_string(k) + "_" + su + ".v[e]");
        }
      }
      b += "#pragma unroll\n    for (int e = 0; e < FVEC; ++e) {\n";
      for (size_t u = 0; u < at.size(); ++u) b += "      " + call(ins[u], outs[u]) + "\n";
      b += "    }\n";
      for (size_t u = 0; u < at.size(); ++u)
        for (size_t k = 0; k < p.outputs.size(); ++k)
          b += "    reinterpret_cast<FPack<" + out_t(k) + ">*>(out" + std::to_string(k) + ")[" + at[u] + "] = q" +
               std::to_string(k) + "_" + std::to_string(u) + ";\n";
      return b;
    };
    s += "  int64_t v = tid;\n";
    s += "  for (; v + nt < np; v += 2 * nt) {\n" + pack_step({"v", "v + nt"}) + "  }\n";
    s += "  if (v < np) {\n" + pack_step({"v"}) + "  }\n";
    std::vector<std::string> in, out;
    s += "  for (int64_t i = np * FVEC + tid; i < n; i += nt) {\n";
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

std::string fused_rows_source(const FusedProgram& p, const std::string& modes, int threads, int items, int vec,
                              bool exact) {
  EMBER_CHECK(p.is_rows(), "fused rows: not a row program");
  EMBER_CHECK(vec == 1 || (items > 0 && items % vec == 0), "fused rows: ", items, " items a thread in vectors of ", vec);
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
  s += "#define ROW_VEC " + std::to_string(vec) + "\n";
  s += R"(
// ROW_VEC consecutive elements of a row, read or written as one access
template <class T> struct alignas(sizeof(T) * ROW_VEC) RowVec { T v[ROW_VEC]; };
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
  // in vectors of `vec` (cached mode): a dense or per-column input is read a vector at a time,
  // by the first element of each vector, into the registers of all of them
  auto vector_load = [&](size_t i) {
    const std::string I = js(i), T = in_t(i), a = "a" + I + (modes[2 * i] == 'd' ? " + base + c" : " + c");
    std::string b = "        if (it % ROW_VEC == 0) {\n          const RowVec<" + T + "> q = *reinterpret_cast<const RowVec<" +
                    T + ">*>(" + a + ");\n";
    b += "#pragma unroll\n          for (int u = 0; u < ROW_VEC; ++u) x" + I + "[it + u] = q.v[u];\n        }\n";
    return b;
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
        const char f = modes[2 * i];
        body += vec > 1 && (f == 'd' || f == 'c') ? vector_load(i)
                : cached ? "        x" + js(i) + "[it] = " + load(i) + ";\n"
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
  // element `it` of a thread: column it * threads + tid, or in vectors, element it % vec of
  // vector it / vec, the thread's vectors `threads` vectors apart (so a warp's accesses are
  // contiguous either way); cols is a multiple of vec, so a vector is in the row or past it,
  // and one test per vector guards it. With `exact` (cols == threads * items) every element is
  // in the row and there is no test: on softmax over 4096 columns (256 threads of 16 f32 in
  // vectors) ptxas then allocated 40 registers instead of 89 (63 with a test per vector).
  // (The column index fits an int: cached rows are at most 1024 x 16 elements.)
  auto loop = [&](const std::string& body) {
    if (cached) {
      const std::string first = vec > 1 ? "((it / ROW_VEC) * ROW_THREADS + tid) * ROW_VEC" : "it * ROW_THREADS + tid";
      return "#pragma unroll\n      for (int it = 0; it < " + std::to_string(items) + "; ++it) {\n        const int cv = " +
             first + ", c = cv" + (vec > 1 ? " + it % ROW_VEC" : "") + ";\n        " +
             (exact ? std::string("(void)cv;\n        {\n") : std::string("if (cv < cols) {\n")) + body +
             "        }\n      }\n";
    }
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
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      const int32_t o = p.outputs[k];
      if (p.nodes[size_t(o)].reduced) continue;
      const std::string v = value(o);
      if (vec > 1 && v.size() > 4 && v.compare(v.size() - 4, 4, "[it]") == 0) {  // a vector at its last element
        const std::string T = node_t(size_t(o)), arr = v.substr(0, v.size() - 4);
        b += "        if (it % ROW_VEC == ROW_VEC - 1) {\n          RowVec<" + T + "> q;\n";
        b += "#pragma unroll\n          for (int u = 0; u < ROW_VEC; ++u) q.v[u] = " + arr + "[it + 1 - ROW_VEC + u];\n";
        b += "          *reinterpret_cast<RowVec<" + T + ">*>(out" + js(k) + " + base + c + 1 - ROW_VEC) = q;\n        }\n";
      } else {
        b += "        out" + js(k) + "[base + c] = " + v + ";\n";
      }
    }
    s += "    {\n" + loop(b) + "    }\n";
  }
  for (size_t k = 0; k < p.outputs.size(); ++k)
    if (p.nodes[size_t(p.outputs[k])].reduced) s += "    if (tid == 0) out" + js(k) + "[row] = r" + js(size_t(p.outputs[k])) + ";\n";
  s += "  }\n}\n";
  return s;
}

// A column program's kernels (FusedProgram::reduce_to > 0): the leading dims reduced, one value
// per column. Entries, all with one parameter list (see the host's run_cols):
//   cols_sweep<s>  pass s over the rows (column_sweeps): a block of 32 x 8 threads takes 32
//                  columns of one chunk of `chunk_rows` rows; each thread folds its column's
//                  rows (a stride of 8) into registers, computing the prologue in registers,
//                  then the 8 partials merge in a fixed order and go to part<j>[chunk][col];
//                  sweep 0 also stores the full outputs that read no per-column value;
//   cols_epi<k>    one thread per column: merges the chunks of the reductions whose sweep k - 1
//                  ended, in chunk order (two stages, no atomics: the same bits every run),
//                  ends the pass (mean, var's deviations, logsumexp's shift), and runs the
//                  per-column elementwise nodes ready after k sweeps (the epilogue);
//   cols_out       the full outputs that read per-column values, one thread per element.
// Accumulators are float (double for f64 operands); max and min propagate NaN.
std::string fused_cols_source(const FusedProgram& p, const std::string& modes) {
  EMBER_CHECK(p.is_cols(), "fused cols: not a column program");
  EMBER_CHECK(modes.size() == 2 * p.inputs.size(), "fused cols: ", modes.size(), " mode letters for ", p.inputs.size(),
              " inputs");
  const size_t nn = p.nodes.size(), nin = p.inputs.size();
  const ColumnSweeps sw = column_sweeps(p);
  auto is_red = [&](size_t j) { return op_info(p.nodes[j].kind).family == OpFamily::Reduce; };
  auto js = [](size_t j) { return std::to_string(j); };
  auto in_t = [&](size_t i) { return std::string(device_type(p.inputs[i].dtype)); };
  auto node_t = [&](size_t j) { return std::string(device_type(p.nodes[j].dtype)); };
  auto acc_t = [&](size_t j) {
    return std::string(arg_dtype(p, p.nodes[j].args[0]) == DType::f64 ? "double" : "float");
  };
  auto inf_of = [&](size_t j) {
    return acc_t(j) == "double" ? std::string("ember_inf_d()") : std::string("ember_inf()");
  };
  // a reduction's pass: 0 sum, 1 max, 2 min (the combine), and its identity
  auto pass_op = [&](size_t j, int pass) {
    const OpKind k = p.nodes[j].kind;
    if (k == OpKind::max || (k == OpKind::logsumexp && pass == 0)) return 1;
    return k == OpKind::min ? 2 : 0;
  };
  auto identity = [&](size_t j, int pass) {
    const int op = pass_op(j, pass);
    return op == 0 ? acc_t(j) + "(0)" : op == 1 ? "-" + inf_of(j) : inf_of(j);
  };
  std::vector<int32_t> early, late;  // full outputs, stored in sweep 0 / by cols_out
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const size_t o = size_t(p.outputs[k]);
    if (!p.nodes[o].reduced) (sw.first[o] == 0 && sw.count > 0 ? early : late).push_back(int32_t(k));
  }

  std::string s = node_functions(p);
  s += R"(
template <class A> __device__ __forceinline__ A col_max(A a, A b) { return (b != b || b > a) ? b : a; }
template <class A> __device__ __forceinline__ A col_min(A a, A b) { return (b != b || b < a) ? b : a; }
template <int OP, class A> __device__ __forceinline__ A col_combine(A a, A b) {
  return OP == 0 ? a + b : OP == 1 ? col_max(a, b) : col_min(a, b);
}
)";
  std::string params;
  for (size_t k = 0; k < p.outputs.size(); ++k)
    params += (k ? ", " : "") + node_t(size_t(p.outputs[k])) + "* __restrict__ out" + js(k);
  for (size_t i = 0; i < nin; ++i) params += ", const " + in_t(i) + "* __restrict__ a" + js(i);
  for (size_t j = 0; j < nn; ++j) {
    if (!p.nodes[j].reduced) continue;
    params += ", " + node_t(j) + "* __restrict__ red" + js(j);
    if (is_red(j))
      params += ", " + acc_t(j) + "* __restrict__ part" + js(j) + ", " + acc_t(j) + "* __restrict__ aux" + js(j);
  }
  params += ", EMBER_GC Shape sh, EMBER_GC Shape rsh";
  for (size_t i = 0; i < nin; ++i)
    if (modes[2 * i] == 'g') params += ", EMBER_GC Strides st" + js(i);
  for (size_t i = 0; i < nin; ++i)
    if (modes[2 * i + 1] == 'g') params += ", EMBER_GC Strides rst" + js(i);
  params += ", int64_t rows, int64_t cols, int64_t chunk_rows, int64_t chunks";

  auto attrs = [&] {
    std::string a;
    for (size_t j = 0; j < nn; ++j)
      if (!is_red(j)) a += "  " + node_attr(p, j);
    return a;
  };
  auto call = [&](size_t j, const std::function<std::string(int32_t)>& arg) {
    const auto& n = p.nodes[j];
    std::string c = "f" + js(j) + "::ew_op(";
    for (size_t a = 0; a < 3; ++a) {
      if (a) c += ", ";
      c += a < n.args.size() ? arg(n.args[a]) : "f" + js(j) + "::T" + std::to_string(a) + "()";
    }
    return c + ", p" + js(j) + ")";
  };
  // the full-level code of one element (row r, column c, flat index i) computing `roots`
  auto element = [&](const std::vector<int32_t>& roots, const std::string& ind) {
    std::vector<char> need(nn, 0), need_in(nin, 0);
    for (int32_t r : roots) {
      if (r >= 0)
        need[size_t(r)] = 1;
      else
        need_in[size_t(~r)] = 1;
    }
    for (size_t j = nn; j-- > 0;)
      if (need[j])
        for (int32_t x : p.nodes[j].args) {
          if (x >= 0 && !p.nodes[size_t(x)].reduced) need[size_t(x)] = 1;
          if (x < 0) need_in[size_t(~x)] = 1;
        }
    std::string b;
    for (size_t i = 0; i < nin; ++i) {
      if (!need_in[i]) continue;
      const char f = modes[2 * i];
      const std::string a = "a" + js(i);
      std::string v = f == 'd'   ? a + "[i]"
                      : f == 'c' ? a + "[c]"
                      : f == 'r' ? a + "[r]"
                      : f == 's' ? a + "[0]"
                                 : a + "[offset_of(i, sh, st" + js(i) + ")]";
      b += ind + "const " + in_t(i) + " x" + js(i) + " = " + v + ";\n";
    }
    for (size_t j = 0; j < nn; ++j) {
      if (!need[j] || p.nodes[j].reduced) continue;
      b += ind + "const " + node_t(j) + " v" + js(j) + " = " +
           call(j,
                [&](int32_t x) {
                  return x < 0                        ? "x" + js(size_t(~x))
                         : p.nodes[size_t(x)].reduced ? "red" + js(size_t(x)) + "[c]"
                                                      : "v" + js(size_t(x));
                }) +
           ";\n";
    }
    return b;
  };
  auto value = [&](int32_t x) { return x < 0 ? "x" + js(size_t(~x)) : "v" + js(size_t(x)); };

  // cols_sweep<s>
  for (int sweep = 0; sweep < sw.count; ++sweep) {
    std::vector<std::pair<size_t, int>> folds;  // (node, pass)
    std::vector<int32_t> roots;
    for (size_t j = 0; j < nn; ++j)
      if (is_red(j) && sweep >= sw.first[j] && sweep < sw.ready(p, j)) {
        folds.push_back({j, sweep - sw.first[j]});
        roots.push_back(p.nodes[j].args[0]);
      }
    if (sweep == 0)
      for (int32_t k : early) roots.push_back(p.outputs[size_t(k)]);
    s += "extern \"C\" __global__ void __launch_bounds__(256) cols_sweep" + std::to_string(sweep) + "(" + params +
         ") {\n";
    s += attrs();
    s += "  const int tx = threadIdx.x, ty = threadIdx.y;\n";
    s += "  const int64_t c = int64_t(blockIdx.x) * 32 + tx;\n";
    s += "  const int64_t r0 = int64_t(blockIdx.y) * chunk_rows, r1 = min(rows, r0 + chunk_rows);\n";
    for (auto [j, pass] : folds) s += "  " + acc_t(j) + " acc" + js(j) + " = " + identity(j, pass) + ";\n";
    s += "  if (c < cols) {\n";
    for (auto [j, pass] : folds)
      if (pass == 1) s += "    const " + acc_t(j) + " m" + js(j) + " = aux" + js(j) + "[c];\n";
    s += "    for (int64_t r = r0 + ty; r < r1; r += 8) {\n      const int64_t i = r * cols + c;\n";
    s += element(roots, "      ");
    for (auto [j, pass] : folds) {
      const std::string J = js(j), A = acc_t(j), v = A + "(" + value(p.nodes[j].args[0]) + ")";
      const bool dbl = A == "double";
      const OpKind k = p.nodes[j].kind;
      std::string step;
      if (pass_op(j, pass) == 1)
        step = "acc" + J + " = col_max(acc" + J + ", " + v + ");";
      else if (pass_op(j, pass) == 2)
        step = "acc" + J + " = col_min(acc" + J + ", " + v + ");";
      else if (pass == 0)
        step = "acc" + J + " += " + v + ";";
      else if (k == OpKind::logsumexp)
        step = "acc" + J + " += " + (dbl ? "exp" : "expf") + "(" + v + " - m" + J + ");";
      else
        step = "{ const " + A + " d = " + v + " - m" + J + "; acc" + J + " += d * d; }";
      s += "      " + step + "\n";
    }
    if (sweep == 0)
      for (int32_t k : early) s += "      out" + js(size_t(k)) + "[i] = " + value(p.outputs[size_t(k)]) + ";\n";
    s += "    }\n  }\n";
    // the 8 rows' partials, merged in a fixed order
    for (auto [j, pass] : folds) {
      const std::string J = js(j), A = acc_t(j);
      s += "  {\n    __shared__ " + A + " sp[8][33];\n    sp[ty][tx] = acc" + J + ";\n    __syncthreads();\n";
      s += "    if (ty == 0 && c < cols) {\n      " + A + " a = sp[0][tx];\n";
      s += "      for (int k = 1; k < 8; ++k) a = col_combine<" + std::to_string(pass_op(j, pass)) +
           ">(a, sp[k][tx]);\n";
      s += "      part" + J + "[int64_t(blockIdx.y) * cols + c] = a;\n    }\n    __syncthreads();\n  }\n";
    }
    s += "}\n";
  }
  // cols_epi<k>
  for (int k = 0; k <= sw.count; ++k) {
    s += "extern \"C\" __global__ void cols_epi" + std::to_string(k) + "(" + params + ") {\n";
    s += attrs();
    s += "  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;\n  if (c >= cols) return;\n";
    for (size_t j = 0; j < nn; ++j) {
      if (!is_red(j) || k < 1 || k - 1 < sw.first[j] || k - 1 >= sw.ready(p, j)) continue;
      const int pass = k - 1 - sw.first[j];
      const bool last = pass + 1 == ColumnSweeps::passes(p.nodes[j].kind);
      const std::string J = js(j), A = acc_t(j);
      const bool dbl = A == "double";
      s += "  {\n    " + A + " a = part" + J + "[c];\n";
      s += "    for (int64_t k = 1; k < chunks; ++k) a = col_combine<" + std::to_string(pass_op(j, pass)) +
           ">(a, part" + J + "[k * cols + c]);\n";
      const OpKind kind = p.nodes[j].kind;
      if (!last) {  // var's mean, logsumexp's shift
        if (kind == OpKind::logsumexp)
          s += "    aux" + J + "[c] = isinf(a) ? " + A + "(0) : a;\n";
        else
          s += "    aux" + J + "[c] = a / " + A + "(rows);\n";
      } else {
        if (kind == OpKind::mean) s += "    a = a / " + A + "(rows);\n";
        if (kind == OpKind::var || kind == OpKind::std) {
          const std::string corr = std::to_string(std::get<ReduceAttrs>(p.nodes[j].attrs).correction);
          s += "    a = a / (rows - " + corr + " > 0 ? " + A + "(rows - " + corr + ") : " + A + "(0));\n";
          if (kind == OpKind::std) s += std::string("    a = ") + (dbl ? "sqrt" : "sqrtf") + "(a);\n";
        }
        if (kind == OpKind::logsumexp)
          s += std::string("    a = ") + (dbl ? "log" : "logf") + "(a) + aux" + J + "[c];\n";
        s += "    red" + J + "[c] = cast_value<" + node_t(j) + ">(a);\n";
      }
      s += "  }\n";
    }
    for (size_t j = 0; j < nn; ++j) {
      if (!p.nodes[j].reduced || is_red(j) || sw.first[j] != k) continue;
      s += "  red" + js(j) + "[c] = " +
           call(j,
                [&](int32_t x) -> std::string {
                  if (x >= 0) return "red" + js(size_t(x)) + "[c]";
                  const size_t i = size_t(~x);
                  const char r = modes[2 * i + 1];
                  const std::string a = "a" + js(i);
                  return r == 's' ? a + "[0]" : r == 'r' ? a + "[c]" : a + "[offset_of(c, rsh, rst" + js(i) + ")]";
                }) +
           ";\n";
    }
    s += "}\n";
  }
  // cols_out
  std::vector<int32_t> late_roots;
  for (int32_t k : late) late_roots.push_back(p.outputs[size_t(k)]);
  s += "extern \"C\" __global__ void cols_out(" + params + ") {\n" + attrs();
  s += "  const int64_t n = rows * cols;\n";
  s += "  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * "
       "blockDim.x) {\n";
  s += "    const int64_t r = i / cols, c = i - r * cols;\n    (void)r;\n";
  s += element(late_roots, "    ");
  for (int32_t k : late) s += "    out" + js(size_t(k)) + "[i] = " + value(p.outputs[size_t(k)]) + ";\n";
  s += "  }\n}\n";
  return s;
}

namespace {

class CudaFusedKernels final : public FusedKernels {
 public:
  explicit CudaFusedKernels(CudaBackend& be) : be_(be) {}

  bool can_fuse(const Op& op) const override {
    if (op.info().family == OpFamily::Reduce) return row_reduction(op) || column_reduction(op);
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

  // A reduction a column program runs: the same reductions and dtypes over leading dims.
  bool column_reduction(const Op& op) const {
    switch (op.kind) {
      case OpKind::sum:
      case OpKind::mean:
      case OpKind::max:
      case OpKind::min:
      case OpKind::var:
      case OpKind::std:
      case OpKind::logsumexp:
        break;
      default:
        return false;
    }
    const DType dt = op.in(0).dtype;
    int64_t rows = 0, cols = 0;
    return is_float(dt) && op.outputs[0].dtype == dt && op.in(0).shape.rank() <= kMaxRank &&
           reduces_leading_dims(op, rows, cols);
  }

  std::string kernel_name(const FusedProgram& p) const override {
    if (has_producer(p)) {
      const ProducerSplit split = split_producer(p, true);
      const bool prod_out = std::find(split.outputs.begin(), split.outputs.end(), -1) != split.outputs.end();
      if (residual_input(split, prod_out) >= 0) return "cublaslt_matmul+c";
      return "cublaslt_matmul+" + kernel_name(split.rest);
    }
    return (p.is_rows() ? "rows_" : p.is_cols() ? "cols_" : "") + fmt_key(p.signature(), "");
  }

  // p's input that a matmul program's only epilogue, `add(product, input)`, adds to the product,
  // where cuBLASLt can read it as C (beta 1): of the product's shape and dtype, and the product
  // not an output of its own. -1 otherwise (or when the tensor turns out strided: matmul_plus).
  static int32_t residual_input(const ProducerSplit& split, bool prod_out) {
    const FusedProgram& r = split.rest;
    if (prod_out || r.nodes.size() != 1 || r.outputs.size() != 1 || r.nodes[0].kind != OpKind::add) return -1;
    const std::vector<int32_t>& args = r.nodes[0].args;
    if (args.size() != 2 || (args[0] != ~0 && args[1] != ~0)) return -1;  // (rest's input 0 is the product)
    const int32_t other = ~(args[0] == ~0 ? args[1] : args[0]);
    if (other <= 0 || r.inputs[size_t(other)].shape != r.shape || r.inputs[size_t(other)].dtype != r.nodes[0].dtype ||
        r.inputs[0].dtype != r.nodes[0].dtype)
      return -1;
    for (size_t i = 0; i < split.rest_input.size(); ++i)
      if (split.rest_input[i] == other) return int32_t(i);
    return -1;
  }

  // A matmul program: the product through the backend's own matmul (cuBLASLt, with its bias
  // epilogue for the matmul's bias or for a bias add folded into it), then the rest as one
  // fused kernel reading the product, whose buffer an output takes when nothing else needs it.
  std::vector<PrimitivePtr> run_matmul(const FusedProgram& p, std::vector<PrimitivePtr> inputs) {
    const ProducerSplit split = split_producer(p, true);
    std::vector<PrimitivePtr> operands{inputs[size_t(split.a_input)], inputs[size_t(split.b_input)]};
    if (split.bias_input >= 0) operands.push_back(inputs[size_t(split.bias_input)]);
    Op product = make_op(OpKind::matmul, std::move(operands), p.nodes[0].attrs);
    const bool prod_out = std::find(split.outputs.begin(), split.outputs.end(), -1) != split.outputs.end();
    if (const int32_t i = residual_input(split, prod_out); i >= 0) {
      // the residual add as cuBLASLt's beta * C: no kernel reads the product back
      OpProfiler::Scope timed([&] {
        const std::string name = "cublaslt_matmul+c";
        return OpProfiler::Label{name, name + " " + p.shape.str() + " (2 ops)", p.describe()};
      }, be_.stream());
      if (PrimitivePtr sum = matmul_plus(be_, product, as_cuda(inputs[size_t(i)]))) return {sum};
    }
    PrimitivePtr prod = be_.execute(std::move(product))[0];
    std::vector<PrimitivePtr> routs;
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
    be_.note_captured_inputs(inputs);  // (a CUDA graph checks them at replay)
    if (has_producer(p)) return run_matmul(p, std::move(inputs));
    // GPU time of the group for EMBER_TRACE and the EMBER_CUDA_PROFILE table
    OpProfiler::Scope timed([&] {
      const std::string name = kernel_name(p);
      return OpProfiler::Label{name, name + " " + p.shape.str() + " (" + std::to_string(p.nodes.size()) + " ops)",
                               p.describe()};
    }, be_.stream());
    if (p.is_rows()) return run_rows(p, std::move(inputs));
    if (p.is_cols()) return run_cols(p, std::move(inputs));
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
        if (t.buffer_alone() && t.offset == 0 && t.buffer->bytes == bytes &&
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
      // one pass of blocks over the packs, two a thread (as the eager flat_vec, elementwise.cpp)
      const int64_t blocks = std::clamp<int64_t>((n / vec + 2 * kThreads - 1) / (2 * kThreads), 1, 0x7fffffff);
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
    std::vector<std::vector<int64_t>> fstr, rstr;
    const std::string modes = read_modes(p, inputs, rf, fstr, rstr);
    std::vector<CudaTensorPtr> outs = make_outputs(p, inputs, modes);
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

    std::vector<void*> ptrs;
    for (auto& o : outs) ptrs.push_back(o->raw());
    for (auto& in : inputs) ptrs.push_back(as_cuda(in).raw());
    // Whole vectors of 16 bytes (of the widest dense array) where every dense array allows it:
    // on an H100, softmax from primitives over [8192, 4096] f32 ran in 173 us with a float a
    // thread at a time and 98 us in float4s (a copy: 97 us).
    int vec = 1;
    if (items > 0) {
      size_t widest = 0;
      auto dense_arrays = [&](auto&& f) {
        for (size_t k = 0; k < outs.size(); ++k)
          if (!p.nodes[size_t(p.outputs[k])].reduced) f(ptrs[k], p.nodes[size_t(p.outputs[k])].dtype);
        for (size_t i = 0; i < nin; ++i)
          if (modes[2 * i] == 'd' || modes[2 * i] == 'c') f(ptrs[outs.size() + i], p.inputs[i].dtype);
      };
      dense_arrays([&](void*, DType dt) { widest = std::max(widest, dtype_size(dt)); });
      int v = widest ? int(std::clamp<size_t>(16 / widest, 1, 8)) : 1;
      const int rounded = (items + v - 1) / v * v;
      bool ok = v > 1 && cols % v == 0 && rounded <= std::max<int64_t>(items_max, v);
      dense_arrays([&](void* ptr, DType dt) { ok = ok && reinterpret_cast<uintptr_t>(ptr) % (dtype_size(dt) * size_t(v)) == 0; });
      if (ok) vec = v, items = rounded;
    }
    std::string key = fmt_key(p.signature(), modes + "|rows" + std::to_string(threads) + "x" +
                                                       std::to_string(items) + "v" + std::to_string(vec));
    const bool exact = items > 0 && int64_t(threads) * items == cols;
    if (exact) key += "x";
    auto source = [&] { return fused_rows_source(p, modes, threads, items, vec, exact); };
    ProgramArgs args(std::move(ptrs), p, modes, fstr, rstr);
    std::vector<void*>& params = args.params;
    int64_t rows_arg = rows, cols_arg = cols;
    params.push_back(&rows_arg);
    params.push_back(&cols_arg);
    params.push_back(nullptr);
    // a block per row up to 64 an SM (the kernel strides over the rest): on an H100, softmax
    // from primitives over [8192, 4096] f32 in float4s took 98 us with 8192 blocks and 103 us
    // with 1056 (8 an SM), in a standalone run of the generated kernel
    const int64_t blocks = std::min<int64_t>(rows, int64_t(be_.sm_count()) * 64);
    be_.launch_raw(be_.jit().get(key, "fused_rows", source), dim3(unsigned(blocks)), dim3(unsigned(threads)), 0,
                   params.data());
    return {outs.begin(), outs.end()};
  }

  // A column program: the kernels of fused_cols_source, launched pass by pass on the stream
  // (cols_epi0, then cols_sweep<s> and cols_epi<s+1> per sweep, then cols_out). The chunks of
  // rows depend on the shape only, so a column's sum is the same every run.
  std::vector<PrimitivePtr> run_cols(const FusedProgram& p, std::vector<PrimitivePtr> inputs) {
    const Shape& shape = p.shape;
    const int split = p.reduce_to;
    int64_t rows = 1, cols = 1;
    for (int d = 0; d < shape.rank(); ++d) (d < split ? rows : cols) *= shape[d];
    const size_t nn = p.nodes.size();
    std::vector<std::vector<int64_t>> fstr, rstr;
    const std::string modes = read_modes(p, inputs, split, fstr, rstr);
    const ColumnSweeps sw = column_sweeps(p);
    bool late = false;  // a full output that reads per-column values (cols_out stores it)
    for (int32_t o : p.outputs)
      late = late || (!p.nodes[size_t(o)].reduced && !(sw.first[size_t(o)] == 0 && sw.count > 0));
    // an output may take an input's buffer only when nothing reads the input after it is stored
    std::vector<CudaTensorPtr> outs = make_outputs(p, inputs, modes, sw.count <= 1 && !late);
    if (cols == 0) return {outs.begin(), outs.end()};
    const int64_t chunk_rows = std::max<int64_t>(256, (rows + 4095) / 4096);
    const int64_t chunks = std::max<int64_t>(1, (rows + chunk_rows - 1) / chunk_rows);
    // scratch: the per-column values (an output's buffer when the node is one), and per
    // reduction the chunks' partials and the first pass's per-column result
    std::vector<CudaTensorPtr> scratch;
    std::vector<void*> ptrs;
    for (auto& o : outs) ptrs.push_back(o->raw());
    for (auto& in : inputs) ptrs.push_back(as_cuda(in).raw());
    for (size_t j = 0; j < nn; ++j) {
      const auto& node = p.nodes[j];
      if (!node.reduced) continue;
      void* red = nullptr;
      for (size_t k = 0; k < p.outputs.size() && !red; ++k)
        if (size_t(p.outputs[k]) == j) red = outs[k]->raw();
      if (!red) {
        scratch.push_back(alloc(be_, TensorMeta{Shape{cols}, node.dtype}));
        red = scratch.back()->raw();
      }
      ptrs.push_back(red);
      if (op_info(node.kind).family != OpFamily::Reduce) continue;
      const DType acc = arg_dtype(p, node.args[0]) == DType::f64 ? DType::f64 : DType::f32;
      scratch.push_back(alloc(be_, TensorMeta{Shape{chunks * cols}, acc}));
      ptrs.push_back(scratch.back()->raw());
      scratch.push_back(alloc(be_, TensorMeta{Shape{cols}, acc}));
      ptrs.push_back(scratch.back()->raw());
    }
    ProgramArgs args(std::move(ptrs), p, modes, fstr, rstr);
    std::vector<void*>& params = args.params;
    int64_t rows_arg = rows, cols_arg = cols, chunk_rows_arg = chunk_rows, chunks_arg = chunks;
    params.push_back(&rows_arg);
    params.push_back(&cols_arg);
    params.push_back(&chunk_rows_arg);
    params.push_back(&chunks_arg);
    params.push_back(nullptr);
    const std::string key = fmt_key(p.signature(), modes + "|cols");
    auto source = [&] { return fused_cols_source(p, modes); };
    const unsigned col_blocks = unsigned((cols + 255) / 256);
    auto epi = [&](int k) {
      be_.launch_raw(be_.jit().get(key, ("cols_epi" + std::to_string(k)).c_str(), source), dim3(col_blocks), dim3(256),
                     0, params.data());
    };
    epi(0);
    for (int s = 0; s < sw.count; ++s) {
      be_.launch_raw(be_.jit().get(key, ("cols_sweep" + std::to_string(s)).c_str(), source),
                     dim3(unsigned((cols + 31) / 32), unsigned(chunks)), dim3(32, 8), 0, params.data());
      epi(s + 1);
    }
    if (late && rows > 0) {
      const int64_t blocks = std::min<int64_t>((rows * cols + 255) / 256, int64_t(be_.sm_count()) * 16);
      be_.launch_raw(be_.jit().get(key, "cols_out", source), dim3(unsigned(blocks)), dim3(256), 0, params.data());
    }
    return {outs.begin(), outs.end()};
  }

  // How a row or column program reads each input (rows x cols: the dims before `split` and
  // those from it), two letters per input: at the full level d (dense), c (per column: broadcast
  // over the rows, dense along them), r (per row), s (one value), g (strided), - (not read); at
  // the reduced level r (dense over the reduced values), s, g, -. fstr / rstr: the strides of
  // the 'g' inputs against the domain / the reduced shape.
  static std::string read_modes(const FusedProgram& p, const std::vector<PrimitivePtr>& inputs, int split,
                                std::vector<std::vector<int64_t>>& fstr, std::vector<std::vector<int64_t>>& rstr) {
    const Shape& shape = p.shape;
    const int rank = shape.rank(), rf = split;
    const size_t nin = inputs.size(), nn = p.nodes.size();
    std::vector<char> in_full(nin, 0), in_red(nin, 0);
    for (size_t j = 0; j < nn; ++j) {
      const auto& node = p.nodes[j];
      const bool full_reader = !node.reduced || op_info(node.kind).family == OpFamily::Reduce;
      for (int32_t x : node.args)
        if (x < 0) (full_reader ? in_full : in_red)[size_t(~x)] = 1;
    }
    std::string modes(2 * nin, '-');
    fstr.assign(nin, {});
    rstr.assign(nin, {});
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
    return modes;
  }

  // The outputs: a full one may take a dense input's buffer held by the call alone.
  std::vector<CudaTensorPtr> make_outputs(const FusedProgram& p, const std::vector<PrimitivePtr>& inputs,
                                          const std::string& modes, bool reuse = true) {
    const Shape& shape = p.shape;
    const size_t nin = inputs.size();
    std::vector<CudaTensorPtr> outs;
    std::vector<bool> reused(nin, false);
    for (int32_t o : p.outputs) {
      const auto& node = p.nodes[size_t(o)];
      TensorMeta meta{p.node_shape(size_t(o)), node.dtype};
      const size_t bytes = size_t(meta.shape.numel()) * dtype_size(meta.dtype);
      CudaTensorPtr out;
      for (size_t i = 0; i < nin && !out && !node.reduced && reuse; ++i) {
        if (reused[i] || modes[2 * i] != 'd' || inputs[i].use_count() != 1) continue;
        const CudaTensor& t = as_cuda(inputs[i]);
        if (t.buffer_alone() && t.offset == 0 && t.is_contiguous() && t.buffer->bytes == bytes &&
            dtype_size(t.dtype()) == dtype_size(meta.dtype)) {
          out = std::make_shared<CudaTensor>(meta, t.buffer, contiguous_strides(shape), 0);
          reused[i] = true;
        }
      }
      outs.push_back(out ? out : alloc(be_, meta));
    }
    return outs;
  }

  static ShapeArg shape_arg(const Shape& s) {
    ShapeArg a;
    a.rank = s.rank();
    for (int d = 0; d < s.rank(); ++d) a.size[d] = s[d];
    return a;
  }

  // The launch arguments that row and column programs share, in their kernels' order: the
  // buffers, the shapes of both levels, then the strides of each gathered input ('g' in `modes`),
  // the full level's first. It owns what `params` points at; a kernel's trailing scalars are
  // pushed by the caller.
  struct ProgramArgs {
    ProgramArgs(std::vector<void*> buffers, const FusedProgram& p, const std::string& modes,
                const std::vector<std::vector<int64_t>>& fstr, const std::vector<std::vector<int64_t>>& rstr)
        : ptrs(std::move(buffers)), sh(shape_arg(p.shape)), rsh(shape_arg(p.reduced_shape)) {
      const size_t nin = fstr.size();
      for (auto& ptr : ptrs) params.push_back(&ptr);
      params.push_back(&sh);
      params.push_back(&rsh);
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
    }
    ProgramArgs(const ProgramArgs&) = delete;
    ProgramArgs& operator=(const ProgramArgs&) = delete;
    std::vector<void*> ptrs;
    ShapeArg sh, rsh;
    std::vector<StridesArg> strides;
    std::vector<void*> params;
  };

 private:
  CudaBackend& be_;
};

}  // namespace

std::unique_ptr<FusedKernels> make_fused_kernels(CudaBackend& be) { return std::make_unique<CudaFusedKernels>(be); }

}  // namespace ember::cuda
