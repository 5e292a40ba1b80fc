// The fusion decorator: lazy per-thread queues of elementwise ops, cut into groups at flush
// time and run as one kernel per group (FusedKernels of the wrapped backend).
//
// Every primitive above the decorator is a FusionTensor: a computed value of the inner
// backend, or a pending entry of a queue. A queue entry holds its output's handle weakly, so
// at a flush the decorator knows which results something outside the queue still holds (they
// are materialised) and which died (never computed, or kept inside a kernel's registers). The
// inputs it holds strongly; an input the queue holds alone may become an output's buffer.
//
// Grouping, in queue order: a node joins the latest group of its output shape when every other
// group it reads from was made before that group, else it starts a group. A matmul (when the
// backend takes it) always starts a group: the elementwise ops after it over its product's
// shape join that group as its epilogue. Groups run in the
// order they were made, which is then a topological order. A value read by a later group, or
// held outside, is an output of its group.
#include "ember/decorators/fusion.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "ember/core/error.hpp"
#include "ember/core/trace.hpp"

namespace ember::fusion {

namespace {

struct Queue;

class FusionTensor final : public Primitive {
 public:
  FusionTensor(TensorMeta meta, PrimitivePtr v) : Primitive(std::move(meta)), value(std::move(v)) {}
  FusionTensor(TensorMeta meta, std::shared_ptr<Queue> q, int32_t i)
      : Primitive(std::move(meta)), queue(std::move(q)), index(i) {}
  PrimitivePtr value;            // the inner backend's primitive, once computed
  std::shared_ptr<Queue> queue;  // while pending: the queue and the entry's index in it
  int32_t index = -1;
};

FusionTensor& ft(const PrimitivePtr& p) { return static_cast<FusionTensor&>(*p); }

struct Arg {
  int32_t node = -1;  // >= 0: a pending entry of the same queue
  PrimitivePtr leaf;  // else: an inner primitive
};

struct Entry {
  OpKind kind;
  OpAttrs attrs;
  TensorMeta out;
  std::vector<Arg> args;
  std::weak_ptr<Primitive> handle;  // the FusionTensor handed out
  bool alone = false;               // a group of its own (a view of a queued value)
};

// A group of queued entries run as one program (see FusedProgram): its domain and, once a
// reduction joins, the trailing dims it reduces and the per-row values' shape (a row program)
// or the leading dims and the per-column values' shape (a column program); or, when a matmul
// starts it, the elementwise epilogue over the product (of reductions, only column ones join).
struct Group {
  Shape shape;
  std::vector<int32_t> members;
  int reduce_from = -1;
  Shape reduced_shape;
  bool producer = false;  // member 0 is a matmul
  int reduce_to = 0;      // a column program: the leading dims [0, reduce_to) its reductions reduce
};

bool is_reduction(OpKind k) { return op_info(k).family == OpFamily::Reduce; }

struct Queue {
  std::vector<Entry> entries;
  int64_t bytes = 0;  // of the queued results
};

int64_t max_ops() {
  static const int64_t n = [] {
    const char* e = std::getenv("EMBER_FUSION_MAX_OPS");
    long long v = e ? std::atoll(e) : 0;
    return v > 0 ? int64_t(v) : int64_t(512);
  }();
  return n;
}
constexpr int64_t kMaxBytes = int64_t(4) << 30;

bool log_fusion() {
  static const bool on = [] {
    const char* e = std::getenv("EMBER_LOG");
    return e && std::string(e).find("fusion") != std::string::npos;
  }();
  return on;
}

class FusionBackend final : public ForwardingBackend {
 public:
  explicit FusionBackend(const std::shared_ptr<Backend>& inner)
      : ForwardingBackend(inner), name_(inner->name() + "+fusion"), kernels_(inner->fused_kernels()) {}

  std::string name() const override { return name_; }

