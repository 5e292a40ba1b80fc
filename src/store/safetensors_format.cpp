#include "safetensors_format.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

namespace ember::store {

static_assert(std::endian::native == std::endian::little, "the store layer assumes a little-endian host");

namespace {

struct DTypeName {
  DType dtype;
  std::string_view name;
};
constexpr DTypeName kDTypeNames[] = {
    {DType::f64, "F64"}, {DType::f32, "F32"}, {DType::f16, "F16"}, {DType::bf16, "BF16"}, {DType::i64, "I64"},
    {DType::i32, "I32"}, {DType::i16, "I16"}, {DType::i8, "I8"},   {DType::u8, "U8"},     {DType::boolean, "BOOL"},
};

// Nesting deeper than this is refused while parsing (a valid header nests 3 levels).
constexpr int kMaxJsonDepth = 64;
constexpr size_t kMaxRank = 64;

struct DuplicateKey {
  std::string key;
};
struct TooDeep {};

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const auto& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  EMBER_FAIL("safetensors: no name for dtype ", static_cast<int>(dtype));
}

DType dtype_from_safetensors_name(std::string_view name) {
  for (const auto& d : kDTypeNames)
    if (d.name == name) return d.dtype;
  EMBER_FAIL("safetensors: unsupported dtype '", name,
             "' (ember reads F64, F32, F16, BF16, I64, I32, I16, I8, U8 and BOOL)");
}

namespace detail {

void normalize_bool_bytes(std::span<std::byte> bytes) {
  for (std::byte& b : bytes)
    if (b != std::byte{0}) b = std::byte{1};
}

uint64_t safetensors_header_length(std::span<const std::byte> prefix, uint64_t total_size, std::string_view source) {
  EMBER_CHECK(prefix.size() >= 8 && total_size >= 8, source, ": safetensors: truncated file: ", total_size,
              " bytes, the 8-byte header length is missing");
  uint64_t n = 0;
  std::memcpy(&n, prefix.data(), 8);
  EMBER_CHECK(n <= kMaxSafetensorsHeaderBytes, source, ": safetensors: header length ", n, " exceeds the limit of ",
              kMaxSafetensorsHeaderBytes, " bytes (corrupt file?)");
  EMBER_CHECK(n <= total_size - 8, source, ": safetensors: header length ", n, " runs past the end of the file (",
              total_size, " bytes)");
  return n;
}

SafetensorsHeader parse_safetensors_header(std::string_view text, uint64_t total_size, std::string_view source) {
  using nlohmann::json;
  const std::string where = std::string(source) + ": safetensors: ";
  EMBER_CHECK(!text.empty() && text.front() == '{', where,
              "the header does not start with '{' (not a safetensors file?)");

  // Duplicate keys (which nlohmann::json would silently merge) and excessive nesting are caught
  // while parsing: keys_at[d] holds the keys of the object whose members sit at depth d.
  std::vector<std::unordered_set<std::string>> keys_at(1);
  json::parser_callback_t watch = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxJsonDepth) throw TooDeep{};
    const auto d = static_cast<size_t>(depth);
    if (event == json::parse_event_t::object_start) {
      if (keys_at.size() < d + 2) keys_at.resize(d + 2);
      keys_at[d + 1].clear();
    } else if (event == json::parse_event_t::key) {
      if (keys_at.size() < d + 1) keys_at.resize(d + 1);
      if (!keys_at[d].insert(parsed.get<std::string>()).second) throw DuplicateKey{parsed.get<std::string>()};
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text.begin(), text.end(), watch);
  } catch (const DuplicateKey& dup) {
    EMBER_FAIL(where, "duplicate key '", dup.key, "' in the header");
  } catch (const TooDeep&) {
    EMBER_FAIL(where, "the header nests deeper than ", kMaxJsonDepth, " levels");
  } catch (const json::exception& e) {
    EMBER_FAIL(where, "invalid JSON header: ", e.what());
  }
  EMBER_CHECK(root.is_object(), where, "the header is not a JSON object");

  SafetensorsHeader header;
  header.data_offset = 8 + text.size();
  const uint64_t buffer_size = total_size - header.data_offset;

