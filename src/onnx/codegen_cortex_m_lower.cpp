// Lowering for `ember-onnx generate --target cortex-m`: each ONNX node (or a run of nodes fused
// into one kernel call) becomes a step of the generated run(). codegen_cortex_m.hpp has the
// emitter; codegen_cortex_m.cpp plans and writes the files.
#include "codegen_cortex_m.hpp"

namespace ember::onnx::cortex_m {

// ---- lowering ----------------------------------------------------------------------------

// The Conv2dShape of a Conv or QLinearConv node with input, weight and output shapes x, ws, y
// (rank 3 or 4; a 1-D convolution is one of height 1), as C++ initialiser arguments.
std::string CortexMEmitter::conv_shape(const NodeProto& n, std::vector<int64_t> x, std::vector<int64_t> ws,
                                       std::vector<int64_t> y) {
  if (x.size() != 3 && x.size() != 4) unsupported(n, "only 1-D and 2-D convolutions are supported");
  const bool one_d = x.size() == 3;
  if (one_d) {  // 1-D: a 2-D convolution of height 1
    x.insert(x.begin() + 2, 1);
    y.insert(y.begin() + 2, 1);
    ws.insert(ws.begin() + 2, 1);
  }
  auto pick = [&](const std::vector<int64_t>& v, int64_t fallback) -> std::pair<int64_t, int64_t> {
    if (v.empty()) return {fallback, fallback};
    if (one_d) return {1, v[0]};
    return {v[0], v[1]};
  };
  auto [sh, sw] = pick(attr_ints(n, "strides", {}), 1);
  auto [dh, dw] = pick(attr_ints(n, "dilations", {}), 1);
  const int64_t groups = attr_int(n, "group", 1);
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  int64_t pt = 0, pl = 0;
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = attr_ints(n, "pads", {});
    if (!pads.empty()) {
      if (one_d)
        pl = pads[0];
      else {
        pt = pads[0];
        pl = pads[1];
      }
    }
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    auto total = [&](int64_t in, int64_t o, int64_t s, int64_t kk, int64_t d) {
      return std::max<int64_t>(0, (o - 1) * s + (kk - 1) * d + 1 - in);
    };
    const int64_t th = total(x[2], y[2], sh, ws[2], dh), tw = total(x[3], y[3], sw, ws[3], dw);
    pt = auto_pad == "SAME_UPPER" ? th / 2 : th - th / 2;
    pl = auto_pad == "SAME_UPPER" ? tw / 2 : tw - tw / 2;
  } else if (auto_pad != "VALID") {
    unsupported(n, "auto_pad " + auto_pad);
  }
  std::ostringstream c;
  c << x[1] << ", " << x[2] << ", " << x[3] << ", " << y[1] << ", " << y[2] << ", " << y[3] << ", " << ws[2] << ", "
    << ws[3] << ", " << sh << ", " << sw << ", " << pt << ", " << pl << ", " << dh << ", " << dw << ", " << groups;
  return c.str();
}

void CortexMEmitter::lower_conv(size_t k) {
  const NodeProto& n = graph_.nodes[k];
  if (n.inputs.size() < 2) unsupported(n, "needs X and W");
  const TensorData* w = constant(n.inputs[1]);
  if (!w) unsupported(n, "the weight must be an initializer");
  const TensorData* bias = n.inputs.size() > 2 && !n.inputs[2].empty() ? constant(n.inputs[2]) : nullptr;
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && !bias) unsupported(n, "the bias must be an initializer");
  const std::vector<int64_t> x = shape_of(n, n.inputs[0]), ws = w->shape().dims();
  std::string out = n.outputs[0];
  const std::string geometry = conv_shape(n, x, ws, shape_of(n, out));
  std::vector<float> weight = floats_of(*w);
  std::vector<float> b = bias ? floats_of(*bias) : std::vector<float>(size_t(ws[0]), 0.0f);
  std::string fused;
  // A BatchNormalization (inference, constant statistics) that alone reads the output: folded.
  size_t bn_index = 0;
  if (const NodeProto* bn = sole_reader(out, &bn_index); bn && bn->op_type == "BatchNormalization" &&
                                                         bn->inputs.size() == 5 && bn->outputs.size() >= 1 &&
                                                         attr_int(*bn, "training_mode", 0) == 0) {
    const TensorData *scale = constant(bn->inputs[1]), *shift = constant(bn->inputs[2]),
                     *mean = constant(bn->inputs[3]), *var = constant(bn->inputs[4]);
    if (scale && shift && mean && var && scale->numel() == ws[0]) {
      const double eps = attr_float(*bn, "epsilon", 1e-5f);
      std::vector<float> sc = floats_of(*scale), sf = floats_of(*shift), mu = floats_of(*mean), va = floats_of(*var);
      const int64_t per_filter = product(ws, 1);
      for (int64_t m = 0; m < ws[0]; ++m) {
        const double f = double(sc[size_t(m)]) / std::sqrt(double(va[size_t(m)]) + eps);
        for (int64_t i = 0; i < per_filter; ++i)
          weight[size_t(m * per_filter + i)] = float(double(weight[size_t(m * per_filter + i)]) * f);
        b[size_t(m)] = float((double(b[size_t(m)]) - mu[size_t(m)]) * f + sf[size_t(m)]);
      }
      done_[bn_index] = true;
      out = bn->outputs[0];
      fused += " + '" + comment_text(bn->name) + "' (BatchNormalization, folded)";
    }
  }
  const std::string clamp = fuse_activation(out, fused);
  const std::string wn = add_weight(n.inputs[1] + (fused.empty() ? "" : " (folded)"), std::move(weight));
  const std::string bn = add_weight(bias ? n.inputs[2] : n.inputs[1] + " (bias)", std::move(b));
  const std::vector<int64_t> y = shape_of(n, out);
  const std::string in = ptr(n, n.inputs[0]);
  const std::string o = define(out, product(y));
  kernel_headers_.insert("conv");
  std::ostringstream c;
  c << comment(n, fused, x, y);
  c << "  {\n    static constexpr Conv2dShape s{" << geometry << "};\n";
  const int64_t in_image = product(x, 1), out_image = product(y, 1);
  if (x[0] == 1) {
    c << "    if (Status st = conv2d_f32(s, " << in << ", " << wn << ", " << bn << ", " << o << ", " << clamp
      << "); st != Status::ok) return st;\n";
  } else {
    c << "    for (int32_t n = 0; n < " << x[0] << "; ++n)\n      if (Status st = conv2d_f32(s, " << in << " + n * "
      << in_image << ", " << wn << ", " << bn << ", " << o << " + n * " << out_image << ", " << clamp
      << "); st != Status::ok) return st;\n";
  }
  c << "  }\n";
  add_step(c.str());
}

