// The Gloo process group: collectives on host buffers over Gloo's TCP transport.
//
// Each collective copies its input to the host on the calling thread, then runs on the group's
// one engine thread in the order it was issued (every rank issues the same order, so the Gloo
// tags match), and its result becomes a tensor on the input's device when waited for. One
// engine thread keeps the order identical on every rank without any coordination, and lets the
// caller go on computing (DataParallel's backward) while a bucket is being reduced.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <sstream>
#include <thread>

#include "ember/core/error.hpp"
#include "ember/tensor/ops.hpp"
#include "group_base.hpp"
#include "groups.hpp"
#include "tcp_store.hpp"

namespace ember::distributed::detail {
namespace {

using Ms = std::chrono::milliseconds;

// Element-wise reductions in the element's own type (f16/bf16 through float, rounded once per
// step as NCCL does); bool reduces as a logical or for both sum and max.
template <class T>
void reduce_sum(void* c, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(c);
  auto* x = static_cast<const T*>(a);
  auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>)
      o[i] = x[i] || y[i];
    else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
      o[i] = T(float(x[i]) + float(y[i]));
    else
      o[i] = static_cast<T>(x[i] + y[i]);
  }
}
template <class T>
void reduce_max(void* c, const void* a, const void* b, size_t n) {
  auto* o = static_cast<T*>(c);
  auto* x = static_cast<const T*>(a);
  auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
      o[i] = float(x[i]) >= float(y[i]) ? x[i] : y[i];
    else
      o[i] = x[i] >= y[i] ? x[i] : y[i];
  }
}
template <class T>
void divide(void* p, size_t n, int by) {
  auto* v = static_cast<T*>(p);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>)
      v[i] = T(float(v[i]) / float(by));
    else
      v[i] = static_cast<T>(v[i] / static_cast<T>(by));
  }
}

// Gloo's view of the rendezvous store.
class GlooStore final : public gloo::rendezvous::Store {
 public:
  explicit GlooStore(std::unique_ptr<TcpStoreClient> c) : client_(std::move(c)) {}
  void set(const std::string& key, const std::vector<char>& data) override { client_->set(key, data); }
  std::vector<char> get(const std::string& key) override { return client_->get(key); }
  void wait(const std::vector<std::string>& keys) override { client_->wait(keys, client_->timeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    client_->wait(keys, timeout);
  }

 private:
  std::unique_ptr<TcpStoreClient> client_;
};

class GlooProcessGroup final : public GroupBase {
 public:
  explicit GlooProcessGroup(const ProcessGroupConfig& c);
  ~GlooProcessGroup() override;

  std::string backend() const override { return "gloo"; }
  Work all_reduce(const DynTensor& t, ReduceOp op, CollectiveOptions o) override;
  Work broadcast(const DynTensor& t, int root, CollectiveOptions o) override;
  Work all_gather(const DynTensor& t, CollectiveOptions o) override;
  Work reduce_scatter(const DynTensor& t, ReduceOp op, CollectiveOptions o) override;
  Work barrier(CollectiveOptions o) override;

 private:
  struct Job {
    std::shared_ptr<Work::State> state;
    uint32_t tag;
    std::function<void(uint32_t tag, Ms timeout)> run;  // the engine call, on the engine thread
  };
  Work submit(std::string what, Ms timeout, std::function<void(uint32_t, Ms)> run, std::function<DynTensor()> finish);
  void engine_loop();

  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<gloo::rendezvous::Store> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  uint32_t next_tag_ = 0;
  std::thread engine_;
};

GlooProcessGroup::GlooProcessGroup(const ProcessGroupConfig& c) : GroupBase(c) {
  const std::string who = "init_process_group (" + rank_of(c) + ")";
  gloo::transport::tcp::attr attr;
  if (c.world_size == 1) {
    store_ = std::make_unique<gloo::rendezvous::HashStore>();
    attr.hostname = "127.0.0.1";
  } else {
    Rendezvous r = join_rendezvous(c, who);
    server_ = std::move(r.server);
    // Peers reach this rank through the interface that reaches the master (rank 0: the
    // master's address itself), which is right on one machine and across machines.
    attr.hostname = c.rank == 0 ? c.master_addr : r.client->local_address();
    store_ = std::make_unique<GlooStore>(std::move(r.client));
  }
  try {
    device_ = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(c.rank, c.world_size);
    ctx->setTimeout(c.timeout);
    ctx->connectFullMesh(*store_, device_);
    context_ = std::move(ctx);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    EMBER_FAIL(who, ": connecting to the other ranks failed: ", e.what());
  }
  engine_ = std::thread([this] { engine_loop(); });
}

GlooProcessGroup::~GlooProcessGroup() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  engine_.join();  // a running collective ends by its timeout at the latest
}

Work GlooProcessGroup::submit(std::string what, Ms timeout, std::function<void(uint32_t, Ms)> run,
                              std::function<DynTensor()> finish) {
  auto st = new_state(std::move(what), timeout, std::move(finish));
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Job{st, next_tag_++, std::move(run)});
  }
  cv_.notify_all();
  return Work(st);
}

