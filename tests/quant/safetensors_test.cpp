// Quantized safetensors files: round trips of every scheme and type beside plain tensors, the
// entries and the metadata JSON as another reader sees them (store::read_safetensors_header), and
// each kind of missing or contradictory entry, crafted with the plain store writer.
#include <ember/store/safetensors.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "quant_test_util.hpp"

using namespace ember;
using namespace ember::quant;
using quant_test::expect_error;
using quant_test::normal_values;
using quant_test::tensor;
using quant_test::TempDir;

TEST(QuantSafetensors, RoundTripsEverySchemeBesidePlainTensors) {
  TempDir dir;
  DynTensor w = tensor(normal_values(6 * 64, 70), {6, 64});
  std::map<std::string, QuantizedTensor> q;
  int k = 0;
  for (QType dt : {QType::int8, QType::uint8, QType::int4, QType::uint4})
    for (QScheme s : {QScheme::per_tensor(dt, false), QScheme::per_channel(0, dt), QScheme::per_block(1, 32, dt),
                      QScheme::per_block(-1, 16, dt, false)})
      q["layer" + std::to_string(k++) + ".weight"] = quantize(w, s);
  store::TensorMap plain{{"layer0.bias", DynTensor::arange(0, 6).cast(DType::f32)}, {"step", DynTensor::arange(0, 1)}};
  const std::string path = dir.file("model.safetensors");
  quant::save_safetensors(path, q, plain, {{"epoch", "3"}});
  QuantizedFile f = quant::load_safetensors(path);
  ASSERT_EQ(f.quantized.size(), q.size());
  for (const auto& [name, want] : q) {
    ASSERT_TRUE(f.quantized.count(name)) << name;
    const QuantizedTensor& got = f.quantized.at(name);
    EXPECT_EQ(got.scheme(), want.scheme()) << name;
    EXPECT_EQ(got.shape(), want.shape()) << name;
    EXPECT_EQ(got.data().dtype(), want.data().dtype()) << name;
    EXPECT_EQ(got.data().to_vector<int64_t>(), want.data().to_vector<int64_t>()) << name;
    EXPECT_EQ(got.scale().to_vector<float>(), want.scale().to_vector<float>()) << name;
    EXPECT_EQ(got.zero_point().to_vector<int64_t>(), want.zero_point().to_vector<int64_t>()) << name;
    EXPECT_EQ(got.dequantize().to_vector<float>(), want.dequantize().to_vector<float>()) << name;
  }
  EXPECT_EQ(f.plain.names(), (std::vector<std::string>{"layer0.bias", "step"}));
  EXPECT_EQ(f.plain.at("layer0.bias").to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"epoch", "3"}}));
}

TEST(QuantSafetensors, EntriesAndMetadataAsOtherReadersSeeThem) {
  TempDir dir;
  const std::string path = dir.file("q4.safetensors");
  QuantizedTensor q = quantize(tensor(normal_values(4 * 64, 71), {4, 64}), QScheme::per_block(1, 32, QType::int4));
  quant::save_safetensors(path, {{"fc.weight", q}});
  store::SafetensorsHeader h = store::read_safetensors_header(path);
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.tensors[0].name, "fc.weight");
  EXPECT_EQ(h.tensors[0].dtype, DType::u8);
  EXPECT_EQ(h.tensors[0].shape, (Shape{4, 32}));
  EXPECT_EQ(h.tensors[1].name, "fc.weight.scale");
  EXPECT_EQ(h.tensors[1].dtype, DType::f32);
  EXPECT_EQ(h.tensors[1].shape, (Shape{4, 2}));
  EXPECT_EQ(h.tensors[2].name, "fc.weight.zero_point");
  EXPECT_EQ(h.tensors[2].dtype, DType::i8);
  ASSERT_TRUE(h.metadata.count("ember.quant.fc.weight"));
  nlohmann::json j = nlohmann::json::parse(h.metadata.at("ember.quant.fc.weight"));
  EXPECT_EQ(j, nlohmann::json::parse(
                   R"({"granularity":"per_block","axis":1,"block_size":32,"symmetric":true,"dtype":"int4","shape":[4,64]})"));
  // plain readers see three ordinary tensors
  store::TensorMap raw = store::load_safetensors(path);
  EXPECT_EQ(raw.at("fc.weight").to_vector<int64_t>(), q.data().to_vector<int64_t>());
}