void CortexMEmitter::lower_dense(size_t k) {
  const NodeProto& n = graph_.nodes[k];
  const std::vector<int64_t> a = shape_of(n, n.inputs[0]);
  std::vector<float> weight;  // [out, in]
  std::vector<float> bias;
  std::vector<float> matrix_bias;  // Gemm's C of [M, N]: added after the product
  int64_t in_f = 0, out_f = 0;
  std::string out = n.outputs[0];
  std::string fused;
  const bool trans_a = n.op_type == "Gemm" && attr_int(n, "transA", 0) != 0;  // A [K, M]: transposed first
  if (n.op_type == "Gemm") {
    const TensorData* b = constant(n.inputs[1]);
    if (!b || b->shape().rank() != 2) unsupported(n, "B must be a 2-D initializer");
    if (a.size() != 2) unsupported(n, "A must be 2-D");
    const float alpha = attr_float(n, "alpha", 1.0f), beta = attr_float(n, "beta", 1.0f);
    const bool trans_b = attr_int(n, "transB", 0) != 0;
    const std::vector<int64_t> bs = b->shape().dims();
    in_f = trans_b ? bs[1] : bs[0];
    out_f = trans_b ? bs[0] : bs[1];
    std::vector<float> bv = floats_of(*b);
    weight.resize(size_t(in_f * out_f));
    for (int64_t o = 0; o < out_f; ++o)
      for (int64_t i = 0; i < in_f; ++i)
        weight[size_t(o * in_f + i)] = alpha * (trans_b ? bv[size_t(o * in_f + i)] : bv[size_t(i * out_f + o)]);
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const TensorData* c = constant(n.inputs[2]);
      if (!c) unsupported(n, "C must be an initializer");
      std::vector<float> cv = floats_of(*c);
      if (cv.size() == 1) cv.assign(size_t(out_f), cv[0]);
      for (float& v : cv) v *= beta;
      const int64_t rows = trans_a ? a[1] : a[0];
      const std::vector<int64_t> cd = c->shape().dims();
      if (c->numel() == 1 || (c->numel() == out_f && !cd.empty() && cd.back() == out_f))
        bias = std::move(cv);
      else if (int64_t(cv.size()) == rows * out_f)
        matrix_bias = std::move(cv);
      else
        unsupported(n, "C must hold N values, one, or M x N (a per-row C is not supported)");
    }
  } else {  // MatMul with a constant [K, N], maybe followed by the Add of a bias
    const TensorData* b = constant(n.inputs[1]);
    if (!b || b->shape().rank() != 2) unsupported(n, "only MatMul by a 2-D initializer is supported");
    const std::vector<int64_t> bs = b->shape().dims();
    in_f = bs[0];
    out_f = bs[1];
    std::vector<float> bv = floats_of(*b);
    weight.resize(size_t(in_f * out_f));
    for (int64_t o = 0; o < out_f; ++o)
      for (int64_t i = 0; i < in_f; ++i) weight[size_t(o * in_f + i)] = bv[size_t(i * out_f + o)];
    size_t add_index = 0;
    if (const NodeProto* add = sole_reader(out, &add_index); add && add->op_type == "Add" && add->inputs.size() == 2) {
      const std::string& other = add->inputs[0] == out ? add->inputs[1] : add->inputs[0];
      const TensorData* c = constant(other);
      if (c && c->numel() == out_f && shape_of(*add, add->outputs[0]) == shape_of(n, out)) {
        bias = floats_of(*c);
        done_[add_index] = true;
        out = add->outputs[0];
        fused += " + '" + comment_text(add->name) + "' (Add)";
      }
    }
  }
  if (a.empty() || (trans_a ? a[0] : a.back()) != in_f) unsupported(n, "A's inner dim must equal B's rows");
  const std::string clamp = fuse_activation(out, fused);
  const std::string wn = add_weight(n.inputs[1] + " (as [out, in])", std::move(weight));
  const std::string bn = bias.empty() ? "nullptr" : add_weight("bias of " + n.name, std::move(bias));
  std::string in = ptr(n, n.inputs[0]);
  const std::vector<int64_t> y = shape_of(n, out);
  std::ostringstream c;
  c << comment(n, fused, a, y);
  if (trans_a) {  // A^T into a scratch buffer of its own, one step before the product
    const int scratch = new_buffer(product(a));
    use(scratch);
    kernel_headers_.insert("elementwise");
    c << "  {\n    static constexpr int32_t dims[] = {" << a[0] << ", " << a[1]
      << "}, perm[] = {1, 0};\n    if (Status st = transpose_f32(2, dims, perm, " << in << ", b" << scratch
      << "); st != Status::ok) return st;\n  }\n";
    add_step(c.str());
    c.str("");
    use(scratch);  // read by the product, the next step
    in = buffer_name(scratch);
  }
  const std::string o = define(out, product(y));
  kernel_headers_.insert("dense");
  const bool add_after = !matrix_bias.empty();
  c << "  dense_f32(" << product(a) / in_f << ", " << in_f << ", " << out_f << ", " << in << ", " << wn << ", " << bn
    << ", " << o << ", " << (add_after ? "kNoClamp" : clamp) << ");\n";
  if (add_after) {
    kernel_headers_.insert("elementwise");
    const std::string cn = add_weight(n.inputs[2] + " (times beta)", std::move(matrix_bias));
    c << "  add_f32(" << product(y) << ", " << o << ", " << cn << ", " << o << ", " << clamp << ");\n";
  }
  add_step(c.str());
}

