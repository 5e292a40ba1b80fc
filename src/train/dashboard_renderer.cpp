// The terminal dashboard: an ncurses screen drawn by its own thread from a snapshot the training
// thread updates. Live line plots (braille dots on UTF-8 terminals, ASCII elsewhere), progress bars
// with ETA, a metrics table, resource use; keys: left/right switch metric, up/down switch between
// recent and full history, q stops after the current step.
#include <curses.h>
#include <dlfcn.h>
#include <langinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <clocale>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

#include "ember/train/metrics.hpp"
#include "ember/train/renderer.hpp"
#include "terminal_state.hpp"

namespace ember::train {
namespace {

bool is_system_metric(const std::string& n) {
  return n == "lr" || n == "loss_scale" || n == "iter_per_s" || n == "samples_per_s" || n == "cpu_percent" || n == "memory_mb" ||
         n == "gpu_memory_mb" || n == "data_wait" || n == "eta_s" || n == "time_s";
}

struct Curve {
  std::vector<double> x, y;
  void add(double px, double py) {
    if (!std::isfinite(py)) return;
    x.push_back(px);
    y.push_back(py);
  }
};

// What the screen shows; guarded by DashboardRenderer::mu_.
struct Snapshot {
  FitInfo info;
  std::vector<std::string> names;  // selectable metrics, display order
  std::map<std::string, Curve> steps, epoch_train, epoch_valid;
  std::map<std::string, double> last_step, last_train, last_valid, best_valid;
  ProgressView progress;
  bool has_progress = false;
  std::deque<std::string> messages;

  void add_name(const std::string& n) {
    if (n == "eta_s" || n == "time_s") return;
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  void add_valid(const std::string& n, double v) {
    last_valid[n] = v;
    if (!std::isfinite(v)) return;
    auto it = best_valid.find(n);
    bool lower = lower_is_better_by_name(n);
    if (it == best_valid.end() || (lower ? v < it->second : v > it->second)) best_valid[n] = v;
  }
};

// A canvas of pixels over terminal cells: 2x4 braille dots per cell, or 1x2 in ASCII.
class Canvas {
 public:
  Canvas(int cols, int rows, bool braille) : cols_(cols), rows_(rows), braille_(braille) {
    px_w_ = cols * (braille ? 2 : 1);
    px_h_ = rows * (braille ? 4 : 2);
    bits_.assign(size_t(cols * rows), 0);
    color_.assign(size_t(cols * rows), 0);
  }
  int width() const { return px_w_; }
  int height() const { return px_h_; }
  void set(int x, int y, int color) {
    if (x < 0 || y < 0 || x >= px_w_ || y >= px_h_) return;
    int cx = braille_ ? x / 2 : x, cy = braille_ ? y / 4 : y / 2;
    int bit;
    if (braille_) {
      static const int map[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};
      bit = map[y % 4][x % 2];
    } else {
      bit = 1 << (y % 2);
    }
    size_t i = size_t(cy * cols_ + cx);
    bits_[i] |= bit;
    color_[i] = color;
  }
  void line(int x0, int y0, int x1, int y1, int color) {
    int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
      set(x0, y0, color);
      if (x0 == x1 && y0 == y1) break;
      int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }
  // The text of one cell (UTF-8 braille or an ASCII character) and its color pair.
  std::string cell(int cx, int cy, int* color) const {
    size_t i = size_t(cy * cols_ + cx);
    *color = color_[i];
    int b = bits_[i];
    if (!braille_) {
      static const char* ascii[] = {" ", "'", ".", ":"};
      return ascii[b];
    }
    if (!b) return " ";
    unsigned cp = 0x2800u + unsigned(b);
    char buf[4] = {char(0xE0 | (cp >> 12)), char(0x80 | ((cp >> 6) & 0x3F)), char(0x80 | (cp & 0x3F)), 0};
    return buf;
  }

 private:
  int cols_, rows_, px_w_, px_h_;
  bool braille_;
  std::vector<int> bits_, color_;
};

enum Pair { kTrainColor = 1, kValidColor = 2, kHeaderColor = 3, kDimColor = 4, kGoodColor = 5 };

class DashboardRenderer final : public Renderer {
 public:
  explicit DashboardRenderer(DashboardOptions o) : o_(o) {}
  ~DashboardRenderer() override { stop_screen(); }

