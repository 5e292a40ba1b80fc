#include "pytorch_format.hpp"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "safetensors_format.hpp"
#include "zip_reader.hpp"

namespace ember::store::detail {
namespace {

using pickle::Kind;
using pickle::Node;

constexpr int kMaxNesting = 128;

// Copies the elements of a strided view into a contiguous buffer, `elem` bytes each.
template <size_t kElem>
void gather(const std::byte* base, const pickle::TensorView& v, std::byte* out) {
  const size_t rank = v.sizes.size();
  std::vector<int64_t> index(rank, 0);
  const int64_t inner_size = rank ? v.sizes[rank - 1] : 1;
  const int64_t inner_stride = rank ? v.strides[rank - 1] : 0;
  int64_t numel = 1;
  for (int64_t s : v.sizes) numel *= s;
  for (int64_t done = 0; done < numel; done += inner_size) {
    int64_t pos = v.offset;
    for (size_t d = 0; d + 1 < rank; ++d) pos += index[d] * v.strides[d];
    for (int64_t i = 0; i < inner_size; ++i, pos += inner_stride, out += kElem)
      std::memcpy(out, base + pos * int64_t(kElem), kElem);
    for (size_t d = rank - 1; d-- > 0;) {  // advance the outer dims like an odometer
      if (++index[d] < v.sizes[d]) break;
      index[d] = 0;
    }
  }
}

class Decoder {
 public:
  Decoder(std::span<const std::byte> file, std::string_view source, const PytorchDecodeOptions& options,
          const std::function<void(const std::string&, TensorData&&)>& on_tensor,
          const std::function<void(const std::string&, CheckpointValue&&)>& on_value)
      : source_(source),
        options_(options),
        on_tensor_(on_tensor),
        on_value_(on_value),
        zip_(file, std::string(source)) {
    budget_ = options.max_tensor_bytes ? options.max_tensor_bytes : 4 * uint64_t(file.size()) + (uint64_t(1) << 30);
  }

  void run() {
    const ZipEntry* pkl = find_data_pkl();
    prefix_ = pkl->name.substr(0, pkl->name.size() - std::string_view("data.pkl").size());
    if (const ZipEntry* order = zip_.find(prefix_ + "byteorder")) {
      auto text = zip_.read(*order, options_.verify_crc);
      std::string_view s(reinterpret_cast<const char*>(text.data()), text.size());
      if (s == "big")
        big_endian_ = true;
      else
        EMBER_CHECK(s == "little", source_, ": unknown byte order '", s, "' in ", order->name);
    }
    prog_ = pickle::run(zip_.read(*pkl, options_.verify_crc), std::string(source_) + " (" + pkl->name + ")",
                        options_.pickle_limits);
    on_path_.assign(prog_.nodes.size(), 0);
    visit_budget_ = 4 * prog_.nodes.size() + 4096;
    flatten(prog_.root, "", 0);
  }

 private:
  const ZipEntry* find_data_pkl() const {
    const ZipEntry* found = nullptr;
    bool torchscript = false;
    for (const ZipEntry& e : zip_.entries()) {
      const size_t slash = e.name.find('/');
      if (slash == std::string::npos) continue;
      const std::string_view rest = std::string_view(e.name).substr(slash + 1);
      torchscript |= rest == "constants.pkl";
      if (rest != "data.pkl") continue;
      EMBER_CHECK(found == nullptr, source_, ": two pickles in one archive ('", found->name, "' and '", e.name, "')");
      found = &e;
    }
    EMBER_CHECK(found != nullptr, source_, ": no <archive>/data.pkl entry: ",
                torchscript ? "a TorchScript archive (torch.jit.save)? ember loads torch.save checkpoints"
                            : "not a torch.save checkpoint");
    return found;
  }

  // Turns a dict key into its part of a dotted name.
  std::string key_text(uint32_t id) const {
    const Node& n = prog_.nodes[id];
    switch (n.kind) {
      case Kind::string:
        return n.text;
      case Kind::integer:
        return std::to_string(n.integer);
      case Kind::boolean:
        return n.integer ? "True" : "False";
      case Kind::none:
        return "None";
      default:
        EMBER_FAIL(source_, ": unsupported dict key of type ", pickle::kind_name(n.kind));
    }
  }

  static std::string join(const std::string& prefix, const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
  }

  void flatten(uint32_t id, const std::string& name, int depth) {
    EMBER_CHECK(depth <= kMaxNesting, source_, ": '", name, "' nests deeper than ", kMaxNesting, " levels");
    EMBER_CHECK(visit_budget_-- > 0, source_, ": the checkpoint's structure repeats shared parts too often");
    const Node& n = prog_.nodes[id];
    switch (n.kind) {
      case Kind::tensor:
        emit_tensor(name, prog_.tensors[static_cast<size_t>(n.integer)]);
        return;
      case Kind::none:
        on_value_(name, CheckpointValue{std::monostate{}});
        return;
      case Kind::boolean:
        on_value_(name, CheckpointValue{n.integer != 0});
        return;
      case Kind::integer:
        on_value_(name, CheckpointValue{n.integer});
        return;
      case Kind::floating:
        on_value_(name, CheckpointValue{n.floating});
        return;
      case Kind::string:
        on_value_(name, CheckpointValue{n.text});
        return;
      case Kind::bytes:
      case Kind::global:
      case Kind::storage:
        return;  // nothing a model needs
      case Kind::tuple:
      case Kind::list:
      case Kind::dict:
        break;
    }
    EMBER_CHECK(!on_path_[id], source_, ": '", name, "' contains itself");
    on_path_[id] = 1;
    // Copy: the callbacks below never touch the arena, but keep the loop independent of it.
    const std::vector<uint32_t> items = n.items;
    if (n.kind == Kind::dict) {
      // Python semantics for repeated keys: first position, last value.
      std::vector<std::pair<std::string, uint32_t>> effective;
      std::unordered_map<std::string, size_t> position;
      for (size_t i = 0; i + 1 < items.size(); i += 2) {
        std::string key = key_text(items[i]);
        auto [it, inserted] = position.emplace(key, effective.size());
        if (inserted)
          effective.emplace_back(std::move(key), items[i + 1]);
        else
          effective[it->second].second = items[i + 1];
      }
      for (const auto& [key, value] : effective) flatten(value, join(name, key), depth + 1);
    } else {
      for (size_t i = 0; i < items.size(); ++i) flatten(items[i], join(name, std::to_string(i)), depth + 1);
    }
    on_path_[id] = 0;
  }

