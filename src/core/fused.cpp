// FusedProgram's signature (the fusion plan and kernel cache key) and its log form.
#include "ember/core/fused.hpp"

#include <cstring>
#include <sstream>

namespace ember {

namespace {

// The attributes an elementwise op can carry, as text: exact (the doubles' bits), so two
// programs share a cache entry only when they compute the same thing.
void put_attrs(std::ostream& os, const OpAttrs& attrs) {
  auto bits = [](double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
  };
  if (const auto* s = std::get_if<ScalarAttrs>(&attrs))
    os << '{' << std::hex << bits(s->a) << ',' << bits(s->b) << std::dec << '}';
  else if (const auto* c = std::get_if<CastAttrs>(&attrs))
    os << '{' << dtype_name(c->dtype) << '}';
  else if (const auto* r = std::get_if<ReduceAttrs>(&attrs)) {
    os << "{dims";
    for (int d : r->dims) os << ',' << d;
    os << (r->keepdim ? ",keep" : "") << ",c" << r->correction << '}';
  }
  else if (!std::holds_alternative<NoAttrs>(attrs))
    os << "{attrs#" << attrs.index() << '}';
}

void put_arg(std::ostream& os, int32_t a) {
  if (a < 0) os << "in" << ~a;
  else os << 't' << a;
}

}  // namespace

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

std::string FusedProgram::signature() const {
  std::ostringstream os;
  // broadcast pattern of `in` against `dom`: '1' where the input has size 1 (or no dim) and the
  // domain does not, '.' elsewhere
  auto pattern = [&](const Shape& in, const Shape& dom) {
    const int r = dom.rank(), ir = in.rank();
    for (int d = 0; d < r; ++d) {
      int id = d - (r - ir);
      bool bc = id < 0 || (in[id] == 1 && dom[d] != 1);
      os << (bc ? '1' : '.');
    }
  };
  os << 'r' << shape.rank() << ';';
  if (is_rows()) os << "rows" << reduce_from << ',' << reduced_shape.rank() << ';';
  for (const auto& in : inputs) {
    os << dtype_name(in.dtype) << (in.shape.numel() == 1 ? "=" : ":");  // '=': one value
    pattern(in.shape, shape);
    if (is_rows()) {
      os << '/';
      pattern(in.shape, reduced_shape);
    }
    os << ';';
  }
  for (const auto& n : nodes) {
    if (n.reduced) os << 'R';
    os << op_name(n.kind);
    put_attrs(os, n.attrs);
    os << '(';
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (i) os << ',';
      put_arg(os, n.args[i]);
    }
    os << ')' << dtype_name(n.dtype) << ';';
  }
  os << "out";
  for (int32_t o : outputs) os << ',' << o;
  return os.str();
}

std::string FusedProgram::describe() const {
  std::ostringstream os;
  os << "domain " << shape;
  if (is_rows()) os << " rows over dims " << reduce_from << ".." << shape.rank() - 1 << " -> " << reduced_shape;
  os << ", inputs";
  for (size_t i = 0; i < inputs.size(); ++i) os << " in" << i << ' ' << inputs[i].shape << ' ' << inputs[i].dtype;
  os << '\n';
  for (size_t j = 0; j < nodes.size(); ++j) {
    const Node& n = nodes[j];
    os << "  t" << j << " = " << op_name(n.kind);
    put_attrs(os, n.attrs);
    os << '(';
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (i) os << ", ";
      put_arg(os, n.args[i]);
    }
    os << ") " << n.dtype << (n.reduced ? " per row" : "");
    for (int32_t o : outputs)
      if (o == int32_t(j)) os << " -> out";
    os << '\n';
  }
  return os.str();
}

}  // namespace ember
