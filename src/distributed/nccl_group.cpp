// The NCCL process group: collectives on cuda tensors, on the GPU, enqueued on the CUDA
// backend's own stream.
//
// A collective takes its operands' device memory through the backend's CUDA services
// (Backend::cuda_memory, cuda_stream; autodiff values unwrapped, a fusion value through
// memory_view, which waits; a cpu tensor is staged through the group's GPU), enqueues the NCCL call on the backend's
// stream, so that it runs after the kernels that computed its input and before the ones that read its output, and
// records a CUDA event behind it. NCCL has no timeouts of its own: the watchdog thread polls
// the events, completes each Work when its event is reached, and when a collective passes its
// timeout (or NCCL reports an asynchronous error) aborts the communicator (ncclCommAbort) and
// fails every outstanding Work with an ember::Error naming the collective, the rank and the
// timeout. After that the group is broken, as the Gloo group is after a failure.
//
// NCCL's unique id is made by rank 0 and handed to the others through the rendezvous store.
// Each rank runs on CUDA device LOCAL_RANK (torchrun's convention).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <thread>

#include "ember/core/error.hpp"
#include "ember/decorators/autodiff.hpp"
#include "group_base.hpp"
#include "groups.hpp"
#include "tcp_store.hpp"

namespace ember::distributed::detail {
namespace {

// NCCL's element type for reductions; nullopt for dtypes it has none for (i16). bool reduces as
// u8 under max, a logical or for both sum and max (as in the Gloo group).
std::optional<ncclDataType_t> nccl_type(DType dt) {
  switch (dt) {
    case DType::f64:
      return ncclFloat64;
    case DType::f32:
      return ncclFloat32;
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i64:
      return ncclInt64;
    case DType::i32:
      return ncclInt32;
    case DType::i8:
      return ncclInt8;
    case DType::u8:
    case DType::boolean:
      return ncclUint8;
    case DType::i16:
      return std::nullopt;
  }
  return std::nullopt;
}

// A world of one averages by summing (the value itself): ncclAvg on a one-rank communicator
// left every element from 2^18 on unwritten (H100, the NCCL of PyTorch 2.11's wheels,
// 2026-12-07; NcclSolo caught it).
ncclRedOp_t nccl_op(ReduceOp op, DType dt, int world) {
  if (dt == DType::boolean) return ncclMax;
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::avg:
      return world == 1 ? ncclSum : ncclAvg;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

void check_cuda(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) (void)cudaGetLastError();
  EMBER_CHECK(e == cudaSuccess, what, ": CUDA error: ", cudaGetErrorString(e));
}

// Makes `device` current on this thread for the scope, and restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) check_cuda(cudaSetDevice(device), "NCCL group: cudaSetDevice");
  }
  ~DeviceScope() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

// An operand's device memory, kept alive until its collective finished.
struct Operand {
  void* ptr = nullptr;
  std::shared_ptr<const void> owner;
};

class NcclProcessGroup final : public GroupBase {
 public:
  explicit NcclProcessGroup(const ProcessGroupConfig& c);
  ~NcclProcessGroup() override;

  std::string backend() const override { return "nccl"; }
  Work all_reduce(const DynTensor& t, ReduceOp op, CollectiveOptions o) override;
  Work broadcast(const DynTensor& t, int root, CollectiveOptions o) override;
  Work all_gather(const DynTensor& t, CollectiveOptions o) override;
  Work reduce_scatter(const DynTensor& t, ReduceOp op, CollectiveOptions o) override;
  Work barrier(CollectiveOptions o) override;

 private:
  struct Pending {
    std::shared_ptr<Work::State> state;
    cudaEvent_t event = nullptr;  // null while the NCCL call is being made
    Clock::time_point start, deadline;
    std::vector<std::shared_ptr<const void>> keep;  // the operands' memory
  };
  // A collective's operands: the input's memory, and a new result tensor for NCCL to write.
  struct Buffers {
    Operand in, out;
    std::function<DynTensor()> finish;  // the result, on the input's device
  };
  // The buffers of a collective on `t` whose result has shape `result`. A tensor on another
  // device than a CUDA one (the cpu tensors DataParallel and ZeroOptimizer exchange metadata
  // in) is staged through this group's GPU, and its result comes back to that device.
  Buffers buffers(const std::string& what, const DynTensor& t, const Shape& result) const;
  // The memory of `t` (a cuda tensor on this group's device), contiguous.
  Operand memory_of(const std::string& what, const DynTensor& t) const;
  // The element type of a reduction of `t`; an Error for dtypes NCCL cannot reduce.
  ncclDataType_t reduction_type(const std::string& what, DType dt) const;
  // Enqueues `call` (the NCCL call on the stream) for the Work `st`, and an event behind it.
  Work launch(std::shared_ptr<Work::State> st, std::vector<std::shared_ptr<const void>> keep,
              const std::function<ncclResult_t(cudaStream_t)>& call);
  void watchdog_loop();
  // Aborts the communicator and fails every pending Work: `culprit` with `message`, the others
  // as aborted with it (mu_ held).
  void abort_all(const Pending& culprit, const std::string& message);

  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  Rendezvous rendezvous_;  // rank 0 serves the store for the group's life
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;

