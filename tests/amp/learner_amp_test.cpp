// Mixed precision in the Learner: LearnerBuilder::mixed_precision runs the steps under autocast,
// f16 goes through a GradScaler whose scale the renderers show and whose state checkpoints keep.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>

#include "../train/tiny_problem.hpp"
#include "ember/amp.hpp"
#include "ember/nn/file.hpp"
#include "ember/train/renderer.hpp"

namespace ember {
namespace {

namespace fs = std::filesystem;
using tiny::Batch;
using tiny::Model;

struct StepValues final : train::Renderer {
  std::vector<double> loss_scales;
  int train_updates = 0;
  void update(const train::ProgressView& p) override {
    if (p.split != train::Split::train) return;
    ++train_updates;
    for (const auto& [n, v] : p.step_values)
      if (n == "loss_scale") loss_scales.push_back(v);
  }
};

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("ember_amp_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

TEST(LearnerAmp, Bf16RunsTheStepsUnderAutocastWithoutAScaler) {
  Device dev = tiny::device();
  tiny::Loader train{tiny::blobs(300, 1), 32, 7, dev};
  tiny::Loader valid{tiny::blobs(90, 2), 30, 8, dev};
  std::optional<DType> seen_train, seen_valid;
  DType logits_dtype = DType::f32;
  auto step = [&](Model& m, const Batch& b) {
    seen_train = amp::autocast_dtype();
    DynTensor logits = m.forward(b.x);
    logits_dtype = logits.dtype();
    DynTensor loss = nn::cross_entropy(logits, b.y);
    return train::TrainStepResult{{loss, logits, b.y}, loss.backward()};
  };
  auto vstep = [&](const Model& m, const Batch& b) {
    seen_valid = amp::autocast_dtype();
    return tiny::valid_step()(m, b);
  };
  auto rec = std::make_shared<StepValues>();
  auto learner = train::LearnerBuilder<Model, Batch>(tiny::make_model(3), step, vstep)
                     .lr(0.1)
                     .epochs(3)
                     .renderer(rec)
                     .mixed_precision(DType::bf16)
                     .build();
  Model m = learner.fit(train, valid);
  EXPECT_EQ(seen_train, DType::bf16);
  EXPECT_EQ(seen_valid, DType::bf16);
  EXPECT_EQ(logits_dtype, DType::bf16);
  EXPECT_FALSE(amp::autocast_enabled());  // only inside the steps
  EXPECT_EQ(learner.grad_scaler(), nullptr);
  EXPECT_TRUE(rec->loss_scales.empty());
  EXPECT_EQ(m.fc.weight.value().dtype(), DType::f32);
  EXPECT_GT(*learner.history().epoch_value(2, train::Split::valid, "accuracy"), 0.9);
}

TEST(LearnerAmp, F16UsesAGradScalerShowsItsScaleAndCheckpointsIt) {
  Device dev = tiny::device();
  tiny::Loader train{tiny::blobs(300, 1), 32, 7, dev};
  tiny::Loader valid{tiny::blobs(90, 2), 30, 8, dev};
  fs::path dir = fresh_dir("f16_learner");
  auto step = [](Model& m, const Batch& b) {
    DynTensor logits = m.forward(b.x);
    EXPECT_EQ(logits.dtype(), DType::f16);
    DynTensor loss = nn::cross_entropy(logits, b.y);
    return train::TrainStepResult{{loss, logits, b.y}, amp::scale_loss(loss).backward()};
  };
  auto rec = std::make_shared<StepValues>();
  auto learner = train::LearnerBuilder<Model, Batch>(tiny::make_model(3), step, tiny::valid_step())
                     .lr(0.1)
                     .epochs(3)
                     .renderer(rec)
                     .run_dir(dir.string())
                     .checkpoints({.keep_last = 1})
                     .mixed_precision(DType::f16, amp::GradScalerConfig{.init_scale = 1024, .growth_interval = 4})
                     .build();
  learner.fit(train, valid);
  ASSERT_NE(learner.grad_scaler(), nullptr);
  ASSERT_EQ(rec->loss_scales.size(), 30u);  // one per optimizer step
  EXPECT_EQ(rec->loss_scales.front(), 1024.0);
  EXPECT_EQ(rec->loss_scales[3], 2048.0);  // grown after 4 clean steps
  EXPECT_EQ(rec->loss_scales.back(), learner.grad_scaler()->get_scale());
  EXPECT_GT(*learner.history().epoch_value(2, train::Split::valid, "accuracy"), 0.9);
  // the checkpoint holds the scaler, and a resumed run starts from its scale
  auto ck = train::latest_checkpoint((dir / "checkpoints").string());
  ASSERT_TRUE(ck);
  auto state = nn::read_tensors(ck->path + "/grad_scaler.safetensors", Device::cpu());
  auto scale = std::find_if(state.begin(), state.end(), [](const auto& kv) { return kv.first == "scale"; });
  ASSERT_NE(scale, state.end());
  EXPECT_EQ(scale->second.item(), learner.grad_scaler()->get_scale());
  auto resumed = train::LearnerBuilder<Model, Batch>(tiny::make_model(4), step, tiny::valid_step())
                     .lr(0.1)
                     .epochs(3)
                     .renderer(train::RendererKind::none)
                     .resume_from(ck->path)
                     .mixed_precision(DType::f16)
                     .build();
  resumed.fit(train, valid);
  EXPECT_EQ(resumed.grad_scaler()->get_scale(), learner.grad_scaler()->get_scale());
  EXPECT_EQ(resumed.grad_scaler()->growth_tracker(), learner.grad_scaler()->growth_tracker());
  fs::remove_all(dir);
}

TEST(LearnerAmp, RenderersNameAndFormatTheLossScale) {
  EXPECT_EQ(train::display_name("loss_scale"), "loss scale");
  EXPECT_EQ(train::format_metric("loss_scale", 65536), "65536");
  EXPECT_EQ(train::format_metric("loss_scale", 0.5), "0.5");
}

TEST(LearnerAmp, IntegerMixedPrecisionIsAnError) {
  train::LearnerBuilder<Model, Batch> b(tiny::make_model(1), tiny::train_step());
  try {
    b.mixed_precision(DType::i32);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("i32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mixed_precision"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
