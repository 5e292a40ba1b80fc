#!/usr/bin/env python3
"""Generate ember's conformance reference cases from PyTorch.

Run with Debian's python3-torch (1.13.x):   /usr/bin/python3 gen_cases.py
Writes cases/<family>.json and README.md next to this file (any cwd).
Output is deterministic: every family uses its own fixed-seed torch.Generator,
torch runs single-threaded, and JSON is written in a fixed order.

Every expected output is produced by calling torch on the exact input values
written to the file (no hand-written expectations).  For f16/bf16, when torch
1.13's CPU backend has no kernel for the op (or for reductions, where the
reference must accumulate in f32), the op is evaluated in f32 on the (already
rounded) inputs and floating outputs are rounded back to f16/bf16.
"""
import json
import math
import os
import zlib

import torch
import torch.nn.functional as F

torch.set_num_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
OUTDIR = os.path.join(HERE, "cases")

DT = {
    "f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8,
    "u8": torch.uint8, "bool": torch.bool,
}
NAME = {v: k for k, v in DT.items()}
FLOATS = ["f32", "f64", "f16", "bf16"]
INTS = ["i64", "i32", "i16", "i8", "u8"]
SINTS = ["i64", "i32", "i16", "i8"]
ALL = FLOATS + INTS + ["bool"]
LOWP = (torch.float16, torch.bfloat16)
INF = float("inf")
NAN = float("nan")

# default tolerances per floating output dtype (rtol, atol)
TOL = {"f64": (1e-10, 1e-12), "f32": (1e-5, 1e-6), "f16": (2e-3, 1e-3), "bf16": (1.6e-2, 1e-2)}
# per-dtype unit used to scale atol for accumulations of K terms (see README)
ACC_UNIT = {"f64": 1e-13, "f32": 2e-6, "f16": 1e-3, "bf16": 1e-2}
# unit roundoff u (half the spacing of the values in [1, 2)) per floating dtype
UNIT_ROUNDOFF = {"f64": 2.0 ** -53, "f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
# selection ops: every floating output value is one of the input values (or a bound given as an
# attribute), so floating outputs are compared exactly (rtol = atol = 0) on every dtype
EXACT_OPS = {"max", "min", "max_dim", "min_dim", "cummax", "cummin", "sort", "topk", "max_pool1d", "max_pool2d",
             "maximum", "minimum", "clamp", "clamp_min", "clamp_max", "relu"}

LOWP_DISAGREE = []  # (case name, max abs diff) where native lowp != f32-then-round
SKIPPED = []
CHECK = bool(os.environ.get("EMBER_GEN_CHECK"))
CHECK_FAIL = []

# ----------------------------------------------------------------------------
# gradient references (see README "Gradient references")
# ----------------------------------------------------------------------------
# Conformance ops that get a "grad" entry. Not listed (not differentiable): creation ops,
# comparisons, logic and bitwise ops, is_nan/is_inf/is_finite, argmax/argmin/argsort, any/all,
# nonzero/argwhere, one_hot and integer-only results.
GRAD_OPS = set("""
    neg abs sign exp exp2 log log2 log10 log1p expm1 sqrt rsqrt square reciprocal sin cos tan asin acos atan sinh
    cosh tanh asinh acosh atanh erf sigmoid floor ceil round trunc
    add sub mul div fmod remainder pow atan2 minimum maximum hypot add_scalar sub_scalar mul_scalar div_scalar
    fmod_scalar remainder_scalar pow_scalar lerp lerp_scalar clamp clamp_min clamp_max where mask_fill mask_where
    relu leaky_relu gelu gelu_tanh silu softplus hard_sigmoid log_sigmoid prelu softmax log_softmax
    sum mean prod max min max_dim min_dim var std norm logsumexp
    cumsum cumprod cummax cummin sort topk
    matmul dot outer linear
    reshape flatten unsqueeze squeeze permute transpose swap_dims movedim flip roll expand repeat tile narrow slice
    slice_assign chunk split cat stack pad tril triu contiguous
    gather scatter scatter_add select select_assign select_add index_select take masked_select
    cast
    conv1d conv2d conv3d conv_fused conv_transpose1d conv_transpose2d conv_transpose3d avg_pool1d avg_pool2d max_pool1d max_pool2d
    adaptive_avg_pool1d adaptive_avg_pool2d interpolate embedding layer_norm batch_norm scaled_dot_product_attention
""".split())
# gradient tolerances (rtol, atol unit) by the lowest-precision floating dtype of the case;
# atol = unit * max(1, largest |expected gradient element|)
GTOL = {"f64": (1e-7, 1e-9), "f32": (1e-4, 1e-5), "f16": (1e-2, 1e-2), "bf16": (5e-2, 5e-2)}
GRAD_SKIPS = {}        # skip rule -> number of cases of GRAD_OPS ops it removed
GRAD_CHECK_FAIL = []   # (case, worst ratio): reference vs the same gradient computed in f64 (EMBER_GEN_CHECK)
GRAD_LOWP_NATIVE = []  # (case, worst ratio): torch's native f16/bf16 autograd vs the reference (EMBER_GEN_CHECK)


def _grad_skip(rule):
    GRAD_SKIPS[rule] = GRAD_SKIPS.get(rule, 0) + 1
    return None


def _finite(t):
    return not t.is_floating_point() or t.numel() == 0 or bool(torch.isfinite(t).all())


def _autograd(fn, inputs, ups, fin, compute_dtype):
    """d/d(floating inputs) of sum_j sum(out_j * up_j), inputs converted by compute_dtype
    (a map dtype -> dtype) first; gradients come back in the input dtypes (None = unused)."""
    args, leaves = [], []
    for i, t in enumerate(inputs):
        if i in fin:
            leaf = t.detach().to(compute_dtype(t.dtype)).requires_grad_(True)
            leaves.append(leaf)
            args.append(leaf)
        else:
            args.append(t)
    outs = _as_list(fn(*args))
    loss = None
    for o, u in zip(outs, ups):
        if u is None:
            continue
        term = (o.double() * u.double()).sum()  # d term / d o = u, exactly, in o's dtype
        loss = term if loss is None else loss + term
    gs = torch.autograd.grad(loss, leaves, allow_unused=True)
    return [None if g is None else g.detach().to(inputs[i].dtype) for i, g in zip(fin, gs)]


def _grad_ratio(got, want, r, atols):
    """max |got - want| / (a_i + r |want|) over the elements of each input i (inf on shape/None
    mismatch); atols has one absolute tolerance per gradient."""
    worst = 0.0
    for x, y, a in zip(got, want, atols):
        if x is None or y is None:
            if (x is None) != (y is None):
                z = x if x is not None else y
                if z.numel() and float(z.abs().max()) != 0.0:
                    return INF
            continue
        if x.shape != y.shape:
            return INF
        if x.numel() == 0:
            continue
        xd, yd = x.double(), y.double()
        worst = max(worst, float(((xd - yd).abs() / (a + r * yd.abs())).max()))
    return worst


def grad_ref(name, op, inputs, outs, fn):
    """The case's "grad" entry, or None (the skip rule is counted in GRAD_SKIPS)."""
    if op not in GRAD_OPS:
        return None
    fin = [i for i, t in enumerate(inputs) if t.is_floating_point()]
    fout = [j for j, o in enumerate(outs) if o.is_floating_point()]
    if not fin or not fout:
        return _grad_skip("no floating input or no floating output")
    if not all(_finite(t) for t in list(inputs) + list(outs)):
        return _grad_skip("non-finite floating input or output")
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    ups = [None] * len(outs)
    for j in fout:
        ups[j] = (torch.rand(list(outs[j].shape), generator=g, dtype=torch.float64) * 2 - 1).to(outs[j].dtype)
    dts = {NAME[inputs[i].dtype] for i in fin} | {NAME[outs[j].dtype] for j in fout}
    lowp = bool(dts & {"f16", "bf16"})
    # f16/bf16: evaluated in f32 on the (exact) upcast inputs, gradients rounded back
    upcast = (lambda d: torch.float32 if d in LOWP else d) if lowp else (lambda d: d)
    try:
        gs = _autograd(fn, inputs, ups, fin, upcast)
    except RuntimeError as e:
        if "does not require grad" not in str(e):
            raise
        return _grad_skip("outputs do not depend on the floating inputs")
    if not all(x is None or _finite(x) for x in gs):
        return _grad_skip("non-finite reference gradient")
    worst = max(dts, key=lambda d: GTOL[d][0])
    r, unit = GTOL[worst]
    # one absolute tolerance per input, scaled by the largest |element| M of that input's
    # gradient; below M / 2 where M is under the unit (floor 1), so that zeros never pass
    mags = [float(x.abs().max()) if x is not None and x.numel() else 0.0 for x in gs]
    atols = [unit * max(1.0, m) if m == 0.0 else min(unit * max(1.0, m), m / 2) for m in mags]
    if CHECK:
        g64 = _autograd(fn, inputs, ups, fin, lambda d: torch.float64 if d in LOWP + (torch.float32,) else d)
        ratio = _grad_ratio(gs, g64, r, atols)
        if ratio > 0.25:
            GRAD_CHECK_FAIL.append((name, ratio))
        if lowp:
            try:
                gn = _autograd(fn, inputs, ups, fin, lambda d: d)
                ratio = _grad_ratio(gn, gs, r, atols)
                if ratio > 1:
                    GRAD_LOWP_NATIVE.append((name, ratio))
            except RuntimeError:
                pass
    per_input = [None] * len(inputs)
    per_atol = [None] * len(inputs)
    for i, x, a in zip(fin, gs, atols):
        if x is not None:
            per_input[i] = ser(x)
            per_atol[i] = a
    return {"upstream": [None if u is None else ser(u) for u in ups], "inputs": per_input, "rtol": r,
            "atol": per_atol}


# op -> (family, torch call, attrs keys / notes); README table is generated from this
OPDOC = {}


def doc(op, family, call, attrs=""):
    OPDOC[op] = (family, call, attrs)


# ----------------------------------------------------------------------------
# serialization
# ----------------------------------------------------------------------------
def fnum(v):
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def ser(t):
    t = t.detach().cpu().contiguous()
    dt = NAME[t.dtype]
    flat = t.reshape(-1)
    if dt == "bool":
        data = [bool(v) for v in flat.tolist()]
    elif dt in INTS:
        data = [int(v) for v in flat.tolist()]
    else:
        data = [fnum(v) for v in flat.double().tolist()]
    return {"dtype": dt, "shape": list(t.shape), "data": data}


def ser_attr(v):
    if isinstance(v, torch.dtype):
        return NAME[v]
    if isinstance(v, (list, tuple)):
        return [ser_attr(x) for x in v]
    if isinstance(v, dict):
        return {k: ser_attr(x) for k, x in v.items()}
    if isinstance(v, float):
        return fnum(v)
    return v


def sh(shape):
    shape = list(shape)
    return "scalar" if not shape else "x".join(str(s) for s in shape)


# ----------------------------------------------------------------------------
# evaluation with f16/bf16 fallback
# ----------------------------------------------------------------------------
def _as_list(out):
    if torch.is_tensor(out):
        return [out]
    return [o for o in out]


def ref(fn, inputs, f32acc=False, lowp_logic=True):
    lp = {t.dtype for t in inputs if t.dtype in LOWP}
    if not lowp_logic or not lp:
        return _as_list(fn(*inputs)), None
    fl = {t.dtype for t in inputs if t.is_floating_point()}
    native = None
    if not f32acc:
        try:
            native = _as_list(fn(*inputs))
        except RuntimeError as e:
            if "not implemented for" not in str(e):
                raise
    up = [t.float() if t.dtype in LOWP else t for t in inputs]
    out32 = _as_list(fn(*up))
    L = next(iter(lp)) if (len(lp) == 1 and len(fl) == 1) else None
    out32 = [o.to(L) if (L is not None and o.dtype == torch.float32) else o for o in out32]
    if native is None:
        return out32, None
    return native, out32


def max_rel_violation(a, b, rtol, atol):
    """Largest |a-b| - (atol + rtol*|b|) over elements (NaN==NaN), <=0 means ok."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return INF
    if a.numel() == 0:
        return 0.0
    if not a.is_floating_point():
        return 0.0 if torch.equal(a, b) else INF
    a = a.double()
    b = b.double()
    both_nan = torch.isnan(a) & torch.isnan(b)
    same = (a == b) | both_nan
    diff = (a - b).abs() - (atol + rtol * b.abs())
    diff = torch.where(same, torch.zeros_like(diff), diff)
    diff = torch.nan_to_num(diff, nan=INF)
    return float(diff.max())


class Family:
    def __init__(self, name, seed, exact=False):
        self.name = name
        self.cases = []
        self.names = set()
        self.g = torch.Generator().manual_seed(seed)
        self.exact = exact
        self.ops = []

    # ---- random helpers (all driven by self.g) ----
    def uniform(self, shape, lo, hi, dt="f32"):
        t = torch.rand(list(shape), generator=self.g, dtype=torch.float64) * (hi - lo) + lo
        return t.to(DT[dt])

    def signed_mag(self, shape, lo, hi, dt="f32"):
        """values with |x| in [lo, hi) and random sign (keeps away from 0)."""
        m = torch.rand(list(shape), generator=self.g, dtype=torch.float64) * (hi - lo) + lo
        s = torch.where(torch.rand(list(shape), generator=self.g) < 0.5, -1.0, 1.0).double()
        return (m * s).to(DT[dt])

    def ints(self, shape, lo, hi, dt="i64"):
        """uniform integers in [lo, hi)"""
        return torch.randint(lo, hi, list(shape), generator=self.g, dtype=torch.int64).to(DT[dt])

    def bools(self, shape, p=0.5):
        return torch.rand(list(shape), generator=self.g) < p

    def quarter(self, shape, lo, hi, dt):
        """random multiples of 0.25 (exercise .5 ties for rounding)"""
        t = torch.rand(list(shape), generator=self.g, dtype=torch.float64) * (hi - lo) + lo
        return (torch.round(t * 4) / 4).to(DT[dt])

    def rnd(self, shape, dt, lo=-3.0, hi=3.0):
        if dt == "bool":
            return self.bools(shape)
        if dt in INTS:
            ilo, ihi = int(math.floor(lo)), int(math.ceil(hi)) + 1
            if dt == "u8":
                ilo = max(ilo, 0)
                if ihi <= ilo:
                    ihi = ilo + 10
            return self.ints(shape, ilo, ihi, dt)
        return self.uniform(shape, lo, hi, dt)

    def distinct(self, shape, dt, step=None):
        """tensor without repeated values (no ties)."""
        shape = list(shape)
        n = 1
        for s in shape:
            n *= s
        perm = torch.randperm(n, generator=self.g, dtype=torch.int64)
        if dt in INTS:
            if dt == "u8":
                assert n <= 256
                v = perm
            elif dt == "i8":
                assert n <= 256
                v = perm - n // 2
            else:
                v = (perm - n // 2) * 3
            return v.reshape(shape).to(DT[dt])
        if dt == "bool":
            raise ValueError
        if dt in ("f16", "bf16") or n > 300:
            # multiples of 0.5 around 0: exact in bf16 for n <= 512
            st = step if step is not None else 0.5
            v = (perm.double() - n // 2) * st
            if dt == "bf16":
                assert n <= 512
            return v.reshape(shape).to(DT[dt])
        # f32/f64: continuous random values (checked unique)
        while True:
            t = self.uniform(shape, -5, 5, dt)
            if torch.unique(t).numel() == n:
                return t

    # ---- case recording ----
    def case(self, name, op, inputs, fn, attrs=None, rtol=None, atol=None,
             f32acc=False, exact=None, lowp_logic=True, skip_error=False, outputs_novalue=False, grad_fn=None):
        """grad_fn: the same function written with differentiable torch ops, for the gradient
        reference where torch's own op cannot be differentiated w.r.t. every input."""
        assert op in OPDOC, op
        inputs = list(inputs)
        try:
            outs, alt = ref(fn, inputs, f32acc=f32acc, lowp_logic=lowp_logic)
        except (RuntimeError, ValueError, TypeError) as e:
            if skip_error:
                SKIPPED.append((self.name, name, str(e).split("\n")[0][:100]))
                return None
            raise
        for o in outs:
            assert torch.is_tensor(o) and o.dtype in NAME, (name, o)
        fdts = [NAME[o.dtype] for o in outs if o.is_floating_point()]
        ex = self.exact if exact is None else exact
        ex = ex or op in EXACT_OPS
        if ex or not fdts:
            r, a = 0.0, 0.0
        else:
            worst = max(fdts, key=lambda d: TOL[d][0])
            r = TOL[worst][0] if rtol is None else rtol
            a = TOL[worst][1] if atol is None else atol
        if alt is not None:
            # native low-precision kernel exists: check it agrees with f32-then-round
            lr, la = (r, a) if (r or a) else (0.0, 0.0)
            worst = 0.0
            for o, p in zip(outs, alt):
                worst = max(worst, max_rel_violation(o, p, lr, la))
            if worst > 0:
                LOWP_DISAGREE.append((self.name + ":" + name, worst))
        if CHECK and (r or a):
            self._check_against_f64(name, fn, inputs, outs, r, a)
        base = name
        k = 2
        while name in self.names:
            name = "%s#%d" % (base, k)
            k += 1
        self.names.add(name)
        c = {"name": name, "op": op, "inputs": [ser(t) for t in inputs],
             "attrs": ser_attr(attrs or {}), "outputs": [ser(o) for o in outs],
             "rtol": r, "atol": a}
        if outputs_novalue:
            for o in c["outputs"]:
                o["data"] = None
        else:
            gr = grad_ref(name, op, inputs, outs, grad_fn or fn)
            if gr is not None:
                c["grad"] = gr
        self.cases.append(c)
        if op not in self.ops:
            self.ops.append(op)
        return outs

    def _check_against_f64(self, name, fn, inputs, outs, r, a):
        """debug aid (EMBER_GEN_CHECK=1): is the recorded result within the case tolerance
        of the same op evaluated in f64 and rounded to the output dtype?"""
        if not any(t.dtype in (torch.float32, torch.float16, torch.bfloat16) for t in inputs):
            return
        up = [t.double() if t.is_floating_point() else t for t in inputs]
        try:
            o64 = _as_list(fn(*up))
        except Exception:
            return
        worst = 0.0
        for o, p in zip(outs, o64):
            if o.is_floating_point() and p.is_floating_point() and o.shape == p.shape:
                worst = max(worst, max_rel_violation(o, p.to(o.dtype), r, a))
        if worst > 0:
            CHECK_FAIL.append((self.name + ":" + name, worst))

    def write(self):
        os.makedirs(OUTDIR, exist_ok=True)
        path = os.path.join(OUTDIR, self.name + ".json")
        with open(path, "w") as fh:
            fh.write('{"family": %s, "cases": [\n' % json.dumps(self.name))
            for i, c in enumerate(self.cases):
                s = json.dumps(c, separators=(",", ":"), allow_nan=False)
                fh.write(s + (",\n" if i + 1 < len(self.cases) else "\n"))
            fh.write("]}\n")
        return path


def rounded_tol(dt, atol):
    """f16/bf16 outputs of ops whose reference is computed in f32 and rounded once (layer_norm,
    softmax, log_softmax): a correct implementation computing in f32 (in any order) is within a
    few f32 ulps before its final rounding, so the two results differ by at most one ulp of the
    dtype (<= 2u |y|); rtol = 4u allows two. atol covers the f32 rounding noise near zero."""
    return 4 * UNIT_ROUNDOFF[dt], atol


def prod_tol(dt, K):
    """tolerance for a product of K factors: each multiplication has relative error <= u (the
    unit roundoff of the accumulation dtype: f32 for f16/bf16), so the reference and an
    implementation multiplying in any order are each within (K - 1) u of the exact product, and
    within 2 (K - 1) u < K eps of each other; f16/bf16 add the final rounding (the default rtol,
    about 2 ulps). Relative only: atol is the smallest normal number of the dtype."""
    acc = "f32" if dt in ("f16", "bf16") else dt
    r = max(TOL[dt][0], K * 2 * UNIT_ROUNDOFF[acc])
    return r, float(torch.finfo(DT[dt]).tiny)


def acc_tol(dt, K, mag=1.0, rtol=None):
    """tolerance for results accumulated over K products of magnitude <= mag."""
    r, a = TOL[dt]
    a = max(a, ACC_UNIT[dt] * math.sqrt(max(K, 1)) * mag)
    return (r if rtol is None else rtol), a


# ----------------------------------------------------------------------------
# creation
# ----------------------------------------------------------------------------
def lowp_create(fn, dt):
    """fn(torch_dtype) -> tensor; for f16/bf16 without a CPU kernel build in f32 and round."""
    try:
        return fn(DT[dt])
    except RuntimeError as e:
        if dt not in ("f16", "bf16") or "not implemented for" not in str(e):
            raise
        return fn(torch.float32).to(DT[dt])


def gen_creation(f):
    doc("zeros", "creation", "torch.zeros(size, dtype=dtype)", "size, dtype")
    doc("ones", "creation", "torch.ones(size, dtype=dtype)", "size, dtype")
    doc("full", "creation", "torch.full(size, fill_value, dtype=dtype)", "size, fill_value, dtype")
    doc("empty", "creation", "torch.empty(size, dtype=dtype) (output data is null: only shape/dtype are checked)", "size, dtype")
    doc("arange", "creation", "torch.arange(start, end, step, dtype=dtype)", "start, end, step, dtype")
    doc("linspace", "creation", "torch.linspace(start, end, steps, dtype=dtype)", "start, end, steps, dtype")
    doc("eye", "creation", "torch.eye(n, m, dtype=dtype)", "n, m, dtype")
    shapes = [[], [0], [5], [2, 3], [2, 0, 3], [2, 3, 4]]
    for dt in ALL:
        for i, s in enumerate(shapes):
            if dt not in ("f32", "i64") and i not in (0, 3):
                continue
            for op, fn in (("zeros", torch.zeros), ("ones", torch.ones)):
                f.case("%s/%s/%s" % (op, dt, sh(s)), op, [], lambda fn=fn, s=s: fn(s, dtype=DT[dt]),
                       {"size": s, "dtype": dt})
    fills = {"f32": [2.5, -1.25, 0.1, NAN, -INF], "f64": [0.1, -3.0, INF], "f16": [0.1, 65504.0, -2.5],
             "bf16": [0.1, 3.0e38, -2.5], "i64": [7, -3, 2 ** 40], "i32": [-123456, 5], "i16": [-300],
             "i8": [-100], "u8": [200], "bool": [True, False]}
    for dt, vals in fills.items():
        for j, v in enumerate(vals):
            s = [[2, 3], [4], [], [1, 2, 2], [3]][j % 5]
            f.case("full/%s/%s_%s" % (dt, sh(s), v), "full", [],
                   lambda s=s, v=v: torch.full(s, v, dtype=DT[dt]), {"size": s, "fill_value": v, "dtype": dt})
    f.case("full/i64/scalar_fill_0x3", "full", [], lambda: torch.full([0, 3], 5, dtype=torch.int64),
           {"size": [0, 3], "fill_value": 5, "dtype": "i64"})
    for dt, s in (("f32", [2, 3]), ("i64", [4]), ("bool", [2, 2]), ("f16", [0, 3]), ("u8", [])):
        f.case("empty/%s/%s" % (dt, sh(s)), "empty", [], lambda s=s: torch.zeros(s, dtype=DT[dt]),
               {"size": s, "dtype": dt}, outputs_novalue=True)
    ar = [
        ("i64", 0, 10, 1), ("i64", 2, 11, 3), ("i64", 10, 0, -2), ("i64", -5, 5, 1), ("i32", 0, 7, 2),
        ("i32", 3, -4, -3), ("i64", 5, 5, 1), ("i16", 0, 6, 1), ("u8", 0, 250, 25), ("i8", -8, 8, 3),
        ("f32", 0.0, 1.0, 0.1), ("f32", 1.0, 2.5, 0.5), ("f32", -1.0, 1.0, 0.25), ("f32", 5.0, -5.0, -1.5),
        ("f32", 0.0, 10.0, 1.0), ("f32", 0.0, 100.0, 0.7),
        ("f64", 0.0, 1.0, 0.1), ("f64", -2.0, 3.0, 0.3), ("f64", 1.0, 0.0, -0.125),
        ("f16", 0.0, 2.0, 0.25), ("f16", -3.0, 3.0, 0.5), ("bf16", 0.0, 5.0, 1.0), ("bf16", 0.0, 1.0, 0.125),
        ("f32", 0, 5, 1), ("i64", 0, 1, 1),
    ]
    for dt, a, b, st in ar:
        f.case("arange/%s/%s_%s_%s" % (dt, a, b, st), "arange", [],
               lambda a=a, b=b, st=st, dt=dt: lowp_create(lambda d: torch.arange(a, b, st, dtype=d), dt),
               {"start": a, "end": b, "step": st, "dtype": dt})
    ls = [
        ("f32", 0.0, 1.0, 5), ("f32", -1.0, 1.0, 7), ("f32", 0.0, 10.0, 1), ("f32", 0.0, 1.0, 0),
        ("f32", 5.0, -5.0, 11), ("f32", 0.0, 1.0, 100), ("f32", -3.5, 2.25, 2), ("f64", 0.0, 1.0, 11),
        ("f64", -10.0, 10.0, 33), ("f16", 0.0, 1.0, 5), ("f16", -2.0, 2.0, 9), ("bf16", 0.0, 1.0, 5),
        ("bf16", -4.0, 4.0, 17), ("i64", 0.0, 12.0, 4), ("i32", -6.0, 6.0, 7),
    ]
    for dt, a, b, n in ls:
        f.case("linspace/%s/%s_%s_%d" % (dt, a, b, n), "linspace", [],
               lambda a=a, b=b, n=n, dt=dt: lowp_create(lambda d: torch.linspace(a, b, n, dtype=d), dt),
               {"start": a, "end": b, "steps": n, "dtype": dt})
    ey = [("f32", 3, 3), ("f32", 3, 5), ("f32", 4, 2), ("f32", 0, 3), ("f32", 1, 1), ("f64", 4, 4),
          ("i64", 3, 4), ("bool", 3, 3), ("f16", 2, 3), ("bf16", 3, 2), ("i32", 5, 5), ("u8", 2, 2)]
    for dt, n, m in ey:
        f.case("eye/%s/%dx%d" % (dt, n, m), "eye", [], lambda n=n, m=m, dt=dt: lowp_create(lambda d: torch.eye(n, m, dtype=d), dt),
               {"n": n, "m": m, "dtype": dt})


# ----------------------------------------------------------------------------
# unary
# ----------------------------------------------------------------------------
SPECIALS = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e-3, 100.0, -100.0]
HUGE = [1e-30, 3.0e38, -3.0e38]


