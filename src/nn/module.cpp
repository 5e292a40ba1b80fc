// Param, the module visitor's helpers, the summary table and state-dict loading.
#include "ember/nn/module.hpp"

#include <regex>
#include <sstream>

namespace ember::nn {

namespace {
std::atomic<uint64_t> g_next_param{1};

DynTensor track(DynTensor v, bool frozen) {
  v = v.detach();
  if (!frozen && v.device().is_autodiff() && is_float(v.dtype())) v = v.require_grad();
  return v;
}
}  // namespace

Param::Param(DynTensor value, bool frozen)
    : value_(track(std::move(value), frozen)), id_(g_next_param.fetch_add(1)), frozen_(frozen) {}

void Param::set(DynTensor v) { value_ = track(std::move(v), frozen_); }

void Param::set_frozen(bool f) {
  frozen_ = f;
  value_ = track(value_, f);
}

std::optional<DynTensor> Param::grad(const Gradients& g) const {
  if (!value_.is_require_grad()) return std::nullopt;
  return value_.grad(g);
}

namespace detail {
std::vector<std::string> split_names(std::string_view list) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    size_t b = cur.find_first_not_of(" \t\n"), e = cur.find_last_not_of(" \t\n");
    std::string name = b == std::string::npos ? "" : cur.substr(b, e - b + 1);
    if (!name.empty() && name.back() == '_') name.pop_back();
    out.push_back(name);
    cur.clear();
  };
  for (char c : list) {
    if (c == ',') flush();
    else cur += c;
  }
  flush();
  return out;
}
}  // namespace detail

std::string summary_table(const std::vector<std::tuple<std::string, Shape, int64_t, bool>>& rows) {
  size_t wn = 4, ws = 5;
  for (const auto& [n, s, c, f] : rows) {
    wn = std::max(wn, n.size() + (f ? 9 : 0));
    ws = std::max(ws, s.str().size());
  }
  std::ostringstream os;
  auto line = [&](const std::string& a, const std::string& b, const std::string& c) {
    os << a << std::string(wn - a.size() + 2, ' ') << b << std::string(ws - b.size() + 2, ' ') << c << "\n";
  };
  line("name", "shape", "params");
  line(std::string(wn, '-'), std::string(ws, '-'), "------");
  int64_t total = 0, trainable = 0;
  for (const auto& [n, s, c, f] : rows) {
    line(n + (f ? " (frozen)" : ""), s.str(), std::to_string(c));
    total += c;
    if (!f) trainable += c;
  }
  os << "total: " << total << " parameters (" << trainable << " trainable)\n";
  return os.str();
}

std::string LoadReport::str() const {
  std::ostringstream os;
  auto list = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    os << what << " (" << v.size() << "):";
    for (const auto& k : v) os << "\n  " << k;
    os << "\n";
  };
  list("missing keys", missing);
  list("unexpected keys", unexpected);
  list("mismatched shapes", mismatched);
  return os.str();
}

namespace detail {
LoadReport load_into(const std::vector<std::tuple<std::string, Param*, Buffer*>>& slots, NamedTensors source,
                     const LoadOptions& o) {
  std::vector<std::pair<std::regex, std::string>> rules;
  for (const auto& r : o.remap) {
    try {
      rules.emplace_back(std::regex(r.pattern), r.replacement);
    } catch (const std::regex_error& e) {
      EMBER_FAIL("load_state_dict: bad remap pattern '", r.pattern, "': ", e.what());
    }
  }
  std::map<std::string, DynTensor> src;
  for (auto& [k, t] : source) {
    std::string key = k;
    for (const auto& [re, rep] : rules) key = std::regex_replace(key, re, rep);
    src[key] = std::move(t);
  }
  LoadReport rep;
  std::vector<std::tuple<Param*, Buffer*, DynTensor>> plan;  // applied only when everything checks out
  for (const auto& [path, p, b] : slots) {
    auto it = src.find(path);
    if (it == src.end()) {
      rep.missing.push_back(path);
      continue;
    }
    const DynTensor& cur = p ? p->value() : b->value;
    DynTensor t = it->second;
    src.erase(it);
    if (o.adapt) t = o.adapt(path, std::move(t), cur.shape());
    if (t.shape() != cur.shape()) {
      rep.mismatched.push_back(path + ": source " + t.shape().str() + " vs module " + cur.shape().str());
      continue;
    }
    if (t.dtype() != cur.dtype()) {
      if (!o.cast_dtype) {
        rep.mismatched.push_back(path + ": source dtype " + std::string(dtype_name(t.dtype())) + " vs module " +
                                 std::string(dtype_name(cur.dtype())));
        continue;
      }
      t = t.cast(cur.dtype());
    }
    if (!(t.device() == cur.device())) t = t.to(cur.device());
    plan.emplace_back(p, b, std::move(t));
  }
  for (const auto& [k, t] : src) rep.unexpected.push_back(k);
  if (o.strict && !rep.ok()) EMBER_FAIL("load_state_dict: the source does not match the module\n", rep.str());
  for (auto& [p, b, t] : plan) {
    if (p) p->set(std::move(t));
    else b->value = std::move(t);
  }
  return rep;
}
}  // namespace detail

}  // namespace ember::nn
