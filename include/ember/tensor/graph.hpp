// Graphs: a region of device work recorded once and replayed with one launch (CUDA graphs, the
// counterpart of torch.cuda.CUDAGraph). For a loop that launches the same kernels on the same
// shapes every step, a replay costs one launch instead of one per kernel (docs/cuda-graphs.md).
//
//   # Device dev = given<Device>();   // Device::cuda(0).fusion().autodiff() in a training loop
//   auto x = DynTensor::normal({64, 32}, 0, 1, DType::f32, dev);   // inputs made before the region
//   auto w = DynTensor::normal({32, 8}, 0, 1, DType::f32, dev);
//   DynTensor y;
//   auto region = [&] { y = relu(matmul(x, w)) * 0.5; };
//   region();                                        // warm up: kernels compile, autotuning settles
//   graph::Graph g = graph::capture(dev, region);    // records the region and runs it once
//   graph::overwrite(x, DynTensor::normal({64, 32}, 0, 1, DType::f32, Device::cpu()));
//   g.replay();                                      // y holds relu(x @ w) * 0.5 of the new x
//
// The region's tensors (y above, a backward pass's gradients) keep their memory for the graph's
// life, and every replay writes them again. What the region reads from outside it (x, w,
// parameters) must stay alive and change only in place: with graph::overwrite, or as an
// optimizer updates parameters whose tensors nothing else holds; a replay after such a tensor
// was freed throws. Refused inside a region, with an Error naming the call: reads and syncs,
// writes from the host, random ops, nonzero / masked_select and a non-capturable optimizer's
// adam_step (make it capturable, optim/optimizer.hpp, or run it after the replay). Devices without
// graphs (the CPU) throw an Error from capture.
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/core/backend.hpp"
#include "ember/core/device.hpp"
#include "ember/core/error.hpp"
#include "ember/tensor/dyn_tensor.hpp"

namespace ember::graph {

// Recorded device work that replays with one launch (torch.cuda.CUDAGraph); capture() makes one. Move-only.
class Graph {
 public:
  Graph() = default;
  // Wraps work a backend recorded.
  explicit Graph(std::unique_ptr<CapturedWork> work) : work_(std::move(work)) {}
  // Runs the recorded work again on the same memory (asynchronously, as any op).
  void replay();
  // The recorded kernels and copies (0 for an empty Graph).
  int64_t kernels() const { return work_ ? work_->kernels() : 0; }
  explicit operator bool() const { return work_ != nullptr; }  // false for an empty Graph

 private:
  std::unique_ptr<CapturedWork> work_;
};

// Runs `region` once on `device` (its decorators included: the fusion decorator's queue is
// flushed before and after), recording the device work it launches.
Graph capture(const Device& device, const std::function<void()>& region);

// Writes the values of `src` (any device; the same shape and dtype) into the memory of `dst`,
// which must be contiguous: how a graph's inputs change between replays. From a tensor of
// dst's device the copy stays on the device.
void overwrite(const DynTensor& dst, const DynTensor& src);

// Step: a function whose device work is captured and replayed automatically, the counterpart of
// torch.compile's mode="reduce-overhead" (and of torch.cuda.make_graphed_callables):
//
//   # Model model = given<Model>(); optim::Adam opt = optim::AdamConfig{}.init();
//   # Device dev = given<Device>(); auto batches = given<std::vector<TensorPair>>();
//   graph::Step step(dev, [&](const DynTensor& x, const DynTensor& y) {
//     DynTensor loss = nn::cross_entropy(model.forward(x), y);
//     return std::pair{loss.detach(), loss.backward()};
//   });
//   for (auto& [x, y] : batches) {
//     auto [loss, grads] = step(x, y);                  // eager, captured, then replayed
//     model = opt.step(std::move(model), grads, 1e-3);  // in place: the graph reads the new weights
//   }
//
// Per signature of the inputs (device, shape and dtype of each), the first call runs the function
// eagerly (the warm-up), the second captures it, reading copies of the inputs the Step owns, and
// every later call writes the inputs into those copies and replays. Where a capture is refused
// (a CPU device, a random op, a read: docs/cuda-graphs.md) the function runs eagerly, for good
// for that signature, and refusal() says why; where a replay is refused because a tensor the
// graph reads was freed (a parameter replaced instead of updated in place), the call runs
// eagerly and the next one captures again. EMBER_GRAPHS=off makes every call eager. Not
// thread-safe.
//
// Results. A call returns what the function returned: its own tensors when the call ran eagerly,
// the ones of the capture (which the replay has just rewritten) when it replayed, so a replayed
// result is valid until the next call of the same signature. The result may be any copyable value
// holding tensors: a DynTensor, a vector, a pair with Gradients. A function that returns nothing
// and writes its results to outside variables works too, but a replay cannot write those
// variables again: after a call of another signature (whose run assigned them), its graph is
// captured again instead of replayed. The inputs are data, not differentiated; other tensors the
// function reads (the parameters) are read from the same memory at every replay, and host values
// it uses (a learning rate, a flag) are those of the capture.
// What Step::stats() returns: counts since the Step was made.
struct StepStats {
  int64_t calls = 0;  // calls of the Step
  int64_t eager = 0;     // calls that ran the function eagerly (warm-ups and refusals included)
  int64_t captures = 0;  // graphs recorded (each runs the function once)
  int64_t replays = 0;  // calls answered by a replay
  int64_t graphs = 0;    // graphs held now, one per input signature
  int64_t kernels = 0;   // the kernels and copies of the latest graph captured
};

// The untyped machinery of Step<R>: results travel as std::any.
class StepBase {
 public:
  using Fn = std::function<std::any(const std::vector<DynTensor>&)>;  // the function, its inputs as one vector
  // `returns`: the function returns its results (else it writes them to outside variables).
  StepBase(Device device, Fn fn, bool returns, int max_graphs);
  StepBase(StepBase&&) noexcept;  // takes over the other's graphs
  StepBase& operator=(StepBase&&) noexcept;  // takes over the other's graphs
  ~StepBase();

