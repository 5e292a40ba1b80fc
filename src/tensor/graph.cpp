// Graphs (include/ember/tensor/graph.hpp): the tensor layer's side of Backend::capture.
#include "ember/tensor/graph.hpp"

#include <algorithm>
#include <cstdlib>

#include "ember/core/error.hpp"

namespace ember::graph {

void Graph::replay() {
  EMBER_CHECK(work_ != nullptr, "graph replay: the graph is empty (make it with graph::capture)");
  work_->replay();
}

Graph capture(const Device& device, const std::function<void()>& region) {
  EMBER_CHECK(region != nullptr, "graph capture: no region");
  std::unique_ptr<CapturedWork> w = device.backend().capture(region);
  EMBER_CHECK(w != nullptr, "graph capture: ", device.name(), " cannot record graphs (CUDA devices can)");
  return Graph(std::move(w));
}

void overwrite(const DynTensor& dst, const DynTensor& src) {
  EMBER_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype(), "graph overwrite: ", src.dtype(), " ",
              src.shape(), " into ", dst.dtype(), " ", dst.shape());
  Backend& b = dst.device().backend();
  const bool done = src.device() == dst.device() ? b.copy_into(dst.primitive(), src.primitive())
                                                  : b.overwrite(dst.primitive(), src.into_data());
  EMBER_CHECK(done, "graph overwrite: ", dst.device().name(), " cannot write into a tensor in place");
}

namespace {

bool graphs_off() {
  static const bool off = [] {
    const char* e = std::getenv("EMBER_GRAPHS");
    return e && (std::string(e) == "off" || std::string(e) == "0");
  }();
  return off;
}

// What a Step's graph is specialised on, per input.
struct InputSig {
  Device device;
  DType dtype;
  Shape shape;
};

bool same_signature(const std::vector<InputSig>& sig, const std::vector<DynTensor>& inputs) {
  if (sig.size() != inputs.size()) return false;
  for (size_t i = 0; i < sig.size(); ++i)
    if (!(sig[i].device == inputs[i].device()) || sig[i].dtype != inputs[i].dtype() || sig[i].shape != inputs[i].shape())
      return false;
  return true;
}

}  // namespace

// One input signature's state: warmed up (the function ran once), captured (the graph, the
// copies of the inputs it reads and the function's result at the capture) or eager for good.
struct StepBase::Entry {
  std::vector<InputSig> signature;
  bool warm = false;
  bool eager_only = false;
  int invalidated = 0;  // replays refused because a tensor the graph read was freed
  Graph graph;
  std::vector<DynTensor> inputs;  // the copies the graph reads
  std::any result;                // what the function returned at the capture
};

StepBase::StepBase(Device device, Fn fn, bool returns, int max_graphs)
    : device_(std::move(device)), fn_(std::move(fn)), returns_(returns), max_graphs_(max_graphs) {
  EMBER_CHECK(fn_ != nullptr, "graph::Step: no function");
}
StepBase::StepBase(StepBase&&) noexcept = default;
StepBase& StepBase::operator=(StepBase&&) noexcept = default;
StepBase::~StepBase() = default;

std::any StepBase::call_any(const std::vector<DynTensor>& inputs) {
  ++stats_.calls;
  auto eager = [&] {
    ++stats_.eager;
    last_ = nullptr;
    return fn_(inputs);
  };
  if (graphs_off()) return eager();
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& e) { return same_signature(e->signature, inputs); });
  if (it == entries_.end()) {
    entries_.push_back(std::make_unique<Entry>());
    for (const DynTensor& x : inputs) entries_.back()->signature.push_back({x.device(), x.dtype(), x.shape()});
    it = entries_.end() - 1;
  }
  Entry& e = **it;
  if (e.eager_only) return eager();
  auto drop_graph = [&] {
    e.graph = Graph();
    e.inputs.clear();
    e.result.reset();
    --stats_.graphs;
  };
  // A function that writes its results to outside variables: since another call assigned them,
  // only a capture (which runs the function) makes them this graph's again.
  if (e.graph && !returns_ && last_ != &e) drop_graph();
  if (e.graph) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].primitive() != e.inputs[i].primitive()) overwrite(e.inputs[i], inputs[i]);
    try {
      e.graph.replay();
      ++stats_.replays;
      last_ = &e;
      return e.result;
    } catch (const Error& err) {  // refused before launching: a tensor it reads was freed
      refusal_ = err.what();
      drop_graph();
      if (++e.invalidated >= 3) e.eager_only = true;  // the function's tensors keep being replaced
      return eager();                                  // and the next call captures again
    }
  }
  if (!e.warm) {
    e.warm = true;
    return eager();
  }
  if (stats_.graphs >= max_graphs_) {
    refusal_ = "graph::Step: " + std::to_string(max_graphs_) + " graphs held already (one per input signature)";
    e.eager_only = true;
    return eager();
  }
  std::vector<DynTensor> copies;
  try {
    for (const DynTensor& x : inputs) {
      DynTensor c = DynTensor::empty(x.shape(), x.dtype(), device_);
      overwrite(c, x);
      copies.push_back(std::move(c));
    }
  } catch (const Error& err) {  // no in-place writes: no graphs either (the CPU)
    refusal_ = "graph::Step: " + device_.name() + " cannot record graphs (" + err.what() + ")";
    e.eager_only = true;
    return eager();
  }
  std::any result;
  try {
    e.graph = capture(device_, [&] { result = fn_(copies); });
  } catch (const Error& err) {  // refused, and nothing ran: eager from now on
    refusal_ = err.what();
    e.eager_only = true;
    return eager();
  }
  e.inputs = std::move(copies);
  e.result = result;
  ++stats_.captures;
  stats_.kernels = e.graph.kernels();
  ++stats_.graphs;
  last_ = &e;
  return result;
}

}  // namespace ember::graph
