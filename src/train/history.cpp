// MetricHistory: per-iteration and per-epoch metric values, and their JSON form.
#include "ember/train/history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/core/error.hpp"
#include "json_util.hpp"

namespace ember::train {
namespace {
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
}  // namespace

std::string_view split_name(Split s) { return s == Split::train ? "train" : "valid"; }

MetricRef MetricRef::parse(std::string_view ref) {
  MetricRef r;
  auto slash = ref.find('/');
  if (slash == std::string_view::npos) {
    r.name = std::string(ref);
  } else {
    std::string_view split = ref.substr(0, slash);
    EMBER_CHECK(split == "train" || split == "valid", "metric reference '", ref,
                "': the split must be 'train' or 'valid'");
    r.split = split == "train" ? Split::train : Split::valid;
    r.name = std::string(ref.substr(slash + 1));
  }
  EMBER_CHECK(!r.name.empty(), "metric reference '", ref, "' names no metric");
  return r;
}

std::string MetricRef::str() const { return std::string(split_name(split)) + "/" + name; }

void MetricHistory::add_step(int64_t iteration, double epoch_position, const NamedValues& values) {
  size_t n = iterations_.size();
  iterations_.push_back(iteration);
  positions_.push_back(epoch_position);
  for (const auto& [name, v] : values) {
    auto [it, inserted] = columns_.try_emplace(name, std::vector<double>(n, kNan));
    if (inserted) step_order_.push_back(name);
    if (it->second.size() == n + 1) {  // a name given twice: the last value wins
      it->second.back() = v;
      continue;
    }
    it->second.push_back(v);
  }
  for (auto& [name, col] : columns_)
    if (col.size() == n) col.push_back(kNan);
}

void MetricHistory::add_epoch(int64_t epoch, Split split, const NamedValues& values) {
  auto it = std::find_if(epochs_.begin(), epochs_.end(), [&](const EpochRecord& r) { return r.epoch == epoch; });
  if (it == epochs_.end()) {
    EpochRecord r;
    r.epoch = epoch;
    it = epochs_.insert(std::upper_bound(epochs_.begin(), epochs_.end(), r,
                                         [](const EpochRecord& a, const EpochRecord& b) { return a.epoch < b.epoch; }),
                        r);
  }
  auto& m = split == Split::train ? it->train : it->valid;
  for (const auto& [name, v] : values) m[name] = v;
}

std::vector<double> MetricHistory::step_series(const std::string& name) const {
  auto it = columns_.find(name);
  return it == columns_.end() ? std::vector<double>{} : it->second;
}

std::vector<std::string> MetricHistory::step_names() const { return step_order_; }

std::optional<double> MetricHistory::epoch_value(int64_t epoch, Split split, const std::string& name) const {
  for (const auto& r : epochs_) {
    if (r.epoch != epoch) continue;
    const auto& m = r.of(split);
    auto it = m.find(name);
    if (it != m.end()) return it->second;
  }
  return std::nullopt;
}

std::vector<double> MetricHistory::epoch_series(Split split, const std::string& name) const {
  std::vector<double> out;
  for (const auto& r : epochs_) {
    const auto& m = r.of(split);
    auto it = m.find(name);
    out.push_back(it == m.end() ? kNan : it->second);
  }
  return out;
}

std::vector<std::string> MetricHistory::epoch_names() const {
  std::vector<std::string> out;
  for (const auto& r : epochs_)
    for (Split s : {Split::train, Split::valid})
      for (const auto& [name, v] : r.of(s))
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  return out;
}

std::vector<std::string> MetricHistory::all_names() const {
  std::vector<std::string> out = step_order_;
  for (const auto& n : epoch_names())
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  auto loss = std::find(out.begin(), out.end(), "loss");
  if (loss != out.end()) std::rotate(out.begin(), loss, loss + 1);
  return out;
}

void MetricHistory::truncate(int64_t iteration, int64_t epoch) {
  size_t keep = 0;
  while (keep < iterations_.size() && iterations_[keep] < iteration) ++keep;
  iterations_.resize(keep);
  positions_.resize(keep);
  for (auto& [name, col] : columns_) col.resize(keep);
  epochs_.erase(std::remove_if(epochs_.begin(), epochs_.end(), [&](const EpochRecord& r) { return r.epoch >= epoch; }),
                epochs_.end());
}

bool MetricHistory::operator==(const MetricHistory& o) const {
  auto same_vec = [](const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  };
  auto same_map = [](const std::map<std::string, double>& a, const std::map<std::string, double>& b) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
      if (ia->first != ib->first || !same(ia->second, ib->second)) return false;
    return true;
  };
  if (iterations_ != o.iterations_ || !same_vec(positions_, o.positions_) || columns_.size() != o.columns_.size() ||
      epochs_.size() != o.epochs_.size())
    return false;
  for (const auto& [name, col] : columns_) {
    auto it = o.columns_.find(name);
    if (it == o.columns_.end() || !same_vec(col, it->second)) return false;
  }
  for (size_t i = 0; i < epochs_.size(); ++i)
    if (epochs_[i].epoch != o.epochs_[i].epoch || !same_map(epochs_[i].train, o.epochs_[i].train) ||
        !same_map(epochs_[i].valid, o.epochs_[i].valid))
      return false;
  return true;
}

