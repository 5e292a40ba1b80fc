// The tensor-layer half of user-defined ops: a definition written with DynTensors becomes the
// IR's CustomOpImpl (ember/core/custom_op.hpp).
#include "ember/tensor/custom_op.hpp"

#include "dispatch.hpp"
#include "ember/core/error.hpp"
#include "ember/core/hash.hpp"

namespace ember {

namespace {

// The Device of a backend that a backward runs on (an autodiff's inner backend, or the autodiff
// backend itself under create_graph): it does not own the backend, which outlives the call.
Device device_of(Backend& be) { return Device(std::shared_ptr<Backend>(std::shared_ptr<Backend>{}, &be)); }

}  // namespace

CustomOp::CustomOp(Def def) {
  EMBER_CHECK(!def.name.empty(), "CustomOp: the definition needs a name");
  EMBER_CHECK(def.infer != nullptr, "CustomOp ", def.name, ": the definition needs infer (the outputs' shapes and dtypes)");
  EMBER_CHECK(def.cpu != nullptr || !def.cuda_source.empty(), "CustomOp ", def.name, ": the definition has no kernel");
  EMBER_CHECK(def.cuda_source.empty() == def.cuda_entry.empty(), "CustomOp ", def.name,
              ": cuda_source and cuda_entry go together");
  auto impl = std::make_shared<CustomOpImpl>();
  impl->name = std::move(def.name);
  impl->infer = std::move(def.infer);
  impl->cpu = std::move(def.cpu);
  impl->cuda_source = std::move(def.cuda_source);
  impl->cuda_entry = std::move(def.cuda_entry);
  if (!impl->cuda_source.empty())
    impl->cuda_key = "custom/" + impl->name + "/" + std::to_string(fnv1a(impl->cuda_source));
  if (def.backward) {
    impl->backward = [bw = std::move(def.backward), name = impl->name](
                         Backend& be, const std::vector<PrimitivePtr>& in, const std::vector<PrimitivePtr>& out,
                         const std::vector<PrimitivePtr>& g) {
      const Device dev = device_of(be);
      auto wrap = [&](const std::vector<PrimitivePtr>& ps) {
        std::vector<DynTensor> ts;
        for (const PrimitivePtr& p : ps) ts.push_back(p ? DynTensor(p, dev) : DynTensor());
        return ts;
      };
      std::vector<DynTensor> grads = bw(wrap(in), wrap(out), wrap(g));
      std::vector<PrimitivePtr> r;
      for (size_t i = 0; i < grads.size(); ++i) {
        if (grads[i].defined())
          EMBER_CHECK(grads[i].device() == dev, name, ": backward gave input ", i, "'s gradient on ",
                      grads[i].device().name(), ", not on the device of the backward (", dev.name(), ")");
        r.push_back(grads[i].defined() ? grads[i].primitive() : nullptr);
      }
      return r;
    };
  }
  impl_ = std::move(impl);
}

std::vector<DynTensor> CustomOp::run(std::vector<DynTensor> inputs) const {
  return detail::run_op(OpKind::custom, std::move(inputs), CustomAttrs{impl_});
}

const std::string& CustomOp::name() const { return impl_->name; }

}  // namespace ember
