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
// writes from the host, random ops, nonzero / masked_select and adam_step (run the optimizer
// after the replay). Devices without graphs (the CPU) throw an Error from capture.
#pragma once

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

class Graph {
 public:
  Graph() = default;
  explicit Graph(std::unique_ptr<CapturedWork> work) : work_(std::move(work)) {}
  // Runs the recorded work again on the same memory (asynchronously, as any op).
  void replay();
  // The recorded kernels and copies (0 for an empty Graph).
  int64_t kernels() const { return work_ ? work_->kernels() : 0; }
  explicit operator bool() const { return work_ != nullptr; }

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
//   Gradients grads;
//   graph::Step step(dev, [&](const DynTensor& x, const DynTensor& y) {
//     grads = nn::cross_entropy(model.forward(x), y).backward();
//   });
//   for (auto& [x, y] : batches) {
//     step(x, y);                                       // eager, captured, then replayed
//     model = opt.step(std::move(model), grads, 1e-3);  // in place: the graph reads the new weights
//   }
//
// Per signature of the inputs (device, shape and dtype of each), the first call runs the function
// eagerly (the warm-up), the second captures it, reading copies of the inputs the Step owns, and
// every later call writes the inputs into those copies and replays. Where a capture is refused
// (a CPU device, a random op, a read: docs/cuda-graphs.md) the function runs eagerly, for good
// for that signature, and refusal() says why; where a replay is refused because a tensor the
// graph reads was freed (a parameter replaced instead of updated in place), the call runs
// eagerly and the next one captures again. What the function writes to outside variables (grads
// above) is the graph's, written again by every replay: use it before the next call. The inputs
// are data, not differentiated; other tensors the function reads (the parameters) are read from
// the same memory at every replay, and host values it uses (a learning rate, a flag) are those
// of the capture. EMBER_GRAPHS=off makes every call eager. Not thread-safe.
struct StepStats {
  int64_t calls = 0;
  int64_t eager = 0;     // calls that ran the function eagerly (warm-ups and refusals included)
  int64_t captures = 0;  // graphs recorded (each runs the function once)
  int64_t replays = 0;
  int64_t graphs = 0;    // graphs held now, one per input signature
  int64_t kernels = 0;   // the kernels and copies of the latest graph captured
};

class Step {
 public:
  using Fn = std::function<void(const std::vector<DynTensor>&)>;
  // `fn` takes the inputs as a vector (any count).
  Step(Device device, Fn fn, int max_graphs = 8);
  // `fn` takes 0 to 8 `const DynTensor&` arguments.
  template <class F>
    requires(!std::is_convertible_v<F, Fn>)
  Step(Device device, F fn, int max_graphs = 8) : Step(std::move(device), adapt(std::move(fn)), max_graphs) {}
  Step(Step&&) noexcept;
  Step& operator=(Step&&) noexcept;
  ~Step();

  template <class... T>
  void operator()(const T&... inputs) {
    call({DynTensor(inputs)...});
  }
  void call(const std::vector<DynTensor>& inputs);

  const StepStats& stats() const { return stats_; }
  // Why the last capture or replay was refused ("" when none was).
  const std::string& refusal() const { return refusal_; }

 private:
  template <class F, size_t... I>
  static Fn bind(F fn, std::index_sequence<I...>) {
    return [fn = std::move(fn)](const std::vector<DynTensor>& v) {
      EMBER_CHECK(v.size() == sizeof...(I), "graph::Step: the function takes ", sizeof...(I), " inputs, called with ",
                  v.size());
      fn(v[I]...);
    };
  }
  template <class F, size_t N = 0>
  static Fn adapt(F fn) {
    if constexpr (invocable_with<F>(std::make_index_sequence<N>{})) return bind(std::move(fn), std::make_index_sequence<N>{});
    else {
      static_assert(N < 8, "graph::Step: the function must take 0 to 8 const DynTensor& arguments");
      if constexpr (N < 8) return adapt<F, N + 1>(std::move(fn));
      else return Fn{};
    }
  }
  template <size_t>
  using TensorArg = const DynTensor&;
  template <class F, size_t... I>
  static constexpr bool invocable_with(std::index_sequence<I...>) {
    return std::is_invocable_v<F&, TensorArg<I>...>;
  }

  struct Entry;
  Device device_;
  Fn fn_;
  int max_graphs_;
  std::vector<std::unique_ptr<Entry>> entries_;
  StepStats stats_;
  std::string refusal_;
};

}  // namespace ember::graph