void CortexMEmitter::lower_add(size_t k) {
  const NodeProto& n = graph_.nodes[k];
  if (n.inputs.size() != 2) unsupported(n, "needs two inputs");
  std::string out = n.outputs[0];
  const std::vector<int64_t> y = shape_of(n, out);
  const TensorData *c0 = constant(n.inputs[0]), *c1 = constant(n.inputs[1]);
  std::string fused;
  std::ostringstream c;
  kernel_headers_.insert("elementwise");
  if (!c0 && !c1) {
    if (shape_of(n, n.inputs[0]) != y || shape_of(n, n.inputs[1]) != y)
      unsupported(n, "broadcasting between two computed values is not supported");
    const std::string clamp = fuse_activation(out, fused);
    const std::string a = ptr(n, n.inputs[0]), b = ptr(n, n.inputs[1]);
    std::string o = define_in_place(k, n.inputs[0], out, product(y));
    if (o != a) o = define_in_place(k, n.inputs[1], out, product(y));
    c << comment(n, fused, y, y) << "  add_f32(" << product(y) << ", " << a << ", " << b << ", " << o << ", " << clamp
      << ");\n";
    add_step(c.str());
    return;
  }
  if (c0 && c1) unsupported(n, "both inputs are constants (constant folding should have removed it)");
  const std::string& xv = c0 ? n.inputs[1] : n.inputs[0];
  const TensorData& cst = c0 ? *c0 : *c1;
  if (shape_of(n, xv) != y) unsupported(n, "the computed input must have the output's shape");
  // The constant's broadcast shape, right-aligned to y: at most one dim other than 1.
  std::vector<int64_t> cs = cst.shape().dims();
  while (cs.size() < y.size()) cs.insert(cs.begin(), 1);
  int64_t axis = -1;
  for (size_t i = 0; i < cs.size(); ++i)
    if (cs[i] != 1) {
      if (axis >= 0 || cs[i] != y[i]) {
        if (cst.shape().dims() == y)
          axis = -2;  // same shape: elementwise
        else
          unsupported(
              n, "the constant " + shape_str(cst.shape().dims()) + " must be one value, one per channel, or y's shape");
        break;
      }
      axis = int64_t(i);
    }
  const std::string clamp = fuse_activation(out, fused);
  const std::string x = ptr(n, xv);
  const std::string o = define_in_place(k, xv, out, product(y));
  c << comment(n, fused, y, y);
  if (axis == -2) {
    const std::string wn = add_weight(c0 ? n.inputs[0] : n.inputs[1], floats_of(cst));
    c << "  add_f32(" << product(y) << ", " << x << ", " << wn << ", " << o << ", " << clamp << ");\n";
  } else {
    const std::string wn = add_weight(c0 ? n.inputs[0] : n.inputs[1], floats_of(cst));
    const size_t ax = axis < 0 ? 0 : size_t(axis);
    const int64_t outer = axis < 0 ? product(y) : product(y, 0, ax), ch = axis < 0 ? 1 : y[ax],
                  inner = axis < 0 ? 1 : product(y, ax + 1);
    c << "  add_channel_f32(" << outer << ", " << ch << ", " << inner << ", " << x << ", " << wn << ", " << o << ", "
      << clamp << ");\n";
  }
  add_step(c.str());
}