  std::span<const std::byte> storage_bytes(uint32_t index) {
    const pickle::Storage& s = prog_.storages[index];
    const std::string entry_name = prefix_ + "data/" + s.key;
    const ZipEntry* entry = zip_.find(entry_name);
    EMBER_CHECK(entry != nullptr, source_, ": storage '", s.key, "' has no entry ", entry_name);
    uint64_t nbytes = 0;
    EMBER_CHECK(
        !__builtin_mul_overflow(uint64_t(s.numel), uint64_t(dtype_size(s.dtype)), &nbytes) && nbytes == entry->size,
        source_, ": storage '", s.key, "' declares ", s.numel, " elements of ", s.dtype, " but ", entry_name, " holds ",
        entry->size, " bytes");
    const bool verify = options_.verify_crc && verified_.insert(entry_name).second;
    return zip_.read(*entry, verify);
  }

  void emit_tensor(const std::string& name, const pickle::TensorView& view) {
    EMBER_CHECK(emitted_.insert(name).second, source_, ": two tensors flatten to the name '", name, "'");
    const pickle::Storage& storage = prog_.storages[view.storage];
    const DType dtype = storage.dtype;
    const size_t elem = dtype_size(dtype);
    int64_t numel = 1;
    for (int64_t s : view.sizes) numel *= s;  // the interpreter checked it for overflow
    uint64_t nbytes = 0;
    EMBER_CHECK(!__builtin_mul_overflow(uint64_t(numel), uint64_t(elem), &nbytes) && nbytes <= budget_, source_,
                ": tensor '", name, "' (", numel, " elements of ", dtype,
                ") exceeds what this file may allocate (views repeating a storage?)");
    budget_ -= nbytes;
    std::span<const std::byte> base = storage_bytes(view.storage);

    std::vector<std::byte> bytes(static_cast<size_t>(nbytes));
    if (numel > 0) {
      bool contiguous = true;
      int64_t expected = 1;
      for (size_t d = view.sizes.size(); d-- > 0;) {
        if (view.sizes[d] == 1) continue;
        contiguous &= view.strides[d] == expected;
        expected *= view.sizes[d];
      }
      if (contiguous) {
        std::memcpy(bytes.data(), base.data() + view.offset * int64_t(elem), bytes.size());
      } else {
        switch (elem) {
          case 1:
            gather<1>(base.data(), view, bytes.data());
            break;
          case 2:
            gather<2>(base.data(), view, bytes.data());
            break;
          case 4:
            gather<4>(base.data(), view, bytes.data());
            break;
          default:
            gather<8>(base.data(), view, bytes.data());
            break;
        }
      }
    }
    if (big_endian_ && elem > 1) {
      for (size_t i = 0; i < bytes.size(); i += elem) std::reverse(bytes.begin() + i, bytes.begin() + i + elem);
    }
    if (dtype == DType::boolean) normalize_bool_bytes(bytes);
    on_tensor_(name, TensorData(Shape(view.sizes), dtype, std::move(bytes)));
  }

  std::string_view source_;
  const PytorchDecodeOptions& options_;
  const std::function<void(const std::string&, TensorData&&)>& on_tensor_;
  const std::function<void(const std::string&, CheckpointValue&&)>& on_value_;
  ZipArchive zip_;
  std::string prefix_;
  bool big_endian_ = false;
  pickle::Program prog_;
  std::vector<uint8_t> on_path_;
  size_t visit_budget_ = 0;
  uint64_t budget_ = 0;
  std::unordered_set<std::string> verified_;
  std::unordered_set<std::string> emitted_;
};

}  // namespace

void decode_pytorch(std::span<const std::byte> file, std::string_view source, const PytorchDecodeOptions& options,
                    const std::function<void(const std::string&, TensorData&&)>& on_tensor,
                    const std::function<void(const std::string&, CheckpointValue&&)>& on_value) {
  if (!looks_like_zip(file)) {
    const bool legacy = file.size() >= 2 && file[0] == std::byte{0x80} && file[1] == std::byte{0x02};
    EMBER_FAIL(source, legacy ? ": the legacy torch.save format (PyTorch < 1.6) is not supported; load it in PyTorch "
                                "and save it again with torch.save"
                              : ": not a torch.save checkpoint (no zip signature)");
  }
  Decoder(file, source, options, on_tensor, on_value).run();
}

}  // namespace ember::store::detail
