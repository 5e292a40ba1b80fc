// PyTorch checkpoints: files written by torch.save (expected values from torch.load), crafted
// archives for the view arithmetic, and one test per category of hostile input.
#include <variant>

#include "store_test_util.hpp"

using namespace ember;
using namespace ember::store;
using namespace store_test;

namespace {

void expect_values(const PytorchCheckpoint& ck, const json& want) {
  EXPECT_EQ(ck.values.size(), want.size());
  for (const auto& [name, v] : want.items()) {
    const CheckpointValue* got = ck.find_value(name);
    if (!got) {
      ADD_FAILURE() << "missing value '" << name << "'";
      continue;
    }
    if (v.is_null())
      EXPECT_TRUE(std::holds_alternative<std::monostate>(*got)) << name;
    else if (v.is_boolean())
      EXPECT_EQ(std::get<bool>(*got), v.get<bool>()) << name;
    else if (v.is_number_integer())
      EXPECT_EQ(std::get<int64_t>(*got), v.get<int64_t>()) << name;
    else if (v.is_number_float())
      EXPECT_EQ(std::get<double>(*got), v.get<double>()) << name;
    else
      EXPECT_EQ(std::get<std::string>(*got), v.get<std::string>()) << name;
  }
}

void expect_file(const std::string& name) {
  PytorchCheckpoint ck = load_pytorch_checkpoint(data_path(name));
  expect_tensors(ck.tensors, expected(name).at("tensors"));
  expect_values(ck, expected(name).at("values"));
}

PytorchCheckpoint load(const std::string& archive) { return load_pytorch_from_memory(as_bytes(archive), "crafted.pt"); }

void expect_archive_error(const std::string& archive, std::initializer_list<std::string> fragments) {
  std::vector<std::string> all(fragments);
  all.push_back("crafted.pt");
  try {
    load(archive);
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& frag : all) EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg;
  }
}

void expect_pickle_error(const std::string& pickle, std::initializer_list<std::string> fragments) {
  expect_archive_error(torch_archive(pickle, f32_bytes({1, 2, 3, 4, 5, 6})), fragments);
}

const std::string kSixFloats = f32_bytes({1, 2, 3, 4, 5, 6});

}  // namespace

// ---- files written by torch.save ----

TEST(Pytorch, EveryDtype) { expect_file("dtypes.pt"); }
TEST(Pytorch, ViewsOfSharedStorages) { expect_file("views.pt"); }
TEST(Pytorch, NestedCheckpoint) { expect_file("nested.pt"); }
TEST(Pytorch, PickleProtocol4) { expect_file("protocol4.pt"); }
TEST(Pytorch, Parameters) { expect_file("parameter.pt"); }
TEST(Pytorch, BareTensorIsNamedEmpty) {
  expect_file("tensor.pt");
  EXPECT_TRUE(load_pytorch(data_path("tensor.pt")).contains(""));
}
TEST(Pytorch, ArchiveWithoutZip64) { expect_file("python_zip.pt"); }  // rewritten by Python's zipfile
TEST(Pytorch, BigEndianArchive) { expect_file("big_endian.pt"); }

TEST(Pytorch, StateDictKeysAndDevice) {
  Device ad = Device::cpu().autodiff();
  TensorMap sd = load_pytorch(data_path("nested.pt"), ad);
  EXPECT_TRUE(sd.contains("model.0.weight"));
  EXPECT_TRUE(sd.contains("optimizer.state.0.momentum_buffer"));
  EXPECT_EQ(sd.at("model.1.num_batches_tracked").dtype(), DType::i64);
  EXPECT_EQ(sd.at("model.0.weight").device(), ad);
  // Pickle order: the model's entries come first, in state_dict order.
  EXPECT_EQ(sd.names().front(), "model.0.weight");
}

TEST(Pytorch, ConvertsToSafetensors) {
  TempDir dir;
  TensorMap sd = load_pytorch(data_path("views.pt"));
  save_safetensors(dir.file("views.safetensors"), sd);
  expect_tensors(load_safetensors(dir.file("views.safetensors")), expected("views.pt").at("tensors"));
}