  const StepStats& stats() const { return stats_; }  // counts of calls, captures, replays, ...
  // Why the last capture or replay was refused ("" when none was).
  const std::string& refusal() const { return refusal_; }

 protected:
  // One call (eager, captured or replayed, as described above); returns the function's result.
  std::any call_any(const std::vector<DynTensor>& inputs);

  // The function's results as std::any (empty for a function that returns nothing).
  template <class F, class... A>
  static std::any invoke_into_any(F& fn, const A&... args) {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const A&...>>) {
      fn(args...);
      return {};
    } else {
      return fn(args...);
    }
  }
  // `fn`, which takes sizeof...(I) tensors, as an Fn that checks the number of inputs it gets.
  template <class F, size_t... I>
  static Fn bind(F fn, std::index_sequence<I...>) {
    return [fn = std::move(fn)](const std::vector<DynTensor>& v) mutable -> std::any {
      EMBER_CHECK(v.size() == sizeof...(I), "graph::Step: the function takes ", sizeof...(I), " inputs, called with ",
                  v.size());
      return invoke_into_any(fn, v[I]...);
    };
  }

 private:
  struct Entry;
  Device device_;
  Fn fn_;
  bool returns_;
  int max_graphs_;
  std::vector<std::unique_ptr<Entry>> entries_;
  const Entry* last_ = nullptr;  // the entry whose graph ran the previous call (null: it ran eagerly)
  StepStats stats_;
  std::string refusal_;
};

namespace detail {
template <size_t>
using StepArg = const DynTensor&;
template <class F, size_t... I>
constexpr bool step_invocable(std::index_sequence<I...>) {
  return std::is_invocable_v<F&, StepArg<I>...>;
}
// How many const DynTensor& the function takes (0 to 8), or 9 for one std::vector<DynTensor>.
template <class F, size_t N = 0>
constexpr size_t step_arity() {
  if constexpr (std::is_invocable_v<F&, const std::vector<DynTensor>&> && !std::is_invocable_v<F&>) return 9;
  else if constexpr (step_invocable<F>(std::make_index_sequence<N>{})) return N;
  else {
    static_assert(N < 8, "graph::Step: the function must take 0 to 8 const DynTensor& arguments or a vector of them");
    if constexpr (N < 8) return step_arity<F, N + 1>();
    else return 0;
  }
}
template <class F, size_t... I>
constexpr auto step_result_of(std::index_sequence<I...>) {
  return std::type_identity<std::invoke_result_t<F&, StepArg<I>...>>{};
}
template <class F>
constexpr auto step_result_of() {
  if constexpr (step_arity<F>() == 9) return std::type_identity<std::invoke_result_t<F&, const std::vector<DynTensor>&>>{};
  else return step_result_of<F>(std::make_index_sequence<step_arity<F>()>{});
}
// What the function returns (void included).
template <class F>
using step_result_t = typename decltype(step_result_of<F>())::type;
}  // namespace detail

// A function whose device work is captured and replayed automatically (see above); R, what the function
// returns, is deduced from it.
template <class R>
class Step : public StepBase {
 public:
  // `fn` takes 0 to 8 `const DynTensor&` arguments, or the inputs as one std::vector<DynTensor>.
  template <class F>
  Step(Device device, F fn, int max_graphs = 8)
      : StepBase(std::move(device), erase(std::move(fn)), !std::is_void_v<R>, max_graphs) {}

  // Calls the function with `inputs`, each converted to DynTensor: eagerly, capturing or replaying.
  template <class... T>
  R operator()(const T&... inputs) {
    return call(std::vector<DynTensor>{DynTensor(inputs)...});
  }
  // The same with the inputs as one vector.
  R call(const std::vector<DynTensor>& inputs) {
    if constexpr (std::is_void_v<R>) call_any(inputs);
    else return std::any_cast<R>(call_any(inputs));
  }

 private:
  template <class F>
  static Fn erase(F fn) {
    constexpr size_t n = detail::step_arity<F>();
    if constexpr (n == 9) {
      return [fn = std::move(fn)](const std::vector<DynTensor>& v) mutable -> std::any { return invoke_into_any(fn, v); };
    } else {
      return bind(std::move(fn), std::make_index_sequence<n>{});
    }
  }
};
// R is the function's result type.
template <class F>
Step(Device, F) -> Step<detail::step_result_t<F>>;
// The same with max_graphs.
template <class F>
Step(Device, F, int) -> Step<detail::step_result_t<F>>;

}  // namespace ember::graph