def gen_unary(f):
    signed = SINTS
    U = [
        ("neg", torch.neg, (-5, 5), signed, "torch.neg(x)"),
        ("abs", torch.abs, (-5, 5), signed + ["u8"], "torch.abs(x)"),
        ("sign", torch.sign, (-5, 5), signed + ["u8"], "torch.sign(x)  (NaN -> 0 in torch 1.13, see notes)"),
        ("exp", torch.exp, (-5, 5), [], "torch.exp(x)"),
        ("exp2", torch.exp2, (-5, 5), [], "torch.exp2(x)"),
        ("log", torch.log, (0.01, 10), [], "torch.log(x)"),
        ("log2", torch.log2, (0.01, 10), [], "torch.log2(x)"),
        ("log10", torch.log10, (0.01, 10), [], "torch.log10(x)"),
        ("log1p", torch.log1p, (-0.9, 5), [], "torch.log1p(x)"),
        ("expm1", torch.expm1, (-3, 3), [], "torch.expm1(x)"),
        ("sqrt", torch.sqrt, (0, 10), [], "torch.sqrt(x)"),
        ("rsqrt", torch.rsqrt, (0.05, 10), [], "torch.rsqrt(x)"),
        ("square", torch.square, (-5, 5), signed, "torch.square(x)"),
        ("reciprocal", torch.reciprocal, None, [], "torch.reciprocal(x)"),
        ("sin", torch.sin, (-6, 6), [], "torch.sin(x)"),
        ("cos", torch.cos, (-6, 6), [], "torch.cos(x)"),
        ("tan", torch.tan, (-1.4, 1.4), [], "torch.tan(x)"),
        ("asin", torch.asin, (-0.99, 0.99), [], "torch.asin(x)"),
        ("acos", torch.acos, (-0.99, 0.99), [], "torch.acos(x)"),
        ("atan", torch.atan, (-5, 5), [], "torch.atan(x)"),
        ("sinh", torch.sinh, (-4, 4), [], "torch.sinh(x)"),
        ("cosh", torch.cosh, (-4, 4), [], "torch.cosh(x)"),
        ("tanh", torch.tanh, (-4, 4), [], "torch.tanh(x)"),
        ("asinh", torch.asinh, (-5, 5), [], "torch.asinh(x)"),
        ("acosh", torch.acosh, (1, 6), [], "torch.acosh(x)"),
        ("atanh", torch.atanh, (-0.95, 0.95), [], "torch.atanh(x)"),
        ("erf", torch.erf, (-3, 3), [], "torch.erf(x)"),
        ("sigmoid", torch.sigmoid, (-8, 8), [], "torch.sigmoid(x)"),
        ("floor", torch.floor, (-5, 5), [], "torch.floor(x)"),
        ("ceil", torch.ceil, (-5, 5), [], "torch.ceil(x)"),
        ("round", torch.round, (-5, 5), [], "torch.round(x)  (half to even)"),
        ("trunc", torch.trunc, (-5, 5), [], "torch.trunc(x)"),
        ("is_nan", torch.isnan, (-5, 5), [], "torch.isnan(x) -> bool"),
        ("is_inf", torch.isinf, (-5, 5), [], "torch.isinf(x) -> bool"),
        ("is_finite", torch.isfinite, (-5, 5), [], "torch.isfinite(x) -> bool"),
    ]
    trig = ("sin", "cos", "tan")
    rounding = ("floor", "ceil", "round", "trunc")
    for op, fn, dom, intdts, call in U:
        doc(op, "unary", call, "")

        def gen(shape, dt):
            if op == "reciprocal":
                return f.signed_mag(shape, 0.1, 5, dt)
            if op in rounding:
                return f.quarter(shape, dom[0], dom[1], dt)
            t = f.uniform(shape, dom[0], dom[1], dt)
            if op.startswith("is_") and t.numel() >= 4:
                flat = t.reshape(-1)
                flat[1] = NAN
                flat[2] = INF
                flat[-1] = -INF
            return t

        plan = {"f32": [[3, 5], [], [0, 4], [1031]], "f64": [[2, 1, 3]], "f16": [[3, 5]], "bf16": [[3, 5]]}
        for dt in FLOATS:
            for s in plan[dt]:
                f.case("%s/%s/%s" % (op, dt, sh(s)), op, [gen(s, dt)], fn)
            sp = [v for v in SPECIALS if not (op == "sign" and math.isnan(v))]
            if op == "log1p":
                sp = sp + HUGE[:1]  # torch 1.13's f32/bf16 log1p(3e38) returns inf (wrong): not a reference
            elif op not in trig:
                sp = sp + HUGE
            f.case("%s/%s/special" % (op, dt), op, [torch.tensor(sp, dtype=DT[dt])], fn)
        if op == "sign":
            for dt in ("f32", "f64"):
                f.case("sign/%s/nan_gives_zero" % dt, op, [torch.tensor([NAN, -NAN, 1.0], dtype=DT[dt])], fn)
        for dt in intdts:
            lo, hi = (-11, 12) if op == "square" else (-100, 101)
            if dt == "u8":
                lo = 0
            for s in ([3, 5], []):
                f.case("%s/%s/%s" % (op, dt, sh(s)), op, [f.ints(s, lo, hi, dt)], fn)
        if op in ("neg", "abs"):
            f.case("%s/i32/empty" % op, op, [torch.zeros([0], dtype=torch.int32)], fn)
        if op == "abs":
            # abs'(0) = 0 (PyTorch's convention at the kink; the average of the one-sided slopes,
            # as a central finite difference gives, so these keep the finite-difference check)
            for dt in FLOATS:
                f.case("abs/%s/zeros" % dt, op, [torch.tensor([[0.0, -0.0, 1.5, 0.0], [-2.0, 0.0, -0.0, 0.25]], dtype=DT[dt])], fn)


# ----------------------------------------------------------------------------
# binary
# ----------------------------------------------------------------------------
BC_SHAPES = [([3, 1], [1, 4]), ([4], [3, 4]), ([3, 4], [4]), ([2, 3, 4], [3, 1]), ([1], [2, 3]),
             ([], [3, 2]), ([3, 2], []), ([2, 1, 4], [1, 3, 1]), ([0, 3], [1, 3]), ([5], [5]), ([], []),
             ([2, 3, 4], [2, 3, 4]), ([3, 0], [3, 1])]
SMALL_SHAPES = [([3, 4], [3, 4]), ([3, 1], [1, 4]), ([], [2, 3])]
BIG_SHAPE = ([64, 65], [65])


def bin_vals(f, op, dt, shape, which):
    """operand generator per op; which = 0 (lhs) / 1 (rhs)."""
    isint = dt in INTS
    if dt == "bool":
        return f.bools(shape)
    if op in ("add", "sub", "mul", "minimum", "maximum"):
        if isint:
            lo, hi = {"i8": (-11, 12), "u8": (0, 16)}.get(dt, (-50, 51))
            return f.ints(shape, lo, hi, dt)
        return f.uniform(shape, -5, 5, dt)
    if op == "div":
        if isint:
            if which == 0:
                return f.ints(shape, 0 if dt == "u8" else -20, 21, dt)
            v = f.ints(shape, 1, 7, dt)
            if dt != "u8":
                v = v * torch.where(f.bools(shape), -1, 1).to(v.dtype)
            return v
        return f.uniform(shape, -5, 5, dt) if which == 0 else f.signed_mag(shape, 0.5, 5, dt)
    if op in ("fmod", "remainder"):
        if isint:
            if which == 0:
                return f.ints(shape, 0 if dt == "u8" else -20, 21 if dt != "u8" else 100, dt)
            v = f.ints(shape, 1, 7, dt)
            if dt != "u8":
                v = v * torch.where(f.bools(shape), -1, 1).to(v.dtype)
            return v
        return f.uniform(shape, -10, 10, dt) if which == 0 else f.signed_mag(shape, 0.5, 4, dt)
    if op == "pow":
        if isint:
            if which == 1:
                return f.ints(shape, 0, 5 if dt != "u8" else 4, dt)
            lo, hi = {"i8": (-3, 4), "u8": (0, 6)}.get(dt, (-4, 5))
            return f.ints(shape, lo, hi, dt)
        return f.uniform(shape, 0.1, 4, dt) if which == 0 else f.uniform(shape, -2, 2, dt)
    if op in ("atan2", "hypot"):
        if isint:
            return f.ints(shape, -10, 11, dt)
        return f.uniform(shape, -5, 5, dt)
    raise KeyError(op)