void CortexMEmitter::lower_pool(size_t k) {
  const NodeProto& n = graph_.nodes[k];
  std::vector<int64_t> x = shape_of(n, n.inputs[0]);
  const std::vector<int64_t> y = shape_of(n, n.outputs[0]);
  if (n.outputs.size() > 1 && !n.outputs[1].empty()) unsupported(n, "the Indices output is not supported");
  if (x.size() != 3 && x.size() != 4) unsupported(n, "only 1-D and 2-D pooling is supported");
  const bool one_d = x.size() == 3;
  const bool u8 = is_u8(n.inputs[0]);  // ember-onnx quantize's u8 MaxPool
  if (u8 && n.op_type != "MaxPool") unsupported(n, "UINT8 input (only MaxPool takes one)");
  const std::string in = ptr(n, n.inputs[0], u8 ? "uint8_t" : "float");
  const std::string o = u8 ? define_u8(n.outputs[0], product(y)) : define(n.outputs[0], product(y));
  kernel_headers_.insert(u8 ? "quantized" : "pool");
  std::ostringstream c;
  c << comment(n, "", x, y);
  if (n.op_type == "GlobalAveragePool") {
    c << "  global_avg_pool_f32(" << x[0] * x[1] << ", " << product(x, 2) << ", " << in << ", " << o << ");\n";
    add_step(c.str());
    return;
  }
  std::vector<int64_t> ys = y;
  if (one_d) {
    x.insert(x.begin() + 2, 1);
    ys.insert(ys.begin() + 2, 1);
  }
  auto two = [&](std::vector<int64_t> v, int64_t fallback) -> std::vector<int64_t> {
    if (v.empty()) return {fallback, fallback};
    if (one_d) return {fallback == 0 ? 0 : 1, v[0]};
    return v;
  };
  std::vector<int64_t> kernel =
      n.op_type == "GlobalMaxPool" ? std::vector<int64_t>{x[2], x[3]} : two(attr_ints(n, "kernel_shape", {}), 1);
  if (one_d && n.op_type != "GlobalMaxPool") kernel = {1, attr_ints(n, "kernel_shape", {1})[0]};
  const std::vector<int64_t> strides = two(attr_ints(n, "strides", {}), 1);
  const std::vector<int64_t> dil = two(attr_ints(n, "dilations", {}), 1);
  std::vector<int64_t> pads = attr_ints(n, "pads", {});
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  if (!pads.empty()) {
    if (one_d) {
      pl = pads[0];
      pr = pads[1];
    } else {
      pt = pads[0];
      pl = pads[1];
      pb = pads[2];
      pr = pads[3];
    }
  }
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const int64_t th = std::max<int64_t>(0, (ys[2] - 1) * strides[0] + kernel[0] - x[2]);
    const int64_t tw = std::max<int64_t>(0, (ys[3] - 1) * strides[1] + kernel[1] - x[3]);
    pt = auto_pad == "SAME_UPPER" ? th / 2 : th - th / 2;
    pl = auto_pad == "SAME_UPPER" ? tw / 2 : tw - tw / 2;
    pb = th - pt;
    pr = tw - pl;
  } else if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    unsupported(n, "auto_pad " + auto_pad);
  }
  c << "  {\n    static constexpr Pool2dShape s{" << x[0] * x[1] << ", " << x[2] << ", " << x[3] << ", " << ys[2]
    << ", " << ys[3] << ", " << kernel[0] << ", " << kernel[1] << ", " << strides[0] << ", " << strides[1] << ", " << pt
    << ", " << pl << ", " << pb << ", " << pr << ", " << dil[0] << ", " << dil[1] << "};\n";
  if (n.op_type == "AveragePool") {
    if (dil[0] != 1 || dil[1] != 1) unsupported(n, "dilated average pooling");
    c << "    avg_pool2d_f32(s, " << (attr_int(n, "count_include_pad", 0) ? "true" : "false") << ", " << in << ", " << o
      << ");\n";
  } else {
    c << "    max_pool2d_" << (u8 ? "u8" : "f32") << "(s, " << in << ", " << o << ");\n";
  }
  c << "  }\n";
  add_step(c.str());
}

