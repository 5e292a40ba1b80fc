// IR op coverage of the forward conformance run: which ops of include/ember/core/ops.def reach
// each stack's backend while the cases run, and a test per stack that fails naming every op the
// backend supports but no case executed.
//
//   Device dev = counted("autodiff-cpu", Device::cpu().autodiff());  // count below the decorator
//   ... register the cases on dev ...
//   register_coverage_tests();   // after the cases: conformance_coverage.<stack> runs last
//   add_coverage_report(report); // "ir_ops", "ir_ops_covered", "ops_without_case", ...
#pragma once

#include <string>

#include "op_registry.hpp"

namespace ember::conformance {

// `device` with a counting decorator directly above its bottom backend (under the autodiff
// decorator when there is one), which records the kind of every op executed there for `stack`.
Device counted(const std::string& stack, const Device& device);

// One test per counted stack, conformance_coverage.<stack>. It checks only a stack whose cases
// all ran (a --gtest_filter that leaves some out skips it), and is skipped under --gtest_shuffle.
void register_coverage_tests();

// Adds "ir_ops" (ops in ops.def), "ir_ops_covered" (ops executed or covered elsewhere on every
// checked stack that supports them), "ops_without_case" ([{"stack", "op"}]),
// "coverage_checked" (the stacks whose cases all ran) and "ops_covered_elsewhere".
void add_coverage_report(Json& report);

}  // namespace ember::conformance
