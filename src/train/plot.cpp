// SVG line plots of metric histories, written by hand (no plotting library).
#include "ember/train/plot.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "ember/train/checkpoint.hpp"
#include "ember/train/renderer.hpp"

namespace ember::train {
namespace {

constexpr double kWidth = 720, kHeight = 400;
constexpr double kLeft = 80, kRight = 24, kTop = 44, kBottom = 56;

struct Series {
  std::vector<double> x, y;
};

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&') out += "&amp;";
    else if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

// Locale-independent number formatting for coordinates.
std::string num(double v) {
  std::ostringstream os;
  os.imbue(std::locale::classic());
  os.precision(6);
  os << v;
  return os.str();
}

// "Nice" tick positions (1, 2, 5 x 10^k) covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int target) {
  double span = hi - lo;
  if (!(span > 0)) return {lo};
  double raw = span / target;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  return out;
}

// Keeps at most `max_points` points by averaging buckets of consecutive ones (NaN skipped).
Series downsample(const Series& s, size_t max_points) {
  Series clean;
  for (size_t i = 0; i < s.x.size(); ++i)
    if (std::isfinite(s.y[i]) && std::isfinite(s.x[i])) clean.x.push_back(s.x[i]), clean.y.push_back(s.y[i]);
  if (clean.x.size() <= max_points) return clean;
  Series out;
  double per = double(clean.x.size()) / double(max_points);
  for (size_t b = 0; b < max_points; ++b) {
    size_t from = size_t(double(b) * per), to = std::min(clean.x.size(), size_t(double(b + 1) * per));
    if (from >= to) continue;
    double sx = 0, sy = 0;
    for (size_t i = from; i < to; ++i) sx += clean.x[i], sy += clean.y[i];
    out.x.push_back(sx / double(to - from));
    out.y.push_back(sy / double(to - from));
  }
  return out;
}

}  // namespace