std::string MetricHistory::to_json() const { return detail::history_to_json(*this).dump(); }

MetricHistory MetricHistory::from_json(std::string_view json, std::string_view source) {
  return detail::history_from_json(detail::parse_json(json, source), source);
}

namespace detail {

Json history_to_json(const MetricHistory& h) {
  Json values = Json::object();
  for (const auto& name : h.step_names()) {
    Json col = Json::array();
    for (double v : h.step_series(name)) col.push_back(number(v));
    values[name] = std::move(col);
  }
  Json positions = Json::array();
  for (double p : h.step_positions()) positions.push_back(number(p));
  Json order = h.step_names();
  Json epochs = Json::array();
  for (const auto& r : h.epochs()) {
    Json e = {{"epoch", r.epoch}, {"train", Json::object()}, {"valid", Json::object()}};
    for (const auto& [k, v] : r.train) e["train"][k] = number(v);
    for (const auto& [k, v] : r.valid) e["valid"][k] = number(v);
    epochs.push_back(std::move(e));
  }
  return {{"steps", {{"iteration", h.step_iterations()}, {"position", positions}, {"names", order}, {"values", values}}},
          {"epochs", epochs}};
}

MetricHistory history_from_json(const Json& j, std::string_view source) {
  try {
    MetricHistory h;
    const Json& steps = j.at("steps");
    auto iterations = steps.at("iteration").get<std::vector<int64_t>>();
    const Json& positions = steps.at("position");
    const Json& values = steps.at("values");
    auto names = steps.at("names").get<std::vector<std::string>>();
    EMBER_CHECK(positions.size() == iterations.size(), source, ": history has ", iterations.size(),
                " iterations but ", positions.size(), " positions");
    for (const auto& name : names)
      EMBER_CHECK(values.at(name).size() == iterations.size(), source, ": history column '", name, "' has ",
                  values.at(name).size(), " values for ", iterations.size(), " iterations");
    for (size_t i = 0; i < iterations.size(); ++i) {
      NamedValues v;
      for (const auto& name : names) v.emplace_back(name, to_double(values.at(name)[i]));
      h.add_step(iterations[i], to_double(positions[i]), v);
    }
    for (const Json& e : j.at("epochs")) {
      int64_t epoch = e.at("epoch").get<int64_t>();
      for (Split s : {Split::train, Split::valid}) {
        NamedValues v;
        for (const auto& [k, x] : e.at(std::string(split_name(s))).items()) v.emplace_back(k, to_double(x));
        if (!v.empty() || s == Split::train) h.add_epoch(epoch, s, v);
      }
    }
    return h;
  } catch (const Json::exception& e) {
    EMBER_FAIL(source, ": malformed metric history: ", e.what());
  }
}

}  // namespace detail
}  // namespace ember::train