  std::mutex issue_mu_;  // one NCCL call at a time: the issue order is the order on every rank
  std::mutex mu_;        // pending_, stopping_, aborted_, last_end_
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Pending>> pending_;
  bool stopping_ = false;
  bool calling_ = false;  // launch is inside an NCCL call
  Clock::time_point last_end_{};
  std::thread watchdog_;
};

std::string nccl_error(ncclResult_t r) {
  std::string s = ncclGetErrorString(r);
  const char* last = ncclGetLastError(nullptr);  // this thread's last error; the comm argument is unused
  if (last && *last) s += std::string(" (") + last + ")";
  return s;
}

NcclProcessGroup::NcclProcessGroup(const ProcessGroupConfig& c) : GroupBase(c) {
  const std::string who = "init_process_group (" + rank_of(c) + ", nccl)";
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) (void)cudaGetLastError();
  EMBER_CHECK(e == cudaSuccess && count > 0, who, ": the nccl backend needs a CUDA device, and this machine has none (",
              e == cudaSuccess ? "no device" : cudaGetErrorString(e), "); use \"gloo\"");
  EMBER_CHECK(c.local_rank < count, who, ": LOCAL_RANK=", c.local_rank, " picks CUDA device ", c.local_rank,
              ", but this machine has ", count, " (one rank per GPU)");
  device_ = c.local_rank;
  stream_ = static_cast<cudaStream_t>(Device::cuda(device_).backend().cuda_stream());
  EMBER_CHECK(stream_ != nullptr, who, ": the CUDA backend of cuda:", device_, " gave no stream");

  ncclUniqueId id{};
  if (c.world_size > 1) rendezvous_ = join_rendezvous(c, who);
  if (c.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    EMBER_CHECK(r == ncclSuccess, who, ": ncclGetUniqueId failed: ", ncclGetErrorString(r));
    if (rendezvous_.client)
      rendezvous_.client->set("ember/nccl/id", std::vector<char>(id.internal, id.internal + sizeof id));
  } else {
    std::vector<char> v = rendezvous_.client->get("ember/nccl/id");
    EMBER_CHECK(v.size() == sizeof id, who, ": the NCCL id from rank 0 has ", v.size(), " bytes, expected ", sizeof id,
                " (ranks built against different NCCL versions?)");
    std::copy(v.begin(), v.end(), id.internal);
  }
  {
    // Every rank joined the rendezvous just before: ncclCommInitRank (which has no timeout)
    // waits only for ranks that are already starting it.
    DeviceScope scope(device_);
    ncclResult_t r = ncclCommInitRank(&comm_, c.world_size, id, c.rank);
    EMBER_CHECK(r == ncclSuccess, who, ": ncclCommInitRank on cuda:", device_, " failed: ", ncclGetErrorString(r));
  }
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

NcclProcessGroup::~NcclProcessGroup() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  watchdog_.join();  // the pending collectives end, or are aborted at their timeout
  if (comm_ && !aborted_) {
    DeviceScope scope(device_);
    (void)ncclCommDestroy(comm_);
  }
}

Operand NcclProcessGroup::memory_of(const std::string& what, const DynTensor& t) const {
  const Device& d = t.device();
  Backend& base = d.inner().backend();
  PrimitivePtr v = autodiff::inner_value(t.primitive());
  std::optional<MemoryView> m = base.cuda_memory(v);
  // A value the backend does not know as its own (the fusion decorator's): memory_view runs
  // its queue and waits for the device, after which any stream sees the values.
  if (!m) m = base.memory_view(v);
  EMBER_CHECK(m && m->cuda_device >= 0, what, ": the backend of ", d.name(), " gives no CUDA memory for the tensor");
  EMBER_CHECK(m->cuda_device == device_, what, ": the tensor is on cuda:", m->cuda_device,
              ", but this rank's NCCL group runs on cuda:", device_, " (LOCAL_RANK picks the device)");
  return Operand{m->data, m->owner};
}

