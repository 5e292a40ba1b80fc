#!/usr/bin/env python3
"""The ONNX node tests through `ember-onnx generate --target cortex-m`, run natively.

  node_conformance.py EMBER_ONNX NODE_DIR OUT_DIR [--jobs N] [--report FILE]

For each case NODE_DIR/node/<case> whose nodes all have op types the cortex-m target takes
(docs/embedded.md), every graph input but the first becomes an initializer holding the case's
test value (on a microcontroller weights, shapes and bounds are constants; the first input is the
data), the generator writes C++, and the C++ is compiled with the host compiler and the
freestanding kernels, run on the case's input and compared with the case's expected outputs
(|got - want| <= 1e-4 + 1e-4 |want|). A case the generator refuses is counted as refused (with
its message): that is the clear error the target promises, not a failure. Needs Debian's
python3-onnx (and NumPy); exit status 2 when it or the cases are missing, 1 when a case fails.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys

TARGET_OPS = {
    "Conv", "Gemm", "MatMul", "Add", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Relu", "Clip",
    "Sigmoid", "Tanh", "Softmax", "BatchNormalization", "Concat", "Gather", "Reshape", "Flatten", "Squeeze",
    "Unsqueeze", "Transpose", "Identity", "Dropout", "LSTM", "GRU",
}
ATOL = RTOL = 1e-4
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

HARNESS = r"""// Runs the generated model m on raw float32 files: argv[1] the input, argv[2..] the outputs.
#include <cstdio>
#include <vector>

#include "m.hpp"

