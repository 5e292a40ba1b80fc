// Sequential: a chain of modules of any types, each run on the previous one's output
// (torch.nn.Sequential). State-dict keys are the layer index then the layer's own names, as in
// PyTorch: "0.weight", "0.bias", "2.running_mean", ...
//
//   # Device dev = Device::cpu(); DynTensor x = randn({2, 784});
//   nn::Sequential net;
//   net.push(nn::LinearConfig{784, 128}.init(dev)).push(nn::Relu{}).push(nn::Dropout{0.1})
//      .push(nn::LinearConfig{128, 10}.init(dev));
//   DynTensor logits = net.forward(x);
//   nn::Linear& head = net.at<nn::Linear>(3);
//   nn::Sequential mlp(nn::LinearConfig{4, 8}.init(dev), nn::Gelu{}, nn::LinearConfig{8, 1}.init(dev));
//   # run
//
// A layer is any type with `DynTensor forward(DynTensor)` (const or not) and a visit() (EMBER_MODULE).
// Copies are deep (modules are values): changing a copy's layers leaves the original alone.
// forward() on a non-const Sequential calls each layer's non-const forward where it has one, so
// a BatchNorm inside updates its running statistics in training mode; the const forward needs
// every layer to have a const forward (BatchNorm's throws in training mode).
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "ember/core/error.hpp"
#include "ember/nn/module.hpp"

namespace ember::nn {

// What Sequential accepts as a layer: a copyable type with forward(DynTensor) (const or not) returning
// a DynTensor, and visit() (EMBER_MODULE).
template <class M>
concept SequentialLayer = std::copy_constructible<M> && requires(M& m, DynTensor x, Visitor& v, const std::string& p) {
  { m.forward(x) } -> std::convertible_to<DynTensor>;
  m.visit(v, p);
};

// torch.nn.Sequential: owns its layers (type-erased, deep-copied) and runs them in order.
class Sequential {
 public:
  Sequential() = default;  // no layers: forward returns its input
  // Sequential(a, b, c) == Sequential().push(a).push(b).push(c) (one Sequential argument: the copy constructor).
  // (The Sequential test comes first: checking SequentialLayer<Sequential> would ask whether
  // Sequential is copyable, which asks this constructor again.)
  template <class... Ms>
    requires(sizeof...(Ms) > 1 || !(std::same_as<Ms, Sequential> && ...)) && (SequentialLayer<Ms> && ...)
  explicit Sequential(Ms... layers) {
    (push(std::move(layers)), ...);
  }
  Sequential(const Sequential& other);  // a deep copy: every layer is copied
  Sequential& operator=(const Sequential& other);  // replaces the layers with deep copies of other's
  Sequential(Sequential&&) noexcept = default;  // takes the layers, leaving the source empty
  Sequential& operator=(Sequential&&) noexcept = default;  // takes the layers
  ~Sequential() = default;

  // Appends a layer; returns *this for chaining.
  template <SequentialLayer M>
  Sequential& push(M layer) {
    layers_.push_back(std::make_unique<Holder<M>>(std::move(layer)));
    return *this;
  }
  size_t size() const { return layers_.size(); }  // the number of layers
  bool empty() const { return layers_.empty(); }  // true when it has no layers

  // Runs the layers in order, each through its non-const forward where it has one (see above).
  DynTensor forward(DynTensor x);
  // Runs the layers in order through their const forward; throws ember::Error at a layer without one.
  DynTensor forward(DynTensor x) const;

  // Layer i as its type; throws when i is out of range or holds another type.
  template <class M>
  M& at(size_t i) {
    return *static_cast<M*>(checked(i, typeid(M)));
  }
  // Layer i as its type, read-only; throws as the non-const overload does.
  template <class M>
  const M& at(size_t i) const {
    return *static_cast<const M*>(const_cast<Sequential*>(this)->checked(i, typeid(M)));
  }
  // The type of layer i (for inspection).
  const std::type_info& type_at(size_t i) const;

  // Visits layer i under the path prefix "i" ("0.weight", ...), as PyTorch's state_dict keys.
  void visit(Visitor& v, const std::string& prefix = {});

 private:
  struct Layer {
    virtual ~Layer() = default;
    virtual std::unique_ptr<Layer> clone() const = 0;
    virtual DynTensor forward(DynTensor x) = 0;
    virtual DynTensor forward_const(DynTensor x, size_t index) const = 0;
    virtual void visit(Visitor& v, const std::string& prefix) = 0;
    virtual const std::type_info& type() const = 0;
    virtual void* get() = 0;
  };
  template <class M>
  struct Holder final : Layer {
    M m;
    explicit Holder(M x) : m(std::move(x)) {}
    std::unique_ptr<Layer> clone() const override { return std::make_unique<Holder>(m); }
    DynTensor forward(DynTensor x) override { return m.forward(std::move(x)); }
    DynTensor forward_const(DynTensor x, size_t index) const override {
      if constexpr (requires(const M& c, DynTensor t) {
                      { c.forward(t) } -> std::convertible_to<DynTensor>;
                    }) {
        return m.forward(std::move(x));
      } else {
        EMBER_FAIL("Sequential: layer ", index, " (", typeid(M).name(),
                   ") has no const forward; call forward on a non-const Sequential");
      }
    }
    void visit(Visitor& v, const std::string& prefix) override { m.visit(v, prefix); }
    const std::type_info& type() const override { return typeid(M); }
    void* get() override { return &m; }
  };

  void* checked(size_t i, const std::type_info& t);

  std::vector<std::unique_ptr<Layer>> layers_;
};

// A parameterless layer from a function, for Sequential: `net.push(nn::Lambda{[](DynTensor x) { ... }})`.
struct Lambda {
  std::function<DynTensor(DynTensor)> fn{};  // the function forward applies; must be set
  EMBER_MODULE()
  DynTensor forward(DynTensor x) const {  // fn(x)
    return detail::in_module(ember_module_, "Lambda", [&] { return fn(std::move(x)); });
  }
};

}  // namespace ember::nn