NcclProcessGroup::Buffers NcclProcessGroup::buffers(const std::string& what, const DynTensor& t,
                                                    const Shape& result) const {
  const Device home = t.device();
  const bool on_cuda = home.backend().cuda_stream() != nullptr;
  const DynTensor src = on_cuda ? t : t.to(Device::cuda(device_));
  // The new tensor is this collective's alone until its Work hands it out: NCCL writes into it
  // as the CUDA graphs' inputs are written (Backend::overwrite).
  DynTensor out = DynTensor::empty(result, t.dtype(), src.device().inner());
  return Buffers{memory_of(what, src), memory_of(what, out), [out, home] { return out.to(home); }};
}

ncclDataType_t NcclProcessGroup::reduction_type(const std::string& what, DType dt) const {
  std::optional<ncclDataType_t> ty = nccl_type(dt);
  EMBER_CHECK(ty, what, ": NCCL has no ", dt,
              " reductions (it reduces f64, f32, f16, bf16, i64, i32, i8, u8 and bool); cast the tensor, or use a "
              "\"gloo\" group");
  return *ty;
}

Work NcclProcessGroup::launch(std::shared_ptr<Work::State> st, std::vector<std::shared_ptr<const void>> keep,
                              const std::function<ncclResult_t(cudaStream_t)>& call) {
  std::lock_guard<std::mutex> issue(issue_mu_);
  auto p = std::make_shared<Pending>();
  p->state = st;
  p->keep = std::move(keep);
  p->start = Clock::now();
  p->deadline = p->start + st->timeout;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto e = broken_error(*st)) {
      st->complete(e);
      return Work(st);
    }
    // registered before the call: a call that blocks (a peer gone while NCCL connects) is
    // aborted by the watchdog at its deadline too
    pending_.push_back(p);
    calling_ = true;
  }
  cv_.notify_all();
  DeviceScope scope(device_);
  ncclResult_t r = call(stream_);
  cudaEvent_t ev = nullptr;
  std::string cause;
  if (r != ncclSuccess) {
    cause = "NCCL refused it: " + nccl_error(r);
  } else {
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventRecord(ev, stream_);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      cause = std::string("recording its CUDA event failed: ") + cudaGetErrorString(e);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  calling_ = false;
  if (!cause.empty()) {
    if (ev) (void)cudaEventDestroy(ev);
    if (!aborted_) abort_all(*p, failure(*st, p->start, cause));
  } else if (Work(st).completed()) {
    (void)cudaEventDestroy(ev);  // aborted by the watchdog while the call was being made
  } else {
    p->event = ev;
  }
  cv_.notify_all();
  return Work(st);
}

void NcclProcessGroup::abort_all(const Pending& culprit, const std::string& message) {
  std::exception_ptr err = break_group(message);
  if (comm_ && !aborted_) {
    aborted_ = true;
    (void)ncclCommAbort(comm_);  // ends the kernels that wait for peers
  }
  for (auto& p : pending_) {
    if (p->event) (void)cudaEventDestroy(p->event);
    p->state->complete(p.get() == &culprit ? err
                                           : std::make_exception_ptr(Error(
                                                 p->state->what + ": aborted with the communicator: " + message)));
  }
  pending_.clear();
}

void NcclProcessGroup::watchdog_loop() {
  (void)cudaSetDevice(device_);  // the events' device, for the queries
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (pending_.empty()) {
      if (stopping_) return;
      cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      continue;
    }
    // Completions, in issue order (the stream runs them in that order).
    while (!pending_.empty() && pending_.front()->event) {
      Pending& p = *pending_.front();
      cudaError_t q = cudaEventQuery(p.event);
      if (q == cudaErrorNotReady) break;
      if (q != cudaSuccess) {
        (void)cudaGetLastError();
        abort_all(p, failure(*p.state, p.start, std::string("the device failed: ") + cudaGetErrorString(q)));
        break;
      }
      auto now = Clock::now();
      // the time inside collectives, overlapping ones counted once
      auto from = std::max(p.start, last_end_);
      if (now > from) comm_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(now - from).count();
      last_end_ = now;
      (void)cudaEventDestroy(p.event);
      p.state->complete();
      pending_.pop_front();
    }
    if (pending_.empty()) continue;
    ncclResult_t async = ncclSuccess;
    if (!aborted_ && ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
      const Pending& p = *pending_.front();
      abort_all(
          p, failure(*p.state, p.start,
                     "NCCL reported an error: " + nccl_error(async) + " (another rank has probably exited or failed)"));
      continue;
    }
    auto now = Clock::now();
    for (const auto& p : pending_) {
      if (now < p->deadline) continue;
      // An NCCL call in progress uses the communicator: abort it only when that call itself is
      // stuck (its own deadline passed); otherwise after it returned, a moment later.
      if (calling_ && p->event) break;
      abort_all(*p, p->state->what + ": timed out after " +
                        std::to_string(std::chrono::duration_cast<Ms>(now - p->start).count()) + " ms (timeout " +
                        std::to_string(p->state->timeout.count()) +
                        " ms); the watchdog aborted the NCCL communicator (another rank has probably exited, "
                        "stopped, or issued a different collective)");
      break;
    }
    cv_.wait_for(lock, std::chrono::microseconds(200));
  }
}