  void start(const FitInfo& info, const MetricHistory& history) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      s_ = Snapshot{};
      s_.info = info;
      for (const auto& n : info.metrics) s_.add_name(n);
      for (const auto& n : history.all_names()) s_.add_name(n);
      const auto& pos = history.step_positions();
      for (const auto& n : history.step_names()) {
        auto v = history.step_series(n);
        for (size_t i = 0; i < v.size(); ++i) s_.steps[n].add(pos[i], v[i]);
      }
      for (const auto& r : history.epochs()) {
        for (const auto& [n, v] : r.train) s_.epoch_train[n].add(double(r.epoch + 1), v), s_.last_train[n] = v;
        for (const auto& [n, v] : r.valid) s_.epoch_valid[n].add(double(r.epoch + 1), v), s_.add_valid(n, v);
      }
      if (!info.resumed_from.empty()) s_.messages.push_back("resumed from " + info.resumed_from);
      dirty_ = true;
    }
    if (!start_screen()) {  // no usable terminal after all: print plain lines instead
      fallback_ = make_plain_renderer(std::cout);
      fallback_->start(info, history);
    }
  }

  void update(const ProgressView& p) override {
    if (fallback_) return fallback_->update(p);
    std::lock_guard<std::mutex> lock(mu_);
    s_.progress = p;
    s_.has_progress = true;
    if (p.split == Split::train)
      for (const auto& [n, v] : p.step_values) {
        s_.add_name(n);
        s_.last_step[n] = v;
        if (!is_system_metric(n) || n == "lr" || n == "loss_scale" || n == "iter_per_s" || n == "cpu_percent" || n == "memory_mb" ||
            n == "gpu_memory_mb" || n == "data_wait")
          s_.steps[n].add(p.epoch_position, v);
      }
    dirty_ = true;
  }

  void epoch_end(const EpochView& e) override {
    if (fallback_) return fallback_->epoch_end(e);
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [n, v] : e.values) {
      s_.add_name(n);
      if (e.split == Split::train) {
        s_.epoch_train[n].add(double(e.epoch + 1), v);
        s_.last_train[n] = v;
      } else {
        s_.epoch_valid[n].add(double(e.epoch + 1), v);
        s_.add_valid(n, v);
      }
    }
    dirty_ = true;
  }

  void message(const std::string& text) override {
    if (fallback_) return fallback_->message(text);
    std::lock_guard<std::mutex> lock(mu_);
    s_.messages.push_back(text);
    while (s_.messages.size() > 2) s_.messages.pop_front();
    dirty_ = true;
  }

  void finish(const FitSummary& summary) override {
    if (fallback_) return fallback_->finish(summary);
    stop_screen();
    if (o_.print_summary) std::cout << summary.str() << std::flush;
  }

  bool stop_requested() override { return fallback_ ? fallback_->stop_requested() : stop_.load(); }

 private:
  // ---- screen thread ----
  // Starts the screen thread; false when the terminal cannot be used.
  bool start_screen() {
    if (thread_.joinable()) return true;
    quit_ = false;
    std::unique_lock<std::mutex> lock(init_mu_);
    init_done_ = false;
    thread_ = std::thread([this] { run(); });
    init_cv_.wait(lock, [&] { return init_done_; });
    if (!screen_ok_) {
      lock.unlock();
      thread_.join();
    }
    return screen_ok_;
  }

  // Returns whether a screen was up.
  bool stop_screen() {
    if (!thread_.joinable()) return false;
    quit_ = true;
    thread_.join();
    return true;
  }

