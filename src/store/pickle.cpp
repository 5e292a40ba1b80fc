#include "pickle.hpp"

#include "ember/core/bit.hpp"
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "ember/core/error.hpp"

namespace ember::store::detail::pickle {
namespace {

// Opcodes (the names of Python's Lib/pickletools.py), listed once.
// clang-format off
#define EMBER_PICKLE_OPCODES(X)                                                                          \
  X(MARK, '(') X(STOP, '.') X(POP, '0') X(POP_MARK, '1') X(DUP, '2') X(BINFLOAT, 'G') X(BININT, 'J')     \
  X(BININT1, 'K') X(BININT2, 'M') X(NONE, 'N') X(BINPERSID, 'Q') X(REDUCE, 'R') X(BINSTRING, 'T')        \
  X(SHORT_BINSTRING, 'U') X(BINUNICODE, 'X') X(BINBYTES, 'B') X(SHORT_BINBYTES, 'C') X(APPEND, 'a')      \
  X(BUILD, 'b') X(GLOBAL, 'c') X(DICT, 'd') X(APPENDS, 'e') X(BINGET, 'h') X(LONG_BINGET, 'j')           \
  X(LIST, 'l') X(BINPUT, 'q') X(LONG_BINPUT, 'r') X(SETITEM, 's') X(TUPLE, 't') X(SETITEMS, 'u')         \
  X(EMPTY_DICT, '}') X(EMPTY_LIST, ']') X(EMPTY_TUPLE, ')') X(PROTO, 0x80) X(NEWOBJ, 0x81)               \
  X(TUPLE1, 0x85) X(TUPLE2, 0x86) X(TUPLE3, 0x87) X(NEWTRUE, 0x88) X(NEWFALSE, 0x89) X(LONG1, 0x8a)      \
  X(LONG4, 0x8b) X(SHORT_BINUNICODE, 0x8c) X(BINUNICODE8, 0x8d) X(BINBYTES8, 0x8e) X(STACK_GLOBAL, 0x93) \
  X(MEMOIZE, 0x94) X(FRAME, 0x95)

enum Opcode : uint8_t {
#define EMBER_OPCODE_ENUM(name, code) name = code,
  EMBER_PICKLE_OPCODES(EMBER_OPCODE_ENUM)
#undef EMBER_OPCODE_ENUM
};

std::string opcode_name(uint8_t op) {
  switch (op) {
#define EMBER_OPCODE_CASE(name, code) case name: return #name;
    EMBER_PICKLE_OPCODES(EMBER_OPCODE_CASE)
#undef EMBER_OPCODE_CASE
  }
  // clang-format on
  std::ostringstream os;
  os << "opcode 0x" << std::hex << int(op);
  if (op >= 0x20 && op < 0x7f) os << " ('" << char(op) << "')";
  return os.str();
}

// The globals a state dict needs; anything else is refused.
enum class Global {
  ordered_dict,
  rebuild_tensor_v2,
  rebuild_tensor,
  rebuild_parameter,
  rebuild_parameter_with_state,
  storage_type
};

struct StorageClass {
  std::string_view name;
  DType dtype;
};
constexpr StorageClass kStorageClasses[] = {
    {"FloatStorage", DType::f32},     {"DoubleStorage", DType::f64}, {"HalfStorage", DType::f16},
    {"BFloat16Storage", DType::bf16}, {"LongStorage", DType::i64},   {"IntStorage", DType::i32},
    {"ShortStorage", DType::i16},     {"CharStorage", DType::i8},    {"ByteStorage", DType::u8},
    {"BoolStorage", DType::boolean},
};

std::optional<DType> storage_dtype(std::string_view qualified) {
  // torch.FloatStorage; checkpoints of CUDA tensors from torch < 1.13 say torch.cuda.FloatStorage.
  std::string_view name;
  if (qualified.starts_with("torch.cuda."))
    name = qualified.substr(11);
  else if (qualified.starts_with("torch."))
    name = qualified.substr(6);
  else
    return std::nullopt;
  for (const auto& c : kStorageClasses)
    if (c.name == name) return c.dtype;
  return std::nullopt;
}

std::optional<Global> find_global(std::string_view qualified) {
  if (qualified == "collections.OrderedDict") return Global::ordered_dict;
  if (qualified == "torch._utils._rebuild_tensor_v2") return Global::rebuild_tensor_v2;
  if (qualified == "torch._utils._rebuild_tensor") return Global::rebuild_tensor;
  if (qualified == "torch._utils._rebuild_parameter") return Global::rebuild_parameter;
  if (qualified == "torch._utils._rebuild_parameter_with_state") return Global::rebuild_parameter_with_state;
  if (storage_dtype(qualified)) return Global::storage_type;
  return std::nullopt;
}

constexpr size_t kMaxRank = 64;
constexpr size_t kMaxGlobalName = 256;

class Machine {
 public:
  Machine(std::span<const std::byte> bytes, std::string_view source, const Limits& limits)
      : in_(bytes), source_(source), limits_(limits) {}