void CortexMEmitter::lower_rnn(size_t k) {
  const NodeProto& n = graph_.nodes[k];
  const bool lstm = n.op_type == "LSTM";
  if (attr_string(n, "direction", "forward") != "forward") unsupported(n, "only direction \"forward\" is supported");
  if (attr_int(n, "layout", 0) != 0) unsupported(n, "layout 1 (batch first) is not supported");
  if (n.attribute("activations") || n.attribute("clip")) unsupported(n, "custom activations or clip");
  if (lstm && attr_int(n, "input_forget", 0) != 0) unsupported(n, "input_forget");
  const std::vector<int64_t> x = shape_of(n, n.inputs[0]);
  if (x.size() != 3) unsupported(n, "X must be [seq, batch, input]");
  const TensorData *w = constant(n.inputs[1]), *r = constant(n.inputs[2]);
  if (!w || !r) unsupported(n, "W and R must be initializers");
  const int64_t hidden = attr_int(n, "hidden_size", r->shape().dims().back());
  auto input = [&](size_t i) -> std::string { return i < n.inputs.size() ? n.inputs[i] : std::string(); };
  std::string bias = "nullptr";
  if (!input(3).empty()) {
    const TensorData* b = constant(input(3));
    if (!b) unsupported(n, "B must be an initializer");
    bias = add_weight(input(3), floats_of(*b));
  }
  if (!input(4).empty()) {
    const TensorData* lens = constant(input(4));
    bool full = lens != nullptr;
    if (lens)
      for (double v : lens->to_doubles()) full = full && int64_t(v) == x[0];
    if (!full) unsupported(n, "sequence_lens must be absent or all equal to the sequence length");
  }
  if (lstm && !input(7).empty()) unsupported(n, "peepholes (P) are not supported");
  auto state = [&](size_t i) -> std::string {
    if (input(i).empty()) return "nullptr";
    if (const TensorData* c = constant(input(i))) {
      std::vector<float> v = floats_of(*c);
      if (std::all_of(v.begin(), v.end(), [](float f) { return f == 0.0f; })) return "nullptr";
      return add_weight(input(i), std::move(v));
    }
    return ptr(n, input(i));
  };
  const std::string wn = add_weight(n.inputs[1], floats_of(*w)), rn = add_weight(n.inputs[2], floats_of(*r));
  const std::string h0 = state(5), c0 = lstm ? state(6) : "nullptr";
  const std::string in = ptr(n, n.inputs[0]);
  auto output = [&](size_t i) -> std::string { return i < n.outputs.size() ? n.outputs[i] : std::string(); };
  auto used = [&](const std::string& v) { return !v.empty() && (readers_.count(v) || graph_outputs_.count(v)); };
  const int64_t state_floats = x[1] * hidden;
  const std::string y = used(output(0)) ? define(output(0), x[0] * state_floats) : "nullptr";
  // The running states: Y_h / Y_c when read, else buffers of this step alone.
  auto state_buffer = [&](const std::string& v) {
    if (used(v)) return define(v, state_floats);
    const int b = new_buffer(state_floats);
    use(b);
    return buffer_name(b);
  };
  const std::string h = state_buffer(output(1));
  const std::string c = lstm ? state_buffer(output(2)) : "nullptr";
  const int scratch = new_buffer((lstm ? 4 : 7) * hidden);
  use(scratch);
  kernel_headers_.insert("rnn");
  std::ostringstream s;
  s << comment(n, "", x, {x[0], 1, x[1], hidden});
  s << "  {\n    static constexpr RnnShape s{" << x[0] << ", " << x[1] << ", " << x[2] << ", " << hidden << "};\n";
  if (lstm)
    s << "    lstm_f32(s, " << in << ", " << wn << ", " << rn << ", " << bias << ", " << h0 << ", " << c0 << ", " << y
      << ", " << h << ", " << c << ", b" << scratch << ");\n";
  else
    s << "    gru_f32(s, " << (attr_int(n, "linear_before_reset", 0) ? "true" : "false") << ", " << in << ", " << wn
      << ", " << rn << ", " << bias << ", " << h0 << ", " << y << ", " << h << ", b" << scratch << ");\n";
  s << "  }\n";
  add_step(s.str());
}