def gen_binary(f):
    B = {
        "add": (lambda a, b: torch.add(a, b), "torch.add(a, b, alpha=alpha)", "alpha"),
        "sub": (lambda a, b: torch.sub(a, b), "torch.sub(a, b, alpha=alpha)", "alpha"),
        "mul": (torch.mul, "torch.mul(a, b)", ""),
        "div": (torch.div, "torch.div(a, b)  (true division; int/int -> f32)", ""),
        "fmod": (torch.fmod, "torch.fmod(a, b)", ""),
        "remainder": (torch.remainder, "torch.remainder(a, b)", ""),
        "pow": (torch.pow, "torch.pow(a, b)", ""),
        "atan2": (torch.atan2, "torch.atan2(a, b)  (a = y, b = x)", ""),
        "minimum": (torch.minimum, "torch.minimum(a, b)  (NaN propagates)", ""),
        "maximum": (torch.maximum, "torch.maximum(a, b)  (NaN propagates)", ""),
        "hypot": (torch.hypot, "torch.hypot(a, b)", ""),
    }
    intdts = {"add": INTS, "sub": INTS, "mul": INTS, "div": ["i64", "i32"], "fmod": INTS, "remainder": INTS,
              "pow": ["i64", "i32", "i8", "u8"], "atan2": ["i32"], "minimum": INTS + ["bool"],
              "maximum": INTS + ["bool"], "hypot": []}
    for op, (fn, call, keys) in B.items():
        doc(op, "binary", call, keys)
    doc("add_scalar", "binary", "torch.add(x, other)", "other")
    doc("sub_scalar", "binary", "torch.sub(x, other)", "other")
    doc("mul_scalar", "binary", "torch.mul(x, other)", "other")
    doc("div_scalar", "binary", "torch.div(x, other)", "other")
    doc("fmod_scalar", "binary", "torch.fmod(x, other)", "other")
    doc("remainder_scalar", "binary", "torch.remainder(x, other)", "other")
    doc("pow_scalar", "binary", "torch.pow(x, exponent)  (tensor base, scalar exponent)", "exponent")
    doc("lerp", "binary", "torch.lerp(start, end, weight)  (weight is a tensor: 3 inputs)", "")
    doc("lerp_scalar", "binary", "torch.lerp(start, end, weight)  (weight is a python float)", "weight")
    doc("clamp", "binary", "torch.clamp(x, min, max)", "min, max")
    doc("clamp_min", "binary", "torch.clamp_min(x, min) == torch.clamp(x, min=min)", "min")
    doc("clamp_max", "binary", "torch.clamp_max(x, max) == torch.clamp(x, max=max)", "max")
    doc("where", "binary", "torch.where(cond, a, b)  (inputs: cond, a, b)", "")
    doc("mask_fill", "binary", "x.masked_fill(mask, value)  (inputs: x, mask)", "value")
    doc("mask_where", "binary", "torch.where(mask, other, x)  (inputs: x, mask, other; takes other where mask is true)", "")

    for op, (fn, call, keys) in B.items():
        def run(name, a, b, attrs=None, fn=fn, op=op):
            if op in ("add", "sub"):
                alpha = (attrs or {}).get("alpha", 1 if not (a.is_floating_point() or b.is_floating_point()) else 1.0)
                fa = getattr(torch, op)
                return f.case(name, op, [a, b], lambda x, y: fa(x, y, alpha=alpha), {"alpha": alpha})
            return f.case(name, op, [a, b], fn, attrs)

        for dt in FLOATS:
            core = op in ("add", "sub", "mul", "div", "maximum")
            shapes = (BC_SHAPES + [BIG_SHAPE] if core else BC_SHAPES[:9]) if dt == "f32" else SMALL_SHAPES
            for sa, sb in shapes:
                run("%s/%s/%s_%s" % (op, dt, sh(sa), sh(sb)), bin_vals(f, op, dt, sa, 0), bin_vals(f, op, dt, sb, 1))
        for dt in intdts[op]:
            for sa, sb in SMALL_SHAPES[:2]:
                run("%s/%s/%s_%s" % (op, dt, sh(sa), sh(sb)), bin_vals(f, op, dt, sa, 0), bin_vals(f, op, dt, sb, 1))
        # alpha
        if op in ("add", "sub"):
            for dt, al in (("f32", 2.5), ("f64", -0.5), ("i32", 3), ("i64", -2), ("f16", 2.0)):
                run("%s/%s/alpha_%s" % (op, dt, al), bin_vals(f, op, dt, [3, 4], 0), bin_vals(f, op, dt, [4], 1),
                    {"alpha": al})
    # --- specials ---
    sa = torch.tensor([NAN, 1.0, NAN, INF, -INF, INF, 0.0, -0.0, 3.0, -2.0, 0.0, 5.0])
    sb = torch.tensor([1.0, NAN, NAN, INF, INF, 2.0, 0.0, 0.0, -0.0, INF, -INF, -INF])
    for op in ("add", "sub", "mul", "div", "fmod", "remainder", "atan2", "minimum", "maximum", "hypot", "pow"):
        for dt in FLOATS:
            a, b = sa.to(DT[dt]), sb.to(DT[dt])
            if op in ("add", "sub"):
                fa = getattr(torch, op)
                f.case("%s/%s/special" % (op, dt), op, [a, b], lambda x, y, fa=fa: fa(x, y, alpha=1.0), {"alpha": 1.0})
            else:
                f.case("%s/%s/special" % (op, dt), op, [a, b], B[op][0])
    # ties: a == b at some elements. The gradient follows PyTorch's convention, g / 2 to each
    # operand: the average of the one-sided slopes, which the central finite difference of
    # autodiff_conformance_test.cpp also gives, so these keep that check.
    ta = torch.tensor([[1.0, 2.0, -0.5, 3.0], [0.0, -1.5, 2.0, 2.0], [4.0, -2.0, -2.0, 1.25]])
    tb = torch.tensor([[1.0, 2.5, -0.5, 1.0], [0.0, -1.5, 2.0, -3.0], [4.5, -2.0, -2.5, 1.25]])
    for op in ("maximum", "minimum"):
        for dt in FLOATS:
            f.case("%s/%s/ties" % (op, dt), op, [ta.to(DT[dt]), tb.to(DT[dt])], B[op][0])
        for dt in ("f32", "f64"):  # broadcast: b's gradient sums the tie halves over the rows
            f.case("%s/%s/ties_3x4_4" % (op, dt), op, [ta.to(DT[dt]), torch.tensor([1.0, -1.5, 2.0, 1.25], dtype=DT[dt])],
                   B[op][0])
    # signed operand combos for fmod/remainder (exact)
    va = torch.tensor([7.0, -7.0, 7.0, -7.0, 5.5, -5.5, 6.0, -6.0, 0.0, -0.0, -3.75])
    vb = torch.tensor([3.0, 3.0, -3.0, -3.0, 2.0, 2.0, -3.0, 3.0, 3.0, -3.0, 0.5])
    # huge quotients apart: their gradients (-trunc(a / b) g for b) would set the other elements'
    # gradient tolerance (atol scales with the largest |gradient| of an input)
    la = torch.tensor([1e10, -1e10, 3e9, -7e8])
    lb = torch.tensor([3.0, 7.0, -0.75, -3.0])
    for op in ("fmod", "remainder"):
        for dt in ("f32", "f64"):
            f.case("%s/%s/signs" % (op, dt), op, [va.to(DT[dt]), vb.to(DT[dt])], B[op][0])
            f.case("%s/%s/signs_large" % (op, dt), op, [la.to(DT[dt]), lb.to(DT[dt])], B[op][0])
        for dt in ("i64", "i32", "i8"):
            a = torch.tensor([7, -7, 7, -7, 6, -6, 0, -1, 13], dtype=DT[dt])
            b = torch.tensor([3, 3, -3, -3, -3, 3, 5, 5, -5], dtype=DT[dt])
            f.case("%s/%s/signs" % (op, dt), op, [a, b], B[op][0])
    # pow: negative bases with integral exponents, large magnitudes
    for dt in ("f32", "f64", "f16", "bf16"):
        a = torch.tensor([-2.0, -2.0, -3.0, -0.5, -1.5, 2.0, 10.0, -2.0], dtype=DT[dt])
        b = torch.tensor([2.0, 3.0, -1.0, -2.0, 0.5, 10.0, 4.0, -3.0], dtype=DT[dt])
        f.case("pow/%s/neg_base" % dt, "pow", [a, b], torch.pow)
    f.case("div/f32/large", "div", [torch.tensor([1e30, -3e38, 1e-30, 7.0]), torch.tensor([1e-10, 0.5, 1e10, 3.0])], torch.div)
    f.case("mul/f32/large", "mul", [torch.tensor([1e30, -3e38, 1e-30, 2e19]), torch.tensor([1e10, 2.0, 1e-10, 2e19])], torch.mul)
    f.case("div/i32/by_zero", "div", [torch.tensor([1, -1, 0], dtype=torch.int32), torch.tensor([0, 0, 0], dtype=torch.int32)], torch.div)
    # --- mixed dtype promotion ---
    promo = [("i32", "f32"), ("f16", "f32"), ("bool", "i64"), ("u8", "i8"), ("f16", "bf16"), ("i32", "i64"),
             ("bf16", "f64"), ("i64", "f16"), ("bool", "f32"), ("u8", "i64"), ("i16", "i32"), ("f32", "f64")]
    for op in ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "fmod", "remainder"):
        for da, db in promo:
            if op in ("pow", "atan2", "fmod", "remainder", "minimum") and (da, db) not in (("i32", "f32"), ("f16", "f32"), ("u8", "i64"), ("bf16", "f64")):
                continue
            if op in ("sub",) and "bool" in (da, db):
                continue
            a = bin_vals(f, op, da, [3, 4], 0) if da != "bool" else f.bools([3, 4])
            b = bin_vals(f, op, db, [4], 1) if db != "bool" else f.bools([4])
            if op in ("add", "sub"):
                fa = getattr(torch, op)
                al = 1 if not (a.is_floating_point() or b.is_floating_point()) else 1.0
                f.case("%s/%s_%s/promote" % (op, da, db), op, [a, b], lambda x, y, fa=fa, al=al: fa(x, y, alpha=al), {"alpha": al})
            else:
                f.case("%s/%s_%s/promote" % (op, da, db), op, [a, b], B[op][0])
    # --- scalar variants ---
    SC = [("f32", 2.5), ("f32", -1.25), ("f64", -1.25), ("f16", 0.1), ("bf16", 3.0), ("i32", 3), ("i64", -7),
          ("u8", 5), ("i8", -3), ("i16", 4), ("i32", 2.5), ("bool", 2), ("i64", 0.5), ("f32", 2), ("f16", 3)]
    for op, tfn in (("add_scalar", torch.add), ("sub_scalar", torch.sub), ("mul_scalar", torch.mul), ("div_scalar", torch.div)):
        base = op.split("_")[0]
        for j, (dt, v) in enumerate(SC):
            if op == "sub_scalar" and dt == "bool":
                continue
            if base == "div" and v == 0:
                continue
            s = [[3, 4], [], [5], [0, 2]][j % 4]
            x = bin_vals(f, "add", dt, s, 0) if dt != "bool" else f.bools(s)
            f.case("%s/%s/%s_%s" % (op, dt, sh(s), v), op, [x], lambda x, v=v, tfn=tfn: tfn(x, v), {"other": v})
    f.case("div_scalar/f32/by_zero", "div_scalar", [torch.tensor([1.0, -1.0, 0.0])], lambda x: torch.div(x, 0.0), {"other": 0.0})
    for op, tfn in (("fmod_scalar", torch.fmod), ("remainder_scalar", torch.remainder)):
        for dt, v in (("f32", 2.5), ("f32", -1.5), ("f64", 3.0), ("f16", 0.75), ("bf16", -2.0), ("i32", 3), ("i64", -4),
                      ("i8", 5), ("u8", 7), ("i32", 2.5)):
            x = bin_vals(f, "fmod", dt, [3, 4], 0)
            f.case("%s/%s/%s" % (op, dt, v), op, [x], lambda x, v=v, tfn=tfn: tfn(x, v), {"other": v})
    for dt, v in (("f32", 2), ("f32", 2.0), ("f32", 3.0), ("f32", 0.5), ("f32", -1.0), ("f32", -2.0), ("f32", 0.0),
                  ("f32", 1.0), ("f32", 1.5), ("f32", -0.5), ("f32", 1.0 / 3.0), ("f64", 2.0), ("f64", 0.5), ("f64", -1.5),
                  ("f16", 2.0), ("f16", 0.5), ("f16", -1.0), ("bf16", 2.0), ("bf16", 3.0), ("bf16", 0.5),
                  ("i64", 2), ("i64", 3), ("i32", 0), ("i32", 2), ("u8", 2), ("i8", 3), ("i32", 0.5), ("i64", 2.0)):
        if isinstance(v, float) and not (float(v).is_integer() and v >= 0) or dt in INTS:
            x = bin_vals(f, "pow", dt, [3, 4], 0)
        else:
            x = f.uniform([3, 4], -3, 3, dt)
        f.case("pow_scalar/%s/%s" % (dt, v), "pow_scalar", [x], lambda x, v=v: torch.pow(x, v), {"exponent": v})
    f.case("pow_scalar/f32/special_2", "pow_scalar", [torch.tensor(SPECIALS)], lambda x: torch.pow(x, 2.0), {"exponent": 2.0})
    f.case("pow_scalar/f32/special_0.5", "pow_scalar", [torch.tensor(SPECIALS)], lambda x: torch.pow(x, 0.5), {"exponent": 0.5})
    f.case("pow_scalar/f32/special_0", "pow_scalar", [torch.tensor(SPECIALS)], lambda x: torch.pow(x, 0.0), {"exponent": 0.0})
    f.case("pow_scalar/f32/special_-1", "pow_scalar", [torch.tensor(SPECIALS)], lambda x: torch.pow(x, -1.0), {"exponent": -1.0})
    # --- lerp ---
    for dt in FLOATS:
        for w in (0.3, 0.7, -0.5, 1.5, 0.5, 0.0, 1.0):
            if dt != "f32" and w not in (0.3, 0.7):
                continue
            a, b = f.uniform([3, 4], -5, 5, dt), f.uniform([3, 4], -5, 5, dt)
            f.case("lerp_scalar/%s/w%s" % (dt, w), "lerp_scalar", [a, b], lambda x, y, w=w: torch.lerp(x, y, w), {"weight": w})
        for sa_, sb_, sw in (([3, 4], [3, 4], [3, 4]), ([3, 1], [1, 4], [4]), ([], [2, 3], [2, 1]), ([5], [5], []), ([3, 1], [4], [3, 4])):
            if dt != "f32" and sa_ != [3, 4]:
                continue
            a, b, w = f.uniform(sa_, -5, 5, dt), f.uniform(sb_, -5, 5, dt), f.uniform(sw, -0.5, 1.5, dt)
            f.case("lerp/%s/%s_%s_%s" % (dt, sh(sa_), sh(sb_), sh(sw)), "lerp", [a, b, w], torch.lerp)
    f.case("lerp_scalar/f32/special", "lerp_scalar", [torch.tensor([NAN, 1.0, INF, 0.0]), torch.tensor([1.0, NAN, 1.0, 0.0])],
           lambda x, y: torch.lerp(x, y, 0.25), {"weight": 0.25})
    # --- clamp ---
    for dt in FLOATS + ["i64", "i32", "i16", "i8", "u8"]:
        isint = dt in INTS
        for (mn, mx) in ((-1.0, 2.0), (2.0, -1.0), (0.5, 0.5)):
            if isint:
                mn, mx = int(mn * 3), int(mx * 3)
                if dt == "u8":
                    mn, mx = abs(mn) + 2, abs(mx) + 5
            x = f.rnd([3, 4], dt, -5, 5) if dt != "u8" else f.ints([3, 4], 0, 20, "u8")
            f.case("clamp/%s/%s_%s" % (dt, mn, mx), "clamp", [x], lambda x, mn=mn, mx=mx: torch.clamp(x, mn, mx), {"min": mn, "max": mx})
            if dt in ("f32", "i32") or (mn, mx) == (-1.0, 2.0) or (isint and mn < mx):
                f.case("clamp_min/%s/%s" % (dt, mn), "clamp_min", [x], lambda x, mn=mn: torch.clamp_min(x, mn), {"min": mn})
                f.case("clamp_max/%s/%s" % (dt, mx), "clamp_max", [x], lambda x, mx=mx: torch.clamp_max(x, mx), {"max": mx})
    for dt in FLOATS:
        x = torch.tensor(SPECIALS, dtype=DT[dt])
        f.case("clamp/%s/special" % dt, "clamp", [x], lambda x: torch.clamp(x, -1.0, 2.0), {"min": -1.0, "max": 2.0})
        f.case("clamp_min/%s/special" % dt, "clamp_min", [x], lambda x: torch.clamp_min(x, 0.0), {"min": 0.0})
        f.case("clamp_max/%s/special" % dt, "clamp_max", [x], lambda x: torch.clamp_max(x, 0.0), {"max": 0.0})
    # inputs exactly on the bounds: PyTorch passes the gradient where min <= x <= max (a
    # convention at the kink: exempt from the finite-difference check, name part "/on_bounds")
    xb = [-1.0, 2.0, 0.5, -1.0, 3.0, -2.0, 2.0, 1.0, -1.0, 0.0, 2.0, -3.0]
    for dt in FLOATS:
        x = torch.tensor(xb, dtype=DT[dt]).reshape(3, 4)
        f.case("clamp/%s/on_bounds" % dt, "clamp", [x], lambda x: torch.clamp(x, -1.0, 2.0), {"min": -1.0, "max": 2.0})
        f.case("clamp_min/%s/on_bounds" % dt, "clamp_min", [x], lambda x: torch.clamp_min(x, -1.0), {"min": -1.0})
        f.case("clamp_max/%s/on_bounds" % dt, "clamp_max", [x], lambda x: torch.clamp_max(x, 2.0), {"max": 2.0})
    for dt in ("f32", "f64"):
        x = torch.tensor([0.5, 1.0, 0.5, -0.5, 0.5, 0.25], dtype=DT[dt])
        f.case("clamp/%s/on_bounds_min_eq_max" % dt, "clamp", [x], lambda x: torch.clamp(x, 0.5, 0.5), {"min": 0.5, "max": 0.5})
    f.case("clamp/f32/empty", "clamp", [torch.zeros([0, 3])], lambda x: torch.clamp(x, -1.0, 1.0), {"min": -1.0, "max": 1.0})
    f.case("clamp/f32/scalar", "clamp", [torch.tensor(3.5)], lambda x: torch.clamp(x, -1.0, 1.0), {"min": -1.0, "max": 1.0})
    f.case("clamp/f32/big", "clamp", [f.uniform([1031], -3, 3)], lambda x: torch.clamp(x, -1.0, 1.5), {"min": -1.0, "max": 1.5})
    f.case("clamp/i64_float_bounds/promote", "clamp", [torch.tensor([1, 2, 3, -4])], lambda x: torch.clamp(x, 0.5, 2.5),
           {"min": 0.5, "max": 2.5})
    # --- where ---
    wsh = [([3, 4], [3, 4], [3, 4]), ([3, 1], [1, 4], [3, 4]), ([3, 4], [], [4]), ([2, 1, 4], [3, 1], [1, 1]),
           ([], [2, 2], [2, 2]), ([0, 3], [1, 3], [3])]
    for dt in ("f32", "f64", "f16", "bf16", "i64", "i32", "u8", "bool"):
        for i, (sc, sa_, sb_) in enumerate(wsh):
            if dt != "f32" and i > 1:
                continue
            f.case("where/%s/%s_%s_%s" % (dt, sh(sc), sh(sa_), sh(sb_)), "where",
                   [f.bools(sc), f.rnd(sa_, dt), f.rnd(sb_, dt)], torch.where)
    f.case("where/i32_f32/promote", "where", [f.bools([3, 4]), f.rnd([3, 4], "i32"), f.rnd([3, 4], "f32")], torch.where,
           skip_error=True)
    f.case("where/f32/big", "where", [f.bools([64, 65]), f.rnd([64, 65], "f32"), f.rnd([65], "f32")], torch.where)
    # --- masked fill / mask_where ---
    for dt, val in (("f32", 2.5), ("f32", -INF), ("f32", NAN), ("f64", -1.5), ("f16", 0.1), ("bf16", -3.0),
                    ("i64", 7), ("i32", -2), ("u8", 9), ("bool", True), ("f32", 0.0)):
        for ms in ([3, 4], [1, 4], [3, 1], []):
            if ms != [3, 4] and not (dt == "f32" and val == 2.5):
                continue
            x = f.rnd([3, 4], dt)
            f.case("mask_fill/%s/%s_%s" % (dt, sh(ms), val), "mask_fill", [x, f.bools(ms)],
                   lambda x, m, val=val: x.masked_fill(m, val), {"value": val})
    f.case("mask_fill/f32/3d", "mask_fill", [f.rnd([2, 3, 4], "f32"), f.bools([3, 1])],
           lambda x, m: x.masked_fill(m, -1e9), {"value": -1e9})
    for dt in ("f32", "f64", "f16", "bf16", "i64", "i32", "u8", "bool"):
        for i, (sx, sm, so) in enumerate((([3, 4], [3, 4], [3, 4]), ([3, 4], [1, 4], [3, 4]), ([3, 4], [3, 1], [4]),
                                          ([2, 3, 4], [3, 4], []), ([3, 4], [], [3, 4]))):
            if dt != "f32" and i > 1:
                continue
            f.case("mask_where/%s/%s_%s_%s" % (dt, sh(sx), sh(sm), sh(so)), "mask_where",
                   [f.rnd(sx, dt), f.bools(sm), f.rnd(so, dt)], lambda x, m, o: torch.where(m, o, x))


# ----------------------------------------------------------------------------
# activation
# ----------------------------------------------------------------------------
def gen_activation(f):
    A = [
        ("relu", F.relu, {}, "F.relu(x)", ""),
        ("leaky_relu", None, {"negative_slope": 0.01}, "F.leaky_relu(x, negative_slope)", "negative_slope"),
        ("gelu", lambda x: F.gelu(x, approximate="none"), {}, 'F.gelu(x, approximate="none")', ""),
        ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), {}, 'F.gelu(x, approximate="tanh")', ""),
        ("silu", F.silu, {}, "F.silu(x)", ""),
        ("softplus", None, {"beta": 1.0, "threshold": 20.0}, "F.softplus(x, beta, threshold)", "beta, threshold"),
        ("hard_sigmoid", F.hardsigmoid, {}, "F.hardsigmoid(x)", ""),
        ("log_sigmoid", F.logsigmoid, {}, "F.logsigmoid(x)", ""),
    ]
    doc("prelu", "activation", "F.prelu(x, weight)  (inputs: x, weight; weight [1] or [C], C = x.shape[1])", "")
    doc("softmax", "activation", "F.softmax(x, dim)", "dim")
    doc("log_softmax", "activation", "F.log_softmax(x, dim)", "dim")
    for op, fn, attrs, call, keys in A:
        doc(op, "activation", call, keys)
    sp = SPECIALS + [-30.0, 30.0, 3.0, -3.0, 1e-30, 3.0e38, -3.0e38]
    for op, fn, attrs, call, keys in A:
        variants = [attrs]
        if op == "leaky_relu":
            variants = [{"negative_slope": 0.01}, {"negative_slope": 0.2}, {"negative_slope": -1.5}]
        if op == "softplus":
            variants = [{"beta": 1.0, "threshold": 20.0}, {"beta": 2.0, "threshold": 5.0}, {"beta": 0.5, "threshold": 1.0}]
        for vi, at in enumerate(variants):
            if op == "leaky_relu":
                g = lambda x, at=at: F.leaky_relu(x, at["negative_slope"])
            elif op == "softplus":
                g = lambda x, at=at: F.softplus(x, at["beta"], at["threshold"])
            else:
                g = fn
            tag = "" if vi == 0 else "_" + "_".join(str(v) for v in at.values())
            plan = {"f32": [[3, 5], [], [0, 3], [1031]], "f64": [[2, 3, 4]], "f16": [[3, 5]], "bf16": [[3, 5]]}
            for dt in FLOATS:
                for s in plan[dt]:
                    if vi > 0 and s != [3, 5] and dt == "f32" and s != [1031]:
                        continue
                    f.case("%s/%s/%s%s" % (op, dt, sh(s), tag), op, [f.uniform(s, -6, 6, dt)], g, at)
                f.case("%s/%s/special%s" % (op, dt, tag), op, [torch.tensor(sp, dtype=DT[dt])], g, at)
        if op == "relu":
            for dt in ("i64", "i32", "i8"):
                f.case("relu/%s/3x4" % dt, "relu", [f.ints([3, 4], -20, 20, dt)], F.relu)
        if op in ("relu", "leaky_relu"):
            # zero inputs: relu'(0) = 0, leaky_relu'(0) = negative_slope (PyTorch's conventions at
            # the kink; no finite-difference check, name part "/zeros")
            for dt in FLOATS:
                x = torch.tensor([[0.0, -0.0, 1.5, 0.0], [-2.0, 0.0, -0.0, 0.25]], dtype=DT[dt])
                if op == "relu":
                    f.case("relu/%s/zeros" % dt, op, [x], F.relu)
                else:
                    f.case("leaky_relu/%s/zeros" % dt, op, [x], lambda x: F.leaky_relu(x, 0.2), {"negative_slope": 0.2})
    # prelu
    for dt in FLOATS:
        for xs, ws in (([2, 3, 4], [3]), ([2, 3, 4], [1]), ([4, 3], [3]), ([5], [1]), ([2, 3, 2, 2], [3])):
            if dt != "f32" and xs != [2, 3, 4]:
                continue
            f.case("prelu/%s/%s_w%s" % (dt, sh(xs), sh(ws)), "prelu", [f.uniform(xs, -5, 5, dt), f.uniform(ws, -1, 1, dt)], F.prelu)
    # zero inputs: dx = w g and dw gets x g = 0 there (PyTorch's convention at the kink; no
    # finite-difference check, name part "/zeros")
    for dt in FLOATS:
        x = torch.tensor([0.0, 1.5, -2.0, 0.0, -0.0, 0.5, 0.0, -1.0, 0.0, 2.0, -0.5, -0.0], dtype=DT[dt]).reshape(2, 3, 2)
        f.case("prelu/%s/zeros_w3" % dt, "prelu", [x, torch.tensor([0.25, -0.5, 1.5], dtype=DT[dt])], F.prelu)
        if dt in ("f32", "f64"):
            f.case("prelu/%s/zeros_w1" % dt, "prelu", [x, torch.tensor([0.75], dtype=DT[dt])], F.prelu)
    # softmax / log_softmax
    sm = [([3, 5], -1), ([3, 5], 0), ([2, 3, 4], 1), ([2, 3, 4], 0), ([2, 3, 4], 2), ([4, 100], -1), ([100, 3], 0),
          ([5], 0), ([], 0), ([0, 5], -1), ([2, 50, 3], 1), ([1, 7], -1), ([7, 1], -1)]
    for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
        for dt in FLOATS:
            r, a = rounded_tol(dt, 1e-6 if op == "softmax" else 1e-5) if dt in ("f16", "bf16") else (None, None)
            for i, (s, d) in enumerate(sm):
                if dt != "f32" and i not in (0, 1, 2, 5):
                    continue
                if dt == "f64" and i == 5:
                    continue
                x = f.uniform(s, -5, 5, dt)
                f.case("%s/%s/%s_dim%d" % (op, dt, sh(s), d), op, [x], lambda x, d=d, fn=fn: fn(x, d), {"dim": d},
                       rtol=r, atol=a, f32acc=True)
            x = torch.tensor([[1000.0, 999.0, -1000.0, 0.0], [-INF, 1.0, 2.0, -INF], [50.0, 50.0, 50.0, 50.0]], dtype=DT[dt])
            f.case("%s/%s/stability" % (op, dt), op, [x], lambda x, fn=fn: fn(x, -1), {"dim": -1}, rtol=r, atol=a,
                   f32acc=True)