int main(int argc, char** argv) {
  if (argc != 2 + %(outputs)d) return 3;
  std::vector<float> in(size_t(m::kInput0Size) + 1);  // + 1: a pointer even for an empty tensor
  in.resize(size_t(m::kInput0Size));
  std::FILE* f = std::fopen(argv[1], "rb");
  if (!f || std::fread(in.data(), sizeof(float), in.size(), f) != in.size()) return 4;
  std::fclose(f);
  %(declare)s
  if (m::run(in.data(), %(args)s) != ember::kernels::Status::ok) {
    std::fprintf(stderr, "%%s\n", ember::kernels::last_error());
    return 5;
  }
  %(write)s
  return 0;
}
"""


def load_case(onnx, numpy_helper, case_dir):
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    data = os.path.join(case_dir, "test_data_set_0")
    inputs = [numpy_helper.to_array(onnx.load_tensor(p)) for p in sorted(glob.glob(os.path.join(data, "input_*.pb")))]
    outputs = [numpy_helper.to_array(onnx.load_tensor(p)) for p in sorted(glob.glob(os.path.join(data, "output_*.pb")))]
    return model, inputs, outputs


def run_case(tool, case_dir, out_dir, kernel_objects):
    import numpy as np
    import onnx
    from onnx import numpy_helper

    name = os.path.basename(case_dir)
    try:
        model, inputs, outputs = load_case(onnx, numpy_helper, case_dir)
    except Exception as e:  # a case this onnx cannot read
        return name, "skipped", f"unreadable: {e}"
    graph = model.graph
    feeds = [i for i in graph.input if i.name not in {t.name for t in graph.initializer}]
    if not feeds or len(inputs) != len(feeds) or inputs[0].dtype != np.float32:
        return name, "skipped", "the first input is not FLOAT"
    if any(o.dtype != np.float32 for o in outputs) or not outputs:
        return name, "skipped", "an output is not FLOAT"
    # Inputs after the first become initializers with the case's values.
    for info, value in zip(feeds[1:], inputs[1:]):
        graph.initializer.append(numpy_helper.from_array(value, info.name))
        graph.input.remove(info)
    work = os.path.join(out_dir, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    onnx.save(model, os.path.join(work, "model.onnx"))
    gen = subprocess.run([tool, "generate", os.path.join(work, "model.onnx"), "--target", "cortex-m", "--out", work,
                          "--name", "m"], capture_output=True, text=True)
    if gen.returncode != 0:
        return name, "refused", (gen.stderr.strip() or gen.stdout.strip()).replace("ember-onnx: error: ", "")
    n = len(outputs)
    harness = HARNESS % {
        "outputs": n,
        "declare": "\n  ".join(f"std::vector<float> out{i}(size_t(m::kOutput{i}Size) + 1); "
                                f"out{i}.resize(size_t(m::kOutput{i}Size));" for i in range(n)),
        "args": ", ".join(f"out{i}.data()" for i in range(n)),
        "write": "\n  ".join(
            f"{{ std::FILE* o = std::fopen(argv[{2 + i}], \"wb\"); if (!o) return 6; "
            f"std::fwrite(out{i}.data(), sizeof(float), out{i}.size(), o); std::fclose(o); }}" for i in range(n)),
    }
    with open(os.path.join(work, "main.cpp"), "w") as f:
        f.write(harness)
    exe = os.path.join(work, "case")
    build = subprocess.run(["g++", "-std=c++20", "-O1", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror",
                            "-I" + os.path.join(ROOT, "include"), "-I" + work, os.path.join(work, "main.cpp"),
                            os.path.join(work, "m.cpp"), *kernel_objects, "-o", exe], capture_output=True, text=True)
    if build.returncode != 0:
        return name, "failed", "the generated code does not compile: " + build.stderr[-600:]
    inputs[0].astype("<f4").tofile(os.path.join(work, "input.bin"))
    result_files = [os.path.join(work, f"output_{i}.bin") for i in range(n)]
    ran = subprocess.run([exe, os.path.join(work, "input.bin"), *result_files], capture_output=True, text=True)
    if ran.returncode != 0:
        return name, "failed", f"run() failed ({ran.returncode}): {ran.stderr.strip()}"
    for i, want in enumerate(outputs):
        got = np.fromfile(result_files[i], dtype="<f4")
        want = want.astype(np.float32).reshape(-1)
        if got.size != want.size:
            return name, "failed", f"output {i}: {got.size} values, expected {want.size}"
        if not np.allclose(got, want, atol=ATOL, rtol=RTOL, equal_nan=True):
            worst = int(np.argmax(np.abs(got - want)))
            return name, "failed", f"output {i}[{worst}] = {got[worst]}, expected {want[worst]}"
    shutil.rmtree(work, ignore_errors=True)
    return name, "passed", ""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tool")
    p.add_argument("node_dir")
    p.add_argument("out_dir")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--report")
    args = p.parse_args()
    try:
        import numpy  # noqa: F401
        import onnx
    except ImportError as e:
        print(f"node_conformance: skipped: {e} (python3-onnx)")
        return 2
    root = os.path.join(args.node_dir, "node")
    if not os.path.isdir(root):
        print(f"node_conformance: skipped: {root} not found (test.sh generates the node tests)")
        return 2
    cases = []
    for name in sorted(os.listdir(root)):
        try:
            model = onnx.load(os.path.join(root, name, "model.onnx"), load_external_data=False)
        except Exception:
            continue
        ops = {n.op_type for n in model.graph.node}
        if ops and ops <= TARGET_OPS and all(n.domain in ("", "ai.onnx") for n in model.graph.node):
            cases.append(os.path.join(root, name))
    os.makedirs(args.out_dir, exist_ok=True)
    # The kernels, compiled once for every case.
    kernel_objects = []
    for src in sorted(glob.glob(os.path.join(ROOT, "src/backends/cpu/kernels/*.cpp"))):
        obj = os.path.join(args.out_dir, os.path.basename(src) + ".o")
        subprocess.run(["g++", "-std=c++20", "-O1", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror",
                        "-I" + os.path.join(ROOT, "include"), "-c", src, "-o", obj], check=True)
        kernel_objects.append(obj)
    results = {"passed": [], "refused": [], "failed": [], "skipped": []}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for name, status, why in pool.map(lambda c: run_case(args.tool, c, args.out_dir, kernel_objects), cases):
            results[status].append({"case": name, "why": why} if why else {"case": name})
    for r in results["failed"]:
        print(f"   FAILED {r['case']}: {r['why']}")
    for r in results["refused"]:
        print(f"  refused {r['case']}: {r['why'][:160]}")
    summary = {k: len(v) for k, v in results.items()}
    print(f"node tests through the cortex-m target: {summary['passed']} passed, {summary['refused']} refused "
          f"(clear errors), {summary['failed']} failed, {summary['skipped']} skipped, of {len(cases)} cases "
          f"with only the target's op types")
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"cases": len(cases), **summary, "failures": results["failed"], "refusals": results["refused"]},
                      f, indent=2)
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