// The int8 ops of ember-onnx quantize's QOperator models (docs/quantization.md): u8 activations
// with one scale and zero point, i8 weights with per-channel scales and zero points.
void CortexMEmitter::lower_quantized(size_t k) {
  const NodeProto& n = graph_.nodes[k];
  auto input = [&](size_t i) -> std::string { return i < n.inputs.size() ? n.inputs[i] : std::string(); };
  // A constant of one value (a scale or a zero point; absent: `fallback`).
  auto scalar = [&](size_t i, double fallback, const char* what) -> double {
    if (input(i).empty()) return fallback;
    const TensorData* c = constant(input(i));
    if (!c || c->numel() != 1) unsupported(n, std::string(what) + " must be one constant value (per-tensor)");
    if (c->dtype() == DType::i8) unsupported(n, std::string(what) + " is INT8; only UINT8 activations are supported");
    return c->to_doubles()[0];
  };
  const std::vector<int64_t> y = shape_of(n, n.outputs[0]);
  kernel_headers_.insert("quantized");
  std::ostringstream c;
  c << comment(n, "", shape_of(n, n.inputs[0]), y);
  if (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear") {
    if (n.attribute("axis") && constant(input(1)) && constant(input(1))->numel() != 1)
      unsupported(n, "per-axis quantization of activations");
    const float scale = float(scalar(1, 1.0, "the scale"));
    const int64_t zp = int64_t(scalar(2, 0.0, "the zero point"));
    const bool q = n.op_type == "QuantizeLinear";
    const std::string in = ptr(n, n.inputs[0], q ? "float" : "uint8_t");
    const std::string o = q ? define_u8(n.outputs[0], product(y)) : define(n.outputs[0], product(y));
    c << "  " << (q ? "quantize_u8(" : "dequantize_u8(") << product(y) << ", " << in << ", " << literal(scale) << ", "
      << zp << ", " << o << ");\n";
    add_step(c.str());
    return;
  }
  if (n.op_type == "QLinearAdd") {
    const std::vector<int64_t> a = shape_of(n, input(0)), b = shape_of(n, input(3));
    if (a != y || b != y) unsupported(n, "broadcasting is not supported");
    const std::string pa = ptr(n, input(0), "uint8_t"), pb = ptr(n, input(3), "uint8_t");
    const std::string o = define_u8(n.outputs[0], product(y));
    c << "  qlinear_add_u8(" << product(y) << ", " << pa << ", " << literal(float(scalar(1, 1.0, "A_scale"))) << ", "
      << int64_t(scalar(2, 0.0, "A_zero_point")) << ", " << pb << ", " << literal(float(scalar(4, 1.0, "B_scale")))
      << ", " << int64_t(scalar(5, 0.0, "B_zero_point")) << ", " << literal(float(scalar(6, 1.0, "C_scale"))) << ", "
      << int64_t(scalar(7, 0.0, "C_zero_point")) << ", " << o << ");\n";
    add_step(c.str());
    return;
  }
  // QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B
  const TensorData* w = constant(input(3));
  if (!w || (w->dtype() != DType::i8 && w->dtype() != DType::u8))
    unsupported(n, "w must be an INT8 or UINT8 initializer");
  const int64_t m = w->shape()[0];
  const TensorData* w_scale = constant(input(4));
  if (!w_scale || (w_scale->numel() != 1 && w_scale->numel() != m))
    unsupported(n, "w_scale must be constant, per tensor or per channel");
  std::vector<double> wz(size_t(m), 0.0);
  if (!input(5).empty()) {
    const TensorData* z = constant(input(5));
    if (!z || (z->numel() != 1 && z->numel() != m))
      unsupported(n, "w_zero_point must be constant, per tensor or per channel");
    std::vector<double> zv = z->to_doubles();
    for (int64_t i = 0; i < m; ++i) wz[size_t(i)] = zv[zv.size() == 1 ? 0 : size_t(i)];
  }
  std::vector<double> wv = w->to_doubles();
  if (w->dtype() == DType::u8) {  // the same differences w - w_zp, in i8
    for (double& v : wv) v -= 128;
    for (double& v : wz) v -= 128;
  }
  // The multipliers as ember's runtime computes them: (x_scale * w_scale) / y_scale, in f32.
  const float xs = float(scalar(1, 1.0, "x_scale")), ys = float(scalar(6, 1.0, "y_scale"));
  const std::vector<float> wsv = floats_of(*w_scale);
  std::vector<double> mult(static_cast<size_t>(m), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    const float product_scale = xs * wsv[wsv.size() == 1 ? 0 : size_t(i)];
    mult[size_t(i)] = double(product_scale / ys);
  }
  const int64_t xz = int64_t(scalar(2, 0.0, "x_zero_point")), yz = int64_t(scalar(7, 0.0, "y_zero_point"));
  std::string bias = "nullptr";
  if (!input(8).empty()) {
    const TensorData* b = constant(input(8));
    if (!b || b->dtype() != DType::i32 || b->numel() != m) unsupported(n, "B must be an INT32 initializer of M values");
    bias = add_weight(input(8), "int32_t", b->to_doubles());
  }
  const std::string geometry = conv_shape(n, shape_of(n, input(0)), w->shape().dims(), y);
  const std::string wn = add_weight(input(3), "int8_t", std::move(wv));
  const std::string zn =
      add_weight(input(5).empty() ? input(3) + " (zero points)" : input(5), "int32_t", std::move(wz));
  const std::string mn = add_weight("(x_scale * w_scale) / y_scale of " + n.name, "float", std::move(mult));
  const std::vector<int64_t> x = shape_of(n, input(0));
  if (x[0] != 1) unsupported(n, "a batch of more than one");
  const std::string in = ptr(n, input(0), "uint8_t");
  const std::string o = define_u8(n.outputs[0], product(y));
  c << "  {\n    static constexpr Conv2dShape s{" << geometry << "};\n    if (Status st = qlinear_conv2d_u8(s, " << in
    << ", " << xz << ", " << wn << ", " << zn << ", " << bias << ", " << mn << ", " << yz << ", " << o
    << "); st != Status::ok) return st;\n  }\n";
  add_step(c.str());
}

