// Device: a runtime value naming a backend (plus its decorators). Tensors carry their device.
//
//   Device dev = Device::cpu();          // or Device::cuda(0)
//   dev.seed(42);
//   auto x = DynTensor::zeros({2, 3}, DType::f32, dev);
//   # run
//
// Two Device values are equal when they share one backend object.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/backend.hpp"

namespace ember {

// Gradient checkpointing of the autodiff decorator: `none` keeps every tensor a backward
// rule needs; `balanced` keeps the outputs of compute-bound ops (matmul, conv, attention,
// sort) and recomputes memory-bound ones (elementwise, views, reductions, norms) during
// backward. Gradients are identical; peak memory is lower.
enum class Checkpointing : uint8_t { none, balanced };

namespace router {
struct Route;  // what a router's policy is asked about one op (ember/decorators/router.hpp)
}  // namespace router
// A router's policy: the index of the device an op runs on, or nullopt for the first that supports it.
using RouterPolicy = std::function<std::optional<size_t>(const router::Route&)>;

// How Device::remote connects to an ember-server (the remote decorator, ember/decorators/remote.hpp).
struct RemoteOptions {
  std::string token;  // the server's token (its --token-file); sent once, in the first frame
  // the longest a call waits for the server (connecting, a read, sync) before it raises an Error
  std::chrono::milliseconds timeout{30000};
  size_t batch_bytes = size_t(1) << 20;  // ops are sent when this many bytes are queued (or on a wait)
};

// A handle on a backend stack (cheap to copy: a shared pointer). Equal devices share one backend.
class Device {
 public:
  // The process-wide CPU backend (defined by the tensor layer, which links the backends).
  static Device cpu();
  // The process-wide backend of GPU `index` (defined by the tensor layer, found through the
  // backend registry). Throws an Error that lists the devices when there is no such GPU, or that
  // says how to link the CUDA backend (ember::cuda) when the program doesn't link it.
  static Device cuda(int index = 0);
  // The process-wide Vulkan compute backend of GPU `index`, any vendor's (found through the
  // backend registry, like cuda()). Throws an Error that lists the devices when there is no such
  // GPU, or that says how to link the Vulkan backend (ember::vulkan) when the program doesn't.
  static Device vulkan(int index = 0);
  // Set the default device used when none is given (initially Device::cpu()).
  static Device default_device();
  static void set_default_device(Device d);  // replaces the default device (thread-safe)

  // This device with the autodiff decorator (defined by the tensor layer). Calling it twice
  // with the same strategy gives the same device; on an autodiff device it changes nothing.
  Device autodiff(Checkpointing strategy = Checkpointing::none) const;
  bool is_autodiff() const;  // the top of the stack is the autodiff decorator
  // This device with the fusion decorator (defined by the tensor layer): elementwise ops are
  // queued and run as fused kernels (ember/decorators/fusion.hpp). Calling it twice gives the
  // same device; on a fusion device it changes nothing. Put autodiff on top
  // (`Device::cuda(0).fusion().autodiff()`) so the backward pass fuses too; on an autodiff
  // device it throws an Error saying so.
  Device fusion() const;
  bool is_fusion() const;  // the fusion decorator is in the stack (under autodiff or not)
  // One device over several (the router decorator, ember/decorators/router.hpp): each op runs on
  // the first of `devices` whose backend supports it, or on the one `policy` picks, and its inputs
  // move there as needed. Each call makes a new device. Throws an Error when `devices` is empty or
  // one carries the autodiff decorator (put it on top: `Device::router({...}).autodiff()`).
  static Device router(std::vector<Device> devices, RouterPolicy policy = {});
  bool is_router() const;  // the router decorator is in the stack (under autodiff or not)
  // A device whose ops run on the ember-server at `url` ("ws://host:port"): the remote decorator
  // (ember/decorators/remote.hpp; a program using it links ember::remote). Each call opens a
  // new session; ops stream in batches and only reads and syncs wait. Throws an Error when the
  // server can't be reached within the timeout or refuses the token.
  static Device remote(const std::string& url, const RemoteOptions& options = {});
  // The device under the autodiff decorator (itself when it has none).
  Device inner() const;

  // A device for `backend` (a backend or a decorator stack built by hand); must not be null.
  explicit Device(std::shared_ptr<Backend> backend) : backend_(std::move(backend)) {}

  Backend& backend() const { return *backend_; }  // the top of the backend stack
  const std::shared_ptr<Backend>& backend_ptr() const { return backend_; }  // the same, shared
  std::string name() const { return backend_->name(); }  // the backend's name ("cpu", "cuda:0", ...)
  void seed(uint64_t s) const { backend_->seed(s); }  // reseeds the device's random ops (Backend::seed)
  void sync() const { backend_->sync(); }  // waits for the device's queued work (Backend::sync)
  MemoryStats memory_stats() const { return backend_->memory_stats(); }  // the backend's memory accounting
  void memory_cleanup() const { backend_->memory_cleanup(); }  // frees cached memory (Backend::memory_cleanup)

  bool operator==(const Device& o) const { return backend_ == o.backend_; }  // the same backend object

 private:
  std::shared_ptr<Backend> backend_;
};

}  // namespace ember