# ----------------------------------------------------------------------------
# compare / logic / bitwise
# ----------------------------------------------------------------------------
def gen_compare_logic(f):
    C = [("equal", torch.eq, "torch.eq"), ("not_equal", torch.ne, "torch.ne"), ("greater", torch.gt, "torch.gt"),
         ("greater_equal", torch.ge, "torch.ge"), ("lower", torch.lt, "torch.lt"), ("lower_equal", torch.le, "torch.le")]
    for op, fn, nm in C:
        doc(op, "compare_logic", "%s(a, b) -> bool" % nm, "")
        doc(op + "_scalar", "compare_logic", "%s(x, other) -> bool" % nm, "other")
    for op, nm in (("bool_and", "torch.logical_and(a, b)"), ("bool_or", "torch.logical_or(a, b)"),
                   ("bool_xor", "torch.logical_xor(a, b)"), ("bool_not", "torch.logical_not(x)"),
                   ("bitwise_and", "torch.bitwise_and(a, b)"), ("bitwise_or", "torch.bitwise_or(a, b)"),
                   ("bitwise_xor", "torch.bitwise_xor(a, b)"), ("bitwise_not", "torch.bitwise_not(x)"),
                   ("shift_left", "torch.bitwise_left_shift(a, b)"), ("shift_right", "torch.bitwise_right_shift(a, b)  (arithmetic for signed)"),
                   ("shift_left_scalar", "torch.bitwise_left_shift(x, other)"), ("shift_right_scalar", "torch.bitwise_right_shift(x, other)")):
        doc(op, "compare_logic", nm, "other" if op.endswith("_scalar") else "")

    def cv(dt, s):
        if dt == "bool":
            return f.bools(s)
        if dt == "u8":
            return f.ints(s, 0, 4, dt)
        t = f.ints(s, -3, 4, "i64")
        if dt in FLOATS:
            return (t.double() * 0.5).to(DT[dt])
        return t.to(DT[dt])

    shapes = [([3, 4], [3, 4]), ([3, 1], [1, 4]), ([], [3]), ([0, 2], [2]), ([2, 3, 4], [4])]
    for op, fn, _ in C:
        for dt in ALL:
            for i, (sa, sb) in enumerate(shapes):
                if dt != "f32" and i != 1:
                    continue
                f.case("%s/%s/%s_%s" % (op, dt, sh(sa), sh(sb)), op, [cv(dt, sa), cv(dt, sb)], fn)
        for dt in FLOATS:
            a = torch.tensor([NAN, 1.0, NAN, INF, -INF, 0.0, -0.0, INF], dtype=DT[dt])
            b = torch.tensor([1.0, NAN, NAN, INF, INF, -0.0, 0.0, 1e30 if dt != "f16" else 6e4], dtype=DT[dt])
            f.case("%s/%s/special" % (op, dt), op, [a, b], fn)
        for da, db in (("i32", "f32"), ("u8", "i8"), ("bool", "i64"), ("f16", "f32"), ("i64", "f64"), ("bf16", "f16")):
            a = cv(da, [3, 4])
            b = cv(db, [4])
            if (da, db) == ("u8", "i8"):
                a = torch.tensor([0, 200, 255, 3], dtype=torch.uint8)
                b = torch.tensor([0, -56, -1, 3], dtype=torch.int8)
            if (da, db) == ("i32", "f32"):
                b = torch.tensor([0.5, 1.0, -1.0, 2.5])
            f.case("%s/%s_%s/promote" % (op, da, db), op, [a, b], fn)
        for dt, v in (("f32", 1.5), ("f32", 0.0), ("f64", -0.5), ("f16", 0.1), ("bf16", 1.0), ("i32", 2), ("i64", -1),
                      ("u8", 3), ("i8", -2), ("i16", 0), ("i32", 2.5), ("bool", True), ("f32", NAN), ("f32", INF), ("i64", 1.0)):
            x = cv(dt, [3, 4])
            if dt == "f16" and v == 0.1:
                x = torch.tensor([0.1, 0.0999, 0.2, -0.1], dtype=torch.float16)
            f.case("%s_scalar/%s/%s" % (op, dt, v), op + "_scalar", [x], lambda x, v=v, fn=fn: fn(x, v), {"other": v},
                   lowp_logic=False)
    # logical
    L = [("bool_and", torch.logical_and), ("bool_or", torch.logical_or), ("bool_xor", torch.logical_xor)]
    for op, fn in L:
        for sa, sb in shapes:
            f.case("%s/bool/%s_%s" % (op, sh(sa), sh(sb)), op, [f.bools(sa), f.bools(sb)], fn)
        a = torch.tensor([0.0, 1.0, NAN, -0.0, 0.5, 0.0])
        b = torch.tensor([0.0, 0.0, 1.0, 2.0, -1.0, NAN])
        f.case("%s/f32/nonzero" % op, op, [a, b], fn)
        f.case("%s/i32/nonzero" % op, op, [f.ints([3, 4], -1, 2, "i32"), f.ints([4], -1, 2, "i32")], fn)
        f.case("%s/bool_f32/mixed" % op, op, [f.bools([3, 4]), torch.tensor([0.0, 1.0, -2.0, 0.0])], fn)
        f.case("%s/u8_i64/mixed" % op, op, [f.ints([3, 4], 0, 2, "u8"), f.ints([3, 1], -1, 2, "i64")], fn)
    for dt in ("bool", "f32", "i32", "u8", "f16"):
        for s in ([3, 4], [], [0]):
            x = f.bools(s) if dt == "bool" else (f.ints(s, 0, 2, "i64") * f.ints(s, -2, 3, "i64")).to(DT[dt])
            f.case("bool_not/%s/%s" % (dt, sh(s)), "bool_not", [x], torch.logical_not)
    f.case("bool_not/f32/special", "bool_not", [torch.tensor([NAN, 0.0, -0.0, INF, 1e-30])], torch.logical_not)
    # bitwise
    rng = {"i64": (-2 ** 40, 2 ** 40), "i32": (-2 ** 31, 2 ** 31 - 1), "i16": (-2 ** 15, 2 ** 15), "i8": (-128, 128), "u8": (0, 256)}
    bits = {"i64": 64, "i32": 32, "i16": 16, "i8": 8, "u8": 8}
    for op, fn in (("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or), ("bitwise_xor", torch.bitwise_xor)):
        for dt in INTS + ["bool"]:
            for sa, sb in shapes[:3]:
                if dt == "bool":
                    a, b = f.bools(sa), f.bools(sb)
                else:
                    a, b = f.ints(sa, *rng[dt], dt), f.ints(sb, *rng[dt], dt)
                f.case("%s/%s/%s_%s" % (op, dt, sh(sa), sh(sb)), op, [a, b], fn)
        f.case("%s/u8_i8/promote" % op, op, [torch.tensor([200, 15, 255], dtype=torch.uint8), torch.tensor([-56, 7, -1], dtype=torch.int8)], fn)
    for dt in INTS + ["bool"]:
        for s in ([3, 4], [], [0]):
            x = f.bools(s) if dt == "bool" else f.ints(s, *rng[dt], dt)
            f.case("bitwise_not/%s/%s" % (dt, sh(s)), "bitwise_not", [x], torch.bitwise_not)
    for op, fn in (("shift_left", torch.bitwise_left_shift), ("shift_right", torch.bitwise_right_shift)):
        for dt in INTS:
            for sa, sb in shapes[:3]:
                a = f.ints(sa, *rng[dt], dt)
                b = f.ints(sb, 0, bits[dt], dt)
                f.case("%s/%s/%s_%s" % (op, dt, sh(sa), sh(sb)), op, [a, b], fn)
            a = torch.tensor([1, -1, 5, -5, 3, -128 if dt != "u8" else 128, 127, 0], dtype=DT[dt]) if dt != "u8" else \
                torch.tensor([1, 255, 5, 250, 3, 128, 127, 0], dtype=torch.uint8)
            b = torch.tensor([0, 1, 2, 3, bits[dt] - 1, 1, bits[dt] - 2, 7], dtype=DT[dt])
            f.case("%s/%s/edges" % (op, dt), op, [a, b], fn)
            for v in (1, 3):
                f.case("%s_scalar/%s/%d" % (op, dt, v), op + "_scalar", [f.ints([3, 4], *rng[dt], dt)],
                       lambda x, v=v, fn=fn: fn(x, v), {"other": v})


# ----------------------------------------------------------------------------
# reductions
# ----------------------------------------------------------------------------
FULL_SHAPES = [[], [1], [7], [3, 4], [2, 3, 4], [0], [0, 3], [1000]]
DIM_CASES = [([3, 4], 0, False), ([3, 4], 1, False), ([3, 4], -1, True), ([2, 3, 4], 1, False), ([2, 3, 4], [0, 2], False),
             ([2, 3, 4], [-1, 0], True), ([4, 5, 6], 2, True), ([5], 0, False), ([0, 3], 0, False), ([3, 0], 1, True),
             ([64, 65], 1, False), ([64, 65], 0, False), ([2, 3, 4], [0, 1, 2], False), ([1, 4], 0, False)]


def gen_reduce(f):
    doc("sum", "reduce", "torch.sum(x) / torch.sum(x, dim, keepdim)  (ints, bool -> i64)", "[dim, keepdim]")
    doc("mean", "reduce", "torch.mean(x) / torch.mean(x, dim, keepdim)", "[dim, keepdim]")
    doc("prod", "reduce", "torch.prod(x) / torch.prod(x, dim, keepdim)  (ints, bool -> i64; single dim only)", "[dim, keepdim]")
    doc("max", "reduce", "torch.max(x) / torch.amax(x, dim, keepdim)  (values only; NaN propagates)", "[dim, keepdim]")
    doc("min", "reduce", "torch.min(x) / torch.amin(x, dim, keepdim)  (values only; NaN propagates)", "[dim, keepdim]")
    doc("argmax", "reduce", "torch.argmax(x) (flat index) / torch.argmax(x, dim, keepdim)", "[dim, keepdim]")
    doc("argmin", "reduce", "torch.argmin(x) (flat index) / torch.argmin(x, dim, keepdim)", "[dim, keepdim]")
    doc("max_dim", "reduce", "torch.max(x, dim, keepdim) -> (values, indices)", "dim, keepdim")
    doc("min_dim", "reduce", "torch.min(x, dim, keepdim) -> (values, indices)", "dim, keepdim")
    doc("any", "reduce", "torch.any(x) / torch.any(x, dim, keepdim) -> bool", "[dim, keepdim]")
    doc("all", "reduce", "torch.all(x) / torch.all(x, dim, keepdim) -> bool", "[dim, keepdim]")
    doc("var", "reduce", "torch.var(x, dim, correction=correction, keepdim=keepdim)  (dim may be absent = all)", "[dim], correction, keepdim")
    doc("std", "reduce", "torch.std(x, dim, correction=correction, keepdim=keepdim)", "[dim], correction, keepdim")
    doc("norm", "reduce", "torch.linalg.vector_norm(x, ord, dim, keepdim)", "ord, [dim], keepdim")
    doc("logsumexp", "reduce", "torch.logsumexp(x, dim, keepdim)", "dim, keepdim")

    def reduce_tol(dt, n, mag=3.0):
        if dt not in TOL:
            return None, None
        return acc_tol(dt, n, mag)

    def nelem(s, dim):
        if dim is None:
            n = 1
            for v in s:
                n *= v
            return n
        dims = dim if isinstance(dim, list) else [dim]
        n = 1
        for d in dims:
            n *= s[d]
        return n

    def call(op, fnfull, fndim, x, dim, keepdim, name, extra=None, mag=3.0, **kw):
        dt = NAME[x.dtype]
        if dim is None:
            attrs = dict(extra or {})
            g = lambda t: fnfull(t)
        else:
            attrs = {"dim": dim, "keepdim": keepdim}
            attrs.update(extra or {})
            g = lambda t: fndim(t, dim, keepdim)
        K = nelem(list(x.shape), dim)
        if op == "prod" and dt in TOL:
            r, a = prod_tol(dt, K)
        else:
            r, a = reduce_tol(dt, K, mag)
        return f.case(name, op, [x], g, attrs, rtol=r, atol=a, f32acc=True, **kw)

    def vals(op, dt, s):
        if dt == "bool":
            return f.bools(s)
        if op == "prod":
            if dt in INTS:
                return f.ints(s, 1 if dt == "u8" else -2, 3, dt) if (nelem(s, None) <= 12 or dt == "u8") else \
                    torch.where(f.bools(s, 0.8), 1, f.ints(s, -2, 3, "i64")).to(DT[dt])
            return f.signed_mag(s, 0.7, 1.3, dt)
        if dt in INTS:
            lo, hi = {"u8": (0, 256), "i8": (-128, 128)}.get(dt, (-1000, 1000))
            return f.ints(s, lo, hi, dt)
        return f.uniform(s, -3, 3, dt)

    amax = lambda t, d, k: torch.amax(t, d, k)
    amin = lambda t, d, k: torch.amin(t, d, k)
    R = [("sum", torch.sum, lambda t, d, k: torch.sum(t, d, k), FLOATS + ["i64", "i32", "i8", "u8", "bool"]),
         ("mean", torch.mean, lambda t, d, k: torch.mean(t, d, k), FLOATS),
         ("prod", torch.prod, None, FLOATS + ["i64", "i32", "u8", "bool"]),
         ("max", torch.max, amax, FLOATS + ["i64", "i32", "i16", "i8", "u8"]),
         ("min", torch.min, amin, FLOATS + ["i64", "i32", "i16", "i8", "u8"]),
         ("any", torch.any, lambda t, d, k: torch.any(t, d, k), ["bool", "f32", "i32"]),
         ("all", torch.all, lambda t, d, k: torch.all(t, d, k), ["bool", "f32", "i32"])]
    for op, ffull, fdim, dts in R:
        for dt in dts:
            main = dt in ("f32", "bool") if op in ("any", "all") else dt == "f32"
            fulls = FULL_SHAPES if main else [[2, 3, 4]]
            for s in fulls:
                if op in ("max", "min") and 0 in s:
                    continue
                if s == [1000] and dt not in ("f32", "f64", "i64"):
                    continue
                call(op, ffull, fdim, vals(op, dt, s), None, False, "%s/%s/full_%s" % (op, dt, sh(s)))
            dcs = DIM_CASES if main else [DIM_CASES[3], DIM_CASES[5]]
            for s, d, k in dcs:
                if op == "prod":
                    if isinstance(d, list):
                        continue
                    fd = lambda t, d, k: torch.prod(t, d, k)
                else:
                    fd = fdim
                if op in ("max", "min") and s[d if isinstance(d, int) else d[0]] == 0:
                    continue
                if op in ("any", "all") and isinstance(d, list):
                    continue  # torch 1.13 any/all take a single dim
                call(op, ffull, fd, vals(op, dt, s), d, k, "%s/%s/%s_dim%s%s" % (op, dt, sh(s), d, "_keep" if k else ""))
    # any/all with empty full
    # NaN propagation
    for dt in FLOATS:
        x = torch.tensor([[1.0, NAN, 3.0], [-INF, 2.0, INF], [0.5, -0.5, NAN]], dtype=DT[dt])
        for op, ffull, fdim in (("max", torch.max, amax), ("min", torch.min, amin), ("sum", torch.sum, None),
                                ("mean", torch.mean, None)):
            call(op, ffull, fdim, x, None, False, "%s/%s/nan_full" % (op, dt))
            if fdim is not None:
                call(op, ffull, fdim, x, 1, False, "%s/%s/nan_dim1" % (op, dt))
                call(op, ffull, fdim, x, 0, True, "%s/%s/nan_dim0" % (op, dt))
        y = torch.tensor([[1.0, INF, 3.0], [-INF, 2.0, -3.0]], dtype=DT[dt])
        call("max", torch.max, amax, y, 1, False, "max/%s/inf_dim1" % dt)
        call("min", torch.min, amin, y, 1, False, "min/%s/inf_dim1" % dt)
    # ties: PyTorch shares the gradient evenly among the tied extremes. With three or more tied
    # the one-sided slopes and their average (a central difference) differ from that, so these
    # are exempt from the finite-difference check (name part "/ties"); the "pair_ties" case has
    # two-way ties only, where the central difference equals the even share, and keeps it.
    tx = torch.tensor([[3.0, -2.0, 3.0, -2.0], [2.0, 2.0, 2.0, 2.0], [-2.0, 3.0, 0.5, 3.0], [3.0, 3.0, -2.0, 1.0]])
    for dt in FLOATS:
        for op, ffull, fdim, x in (("max", torch.max, amax, tx.to(DT[dt])), ("min", torch.min, amin, -tx.to(DT[dt]))):
            call(op, ffull, fdim, x, None, False, "%s/%s/ties_full" % (op, dt))
            call(op, ffull, fdim, x, 1, False, "%s/%s/ties_dim1" % (op, dt))
            if dt in ("f32", "f64"):
                call(op, ffull, fdim, x, 0, True, "%s/%s/pair_ties_dim0_keep" % (op, dt))
                call(op, ffull, fdim, x.reshape(2, 2, 4), [0, 2], False, "%s/%s/ties_2x2x4_dim[0, 2]" % (op, dt))
    # argmax / argmin
    for op, tfn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
        for dt in FLOATS + ["i64", "i32", "i8", "u8"]:
            cases = [([7], None, False), ([3, 4], None, False), ([3, 4], 0, False), ([3, 4], 1, True), ([2, 3, 4], 1, False),
                     ([2, 3, 4], -1, True), ([4, 5, 6], 0, False), ([], None, False), ([64, 65], 1, False)]
            if dt != "f32":
                cases = cases[2:4] + cases[4:5]
            for s, d, k in cases:
                x = f.distinct(s, dt)
                if d is None:
                    f.case("%s/%s/full_%s" % (op, dt, sh(s)), op, [x], tfn)
                else:
                    f.case("%s/%s/%s_dim%d%s" % (op, dt, sh(s), d, "_keep" if k else ""), op, [x],
                           lambda t, d=d, k=k, tfn=tfn: tfn(t, d, k), {"dim": d, "keepdim": k})
        ties = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, -1.0, 5.0]])
        if op == "argmin":
            ties = -ties
        f.case("%s/f32/ties_first_dim1" % op, op, [ties], lambda t, tfn=tfn: tfn(t, 1, False), {"dim": 1, "keepdim": False})
        f.case("%s/f32/ties_first_dim0" % op, op, [ties], lambda t, tfn=tfn: tfn(t, 0, False), {"dim": 0, "keepdim": False})
        f.case("%s/f32/ties_first_full" % op, op, [ties], tfn)
        f.case("%s/i32/ties_first_dim1" % op, op, [ties.to(torch.int32)], lambda t, tfn=tfn: tfn(t, 1, False), {"dim": 1, "keepdim": False})
        f.case("%s/f32/nan" % op, op, [torch.tensor([[1.0, NAN, 3.0, NAN], [INF, 2.0, -INF, 0.0]])],
               lambda t, tfn=tfn: tfn(t, 1, False), {"dim": 1, "keepdim": False})
    # max_dim / min_dim
    for op, tfn in (("max_dim", torch.max), ("min_dim", torch.min)):
        for dt in FLOATS + ["i64", "i32", "u8"]:
            cases = [([3, 4], 0, False), ([3, 4], 1, True), ([2, 3, 4], 1, False), ([2, 3, 4], -1, True), ([5], 0, False),
                     ([64, 65], 1, False), ([0, 3], 1, False), ([4, 1], 1, False)]
            if dt != "f32":
                cases = cases[:3]
            for s, d, k in cases:
                f.case("%s/%s/%s_dim%d%s" % (op, dt, sh(s), d, "_keep" if k else ""), op, [f.distinct(s, dt)],
                       lambda t, d=d, k=k, tfn=tfn: tuple(tfn(t, d, k)), {"dim": d, "keepdim": k})
        f.case("%s/f32/nan" % op, op, [torch.tensor([[1.0, NAN, 3.0, 4.0], [INF, 2.0, -INF, 0.0]])],
               lambda t, tfn=tfn: tuple(tfn(t, 1, False)), {"dim": 1, "keepdim": False})
        # ties: torch returns the first extreme (documented), and the values' gradient goes to
        # that index only (no finite-difference check, name part "/ties")
        for dt in FLOATS:
            for d, k in ((1, False), (0, True)):
                if d == 0 and dt not in ("f32", "f64"):
                    continue
                x = tx.to(DT[dt]) if op == "max_dim" else -tx.to(DT[dt])
                f.case("%s/%s/ties_first_dim%d%s" % (op, dt, d, "_keep" if k else ""), op, [x],
                       lambda t, d=d, k=k, tfn=tfn: tuple(tfn(t, d, k)), {"dim": d, "keepdim": k})
    # var / std
    for op, tfn in (("var", torch.var), ("std", torch.std)):
        for dt in FLOATS:
            cs = [([3, 4], None, 1, False), ([3, 4], None, 0, False), ([3, 4], 1, 1, False), ([3, 4], 0, 0, True),
                  ([2, 3, 4], [0, 2], 1, False), ([2, 3, 4], -1, 0, True), ([1000], None, 1, False), ([64, 65], 1, 1, False),
                  ([5, 1], 1, 1, False), ([1, 5], 1, 0, False), ([2, 3, 4], [0, 1, 2], 0, False)]
            if dt != "f32":
                cs = cs[:4]
            for s, d, c, k in cs:
                x = f.uniform(s, -3, 3, dt) + (10 if s == [1000] else 0)
                n = nelem(s, d)
                r, a = acc_tol(dt, n, 3.0)
                if d is None:
                    f.case("%s/%s/full_%s_c%d" % (op, dt, sh(s), c), op, [x], lambda t, c=c, tfn=tfn: tfn(t, None, correction=c),
                           {"correction": c, "keepdim": False}, rtol=r, atol=a, f32acc=True)
                else:
                    f.case("%s/%s/%s_dim%s_c%d%s" % (op, dt, sh(s), d, c, "_keep" if k else ""), op, [x],
                           lambda t, d=d, c=c, k=k, tfn=tfn: tfn(t, d, correction=c, keepdim=k),
                           {"dim": d, "correction": c, "keepdim": k}, rtol=r, atol=a, f32acc=True)
    # norm
    for dt in FLOATS:
        for ordv in (1.0, 2.0, INF, 3.0):
            cs = [([3, 4], None, False), ([3, 4], 1, False), ([2, 3, 4], [0, 2], True), ([1000], None, False), ([5], 0, False),
                  ([0, 3], None, False), ([64, 65], 0, False)]
            if dt != "f32":
                cs = cs[:2]
            for s, d, k in cs:
                if 0 in s and ordv == INF:
                    continue
                x = f.uniform(s, -3, 3, dt)
                r, a = acc_tol(dt, nelem(s, d), 3.0)
                at = {"ord": ordv, "dim": d, "keepdim": k} if d is not None else {"ord": ordv, "keepdim": k}
                f.case("norm/%s/%s_ord%s_dim%s" % (dt, sh(s), ordv, d), "norm", [x],
                       lambda t, o=ordv, d=d, k=k: torch.linalg.vector_norm(t, o, d, k), at, rtol=r, atol=a, f32acc=True)
    f.case("norm/f32/special", "norm", [torch.tensor([1.0, INF, 2.0])], lambda t: torch.linalg.vector_norm(t, 2.0), {"ord": 2.0, "keepdim": False})
    # logsumexp
    for dt in FLOATS:
        cs = [([3, 4], 1, False), ([3, 4], 0, True), ([2, 3, 4], [0, 2], False), ([4, 100], -1, False), ([5], 0, False),
              ([0, 3], 1, False)]
        if dt != "f32":
            cs = cs[:2]
        for s, d, k in cs:
            x = f.uniform(s, -5, 5, dt)
            f.case("logsumexp/%s/%s_dim%s%s" % (dt, sh(s), d, "_keep" if k else ""), "logsumexp", [x],
                   lambda t, d=d, k=k: torch.logsumexp(t, d, k), {"dim": d, "keepdim": k}, f32acc=True)
        x = torch.tensor([[1000.0, 999.0, 0.0], [-INF, 1.0, 2.0], [-INF, -INF, -INF], [-1000.0, -1000.0, -1001.0]], dtype=DT[dt])
        f.case("logsumexp/%s/stability" % dt, "logsumexp", [x], lambda t: torch.logsumexp(t, 1, False), {"dim": 1, "keepdim": False}, f32acc=True)


# ----------------------------------------------------------------------------
# scan / sort
# ----------------------------------------------------------------------------
def gen_scan_sort(f):
    doc("cumsum", "scan_sort", "torch.cumsum(x, dim)  (ints, bool -> i64)", "dim")
    doc("cumprod", "scan_sort", "torch.cumprod(x, dim)  (ints, bool -> i64)", "dim")
    doc("cummax", "scan_sort", "torch.cummax(x, dim) -> (values, indices)", "dim")
    doc("cummin", "scan_sort", "torch.cummin(x, dim) -> (values, indices)", "dim")
    doc("sort", "scan_sort", "torch.sort(x, dim=dim, descending=descending, stable=True) -> (values, indices)", "dim, descending, stable")
    doc("argsort", "scan_sort", "torch.sort(x, dim=dim, descending=descending, stable=True).indices", "dim, descending, stable")
    doc("topk", "scan_sort", "torch.topk(x, k, dim, largest, sorted=True) -> (values, indices)", "k, dim, largest, sorted")
    scan_cases = [([3, 4], 0), ([3, 4], 1), ([2, 3, 4], 1), ([2, 3, 4], -1), ([100], 0), ([0, 3], 0), ([], 0), ([5, 1], 1),
                  ([8, 130], 1)]
    for op, tfn in (("cumsum", torch.cumsum), ("cumprod", torch.cumprod)):
        for dt in FLOATS + ["i64", "i32", "u8", "bool"]:
            cs = scan_cases if dt == "f32" else scan_cases[:3]
            for s, d in cs:
                if dt == "bool":
                    x = f.bools(s)
                elif op == "cumprod":
                    x = f.signed_mag(s, 0.8, 1.25, dt) if dt in FLOATS else f.ints(s, 0 if dt == "u8" else -2, 3, dt)
                else:
                    x = f.rnd(s, dt, -3, 3)
                n = s[d] if s else 1
                r, a = acc_tol(dt, n, 3.0) if dt in TOL else (None, None)
                f.case("%s/%s/%s_dim%d" % (op, dt, sh(s), d), op, [x], lambda t, d=d, tfn=tfn: tfn(t, d), {"dim": d},
                       rtol=r, atol=a, f32acc=True)
    for op, tfn in (("cummax", torch.cummax), ("cummin", torch.cummin)):
        for dt in FLOATS + ["i64", "i32", "u8"]:
            cs = scan_cases[:5] + [([0, 3], 0), ([], 0)] if dt == "f32" else scan_cases[:3]
            for s, d in cs:
                f.case("%s/%s/%s_dim%d" % (op, dt, sh(s), d), op, [f.distinct(s, dt)],
                       lambda t, d=d, tfn=tfn: tuple(tfn(t, d)), {"dim": d})
        f.case("%s/f32/nan" % op, op, [torch.tensor([1.0, 3.0, NAN, 2.0, 5.0, -1.0])],
               lambda t, tfn=tfn: tuple(tfn(t, 0)), {"dim": 0})
    # sort / argsort
    sort_cases = [([7], -1, False), ([7], -1, True), ([3, 5], 1, False), ([3, 5], 0, True), ([2, 3, 4], 1, False),
                  ([2, 3, 4], -1, True), ([1000], 0, False), ([0, 3], 1, False), ([], 0, False), ([4, 1], 1, True), ([16, 70], 1, True)]

    def sort_vals(dt, s):
        if dt in FLOATS:
            t = f.ints(s, -4, 5, "i64").double() * 0.5  # many ties -> tests stability
            return t.to(DT[dt]) if (t.numel() < 200) else f.uniform(s, -5, 5, dt)
        if dt == "u8":
            return f.ints(s, 0, 10, dt)
        return f.ints(s, -5, 6, dt)

    def has_ties(t, d):
        """equal values along dim d (the sorting dim): the stability cases. L has a kink at every
        tie, so these (name suffix "_ties") are exempt from the finite-difference check."""
        if t.dim() == 0 or t.shape[d] < 2:
            return False
        v = torch.sort(t, dim=d).values
        n = t.shape[d]
        return bool((v.narrow(d, 1, n - 1) == v.narrow(d, 0, n - 1)).any())

    for op in ("sort", "argsort"):
        for dt in FLOATS + ["i64", "i32", "i16", "i8", "u8"]:
            cs = sort_cases if dt == "f32" else (sort_cases[:4] if op == "sort" else sort_cases[2:3])
            for s, d, desc in cs:
                x = sort_vals(dt, s)
                if op == "sort":
                    g = lambda t, d=d, desc=desc: tuple(torch.sort(t, dim=d, descending=desc, stable=True))
                else:
                    g = lambda t, d=d, desc=desc: torch.sort(t, dim=d, descending=desc, stable=True)[1]
                f.case("%s/%s/%s_dim%d%s%s" % (op, dt, sh(s), d, "_desc" if desc else "", "_ties" if has_ties(x, d) else ""),
                       op, [x], g, {"dim": d, "descending": desc, "stable": True})
        for dt in FLOATS:
            x = torch.tensor([3.0, NAN, -INF, 1.0, NAN, INF, -0.0, 0.0, 1.0, -2.0], dtype=DT[dt])
            for desc in (False, True):
                if op == "sort":
                    g = lambda t, desc=desc: tuple(torch.sort(t, dim=0, descending=desc, stable=True))
                else:
                    g = lambda t, desc=desc: torch.sort(t, dim=0, descending=desc, stable=True)[1]
                f.case("%s/%s/special%s" % (op, dt, "_desc" if desc else ""), op, [x], g,
                       {"dim": 0, "descending": desc, "stable": True})
    # topk
    tk = [([7], 3, -1, True), ([7], 3, -1, False), ([3, 6], 2, 1, True), ([3, 6], 3, 0, False), ([2, 3, 4], 2, 1, True),
          ([2, 5, 4], 5, 1, False), ([100], 10, 0, True), ([5], 5, 0, True), ([5], 0, 0, True), ([16, 70], 7, 1, True),
          ([4, 1], 1, 1, False)]
    for dt in FLOATS + ["i64", "i32", "u8", "i8"]:
        cs = tk if dt == "f32" else tk[:3]
        for s, k, d, lg in cs:
            f.case("topk/%s/%s_k%d_dim%d%s" % (dt, sh(s), k, d, "" if lg else "_smallest"), "topk", [f.distinct(s, dt)],
                   lambda t, k=k, d=d, lg=lg: tuple(torch.topk(t, k, d, lg, True)),
                   {"k": k, "dim": d, "largest": lg, "sorted": True})


