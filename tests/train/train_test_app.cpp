// A helper program of ember_train_tests (not a test itself):
//   train_test_app dashboard <run_dir> [auto|plain|dashboard [epochs [f16]]]
//                                              trains the tiny problem slowly under the dashboard
//                                              (driven by the tests through tmux), or another renderer;
//                                              f16: with mixed precision and a GradScaler
//   train_test_app checkpoint-loop <dir>      writes checkpoints in a loop until killed; checkpoint
//                                              i holds a tensor of 2^20 floats all equal to i
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "ember/nn/file.hpp"
#include "ember/train/checkpoint.hpp"
#include "tiny_problem.hpp"

using namespace ember;

static int dashboard(const std::string& run_dir, const std::string& kind, int64_t epochs, bool f16) {
  Device dev = tiny::device();
  tiny::Loader train_loader(tiny::blobs(600, 1), 16, 7, dev), valid_loader(tiny::blobs(90, 2), 30, 8, dev);
  train::TrainStepFn<tiny::Model, tiny::Batch> step = tiny::train_step(0.02);
  if (f16)  // mixed precision: the loss is scaled by the Learner's GradScaler before backward
    step = [](tiny::Model& m, const tiny::Batch& b) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      DynTensor logits = m.forward(b.x);
      DynTensor loss = nn::cross_entropy(logits, b.y);
      return train::TrainStepResult{{loss, logits, b.y}, amp::scale_loss(loss).backward()};
    };
  auto builder = train::LearnerBuilder<tiny::Model, tiny::Batch>(tiny::make_model(3), step, tiny::valid_step());
  if (f16) builder.mixed_precision(DType::f16);
  auto learner = builder
                     .optimizer(optim::Sgd({.momentum = 0.9}))
                     .lr(0.05)
                     .epochs(epochs)
                     .metrics({train::accuracy_metric(), train::f1_metric(), train::auroc_metric()})
                     .run_dir(run_dir)
                     .checkpoints({.keep_last = 2})
                     .renderer(kind == "dashboard" ? train::make_dashboard_renderer({.recent_steps = 50})
                                                   : train::make_renderer(train::parse_renderer_kind(kind)))
                     .seed(5)
                     .build();
  learner.fit(train_loader, valid_loader);
  std::cout << "APP EXIT " << learner.summary().stop_reason << " at step " << learner.summary().global_step
            << std::endl;
  return 0;
}

static int checkpoint_loop(const std::string& dir) {
  train::Checkpointer ck(dir, 3);
  for (int64_t i = 1;; ++i) {
    auto t = DynTensor::full(Shape{1 << 20}, double(i), DType::f32, Device::cpu());
    ck.save(i, std::nullopt, [&](const std::string& tmp) {
      nn::write_tensors(tmp + "/model.safetensors", {{"weight", t}});
      std::FILE* f = std::fopen((tmp + "/learner.json").c_str(), "w");
      std::fprintf(f, "{\"i\": %lld}\n", static_cast<long long>(i));
      std::fclose(f);
    });
  }
}

int main(int argc, char** argv) {
  if (argc >= 3 && argc <= 6 && std::strcmp(argv[1], "dashboard") == 0)
    return dashboard(argv[2], argc > 3 ? argv[3] : "dashboard", argc > 4 ? std::stoll(argv[4]) : 1000,
                     argc > 5 && std::strcmp(argv[5], "f16") == 0);
  if (argc == 3 && std::strcmp(argv[1], "checkpoint-loop") == 0) return checkpoint_loop(argv[2]);
  std::cerr << "usage: train_test_app dashboard <run_dir> [auto|plain|dashboard [epochs [f16]]] | checkpoint-loop <dir>\n";
  return 2;
}
