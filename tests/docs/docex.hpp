// What the generated doc-example translation units share (tests/docs/extract_examples.py,
// docs/testing.md "Code examples compile"): given<T>() and two small types, Model and Batch,
// that examples of the train layer and the docs name in their setup lines.
#pragma once

#include "ember/ember.hpp"
#include "ember/nn.hpp"
#ifdef DOCEX_HAS_APPS
#include "ember/train/learner.hpp"
#endif

namespace docex {
using namespace ember;

// A value of type T, for examples that are compiled and never run (declared, never defined).
template <class T>
T& given();

// A batch with the fields the examples read: images and class targets, or features and values.
struct Batch {
  DynTensor images, targets, x, y;
};

// A one-layer model.
struct Model {
  nn::Linear fc;
  EMBER_MODULE(fc)
  DynTensor forward(const DynTensor& input) const { return fc.forward(input); }
};

#ifdef DOCEX_HAS_APPS
// A classification train step and its validation step (declared only).
train::TrainStepResult classify_train(Model& model, const Batch& batch);
train::ClassificationOutput classify_valid(const Model& model, const Batch& batch);
#endif

}  // namespace docex
