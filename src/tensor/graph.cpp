// Graphs (include/ember/tensor/graph.hpp): the tensor layer's side of Backend::capture.
#include "ember/tensor/graph.hpp"

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
  EMBER_CHECK(dst.device().backend().overwrite(dst.primitive(), src.into_data()), "graph overwrite: ",
              dst.device().name(), " cannot write into a tensor in place");
}

}  // namespace ember::graph
