#include "store_test_util.hpp"

using namespace ember;
using namespace ember::store;
using namespace store_test;

TEST(TensorMap, KeepsOrderAndFindsByName) {
  TensorMap m{{"b", DynTensor::ones(Shape{1})}, {"a", DynTensor::zeros(Shape{2})}};
  m.insert("c", DynTensor::ones(Shape{3}));
  EXPECT_EQ(m.names(), (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(m.at("a").numel(), 2);
  EXPECT_EQ(m.find("zz"), nullptr);
  expect_error([&] { m.at("zz"); }, {"'zz'", "3 tensors", "'b'"});
  expect_error([&] { m.insert("a", DynTensor::ones(Shape{1})); }, {"duplicate", "'a'"});
  m.insert_or_assign("a", DynTensor::ones(Shape{5}));
  EXPECT_EQ(m.at("a").numel(), 5);
  EXPECT_EQ(m.names()[1], "a");
  EXPECT_TRUE(m.erase("b"));
  EXPECT_FALSE(m.erase("b"));
  EXPECT_EQ(m.names(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(m.at("c").numel(), 3);
}

TEST(TensorMap, RenamePrefix) {
  TensorMap m{{"module.fc.weight", DynTensor::ones(Shape{1})},
              {"module.fc.bias", DynTensor::ones(Shape{1})},
              {"step", DynTensor::ones(Shape{})}};
  m.rename_prefix("module.", "");
  EXPECT_EQ(m.names(), (std::vector<std::string>{"fc.weight", "fc.bias", "step"}));
  EXPECT_TRUE(m.contains("fc.bias"));
  TensorMap clash{{"a.x", DynTensor::ones(Shape{1})}, {"b.x", DynTensor::ones(Shape{1})}};
  expect_error([&] { clash.rename_prefix("a.", "b."); }, {"'b.x'"});
  EXPECT_TRUE(clash.contains("a.x"));  // unchanged after the error
}