void GlooProcessGroup::engine_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    if (auto e = broken_error(*job.state)) {
      job.state->complete(e);
      continue;
    }
    auto t0 = Clock::now();
    std::exception_ptr err;
    try {
      job.run(job.tag, job.state->timeout);
    } catch (const Error& e) {
      break_group(e.what());
      err = std::current_exception();
    } catch (const std::exception& e) {
      err = break_group(failure(*job.state, t0,
                                std::string(e.what()) + " (another rank has probably exited, stopped, or issued a "
                                                        "different collective)"));
    }
    comm_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    job.state->complete(err);
  }
}

// A host copy of the tensor that the engine thread works on, and the way back to a tensor.
struct Staged {
  std::shared_ptr<TensorData> data;
  Device device;
  void* ptr() const { return data->bytes().data(); }
  size_t numel() const { return static_cast<size_t>(data->numel()); }
  std::function<DynTensor()> result() const {
    return [d = data, dev = device] { return DynTensor::from_data(*d, dev); };
  }
};
Staged stage(const DynTensor& t) { return {std::make_shared<TensorData>(t.into_data()), t.device()}; }

// The engine call of an all_reduce of `s` in place (avg: sum, then divide by the world size).
std::function<void(uint32_t, Ms)> all_reduce_run(const Staged& s, std::shared_ptr<gloo::Context> ctx, ReduceOp op,
                                                 int world) {
  return [s, ctx, op, world](uint32_t tag, Ms timeout) {
    if (s.numel() == 0) return;
    visit_dtype(s.data->dtype(), [&]<class T>() {
      gloo::AllreduceOptions opts(ctx);
      opts.setOutput<T>(static_cast<T*>(s.ptr()), s.numel());
      opts.setReduceFunction(op == ReduceOp::max ? &reduce_max<T> : &reduce_sum<T>);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      gloo::allreduce(opts);
      if constexpr (!std::is_same_v<T, bool>)
        if (op == ReduceOp::avg) divide<T>(s.ptr(), s.numel(), world);
    });
  };
}

Work GlooProcessGroup::all_reduce(const DynTensor& t, ReduceOp op, CollectiveOptions o) {
  std::string what = checked_reduction("all_reduce", t, op);
  Staged s = stage(t);
  return submit(what, timeout_of(o), all_reduce_run(s, context_, op, size()), s.result());
}

Work GlooProcessGroup::broadcast(const DynTensor& t, int root, CollectiveOptions o) {
  std::string what = checked_broadcast(t, root);
  Staged s = stage(t);
  auto ctx = context_;
  return submit(
      what, timeout_of(o),
      [s, ctx, root](uint32_t tag, Ms timeout) {
        if (s.numel() == 0) return;
        visit_dtype(s.data->dtype(), [&]<class T>() {
          gloo::BroadcastOptions opts(ctx);
          opts.setOutput<T>(static_cast<T*>(s.ptr()), s.numel());
          opts.setRoot(root);
          opts.setTag(tag);
          opts.setTimeout(timeout);
          gloo::broadcast(opts);
        });
      },
      s.result());
}

Work GlooProcessGroup::all_gather(const DynTensor& t, CollectiveOptions o) {
  std::string what = checked("all_gather", t);
  Staged in = stage(t);
  Staged out{std::make_shared<TensorData>(gathered_shape(t), t.dtype()), t.device()};
  auto ctx = context_;
  return submit(
      what, timeout_of(o),
      [in, out, ctx](uint32_t tag, Ms timeout) {
        if (in.numel() == 0) return;
        visit_dtype(in.data->dtype(), [&]<class T>() {
          gloo::AllgatherOptions opts(ctx);
          opts.setInput<T>(static_cast<T*>(in.ptr()), in.numel());
          opts.setOutput<T>(static_cast<T*>(out.ptr()), out.numel());
          opts.setTag(tag);
          opts.setTimeout(timeout);
          gloo::allgather(opts);
        });
      },
      out.result());
}

// Debian's Gloo snapshot (2022) has no reduce_scatter in its options-based API (only the older
// halving-doubling algorithm class, without timeouts or tags), so this is an all_reduce of the
// whole buffer after which each rank keeps its part: twice a true reduce-scatter's traffic,
// the same result. The NCCL group calls ncclReduceScatter.
Work GlooProcessGroup::reduce_scatter(const DynTensor& t, ReduceOp op, CollectiveOptions o) {
  std::string what = checked_reduction("reduce_scatter", t, op);
  Staged s = stage(t);
  int64_t part = t.shape()[0] / size();
  int64_t r = rank();
  return submit(what, timeout_of(o), all_reduce_run(s, context_, op, size()),
                [whole = s.result(), part, r] { return narrow(whole(), 0, r * part, part); });
}

Work GlooProcessGroup::barrier(CollectiveOptions o) {
  auto ctx = context_;
  return submit(
      describe("barrier", nullptr), timeout_of(o),
      [ctx](uint32_t tag, Ms timeout) {
        gloo::BarrierOptions opts(ctx);
        opts.setTag(tag);
        opts.setTimeout(timeout);
        gloo::barrier(opts);
      },
      nullptr);
}

}  // namespace

ProcessGroupPtr make_gloo_group(const ProcessGroupConfig& c) { return std::make_shared<GlooProcessGroup>(c); }

}  // namespace ember::distributed::detail
