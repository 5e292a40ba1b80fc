// Quantized tensors in safetensors files, beside plain ones. A quantized tensor `name` becomes
// three entries, `name` (the integer data, I8 or U8, 4-bit packed), `name.scale` (F32) and
// `name.zero_point` (I8 or U8), and one metadata string under `ember.quant.<name>`, a JSON object:
//   {"granularity":"per_block","axis":1,"block_size":32,"symmetric":true,"dtype":"int4","shape":[16,64]}
// (axis and block_size only where the granularity has them). Readers that do not know the key see
// three ordinary tensors.
//
//   # DynTensor w = randn({16, 64}), b = DynTensor::zeros({16});
//   using namespace ember::quant;
//   std::map<std::string, QuantizedTensor> q{{"fc.weight", quantize(w, QScheme::per_block(1, 32, QType::int4))}};
//   quant::save_safetensors("model_q4.safetensors", q, {{"fc.bias", b}}, {{"source", "example"}});
//   QuantizedFile f = quant::load_safetensors("model_q4.safetensors");
//   DynTensor w2 = f.quantized.at("fc.weight").dequantize();
//   const DynTensor& b2 = f.plain.at("fc.bias");
//   # run
//
// Saving is atomic (store::save_safetensors). Loading checks every quantized entry against its
// metadata (an Error naming the file and the entry): metadata without its three tensors, three
// tensors `x`, `x.scale`, `x.zero_point` without metadata, unreadable or incomplete JSON, and
// dtypes or shapes that contradict the scheme and the logical shape.
#pragma once

#include <map>
#include <string>

#include "ember/quant/quantized_tensor.hpp"
#include "ember/store/tensor_map.hpp"

namespace ember::quant {

// The metadata key prefix of quantized entries: "ember.quant." + the tensor's name.
inline constexpr const char* kMetadataPrefix = "ember.quant.";

// A safetensors file's contents, split into quantized and plain tensors.
struct QuantizedFile {
  std::map<std::string, QuantizedTensor> quantized;  // by name
  store::TensorMap plain;  // the other tensors, in the file's order
  std::map<std::string, std::string> metadata;  // the other metadata strings
};

// Writes `quantized` and `plain` tensors with `metadata` (keys must not start with
// kMetadataPrefix) to `path`, atomically. Throws an Error for an undefined tensor or two
// entries that would share a name.
void save_safetensors(const std::string& path, const std::map<std::string, QuantizedTensor>& quantized,
                      const store::TensorMap& plain = {}, const std::map<std::string, std::string>& metadata = {});
// Reads a file that save_safetensors wrote (or any safetensors file: without quantized entries
// everything is plain), tensors on `device`.
QuantizedFile load_safetensors(const std::string& path, const Device& device = Device::default_device());

// The metadata string of a scheme and logical shape (the JSON above), and back. The parser throws
// an Error naming `where` for bad JSON, missing or mistyped fields and unknown names.
std::string scheme_to_metadata(const QScheme& scheme, const Shape& shape);
// The inverse of scheme_to_metadata: the scheme and the logical shape.
std::pair<QScheme, Shape> scheme_from_metadata(const std::string& text, const std::string& where);

}  // namespace ember::quant