  void run() {
    bool ok = false;
    std::setlocale(LC_CTYPE, "");
    // Braille and block characters need a UTF-8 locale and the wide-character ncurses library.
    utf8_ = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0 && dlsym(RTLD_DEFAULT, "waddnwstr") != nullptr;
    detail::save_terminal_state();
    SCREEN* screen = newterm(nullptr, stdout, stdin);
    if (screen) {
      ok = true;
      set_term(screen);
      cbreak();  // keeps Ctrl-C a signal
      noecho();
      keypad(stdscr, TRUE);
      curs_set(0);
      timeout(int(o_.refresh_s * 1000));
      if (has_colors()) {
        start_color();
        use_default_colors();
        init_pair(kTrainColor, COLOR_CYAN, -1);
        init_pair(kValidColor, COLOR_YELLOW, -1);
        init_pair(kHeaderColor, COLOR_BLACK, COLOR_CYAN);
        init_pair(kDimColor, COLOR_WHITE, -1);
        init_pair(kGoodColor, COLOR_GREEN, -1);
      }
    } else {
      detail::forget_terminal_state();
    }
    {
      std::lock_guard<std::mutex> lock(init_mu_);
      screen_ok_ = ok;
      init_done_ = true;
    }
    init_cv_.notify_all();
    if (!ok) return;
    auto last_draw = std::chrono::steady_clock::time_point{};
    while (!quit_) {
      int ch = getch();
      bool key = handle_key(ch);
      auto now = std::chrono::steady_clock::now();
      if (key || ch == KEY_RESIZE || (dirty_.exchange(false)) ||
          now - last_draw > std::chrono::milliseconds(500)) {
        draw();
        last_draw = now;
      }
    }
    draw();
    endwin();
    delscreen(screen);
    detail::forget_terminal_state();
  }