# ----------------------------------------------------------------------------
# linalg
# ----------------------------------------------------------------------------
def gen_linalg(f):
    doc("matmul", "linalg", "torch.matmul(a, b)", "")
    doc("dot", "linalg", "torch.dot(a, b)", "")
    doc("outer", "linalg", "torch.outer(a, b)", "")
    mm = [([4], [4]), ([3, 4], [4, 5]), ([4], [4, 5]), ([3, 4], [4]), ([2, 1, 3, 4], [5, 4, 6]), ([2, 3, 4], [2, 4, 5]),
          ([3, 4], [2, 4, 5]), ([2, 3, 4], [4]), ([4], [2, 4, 5]), ([33, 65], [65, 17]), ([1, 1], [1, 1]), ([0, 3], [3, 4]),
          ([3, 0], [0, 4]), ([2, 5, 8], [8, 1]), ([1, 7], [7, 9]), ([64, 16], [16, 64]), ([3, 2, 1, 4], [1, 2, 4, 3]), ([1], [1])]
    for dt in FLOATS + ["i64", "i32"]:
        cs = mm if dt == "f32" else [mm[i] for i in (0, 1, 2, 3, 4, 9, 12)]
        for sa, sb in cs:
            if dt in INTS:
                a, b = f.ints(sa, -5, 6, dt), f.ints(sb, -5, 6, dt)
            else:
                a, b = f.uniform(sa, -1, 1, dt), f.uniform(sb, -1, 1, dt)
            K = sa[-1]
            r, at = acc_tol(dt, K, 1.0) if dt in TOL else (None, None)
            f.case("matmul/%s/%s_%s" % (dt, sh(sa), sh(sb)), "matmul", [a, b], torch.matmul, rtol=r, atol=at, f32acc=True)
    for dt in FLOATS + ["i64", "i32"]:
        for n in ([7, 1, 100, 0] if dt == "f32" else [7]):
            a = f.ints([n], -5, 6, dt) if dt in INTS else f.uniform([n], -1, 1, dt)
            b = f.ints([n], -5, 6, dt) if dt in INTS else f.uniform([n], -1, 1, dt)
            r, at = acc_tol(dt, n, 1.0) if dt in TOL else (None, None)
            f.case("dot/%s/%d" % (dt, n), "dot", [a, b], torch.dot, rtol=r, atol=at, f32acc=True)
        for na, nb in ([(3, 4), (1, 5), (0, 3), (5, 1)] if dt == "f32" else [(3, 4)]):
            a = f.ints([na], -5, 6, dt) if dt in INTS else f.uniform([na], -2, 2, dt)
            b = f.ints([nb], -5, 6, dt) if dt in INTS else f.uniform([nb], -2, 2, dt)
            f.case("outer/%s/%d_%d" % (dt, na, nb), "outer", [a, b], torch.outer, f32acc=True)
    f.case("matmul/f32/special", "matmul", [torch.tensor([[1.0, NAN], [INF, 1.0]]), torch.tensor([[1.0, 0.0], [0.0, 1.0]])],
           torch.matmul)
    # a product with a bias along its columns (one GEMM with a bias epilogue on the GPU): matrices,
    # batches folded into rows, a vector input, an empty inner dim (the bias alone)
    doc("linear", "linalg", "torch.nn.functional.linear(x, weight, bias)", "")
    lin = [([3, 5], [4, 5]), ([2, 3, 5], [4, 5]), ([5], [4, 5]), ([3, 0], [4, 0]), ([33, 65], [17, 65]),
           ([2, 1, 7], [9, 7])]
    for dt in FLOATS:
        for sx, sw in (lin if dt == "f32" else lin[:2]):
            x, w, b = f.uniform(sx, -1, 1, dt), f.uniform(sw, -1, 1, dt), f.uniform([sw[0]], -1, 1, dt)
            r, at = acc_tol(dt, sx[-1] + 1, 1.0)
            f.case("linear/%s/%s_%s" % (dt, sh(sx), sh(sw)), "linear", [x, w, b], F.linear, rtol=r, atol=at, f32acc=True)


# ----------------------------------------------------------------------------
# shape
# ----------------------------------------------------------------------------
def gen_shape(f):
    D = [("reshape", "torch.reshape(x, shape)", "shape"), ("flatten", "torch.flatten(x, start_dim, end_dim)", "start_dim, end_dim"),
         ("unsqueeze", "torch.unsqueeze(x, dim)", "dim"), ("squeeze", "torch.squeeze(x) / torch.squeeze(x, dim)", "[dim]"),
         ("permute", "x.permute(dims)", "dims"), ("transpose", "torch.transpose(x, dim0, dim1)", "dim0, dim1"),
         ("swap_dims", "torch.transpose(x, dim0, dim1)", "dim0, dim1"),
         ("movedim", "torch.movedim(x, source, destination)", "source, destination"), ("flip", "torch.flip(x, dims)", "dims"),
         ("roll", "torch.roll(x, shifts, dims)  (no dims: roll the flattened tensor)", "shifts, [dims]"),
         ("expand", "x.expand(size)", "size"), ("repeat", "x.repeat(repeats)", "repeats"), ("tile", "torch.tile(x, dims)", "dims"),
         ("narrow", "torch.narrow(x, dim, start, length)", "dim, start, length"),
         ("slice", "x[start0:end0:step0, start1:end1:step1, ...]", "ranges ([[start,end,step] per dim])"),
         ("slice_assign", "y = x.clone(); y[ranges] = value; y  (inputs: x, value)", "ranges"),
         ("chunk", "torch.chunk(x, chunks, dim) -> outputs", "chunks, dim"),
         ("split", "torch.split(x, split_size_or_sections, dim) -> outputs", "split_size_or_sections, dim"),
         ("cat", "torch.cat(inputs, dim)", "dim"), ("stack", "torch.stack(inputs, dim)", "dim"),
         ("pad", "F.pad(x, pad, mode, value)", "pad, mode, [value]"), ("tril", "torch.tril(x, diagonal)", "diagonal"),
         ("triu", "torch.triu(x, diagonal)", "diagonal"), ("one_hot", "F.one_hot(x, num_classes)", "num_classes"),
         ("contiguous", "x.contiguous() (identity)", "")]
    for op, call, keys in D:
        doc(op, "shape", call, keys)

    def X(s, dt="f32"):
        if dt == "bool":
            return f.bools(s)
        if dt in INTS:
            return f.ints(s, 0 if dt == "u8" else -50, 50, dt)
        return f.quarter(s, -20, 20, dt)

    for s, new in (([2, 3, 4], [6, 4]), ([2, 3, 4], [-1]), ([2, 3, 4], [4, -1, 2]), ([24], [2, 3, 4]), ([], [1]), ([1], []),
                   ([0, 3], [3, 0]), ([2, 3, 4], [3, -1]), ([2, 3, 4], [1, 24, 1]), ([6], [-1, 1, 2])):
        f.case("reshape/f32/%s_to_%s" % (sh(s), sh(new)), "reshape", [X(s)], lambda t, n=new: t.reshape(n), {"shape": new})
    for dt in ("i64", "bool", "f16"):
        f.case("reshape/%s/2x3x4_to_4x6" % dt, "reshape", [X([2, 3, 4], dt)], lambda t: t.reshape([4, 6]), {"shape": [4, 6]})
    for s, a, b in (([2, 3, 4], 0, -1), ([2, 3, 4], 1, 2), ([2, 3, 4], 0, 1), ([], 0, -1), ([5], 0, 0), ([2, 3, 4, 5], 1, -2),
                    ([2, 0, 3], 0, 1)):
        f.case("flatten/f32/%s_%d_%d" % (sh(s), a, b), "flatten", [X(s)], lambda t, a=a, b=b: torch.flatten(t, a, b),
               {"start_dim": a, "end_dim": b})
    for s, d in (([], 0), ([], -1), ([3], 0), ([3], 1), ([3], -1), ([2, 3], 1), ([2, 3], -2), ([2, 3], 2)):
        f.case("unsqueeze/f32/%s_%d" % (sh(s), d), "unsqueeze", [X(s)], lambda t, d=d: torch.unsqueeze(t, d), {"dim": d})
    for s, d in (([1, 3, 1, 2], None), ([1, 3, 1, 2], 0), ([1, 3, 1, 2], -2), ([1, 3], 1), ([1], None), ([1], 0), ([], None),
                 ([2, 3], None), ([3, 1, 0], 1)):
        if d is None:
            f.case("squeeze/f32/%s_all" % sh(s), "squeeze", [X(s)], torch.squeeze)
        else:
            f.case("squeeze/f32/%s_%d" % (sh(s), d), "squeeze", [X(s)], lambda t, d=d: torch.squeeze(t, d), {"dim": d})
    for dt in ("f32", "i64", "bool", "bf16"):
        for s, p in (([2, 3, 4], [2, 0, 1]), ([2, 3, 4], [1, 0, 2]), ([2, 3, 4], [0, 1, 2]), ([2, 3, 4, 5], [3, 1, 0, 2]), ([3], [0]),
                     ([], []), ([2, 3, 4], [-1, 0, 1]), ([5, 7], [1, 0])):
            if dt != "f32" and s != [2, 3, 4, 5]:
                continue
            f.case("permute/%s/%s_%s" % (dt, sh(s), "_".join(map(str, p))), "permute", [X(s, dt)], lambda t, p=p: t.permute(p), {"dims": p})
    for op in ("transpose", "swap_dims"):
        for s, a, b in (([2, 3, 4], 0, 1), ([2, 3, 4], -1, 0), ([2, 3, 4], 1, 2), ([3, 4], 0, 1), ([3, 4], 1, 1), ([5], 0, 0)):
            f.case("%s/f32/%s_%d_%d" % (op, sh(s), a, b), op, [X(s)], lambda t, a=a, b=b: torch.transpose(t, a, b), {"dim0": a, "dim1": b})
        f.case("%s/i32/2x3x4_0_2" % op, op, [X([2, 3, 4], "i32")], lambda t: torch.transpose(t, 0, 2), {"dim0": 0, "dim1": 2})
    for s, src, dst in (([2, 3, 4], 0, 2), ([2, 3, 4], -1, 0), ([2, 3, 4, 5], [0, 1], [2, 3]), ([2, 3, 4, 5], [3, 0], [0, 1]),
                        ([2, 3], 1, 1)):
        f.case("movedim/f32/%s_%s_%s" % (sh(s), src, dst), "movedim", [X(s)], lambda t, a=src, b=dst: torch.movedim(t, a, b),
               {"source": src, "destination": dst})
    for dt in ("f32", "i64", "bool"):
        for s, d in (([2, 3, 4], [0]), ([2, 3, 4], [1]), ([2, 3, 4], [0, 2]), ([3, 4], [-1]), ([5], [0]), ([3, 4], [0, 1]),
                     ([3, 4], []), ([], [])):
            if dt != "f32" and s != [3, 4]:
                continue
            f.case("flip/%s/%s_%s" % (dt, sh(s), d), "flip", [X(s, dt)], lambda t, d=d: torch.flip(t, d), {"dims": d})
    for s, sft, d in (([5], 2, 0), ([5], -1, 0), ([5], 7, 0), ([3, 4], 1, 1), ([3, 4], [1, -2], [0, 1]), ([3, 4], 5, None),
                      ([2, 3, 4], 2, -1), ([2, 3, 4], [1, 1], [0, 2]), ([3, 4], 0, 0), ([0, 3], 1, 1)):
        at = {"shifts": sft} if d is None else {"shifts": sft, "dims": d}
        f.case("roll/f32/%s_%s_%s" % (sh(s), sft, d), "roll", [X(s)],
               (lambda t, s_=sft: torch.roll(t, s_)) if d is None else (lambda t, s_=sft, d=d: torch.roll(t, s_, d)), at)
    for s, sz in (([3, 1], [3, 4]), ([1, 3], [2, 4, 3]), ([3, 1], [-1, 5]), ([], [2, 3]), ([3], [2, 3]), ([2, 1, 1], [2, 3, 4]),
                  ([3, 1], [3, 1]), ([1], [0])):
        f.case("expand/f32/%s_to_%s" % (sh(s), sh(sz)), "expand", [X(s)], lambda t, sz=sz: t.expand(sz), {"size": sz})
    f.case("expand/i64/3x1_to_3x4", "expand", [X([3, 1], "i64")], lambda t: t.expand([3, 4]), {"size": [3, 4]})
    for s, r in (([2, 3], [2, 1]), ([2, 3], [1, 1, 2]), ([3], [2, 3]), ([2, 3], [1, 1]), ([], [3]), ([2, 3], [0, 2]), ([2, 1, 2], [2, 2, 2])):
        f.case("repeat/f32/%s_%s" % (sh(s), sh(r)), "repeat", [X(s)], lambda t, r=r: t.repeat(r), {"repeats": r})
    f.case("repeat/bool/2x3_2x2", "repeat", [X([2, 3], "bool")], lambda t: t.repeat([2, 2]), {"repeats": [2, 2]})
    for s, r in (([2, 3], [2]), ([2, 3], [2, 1]), ([3], [2, 2]), ([2, 3], [1, 2, 1]), ([], [3]), ([2, 3], [3, 2])):
        f.case("tile/f32/%s_%s" % (sh(s), sh(r)), "tile", [X(s)], lambda t, r=r: torch.tile(t, r), {"dims": r})
    for s, d, st, ln in (([5, 4], 0, 1, 3), ([5, 4], 1, 2, 2), ([5, 4], -1, 0, 4), ([5, 4], 0, -2, 2), ([5, 4], 0, 5, 0),
                         ([2, 3, 4], 1, 1, 1), ([7], 0, 3, 4)):
        f.case("narrow/f32/%s_%d_%d_%d" % (sh(s), d, st, ln), "narrow", [X(s)], lambda t, d=d, st=st, ln=ln: torch.narrow(t, d, st, ln),
               {"dim": d, "start": st, "length": ln})
    sl = [([10], [[2, 8, 1]]), ([10], [[0, 10, 3]]), ([10], [[-3, 10, 1]]), ([10], [[1, -1, 2]]), ([10], [[-100, 100, 4]]),
          ([10], [[7, 3, 1]]), ([5, 6], [[1, 4, 1], [0, 6, 2]]), ([5, 6], [[0, 5, 2], [-2, 6, 1]]),
          ([2, 5, 6], [[0, 2, 1], [1, 5, 3], [5, 0, 1]]), ([2, 5, 6], [[1, 2, 1], [-4, -1, 1], [0, 6, 5]]),
          ([4, 4], [[3, 4, 1], [0, 4, 4]]), ([0, 3], [[0, 0, 1], [1, 3, 1]])]

    def slc(r):
        return tuple(slice(a, b, c) for a, b, c in r)

    for dt in ("f32", "i64", "bool"):
        for s, r in sl:
            if dt != "f32" and s != [5, 6]:
                continue
            f.case("slice/%s/%s_%s" % (dt, sh(s), r), "slice", [X(s, dt)], lambda t, r=r: t[slc(r)], {"ranges": r})
    for dt in ("f32", "i64", "bool", "f16"):
        for s, r in sl:
            if dt != "f32" and s != [5, 6]:
                continue
            x = X(s, dt)
            vs = list(x[slc(r)].shape)
            v = X(vs, dt)

            def sa(t, v, r=r):
                y = t.clone()
                y[slc(r)] = v
                return y

            f.case("slice_assign/%s/%s_%s" % (dt, sh(s), r), "slice_assign", [x, v], sa, {"ranges": r})
    for s, c, d in (([7], 3, 0), ([6], 4, 0), ([6], 3, 0), ([5, 4], 2, 1), ([5, 4], 5, 0), ([2, 6, 3], 4, 1), ([3], 5, 0),
                    ([0, 4], 2, 1)):
        f.case("chunk/f32/%s_%d_%d" % (sh(s), c, d), "chunk", [X(s)], lambda t, c=c, d=d: tuple(torch.chunk(t, c, d)),
               {"chunks": c, "dim": d})
    for s, sp, d in (([5], 2, 0), ([6], 3, 0), ([5, 4], [1, 3, 1], 0), ([5, 4], [4], 1), ([2, 6, 3], [2, 0, 4], 1), ([5, 4], 10, 0),
                     ([5, 4], 1, -1)):
        f.case("split/f32/%s_%s_%d" % (sh(s), sp, d), "split", [X(s)], lambda t, sp=sp, d=d: tuple(torch.split(t, sp, d)),
               {"split_size_or_sections": sp, "dim": d})
    for dt in ("f32", "i64", "bool", "f16", "u8"):
        for shapes, d in ((([2, 3], [4, 3]), 0), (([2, 3], [2, 1], [2, 4]), 1), (([2, 3, 4], [2, 3, 1]), -1), (([0, 3], [2, 3]), 0),
                          (([3],), 0), (([2, 3], [2, 3], [2, 3]), 0), (([], ), None)):
            if d is None:
                continue  # cat of 0-d tensors is an error in torch
            if dt != "f32" and len(shapes) != 2:
                continue
            xs = [X(s, dt) for s in shapes]
            f.case("cat/%s/%s_dim%d" % (dt, "_".join(sh(s) for s in shapes), d), "cat", xs, lambda *t, d=d: torch.cat(t, d), {"dim": d})
    for shapes, d in ((([2, 3], [2, 3]), 0), (([2, 3], [2, 3], [2, 3]), 1), (([2, 3], [2, 3]), -1), (([], [], []), 0),
                      (([0, 2], [0, 2]), 1), (([3],), 0)):
        xs = [X(s) for s in shapes]
        f.case("stack/f32/%s_dim%d" % ("_".join(sh(s) for s in shapes), d), "stack", xs, lambda *t, d=d: torch.stack(t, d), {"dim": d})
    f.case("stack/i64/3_3_dim1", "stack", [X([3], "i64"), X([3], "i64")], lambda *t: torch.stack(t, 1), {"dim": 1})
    pads = [([3, 4], [1, 2], "constant", 0.0), ([3, 4], [1, 2], "constant", 2.5), ([2, 3, 4], [1, 1, 2, 0], "constant", -1.0),
            ([3, 4], [-1, 1], "constant", 0.0), ([3, 4], [0, 0, 1, 1], "constant", 0.0), ([2, 3, 4], [1, 0, 0, 1, 2, 1], "constant", 7.0),
            ([5], [2, 3], "constant", 0.0), ([1, 2, 5], [2, 1], "reflect", None), ([2, 5], [3, 4], "reflect", None),
            ([1, 2, 4, 5], [1, 1, 2, 1], "reflect", None), ([2, 4, 5], [3, 0, 0, 3], "reflect", None),
            ([1, 2, 4], [2, 3], "replicate", None), ([1, 1, 3, 4], [1, 2, 0, 1], "replicate", None), ([2, 3, 4], [4, 4], "replicate", None),
            ([1, 1, 2, 3, 3], [1, 1, 1, 0, 0, 2], "replicate", None), ([1, 1, 3, 3, 3], [1, 1, 1, 1, 2, 0], "reflect", None)]
    for dt in ("f32", "f64", "i64"):
        for s, p, mode, val in pads:
            if dt != "f32" and not (mode == "constant" and s == [3, 4]) and not (dt == "f64" and mode != "constant" and s[0] == 1 and len(s) == 3):
                continue
            if dt == "i64" and mode != "constant":
                continue
            x = X(s, dt)
            if mode == "constant":
                v = int(val) if dt in INTS else val
                at = {"pad": p, "mode": mode, "value": v}
                g = lambda t, p=p, v=v: F.pad(t, p, "constant", v)
            else:
                at = {"pad": p, "mode": mode}
                g = lambda t, p=p, mode=mode: F.pad(t, p, mode)
            f.case("pad/%s/%s_%s_%s" % (dt, sh(s), mode, p), "pad", [x], g, at)
    for op, tfn in (("tril", torch.tril), ("triu", torch.triu)):
        for dt in ("f32", "i64", "bool", "f16"):
            for s, dg in (([4, 4], 0), ([4, 4], 1), ([4, 4], -1), ([3, 5], 0), ([5, 3], 2), ([2, 3, 4], 0), ([3, 3], 5), ([3, 3], -5)):
                if dt != "f32" and s != [4, 4]:
                    continue
                f.case("%s/%s/%s_%d" % (op, dt, sh(s), dg), op, [X(s, dt)], lambda t, dg=dg, tfn=tfn: tfn(t, dg), {"diagonal": dg})
    for s, nc in (([5], 4), ([5], -1), ([2, 3], 6), ([0], 3), ([], 3)):
        x = f.ints(s, 0, 4, "i64")
        f.case("one_hot/i64/%s_%d" % (sh(s), nc), "one_hot", [x], lambda t, nc=nc: F.one_hot(t, nc), {"num_classes": nc})
    for dt, s in (("f32", [2, 3]), ("i64", [4]), ("bool", [2, 2]), ("f16", []), ("f32", [0, 2])):
        f.case("contiguous/%s/%s" % (dt, sh(s)), "contiguous", [X(s, dt)], lambda t: t.contiguous())