TEST(QuantSafetensors, MissingOrContradictoryEntriesNameTheFileAndEntry) {
  TempDir dir;
  QuantizedTensor q = quantize(tensor(normal_values(2 * 8, 72), {2, 8}), QScheme::per_block(1, 4, QType::int8));
  const std::string meta = scheme_to_metadata(q.scheme(), q.shape());
  store::TensorMap parts{{"w", q.data()}, {"w.scale", q.scale()}, {"w.zero_point", q.zero_point()}};
  auto write = [&](const std::string& name, const store::TensorMap& m, const std::map<std::string, std::string>& md) {
    const std::string path = dir.file(name);
    store::save_safetensors(path, m, md);
    return path;
  };
  // three entries without metadata
  std::string p = write("no_meta.safetensors", parts, {});
  expect_error([&] { quant::load_safetensors(p); },
               {"quant::load_safetensors", p, "entry 'w'", "no metadata 'ember.quant.w'"});
  // metadata without its tensors
  store::TensorMap two{{"w", q.data()}, {"w.zero_point", q.zero_point()}};
  p = write("no_scale.safetensors", two, {{"ember.quant.w", meta}});
  expect_error([&] { quant::load_safetensors(p); }, {p, "quantized entry 'w'", "no tensor 'w.scale'"});
  // metadata that lacks a field, is not JSON, or names unknown things
  for (const auto& [bad, fragment] : std::vector<std::pair<std::string, std::string>>{
           {R"({"granularity":"per_block","axis":1,"block_size":4,"symmetric":true,"shape":[2,8]})", "lacks \"dtype\""},
           {R"({"granularity":"per_block","block_size":4,"symmetric":true,"dtype":"int8","shape":[2,8]})", "lacks \"axis\""},
           {"granularity=per_block", "not a JSON object"},
           {R"({"granularity":"per_row","symmetric":true,"dtype":"int8","shape":[2,8]})", "per_row"},
           {R"({"granularity":"per_tensor","symmetric":"yes","dtype":"int8","shape":[2,8]})", "true or false"},
           {R"({"granularity":"per_tensor","symmetric":true,"dtype":"int8","shape":[2,-8]})", "not a size"}}) {
    p = write("bad_meta.safetensors", parts, {{"ember.quant.w", bad}});
    expect_error([&] { quant::load_safetensors(p); }, {"quant::load_safetensors", p, "quantized entry 'w'", fragment});
  }
  // metadata that contradicts the tensors
  const std::vector<std::pair<std::string, std::string>> contradictions = {
      {R"({"granularity":"per_block","axis":1,"block_size":4,"symmetric":true,"dtype":"uint8","shape":[2,8]})",
       "data is i8 [2, 8]"},
      {R"({"granularity":"per_block","axis":1,"block_size":4,"symmetric":true,"dtype":"int8","shape":[2,4]})",
       "data is i8 [2, 8]"},
      {R"({"granularity":"per_block","axis":1,"block_size":2,"symmetric":true,"dtype":"int8","shape":[2,8]})",
       "scale is f32 [2, 2]"},
      {R"({"granularity":"per_block","axis":1,"block_size":3,"symmetric":true,"dtype":"int8","shape":[2,8]})",
       "block size 3 does not divide"},
      {R"({"granularity":"per_channel","axis":2,"symmetric":true,"dtype":"int8","shape":[2,8]})",
       "axis 2 is out of range"}};
  for (const auto& [bad, fragment] : contradictions) {
    p = write("contradiction.safetensors", parts, {{"ember.quant.w", bad}});
    expect_error([&] { quant::load_safetensors(p); }, {p, "quantized entry 'w'", fragment});
  }
  // a scale of zero in the file
  store::TensorMap zero_scale{{"w", q.data()}, {"w.scale", mul(q.scale(), 0.0)}, {"w.zero_point", q.zero_point()}};
  p = write("zero_scale.safetensors", zero_scale, {{"ember.quant.w", meta}});
  expect_error([&] { quant::load_safetensors(p); }, {p, "quantized entry 'w'", "scale[0] is 0"});
}

TEST(QuantSafetensors, SavingRefusesCollisionsAndKeepsTheOldFile) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  QuantizedTensor q = quantize(tensor(normal_values(8, 73), {8}), QScheme::per_tensor());
  quant::save_safetensors(path, {{"w", q}});
  std::ifstream in(path, std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_error([&] { quant::save_safetensors(path, {{"w", q}}, {{"w.scale", DynTensor::zeros({1})}}); },
               {"quant::save_safetensors", "'w.scale'", "written twice"});
  expect_error([&] { quant::save_safetensors(path, {{"w", q}}, {}, {{"ember.quant.x", "{}"}}); },
               {"metadata key 'ember.quant.x'"});
  expect_error([&] { quant::save_safetensors(path, {{"w", QuantizedTensor()}}); }, {"'w' is undefined"});
  std::ifstream again(path, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  EXPECT_EQ(before, after);
  // an unrelated x / x.scale pair without a zero point stays plain
  const std::string other = dir.file("plain.safetensors");
  store::save_safetensors(other, {{"norm", DynTensor::ones({2})}, {"norm.scale", DynTensor::ones({2})}});
  QuantizedFile f = quant::load_safetensors(other);
  EXPECT_TRUE(f.quantized.empty());
  EXPECT_EQ(f.plain.size(), 2u);
}