  Program run() {
    none_ = make(Kind::none);
    true_ = make(Kind::boolean, 1);
    false_ = make(Kind::boolean, 0);
    while (pos_ < in_.size()) {
      op_pos_ = pos_;
      op_ = u8();
      if (op_ == STOP) {
        prog_.root = pop();
        return std::move(prog_);
      }
      step();
    }
    op_pos_ = pos_;
    op_ = STOP;
    fail("the data ends without a STOP opcode (truncated pickle)");
  }

 private:
  template <class... Args>
  [[noreturn]] void fail(const Args&... args) const {
    EMBER_FAIL(source_, ": pickle: ", opcode_name(op_), " at byte ", op_pos_, ": ", args...);
  }

  // ---- input ----
  const std::byte* take(uint64_t n) {
    if (n > in_.size() - pos_) fail("needs ", n, " bytes but only ", in_.size() - pos_, " remain (truncated)");
    const std::byte* p = in_.data() + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  template <class T>
  T read_le() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  uint8_t u8() { return read_le<uint8_t>(); }
  std::string read_text(uint64_t n) {
    if (n > limits_.max_string) fail("string of ", n, " bytes exceeds the limit of ", limits_.max_string);
    const std::byte* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
  }
  std::string read_line() {
    std::string line;
    for (;;) {
      char c = static_cast<char>(u8());
      if (c == '\n') return line;
      if (line.size() >= kMaxGlobalName) fail("global name longer than ", kMaxGlobalName, " bytes");
      line += c;
    }
  }

  // ---- arena and stack ----
  uint32_t make(Kind kind, int64_t integer = 0) {
    if (prog_.nodes.size() >= limits_.max_nodes) fail("more than ", limits_.max_nodes, " objects");
    Node n;
    n.kind = kind;
    n.integer = integer;
    prog_.nodes.push_back(std::move(n));
    return static_cast<uint32_t>(prog_.nodes.size() - 1);
  }
  uint32_t make_text(Kind kind, std::string text) {
    uint32_t id = make(kind);
    prog_.nodes[id].text = std::move(text);
    return id;
  }
  uint32_t make_container(Kind kind, std::vector<uint32_t> items) {
    uint32_t id = make(kind);
    prog_.nodes[id].items = std::move(items);
    return id;
  }
  Node& node(uint32_t id) { return prog_.nodes[id]; }

  size_t fence() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(uint32_t id) {
    if (stack_.size() >= limits_.max_stack) fail("the stack exceeds ", limits_.max_stack, " entries");
    stack_.push_back(id);
  }
  uint32_t pop() {
    if (stack_.size() <= fence()) fail("stack underflow");
    uint32_t id = stack_.back();
    stack_.pop_back();
    return id;
  }
  uint32_t top() {
    if (stack_.size() <= fence()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<uint32_t> pop_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    const size_t k = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(k), stack_.end());
    stack_.resize(k);
    return items;
  }
  void memo_put(uint64_t index) {
    uint32_t value = top();
    auto it = memo_.find(index);
    if (it != memo_.end()) {
      it->second = value;
      return;
    }
    if (memo_.size() >= limits_.max_memo) fail("the memo exceeds ", limits_.max_memo, " entries");
    memo_.emplace(index, value);
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry ", index, " was never stored");
    push(it->second);
  }

  Node& expect(uint32_t id, Kind kind, const char* what) {
    Node& n = node(id);
    if (n.kind != kind) fail(what, " must be of type ", kind_name(kind), ", got ", kind_name(n.kind));
    return n;
  }
  int64_t expect_int(uint32_t id, const char* what) { return expect(id, Kind::integer, what).integer; }
  const std::vector<uint32_t>& expect_sequence(uint32_t id, const char* what) {
    Node& n = node(id);
    if (n.kind != Kind::tuple && n.kind != Kind::list) fail(what, " must be of type tuple, got ", kind_name(n.kind));
    return n.items;
  }

  // ---- globals ----
  void push_global(const std::string& module, const std::string& name) {
    std::string qualified = module + "." + name;
    if (!find_global(qualified))
      fail("unsupported global '", qualified,
           "' (ember loads tensors, dicts, lists and numbers; other Python objects need PyTorch)");
    push(make_text(Kind::global, std::move(qualified)));
  }

  uint32_t call(uint32_t callable, const std::vector<uint32_t>& args) {
    const std::string name = expect(callable, Kind::global, "the callable").text;
    const Global g = *find_global(name);
    auto arity = [&](size_t lo, size_t hi) {
      if (args.size() < lo || args.size() > hi)
        fail(name, " takes ", lo, lo == hi ? std::string() : " to " + std::to_string(hi), " arguments, got ",
             args.size());
    };
    switch (g) {
      case Global::ordered_dict: {
        arity(0, 1);
        std::vector<uint32_t> items;
        if (args.size() == 1) {
          for (uint32_t pair : expect_sequence(args[0], "OrderedDict's argument")) {
            const auto& kv = expect_sequence(pair, "an OrderedDict item");
            if (kv.size() != 2) fail("an OrderedDict item must be a (key, value) pair");
            items.push_back(kv[0]);
            items.push_back(kv[1]);
          }
        }
        return make_container(Kind::dict, std::move(items));
      }
      case Global::rebuild_tensor_v2:
        arity(6, 7);
        return rebuild_tensor(args);
      case Global::rebuild_tensor:
        arity(4, 4);
        return rebuild_tensor(args);
      case Global::rebuild_parameter:
      case Global::rebuild_parameter_with_state:
        arity(g == Global::rebuild_parameter ? 3 : 4, g == Global::rebuild_parameter ? 3 : 4);
        expect(args[0], Kind::tensor, "the parameter's data");
        return args[0];
      case Global::storage_type:
        fail("'", name, "' cannot be called");
    }
    fail("unreachable");
  }

  std::vector<int64_t> int_tuple(uint32_t id, const char* what) {
    const auto& items = expect_sequence(id, what);
    if (items.size() > kMaxRank) fail(what, " has ", items.size(), " dimensions (limit ", kMaxRank, ")");
    std::vector<int64_t> out;
    for (uint32_t item : items) {
      int64_t v = expect_int(item, what);
      if (v < 0) fail(what, " holds a negative value ", v);
      out.push_back(v);
    }
    return out;
  }

  uint32_t rebuild_tensor(const std::vector<uint32_t>& args) {
    const Node& storage_node = expect(args[0], Kind::storage, "the tensor's storage");
    const Storage& storage = prog_.storages[static_cast<size_t>(storage_node.integer)];
    TensorView view;
    view.storage = static_cast<uint32_t>(storage_node.integer);
    view.offset = expect_int(args[1], "the storage offset");
    view.sizes = int_tuple(args[2], "the tensor's size");
    view.strides = int_tuple(args[3], "the tensor's stride");
    if (view.offset < 0) fail("negative storage offset ", view.offset);
    if (view.sizes.size() != view.strides.size())
      fail("size has ", view.sizes.size(), " dimensions but stride has ", view.strides.size());
    // The view must stay inside its storage (overflow-safe).
    int64_t numel = 1, last = view.offset;
    bool overflow = false, empty = false;
    for (size_t d = 0; d < view.sizes.size(); ++d) {
      empty |= view.sizes[d] == 0;
      if (view.sizes[d] == 0) continue;
      int64_t reach = 0;
      overflow |= __builtin_mul_overflow(numel, view.sizes[d], &numel);
      overflow |= __builtin_mul_overflow(view.sizes[d] - 1, view.strides[d], &reach);
      overflow |= __builtin_add_overflow(last, reach, &last);
    }
    if (overflow)
      fail("tensor of size ", shape_text(view.sizes), " and stride ", shape_text(view.strides),
           " overflows 64-bit indexing");
    if (!empty && last >= storage.numel)
      fail("tensor view (offset ", view.offset, ", size ", shape_text(view.sizes), ", stride ",
           shape_text(view.strides), ") reaches element ", last, " of storage '", storage.key, "' which has ",
           storage.numel, " elements");
    prog_.tensors.push_back(std::move(view));
    return make(Kind::tensor, static_cast<int64_t>(prog_.tensors.size() - 1));
  }

  static std::string shape_text(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  }

  uint32_t persistent_load(uint32_t pid) {
    const auto& t = expect_sequence(pid, "a persistent id");
    if (t.size() != 5)
      fail("a persistent id must be ('storage', type, key, location, numel), got ", t.size(), " items");
    if (node(t[0]).kind != Kind::string || node(t[0]).text != "storage")
      fail("unsupported persistent id (only 'storage' is known)");
    const std::string& type = expect(t[1], Kind::global, "the storage type").text;
    std::optional<DType> dtype = storage_dtype(type);
    if (!dtype) fail("'", type, "' is not a storage type");
    Storage s;
    s.dtype = *dtype;
    const Node& key = node(t[2]);
    if (key.kind == Kind::string)
      s.key = key.text;
    else if (key.kind == Kind::integer)
      s.key = std::to_string(key.integer);
    else
      fail("the storage key must be a string, got a ", kind_name(key.kind));
    if (s.key.empty() || s.key.find('/') != std::string::npos || s.key == "." || s.key == "..")
      fail("invalid storage key '", s.key, "'");
    expect(t[3], Kind::string, "the storage location");
    s.numel = expect_int(t[4], "the storage size");
    if (s.numel < 0) fail("negative storage size ", s.numel);
    prog_.storages.push_back(std::move(s));
    return make(Kind::storage, static_cast<int64_t>(prog_.storages.size() - 1));
  }

  int64_t read_long(uint64_t n) {
    if (n > 8) fail("integer of ", n, " bytes does not fit in 64 bits");
    const std::byte* p = take(n);
    if (n == 0) return 0;
    uint64_t v = 0;
    for (uint64_t i = 0; i < n; ++i) v |= uint64_t(std::to_integer<uint8_t>(p[i])) << (8 * i);
    if (n < 8 && (std::to_integer<uint8_t>(p[n - 1]) & 0x80)) v |= ~uint64_t(0) << (8 * n);  // sign-extend
    return static_cast<int64_t>(v);
  }

  void step() {
    switch (op_) {
      case PROTO: {
        uint8_t version = u8();
        if (version > 5) fail("unsupported protocol ", int(version));
        break;
      }
      case FRAME: {
        uint64_t n = read_le<uint64_t>();
        if (n > in_.size() - pos_) fail("frame of ", n, " bytes runs past the end of the data");
        break;
      }
      case MARK:
        if (marks_.size() >= limits_.max_stack) fail("more than ", limits_.max_stack, " open MARKs");
        marks_.push_back(stack_.size());
        break;
      case POP:
        pop();
        break;
      case POP_MARK:
        pop_mark();
        break;
      case DUP:
        push(top());
        break;
      case NONE:
        push(none_);
        break;
      case NEWTRUE:
        push(true_);
        break;
      case NEWFALSE:
        push(false_);
        break;
      case BININT:
        push(make(Kind::integer, read_le<int32_t>()));
        break;
      case BININT1:
        push(make(Kind::integer, u8()));
        break;
      case BININT2:
        push(make(Kind::integer, read_le<uint16_t>()));
        break;
      case LONG1:
        push(make(Kind::integer, read_long(u8())));
        break;
      case LONG4: {
        int32_t n = read_le<int32_t>();
        if (n < 0) fail("negative length ", n);
        push(make(Kind::integer, read_long(static_cast<uint64_t>(n))));
        break;
      }
      case BINFLOAT: {
        uint64_t bits = __builtin_bswap64(read_le<uint64_t>());  // big-endian on the wire
        uint32_t id = make(Kind::floating);
        node(id).floating = ember::bit_cast<double>(bits);
        push(id);
        break;
      }
      case SHORT_BINUNICODE:
        push(make_text(Kind::string, read_text(u8())));
        break;
      case BINUNICODE:
        push(make_text(Kind::string, read_text(read_le<uint32_t>())));
        break;
      case BINUNICODE8:
        push(make_text(Kind::string, read_text(read_le<uint64_t>())));
        break;
      case SHORT_BINSTRING:
        push(make_text(Kind::string, read_text(u8())));
        break;
      case BINSTRING: {
        int32_t n = read_le<int32_t>();
        if (n < 0) fail("negative length ", n);
        push(make_text(Kind::string, read_text(static_cast<uint64_t>(n))));
        break;
      }
      case SHORT_BINBYTES:
        push(make_text(Kind::bytes, read_text(u8())));
        break;
      case BINBYTES:
        push(make_text(Kind::bytes, read_text(read_le<uint32_t>())));
        break;
      case BINBYTES8:
        push(make_text(Kind::bytes, read_text(read_le<uint64_t>())));
        break;
      case EMPTY_DICT:
        push(make(Kind::dict));
        break;
      case EMPTY_LIST:
        push(make(Kind::list));
        break;
      case EMPTY_TUPLE:
        push(make(Kind::tuple));
        break;
      case TUPLE:
        push(make_container(Kind::tuple, pop_mark()));
        break;
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        const size_t n = size_t(op_ - TUPLE1 + 1);
        std::vector<uint32_t> items(n);
        for (size_t i = n; i-- > 0;) items[i] = pop();
        push(make_container(Kind::tuple, std::move(items)));
        break;
      }
      case LIST:
        push(make_container(Kind::list, pop_mark()));
        break;
      case APPEND: {
        uint32_t value = pop();
        expect(top(), Kind::list, "APPEND's target").items.push_back(value);
        break;
      }
      case APPENDS: {
        std::vector<uint32_t> values = pop_mark();
        auto& items = expect(top(), Kind::list, "APPENDS's target").items;
        items.insert(items.end(), values.begin(), values.end());
        break;
      }
      case DICT: {
        std::vector<uint32_t> items = pop_mark();
        if (items.size() % 2) fail("odd number of items (", items.size(), ") for keys and values");
        push(make_container(Kind::dict, std::move(items)));
        break;
      }
      case SETITEM: {
        uint32_t value = pop();
        uint32_t key = pop();
        auto& items = expect(top(), Kind::dict, "SETITEM's target").items;
        items.push_back(key);
        items.push_back(value);
        break;
      }
      case SETITEMS: {
        std::vector<uint32_t> kv = pop_mark();
        if (kv.size() % 2) fail("odd number of items (", kv.size(), ") for keys and values");
        auto& items = expect(top(), Kind::dict, "SETITEMS's target").items;
        items.insert(items.end(), kv.begin(), kv.end());
        break;
      }
      case BINPUT:
        memo_put(u8());
        break;
      case LONG_BINPUT:
        memo_put(read_le<uint32_t>());
        break;
      case MEMOIZE:
        memo_put(memo_.size());
        break;
      case BINGET:
        memo_get(u8());
        break;
      case LONG_BINGET:
        memo_get(read_le<uint32_t>());
        break;
      case GLOBAL: {
        std::string module = read_line();
        std::string name = read_line();
        push_global(module, name);
        break;
      }
      case STACK_GLOBAL: {
        uint32_t name = pop();
        uint32_t module = pop();
        push_global(expect(module, Kind::string, "STACK_GLOBAL's module").text,
                    expect(name, Kind::string, "STACK_GLOBAL's name").text);
        break;
      }
      case REDUCE: {
        uint32_t args = pop();
        uint32_t callable = pop();
        // A copy: calling may grow the arena and move the nodes.
        std::vector<uint32_t> items = expect(args, Kind::tuple, "REDUCE's arguments").items;
        push(call(callable, items));
        break;
      }
      case NEWOBJ: {
        uint32_t args = pop();
        uint32_t cls = pop();
        expect(args, Kind::tuple, "NEWOBJ's arguments");
        const std::string& name = expect(cls, Kind::global, "NEWOBJ's class").text;
        if (find_global(name) != Global::ordered_dict) fail("cannot create an object of '", name, "'");
        push(make(Kind::dict));
        break;
      }
      case BUILD: {
        pop();  // the state: an OrderedDict's attributes (state_dict()._metadata), a tensor's extra state
        Kind target = node(top()).kind;
        if (target != Kind::dict && target != Kind::tensor) fail("cannot set the state of a ", kind_name(target));
        break;
      }
      case BINPERSID:
        push(persistent_load(pop()));
        break;
      default:
        fail("unsupported opcode (ember reads pickle protocols 2 to 4 as torch.save writes them)");
    }
  }

  std::span<const std::byte> in_;
  std::string_view source_;
  Limits limits_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  uint8_t op_ = 0;
  Program prog_;
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  uint32_t none_ = 0, true_ = 0, false_ = 0;
};

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::none:
      return "None";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::bytes:
      return "bytes";
    case Kind::tuple:
      return "tuple";
    case Kind::list:
      return "list";
    case Kind::dict:
      return "dict";
    case Kind::global:
      return "global";
    case Kind::storage:
      return "storage";
    case Kind::tensor:
      return "tensor";
  }
  return "?";
}

Program run(std::span<const std::byte> bytes, std::string_view source, const Limits& limits) {
  return Machine(bytes, source, limits).run();
}

}  // namespace ember::store::detail::pickle