  std::vector<PrimitivePtr> execute(Op op) override {
    if (kernels_ && op.kind == OpKind::matmul) unfold_transposes(op);
    if (kernels_ && kernels_->can_fuse(op) && !(is_reduction(op.kind) && op.outputs[0].shape == op.in(0).shape))
      return {enqueue(std::move(op))};
    // a view of a value still queued on this thread: folded into the expression that computes it
    // when it can be (fold_view), else queued too, as a group of its own: the value becomes an
    // output of its group, the view of it an input (read through its strides) of the groups
    // after. Either way the queue is not flushed.
    if (kernels_ && op.info().family == OpFamily::View && op.inputs[0] && pending_here(op.inputs[0])) {
      if (PrimitivePtr v = fold_view(op)) return {v};
      return {enqueue(std::move(op), true)};
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& p : op.inputs)
        if (p) p = take_value(p);
      ++stats_.ops_eager;
    }
    std::vector<PrimitivePtr> outs = inner_->execute(std::move(op));
    for (auto& o : outs)
      if (o) o = wrap_value(std::move(o));
    return outs;
  }

  TensorData read(const PrimitivePtr& p) override { return inner_->read(locked_value_of(p)); }
  std::optional<MemoryView> memory_view(const PrimitivePtr& p) override {
    return inner_->memory_view(locked_value_of(p));
  }
  bool overwrite(const PrimitivePtr& dst, const TensorData& src) override {
    return inner_->overwrite(locked_value_of(dst), src);
  }
  bool copy_into(const PrimitivePtr& dst, const PrimitivePtr& src) override {
    return inner_->copy_into(locked_value_of(dst), locked_value_of(src));
  }
  // what was queued before the region runs first; what the region queues is flushed into it
  std::unique_ptr<CapturedWork> capture(const std::function<void()>& region) override {
    flush_all();
    return inner_->capture([&] {
      region();
      flush_all();
    });
  }
  PrimitivePtr write(const TensorData& data) override { return wrap_value(inner_->write(data)); }
  PrimitivePtr write_bytes(const TensorMeta& meta, std::span<const std::byte> bytes) override {
    return wrap_value(inner_->write_bytes(meta, bytes));
  }
  PrimitivePtr wrap_bytes(const TensorMeta& meta, std::span<const std::byte> bytes,
                          std::shared_ptr<const void> owner) override {
    return wrap_value(inner_->wrap_bytes(meta, bytes, std::move(owner)));
  }
  void sync() override {
    flush_all();
    inner_->sync();
  }
  MemoryStats memory_stats() const override {
    const_cast<FusionBackend*>(this)->flush_all();
    return inner_->memory_stats();
  }
  void memory_cleanup() override {
    flush_all();
    inner_->memory_cleanup();
  }
  // A decorator above this one sees no fused kernels: its primitives are FusionTensors.
  FusedKernels* fused_kernels() override { return nullptr; }

  void flush_all_queues() { flush_all(); }
  Stats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_stats() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_ = {};
  }

 private:
  static PrimitivePtr wrap_value(PrimitivePtr v) {
    TensorMeta m = v->meta();
    return std::make_shared<FusionTensor>(std::move(m), std::move(v));
  }

  // The inner value of `p`, flushing its queue when it is pending (mu_ held).
  PrimitivePtr value_of(const PrimitivePtr& p) {
    FusionTensor& t = ft(p);
    if (t.queue) flush(t.queue);
    EMBER_CHECK(t.value != nullptr, "fusion: tensor of shape ", p->shape(),
                " has no value (an earlier error interrupted the group that computes it)");
    return t.value;
  }
  // Same, taking mu_ (read, memory_view, overwrite, copy_into).
  PrimitivePtr locked_value_of(const PrimitivePtr& p) {
    std::lock_guard<std::mutex> lock(mu_);
    return value_of(p);
  }
  // Same, giving the value up when the caller holds the only handle (so the inner backend may
  // reuse the buffer in place).
  PrimitivePtr take_value(PrimitivePtr& p) {
    FusionTensor& t = ft(p);
    if (t.queue) flush(t.queue);
    EMBER_CHECK(t.value != nullptr, "fusion: tensor of shape ", p->shape(),
                " has no value (an earlier error interrupted the group that computes it)");
    return p.use_count() == 1 ? std::move(t.value) : t.value;
  }