  auto read_u64 = [&](const json& v, const std::string& name, const char* what) -> uint64_t {
    EMBER_CHECK(v.is_number_unsigned(), where, "tensor '", name, "': ", what, " must be a non-negative integer, got ",
                v.dump());
    return v.get<uint64_t>();
  };

  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") {
      EMBER_CHECK(entry.is_object(), where, "__metadata__ must be an object of strings");
      for (const auto& [key, value] : entry.items()) {
        EMBER_CHECK(value.is_string(), where, "__metadata__ value of '", key, "' must be a string, got ", value.dump());
        header.metadata.emplace(key, value.get<std::string>());
      }
      continue;
    }
    EMBER_CHECK(entry.is_object(), where, "tensor '", name, "': entry must be an object");
    auto dtype_it = entry.find("dtype");
    auto shape_it = entry.find("shape");
    auto offsets_it = entry.find("data_offsets");
    EMBER_CHECK(dtype_it != entry.end() && dtype_it->is_string(), where, "tensor '", name,
                "': missing or non-string \"dtype\"");
    EMBER_CHECK(shape_it != entry.end() && shape_it->is_array(), where, "tensor '", name,
                "': missing or non-array \"shape\"");
    EMBER_CHECK(offsets_it != entry.end() && offsets_it->is_array() && offsets_it->size() == 2, where, "tensor '", name,
                "': \"data_offsets\" must be [begin, end]");

    SafetensorsTensorInfo info;
    info.name = name;
    const std::string dtype_name = dtype_it->get<std::string>();
    try {
      info.dtype = dtype_from_safetensors_name(dtype_name);
    } catch (const Error&) {
      EMBER_FAIL(where, "tensor '", name, "': unsupported dtype '", dtype_name,
                 "' (ember reads F64, F32, F16, BF16, I64, I32, I16, I8, U8 and BOOL)");
    }
    EMBER_CHECK(shape_it->size() <= kMaxRank, where, "tensor '", name, "': rank ", shape_it->size(),
                " exceeds the limit of ", kMaxRank);
    // Overflow-safe element count. Non-zero dims must multiply within int64 even when another
    // dim is 0, so that Shape::numel() (which multiplies them all) cannot overflow.
    uint64_t nonzero_product = 1;
    bool overflow = false, has_zero_dim = false;
    std::vector<int64_t> dims;
    for (const json& d : *shape_it) {
      uint64_t dim = read_u64(d, name, "every shape entry");
      dims.push_back(static_cast<int64_t>(dim));
      if (dim == 0)
        has_zero_dim = true;
      else
        overflow |= __builtin_mul_overflow(nonzero_product, dim, &nonzero_product);
    }
    overflow |= nonzero_product > uint64_t(std::numeric_limits<int64_t>::max());
    uint64_t nbytes = 0;
    if (!has_zero_dim) overflow |= __builtin_mul_overflow(nonzero_product, uint64_t(dtype_size(info.dtype)), &nbytes);
    info.shape = Shape(std::move(dims));
    EMBER_CHECK(!overflow, where, "tensor '", name, "': shape ", info.shape,
                " has more elements than can be addressed");
    info.data_begin = read_u64((*offsets_it)[0], name, "data_offsets[0]");
    info.data_end = read_u64((*offsets_it)[1], name, "data_offsets[1]");
    EMBER_CHECK(info.data_begin <= info.data_end, where, "tensor '", name, "': data_offsets [", info.data_begin, ", ",
                info.data_end, "] are reversed");
    EMBER_CHECK(info.data_end <= buffer_size, where, "tensor '", name, "': data_offsets [", info.data_begin, ", ",
                info.data_end, "] run past the data buffer (", buffer_size, " bytes)");
    EMBER_CHECK(info.data_end - info.data_begin == nbytes, where, "tensor '", name, "': shape ", info.shape, " of ",
                dtype_name, " needs ", nbytes, " bytes but data_offsets [", info.data_begin, ", ", info.data_end,
                "] hold ", info.data_end - info.data_begin);
    header.tensors.push_back(std::move(info));
  }

  // The byte ranges must tile the buffer exactly: no gap, no overlap, nothing left over.
  std::vector<const SafetensorsTensorInfo*> by_offset;
  for (const auto& t : header.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return a->data_begin != b->data_begin ? a->data_begin < b->data_begin : a->data_end < b->data_end;
  });
  uint64_t expected = 0;
  const SafetensorsTensorInfo* previous = nullptr;
  for (const auto* t : by_offset) {
    if (t->data_begin != expected) {
      if (t->data_begin < expected)
        EMBER_FAIL(where, "tensor '", t->name, "': data_offsets [", t->data_begin, ", ", t->data_end,
                   "] overlap tensor '", previous->name, "' [", previous->data_begin, ", ", previous->data_end, "]");
      EMBER_FAIL(where, "tensor '", t->name, "': data_offsets [", t->data_begin, ", ", t->data_end,
                 "] leave a gap after byte ", expected);
    }
    expected = t->data_end;
    previous = t;
  }
  EMBER_CHECK(expected == buffer_size, where, "the tensors cover ", expected, " bytes but the data buffer has ",
              buffer_size, " (trailing or missing data)");
  return header;
}

void decode_safetensors_spans(std::span<const std::byte> file, std::string_view source,
                              const std::function<void(const SafetensorsTensorInfo&, std::span<const std::byte>)>& on_tensor) {
  const uint64_t n = safetensors_header_length(file, file.size(), source);
  std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, n);
  SafetensorsHeader header = parse_safetensors_header(text, file.size(), source);
  const std::byte* buffer = file.data() + header.data_offset;
  for (const SafetensorsTensorInfo& info : header.tensors)
    on_tensor(info, std::span<const std::byte>(buffer + info.data_begin, buffer + info.data_end));
}

void decode_safetensors(std::span<const std::byte> file, std::string_view source,
                        const std::function<void(const SafetensorsTensorInfo&, TensorData&&)>& on_tensor) {
  decode_safetensors_spans(file, source, [&](const SafetensorsTensorInfo& info, std::span<const std::byte> b) {
    std::vector<std::byte> bytes(b.begin(), b.end());
    if (info.dtype == DType::boolean) normalize_bool_bytes(bytes);
    on_tensor(info, TensorData(info.shape, info.dtype, std::move(bytes)));
  });
}

std::string encode_safetensors_header(const std::vector<SafetensorsTensorInfo>& tensors,
                                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  if (!metadata.empty()) root["__metadata__"] = metadata;
  for (const auto& t : tensors) {
    nlohmann::ordered_json entry;
    entry["dtype"] = std::string(safetensors_dtype_name(t.dtype));
    entry["shape"] = t.shape.dims();
    entry["data_offsets"] = {t.data_begin, t.data_end};
    root[t.name] = std::move(entry);
  }
  std::string text;
  try {
    text = root.dump();
  } catch (const nlohmann::ordered_json::exception& e) {
    EMBER_FAIL("save_safetensors: a tensor name or metadata string is not valid UTF-8: ", e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace detail
}  // namespace ember::store