# ----------------------------------------------------------------------------
# index
# ----------------------------------------------------------------------------
def gen_index(f):
    D = [("gather", "torch.gather(x, dim, index)  (inputs: x, index)", "dim"),
         ("scatter", "x.scatter(dim, index, src)  (inputs: x, index, src; unique indices per target)", "dim"),
         ("scatter_add", "x.scatter_add(dim, index, src)  (inputs: x, index, src)", "dim"),
         ("select", "torch.select(x, dim, index)", "dim, index"),
         ("select_assign", "x.index_copy(dim, index, src)  (inputs: x, index, src; unique indices)", "dim"),
         ("select_add", "x.index_add(dim, index, source)  (inputs: x, index, source)", "dim"),
         ("index_select", "torch.index_select(x, dim, index)  (inputs: x, index)", "dim"),
         ("take", "torch.take(x, index)  (inputs: x, index; negative indices wrap)", ""),
         ("nonzero", "torch.nonzero(x) -> i64 [n, ndim]", ""), ("argwhere", "torch.argwhere(x) -> i64 [n, ndim]", ""),
         ("masked_select", "torch.masked_select(x, mask)  (inputs: x, mask; broadcast)", "")]
    for op, call, keys in D:
        doc(op, "index", call, keys)

    def X(s, dt="f32"):
        if dt == "bool":
            return f.bools(s)
        if dt in INTS:
            return f.ints(s, 0 if dt == "u8" else -50, 50, dt)
        return f.quarter(s, -20, 20, dt)

    def uniq_index(ishape, dim, size):
        """index tensor of shape ishape with distinct values along dim, each < size."""
        ishape = list(ishape)
        nd = len(ishape)
        dim = dim % nd
        moved = [ishape[i] for i in range(nd) if i != dim] + [ishape[dim]]
        lines = 1
        for v in moved[:-1]:
            lines *= v
        rows = [torch.randperm(size, generator=f.g)[:ishape[dim]] for _ in range(lines)]
        t = torch.stack(rows).reshape(moved) if rows else torch.zeros(moved, dtype=torch.int64)
        return torch.movedim(t, -1, dim).contiguous()

    for dt in ("f32", "f64", "i64", "bool", "f16", "bf16", "i32"):
        for xs, d, isz in (([3, 4], 0, [2, 4]), ([3, 4], 1, [3, 6]), ([3, 4], 1, [2, 2]), ([2, 3, 4], 2, [2, 3, 2]), ([2, 3, 4], 0, [4, 2, 1]),
                           ([5], 0, [8]), ([3, 4], -1, [3, 0])):
            if dt != "f32" and xs != [3, 4]:
                continue
            idx = f.ints(isz, 0, xs[d], "i64")
            f.case("gather/%s/%s_d%d_%s" % (dt, sh(xs), d, sh(isz)), "gather", [X(xs, dt), idx],
                   lambda t, i, d=d: torch.gather(t, d, i), {"dim": d})
    for dt in ("f32", "f64", "i64", "bool", "f16", "i32"):
        for xs, d, isz in (([3, 4], 0, [2, 4]), ([3, 4], 1, [3, 2]), ([4, 5], 0, [3, 2]), ([2, 3, 4], 2, [2, 3, 3]), ([2, 3, 4], 1, [1, 3, 2]),
                           ([6], 0, [4])):
            if dt != "f32" and xs != [3, 4]:
                continue
            idx = uniq_index(isz, d, xs[d])
            src = X(isz, dt)
            f.case("scatter/%s/%s_d%d_%s" % (dt, sh(xs), d, sh(isz)), "scatter", [X(xs, dt), idx, src],
                   lambda t, i, s, d=d: t.scatter(d, i, s), {"dim": d})
    for dt in ("f32", "f64", "i64", "i32", "f16", "bf16"):
        for xs, d, isz in (([3, 4], 0, [5, 4]), ([3, 4], 1, [3, 7]), ([2, 3, 4], 2, [2, 3, 6]), ([6], 0, [20]), ([3, 4], 0, [2, 2])):
            if dt != "f32" and xs != [3, 4]:
                continue
            idx = f.ints(isz, 0, xs[d], "i64")
            src = X(isz, dt)
            f.case("scatter_add/%s/%s_d%d_%s" % (dt, sh(xs), d, sh(isz)), "scatter_add", [X(xs, dt), idx, src],
                   lambda t, i, s, d=d: t.scatter_add(d, i, s), {"dim": d})
    for dt in ("f32", "i64", "bool"):
        for xs, d, i in (([3, 4], 0, 1), ([3, 4], 1, -1), ([2, 3, 4], 1, 2), ([2, 3, 4], -1, 0), ([5], 0, 3), ([3, 1], 1, 0)):
            if dt != "f32" and xs != [2, 3, 4]:
                continue
            f.case("select/%s/%s_d%d_%d" % (dt, sh(xs), d, i), "select", [X(xs, dt)], lambda t, d=d, i=i: torch.select(t, d, i),
                   {"dim": d, "index": i})
    for dt in ("f32", "f64", "i64", "f16", "bool"):
        for xs, d, n in (([5, 3], 0, 3), ([3, 5], 1, 2), ([2, 4, 3], 1, 4), ([6], 0, 2), ([4, 3], -1, 1)):
            if dt != "f32" and xs != [5, 3]:
                continue
            dd = d % len(xs)
            idx = torch.randperm(xs[dd], generator=f.g)[:n]
            ss = list(xs)
            ss[dd] = n
            f.case("select_assign/%s/%s_d%d_n%d" % (dt, sh(xs), d, n), "select_assign", [X(xs, dt), idx, X(ss, dt)],
                   lambda t, i, s, d=d: t.index_copy(d, i, s), {"dim": d})
    for dt in ("f32", "f64", "i64", "i32", "f16", "bf16"):
        for xs, d, n in (([5, 3], 0, 7), ([3, 5], 1, 3), ([2, 4, 3], 1, 6), ([6], 0, 10), ([4, 3], -1, 0)):
            if dt != "f32" and xs != [5, 3]:
                continue
            dd = d % len(xs)
            idx = f.ints([n], 0, xs[dd], "i64")
            ss = list(xs)
            ss[dd] = n
            f.case("select_add/%s/%s_d%d_n%d" % (dt, sh(xs), d, n), "select_add", [X(xs, dt), idx, X(ss, dt)],
                   lambda t, i, s, d=d: t.index_add(d, i, s), {"dim": d})
    for dt in ("f32", "f64", "i64", "bool", "f16", "bf16", "u8"):
        for xs, d, n in (([5, 3], 0, 4), ([3, 5], 1, 7), ([2, 4, 3], 1, 2), ([6], 0, 0), ([4, 3], -1, 1), ([3, 4], 0, 3)):
            if dt != "f32" and xs != [5, 3]:
                continue
            idx = f.ints([n], 0, xs[d % len(xs)], "i64")
            f.case("index_select/%s/%s_d%d_n%d" % (dt, sh(xs), d, n), "index_select", [X(xs, dt), idx],
                   lambda t, i, d=d: torch.index_select(t, d, i), {"dim": d})
    f.case("index_select/f32/i32_index", "index_select", [X([4, 3]), torch.tensor([3, 0, 3], dtype=torch.int32)],
           lambda t, i: torch.index_select(t, 0, i), {"dim": 0})
    for dt in ("f32", "i64", "bool", "f16"):
        for xs, isz in (([3, 4], [5]), ([3, 4], [2, 3]), ([2, 3, 4], [7]), ([5], []), ([3, 4], [0])):
            if dt != "f32" and xs != [3, 4]:
                continue
            n = 1
            for v in xs:
                n *= v
            idx = f.ints(isz, -n, n, "i64")
            f.case("take/%s/%s_%s" % (dt, sh(xs), sh(isz)), "take", [X(xs, dt), idx], torch.take)
    for op, tfn in (("nonzero", torch.nonzero), ("argwhere", torch.argwhere)):
        ins = [torch.tensor([[0.0, 1.5, 0.0], [NAN, 0.0, -0.0], [2.0, 0.0, INF]]), f.bools([2, 3, 4]), f.ints([4, 5], -1, 2, "i32"),
               torch.tensor(3.0), torch.tensor(0.0), torch.zeros([0, 3]), torch.zeros([3, 2]), f.ints([7], 0, 2, "u8"),
               (f.ints([3, 4], 0, 2, "i64") * 2).to(torch.float16), f.bools([2, 1, 3, 2])]
        for x in ins:
            f.case("%s/%s/%s" % (op, NAME[x.dtype], sh(x.shape)), op, [x], tfn)
    for dt in ("f32", "i64", "bool", "f16", "u8"):
        for xs, ms in (([3, 4], [3, 4]), ([3, 4], [1, 4]), ([3, 4], [3, 1]), ([4], [3, 4]), ([3, 4], []), ([0, 2], [0, 2])):
            if dt != "f32" and xs != ms:
                continue
            f.case("masked_select/%s/%s_%s" % (dt, sh(xs), sh(ms)), "masked_select", [X(xs, dt), f.bools(ms)], torch.masked_select)


# ----------------------------------------------------------------------------
# cast
# ----------------------------------------------------------------------------
def gen_cast(f):
    doc("cast", "cast", "x.to(dtype)", "dtype")
    lim = {"i64": (-2 ** 63, 2 ** 63 - 1), "i32": (-2 ** 31, 2 ** 31 - 1), "i16": (-2 ** 15, 2 ** 15 - 1), "i8": (-128, 127), "u8": (0, 255)}
    fmax = {"f64": 1.7e308, "f32": 3.4e38, "f16": 65504.0, "bf16": 3.38e38}

    def src_values(src, dst):
        if src == "bool":
            return torch.tensor([True, False, True, True, False])
        if src in FLOATS:
            if dst == "bool":
                v = [0.0, -0.0, 1.0, -2.5, 0.25, NAN, INF, -INF, 1e-3]
                if src in ("f32", "f64", "bf16"):
                    v += [1e-30]
                return torch.tensor(v, dtype=torch.float64).to(DT[src])
            if dst in INTS:
                lo, hi = lim[dst]
                v = [0.0, 1.0, 2.7, 3.5, 5.9999, 42.0, 127.4]
                if dst != "u8":
                    v += [-0.7, -1.0, -2.7, -3.5, -100.9]
                else:
                    v += [0.3, 200.5, 255.9]
                bound = min(hi, fmax[src])
                # largest magnitude in range that survives rounding in src dtype
                big = torch.tensor([float(bound) * 0.999], dtype=torch.float64).to(DT[src])
                if float(big) > hi or float(big) + 1 > hi + 1:
                    big = torch.tensor([float(hi) / 2], dtype=torch.float64).to(DT[src])
                v += [float(big)]
                if dst != "u8":
                    nb = torch.tensor([float(max(lo, -fmax[src])) * 0.999], dtype=torch.float64).to(DT[src])
                    v += [float(nb)]
                t = torch.tensor(v, dtype=torch.float64).to(DT[src])
                return t
            # float -> float
            v = [0.0, -0.0, 1.0, -1.0, 0.1, -3.14159, 1.0 / 3.0, 65504.0, 1e-3, 123.456, NAN, INF, -INF]
            if src in ("f32", "f64"):
                v += [1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, 2049.0, 2051.0, 65519.0, 65520.0, 70000.0, -65536.0,
                      6.0e-8, 3.0e-8, 2.0 ** -24, 1e-8,                       # f16 rounding ties / overflow / subnormal
                      1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 257.0, 259.0, 3.0e38, 3.4028234663852886e38, -3.39e38, 1e-38,  # bf16
                      1e30, -1e-30, 16777217.0]
            if src == "f64":
                v += [1.0 + 2 ** -24, 1.0 + 3 * 2 ** -24, 1e300, -1e-300, 0.1 + 1e-17]  # f64 -> f32 ties / overflow / underflow
            if src == "bf16":
                v += [1e30, 3.0e38, 1e-30, 70000.0]
            return torch.tensor(v, dtype=torch.float64).to(DT[src])
        # int source
        lo, hi = lim[src]
        v = [0, 1, -1, 2, 100, -100, 127, -128, 200, 255, 256, 300, -129, 1000, 32767, -32768, 40000, 65519, 65520, 70000,
             16777217, 2 ** 31 - 1, -2 ** 31, 2 ** 40 + 5, -(2 ** 53) - 1, 2 ** 63 - 1, -2 ** 63]
        v = [x for x in v if lo <= x <= hi]
        return torch.tensor(v, dtype=torch.int64).to(DT[src])

    for src in ALL:
        for dst in ALL:
            x = src_values(src, dst)
            f.case("cast/%s_to_%s/values" % (src, dst), "cast", [x], lambda t, d=dst: t.to(DT[d]), {"dtype": dst},
                   exact=True, lowp_logic=False)
            if src in ("f32", "i64", "bool", "f16") and dst in ("f32", "i32", "f16", "bf16", "bool", "u8"):
                s = [3, 4]
                if src == "bool":
                    y = f.bools(s)
                elif src in INTS:
                    y = f.ints(s, 0, 100, src)
                else:
                    y = f.uniform(s, 0, 100, src)
                f.case("cast/%s_to_%s/3x4" % (src, dst), "cast", [y], lambda t, d=dst: t.to(DT[d]), {"dtype": dst},
                       exact=True, lowp_logic=False)
    for src, dst in (("f32", "f16"), ("f32", "bf16"), ("i32", "f32"), ("f16", "f32")):
        x = torch.zeros([0, 3], dtype=DT[src])
        f.case("cast/%s_to_%s/empty" % (src, dst), "cast", [x], lambda t, d=dst: t.to(DT[d]), {"dtype": dst}, exact=True, lowp_logic=False)
        x = torch.tensor(1.5, dtype=DT[src]) if src != "i32" else torch.tensor(7, dtype=torch.int32)
        f.case("cast/%s_to_%s/scalar" % (src, dst), "cast", [x], lambda t, d=dst: t.to(DT[d]), {"dtype": dst}, exact=True, lowp_logic=False)
    # exhaustive-ish rounding sweep f32 -> f16/bf16 (random bit patterns in normal range)
    for dst in ("f16", "bf16"):
        bitsv = torch.randint(0x33000000, 0x47800000, [512], generator=f.g, dtype=torch.int64)
        bitsv[::2] = (bitsv[::2] & ~0x1FFF) | (0x1000 if dst == "f16" else 0)  # exact f16 ties on even slots
        if dst == "bf16":
            bitsv[::2] = (bitsv[::2] & ~0xFFFF) | 0x8000  # exact bf16 ties
        x = torch.from_numpy(bitsv.to(torch.int32).numpy().view("float32").copy())
        x = x * torch.where(f.bools([512]), -1.0, 1.0)
        f.case("cast/f32_to_%s/rounding_sweep" % dst, "cast", [x], lambda t, d=dst: t.to(DT[d]), {"dtype": dst}, exact=True, lowp_logic=False)


# ----------------------------------------------------------------------------
# nn
# ----------------------------------------------------------------------------
def sdpa_ref(q, k, v, mask=None, is_causal=False, scale=None):
    """softmax(q k^T * scale + mask) v computed in float64 (torch 2.x semantics)."""
    od = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    E = q.shape[-1]
    sc = (1.0 / math.sqrt(E)) if scale is None else scale
    s = torch.matmul(q, k.transpose(-2, -1)) * sc
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool).tril(0)
        s = s.masked_fill(~keep, -INF)
    if mask is not None:
        if mask.dtype == torch.bool:
            s = s.masked_fill(~mask, -INF)
        else:
            s = s + mask.double()
    p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v).to(od)


def batch_norm_formula(x, m, v, w, b, eps):
    """inference batch_norm as differentiable ops: torch 1.13 cannot differentiate
    F.batch_norm w.r.t. running_mean / running_var."""
    s = [1, x.shape[1]] + [1] * (x.dim() - 2)
    return (x - m.reshape(s)) / torch.sqrt(v.reshape(s) + eps) * w.reshape(s) + b.reshape(s)


