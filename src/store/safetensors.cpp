// safetensors files: the file and device side of safetensors_format.
#include "ember/store/safetensors.hpp"

#include <algorithm>
#include <cstring>

#include "file_io.hpp"
#include "safetensors_format.hpp"

namespace ember::store {
namespace {

struct SavePlan {
  std::string header;                          // padded JSON
  std::vector<const TensorMap::Entry*> order;  // tensors in the order of their data
};

SavePlan plan_save(const TensorMap& tensors, const std::map<std::string, std::string>& metadata,
                   std::string_view where) {
  SavePlan plan;
  for (const auto& entry : tensors) {
    EMBER_CHECK(entry.first != "__metadata__", where, ": '__metadata__' is reserved and cannot name a tensor");
    EMBER_CHECK(entry.second.defined(), where, ": tensor '", entry.first, "' is undefined");
    plan.order.push_back(&entry);
  }
  // Data: wider elements first, then by name (as the reference implementation lays it out), so
  // that every tensor is aligned to its element size in the file (the header is padded to 8).
  std::sort(plan.order.begin(), plan.order.end(), [](const auto* a, const auto* b) {
    const size_t sa = dtype_size(a->second.dtype()), sb = dtype_size(b->second.dtype());
    return sa != sb ? sa > sb : a->first < b->first;
  });
  std::vector<SafetensorsTensorInfo> infos;
  uint64_t offset = 0;
  for (const auto* entry : plan.order) {
    const DynTensor& t = entry->second;
    SafetensorsTensorInfo info{entry->first, t.dtype(), t.shape(), offset, 0};
    offset += static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    info.data_end = offset;
    infos.push_back(std::move(info));
  }
  // Header: by name.
  std::sort(infos.begin(), infos.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  plan.header = detail::encode_safetensors_header(infos, metadata);
  return plan;
}

// Writes the file through `sink(bytes)`, one tensor at a time so that at most one tensor is
// copied to the host at once.
template <class Sink>
void write_safetensors(const SavePlan& plan, std::string_view where, Sink&& sink) {
  uint64_t n = plan.header.size();
  std::byte prefix[8];
  std::memcpy(prefix, &n, 8);
  sink(std::span<const std::byte>(prefix, 8));
  sink(std::as_bytes(std::span<const char>(plan.header.data(), plan.header.size())));
  for (const auto* entry : plan.order) {
    TensorData data = entry->second.into_data();
    // The header already promised this many bytes; never write a file that breaks it.
    const uint64_t expected = static_cast<uint64_t>(entry->second.numel()) * dtype_size(entry->second.dtype());
    EMBER_CHECK(data.dtype() == entry->second.dtype() && data.bytes().size() == expected, where, ": tensor '",
                entry->first, "': the backend returned ", data.bytes().size(), " bytes of ", data.dtype(),
                ", expected ", expected, " bytes of ", entry->second.dtype());
    sink(std::span<const std::byte>(data.bytes()));
  }
}

// `owner` (the mapped file) set: tensors use the mapping in place where the backend can.
TensorMap to_tensor_map(std::span<const std::byte> bytes, std::string_view source, const Device& device,
                        const std::shared_ptr<const void>& owner = nullptr) {
  TensorMap out;
  // No copy where the backend can use the mapping in place, else one copy into its buffer (BOOL
  // bytes are normalised through TensorData first).
  detail::decode_safetensors_spans(bytes, source, [&](const SafetensorsTensorInfo& info, std::span<const std::byte> b) {
    if (info.dtype == DType::boolean) {
      std::vector<std::byte> v(b.begin(), b.end());
      detail::normalize_bool_bytes(v);
      out.insert(info.name, DynTensor::from_data(TensorData(info.shape, info.dtype, std::move(v)), device));
      return;
    }
    TensorMeta meta{info.shape, info.dtype};
    PrimitivePtr p = owner ? device.backend().wrap_bytes(meta, b, owner) : device.backend().write_bytes(meta, b);
    out.insert(info.name, DynTensor(std::move(p), device));
  });
  return out;
}

}  // namespace

void save_safetensors(const std::string& path, const TensorMap& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string where = "save_safetensors: " + path;
  SavePlan plan = plan_save(tensors, metadata, where);
  detail::AtomicFileWriter file(path);
  write_safetensors(plan, where, [&](std::span<const std::byte> bytes) { file.write(bytes); });
  file.commit();
}

std::vector<std::byte> save_safetensors_to_memory(const TensorMap& tensors,
                                                  const std::map<std::string, std::string>& metadata) {
  SavePlan plan = plan_save(tensors, metadata, "save_safetensors_to_memory");
  uint64_t total = 8 + plan.header.size();
  for (const auto* entry : plan.order) total += uint64_t(entry->second.numel()) * dtype_size(entry->second.dtype());
  std::vector<std::byte> out(static_cast<size_t>(total));
  size_t used = 0;
  write_safetensors(plan, "save_safetensors_to_memory", [&](std::span<const std::byte> bytes) {
    if (!bytes.empty()) std::memcpy(out.data() + used, bytes.data(), bytes.size());
    used += bytes.size();
  });
  return out;
}

TensorMap load_safetensors(const std::string& path, const Device& device) {
  auto file = std::make_shared<const detail::MappedFile>(path);
  return to_tensor_map(file->bytes(), path, device, file);
}

TensorMap load_safetensors_from_memory(std::span<const std::byte> bytes, std::string_view source,
                                       const Device& device) {
  return to_tensor_map(bytes, source, device);
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
  detail::InputFile file(path);
  std::byte prefix[8] = {};
  if (file.size() >= 8) file.read_at(0, prefix);
  const uint64_t n = detail::safetensors_header_length(prefix, file.size(), path);
  std::string text(n, '\0');
  file.read_at(8, std::as_writable_bytes(std::span<char>(text.data(), text.size())));
  return detail::parse_safetensors_header(text, file.size(), path);
}

SafetensorsHeader read_safetensors_header_from_memory(std::span<const std::byte> bytes, std::string_view source) {
  const uint64_t n = detail::safetensors_header_length(bytes, bytes.size(), source);
  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, n);
  return detail::parse_safetensors_header(text, bytes.size(), source);
}

}  // namespace ember::store
