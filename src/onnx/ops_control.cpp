// Control flow: If, Loop, Scan. Branch outputs and loop-carried values may be sequences or
// optionals; scan inputs, scan outputs and Scan's state are tensors.
#include <algorithm>

#include "ops.hpp"

namespace ember::onnx::detail {
namespace {

bool truth(const DynTensor& t) { return scalar_of(t).value != 0; }

OpResult if_op(OpContext& c) {
  const GraphProto& g = c.graph_attr(truth(c.in(0)) ? "then_branch" : "else_branch");
  return c.run_subgraph(g, {});
}

OpResult loop_op(OpContext& c) {
  const GraphProto& body = c.graph_attr("body");
  std::optional<int64_t> max_trips;
  if (c.has(0)) max_trips = int64_t(scalar_of(c.in(0)).value);
  bool cond = c.has(1) ? truth(c.in(1)) : true;
  size_t n_carried = c.num_inputs() > 2 ? c.num_inputs() - 2 : 0;
  std::vector<Value> carried;
  for (size_t i = 0; i < n_carried; ++i) carried.push_back(c.value(2 + i));
  if (body.outputs.size() < 1 + n_carried) c.fail("body has too few outputs");
  size_t n_scan = body.outputs.size() - 1 - n_carried;
  std::vector<std::vector<DynTensor>> scans(n_scan);
  for (int64_t i = 0; (!max_trips || i < *max_trips) && cond; ++i) {
    std::vector<Value> in{DynTensor::from_vector<int64_t>({i}, Shape{}, c.device),
                          DynTensor::from_vector<bool>({cond}, Shape{}, c.device)};
    in.insert(in.end(), carried.begin(), carried.end());
    std::vector<Value> out = c.run_subgraph(body, in);
    cond = truth(out[0].tensor());
    for (size_t k = 0; k < n_carried; ++k) carried[k] = out[1 + k];
    for (size_t k = 0; k < n_scan; ++k) {
      if (!out[1 + n_carried + k].is_tensor())
        c.unsupported("scan output " + std::to_string(k) + " that is not a tensor");
      scans[k].push_back(out[1 + n_carried + k].tensor());
    }
    if (i > (int64_t(1) << 24)) c.unsupported("more than 2^24 iterations");
  }
  OpResult r = carried;
  for (auto& s : scans) {
    if (s.empty()) c.unsupported("scan outputs of a loop that ran no iteration");
    r.push_back(stack(s, 0));
  }
  return r;
}

// Scan with every tensor carrying the scan axes of the attributes (opset 9+).
OpResult scan_body(OpContext& c, const std::vector<DynTensor>& state0, const std::vector<DynTensor>& scan_in) {
  const GraphProto& body = c.graph_attr("body");
  size_t n_state = state0.size(), m = scan_in.size();
  auto in_axes = c.attr_ints("scan_input_axes").value_or(std::vector<int64_t>(m, 0));
  auto in_dirs = c.attr_ints("scan_input_directions").value_or(std::vector<int64_t>(m, 0));
  size_t n_out = body.outputs.size() - n_state;
  auto out_axes = c.attr_ints("scan_output_axes").value_or(std::vector<int64_t>(n_out, 0));
  auto out_dirs = c.attr_ints("scan_output_directions").value_or(std::vector<int64_t>(n_out, 0));
  if (in_axes.size() != m || in_dirs.size() != m || out_axes.size() != n_out || out_dirs.size() != n_out)
    c.fail("scan attributes differ in length from the inputs / outputs");
  if (m == 0) c.fail("no scan inputs");
  std::vector<int> axes;
  for (size_t k = 0; k < m; ++k) axes.push_back(normalize_axis(in_axes[k], scan_in[k].rank(), c));
  int64_t steps = scan_in[0].shape()[axes[0]];
  std::vector<DynTensor> state = state0;
  std::vector<std::vector<DynTensor>> outs(n_out);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Value> in(state.begin(), state.end());
    for (size_t k = 0; k < m; ++k) in.push_back(select(scan_in[k], axes[k], in_dirs[k] ? steps - 1 - t : t));
    std::vector<Value> out = c.run_subgraph(body, in);
    for (size_t k = 0; k < n_state; ++k) state[k] = out[k].tensor();
    for (size_t k = 0; k < n_out; ++k) outs[k].push_back(out[n_state + k].tensor());
  }
  OpResult r(state.begin(), state.end());
  for (size_t k = 0; k < n_out; ++k) {
    if (outs[k].empty()) c.unsupported("scan outputs of a scan with no iteration");
    if (out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
    int axis = normalize_axis(out_axes[k], outs[k][0].rank() + 1, c);
    r.push_back(stack(outs[k], axis));
  }
  return r;
}

OpResult scan_op(OpContext& c) {
  int64_t m = c.attr_i("num_scan_inputs", 0);
  if (c.opset >= 9) {
    size_t n_state = c.num_inputs() - size_t(m);
    std::vector<DynTensor> state, scan_in;
    for (size_t i = 0; i < c.num_inputs(); ++i) (i < n_state ? state : scan_in).push_back(c.in(i));
    return scan_body(c, state, scan_in);
  }
  // Opset 8: input 0 is sequence_lens, every tensor has a leading batch dim; scan along dim 1.
  std::vector<int64_t> directions = c.attr_ints("directions").value_or(std::vector<int64_t>{});
  for (int64_t d : directions)
    if (d) c.unsupported("reverse directions at opset 8");
  size_t n_state = c.num_inputs() - 1 - size_t(m);
  int64_t batch = c.in(1).shape()[0];
  if (c.has(0)) {
    std::vector<int64_t> lens = c.required_ints(0);
    int64_t full = c.in(1 + n_state).shape()[1];
    for (int64_t l : lens)
      if (l != full) c.unsupported("sequence_lens shorter than the sequence");
  }
  std::vector<OpResult> per_batch;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<DynTensor> state, scan_in;
    for (size_t i = 1; i < c.num_inputs(); ++i) (i <= n_state ? state : scan_in).push_back(select(c.in(i), 0, b));
    per_batch.push_back(scan_body(c, state, scan_in));
  }
  OpResult r;
  for (size_t k = 0; k < per_batch[0].size(); ++k) {
    std::vector<DynTensor> parts;
    for (auto& p : per_batch) parts.push_back(p[k].tensor());
    r.push_back(stack(parts, 0));
  }
  return r;
}

}  // namespace

void register_control_ops(OpTable& t) {
  t["If"] = if_op;
  t["Loop"] = loop_op;
  t["Scan"] = scan_op;
}

}  // namespace ember::onnx::detail
