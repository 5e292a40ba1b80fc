// FusedProgram's signature (the fusion plan and kernel cache key) and its log form.
#include "ember/core/fused.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "ember/core/error.hpp"
#include "ember/core/fused_matmul.hpp"

namespace ember {

namespace {

// The attributes an elementwise op can carry, as text: exact (the doubles' bits), so two
// programs share a cache entry only when they compute the same thing. Appended to one string
// (signature() is asked for once per fused group: an ostringstream was 5% of a CPU profile of a
// small training step on the fusion decorator).
void put_num(std::string& s, long long v) { s += std::to_string(v); }

void put_hex(std::string& s, uint64_t v) {
  char buf[17];
  int n = 0;
  do {
    buf[n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  while (n) s += buf[--n];
}

void put_attrs(std::string& s, const OpAttrs& attrs) {
  auto bits = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
  };
  if (const auto* sa = std::get_if<ScalarAttrs>(&attrs)) {
    s += '{';
    put_hex(s, bits(sa->a));
    s += ',';
    put_hex(s, bits(sa->b));
    s += '}';
  } else if (const auto* c = std::get_if<CastAttrs>(&attrs)) {
    s += '{';
    s += dtype_name(c->dtype);
    s += '}';
  } else if (const auto* r = std::get_if<ReduceAttrs>(&attrs)) {
    s += "{dims";
    for (int d : r->dims) s += ',', put_num(s, d);
    if (r->keepdim) s += ",keep";
    s += ",c";
    put_num(s, r->correction);
    s += '}';
  } else if (!std::holds_alternative<NoAttrs>(attrs)) {
    s += "{attrs#";
    put_num(s, int64_t(attrs.index()));
    s += '}';
  }
}

void put_arg(std::string& s, int32_t a) {
  if (a < 0) s += "in", put_num(s, ~a);
  else s += 't', put_num(s, a);
}

}  // namespace

ProducerSplit split_producer(const FusedProgram& p, bool fold_bias) {
  EMBER_CHECK(has_producer(p), "split_producer: the program does not start with a matmul");
  const FusedProgram::Node& mm = p.nodes[0];
  EMBER_CHECK(mm.args.size() >= 2 && mm.args.size() <= 3 && mm.args[0] < 0 && mm.args[1] < 0 &&
                  (mm.args.size() == 2 || mm.args[2] < 0),
              "split_producer: the matmul of a matmul program must read inputs only");
  ProducerSplit s;
  s.a_input = ~mm.args[0];
  s.b_input = ~mm.args[1];
  const size_t nn = p.nodes.size();
  // readers of each node, and whether it is an output
  std::vector<int> readers(nn, 0);
  std::vector<char> is_out(nn, 0);
  for (const auto& n : p.nodes)
    for (int32_t a : n.args)
      if (a >= 0) ++readers[size_t(a)];
  for (int32_t o : p.outputs) is_out[size_t(o)] = 1;
  // the node that becomes the product: the matmul, or (a folded bias add) node 1
  int32_t prod_node = 0;
  if (mm.args.size() == 3) {
    s.bias_input = ~mm.args[2];
  } else if (fold_bias && nn > 1 && p.nodes[1].kind == OpKind::add && readers[0] == 1 && !is_out[0]) {
    const auto& add = p.nodes[1];
    const int32_t other = add.args[0] == 0 ? add.args[1] : add.args[1] == 0 ? add.args[0] : 0;
    const int64_t n = p.shape.rank() > 0 ? p.shape[-1] : 1;
    if (other < 0 && p.inputs[size_t(~other)].shape == Shape{n} && p.inputs[size_t(~other)].dtype == mm.dtype &&
        add.dtype == mm.dtype) {
      s.bias_input = ~other;
      prod_node = 1;
    }
  }
  const bool bias_node = mm.args.size() == 3 && prod_node == 0 && !fold_bias;
  if (bias_node) s.bias_input = -1;
  // the rest: input 0 the product, then p's inputs as its nodes read them
  FusedProgram& r = s.rest;
  r.shape = p.shape;
  r.reduce_to = p.reduce_to;  // (a column program's reductions stay in the rest)
  r.reduced_shape = p.reduced_shape;
  r.inputs.push_back({p.shape, mm.dtype});
  s.rest_input.assign(p.inputs.size(), -1);
  auto input_of = [&](int32_t x) {  // x < 0: p's input ~x
    int32_t& k = s.rest_input[size_t(~x)];
    if (k < 0) {
      k = int32_t(r.inputs.size());
      r.inputs.push_back(p.inputs[size_t(~x)]);
    }
    return ~k;
  };
  std::vector<int32_t> node_of(nn, 0);  // p's node -> rest's arg
  const int32_t first = prod_node + 1;
  for (int32_t j = 0; j < first; ++j) node_of[size_t(j)] = ~0;
  if (bias_node) {
    r.nodes.push_back({OpKind::add, NoAttrs{}, {~0, input_of(mm.args[2])}, mm.dtype});
    node_of[0] = 0;
  }
  for (size_t j = size_t(first); j < nn; ++j) {
    FusedProgram::Node n = p.nodes[j];
    for (auto& a : n.args) a = a < 0 ? input_of(a) : node_of[size_t(a)];
    node_of[j] = int32_t(r.nodes.size());
    r.nodes.push_back(std::move(n));
  }
  for (int32_t o : p.outputs) {
    const int32_t x = node_of[size_t(o)];
    if (x < 0) {
      s.outputs.push_back(-1);
    } else {
      s.outputs.push_back(int32_t(r.outputs.size()));
      r.outputs.push_back(x);
    }
  }
  return s;
}

bool reduces_trailing_dims(const Op& op, int64_t& rows, int64_t& cols) {
  const Shape& s = op.in(0).shape;
  const auto& dims = op.attr<ReduceAttrs>().dims;
  const int from = dims.empty() ? 0 : dims.front();
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] != from + int(k)) return false;
  if (!dims.empty() && dims.back() != s.rank() - 1) return false;
  rows = cols = 1;
  for (int d = 0; d < s.rank(); ++d) (d < from ? rows : cols) *= s[d];
  return true;
}

