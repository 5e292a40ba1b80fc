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

#include "ember/core/backend.hpp"
#include "ember/core/device.hpp"
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
// which must be contiguous: how a graph's inputs change between replays.
void overwrite(const DynTensor& dst, const DynTensor& src);

}  // namespace ember::graph