def gen_nn(f):
    D = [("conv1d", "F.conv1d(x, weight, bias, stride, padding, dilation, groups)  (inputs: x, weight[, bias])", "stride, padding, dilation, groups"),
         ("conv2d", "F.conv2d(x, weight, bias, stride, padding, dilation, groups)", "stride, padding, dilation, groups"),
         ("conv3d", "F.conv3d(x, weight, bias, stride, padding, dilation, groups)", "stride, padding, dilation, groups"),
         ("conv_transpose1d", "F.conv_transpose1d(x, weight, bias, stride, padding, output_padding, groups, dilation)",
          "stride, padding, output_padding, groups, dilation"),
         ("conv_transpose2d", "F.conv_transpose2d(...)", "stride, padding, output_padding, groups, dilation"),
         ("conv_transpose3d", "F.conv_transpose3d(...)", "stride, padding, output_padding, groups, dilation"),
         ("avg_pool1d", "F.avg_pool1d(x, kernel_size, stride, padding, ceil_mode, count_include_pad)",
          "kernel_size, stride, padding, ceil_mode, count_include_pad"),
         ("avg_pool2d", "F.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad)",
          "kernel_size, stride, padding, ceil_mode, count_include_pad"),
         ("max_pool1d", "F.max_pool1d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True) -> (values, indices)",
          "kernel_size, stride, padding, dilation, ceil_mode"),
         ("max_pool2d", "F.max_pool2d(..., return_indices=True) -> (values, indices)", "kernel_size, stride, padding, dilation, ceil_mode"),
         ("adaptive_avg_pool1d", "F.adaptive_avg_pool1d(x, output_size)", "output_size"),
         ("adaptive_avg_pool2d", "F.adaptive_avg_pool2d(x, output_size)", "output_size"),
         ("interpolate", "F.interpolate(x, size=size, mode=mode[, align_corners=align_corners])", "size, mode, [align_corners]"),
         ("embedding", "F.embedding(indices, weight)  (inputs: weight, indices)", ""),
         ("layer_norm", "F.layer_norm(x, normalized_shape, weight, bias, eps)  (inputs: x[, weight, bias])", "normalized_shape, eps"),
         ("batch_norm", "F.batch_norm(x, running_mean, running_var, weight, bias, training=False, eps=eps)  "
                        "(inputs: x, running_mean, running_var, weight, bias)", "eps"),
         ("scaled_dot_product_attention", "softmax(q @ k^T * scale + mask) @ v in float64 (torch 2.x F.scaled_dot_product_attention "
                                          "semantics; inputs: q, k, v[, attn_mask])", "is_causal, scale (null = 1/sqrt(E))")]
    for op, call, keys in D:
        doc(op, "nn", call, keys)

    def conv_case(nd, dt, N, Cin, sp, Cout, ks, stride, pad, dil, groups, bias, tag=""):
        op = "conv%dd" % nd
        x = f.uniform([N, Cin] + sp, -1, 1, dt)
        w = f.uniform([Cout, Cin // groups] + ks, -1, 1, dt)
        ins = [x, w]
        if bias:
            ins.append(f.uniform([Cout], -1, 1, dt))
        fn = getattr(F, op)
        K = Cin // groups
        for k_ in ks:
            K *= k_
        r, a = acc_tol(dt, K, 1.0)
        at = {"stride": stride, "padding": pad, "dilation": dil, "groups": groups}
        name = "%s/%s/x%s_w%s_s%s_p%s_d%s_g%d%s%s" % (op, dt, sh(x.shape), sh(w.shape), sh(stride), sh(pad), sh(dil), groups,
                                                  "_bias" if bias else "", tag)
        f.case(name, op, ins, lambda *t: fn(t[0], t[1], t[2] if len(t) > 2 else None, stride, pad, dil, groups), at,
               rtol=r, atol=a, f32acc=True)

    c1 = [(2, 3, [10], 4, [3], [1], [0], [1], 1, True), (2, 3, [10], 4, [3], [2], [1], [1], 1, True), (1, 3, [12], 2, [3], [1], [2], [2], 1, False),
          (2, 6, [9], 3, [2], [1], [0], [1], 3, True), (1, 4, [8], 4, [3], [1], [1], [1], 4, False), (1, 16, [64], 8, [5], [1], [2], [1], 1, True),
          (1, 2, [5], 3, [5], [1], [0], [1], 1, False), (3, 2, [7], 4, [1], [3], [0], [1], 2, True)]
    c2 = [(2, 3, [6, 7], 4, [3, 3], [1, 1], [0, 0], [1, 1], 1, True), (1, 3, [8, 8], 2, [3, 3], [2, 2], [1, 1], [1, 1], 1, True),
          (1, 2, [7, 9], 3, [3, 2], [2, 1], [1, 0], [1, 1], 1, False), (1, 2, [9, 9], 2, [3, 3], [1, 1], [2, 2], [2, 2], 1, True),
          (2, 4, [5, 5], 6, [3, 3], [1, 1], [1, 1], [1, 1], 2, True), (1, 4, [6, 6], 4, [3, 3], [1, 1], [1, 1], [1, 1], 4, False),
          (1, 8, [12, 12], 8, [3, 3], [1, 1], [1, 1], [1, 1], 1, True), (1, 3, [5, 6], 2, [1, 1], [1, 1], [0, 0], [1, 1], 1, True),
          (1, 2, [10, 10], 3, [5, 5], [3, 2], [2, 1], [1, 2], 1, True)]
    c3 = [(1, 2, [5, 5, 5], 3, [3, 3, 3], [1, 1, 1], [0, 0, 0], [1, 1, 1], 1, True), (1, 2, [6, 5, 4], 2, [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1, False),
          (1, 4, [4, 4, 4], 2, [2, 2, 2], [1, 1, 1], [0, 1, 0], [1, 1, 1], 2, True), (2, 1, [5, 5, 5], 2, [2, 2, 2], [1, 1, 1], [1, 1, 1], [2, 2, 2], 1, True)]
    for dt in ("f32", "f64"):
        for c in c1:
            conv_case(1, dt, *c)
        for c in c2:
            conv_case(2, dt, *c)
        for c in c3:
            conv_case(3, dt, *c)
    for dt in ("f16", "bf16"):
        for c in (c2[0], c2[1], c2[4], c2[6]):
            conv_case(2, dt, *c)

    def convt_case(nd, dt, N, Cin, sp, Cout, ks, stride, pad, opad, groups, dil, bias):
        op = "conv_transpose%dd" % nd
        x = f.uniform([N, Cin] + sp, -1, 1, dt)
        w = f.uniform([Cin, Cout // groups] + ks, -1, 1, dt)
        ins = [x, w]
        if bias:
            ins.append(f.uniform([Cout], -1, 1, dt))
        fn = getattr(F, op)
        K = Cin // groups
        for k_ in ks:
            K *= k_
        r, a = acc_tol(dt, K, 1.0)
        at = {"stride": stride, "padding": pad, "output_padding": opad, "groups": groups, "dilation": dil}
        name = "%s/%s/x%s_w%s_s%s_p%s_op%s_g%d_d%s%s" % (op, dt, sh(x.shape), sh(w.shape), sh(stride), sh(pad), sh(opad), groups, sh(dil),
                                                     "_bias" if bias else "")
        f.case(name, op, ins, lambda *t: fn(t[0], t[1], t[2] if len(t) > 2 else None, stride, pad, opad, groups, dil), at,
               rtol=r, atol=a, f32acc=True)

    t1 = [(2, 3, [5], 4, [3], [1], [0], [0], 1, [1], True), (1, 2, [6], 3, [3], [2], [1], [1], 1, [1], True),
          (1, 4, [5], 2, [4], [3], [1], [2], 2, [1], False), (2, 2, [4], 2, [3], [2], [0], [0], 1, [2], True),
          (1, 3, [7], 3, [2], [2], [0], [0], 3, [1], False)]
    t2 = [(2, 3, [4, 5], 4, [3, 3], [1, 1], [0, 0], [0, 0], 1, [1, 1], True), (1, 2, [4, 4], 3, [3, 3], [2, 2], [1, 1], [1, 1], 1, [1, 1], True),
          (1, 4, [3, 5], 2, [2, 3], [2, 1], [0, 1], [1, 0], 2, [1, 1], False), (1, 2, [4, 4], 2, [3, 3], [2, 2], [1, 1], [0, 0], 1, [2, 2], True),
          (1, 4, [3, 3], 4, [4, 4], [2, 2], [1, 1], [0, 0], 4, [1, 1], True)]
    t3 = [(1, 2, [3, 3, 3], 2, [3, 3, 3], [1, 1, 1], [0, 0, 0], [0, 0, 0], 1, [1, 1, 1], True),
          (1, 2, [3, 2, 3], 4, [2, 2, 2], [2, 2, 2], [0, 0, 1], [1, 0, 0], 2, [1, 1, 1], False),
          (1, 1, [3, 3, 3], 2, [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1, [1, 1, 1], True)]
    for dt in ("f32", "f64"):
        for c in t1:
            convt_case(1, dt, *c)
        for c in t2:
            convt_case(2, dt, *c)
        for c in t3:
            convt_case(3, dt, *c)

    # pooling
    ap1 = [([2, 3, 8], [2], [2], [0], False, True), ([1, 2, 9], [3], [2], [1], False, True), ([1, 2, 9], [3], [2], [1], False, False),
           ([1, 2, 10], [3], [3], [1], True, True), ([1, 2, 10], [3], [3], [1], True, False), ([1, 1, 7], [4], [2], [2], True, True),
           ([1, 3, 6], [6], [1], [0], False, True), ([2, 2, 5], [2], [1], [1], False, False)]
    ap2 = [([1, 2, 6, 6], [2, 2], [2, 2], [0, 0], False, True), ([2, 2, 7, 7], [3, 3], [2, 2], [1, 1], False, True),
           ([2, 2, 7, 7], [3, 3], [2, 2], [1, 1], False, False), ([1, 1, 7, 8], [3, 2], [2, 3], [1, 0], True, True),
           ([1, 1, 7, 8], [3, 2], [2, 3], [1, 1], True, False), ([1, 2, 5, 5], [2, 2], [3, 3], [0, 0], True, True),
           ([1, 3, 16, 16], [4, 4], [4, 4], [0, 0], False, True)]
    for dt in ("f32", "f64"):
        for nd, cfgs in ((1, ap1), (2, ap2)):
            op = "avg_pool%dd" % nd
            fn = getattr(F, op)
            for s, k, st, p, cm, cip in (cfgs if dt == "f32" else cfgs[:4]):
                at = {"kernel_size": k, "stride": st, "padding": p, "ceil_mode": cm, "count_include_pad": cip}
                f.case("%s/%s/%s_k%s_s%s_p%s%s%s" % (op, dt, sh(s), sh(k), sh(st), sh(p), "_ceil" if cm else "", "" if cip else "_excl"), op,
                       [f.uniform(s, -3, 3, dt)], lambda t, k=k, st=st, p=p, cm=cm, cip=cip, fn=fn: fn(t, k, st, p, cm, cip), at)
    mp1 = [([2, 3, 8], [2], [2], [0], [1], False), ([1, 2, 9], [3], [2], [1], [1], False), ([1, 2, 10], [3], [3], [1], [1], True),
           ([1, 2, 11], [3], [2], [1], [2], False), ([1, 1, 7], [4], [2], [2], [1], True), ([1, 2, 12], [2], [1], [0], [3], True)]
    mp2 = [([1, 2, 6, 6], [2, 2], [2, 2], [0, 0], [1, 1], False), ([2, 2, 7, 7], [3, 3], [2, 2], [1, 1], [1, 1], False),
           ([1, 1, 7, 8], [3, 2], [2, 3], [1, 1], [1, 1], True), ([1, 2, 9, 9], [3, 3], [1, 2], [1, 0], [2, 2], False),
           ([1, 1, 8, 7], [2, 3], [3, 2], [0, 1], [1, 2], True), ([1, 3, 16, 16], [3, 3], [2, 2], [1, 1], [1, 1], True)]
    for dt in ("f32", "f64"):
        for nd, cfgs in ((1, mp1), (2, mp2)):
            op = "max_pool%dd" % nd
            fn = getattr(F, op)
            for s, k, st, p, d, cm in (cfgs if dt == "f32" else cfgs[:3]):
                at = {"kernel_size": k, "stride": st, "padding": p, "dilation": d, "ceil_mode": cm}
                f.case("%s/%s/%s_k%s_s%s_p%s_d%s%s" % (op, dt, sh(s), sh(k), sh(st), sh(p), sh(d), "_ceil" if cm else ""), op,
                       [f.distinct(s, dt)],
                       lambda t, k=k, st=st, p=p, d=d, cm=cm, fn=fn: tuple(fn(t, k, st, p, d, cm, return_indices=True)), at)
        f.case("max_pool2d/%s/nan" % dt, "max_pool2d", [torch.tensor([[[[1.0, NAN], [3.0, 2.0]]]], dtype=DT[dt])],
               lambda t: tuple(F.max_pool2d(t, [2, 2], [2, 2], [0, 0], [1, 1], False, return_indices=True)),
               {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1], "ceil_mode": False})
    for dt in ("f32", "f64"):
        for s, o in (([2, 3, 8], [4]), ([1, 2, 7], [3]), ([1, 2, 5], [7]), ([1, 1, 6], [1]), ([1, 2, 10], [10])):
            f.case("adaptive_avg_pool1d/%s/%s_o%s" % (dt, sh(s), sh(o)), "adaptive_avg_pool1d", [f.uniform(s, -3, 3, dt)],
                   lambda t, o=o: F.adaptive_avg_pool1d(t, o), {"output_size": o})
        for s, o in (([1, 2, 8, 8], [4, 4]), ([2, 2, 7, 9], [3, 4]), ([1, 1, 5, 5], [7, 6]), ([1, 3, 6, 6], [1, 1]), ([1, 1, 10, 7], [3, 7])):
            f.case("adaptive_avg_pool2d/%s/%s_o%s" % (dt, sh(s), sh(o)), "adaptive_avg_pool2d", [f.uniform(s, -3, 3, dt)],
                   lambda t, o=o: F.adaptive_avg_pool2d(t, o), {"output_size": o})
    # interpolate
    it = [([1, 2, 5], [10], "nearest", None), ([1, 2, 6], [4], "nearest", None), ([2, 1, 4], [7], "nearest", None),
          ([1, 2, 4, 5], [8, 10], "nearest", None), ([1, 1, 6, 6], [4, 3], "nearest", None), ([1, 1, 3, 4], [7, 5], "nearest", None),
          ([1, 2, 4, 5], [8, 10], "bilinear", False), ([1, 2, 4, 5], [8, 10], "bilinear", True), ([1, 1, 6, 6], [4, 3], "bilinear", False),
          ([1, 1, 6, 6], [4, 3], "bilinear", True), ([2, 1, 3, 4], [7, 5], "bilinear", False), ([1, 1, 3, 4], [7, 5], "bilinear", True),
          ([1, 2, 4, 5], [8, 10], "bicubic", False), ([1, 2, 4, 5], [8, 10], "bicubic", True), ([1, 1, 6, 6], [4, 3], "bicubic", False),
          ([1, 1, 6, 6], [4, 3], "bicubic", True), ([1, 1, 3, 4], [7, 5], "bicubic", False), ([1, 1, 1, 1], [3, 2], "bilinear", False),
          ([1, 1, 1, 1], [3, 2], "bicubic", True), ([1, 1, 5, 5], [5, 5], "bicubic", False), ([1, 3, 16, 16], [24, 20], "bilinear", False)]
    for dt in ("f32", "f64"):
        for s, size, mode, ac in (it if dt == "f32" else it[::3]):
            at = {"size": size, "mode": mode}
            if ac is not None:
                at["align_corners"] = ac
            f.case("interpolate/%s/%s_%s_to_%s%s" % (dt, mode, sh(s), sh(size), "" if ac is None else ("_ac" if ac else "")), "interpolate",
                   [f.uniform(s, -3, 3, dt)], lambda t, size=size, mode=mode, ac=ac: F.interpolate(t, size=size, mode=mode, align_corners=ac),
                   at, atol=(1e-5 if dt == "f32" else None))
    # embedding
    for dt in ("f32", "f64", "f16", "bf16"):
        for isz in ([3], [2, 3], [], [0], [10]):
            if dt != "f32" and isz != [2, 3]:
                continue
            w = f.uniform([10, 4], -2, 2, dt)
            f.case("embedding/%s/idx%s" % (dt, sh(isz)), "embedding", [w, f.ints(isz, 0, 10, "i64")], lambda w, i: F.embedding(i, w))
    f.case("embedding/f32/i32_idx", "embedding", [f.uniform([6, 3], -2, 2), f.ints([4], 0, 6, "i32")], lambda w, i: F.embedding(i, w))
    # layer_norm
    ln = [([2, 3, 4], [4], True, 1e-5), ([2, 3, 4], [3, 4], True, 1e-5), ([2, 3, 4], [4], False, 1e-5), ([4, 100], [100], True, 1e-5),
          ([5, 8], [8], True, 1e-3), ([3, 2], [2], True, 1e-5), ([6], [6], True, 1e-5), ([0, 4], [4], True, 1e-5), ([2, 7], [7], "w", 1e-5)]
    for dt in FLOATS:
        for s, ns, aff, eps in (ln if dt in ("f32", "f64") else ln[:2] + ln[3:4]):
            x = f.uniform(s, -3, 3, dt) + (2.0 if s == [4, 100] else 0.0)
            ins = [x]
            if aff:
                ins += [f.uniform(ns, 0.5, 1.5, dt), f.uniform(ns, -0.5, 0.5, dt)]
                if aff == "w":
                    ins = ins[:2]
            n = 1
            for v in ns:
                n *= v
            if dt in ("f16", "bf16"):
                r, a = rounded_tol(dt, 1e-5)
            else:
                r, a = acc_tol(dt, n, 3.0)
                a = max(a, 1e-5 if dt == "f32" else a)
            g = lambda *t, ns=ns, eps=eps: F.layer_norm(t[0], ns, t[1] if len(t) > 1 else None, t[2] if len(t) > 2 else None, eps)
            f.case("layer_norm/%s/%s_ns%s_%s_eps%s" % (dt, sh(s), sh(ns), {True: "affine", False: "plain", "w": "weightonly"}[aff], eps),
                   "layer_norm", ins, g, {"normalized_shape": ns, "eps": eps}, rtol=r, atol=a, f32acc=True)
    # batch_norm (inference)
    for dt in ("f32", "f64"):
        for s, eps in (([2, 3], 1e-5), ([2, 3, 4], 1e-5), ([2, 3, 4, 4], 1e-3), ([1, 5, 2, 2, 2], 1e-5), ([0, 3, 2], 1e-5)):
            C = s[1]
            ins = [f.uniform(s, -3, 3, dt), f.uniform([C], -1, 1, dt), f.uniform([C], 0.2, 2.0, dt), f.uniform([C], 0.5, 1.5, dt),
                   f.uniform([C], -0.5, 0.5, dt)]
            f.case("batch_norm/%s/%s_eps%s" % (dt, sh(s), eps), "batch_norm", ins,
                   lambda x, m, v, w, b, eps=eps: F.batch_norm(x, m, v, w, b, False, 0.1, eps), {"eps": eps},
                   grad_fn=lambda x, m, v, w, b, eps=eps: batch_norm_formula(x, m, v, w, b, eps))
    # scaled dot product attention
    sd = [([1, 1, 4, 8], [1, 1, 4, 8], [1, 1, 4, 8], None, False, None), ([2, 3, 5, 4], [2, 3, 7, 4], [2, 3, 7, 6], None, False, None),
          ([2, 2, 5, 4], [2, 2, 5, 4], [2, 2, 5, 4], None, True, None), ([1, 2, 4, 8], [1, 2, 6, 8], [1, 2, 6, 8], None, True, None),
          ([2, 2, 4, 4], [2, 2, 6, 4], [2, 2, 6, 5], "bool_LS", False, None), ([2, 2, 4, 4], [2, 2, 6, 4], [2, 2, 6, 4], "bool_B1LS", False, None),
          ([2, 2, 4, 4], [2, 2, 6, 4], [2, 2, 6, 4], "float_LS", False, None), ([1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4], "float_B1LS", False, 0.3),
          ([1, 1, 5, 16], [1, 1, 5, 16], [1, 1, 5, 16], None, False, 1.0), ([2, 4, 16, 32], [2, 4, 16, 32], [2, 4, 16, 32], None, True, None),
          ([1, 2, 6, 8], [1, 2, 6, 8], [1, 2, 6, 8], None, True, 0.125)]
    for dt in ("f32", "f64"):
        for qs, ks, vs, mk, causal, scale in sd:
            q, k, v = f.uniform(qs, -1, 1, dt), f.uniform(ks, -1, 1, dt), f.uniform(vs, -1, 1, dt)
            ins = [q, k, v]
            L, S = qs[-2], ks[-2]
            if mk is not None:
                msh = [L, S] if mk.endswith("_LS") else [qs[0], 1, L, S]
                if mk.startswith("bool"):
                    m = f.bools(msh, 0.7)
                    m[..., 0] = True  # every query row attends to at least one key
                else:
                    m = torch.where(f.bools(msh, 0.7), f.uniform(msh, -1, 1, "f64"), torch.tensor(-INF, dtype=torch.float64)).to(DT[dt])
                    m[..., 0] = 0.0
                ins.append(m)
            r, a = acc_tol(dt, qs[-1], 1.0)
            f.case("scaled_dot_product_attention/%s/q%s_k%s_v%s%s%s%s" % (dt, sh(qs), sh(ks), sh(vs), "_" + mk if mk else "",
                                                                          "_causal" if causal else "", "" if scale is None else "_scale%s" % scale),
                   "scaled_dot_product_attention", ins,
                   lambda *t, causal=causal, scale=scale: sdpa_ref(t[0], t[1], t[2], t[3] if len(t) > 3 else None, causal, scale),
                   {"is_causal": causal, "scale": scale}, rtol=r, atol=a)

    # conv_fused: clamp(conv(x, w) + bias + residual, min, max) (last in the family: the cases above keep their draws)
    doc("conv_fused", "nn", "clamp(F.convNd(x, weight, bias, stride, padding, dilation, groups) + residual, min, max)  "
        "(inputs: x, weight[, bias][, residual])", "stride, padding, dilation, groups, bias, residual, min, max (null: none)")
    cf = [(2, [1, 4, 6, 6], 6, [3, 3], [1, 1], [1, 1], [1, 1], 1, True, True, 0.0, None),
          (2, [1, 4, 6, 6], 6, [3, 3], [1, 1], [1, 1], [1, 1], 1, True, False, 0.0, 0.5),
          (2, [2, 6, 7, 5], 6, [3, 3], [2, 1], [1, 1], [1, 1], 6, False, True, -0.25, None),
          (2, [1, 16, 14, 14], 32, [3, 3], [1, 1], [1, 1], [1, 1], 1, True, True, 0.0, None),
          (2, [1, 16, 7, 7], 32, [1, 1], [1, 1], [0, 0], [1, 1], 1, True, False, None, 0.25),
          (2, [3, 8, 9, 9], 12, [3, 3], [2, 2], [1, 1], [1, 1], 2, True, True, None, None),
          (1, [2, 3, 11], 4, [3], [1], [1], [2], 1, False, True, 0.0, 0.75),
          (3, [1, 2, 4, 5, 5], 3, [3, 3, 3], [1, 1, 1], [1, 1, 1], [1, 1, 1], 1, True, True, 0.0, None)]
    for dt in ("f32", "f64", "bf16"):
        for nd, xs, Cout, ks, stride, pad, dil, groups, bias, res, lo, hi in cf:
            if dt == "bf16" and nd != 2:
                continue
            x = f.uniform(xs, -1, 1, dt)
            w = f.uniform([Cout, xs[1] // groups] + ks, -1, 1, dt)
            ins = [x, w]
            if bias:
                ins.append(f.uniform([Cout], -1, 1, dt))
            fn = getattr(F, "conv%dd" % nd)
            out = fn(x.double(), w.double(), ins[2].double() if bias else None, stride, pad, dil, groups)
            if res:
                r = f.uniform(list(out.shape), -1, 1, dt)
                # keep conv + residual 1/16 away from the clamp bounds: a backend that rounds the
                # conv to bf16 before the add may otherwise land on the other side of a kink
                for bound in (lo, hi):
                    if bound is not None:
                        near = (out + r.double() - bound).abs() < 0.0625
                        r = torch.where(near, r.double() + 0.125, r.double()).to(DT[dt])
                ins.append(r)
            K = xs[1] // groups
            for k_ in ks:
                K *= k_
            r, a = acc_tol(dt, K, 1.0)

            def ref(*t, nd=nd, fn=fn, stride=stride, pad=pad, dil=dil, groups=groups, bias=bias, res=res, lo=lo, hi=hi):
                y = fn(t[0], t[1], t[2] if bias else None, stride, pad, dil, groups)
                if res:
                    y = y + t[-1]
                return torch.clamp(y, lo, hi) if lo is not None or hi is not None else y

            name = "conv_fused/%s/x%s_w%s_s%s_p%s_d%s_g%d%s%s_min%s_max%s" % (
                dt, sh(x.shape), sh(w.shape), sh(stride), sh(pad), sh(dil), groups, "_bias" if bias else "",
                "_residual" if res else "", lo, hi)
            f.case(name, "conv_fused", ins, ref,
                   {"stride": stride, "padding": pad, "dilation": dil, "groups": groups, "bias": bias, "residual": res,
                    "min": lo, "max": hi}, rtol=r, atol=a, f32acc=True)


# ----------------------------------------------------------------------------
# README
# ----------------------------------------------------------------------------
README_HEAD = r"""# ember conformance cases (reference: PyTorch)

Generated by `gen_cases.py` (run `python3 gen_cases.py` from any directory; it uses
Debian's python3-torch 1.13 (`torch.__version__` = %(torch)s) and is deterministic: rerunning produces byte-identical
files). Do not edit `cases/*.json` or this README by hand.

## File format

`cases/<family>.json`:

```json
{"family": "binary", "cases": [
  {"name": "add/f32/3x1_1x4", "op": "add",
   "inputs":  [{"dtype": "f32", "shape": [3,1], "data": [...]}, ...],
   "attrs":   {"alpha": 1.0},
   "outputs": [{"dtype": "f32", "shape": [3,4], "data": [...]}],
   "rtol": 1e-05, "atol": 1e-06}
]}
```

* One case per line; `name` is unique within a file (`op/dtype/description`).
* `dtype` is one of `f64 f32 f16 bf16 i64 i32 i16 i8 u8 bool`.
* `data` is the flat row-major (C order) list of values; `shape: []` is a 0-d tensor
  (one value), a shape containing 0 has `data: []`.
* Floats are JSON numbers written with Python `repr` of the exact double value, so they
  round-trip exactly (f32/f16/bf16 values are exactly representable in the target type:
  parse as double, then convert). Non-finite values are the strings `"nan"`, `"inf"`,
  `"-inf"`; `-0.0` is written as `-0.0`. bool data is `true`/`false`.
* The op must be applied to exactly the given input values (already rounded to the
  input dtype).
* `attrs` hold the non-tensor arguments with PyTorch's keyword names. Attribute values
  follow the same conventions (a float `inf` is `"inf"`, `null` means Python `None`).
  Dtype attributes use the dtype names above. **Integer vs float scalars matter**: a JSON
  number without `.`/exponent (e.g. `3`) is a Python int, with one (`3.0`, `2.5`) it is a
  Python float; this decides type promotion (int tensor + float scalar -> f32, int tensor +
  int scalar stays int, f16 tensor + float scalar stays f16).
* Optional attributes that are absent mean "not given" (PyTorch default), e.g. a
  reduction without `dim` reduces all elements, `squeeze` without `dim` squeezes all
  size-1 dims, `roll` without `dims` rolls the flattened tensor.
* Spatial attrs of conv/pool ops (`stride`, `padding`, `dilation`, `kernel_size`,
  `output_padding`, `output_size`) are always lists with one entry per spatial dim.
* `outputs` is a list: one entry for most ops; several for ops returning tuples
  (`max_dim`, `min_dim`, `cummax`, `cummin`, `sort`, `topk`, `max_pool*d`: values then
  indices; `split`/`chunk`: one entry per piece, in order).
* `empty` outputs have `"data": null` (only shape/dtype are checked).

## Comparison rule

For floating outputs: `|actual - expected| <= atol + rtol * |expected|`, where NaN matches
NaN (any sign/payload), `inf` must match `inf` of the same sign, and `-0.0 == 0.0`.
Integer and bool outputs (including all index outputs, always i64) are compared exactly,
regardless of rtol/atol. Output dtype and shape must match exactly.

Default tolerances (by the lowest-precision floating output of the case):

| dtype | rtol | atol |
|---|---|---|
| f64 | 1e-10 | 1e-12 |
| f32 | 1e-5 | 1e-6 |
| f16 | 2e-3 | 1e-3 |
| bf16 | 1.6e-2 | 1e-2 |
| ints/bool, cast, shape family | 0 | 0 |
| selection ops (below) | 0 | 0 |

Exceptions (all written into the case):

* Selection ops are exact on every dtype: `max`, `min`, `max_dim`, `min_dim`, `cummax`, `cummin`,
  `sort`, `topk`, `max_pool1d`, `max_pool2d`, `maximum`, `minimum`, `clamp`, `clamp_min`,
  `clamp_max` and `relu` return one of their input values (or a bound given as an attribute),
  so their floating outputs use rtol = atol = 0 (`-0.0 == 0.0` and NaN == NaN still hold).
* `prod` (floating) is relative: `rtol = max(default_rtol, K * eps)` with K the number of
  factors and eps = 2u of the accumulation dtype (f32 for f16/bf16), `atol` = the smallest normal
  number of the dtype. Each multiplication rounds with relative error <= u, so the reference
  and any implementation (any order) are each within (K - 1) u of the exact product.
* f16/bf16 `layer_norm`, `softmax` and `log_softmax` are within a few ulps: `rtol = 4u` (u =
  2^-11 for f16, 2^-8 for bf16, so 2 ulps of spacing) and `atol` = 1e-5 (1e-6 for `softmax`).
  The reference is computed in f32 and rounded once; an implementation computing in f32 in
  another order differs from it by a few f32 ulps before its own rounding, i.e. by at most one
  ulp of the output dtype (plus f32 noise near zero).

* Accumulating ops (matmul, dot, conv*, conv_transpose*, sum/mean/var/std/norm, cumsum/cumprod,
  f32/f64 layer_norm, scaled_dot_product_attention) use `atol = max(default_atol, u * sqrt(K) * mag)`
  where K is the number of accumulated terms (reduction length, inner dim, Cin/groups * kernel
  volume, E), mag is a bound on the magnitude of each term (1 for inputs in [-1,1], 3 for
  reductions of values in [-3,3]) and u = 1e-13 (f64), 2e-6 (f32), 1e-3 (f16), 1e-2 (bf16).
  Rationale: with different (blocked/vectorized) summation orders, rounding error grows like
  sqrt(K) times the term magnitude, and near-cancelling results make a pure rtol meaningless.
* interpolate (f32) uses atol 1e-5 and layer_norm (f32) at least 1e-5 (bicubic weights /
  normalization by a computed standard deviation lose a few ulps).
* The generator can cross-check every f32/f16/bf16 case against the same op evaluated in f64
  and rounded to the output dtype (`EMBER_GEN_CHECK=1 python3 gen_cases.py`); all cases pass,
  i.e. the tolerances accept a correctly rounded implementation, not only torch's own rounding.
  (torch 1.13 results that are wrong were dropped, e.g. f32 `log1p(3e38) = inf`, f32
  `vector_norm([3e20, 4e20]) = inf`.)
* cast cases are exact (conversion is exactly defined), and the whole shape family is exact
  (data movement only).

## Input layouts, IR-op coverage, random ops (the runners)

* `tests/conformance/conformance_test.cpp` runs every case on every backend stack once per input
  layout: `contiguous`; `strided` (the transpose of a materialised transpose: permuted but
  dense); `step2` (a step-2 slice of the last dim with garbage, NaN or a large integer, in the
  skipped positions); `offset` (a block at `[1, 1, ...]` inside a larger garbage-filled buffer:
  a nonzero offset and gaps between rows); `expand` (stride 0: every dim whose slices are equal
  is narrowed to one slice and expanded back; one-input elementwise cases of the unary and
  activation families also run a derived case whose input and expected output are their first
  slice along dim 0, repeated). Rank-1 inputs get gaps too; 0-d inputs stay as they are.
* `cases/ir.json` (family `ir`, generated by `gen_ir_cases.py`, not by this script) holds cases
  of the fused IR ops that no public tensor function runs whole: `gelu_backward`,
  `gelu_tanh_backward`, `silu_backward`, `layer_norm_backward`, `attention_backward`,
  `cross_entropy`, `cross_entropy_backward`, `adam_step`, `norm_multi`, `mul_multi`. The registry runs them straight on the
  backend; `attrs.null_inputs` lists absent optional inputs.
* `cases/quant.json` (family `quant`, generated by `gen_quant_cases.py` with numpy, not by this
  script) holds the quantized products `matmul_integer` (numpy's int64 matmul of the operands
  minus their zero points, exact), `conv_integer` (int64 window sums of the operands minus their
  zero points, exact) and `matmul_wq` (dequantize, then matmul in float64). A stack
  whose backend lacks an op of `ops.def` (`supports()`; the quantized products on CUDA) skips its
  cases after checking that running one fails with "not supported on <backend>".
* `tests/conformance/coverage.cpp` counts the IR ops that reach each stack's backend while the
  cases run, and fails naming every op of `include/ember/core/ops.def` that the backend
  supports and no case executed (`ops_without_case` in `build/reports/conformance.json`).
* The random ops (`random_uniform`, `random_normal`, `random_bernoulli`, `random_randint`) are
  not bitwise comparable with PyTorch; `tests/tensor/random_test.cpp` checks their mean and
  variance against the distribution's formulas, a Kolmogorov-Smirnov bound, bounds, and
  per-seed reproducibility, on every stack.

## f16 / bf16 reference

Inputs are rounded to f16/bf16 first. If torch 1.13's CPU backend implements the op for that
dtype, its result is used; otherwise (and always for reductions, scans, softmax/log_softmax,
matmul/dot/outer, conv, layer_norm) the op is evaluated in f32 on the same rounded values and
the floating result is rounded to f16/bf16 (round-to-nearest-even). The generator checks that
where both exist, native and f32-then-round agree within the case tolerance.

## Gradient references

Cases of differentiable ops (the `GRAD_OPS` set in `gen_cases.py`: every op except creation,
comparisons, logic and bitwise ops, `is_nan`/`is_inf`/`is_finite`, `argmax`/`argmin`/`argsort`,
`any`/`all`, `nonzero`/`argwhere`, `one_hot` and integer-only results) carry a `grad` entry
(checked by `tests/autodiff/autodiff_conformance_test.cpp` on every autodiff stack, which also
compares the same gradients with central finite differences in f64):

```json
"grad": {"upstream": [{"dtype": "f32", "shape": [3,4], "data": [...]}, null],
         "inputs":   [{"dtype": "f32", "shape": [3,4], "data": [...]}, null],
         "rtol": 0.0001, "atol": [2.3e-05, null]}
```

* `upstream` has one entry per output: a tensor of the output's dtype and shape for floating
  outputs, `null` for integer/bool outputs (indices). Values are uniform in [-1, 1] (rounded to
  the output dtype), drawn from a generator seeded with `zlib.crc32(case name)`, so the forward
  inputs are unchanged by adding gradients.
* `inputs` has one entry per input: the gradient of `L = sum_j sum(outputs[j] * upstream[j])`
  with respect to that input (`torch.autograd.grad`, same dtype and shape as the input), or
  `null` for integer/bool inputs (indices, masks) and for floating inputs that the outputs do not
  depend on (`allow_unused`; an implementation may return no gradient or zeros there).
* The gradient is evaluated with torch autograd on exactly the case's input values (f64 and f32:
  in that dtype). When any floating input or output is f16/bf16, every f16/bf16 input is upcast
  to f32 (exactly), the gradient is computed in f32, and each gradient is rounded back to its
  input's dtype (torch 1.13 has no CPU f16 backward for most ops, and native bf16 backward rounds
  intermediate values, so f32-then-round is the better reference).
* Conventions at non-differentiable points are PyTorch 1.13's: `relu'(0) = abs'(0) = 0`,
  `leaky_relu'(0) = negative_slope`, `prelu` at 0 gives `w g` to x (and `x g = 0` to w),
  `floor`/`ceil`/`round`/`trunc`/`sign` have zero gradient (a zero tensor, not `null`), `clamp`
  (`clamp_min`, `clamp_max`) passes the gradient where `min <= x <= max` (bounds included),
  `maximum`/`minimum` split ties half and half, `max`/`min` reductions share the gradient evenly
  among tied maxima, `max_dim`/`min_dim`/`sort`/`topk`/`cummax`/`cummin`/`max_pool*d` route it by
  the returned indices (`max_dim`/`min_dim`: the first extreme; `sort`: stable order for ties).
  Dedicated cases put inputs on these points: `maximum/*/ties*`, `minimum/*/ties*`,
  `max/*/ties_*`, `min/*/ties_*`, `max/*/pair_ties_*`, `min/*/pair_ties_*`,
  `max_dim/*/ties_first_*`, `min_dim/*/ties_first_*`, `relu/*/zeros`, `leaky_relu/*/zeros`,
  `prelu/*/zeros_*`, `abs/*/zeros`, `clamp/*/on_bounds*`, `clamp_min/*/on_bounds`,
  `clamp_max/*/on_bounds`, and the `sort` cases with equal values along the sorted dim (name
  suffix `_ties`); their expected gradients are PyTorch's. At a kink or tie the one-sided slopes
  differ. The finite-difference check of `autodiff_conformance_test.cpp` (a central difference:
  the average of the two one-sided slopes) agrees with PyTorch's convention for `abs` at 0 and
  for two-way ties (`maximum`/`minimum`, `pair_ties`), so those cases keep it; it skips the
  others by name part (`/ties` of max, min, max_dim, min_dim; `/zeros` of relu, leaky_relu,
  prelu; `/on_bounds` of the clamps; `_ties` of sort). All other inputs of these ops keep away
  from kinks and ties.
* `batch_norm`: torch 1.13 cannot differentiate `F.batch_norm` with respect to the running
  statistics, so its gradients come from the same formula written with differentiable ops,
  `(x - running_mean) / sqrt(running_var + eps) * weight + bias` (gradients for all five inputs).
* Comparison: as for outputs, `|actual - expected| <= atol_i + rtol * |expected|` per element of
  input i's gradient, with dtype and shape equal to the input's. `atol` is a list with one entry
  per input (`null` where `inputs` is `null`). Tolerances are looser than the forward ones, by the
  lowest-precision floating dtype among the case's inputs and outputs:

  | dtype | rtol | atol unit |
  |---|---|---|
  | f64 | 1e-7 | 1e-9 |
  | f32 | 1e-4 | 1e-5 |
  | f16 | 1e-2 | 1e-2 |
  | bf16 | 5e-2 | 5e-2 |

  and `atol_i = unit * max(1, M_i)` where M_i is the largest |element| of input i's expected
  gradient, capped at `M_i / 2` when M_i is below the unit (an all-zero gradient then never
  passes for a nonzero expected one); per input, so that a small gradient is not checked
  against the scale of another input's large one. Backward formulas accumulate (broadcast reductions, matmul/conv transposes, scatter
  of pooled windows) and cancel (softmax, normalizations, variance), so absolute errors scale with
  the gradient's magnitude rather than with each element. `EMBER_GEN_CHECK=1` also recomputes every
  gradient in f64 and checks that the f32/f16/bf16 reference is within a quarter of its tolerance
  of the rounded f64 value, and that torch's native f16/bf16 autograd (where it exists) is within
  the tolerance; both hold for all cases but one: `layer_norm/f32/3x2_ns2_affine_eps1e-05` uses
  0.29 of its x gradient's tolerance (rows of two elements: that gradient is almost pure
  cancellation, 1.5e-2 at most).
* Skip rules (no `grad` entry; the generator prints how many cases each rule removed):
  1. the op is not in `GRAD_OPS`;
  2. the case has no floating input or no floating output (e.g. `cast` to/from integer types);
  3. a floating input or output is non-finite (NaN/inf `special` cases, overflowing casts, float
     attention masks containing `-inf`): there the gradient is NaN/inf or not meaningful;
  4. the reference gradient itself is non-finite;
  5. torch reports that the outputs do not depend on any floating input.
  No case is skipped because of the point being non-differentiable: at kinks and ties the
  PyTorch conventions above define the expected value (the finite-difference check skips them).

## Semantics worth knowing (defined by torch 1.13 unless stated)

%(notes)s

## Ops

| ember op | family | torch call | attrs |
|---|---|---|---|
%(table)s

## Case counts

%(counts)s
"""

NOTES = """* `sign(NaN)` is `0` in torch 1.13 (dedicated cases `sign/*/nan_gives_zero`; the `special` cases of `sign` contain no NaN).
* `round` is half-to-even (`round(2.5) == 2`, `round(-0.5) == -0.0`).
* `div` is true division: int/int -> f32 (the default float dtype); int division by zero gives +-inf/nan.
* `fmod` result has the sign of the dividend (C `fmod`); `remainder` has the sign of the divisor
  (Python `%`): computed as `m = fmod(a, b); if (m != 0 && (m < 0) != (b < 0)) m += b`. So
  `remainder(-2, inf) == inf` and `remainder(5, -inf) == -inf`.
* Type promotion follows torch: i32+f32 -> f32, f16+f32 -> f32, f16+bf16 -> f32, bool+i64 -> i64,
  u8+i8 -> i16, i64+f16 -> f16; a Python float scalar with an int tensor -> f32; a Python scalar
  never raises the float width of a float tensor (f16 tensor + 0.1 stays f16; `equal_scalar(f16 x, 0.1)`
  compares against 0.1 rounded to f16). `clamp(int tensor, 0.5, 2.5)` -> f32 (case `clamp/i64_float_bounds/promote`).
* `clamp` with min > max returns max everywhere; clamp/clamp_min/clamp_max propagate NaN.
* `minimum`/`maximum`/`max`/`min`/`max_dim`/`min_dim` propagate NaN. `argmax`/`argmin`/`max_dim`/`min_dim`
  return the index of the first NaN if any. `argmax`/`argmin` with ties return the first occurrence (cases
  `*_ties_first_*`, verified against torch); so do `max_dim`/`min_dim` (torch documents it; cases
  `max_dim/*/ties_first_*`, `min_dim/*/ties_first_*`). All other argmax/argmin/max_dim/min_dim inputs are tie-free.
* `cummax`/`cummin`: once a NaN is seen, values stay NaN and the index stays at the first NaN (case `cummax/f32/nan`).
  All other cummax/cummin inputs are tie-free.
* `sort`/`argsort` are stable (ties keep input order; descending also keeps input order among equals).
  Cases with equal values along the sorted dim end in `_ties`.
  NaN sorts as larger than +inf: last in ascending, first in descending. `-0.0` and `0.0` are equal (stable order).
* `topk` inputs are tie-free; `sorted=True`; `k=0` gives empty outputs.
* `mask_where(x, mask, other)` = `torch.where(mask, other, x)`: takes `other` where mask is true, `x` elsewhere; all three broadcast.
* `where(cond, a, b)` takes `a` where cond is true.
* `mask_fill` value is given in the tensor's dtype category (int for int tensors, bool for bool).
* `lerp_scalar` weight is a float attr, `lerp` takes a weight tensor (3 inputs, broadcasting). torch's formula:
  `w < 0.5 ? a + w*(b-a) : b - (b-a)*(1-w)`.
* `pow_scalar` is tensor ** scalar with `exponent` attr; int tensor ** int scalar stays int, int tensor ** float scalar -> f32.
* Reductions: `sum`/`prod`/`cumsum`/`cumprod` of int or bool inputs return i64. Empty inputs: sum 0, prod 1,
  mean NaN, any False, all True, norm 0; `var`/`std` with correction 1 over one element is NaN.
  `max`/`min` (values) with a `dim` use `torch.amax/amin` (multiple dims allowed); `prod` takes a single dim only.
  `logsumexp` of an all `-inf` row is `-inf`.
* `norm` = `torch.linalg.vector_norm`; `ord` is a float (`"inf"` as a string), `dim` int or list.
* `var`/`std` use `correction` (0 = population, 1 = Bessel).
* `argmax`/`argmin` without `dim` return the flat (row-major) index as a 0-d i64.
* `chunk`: each chunk has size `ceil(n / chunks)`, so fewer than `chunks` pieces may be returned (`chunk(6 elems, 4)` -> 3 pieces of 2).
* `split`: int = piece size (last may be smaller), list = section sizes (zero allowed).
* `slice`: `ranges` is one `[start, end, step]` per dim with Python slice semantics (negative start/end count from
  the end, out-of-range values clamp, `start >= end` gives an empty dim); step > 0.
* `slice_assign`: inputs `x`, `value` where `value` has exactly the slice's shape; output is the whole updated tensor.
* `narrow` accepts a negative `start` (counts from the end).
* `pad`: `pad` lists (left, right) pairs starting from the LAST dim; negative constant pads crop. reflect/replicate use
  torch's dimensionality rules (1-d pad on 2-d/3-d input, 2-d pad on 3-d/4-d, 3-d pad on 4-d/5-d).
* `one_hot` with `num_classes: -1` uses `max(x) + 1`.
* `take` indexes the flattened tensor; negative indices count from the end. `select` accepts a negative index.
* `scatter` (assign) inputs have unique target indices; `scatter_add`/`select_add` may repeat indices (sums).
* `select_assign` = `index_copy` (unique indices). `nonzero`/`argwhere`: NaN is nonzero; output is i64 `[n, ndim]` in
  row-major order (0-d input gives shape `[n, 0]`).
* `cast`: float -> int truncates toward zero (inputs are in range of the target); float -> bool is `x != 0` (NaN -> true,
  -0.0 -> false); int -> narrower int wraps modulo 2^bits (e.g. i64 300 -> u8 44, i32 -1 -> u8 255); to f16/bf16 rounds to
  nearest even and overflows to inf (f32 65520 -> f16 inf, f32 max -> bf16 inf). Note torch converts f64 -> f16/bf16 through
  f32 (double rounding); the f64 test values are chosen so this does not matter.
* `avg_pool*d`: with `ceil_mode`, windows that would start in the right padding are dropped; the divisor with
  `count_include_pad=True` is the window size clipped to the padded input (so the last window in ceil mode may divide by less
  than kernel size); with `count_include_pad=False` it is the number of real elements.
* `max_pool*d`: indices are flat indices into each (H*W or L) input plane; padding never wins. Inputs are tie-free
  (except the NaN case: NaN wins).
* `interpolate` is called with `size` (when a scale factor is meant, `size` is the resulting output size; the scale used is
  in/out). `nearest` is PyTorch's legacy nearest: `src = floor(dst * in / out)`. `bilinear`/`bicubic` give `align_corners`
  explicitly; bicubic uses A = -0.75 and clamps taps at the border; no antialias.
* `embedding` inputs are `weight, indices` (note: order differs from `F.embedding(indices, weight)`).
* `layer_norm` inputs are `x`, or `x, weight`, or `x, weight, bias` (biased variance, eps inside sqrt).
* `batch_norm` is inference mode: `(x - running_mean) / sqrt(running_var + eps) * weight + bias` over channel dim 1.
* `scaled_dot_product_attention`: torch 1.13 has no such function; the reference is computed with torch in float64 as
  `softmax(q @ k^T * scale + mask) @ v` then cast to the input dtype. `scale: null` means `1/sqrt(E)`.
  A bool mask means True = attend (masked-out positions get -inf); a float mask is added to the scores. `is_causal`
  keeps key j for query i iff `j <= i` (top-left aligned `tril(ones(L, S))`, like torch 2.x); never combined with a mask.
  Masks broadcast (`[L, S]` or `[B, 1, L, S]`). Every query row keeps at least one key.
* Random ops (rand, randn, bernoulli, randint) have no cases here (not bitwise comparable); see "Input layouts, IR-op coverage, random ops"."""


def write_readme(families):
    rows = []
    for fam in families:
        for op in fam.ops:
            fam_name, call, keys = OPDOC[op]
            rows.append("| `%s` | %s | `%s` | %s |" % (op, fam.name, call.replace("|", "\\|"), keys))
    ng = lambda fm: sum(1 for c in fm.cases if "grad" in c)
    counts = "\n".join("* %s: %d (%d with gradients)" % (fm.name, len(fm.cases), ng(fm)) for fm in families)
    counts += "\n* total: %d (%d with gradients, %d ops)" % (
        sum(len(fm.cases) for fm in families), sum(ng(fm) for fm in families),
        len({c["op"] for fm in families for c in fm.cases if "grad" in c}))
    text = README_HEAD % {"torch": torch.__version__, "notes": NOTES, "table": "\n".join(rows), "counts": counts}
    with open(os.path.join(HERE, "README.md"), "w") as fh:
        fh.write(text)


def main():
    gens = [("creation", gen_creation, False), ("unary", gen_unary, False), ("binary", gen_binary, False),
            ("activation", gen_activation, False), ("compare_logic", gen_compare_logic, False), ("reduce", gen_reduce, False),
            ("scan_sort", gen_scan_sort, False), ("linalg", gen_linalg, False), ("shape", gen_shape, True),
            ("index", gen_index, False), ("cast", gen_cast, True), ("nn", gen_nn, False)]
    fams = []
    total = 0
    for i, (name, gen, exact) in enumerate(gens):
        fam = Family(name, 1000 + i, exact)
        gen(fam)
        path = fam.write()
        size = os.path.getsize(path)
        print("%-14s %5d cases  %4d ops  %8.1f KB" % (name, len(fam.cases), len(fam.ops), size / 1024.0))
        total += len(fam.cases)
        fams.append(fam)
    print("%-14s %5d cases" % ("total", total))
    undocumented = [op for op in OPDOC if not any(op in fm.ops for fm in fams)]
    if undocumented:
        print("WARNING: documented ops without cases:", undocumented)
    write_readme(fams)
    if SKIPPED:
        print("skipped (torch raised):")
        for s in SKIPPED:
            print("  ", s)
    if CHECK:
        print("f64 cross-check: %d cases outside tolerance" % len(CHECK_FAIL))
        for n, w in CHECK_FAIL:
            print("   %s (excess %.3g)" % (n, w))
    gcases = [c for fm in fams for c in fm.cases if "grad" in c]
    print("gradient references: %d cases, %d ops" % (len(gcases), len({c["op"] for c in gcases})))
    for rule, n in sorted(GRAD_SKIPS.items()):
        print("   skipped (%s): %d" % (rule, n))
    if CHECK:
        print("gradient f64 cross-check: %d cases use more than 1/4 of their tolerance" % len(GRAD_CHECK_FAIL))
        for n, w in GRAD_CHECK_FAIL:
            print("   %s (%.3g of tolerance)" % (n, w))
        print("native f16/bf16 autograd outside the gradient tolerance: %d cases" % len(GRAD_LOWP_NATIVE))
        for n, w in GRAD_LOWP_NATIVE:
            print("   %s (%.3g x tolerance)" % (n, w))
    if LOWP_DISAGREE:
        print("WARNING: native f16/bf16 differs from f32-then-round beyond tolerance in %d cases:" % len(LOWP_DISAGREE))
        for n, w in LOWP_DISAGREE:
            print("   %s (excess %.3g)" % (n, w))


if __name__ == "__main__":
    main()