bool reduces_leading_dims(const Op& op, int64_t& rows, int64_t& cols) {
  const Shape& s = op.in(0).shape;
  const auto& dims = op.attr<ReduceAttrs>().dims;
  if (dims.empty() || dims.back() >= s.rank() - 1) return false;  // every dim, or the last one
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] != int(k)) return false;
  const int to = int(dims.size());
  rows = cols = 1;
  for (int d = 0; d < s.rank(); ++d) (d < to ? rows : cols) *= s[d];
  return true;
}

int ColumnSweeps::passes(OpKind reduction) {
  return reduction == OpKind::var || reduction == OpKind::std || reduction == OpKind::logsumexp ? 2 : 1;
}

int ColumnSweeps::ready(const FusedProgram& p, size_t node) const {
  const auto& n = p.nodes[node];
  return first[node] + (op_info(n.kind).family == OpFamily::Reduce ? passes(n.kind) : 0);
}

ColumnSweeps column_sweeps(const FusedProgram& p) {
  ColumnSweeps s;
  s.first.assign(p.nodes.size(), 0);
  for (size_t j = 0; j < p.nodes.size(); ++j) {
    int f = 0;
    for (int32_t x : p.nodes[j].args)
      if (x >= 0) f = std::max(f, s.ready(p, size_t(x)));
    s.first[j] = f;
    if (op_info(p.nodes[j].kind).family == OpFamily::Reduce) s.count = std::max(s.count, s.ready(p, j));
  }
  return s;
}

std::string FusedProgram::signature() const {
  std::string os;
  os.reserve(64 + 24 * inputs.size() + 40 * nodes.size());
  // broadcast pattern of `in` against `dom`: '1' where the input has size 1 (or no dim) and the
  // domain does not, '.' elsewhere
  auto pattern = [&](const Shape& in, const Shape& dom) {
    const int r = dom.rank(), ir = in.rank();
    for (int d = 0; d < r; ++d) {
      int id = d - (r - ir);
      bool bc = id < 0 || (in[id] == 1 && dom[d] != 1);
      os += bc ? '1' : '.';
    }
  };
  os += 'r';
  put_num(os, shape.rank());
  os += ';';
  if (is_rows()) os += "rows", put_num(os, reduce_from), os += ',', put_num(os, reduced_shape.rank()), os += ';';
  if (is_cols()) os += "cols", put_num(os, reduce_to), os += ',', put_num(os, reduced_shape.rank()), os += ';';
  for (const auto& in : inputs) {
    os += dtype_name(in.dtype);
    os += in.shape.numel() == 1 ? '=' : ':';  // '=': one value
    pattern(in.shape, shape);
    if (is_rows() || is_cols()) {
      os += '/';
      pattern(in.shape, reduced_shape);
    }
    os += ';';
  }
  for (const auto& n : nodes) {
    if (n.reduced) os += 'R';
    os += op_name(n.kind);
    put_attrs(os, n.attrs);
    os += '(';
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (i) os += ',';
      put_arg(os, n.args[i]);
    }
    os += ')';
    os += dtype_name(n.dtype);
    os += ';';
  }
  os += "out";
  for (int32_t o : outputs) os += ',', put_num(os, o);
  return os;
}

std::string FusedProgram::describe() const {
  std::ostringstream os;
  os << "domain " << shape;
  if (is_rows()) os << " rows over dims " << reduce_from << ".." << shape.rank() - 1 << " -> " << reduced_shape;
  if (is_cols()) os << " columns over dims 0.." << reduce_to - 1 << " -> " << reduced_shape;
  os << ", inputs";
  for (size_t i = 0; i < inputs.size(); ++i) os << " in" << i << ' ' << inputs[i].shape << ' ' << inputs[i].dtype;
  os << '\n';
  for (size_t j = 0; j < nodes.size(); ++j) {
    const Node& n = nodes[j];
    std::string text;
    put_attrs(text, n.attrs);
    text += '(';
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (i) text += ", ";
      put_arg(text, n.args[i]);
    }
    os << "  t" << j << " = " << op_name(n.kind) << text;
    os << ") " << n.dtype << (n.reduced ? (is_cols() ? " per column" : " per row") : "");
    for (int32_t o : outputs)
      if (o == int32_t(j)) os << " -> out";
    os << '\n';
  }
  return os.str();
}

}  // namespace ember