std::string svg_plot(const MetricHistory& history, const std::string& metric) {
  Series steps{history.step_positions(), history.step_series(metric)};
  if (steps.y.empty()) steps.x.clear();
  steps = downsample(steps, 1500);
  Series epoch_series[2];
  for (Split split : {Split::train, Split::valid}) {
    std::vector<double> v = history.epoch_series(split, metric);
    Series& s = epoch_series[int(split)];
    for (size_t i = 0; i < v.size(); ++i)
      if (std::isfinite(v[i])) s.x.push_back(double(history.epochs()[i].epoch + 1)), s.y.push_back(v[i]);
  }
  double xmax = 1, ymin = INFINITY, ymax = -INFINITY;
  for (const Series* s : {&steps, &epoch_series[0], &epoch_series[1]})
    for (size_t i = 0; i < s->x.size(); ++i) {
      xmax = std::max(xmax, s->x[i]);
      ymin = std::min(ymin, s->y[i]);
      ymax = std::max(ymax, s->y[i]);
    }
  if (!std::isfinite(ymin)) return "";
  if (ymax - ymin < 1e-12 * std::max(1.0, std::fabs(ymax))) {
    double pad = std::max(std::fabs(ymax) * 0.1, 1e-3);
    ymin -= pad, ymax += pad;
  } else {
    double pad = (ymax - ymin) * 0.05;
    ymin -= pad, ymax += pad;
  }
  double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + x / xmax * pw; };
  auto py = [&](double y) { return kTop + (ymax - y) / (ymax - ymin) * ph; };

  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(kWidth) << "\" height=\"" << num(kHeight)
     << "\" viewBox=\"0 0 " << num(kWidth) << " " << num(kHeight) << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  os << "<title>" << escape(metric) << "</title>\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << num(kLeft) << "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" << escape(metric)
     << "</text>\n";
  // Grid, ticks and labels.
  os << "<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n";
  std::vector<double> yt = ticks(ymin, ymax, 6), xt = ticks(0, xmax, std::min(10, int(std::ceil(xmax)) + 1));
  for (double t : yt) os << "<line x1=\"" << num(kLeft) << "\" x2=\"" << num(kLeft + pw) << "\" y1=\"" << num(py(t))
                         << "\" y2=\"" << num(py(t)) << "\"/>\n";
  for (double t : xt) os << "<line y1=\"" << num(kTop) << "\" y2=\"" << num(kTop + ph) << "\" x1=\"" << num(px(t))
                         << "\" x2=\"" << num(px(t)) << "\"/>\n";
  os << "</g>\n<g fill=\"#444\">\n";
  for (double t : yt)
    os << "<text x=\"" << num(kLeft - 6) << "\" y=\"" << num(py(t) + 4) << "\" text-anchor=\"end\">"
       << escape(format_metric(metric, t)) << "</text>\n";
  for (double t : xt)
    os << "<text x=\"" << num(px(t)) << "\" y=\"" << num(kTop + ph + 18) << "\" text-anchor=\"middle\">" << num(t)
       << "</text>\n";
  os << "<text x=\"" << num(kLeft + pw / 2) << "\" y=\"" << num(kHeight - 12) << "\" text-anchor=\"middle\">epoch</text>\n";
  os << "</g>\n";
  os << "<rect x=\"" << num(kLeft) << "\" y=\"" << num(kTop) << "\" width=\"" << num(pw) << "\" height=\"" << num(ph)
     << "\" fill=\"none\" stroke=\"#888\"/>\n";
  auto polyline = [&](const Series& s, const char* color, double width, double opacity) {
    if (s.x.empty()) return;
    os << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"" << num(width) << "\" stroke-opacity=\""
       << num(opacity) << "\" points=\"";
    for (size_t i = 0; i < s.x.size(); ++i) os << (i ? " " : "") << num(px(s.x[i])) << "," << num(py(s.y[i]));
    os << "\"/>\n";
  };
  auto markers = [&](const Series& s, const char* color) {
    for (size_t i = 0; i < s.x.size(); ++i)
      os << "<circle cx=\"" << num(px(s.x[i])) << "\" cy=\"" << num(py(s.y[i])) << "\" r=\"3.5\" fill=\"" << color
         << "\"><title>epoch " << num(s.x[i]) << ": " << escape(format_metric(metric, s.y[i])) << "</title></circle>\n";
  };
  const char* train_color = "#1f77b4";
  const char* valid_color = "#ff7f0e";
  polyline(steps, train_color, 1, 0.35);
  polyline(epoch_series[0], train_color, 2, 1);
  markers(epoch_series[0], train_color);
  polyline(epoch_series[1], valid_color, 2, 1);
  markers(epoch_series[1], valid_color);
  // Legend.
  double lx = kLeft + pw - 3 * 118, ly = 18;
  struct Item {
    const char* label;
    const char* color;
    double opacity;
    bool present;
  } items[] = {{"train (iterations)", train_color, 0.35, !steps.x.empty()},
               {"train (epoch)", train_color, 1, !epoch_series[0].x.empty()},
               {"valid (epoch)", valid_color, 1, !epoch_series[1].x.empty()}};
  for (const Item& it : items) {
    if (!it.present) continue;
    os << "<line x1=\"" << num(lx) << "\" x2=\"" << num(lx + 18) << "\" y1=\"" << num(ly) << "\" y2=\"" << num(ly)
       << "\" stroke=\"" << it.color << "\" stroke-width=\"2\" stroke-opacity=\"" << num(it.opacity) << "\"/>"
       << "<text x=\"" << num(lx + 22) << "\" y=\"" << num(ly + 4) << "\">" << it.label << "</text>\n";
    lx += 118;
  }
  os << "</svg>\n";
  return os.str();
}

std::vector<std::string> write_svg_plots(const MetricHistory& history, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> out;
  for (const std::string& name : history.all_names()) {
    std::string svg = svg_plot(history, name);
    if (svg.empty()) continue;
    std::string file = name;
    for (char& c : file)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
    std::string path = (std::filesystem::path(dir) / (file + ".svg")).string();
    write_file_atomic(path, svg);
    out.push_back(path);
  }
  return out;
}

}  // namespace ember::train
