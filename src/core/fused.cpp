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
  else if (!std::holds_alternative<NoAttrs>(attrs))
    os << "{attrs#" << attrs.index() << '}';
}

void put_arg(std::ostream& os, int32_t a) {
  if (a < 0) os << "in" << ~a;
  else os << 't' << a;
}

}  // namespace

std::string FusedProgram::signature() const {
  std::ostringstream os;
  const int r = shape.rank();
  os << 'r' << r << ';';
  for (const auto& in : inputs) {
    // dtype and broadcast pattern against the domain: '1' where the input has size 1 (or no
    // dim) and the domain does not, '.' elsewhere
    os << dtype_name(in.dtype) << ':';
    const int ir = in.shape.rank();
    for (int d = 0; d < r; ++d) {
      int id = d - (r - ir);
      bool bc = id < 0 || (in.shape[id] == 1 && shape[d] != 1);
      os << (bc ? '1' : '.');
    }
    os << ';';
  }
  for (const auto& n : nodes) {
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
  os << "domain " << shape << ", inputs";
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
    os << ") " << n.dtype;
    for (int32_t o : outputs)
      if (o == int32_t(j)) os << " -> out";
    os << '\n';
  }
  return os.str();
}

}  // namespace ember