  std::shared_ptr<Queue>& my_queue() {
    auto& q = queues_[std::this_thread::get_id()];
    if (!q) q = std::make_shared<Queue>();
    return q;
  }

  // Whether `p` is pending in the calling thread's queue.
  bool pending_here(const PrimitivePtr& p) {
    std::lock_guard<std::mutex> lock(mu_);
    const FusionTensor& t = ft(p);
    return t.queue && t.queue == my_queue();
  }

  // A view of a queued elementwise expression is the same expression over views of its inputs
  // (elementwise ops commute with any map of indices): that expression is queued instead, so the
  // groups after compute the viewed values where they read them, and the value under the view
  // need not be written and read back (it is dropped when nothing else holds it). Taken when the
  // expression is at most kMaxFold elementwise entries, each of the view's input shape, over
  // materialised inputs; each input is expanded to that shape and viewed (metadata only). A
  // reshape is taken only when every input already has the shape, because a reshape of a
  // broadcast input is not a view. Otherwise nullptr, and the caller queues the view alone.
  PrimitivePtr fold_view(const Op& view) {
    constexpr size_t kMaxFold = 16;

    struct Clone {
      int32_t index;
      OpKind kind;
      OpAttrs attrs;
      std::vector<Arg> args;
    };
    std::vector<Clone> clones;  // ascending queue order (a topological order)
    const Shape& shape = view.in(0).shape;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::shared_ptr<Queue> q = my_queue();
      std::vector<int32_t> stack{ft(view.inputs[0]).index}, seen;
      while (!stack.empty()) {
        const int32_t i = stack.back();
        stack.pop_back();
        if (std::find(seen.begin(), seen.end(), i) != seen.end()) continue;
        seen.push_back(i);
        const Entry& e = q->entries[size_t(i)];
        if (e.alone || !is_elementwise(op_info(e.kind).family) || e.out.shape != shape || seen.size() > kMaxFold)
          return nullptr;
        for (const Arg& a : e.args) {
          if (a.node >= 0) stack.push_back(a.node);
          else if (!a.leaf || (view.kind == OpKind::reshape && (a.leaf->shape() != shape || made_by_fold(a.leaf))))
            return nullptr;
        }
        clones.push_back({i, e.kind, e.attrs, e.args});
      }
    }
    std::sort(clones.begin(), clones.end(), [](const Clone& a, const Clone& b) { return a.index < b.index; });
    std::vector<std::pair<const Primitive*, PrimitivePtr>> leaf_views;
    auto leaf_view = [&](const PrimitivePtr& leaf) {
      for (auto& [l, v] : leaf_views)
        if (l == leaf.get()) return v;
      PrimitivePtr x = leaf;
      if (x->shape() != shape) x = inner_->execute(make_op(OpKind::expand, {x}, ShapeAttrs{shape}))[0];
      x = inner_->execute(make_op(view.kind, {x}, view.attrs))[0];
      {
        std::lock_guard<std::mutex> lock(mu_);
        std::erase_if(fold_views_, [](const std::weak_ptr<Primitive>& w) { return w.expired(); });
        fold_views_.push_back(x);
      }
      leaf_views.emplace_back(leaf.get(), wrap_value(x));
      return leaf_views.back().second;
    };
    std::vector<std::pair<int32_t, PrimitivePtr>> made;  // queue index -> its clone
    for (const Clone& c : clones) {
      std::vector<PrimitivePtr> inputs;
      for (const Arg& a : c.args) {
        if (a.node < 0) {
          inputs.push_back(leaf_view(a.leaf));
          continue;
        }
        auto it = std::find_if(made.begin(), made.end(), [&](const auto& m) { return m.first == a.node; });
        inputs.push_back(it->second);
      }
      made.emplace_back(c.index, execute(make_op(c.kind, std::move(inputs), c.attrs))[0]);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.views_folded;
      if (view.kind == OpKind::permute) {
        const auto& dims = std::get<DimsAttrs>(view.attrs).dims;
        if (!dims.empty() && dims.back() != int(dims.size()) - 1) {  // a transpose: see unfold_transposes
          std::erase_if(folded_transposes_, [](const FoldedTranspose& f) { return f.result.expired(); });
          folded_transposes_.push_back({made.back().second, view.inputs[0], view.attrs});
        }
      }
    }
    return made.back().second;
  }

  // A matmul reads a transposed operand for free (the library's transpose flags), but the
  // expression fold_view made for a transposed view computes its values in the transposed order:
  // reading its inputs across their rows (on an H100 a 2-op program over GPT-2's [8192, 768]
  // gradients took 116 us that way, 27 us in order). So a matmul operand that is such a fold of
  // a value still alive takes a plain view of that value instead (queued alone, read through its
  // strides); the folded expression, read by nothing else, is then never computed.
  void unfold_transposes(Op& op) {
    for (auto& in : op.inputs) {
      if (!in) continue;
      PrimitivePtr source;
      OpAttrs attrs;
      {
        std::lock_guard<std::mutex> lock(mu_);
        for (const FoldedTranspose& f : folded_transposes_)
          if (f.result.lock() == in) {
            source = f.source.lock();
            attrs = f.attrs;
            break;
          }
      }
      if (!source) continue;
      Op view = make_op(OpKind::permute, {source}, std::move(attrs));
      if (pending_here(source)) {
        in = enqueue(std::move(view), true);
      } else {
        {
          std::lock_guard<std::mutex> lock(mu_);
          view.inputs[0] = take_value(view.inputs[0]);
        }
        in = wrap_value(std::move(inner_->execute(std::move(view))[0]));
      }
    }
  }

  // Whether `leaf` is a view fold_view made (strided, maybe not contiguous: a reshape of it might
  // copy). mu_ held.
  bool made_by_fold(const PrimitivePtr& leaf) const {
    return std::any_of(fold_views_.begin(), fold_views_.end(),
                       [&](const std::weak_ptr<Primitive>& w) { return w.lock() == leaf; });
  }

  PrimitivePtr enqueue(Op op, bool alone = false) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Queue> q = my_queue();
    Entry e{op.kind, std::move(op.attrs), op.outputs[0], {}, {}, alone};
    e.args.reserve(op.inputs.size());
    for (auto& p : op.inputs) {
      FusionTensor& t = ft(p);
      if (t.queue && t.queue != q) flush(t.queue);  // pending on another thread: compute it now
      if (t.queue == q) {
        e.args.push_back({t.index, nullptr});
      } else {
        EMBER_CHECK(t.value != nullptr, "fusion: ", op_name(e.kind), ": an input has no value (an earlier error)");
        e.args.push_back({-1, p.use_count() == 1 ? std::move(t.value) : t.value});
      }
    }
    op.inputs.clear();
    const int32_t index = int32_t(q->entries.size());
    auto out = std::make_shared<FusionTensor>(e.out, q, index);
    e.handle = out;
    q->bytes += e.out.shape.numel() * int64_t(dtype_size(e.out.dtype));
    q->entries.push_back(std::move(e));
    ++stats_.ops_queued;
    if (int64_t(q->entries.size()) >= max_ops() || q->bytes >= kMaxBytes) flush(q);
    return out;
  }

  void flush_all() {  // also fusion::flush
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::shared_ptr<Queue>> qs;
    for (auto& [id, q] : queues_)
      if (q && !q->entries.empty()) qs.push_back(q);
    for (auto& q : qs) flush(q);
  }

  // Runs every entry of `q` that something still needs, in groups (mu_ held).
  void flush(const std::shared_ptr<Queue>& q) {
    if (q->entries.empty()) return;
    std::vector<Entry> entries = std::move(q->entries);
    q->entries.clear();
    q->bytes = 0;
    ++stats_.flushes;
    const size_t n = entries.size();
    std::vector<PrimitivePtr> handles(n);  // the live FusionTensors (kept alive through the flush)
    for (size_t j = 0; j < n; ++j) handles[j] = entries[j].handle.lock();
    try {
      run_entries(entries, handles);
    } catch (...) {
      for (auto& h : handles)
        if (h) ft(h).queue.reset();
      throw;
    }
  }

  void run_entries(std::vector<Entry>& entries, const std::vector<PrimitivePtr>& handles) {
    const size_t n = entries.size();
    // needed: held outside, or read by a needed entry
    std::vector<char> needed(n, 0);
    for (size_t j = n; j-- > 0;) {
      if (handles[j]) needed[j] = 1;
      if (!needed[j]) continue;
      for (const Arg& a : entries[j].args)
        if (a.node >= 0) needed[size_t(a.node)] = 1;
    }
    // groups
    std::vector<Group> groups;
    std::vector<int32_t> group_of(n, -1);
    std::vector<char> reduced(n, 0);  // the entry is a per-row node of its (row) group
    std::vector<std::pair<Shape, int32_t>> latest;  // the latest group of each shape (few shapes)
    auto latest_of = [&](const Shape& s) {
      auto it = std::find_if(latest.begin(), latest.end(), [&](const auto& l) { return l.first == s; });
      return it == latest.end() ? -1 : it->second;
    };
    auto set_latest = [&](const Shape& s, int32_t g) {
      auto it = std::find_if(latest.begin(), latest.end(), [&](const auto& l) { return l.first == s; });
      if (it != latest.end()) it->second = g;
      else latest.emplace_back(s, g);
    };
    for (size_t j = 0; j < n; ++j) {
      if (!needed[j]) {
        ++stats_.ops_dropped;
        continue;
      }
      const Entry& e = entries[j];
      // where the entry may go: a group `g` at a level (reduced or not), when every other group
      // it reads from was made before g and a full node reads per-row values only as keepdim
      auto fits = [&](int32_t g, bool red) {
        if (g < 0) return false;
        const Group& grp = groups[size_t(g)];
        for (const Arg& a : e.args) {
          if (a.node < 0) continue;
          const int32_t ag = group_of[size_t(a.node)];
          if (ag > g) return false;
          // (a per-column value broadcasts along the leading dims whether or not it kept them)
          if (ag == g && !red && reduced[size_t(a.node)] && grp.reduce_from >= 0 &&
              grp.reduced_shape.rank() != grp.shape.rank())
            return false;
        }
        return true;
      };
      int32_t g = -1;
      bool red = false;
      if (e.alone) {  // joins nothing and nothing joins it
        g = int32_t(groups.size());
        groups.push_back({e.out.shape, {}, -1, {}});
      } else if (e.kind == OpKind::matmul) {  // starts a group that elementwise ops of its shape join
        g = int32_t(groups.size());
        groups.push_back({e.out.shape, {}, -1, {}, true});
        set_latest(e.out.shape, g);
      } else if (is_reduction(e.kind)) {
        // a reduction over trailing dims (a row reduction) or over leading ones keeping the
        // rest (a column reduction): joins the latest group over its input's shape whose
        // reductions (if any) reduce the same dims to the same shape
        const Shape& dom = e.args[0].node >= 0 ? entries[size_t(e.args[0].node)].out.shape : e.args[0].leaf->shape();
        const auto& ra = std::get<ReduceAttrs>(e.attrs);
        // (the backend took it: the dims are [0, to) and [from, rank), one block possibly empty;
        // a row reduction has to == 0, a column one from < 0, a middle one, which a row program
        // runs, both)
        int to = 0, from = -1;
        while (to < int(ra.dims.size()) && ra.dims[size_t(to)] == to) ++to;
        if (ra.dims.empty() || ra.dims.back() == dom.rank() - 1)
          from = to < int(ra.dims.size()) ? ra.dims[size_t(to)] : 0;
        if (from == 0) to = 0;  // every dim: a row reduction
        const bool leading = from < 0;
        red = true;
        g = latest_of(dom);
        if (g >= 0) {
          const Group& grp = groups[size_t(g)];
          const bool fresh = grp.reduce_from < 0 && grp.reduce_to == 0;
          // (a column reduction may join a matmul program: the product's epilogue becomes its
          // prologue, as a linear layer's backward sums the gradient that its matmuls read)
          const bool same =
              grp.shape == dom && (!grp.producer || leading) &&
              (fresh || (grp.reduce_from == from && grp.reduce_to == to && grp.reduced_shape == e.out.shape));
          if (!same || !fits(g, false)) g = -1;  // (its operand is a full value)
        }
        if (g < 0) {
          g = int32_t(groups.size());
          groups.push_back({dom, {}, -1, {}});
          set_latest(dom, g);
        }
        Group& grp = groups[size_t(g)];
        if (grp.reduce_from < 0 && grp.reduce_to == 0) {
          grp.reduce_from = from;
          grp.reduce_to = to;
          grp.reduced_shape = e.out.shape;
          set_latest(e.out.shape, g);
        }
      } else {
        g = latest_of(e.out.shape);
        if (g >= 0) {
          const Group& grp = groups[size_t(g)];
          red = grp.shape != e.out.shape;  // (then it is the group's reduced shape)
          if (!fits(g, red)) g = -1;
        }
        if (g < 0) {
          red = false;
          g = int32_t(groups.size());
          groups.push_back({e.out.shape, {}, -1, {}});
          set_latest(e.out.shape, g);
        }
      }
      groups[size_t(g)].members.push_back(int32_t(j));
      group_of[j] = g;
      reduced[j] = red;
    }
    // outputs: held outside, or read by another group; last_use: the last group reading a value
    std::vector<char> is_out(n, 0);
    std::vector<int32_t> last_use(n, -1);
    for (size_t j = 0; j < n; ++j) {
      if (!needed[j]) continue;
      if (handles[j]) is_out[j] = 1;
      for (const Arg& a : entries[j].args)
        if (a.node >= 0 && group_of[size_t(a.node)] != group_of[j]) {
          is_out[size_t(a.node)] = 1;
          last_use[size_t(a.node)] = std::max(last_use[size_t(a.node)], group_of[j]);
        }
    }
    std::vector<PrimitivePtr> vals(n);
    // (per entry, over every group: a flush of small groups allocates little)
    std::vector<int32_t> local(n, -1);        // entry -> node index in its group's program
    std::vector<int32_t> value_input(n, -1);  // entry of an earlier group -> input index of this one
    std::vector<int32_t> read_here;           // the entries value_input holds for this group
    for (int32_t g = 0; g < int32_t(groups.size()); ++g) {
      const Group& grp = groups[size_t(g)];
      // the group's inputs: distinct leaves and values of earlier groups (few: a linear search)
      std::vector<PrimitivePtr> inputs;
      auto input_of = [&](PrimitivePtr v) {
        for (size_t i = 0; i < inputs.size(); ++i)
          if (inputs[i].get() == v.get()) return int32_t(i);
        inputs.push_back(std::move(v));
        return int32_t(inputs.size() - 1);
      };
      for (int32_t j : read_here) value_input[size_t(j)] = -1;
      read_here.clear();
      FusedProgram prog;
      prog.shape = grp.shape;
      prog.reduce_from = grp.reduce_from;
      prog.reduced_shape = grp.reduced_shape;
      prog.reduce_to = grp.reduce_to;
      for (int32_t j : grp.members) {
        Entry& e = entries[size_t(j)];
        FusedProgram::Node node{e.kind, e.attrs, {}, e.out.dtype, bool(reduced[size_t(j)])};
        for (Arg& a : e.args) {
          if (a.node >= 0 && group_of[size_t(a.node)] == g) {
            node.args.push_back(local[size_t(a.node)]);
          } else if (a.node >= 0) {
            int32_t& in = value_input[size_t(a.node)];
            if (in < 0) {  // the group that reads a value last takes it (in-place reuse)
              PrimitivePtr& v = vals[size_t(a.node)];
              in = input_of(last_use[size_t(a.node)] == g ? std::move(v) : v);
              read_here.push_back(a.node);
            }
            node.args.push_back(~in);
          } else {
            node.args.push_back(~input_of(std::move(a.leaf)));
          }
        }
        local[size_t(j)] = int32_t(prog.nodes.size());
        prog.nodes.push_back(std::move(node));
        if (is_out[size_t(j)]) prog.outputs.push_back(local[size_t(j)]);
      }
      for (const auto& in : inputs) prog.inputs.push_back(in->meta());
      std::vector<PrimitivePtr> outs;
      if (prog.nodes.size() == 1) {
        ++stats_.groups_single;
        const auto& node = prog.nodes[0];
        std::vector<PrimitivePtr> args;
        for (int32_t a : node.args) args.push_back(inputs[size_t(~a)]);
        inputs.clear();  // the op holds its inputs alone now (in-place reuse)
        outs = inner_->execute(make_op(node.kind, std::move(args), node.attrs));
      } else {
        ++stats_.groups_fused;
        stats_.ops_fused += int64_t(prog.nodes.size());
        if (log_fusion())
          std::fprintf(stderr, "[ember fusion] %s: %zu ops, kernel %s\n%s", name_.c_str(), prog.nodes.size(),
                       kernels_->kernel_name(prog).c_str(), prog.describe().c_str());
        trace::Scope traced("fused", [&] { return std::pair(kernels_->kernel_name(prog), prog.describe()); });
        outs = kernels_->run(prog, std::move(inputs));
      }
      for (size_t k = 0; k < prog.outputs.size(); ++k) {
        int32_t j = grp.members[size_t(prog.outputs[k])];
        vals[size_t(j)] = outs[k];
        if (handles[size_t(j)]) {
          FusionTensor& t = ft(handles[size_t(j)]);
          t.value = std::move(outs[k]);
          t.queue.reset();
          t.index = -1;
        }
      }
    }
    for (size_t j = 0; j < n; ++j)
      if (handles[j]) ft(handles[j]).queue.reset();  // entries nothing needed are gone too
  }

  std::string name_;
  FusedKernels* kernels_;
  mutable std::mutex mu_;
  std::unordered_map<std::thread::id, std::shared_ptr<Queue>> queues_;
  Stats stats_;
  std::vector<std::weak_ptr<Primitive>> fold_views_;  // the inner views fold_view made
  struct FoldedTranspose {                             // a transposing permute fold_view folded
    std::weak_ptr<Primitive> result, source;           // the folded expression's value; the viewed value
    OpAttrs attrs;                                     // the permute's
  };
  std::vector<FoldedTranspose> folded_transposes_;
};