TEST(Pytorch, CraftedViews) {
  // Hand-written pickles: the same six floats seen through different views.
  auto values = [](TensorSpec spec) { return load(torch_archive(tensor_pickle(spec), kSixFloats)).tensors.at("t"); };
  EXPECT_EQ(values({}).to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  TensorSpec transposed;
  transposed.sizes = {3, 2};
  transposed.strides = {1, 3};
  EXPECT_EQ(values(transposed).to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  TensorSpec tail;
  tail.offset = 4;
  tail.sizes = {2};
  tail.strides = {1};
  EXPECT_EQ(values(tail).to_vector<float>(), (std::vector<float>{5, 6}));
  TensorSpec broadcast;
  broadcast.sizes = {2, 3};
  broadcast.strides = {0, 2};
  EXPECT_EQ(values(broadcast).to_vector<float>(), (std::vector<float>{1, 3, 5, 1, 3, 5}));
  TensorSpec empty;
  empty.offset = 100;  // nothing is read from an empty view
  empty.sizes = {0, 3};
  EXPECT_EQ(values(empty).shape(), (Shape{0, 3}));
  TensorSpec seven_args;
  seven_args.nargs = 7;
  EXPECT_EQ(values(seven_args).numel(), 6);
}

// ---- hostile input, one test per category ----

TEST(PytorchHostile, NotATorchSaveFile) {
  expect_archive_error("hello world", {"not a torch.save checkpoint"});
  expect_archive_error(std::string("\x80\x02\x8a\x0a", 4), {"legacy"});
  expect_archive_error(zip_archive({{"archive/version", "3\n"}}), {"no <archive>/data.pkl"});
  expect_archive_error(zip_archive({{"m/constants.pkl", ""}, {"m/code/x.py", ""}}), {"TorchScript"});
  expect_archive_error(zip_archive({{"a/data.pkl", ""}, {"b/data.pkl", ""}}), {"two pickles"});
}

TEST(PytorchHostile, TruncatedFiles) {
  const std::string good = read_file(data_path("dtypes.pt"));
  for (size_t n = 0; n < good.size(); n += 7) EXPECT_THROW(load(good.substr(0, n)), Error) << n;
  expect_pickle_error(PickleWriter().str("abc").bytes(), {"without a STOP", "truncated"});
  expect_pickle_error(PickleWriter()
                          .raw(bin("X\xe8\x03\x00\x00"
                                   "abc"))
                          .done(),
                      {"BINUNICODE at byte 2", "truncated"});
}

TEST(PytorchHostile, CorruptBytesEverywhere) {
  // Every single-byte corruption either loads or gives an ember::Error (never a crash).
  const std::string good = read_file(data_path("nested.pt"));
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = char(bad[i] ^ 0x5a);
    try {
      load(bad);
    } catch (const Error&) {
    }
  }
  std::string bad = torch_archive(tensor_pickle({}), kSixFloats);
  bad[bad.find(kSixFloats) + 5] ^= 1;
  expect_archive_error(bad, {"archive/data/0", "corrupt", "CRC-32"});
}

TEST(PytorchHostile, CompressedEntries) {
  expect_error([] { load_pytorch(data_path("deflated.pt")); }, {"deflated.pt", "compressed (method 8)"});
}

TEST(PytorchHostile, BrokenZipStructure) {
  const std::string good = torch_archive(tensor_pickle({}), kSixFloats);
  const size_t eocd = good.size() - 22;
  std::string bad = good;
  bad[eocd + 19] = char(0x7f);  // central directory offset past the end
  expect_archive_error(bad, {"zip", "central directory", "past the end"});
  bad = good;
  const size_t central = good.find("PK\x01\x02");
  bad[central + 42] = char(0xee);  // local header offset past the end
  bad[central + 43] = char(0xee);
  expect_archive_error(bad, {"zip", "local file header", "past the end"});
  bad = good;
  bad[central + 24] = char(0xff);  // size past the end
  bad[central + 20] = char(0xff);
  bad[central + 25] = char(0xff);
  bad[central + 21] = char(0xff);
  expect_archive_error(bad, {"zip", "data of entry 'archive/data.pkl'", "past the end"});
  bad = good;
  bad[central + 8] = 1;  // encrypted
  expect_archive_error(bad, {"encrypted"});
  bad = good;
  bad[eocd + 10] = char(0x40);  // 64 entries claimed
  expect_archive_error(bad, {"zip"});
  expect_archive_error(zip_archive({{"archive/data.pkl", ""}, {"archive/data.pkl", ""}}), {"duplicate entry"});
}

TEST(PytorchHostile, UnknownOpcode) {
  expect_pickle_error(PickleWriter().raw("\xff").done(), {"unsupported opcode", "0xff", "at byte 2"});
  expect_pickle_error(PickleWriter().op('N').op('I').done(), {"opcode 0x49 ('I')", "at byte 3"});
  expect_pickle_error(std::string("\x80\x09N."), {"unsupported protocol 9"});
}

TEST(PytorchHostile, UnknownGlobal) {
  expect_pickle_error(PickleWriter().global("os", "system").done(), {"unsupported global 'os.system'", "at byte 2"});
  expect_pickle_error(PickleWriter().global("__torch__", "Net").done(), {"'__torch__.Net'"});
  expect_pickle_error(PickleWriter().str("builtins").str("eval").raw("\x93").done(),
                      {"STACK_GLOBAL at byte", "'builtins.eval'"});
  TensorSpec spec;
  spec.storage_type = "FloatTensor";
  expect_pickle_error(tensor_pickle(spec), {"'torch.FloatTensor'"});
}

TEST(PytorchHostile, StackMisuse) {
  expect_pickle_error(PickleWriter().op('t').done(), {"TUPLE at byte 2", "no MARK"});
  expect_pickle_error(PickleWriter().op('R').done(), {"REDUCE", "stack underflow"});
  expect_pickle_error(PickleWriter().op('N').op('(').op('a').done(), {"APPEND", "stack underflow"});
  expect_pickle_error(PickleWriter().raw("h\x05").done(), {"BINGET", "memo entry 5 was never stored"});
  expect_pickle_error(std::string("\x80\x02."), {"STOP", "stack underflow"});
  expect_pickle_error(PickleWriter().op('N').op('s').done(), {"SETITEM"});
}

TEST(PytorchHostile, HugeDeclaredLengths) {
  std::string p = PickleWriter().op('\x8d').bytes();  // BINUNICODE8 of 2^62 bytes
  put64(p, uint64_t(1) << 62);
  expect_pickle_error(p + ".", {"BINUNICODE8", "exceeds the limit"});
  expect_pickle_error(PickleWriter()
                          .raw("\x8a\x09"
                               "123456789")
                          .done(),
                      {"LONG1", "does not fit in 64 bits"});
  expect_pickle_error(PickleWriter().raw("T\xff\xff\xff\xff").done(), {"BINSTRING", "negative length"});
  expect_pickle_error(PickleWriter().raw(bin("\x95\xff\xff\xff\xff\xff\xff\xff\x00")).done(),
                      {"FRAME", "past the end"});
}

TEST(PytorchHostile, DeepNestingAndCycles) {
  // 100000 nested tuples: refused while flattening, no recursion into the C++ stack.
  expect_pickle_error(PickleWriter().op('N').raw(std::string(100000, '\x85')).done(), {"nests deeper"});
  // A list that contains itself.
  expect_pickle_error(PickleWriter().op(']').raw(bin("q\x00h\x00")).op('a').done(), {"contains itself"});
  // 64 levels of [x, x]: 2^64 paths through a small program.
  PickleWriter w;
  w.op(']');
  for (int i = 0; i < 64; ++i) w.raw(bin("q\x00(h\x00h\x00l"));
  expect_pickle_error(w.done(), {"repeats shared parts"});
}

TEST(PytorchHostile, HugeTensorSizes) {
  TensorSpec overflow;
  overflow.sizes = {int64_t(1) << 40, int64_t(1) << 40};
  overflow.strides = {1, 1};
  expect_pickle_error(tensor_pickle(overflow), {"REDUCE", "overflows 64-bit"});
  TensorSpec zero_strides;  // 2^40 elements from a 6-element storage
  zero_strides.sizes = {int64_t(1) << 20, int64_t(1) << 20};
  zero_strides.strides = {0, 0};
  expect_pickle_error(tensor_pickle(zero_strides), {"tensor 't'", "exceeds what this file may allocate"});
  TensorSpec huge_storage;
  huge_storage.numel = int64_t(1) << 62;
  expect_pickle_error(tensor_pickle(huge_storage), {"storage '0' declares 4611686018427387904 elements"});
}

TEST(PytorchHostile, ViewOutsideStorage) {
  TensorSpec spec;
  spec.offset = 4;
  expect_pickle_error(tensor_pickle(spec), {"REDUCE", "reaches element 9", "6 elements"});
  spec = {};
  spec.offset = -1;
  expect_pickle_error(tensor_pickle(spec), {"negative storage offset"});
  spec = {};
  spec.strides = {3, -1};
  expect_pickle_error(tensor_pickle(spec), {"negative value -1"});
  spec = {};
  spec.strides = {3};
  expect_pickle_error(tensor_pickle(spec), {"size has 2 dimensions but stride has 1"});
}

TEST(PytorchHostile, StorageSizeDoesNotMatchEntry) {
  TensorSpec spec;
  spec.numel = 10;
  expect_pickle_error(tensor_pickle(spec), {"storage '0' declares 10 elements of f32", "holds 24 bytes"});
  spec = {};
  spec.storage_type = "DoubleStorage";  // 6 doubles need 48 bytes
  expect_pickle_error(tensor_pickle(spec), {"declares 6 elements of f64", "holds 24 bytes"});
  spec = {};
  spec.key = "7";
  expect_pickle_error(tensor_pickle(spec), {"storage '7' has no entry archive/data/7"});
  spec.key = "../0";
  expect_pickle_error(tensor_pickle(spec), {"invalid storage key"});
}

TEST(PytorchHostile, WrongWireTypes) {
  TensorSpec spec;
  spec.offset_pickle =
      bin("X\x01\x00\x00\x00"
          "0");  // the offset as a string
  expect_pickle_error(tensor_pickle(spec), {"the storage offset must be of type int, got str"});
  spec = {};
  spec.nargs = 5;
  expect_pickle_error(tensor_pickle(spec), {"_rebuild_tensor_v2 takes 6 to 7 arguments, got 5"});
  expect_pickle_error(PickleWriter().op('N').op('N').op('R').done(), {"REDUCE", "must be of type tuple, got None"});
  expect_pickle_error(PickleWriter().op('N').op(')').op('R').done(), {"callable must be of type global"});
  expect_pickle_error(PickleWriter().op('(').str("storage").op('t').op('Q').done(), {"BINPERSID", "persistent id"});
  expect_pickle_error(PickleWriter().op('}').op(']').op('N').op('s').done(), {"unsupported dict key of type list"});
  expect_pickle_error(PickleWriter().op('N').op('N').op('b').done(), {"BUILD", "None"});
}
