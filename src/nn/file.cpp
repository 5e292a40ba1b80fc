// Module files: the store layer's formats behind one pair of functions.
#include "ember/nn/file.hpp"

#include <fstream>

#include "ember/store/pytorch.hpp"
#include "ember/store/safetensors.hpp"

namespace ember::nn {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool looks_like_zip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}
}  // namespace

NamedTensors read_tensors(const std::string& path, const Device& device) {
  const bool torch_ext = ends_with(path, ".pt") || ends_with(path, ".pth") || ends_with(path, ".bin") || ends_with(path, ".ckpt");
  store::TensorMap m = (torch_ext || (!ends_with(path, ".safetensors") && looks_like_zip(path)))
                           ? store::load_pytorch(path, device)
                           : store::load_safetensors(path, device);
  return m.entries();
}

void write_tensors(const std::string& path, const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
  store::TensorMap m;
  for (const auto& [k, t] : tensors) m.insert(k, t.detach());
  store::save_safetensors(path, m, metadata);
}

}  // namespace ember::nn