Work NcclProcessGroup::all_reduce(const DynTensor& t, ReduceOp op, CollectiveOptions o) {
  std::string what = checked_reduction("all_reduce", t, op);
  ncclDataType_t ty = reduction_type(what, t.dtype());
  auto st = new_state(what, timeout_of(o), nullptr);
  Buffers b = buffers(what, t, t.shape());
  st->finish = b.finish;
  const size_t n = size_t(t.numel());
  ncclRedOp_t rop = nccl_op(op, t.dtype(), size());
  return launch(st, {b.in.owner, b.out.owner}, [&](cudaStream_t s) {
    return n ? ncclAllReduce(b.in.ptr, b.out.ptr, n, ty, rop, comm_, s) : ncclSuccess;
  });
}

// broadcast and all_gather move bytes, so they take every dtype.
Work NcclProcessGroup::broadcast(const DynTensor& t, int root, CollectiveOptions o) {
  std::string what = checked_broadcast(t, root);
  auto st = new_state(what, timeout_of(o), nullptr);
  Buffers b = buffers(what, t, t.shape());
  st->finish = b.finish;
  const size_t bytes = size_t(t.numel()) * dtype_size(t.dtype());
  return launch(st, {b.in.owner, b.out.owner}, [&](cudaStream_t s) {
    return bytes ? ncclBroadcast(b.in.ptr, b.out.ptr, bytes, ncclUint8, root, comm_, s) : ncclSuccess;
  });
}

Work NcclProcessGroup::all_gather(const DynTensor& t, CollectiveOptions o) {
  std::string what = checked("all_gather", t);
  auto st = new_state(what, timeout_of(o), nullptr);
  Buffers b = buffers(what, t, gathered_shape(t));
  st->finish = b.finish;
  const size_t bytes = size_t(t.numel()) * dtype_size(t.dtype());
  return launch(st, {b.in.owner, b.out.owner}, [&](cudaStream_t s) {
    return bytes ? ncclAllGather(b.in.ptr, b.out.ptr, bytes, ncclUint8, comm_, s) : ncclSuccess;
  });
}

Work NcclProcessGroup::reduce_scatter(const DynTensor& t, ReduceOp op, CollectiveOptions o) {
  std::string what = checked_reduction("reduce_scatter", t, op);
  ncclDataType_t ty = reduction_type(what, t.dtype());
  auto st = new_state(what, timeout_of(o), nullptr);
  std::vector<int64_t> dims = t.shape().dims();
  dims[0] /= size();
  Buffers b = buffers(what, t, Shape(dims));
  st->finish = b.finish;
  const size_t n = size_t(t.numel() / size());
  ncclRedOp_t rop = nccl_op(op, t.dtype(), size());
  return launch(st, {b.in.owner, b.out.owner}, [&](cudaStream_t s) {
    return n ? ncclReduceScatter(b.in.ptr, b.out.ptr, n, ty, rop, comm_, s) : ncclSuccess;
  });
}

// NCCL has no barrier: a one-element all-reduce, which no rank finishes before all started it.
Work NcclProcessGroup::barrier(CollectiveOptions o) {
  std::string what = describe("barrier", nullptr);
  auto st = new_state(what, timeout_of(o), nullptr);
  Buffers b = buffers(what, DynTensor::zeros({1}, DType::f32, Device::cuda(device_)), Shape({1}));
  return launch(st, {b.in.owner, b.out.owner},
                [&](cudaStream_t s) { return ncclAllReduce(b.in.ptr, b.out.ptr, 1, ncclFloat32, ncclSum, comm_, s); });
}

}  // namespace

bool nccl_usable(int local_rank) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e == cudaSuccess && local_rank < count;
}

ProcessGroupPtr make_nccl_group(const ProcessGroupConfig& c) { return std::make_shared<NcclProcessGroup>(c); }

}  // namespace ember::distributed::detail
