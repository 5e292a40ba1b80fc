// SVG line plots of a MetricHistory, one file per metric: the train values of every iteration
// (thin line), and the per-epoch train and validation values (lines with markers), against epochs.
//
//   # auto learner = train::LearnerBuilder(given<Model>(), &classify_train).build();
//   train::write_svg_plots(learner.history(), "runs/a/plots");   // runs/a/plots/loss.svg, ...
#pragma once

#include <string>
#include <vector>

#include "ember/train/history.hpp"

namespace ember::train {

// A self-contained SVG document for one metric ("" when the history has no value for it).
std::string svg_plot(const MetricHistory& history, const std::string& metric);
// Writes <dir>/<metric>.svg for every metric with values (atomically); returns the paths.
std::vector<std::string> write_svg_plots(const MetricHistory& history, const std::string& dir);

}  // namespace ember::train
