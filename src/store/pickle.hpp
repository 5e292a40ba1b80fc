// A restricted pickle virtual machine (internal) for the data.pkl of torch.save archives.
//
// It runs the opcodes of protocols 2-4 that state dicts use and knows a fixed list of globals
// (collections.OrderedDict, torch._utils._rebuild_tensor_v2 and friends, the torch.*Storage
// classes); nothing is ever imported or executed. Objects live in an arena (`nodes`) and refer
// to each other by index, so hostile programs cannot leak memory through cycles or overflow the
// C++ stack when the result is destroyed. The stack, the memo, the arena and the input are
// bounded; every problem is an ember::Error naming the opcode (or global) and its byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/dtype.hpp"

namespace ember::store::detail::pickle {

enum class Kind : uint8_t {
  none,
  boolean,
  integer,
  floating,
  string,
  bytes,
  tuple,
  list,
  dict,
  global,
  storage,
  tensor
};

struct Storage {  // a persistent id ('storage', torch.FloatStorage, key, location, numel)
  DType dtype;
  std::string key;
  int64_t numel;
};

struct TensorView {  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)
  uint32_t storage;  // node index of a Kind::storage node
  int64_t offset;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

struct Node {
  Kind kind = Kind::none;
  int64_t integer = 0;  // integer/boolean value; index into storages/tensors
  double floating = 0;
  std::string text;             // string/bytes value; global "module.name"
  std::vector<uint32_t> items;  // tuple/list items; dict keys and values interleaved
};

struct Limits {
  size_t max_nodes = size_t(1) << 23;
  size_t max_stack = size_t(1) << 20;
  size_t max_memo = size_t(1) << 22;
  size_t max_string = size_t(1) << 30;
};

struct Program {
  std::vector<Node> nodes;
  std::vector<Storage> storages;
  std::vector<TensorView> tensors;
  uint32_t root = 0;
};

// Runs `bytes` up to STOP; `source` names the file in errors.
Program run(std::span<const std::byte> bytes, std::string_view source, const Limits& limits = {});

const char* kind_name(Kind k);

}  // namespace ember::store::detail::pickle
