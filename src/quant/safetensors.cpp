// Quantized tensors in safetensors files: three ordinary entries per tensor plus its scheme as a
// JSON string in the header's metadata (include/ember/quant/safetensors.hpp). The store layer
// writes (atomically) and reads the file; this file maps entries to QuantizedTensors and back.
#include "ember/quant/safetensors.hpp"

#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "ember/core/error.hpp"
#include "ember/store/safetensors.hpp"

namespace ember::quant {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

std::string scheme_to_metadata(const QScheme& scheme, const Shape& shape) {
  nlohmann::ordered_json j;
  j["granularity"] = std::string(granularity_name(scheme.granularity));
  if (scheme.granularity != Granularity::per_tensor) j["axis"] = scheme.axis;
  if (scheme.granularity == Granularity::per_block) j["block_size"] = scheme.block_size;
  j["symmetric"] = scheme.symmetric;
  j["dtype"] = std::string(qtype_name(scheme.dtype));
  j["shape"] = std::vector<int64_t>(shape.begin(), shape.end());
  return j.dump();
}

std::pair<QScheme, Shape> scheme_from_metadata(const std::string& text, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EMBER_CHECK(!j.is_discarded() && j.is_object(), where, ": its metadata is not a JSON object: '", text, "'");
  auto field = [&](const char* key) -> const nlohmann::json& {
    auto it = j.find(key);
    EMBER_CHECK(it != j.end(), where, ": its metadata lacks \"", key, "\": '", text, "'");
    return *it;
  };
  auto integer = [&](const char* key) {
    const nlohmann::json& v = field(key);
    EMBER_CHECK(v.is_number_integer(), where, ": metadata \"", key, "\" must be an integer: '", text, "'");
    return v.get<int64_t>();
  };
  const nlohmann::json& g = field("granularity");
  const nlohmann::json& d = field("dtype");
  const nlohmann::json& sym = field("symmetric");
  const nlohmann::json& sh = field("shape");
  EMBER_CHECK(g.is_string() && d.is_string(), where, ": metadata \"granularity\" and \"dtype\" must be strings: '", text,
              "'");
  EMBER_CHECK(sym.is_boolean(), where, ": metadata \"symmetric\" must be true or false: '", text, "'");
  EMBER_CHECK(sh.is_array(), where, ": metadata \"shape\" must be an array of sizes: '", text, "'");
  QScheme s;
  try {
    s.granularity = granularity_from_name(g.get<std::string>());
    s.dtype = qtype_from_name(d.get<std::string>());
  } catch (const Error& e) {
    EMBER_FAIL(where, ": ", e.what());
  }
  s.symmetric = sym.get<bool>();
  if (s.granularity != Granularity::per_tensor) {
    const int64_t axis = integer("axis");
    EMBER_CHECK(axis >= -64 && axis < 64, where, ": metadata \"axis\" ", axis, " is out of range");
    s.axis = int(axis);
  }
  if (s.granularity == Granularity::per_block) s.block_size = integer("block_size");
  std::vector<int64_t> dims;
  for (const nlohmann::json& v : sh) {
    EMBER_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0, where, ": metadata \"shape\" holds ", v.dump(),
                ", not a size: '", text, "'");
    dims.push_back(v.get<int64_t>());
  }
  Shape shape(dims);
  (void)s.params_shape(shape, where);  // axis in range, block size dividing its dim
  return {s, shape};
}

void save_safetensors(const std::string& path, const std::map<std::string, QuantizedTensor>& quantized,
                      const store::TensorMap& plain, const std::map<std::string, std::string>& metadata) {
  const std::string where = "quant::save_safetensors: " + path;
  std::map<std::string, std::string> meta;
  for (const auto& [k, v] : metadata) {
    EMBER_CHECK(!starts_with(k, kMetadataPrefix), where, ": metadata key '", k, "' starts with '", kMetadataPrefix,
                "', which names quantized entries");
    meta[k] = v;
  }
  store::TensorMap all;
  auto add = [&](const std::string& name, const DynTensor& t, const std::string& owner) {
    EMBER_CHECK(!all.contains(name) && (owner.empty() || !plain.contains(name)), where, ": entry '", name,
                owner.empty() ? "'" : "' of quantized tensor '" + owner + "'",
                " would be written twice (a quantized tensor's entries are `name`, `name.scale` and `name.zero_point`)");
    all.insert(name, t);
  };
  for (const auto& [name, q] : quantized) {
    EMBER_CHECK(q.defined(), where, ": quantized tensor '", name, "' is undefined");
    add(name, q.data(), name);
    add(name + ".scale", q.scale(), name);
    add(name + ".zero_point", q.zero_point(), name);
    meta[kMetadataPrefix + name] = scheme_to_metadata(q.scheme(), q.shape());
  }
  for (const auto& [name, t] : plain) add(name, t, "");
  store::save_safetensors(path, all, meta);
}

QuantizedFile load_safetensors(const std::string& path, const Device& device) {
  const store::SafetensorsHeader header = store::read_safetensors_header(path);
  store::TensorMap all = store::load_safetensors(path, device);
  QuantizedFile f;
  std::set<std::string> used;
  const std::string prefix = kMetadataPrefix;
  for (const auto& [key, text] : header.metadata) {
    if (!starts_with(key, prefix)) {
      f.metadata[key] = text;
      continue;
    }
    const std::string name = key.substr(prefix.size());
    const std::string where = "quant::load_safetensors: " + path + ": quantized entry '" + name + "'";
    auto [scheme, shape] = scheme_from_metadata(text, where);
    const std::string parts[3] = {name, name + ".scale", name + ".zero_point"};
    const DynTensor* t[3];
    for (int k = 0; k < 3; ++k) {
      t[k] = all.find(parts[k]);
      EMBER_CHECK(t[k] != nullptr, where, " has metadata '", key, "' but the file has no tensor '", parts[k], "'");
      used.insert(parts[k]);
    }
    f.quantized.emplace(name, QuantizedTensor(*t[0], *t[1], *t[2], shape, scheme, where));
  }
  for (const auto& [name, t] : all) {
    if (used.count(name)) continue;
    EMBER_CHECK(!(all.contains(name + ".scale") && all.contains(name + ".zero_point")), "quant::load_safetensors: ",
                path, ": entry '", name, "' has '", name, ".scale' and '", name,
                ".zero_point' beside it but no metadata '", prefix, name,
                "': a quantized entry needs its scheme (docs/quantization.md)");
    f.plain.insert(name, t);
  }
  return f;
}

}  // namespace ember::quant