  bool handle_key(int ch) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = int(s_.names.size());
    switch (ch) {
      case KEY_RIGHT: case 'l': if (n) selected_ = (selected_ + 1) % n; return true;
      case KEY_LEFT: case 'h': if (n) selected_ = (selected_ + n - 1) % n; return true;
      case KEY_UP: case KEY_DOWN: case 'k': case 'j': full_history_ = !full_history_; return true;
      case 'q': case 'Q':
        if (!stop_) {
          stop_ = true;
          s_.messages.push_back("quit: stopping after the current step, then writing a checkpoint");
          while (s_.messages.size() > 2) s_.messages.pop_front();
        }
        return true;
      default: return false;
    }
  }

  // ---- drawing (screen thread, under mu_) ----
  void put(int y, int x, const std::string& text, int width = -1) {
    if (y < 0 || y >= LINES || x >= COLS) return;
    int room = COLS - x;
    if (width >= 0) room = std::min(room, width);
    // Count display columns (UTF-8 continuation bytes take none).
    std::string out;
    int cols = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(text[i]);
      if ((c & 0xC0) != 0x80) {
        if (cols == room) break;
        ++cols;
      }
      out += text[i];
    }
    mvaddstr(y, x, out.c_str());
  }

  std::string bar(double frac, int width) {
    frac = std::clamp(std::isfinite(frac) ? frac : 0.0, 0.0, 1.0);
    std::string out;
    double cells = frac * width;
    int full = int(cells);
    if (!utf8_) {
      out.assign(size_t(full), '#');
      out.append(size_t(width - full), '-');
      return out;
    }
    static const char* partial[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    for (int i = 0; i < full; ++i) out += "█";
    int rest = width - full;
    if (rest > 0) {
      int eighth = int((cells - full) * 8);
      if (eighth > 0) {
        out += partial[eighth];
        --rest;
      }
      for (int i = 0; i < rest; ++i) out += "░";
    }
    return out;
  }

  void draw() {
    std::lock_guard<std::mutex> lock(mu_);
    erase();
    int W = COLS, H = LINES;
    const Snapshot& s = s_;
    const ProgressView& p = s.progress;
    // Header.
    char buf[512];
    std::snprintf(buf, sizeof buf, " ember · training on %s · epoch %lld/%lld · step %lld · elapsed %s ",
                  s.info.device.c_str(), static_cast<long long>(std::min(p.epoch + 1, std::max<int64_t>(1, s.info.num_epochs))),
                  static_cast<long long>(s.info.num_epochs), static_cast<long long>(p.global_step),
                  format_duration(p.elapsed_s).c_str());
    attron(A_REVERSE | A_BOLD);
    mvhline(0, 0, ' ', W);
    put(0, 0, utf8_ ? buf : replace_dot(buf));
    attroff(A_REVERSE | A_BOLD);

    // Progress bars.
    int bar_w = std::max(10, std::min(50, W - 60));
    double epoch_frac = p.num_batches > 0 ? double(p.batch) / double(p.num_batches) : 0;
    std::snprintf(buf, sizeof buf, "%-6s [", std::string(split_name(p.split)).c_str());
    put(2, 1, buf);
    attron(COLOR_PAIR(p.split == Split::train ? kTrainColor : kValidColor));
    put(2, 9, bar(epoch_frac, bar_w));
    attroff(COLOR_PAIR(p.split == Split::train ? kTrainColor : kValidColor));
    if (p.num_batches > 0)
      std::snprintf(buf, sizeof buf, "] %3.0f%%  %lld/%lld  ETA %s", 100 * epoch_frac, static_cast<long long>(p.batch),
                    static_cast<long long>(p.num_batches), format_duration(p.epoch_eta_s).c_str());
    else
      std::snprintf(buf, sizeof buf, "]  %lld batches", static_cast<long long>(p.batch));
    put(2, 9 + bar_w, buf);
    double total_frac = 0;
    if (s.info.num_epochs > 0) {
      double pos = p.split == Split::train ? p.epoch_position : double(p.epoch + 1);
      total_frac = pos / double(s.info.num_epochs);
    }
    put(3, 1, "total  [");
    attron(COLOR_PAIR(kGoodColor));
    put(3, 9, bar(total_frac, bar_w));
    attroff(COLOR_PAIR(kGoodColor));
    std::snprintf(buf, sizeof buf, "] %3.0f%%  epoch %lld/%lld  ETA %s", 100 * std::clamp(total_frac, 0.0, 1.0),
                  static_cast<long long>(p.epoch + 1), static_cast<long long>(s.info.num_epochs),
                  format_duration(p.total_eta_s).c_str());
    put(3, 9 + bar_w, buf);

    // Layout below: plot, then the table, resources, messages and help.
    std::vector<std::string> table;
    for (const auto& n : s.names)
      if (!is_system_metric(n)) table.push_back(n);
    int table_rows = std::min<int>(int(table.size()), std::max(2, H / 4));
    int footer = 1 /*blank*/ + 1 + table_rows + 1 /*resources*/ + 1 /*messages*/ + 1 /*help*/;
    int plot_top = 5;
    int plot_rows = H - plot_top - 2 /*title+axis*/ - footer;
    if (plot_rows >= 3 && !s.names.empty()) draw_plot(plot_top, plot_rows, W);
    int y = H - footer + 1;

    // Metrics table.
    std::snprintf(buf, sizeof buf, "  %-18s %12s %12s %12s %12s", "metric", "step", "train", "valid", "best valid");
    attron(A_BOLD);
    put(y++, 0, buf);
    attroff(A_BOLD);
    std::string current = s.names.empty() ? "" : s.names[size_t(selected_) % s.names.size()];
    for (int i = 0; i < table_rows; ++i) {
      const std::string& n = table[size_t(i)];
      auto get = [&](const std::map<std::string, double>& m) {
        auto it = m.find(n);
        return it == m.end() ? std::string("-") : format_metric(n, it->second);
      };
      auto running = [&]() -> std::string {
        for (const auto& [k, v] : p.running)
          if (k == n && p.split == Split::train) return format_metric(n, v);
        return get(s.last_train);
      };
      std::snprintf(buf, sizeof buf, "%s %-18s %12s %12s %12s %12s", n == current ? (utf8_ ? "▸" : ">") : " ",
                    n.c_str(), get(s.last_step).c_str(), running().c_str(), get(s.last_valid).c_str(),
                    get(s.best_valid).c_str());
      put(y++, 0, buf);
    }
    // Resources.
    std::string res;
    for (const char* n : {"lr", "loss_scale", "iter_per_s", "cpu_percent", "memory_mb", "gpu_memory_mb", "data_wait"}) {
      auto it = s.last_step.find(n);
      if (it == s.last_step.end() || std::isnan(it->second)) continue;
      res += "  " + display_name(n) + " " + format_metric(n, it->second);
    }
    attron(COLOR_PAIR(kDimColor));
    put(y++, 0, res);
    attroff(COLOR_PAIR(kDimColor));
    std::string msg;
    for (const auto& m : s.messages) msg += (msg.empty() ? " " : " | ") + m;
    put(y++, 0, msg);
    attron(A_REVERSE);
    mvhline(H - 1, 0, ' ', W);
    put(H - 1, 0, utf8_ ? " ←/→ metric   ↑/↓ recent/full history   q quit (checkpoint, then stop)   Ctrl-C same"
                        : " left/right: metric   up/down: recent/full history   q: quit (checkpoint, then stop)");
    attroff(A_REVERSE);
    refresh();
  }

  // The header without its UTF-8 middle dots, for ASCII terminals.
  static std::string replace_dot(const char* s) {
    static const std::string dot = "·";
    std::string out;
    for (std::string_view rest(s); !rest.empty();) {
      if (rest.substr(0, dot.size()) == dot) {
        out.push_back('|');
        rest.remove_prefix(dot.size());
      } else {
        out.push_back(rest.front());
        rest.remove_prefix(1);
      }
    }
    return out;
  }

  void draw_plot(int top, int rows, int W) {
    const Snapshot& s = s_;
    const std::string& name = s.names[size_t(selected_) % s.names.size()];
    char buf[256];
    int label_w = 10;
    int cols = std::max(10, W - label_w - 3);
    // Visible x range.
    const Curve* steps = nullptr;
    if (auto it = s.steps.find(name); it != s.steps.end() && !it->second.x.empty()) steps = &it->second;
    const Curve* tr = nullptr;
    if (auto it = s.epoch_train.find(name); it != s.epoch_train.end()) tr = &it->second;
    const Curve* va = nullptr;
    if (auto it = s.epoch_valid.find(name); it != s.epoch_valid.end()) va = &it->second;
    double xmin = 0, xmax = 1;
    size_t first = 0;
    bool recent = !full_history_ && steps && int64_t(steps->x.size()) > o_.recent_steps;
    if (steps) {
      if (recent) first = steps->x.size() - size_t(o_.recent_steps);
      xmin = recent ? steps->x[first] : 0;
      xmax = std::max(steps->x.back(), xmin + 1e-9);
    }
    auto in_range = [&](double x) { return x >= xmin - 1e-9 && x <= xmax + 1e-9; };
    if (!recent) {
      for (const Curve* c : {tr, va})
        if (c)
          for (double x : c->x) xmax = std::max(xmax, x);
      if (!steps) xmin = 0;
    }
    double ymin = INFINITY, ymax = -INFINITY;
    if (steps)
      for (size_t i = first; i < steps->y.size(); ++i) ymin = std::min(ymin, steps->y[i]), ymax = std::max(ymax, steps->y[i]);
    for (const Curve* c : {va})
      if (c)
        for (size_t i = 0; i < c->x.size(); ++i)
          if (in_range(c->x[i])) ymin = std::min(ymin, c->y[i]), ymax = std::max(ymax, c->y[i]);
    // Title.
    std::snprintf(buf, sizeof buf, " %s metric: %s %s (%d/%d)   %s", utf8_ ? "◀" : "<", name.c_str(), utf8_ ? "▶" : ">",
                  selected_ % int(s.names.size()) + 1, int(s.names.size()),
                  full_history_ ? "full history" : "recent history (last iterations)");
    attron(A_BOLD);
    put(top, 0, buf);
    attroff(A_BOLD);
    int lx = int(std::strlen(buf)) + 3;
    attron(COLOR_PAIR(kTrainColor));
    put(top, lx, utf8_ ? "━ train" : "- train");
    attroff(COLOR_PAIR(kTrainColor));
    attron(COLOR_PAIR(kValidColor));
    put(top, lx + 9, utf8_ ? "● valid (epoch)" : "o valid (epoch)");
    attroff(COLOR_PAIR(kValidColor));
    if (!std::isfinite(ymin)) {
      put(top + 1 + rows / 2, label_w + 4, "no values yet");
      return;
    }
    if (ymax - ymin < 1e-12 * std::max(1.0, std::fabs(ymax))) {
      double pad = std::max(std::fabs(ymax) * 0.05, 1e-6);
      ymin -= pad, ymax += pad;
    }
    Canvas canvas(cols, rows, utf8_);
    auto px = [&](double x) { return int(std::lround((x - xmin) / (xmax - xmin) * (canvas.width() - 1))); };
    auto py = [&](double y) { return int(std::lround((ymax - y) / (ymax - ymin) * (canvas.height() - 1))); };
    if (steps) {
      // One averaged point per pixel column.
      std::vector<double> sum(size_t(canvas.width()), 0), cnt(size_t(canvas.width()), 0);
      for (size_t i = first; i < steps->x.size(); ++i) {
        int c = std::clamp(px(steps->x[i]), 0, canvas.width() - 1);
        sum[size_t(c)] += steps->y[i];
        cnt[size_t(c)] += 1;
      }
      int prev_x = -1, prev_y = 0;
      for (int c = 0; c < canvas.width(); ++c) {
        if (!cnt[size_t(c)]) continue;
        int yy = py(sum[size_t(c)] / cnt[size_t(c)]);
        if (prev_x >= 0) canvas.line(prev_x, prev_y, c, yy, kTrainColor);
        else canvas.set(c, yy, kTrainColor);
        prev_x = c, prev_y = yy;
      }
    } else if (tr) {
      int prev_x = -1, prev_y = 0;
      for (size_t i = 0; i < tr->x.size(); ++i) {
        if (!in_range(tr->x[i])) continue;
        int xx = px(tr->x[i]), yy = py(tr->y[i]);
        if (prev_x >= 0) canvas.line(prev_x, prev_y, xx, yy, kTrainColor);
        else canvas.set(xx, yy, kTrainColor);
        prev_x = xx, prev_y = yy;
      }
    }
    if (va) {
      int prev_x = -1, prev_y = 0;
      for (size_t i = 0; i < va->x.size(); ++i) {
        if (!in_range(va->x[i])) continue;
        int xx = px(va->x[i]), yy = py(va->y[i]);
        if (prev_x >= 0) canvas.line(prev_x, prev_y, xx, yy, kValidColor);
        for (int dx = -1; dx <= 1; ++dx)
          for (int dy = -1; dy <= 1; ++dy) canvas.set(xx + dx, yy + dy, kValidColor);
        prev_x = xx, prev_y = yy;
      }
    }
    // Axis labels and the canvas.
    for (int r = 0; r < rows; ++r) {
      int y = top + 1 + r;
      if (r == 0 || r == rows - 1 || r == rows / 2) {
        double v = ymax - (ymax - ymin) * (double(r) + 0.5) / double(rows);
        if (r == 0) v = ymax;
        if (r == rows - 1) v = ymin;
        std::snprintf(buf, sizeof buf, "%*s", label_w, format_metric(name, v).c_str());
        put(y, 0, buf, label_w);
      }
      put(y, label_w + 1, utf8_ ? "│" : "|");
      for (int c = 0; c < cols; ++c) {
        int color = 0;
        std::string ch = canvas.cell(c, r, &color);
        if (ch == " ") continue;
        if (color) attron(COLOR_PAIR(color));
        put(y, label_w + 2 + c, ch);
        if (color) attroff(COLOR_PAIR(color));
      }
    }
    int axis_y = top + 1 + rows;
    std::snprintf(buf, sizeof buf, "epoch %.2f", xmin);
    put(axis_y, label_w + 2, buf);
    std::snprintf(buf, sizeof buf, "epoch %.2f", xmax);
    put(axis_y, std::max(label_w + 20, label_w + 2 + cols - int(std::strlen(buf))), buf);
  }

  DashboardOptions o_;
  std::mutex mu_;
  Snapshot s_;
  std::atomic<bool> dirty_{false}, stop_{false}, quit_{false};
  int selected_ = 0;
  bool full_history_ = false;
  bool utf8_ = false;
  std::thread thread_;
  std::mutex init_mu_;
  std::condition_variable init_cv_;
  bool init_done_ = false;
  bool screen_ok_ = false;
  std::shared_ptr<Renderer> fallback_;
};

}  // namespace

std::shared_ptr<Renderer> make_dashboard_renderer(DashboardOptions options) {
  return std::make_shared<DashboardRenderer>(options);
}

}  // namespace ember::train