void CortexMEmitter::lower(size_t k) {
  const NodeProto& n = graph_.nodes[k];
  const std::string& op = n.op_type;
  if (n.domain == "com.microsoft" && op == "QLinearAdd") return lower_quantized(k);
  if (!default_domain(n)) unsupported(n, "domain '" + n.domain + "' is not supported");
  for (const std::string& o : n.outputs) {
    if (o.empty()) continue;
    auto it = types_.find(o);
    if (it != types_.end() && it->second.elem_type != 0 && it->second.elem_type != int32_t(DataType::float32) &&
        it->second.elem_type != int32_t(DataType::uint8) && (readers_.count(o) || graph_outputs_.count(o)))
      unsupported(n, "output '" + o + "' is " + data_type_name(it->second.elem_type) +
                         "; only FLOAT and (for quantized ops) UINT8 are supported");
  }
  if (op == "QuantizeLinear" || op == "DequantizeLinear" || op == "QLinearConv") return lower_quantized(k);
  if (op == "Conv") return lower_conv(k);
  if (op == "Gemm" || op == "MatMul") return lower_dense(k);
  if (op == "Add") return lower_add(k);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool")
    return lower_pool(k);
  if (op == "LSTM" || op == "GRU") return lower_rnn(k);
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity" ||
      op == "Dropout") {
    if (op == "Dropout" && n.outputs.size() > 1 && !n.outputs[1].empty() && readers_.count(n.outputs[1]))
      unsupported(n, "the mask output is not supported");
    if (op == "Dropout" && n.inputs.size() > 2 && !n.inputs[2].empty()) {  // training_mode: must be a constant false
      const TensorData* training = constant(n.inputs[2]);
      if (!training || training->to_doubles()[0] != 0.0) unsupported(n, "training mode (random masks)");
    }
    shape_of(n, n.outputs[0]);
    alias(n.inputs[0], n.outputs[0]);  // NCHW is contiguous: same bytes, new shape
    return;
  }
  const std::vector<int64_t> y = shape_of(n, n.outputs[0]);
  std::ostringstream c;
  kernel_headers_.insert("elementwise");
  if (op == "Relu" || op == "Clip" || op == "Sigmoid" || op == "Tanh") {
    std::string fused, clamp;
    if (op == "Relu" || op == "Clip") {
      std::optional<std::pair<float, float>> b = activation_bounds(n);
      if (!b) unsupported(n, "Clip bounds must be constants");
      clamp = clamp_literal(b->first, b->second);
    }
    const std::string in = ptr(n, n.inputs[0]);
    const std::string o = define_in_place(k, n.inputs[0], n.outputs[0], product(y));
    c << comment(n, fused, y, y);
    if (!clamp.empty())
      c << "  clamp_f32(" << product(y) << ", " << in << ", " << o << ", " << clamp << ");\n";
    else
      c << "  " << (op == "Sigmoid" ? "sigmoid_f32(" : "tanh_f32(") << product(y) << ", " << in << ", " << o << ");\n";
    add_step(c.str());
    return;
  }
  if (op == "Softmax") {
    const int64_t rank = int64_t(y.size());
    int64_t axis = attr_int(n, "axis", opset_ >= 13 ? -1 : 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) unsupported(n, "axis out of range");
    // Before opset 13 the input is coerced to 2-D at `axis`; from 13 the axis must be the last
    // one with more than one element.
    const std::string in = ptr(n, n.inputs[0]);
    const std::string o = define_in_place(k, n.inputs[0], n.outputs[0], product(y));
    c << comment(n, "", y, y);
    if (opset_ >= 13 && product(y, size_t(axis) + 1) != 1)  // over one axis that is not the last
      c << "  softmax_axis_f32(" << product(y, 0, size_t(axis)) << ", " << y[size_t(axis)] << ", "
        << product(y, size_t(axis) + 1) << ", " << in << ", " << o << ");\n";
    else  // the last axis, or (before opset 13) the input coerced to 2-D at `axis`
      c << "  softmax_f32(" << product(y, 0, size_t(axis)) << ", " << product(y, size_t(axis)) << ", " << in << ", "
        << o << ");\n";
    add_step(c.str());
    return;
  }
  if (op == "BatchNormalization") {
    if (n.inputs.size() != 5 || attr_int(n, "training_mode", 0) != 0) unsupported(n, "only inference mode");
    const TensorData *scale = constant(n.inputs[1]), *shift = constant(n.inputs[2]), *mean = constant(n.inputs[3]),
                     *var = constant(n.inputs[4]);
    if (!scale || !shift || !mean || !var) unsupported(n, "scale, B, mean and var must be initializers");
    const double eps = attr_float(n, "epsilon", 1e-5f);
    std::vector<float> sc = floats_of(*scale), sf = floats_of(*shift), mu = floats_of(*mean), va = floats_of(*var);
    std::vector<float> a(sc.size()), b(sc.size());
    for (size_t i = 0; i < sc.size(); ++i) {
      const double f = double(sc[i]) / std::sqrt(double(va[i]) + eps);
      a[i] = float(f);
      b[i] = float(double(sf[i]) - double(mu[i]) * f);
    }
    std::string out = n.outputs[0], fused;
    const std::string clamp = fuse_activation(out, fused);
    const std::string an = add_weight(n.name + " scale", std::move(a)),
                      bn = add_weight(n.name + " shift", std::move(b));
    const std::string in = ptr(n, n.inputs[0]);
    const std::string o = define_in_place(k, n.inputs[0], out, product(y));
    c << comment(n, fused, y, y) << "  scale_shift_f32(" << y[0] << ", " << (y.size() > 1 ? y[1] : 1) << ", "
      << product(y, 2) << ", " << in << ", " << an << ", " << bn << ", " << o << ", " << clamp << ");\n";
    add_step(c.str());
    return;
  }
  if (op == "Concat") {
    const int64_t rank = int64_t(y.size());
    int64_t axis = attr_int(n, "axis", 1);
    if (axis < 0) axis += rank;
    std::vector<std::string> parts;
    std::vector<int64_t> widths;
    for (const std::string& v : n.inputs) {
      if (const TensorData* cst = constant(v)) {  // a constant part: its values in flash
        parts.push_back(add_weight(v, floats_of(*cst)));
        std::vector<int64_t> dims = cst->shape().dims();
        widths.push_back(product(dims, size_t(axis)));
        continue;
      }
      parts.push_back(ptr(n, v));
      widths.push_back(product(shape_of(n, v), size_t(axis)));
    }
    const std::string o = define(n.outputs[0], product(y));
    c << comment(n, "", shape_of(n, n.inputs[0]), y) << "  {\n    const float* const parts[] = {";
    for (size_t i = 0; i < parts.size(); ++i) c << (i ? ", " : "") << parts[i];
    c << "};\n    static constexpr int32_t widths[] = {";
    for (size_t i = 0; i < widths.size(); ++i) c << (i ? ", " : "") << widths[i];
    c << "};\n    concat_f32(" << product(y, 0, size_t(axis)) << ", " << parts.size() << ", parts, widths, " << o
      << ");\n  }\n";
    add_step(c.str());
    return;
  }
  if (op == "Gather") {
    const TensorData* idx = n.inputs.size() == 2 ? constant(n.inputs[1]) : nullptr;
    if (!idx) unsupported(n, "the indices must be constants");
    const std::vector<int64_t> x = shape_of(n, n.inputs[0]);
    int64_t axis = attr_int(n, "axis", 0);
    if (axis < 0) axis += int64_t(x.size());
    std::vector<int64_t> indices;
    for (double d : idx->to_doubles()) {
      int64_t i = int64_t(d);
      if (i < 0) i += x[size_t(axis)];
      if (i < 0 || i >= x[size_t(axis)]) unsupported(n, "an index is out of range");
      indices.push_back(i);
    }
    const std::string in = ptr(n, n.inputs[0]);
    const std::string o = define(n.outputs[0], product(y));
    c << comment(n, "", x, y) << "  {\n    static constexpr int32_t indices[] = {";
    for (size_t i = 0; i < indices.size(); ++i) c << (i ? ", " : "") << indices[i];
    c << "};\n    gather_f32(" << product(x, 0, size_t(axis)) << ", " << x[size_t(axis)] << ", "
      << product(x, size_t(axis) + 1) << ", " << indices.size() << ", indices, " << in << ", " << o << ");\n  }\n";
    add_step(c.str());
    return;
  }
  if (op == "Transpose") {
    const std::vector<int64_t> x = shape_of(n, n.inputs[0]);
    std::vector<int64_t> perm = attr_ints(n, "perm", {});
    if (perm.empty())
      for (int64_t i = int64_t(x.size()) - 1; i >= 0; --i) perm.push_back(i);
    // Only size-1 axes move: the bytes stay in order.
    std::vector<int64_t> kept;
    for (int64_t p : perm)
      if (x[size_t(p)] != 1) kept.push_back(p);
    if (std::is_sorted(kept.begin(), kept.end())) {
      alias(n.inputs[0], n.outputs[0]);
      return;
    }
    if (x.size() > 6) unsupported(n, "rank above 6");
    const std::string in = ptr(n, n.inputs[0]);
    const std::string o = define(n.outputs[0], product(y));
    c << comment(n, "", x, y) << "  {\n    static constexpr int32_t dims[] = {";
    for (size_t i = 0; i < x.size(); ++i) c << (i ? ", " : "") << x[i];
    c << "};\n    static constexpr int32_t perm[] = {";
    for (size_t i = 0; i < perm.size(); ++i) c << (i ? ", " : "") << perm[i];
    c << "};\n    if (Status st = transpose_f32(" << x.size() << ", dims, perm, " << in << ", " << o
      << "); st != Status::ok) return st;\n  }\n";
    add_step(c.str());
    return;
  }
  unsupported(n,
              "not supported by the cortex-m target (it takes Conv, Gemm, MatMul, Add, MaxPool, AveragePool, "
              "GlobalAveragePool, GlobalMaxPool, Relu, Clip, Sigmoid, Tanh, Softmax, BatchNormalization, Concat, "
              "Gather, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Identity, Dropout, LSTM and GRU)");
}

}  // namespace ember::onnx::cortex_m