const FusionBackend* as_fusion(const Backend& b) { return dynamic_cast<const FusionBackend*>(&b); }

}  // namespace

std::shared_ptr<Backend> wrap(std::shared_ptr<Backend> inner) {
  EMBER_CHECK(inner != nullptr, "fusion: no backend to wrap");
  EMBER_CHECK(!is_fusion(*inner), "fusion: ", inner->name(), " already has the fusion decorator");
  return std::make_shared<FusionBackend>(std::move(inner));
}

bool is_fusion(const Backend& b) { return as_fusion(b) != nullptr; }

std::shared_ptr<Backend> inner_of(const Backend& b) {
  const FusionBackend* f = as_fusion(b);
  EMBER_CHECK(f, "fusion: ", b.name(), " has no fusion decorator");
  return f->inner();
}

Stats stats(const Backend& b) {
  const FusionBackend* f = as_fusion(b);
  EMBER_CHECK(f, "fusion::stats: ", b.name(), " has no fusion decorator");
  return f->stats();
}

void flush(const Backend& b) {
  const FusionBackend* f = as_fusion(b);
  EMBER_CHECK(f, "fusion::flush: ", b.name(), " has no fusion decorator");
  const_cast<FusionBackend*>(f)->flush_all_queues();
}

void reset_stats(const Backend& b) {
  const FusionBackend* f = as_fusion(b);
  EMBER_CHECK(f, "fusion::reset_stats: ", b.name(), " has no fusion decorator");
  const_cast<FusionBackend*>(f)->reset_stats();
}

}  // namespace ember::fusion
