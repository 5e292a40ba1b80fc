// The pickle interpreter's limits (white-box: src/store/pickle.hpp), which keep hostile
// programs from exhausting memory.
#include "pickle.hpp"

#include "store_test_util.hpp"

using namespace ember;
using namespace store_test;
namespace pickle = ember::store::detail::pickle;

namespace {
pickle::Program run(const std::string& bytes, const pickle::Limits& limits = {}) {
  return pickle::run(as_bytes(bytes), "test.pkl", limits);
}
}  // namespace

TEST(Pickle, RunsAStateDictProgram) {
  // {"a": [1, -2, 2**40, 0.5, True, None, "s"]}, the way protocol 2 writes it.
  PickleWriter w;
  w.op('}').str("a").op(']').op('(').integer(1).integer(-2).long1(int64_t(1) << 40);
  w.raw(bin("G\x3f\xe0\x00\x00\x00\x00\x00\x00")).op('\x88').op('N').str("s").op('e').op('s');
  pickle::Program p = run(w.done());
  const pickle::Node& root = p.nodes[p.root];
  ASSERT_EQ(root.kind, pickle::Kind::dict);
  ASSERT_EQ(root.items.size(), 2u);
  EXPECT_EQ(p.nodes[root.items[0]].text, "a");
  const pickle::Node& list = p.nodes[root.items[1]];
  ASSERT_EQ(list.items.size(), 7u);
  EXPECT_EQ(p.nodes[list.items[0]].integer, 1);
  EXPECT_EQ(p.nodes[list.items[1]].integer, -2);
  EXPECT_EQ(p.nodes[list.items[2]].integer, int64_t(1) << 40);
  EXPECT_EQ(p.nodes[list.items[3]].floating, 0.5);
  EXPECT_EQ(p.nodes[list.items[4]].kind, pickle::Kind::boolean);
  EXPECT_EQ(p.nodes[list.items[5]].kind, pickle::Kind::none);
  EXPECT_EQ(p.nodes[list.items[6]].text, "s");
}

TEST(Pickle, StackLimit) {
  pickle::Limits limits;
  limits.max_stack = 100;
  expect_error([&] { run(PickleWriter().raw(std::string(200, 'N')).done(), limits); },
               {"test.pkl", "NONE at byte 102", "stack exceeds 100"});
  expect_error([&] { run(PickleWriter().raw(std::string(200, '(')).done(), limits); }, {"MARK", "open MARKs"});
}

TEST(Pickle, MemoLimit) {
  pickle::Limits limits;
  limits.max_memo = 10;
  PickleWriter w;
  w.op('N');
  for (uint32_t i = 0; i < 20; ++i) {
    std::string put = "r";
    put32(put, i * 1000003u);
    w.raw(put);
  }
  expect_error([&] { run(w.done(), limits); }, {"LONG_BINPUT", "memo exceeds 10"});
  // Overwriting one entry again and again stays within the limit.
  PickleWriter same;
  same.op('N');
  for (int i = 0; i < 20; ++i) same.raw(bin("q\x07"));
  EXPECT_NO_THROW(run(same.done(), limits));
}

TEST(Pickle, ObjectLimit) {
  pickle::Limits limits;
  limits.max_nodes = 50;
  PickleWriter w;
  for (int i = 0; i < 60; ++i) w.op(']').op('0');  // EMPTY_LIST, POP
  w.op('N');
  expect_error([&] { run(w.done(), limits); }, {"EMPTY_LIST", "more than 50 objects"});
}

TEST(Pickle, MarksFenceTheStack) {
  // Opcodes after a MARK cannot pop what lies below it (as in CPython).
  expect_error([&] { run(PickleWriter().op('N').op('(').op('0').done()); }, {"POP at byte 4", "stack underflow"});
  EXPECT_NO_THROW(run(PickleWriter().op('N').op('(').op('1').done()));  // POP_MARK
}
