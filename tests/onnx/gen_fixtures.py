#!/usr/bin/python3
"""Writes the ONNX reader's test fixtures into tests/onnx/fixtures/ with Debian's python3-onnx,
plus expected.json: the values the C++ tests must read back from each file.

  apt-get install -y python3-onnx && /usr/bin/python3 tests/onnx/gen_fixtures.py

Files (each a few hundred bytes):
  attributes.onnx      one node with an attribute of every type (and a reference attribute),
                       opsets of two domains, metadata, a model-local function
  tensors.onnx         initializers of every element type, raw and typed, f16/bf16, scalar,
                       empty, and unsupported types (UINT16, UINT32, UINT64, STRING, COMPLEX64)
  external.onnx        initializers in external_weights.bin (offset/length, offset only, none)
  external_*.onnx      hostile external data: '..', an absolute path, a short file
  symbolic.onnx        inputs with symbolic, fixed and unknown dims, unknown rank, sequence,
                       optional and map types; value_info
  if_nested.onnx       an If whose else branch holds another If, all reading outer-scope names
  runtime_*.onnx       small models for the runtime (an MLP at opset 13, a conv net at opset 11,
                       an unknown op), with their NumPy outputs
"""
import json
import os
import struct

import numpy as np

# python3-onnx 1.12 still uses the NumPy aliases that NumPy 1.24 removed.
np.float = float
np.int = int
np.bool = bool
np.object = object

from onnx import AttributeProto, TensorProto, TypeProto, helper  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
expected = {}


def f32(x):
    """The double value of x rounded to float32 (what the reader must return)."""
    return float(np.float32(x))


def save(model, name):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(model.SerializeToString())


def dims_of(vi_type):
    out = []
    for d in vi_type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            out.append(d.dim_value)
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append(None)
    return out


def bf16_bits(x):
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    assert bits & 0xFFFF == 0, "pick values exact in bfloat16"
    return bits >> 16


def tensor_summary(t, values, storage):
    return {"name": t.name, "data_type": t.data_type, "dims": list(t.dims), "values": values, "storage": storage}


# --- attributes.onnx -------------------------------------------------------------------------

def small_graph(name, inp, out, op="Identity"):
    return helper.make_graph([helper.make_node(op, [inp], [out], name=name + "_node")], name, [],
                             [helper.make_tensor_value_info(out, TensorProto.FLOAT, [2])])


def gen_attributes():
    attr_tensor = helper.make_tensor("attr_t", TensorProto.FLOAT, [2, 2], [1.0, -2.0, 0.5, 3.25])
    t_int64 = helper.make_tensor("t_int64", TensorProto.INT64, [3], [1, -2, 1 << 40])
    t_int8 = helper.make_tensor("t_int8", TensorProto.INT8, [2], [-128, 127])
    body = small_graph("body", "X", "body_out")
    g1 = small_graph("branch1", "X", "b1_out", "Neg")
    g2 = small_graph("branch2", "X", "b2_out", "Abs")
    tp = helper.make_tensor_type_proto(TensorProto.FLOAT, ["N", 3])
    tps = [helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.INT64, None)),
           helper.make_tensor_type_proto(TensorProto.BOOL, [])]

    ref = AttributeProto()
    ref.name = "gamma"
    ref.ref_attr_name = "outer_gamma"
    ref.type = AttributeProto.FLOAT
    empty_ints = AttributeProto()
    empty_ints.name = "empty_ints"
    empty_ints.type = AttributeProto.INTS

    node = helper.make_node(
        "AllAttrs", ["X"], ["Y"], name="all_attrs", domain="test.ember", doc_string="every attribute type",
        alpha=0.5, beta=0.1, zero=0.0, count=-7, big=1 << 40, mode="reflect", utf8="h\u00e9",
        value=attr_tensor, body=body, scales=[1.0, -2.5, 3.25], pads=[0, 1, -1, 1 << 33],
        names=["a", "bc", ""], weights=[t_int64, t_int8], branches=[g1, g2], dtype=tp, types=tps)
    node.attribute.extend([ref, empty_ints])

    graph = helper.make_graph([node], "attrs_graph", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])], doc_string="graph doc")
    func = helper.make_function("test.ember", "MyFunc", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                                [helper.make_opsetid("", 13)])
    model = helper.make_model(graph, producer_name="gen_fixtures", producer_version="1.0", domain="ai.ember.test",
                              model_version=3, doc_string="model doc",
                              opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("test.ember", 1)],
                              functions=[func])
    model.ir_version = 8
    helper.set_model_props(model, {"author": "ember", "purpose": "tests"})
    save(model, "attributes.onnx")

    expected["attributes"] = {
        "ir_version": 8, "producer_name": "gen_fixtures", "producer_version": "1.0", "domain": "ai.ember.test",
        "model_version": 3, "doc_string": "model doc", "graph_name": "attrs_graph", "graph_doc": "graph doc",
        "opsets": [["", 13], ["test.ember", 1]],
        "metadata": [[p.key, p.value] for p in model.metadata_props],
        "functions": [["test.ember", "MyFunc"]],
        "node": {"name": "all_attrs", "op_type": "AllAttrs", "domain": "test.ember", "doc": "every attribute type",
                 "inputs": ["X"], "outputs": ["Y"]},
        "attrs": {
            "alpha": {"type": "FLOAT", "f": 0.5},
            "beta": {"type": "FLOAT", "f": f32(0.1)},
            "zero": {"type": "FLOAT", "f": 0.0},
            "count": {"type": "INT", "i": -7},
            "big": {"type": "INT", "i": 1 << 40},
            "mode": {"type": "STRING", "s": "reflect"},
            "utf8": {"type": "STRING", "s": "h\u00e9"},
            "value": {"type": "TENSOR", "t": tensor_summary(attr_tensor, [1.0, -2.0, 0.5, 3.25], "typed")},
            "body": {"type": "GRAPH", "g": {"name": "body", "nodes": [["Identity", "body_node"]], "outputs": ["body_out"]}},
            "scales": {"type": "FLOATS", "floats": [1.0, -2.5, 3.25]},
            "pads": {"type": "INTS", "ints": [0, 1, -1, 1 << 33]},
            "names": {"type": "STRINGS", "strings": ["a", "bc", ""]},
            "weights": {"type": "TENSORS", "tensors": [tensor_summary(t_int64, [1, -2, 1 << 40], "typed"),
                                                       tensor_summary(t_int8, [-128, 127], "typed")]},
            "branches": {"type": "GRAPHS", "graphs": [
                {"name": "branch1", "nodes": [["Neg", "branch1_node"]], "outputs": ["b1_out"]},
                {"name": "branch2", "nodes": [["Abs", "branch2_node"]], "outputs": ["b2_out"]}]},
            "dtype": {"type": "TYPE_PROTO", "tp": "tensor(FLOAT)[N,3]"},
            "types": {"type": "TYPE_PROTOS", "type_protos": ["seq(tensor(INT64))", "tensor(BOOL)[]"]},
            "gamma": {"type": "FLOAT", "ref_attr_name": "outer_gamma"},
            "empty_ints": {"type": "INTS", "ints": []},
        },
    }


# --- tensors.onnx ----------------------------------------------------------------------------

def gen_tensors():
    inits, summaries = [], []

    def add(t, values, storage):
        inits.append(t)
        summaries.append(tensor_summary(t, values, storage))

    cases = [  # (name, ONNX type, numpy type, dims, values)
        ("float", TensorProto.FLOAT, np.float32, [2, 3], [0.0, 1.5, -2.25, 1e10, -1e-10, 3.0]),
        ("double", TensorProto.DOUBLE, np.float64, [3], [0.1, -1e300, 2.5]),
        ("int8", TensorProto.INT8, np.int8, [4], [-128, -1, 0, 127]),
        ("uint8", TensorProto.UINT8, np.uint8, [4], [0, 1, 128, 255]),
        ("int16", TensorProto.INT16, np.int16, [3], [-32768, 7, 32767]),
        ("int32", TensorProto.INT32, np.int32, [2, 2], [-2147483648, -1, 0, 2147483647]),
        ("int64", TensorProto.INT64, np.int64, [3], [-(1 << 62), 0, (1 << 62) + 5]),
        ("bool", TensorProto.BOOL, np.bool_, [2, 2], [True, False, False, True]),
        ("float16", TensorProto.FLOAT16, np.float16, [4], [0.0, 1.0, -2.5, 65504.0]),
    ]
    for name, onnx_type, np_type, dims, values in cases:
        arr = np.array(values, dtype=np_type)
        expect = [v.item() if not isinstance(v, (bool, np.bool_)) else bool(v) for v in arr]
        if np_type in (np.float32, np.float16):
            expect = [float(v) for v in arr]
        add(helper.make_tensor(name + "_raw", onnx_type, dims, arr.tobytes(), raw=True), expect, "raw")
        add(helper.make_tensor(name + "_typed", onnx_type, dims, values), expect, "typed")
    bf = [1.0, -2.5, 0.15625, 256.0]
    bits = [bf16_bits(v) for v in bf]
    add(helper.make_tensor("bfloat16_raw", TensorProto.BFLOAT16, [2, 2], struct.pack("<4H", *bits), raw=True), bf, "raw")
    add(helper.make_tensor("bfloat16_typed", TensorProto.BFLOAT16, [2, 2], bf), bf, "typed")
    add(helper.make_tensor("scalar", TensorProto.FLOAT, [], [42.0]), [42.0], "typed")
    add(helper.make_tensor("empty", TensorProto.FLOAT, [0, 3], []), [], "typed")
    add(helper.make_tensor("empty_raw", TensorProto.INT64, [2, 0], b"", raw=True), [], "raw")
    # Types ember does not hold: parsed, refused by to_tensor_data.
    add(helper.make_tensor("uint16", TensorProto.UINT16, [2], [1, 65535]), None, "typed")
    add(helper.make_tensor("uint32", TensorProto.UINT32, [2], [1, 4000000000]), None, "typed")
    add(helper.make_tensor("uint64", TensorProto.UINT64, [1], [1 << 63]), None, "typed")
    add(helper.make_tensor("string", TensorProto.STRING, [2], [b"ab", b"c"]), None, "typed")
    add(helper.make_tensor("complex64", TensorProto.COMPLEX64, [1], [complex(1, 2)]), None, "typed")

    graph = helper.make_graph([], "tensors", [], [helper.make_tensor_value_info("float_raw", TensorProto.FLOAT, [2, 3])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    save(model, "tensors.onnx")
    expected["tensors"] = summaries
    expected["tensor_fields"] = {"uint64": {"uint64_data": [1 << 63]}, "uint32": {"uint64_data": [1, 4000000000]},
                                 "uint16": {"int32_data": [1, 65535]}, "string": {"string_data": ["ab", "c"]},
                                 "complex64": {"float_data": [1.0, 2.0]}}


# --- external data ---------------------------------------------------------------------------

def external_tensor(name, data_type, dims, entries):
    t = TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in entries:
        e = t.external_data.add()
        e.key = k
        e.value = v
    return t


def external_model(inits, name):
    graph = helper.make_graph([], "external", [], [helper.make_tensor_value_info(inits[0].name, inits[0].data_type, None)],
                              initializer=inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), name)


def gen_external():
    a = np.array([1.0, 2.0, -3.0, 4.5, 5.0, 6.0], dtype=np.float32)
    b = np.array([7, -8, 9], dtype=np.int64)
    c = np.array([0.5, -0.25], dtype=np.float16)
    blob = bytearray(c.tobytes())          # c at offset 0 (no offset entry)
    blob += b"\0" * (16 - len(blob))
    off_a = len(blob)
    blob += a.tobytes()                    # a at 16, with offset and length
    blob += b"\0" * 8
    off_b = len(blob)
    blob += b.tobytes()                    # b with offset only
    with open(os.path.join(OUT, "external_weights.bin"), "wb") as f:
        f.write(bytes(blob))
    inits = [
        external_tensor("ext_a", TensorProto.FLOAT, [2, 3],
                        [("location", "external_weights.bin"), ("offset", str(off_a)), ("length", str(a.nbytes))]),
        external_tensor("ext_b", TensorProto.INT64, [3], [("location", "external_weights.bin"), ("offset", str(off_b))]),
        external_tensor("ext_c", TensorProto.FLOAT16, [2], [("location", "./external_weights.bin")]),
    ]
    external_model(inits, "external.onnx")
    expected["external"] = [
        tensor_summary(inits[0], [float(v) for v in a], "external"),
        tensor_summary(inits[1], [int(v) for v in b], "external"),
        tensor_summary(inits[2], [float(v) for v in c], "external"),
    ]
    external_model([external_tensor("escape", TensorProto.FLOAT, [1], [("location", "../gen_fixtures.py")])],
                   "external_traversal.onnx")
    external_model([external_tensor("absolute", TensorProto.FLOAT, [1], [("location", "/etc/passwd")])],
                   "external_absolute.onnx")
    external_model([external_tensor("short", TensorProto.FLOAT, [100], [("location", "external_weights.bin"),
                                                                        ("offset", "8")])],
                   "external_short.onnx")
    external_model([external_tensor("bad_length", TensorProto.FLOAT, [6],
                                    [("location", "external_weights.bin"), ("length", "20")])],
                   "external_bad_length.onnx")
    external_model([external_tensor("missing", TensorProto.FLOAT, [1], [("location", "no_such_file.bin")])],
                   "external_missing.onnx")


# --- symbolic.onnx ---------------------------------------------------------------------------

def gen_symbolic():
    images = helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, None, 224])
    mask = helper.make_tensor_value_info("mask", TensorProto.BOOL, None)  # rank unknown
    seq = helper.make_value_info("seq_in", helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.INT64, ["n"])))
    opt = helper.make_value_info("opt_in", helper.make_optional_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, [4])))
    map_type = TypeProto()
    map_type.map_type.key_type = TensorProto.INT64
    map_type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(TensorProto.FLOAT, []))
    mp = helper.make_value_info("map_in", map_type)
    scalar = helper.make_tensor_value_info("scalar_in", TensorProto.INT32, [])
    nodes = [helper.make_node("Relu", ["images"], ["hidden"], name="relu"),
             helper.make_node("Identity", ["hidden"], ["out"], name="id")]
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 3, None, 224])
    hidden = helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", 3, "h", 224])
    graph = helper.make_graph(nodes, "symbolic", [images, mask, seq, opt, mp, scalar], [out], value_info=[hidden])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), "symbolic.onnx")
    expected["symbolic"] = {
        "inputs": {
            "images": {"type": "tensor(FLOAT)[batch,3,?,224]", "elem_type": 1, "dims": dims_of(images.type)},
            "mask": {"type": "tensor(BOOL)", "elem_type": 9, "dims": None},
            "seq_in": {"type": "seq(tensor(INT64)[n])", "elem_type": 0, "dims": None},
            "opt_in": {"type": "optional(tensor(FLOAT)[4])", "elem_type": 0, "dims": None},
            "map_in": {"type": "map(INT64,tensor(FLOAT)[])", "elem_type": 0, "dims": None},
            "scalar_in": {"type": "tensor(INT32)[]", "elem_type": 6, "dims": []},
        },
        "outputs": {"out": "tensor(FLOAT)[batch,3,?,224]"},
        "value_info": {"hidden": "tensor(FLOAT)[batch,3,h,224]"},
    }


# --- if_nested.onnx --------------------------------------------------------------------------

def gen_if():
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2])  # noqa: E731
    then_g = helper.make_graph([helper.make_node("Add", ["x", "one"], ["then_out"], name="then_add")], "then", [],
                               [vi("then_out")])
    inner_then = helper.make_graph([helper.make_node("Mul", ["x", "one"], ["it_out"], name="inner_mul")],
                                   "inner_then", [], [vi("it_out")])
    inner_else = helper.make_graph([helper.make_node("Sub", ["x", "one"], ["ie_out"], name="inner_sub")],
                                   "inner_else", [], [vi("ie_out")])
    else_g = helper.make_graph([
        helper.make_node("Not", ["cond"], ["ncond"], name="not"),
        helper.make_node("If", ["ncond"], ["inner_out"], name="inner_if", then_branch=inner_then,
                         else_branch=inner_else)], "else", [], [vi("inner_out")])
    node = helper.make_node("If", ["cond"], ["y"], name="outer_if", then_branch=then_g, else_branch=else_g)
    graph = helper.make_graph([node], "if_nested",
                              [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), vi("x")], [vi("y")],
                              initializer=[helper.make_tensor("one", TensorProto.FLOAT, [2], [1.0, 1.0])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]), "if_nested.onnx")
    expected["if_nested"] = {
        "then": {"name": "then", "nodes": [["Add", "then_add"]], "outputs": ["then_out"]},
        "else": {"name": "else", "nodes": [["Not", "not"], ["If", "inner_if"]], "outputs": ["inner_out"]},
        "inner_then": {"name": "inner_then", "nodes": [["Mul", "inner_mul"]], "outputs": ["it_out"]},
        "inner_else": {"name": "inner_else", "nodes": [["Sub", "inner_sub"]], "outputs": ["ie_out"]},
    }


# --- runtime_*.onnx: small models run by runtime_test.cpp, expected outputs from NumPy ---------

def conv2d_ref(x, w, b, pads, stride):
    """NumPy reference of an ONNX Conv (group 1): pads = [top, left, bottom, right]."""
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    y = np.zeros((n, o, oh, ow), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            y[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return y + b.reshape(1, -1, 1, 1)


def values(a):
    return [float(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def gen_runtime():
    rng = np.random.default_rng(7)
    # MLP, opset 13: MatMul, Add, Relu, Reshape (0 and -1), ReduceSum (axes input), Softmax, Shape.
    w = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    inits = [helper.make_tensor("W", TensorProto.FLOAT, [3, 4], w.ravel().tolist()),
             helper.make_tensor("b", TensorProto.FLOAT, [4], b.ravel().tolist()),
             helper.make_tensor("shape", TensorProto.INT64, [3], [0, -1, 2]),
             helper.make_tensor("axes", TensorProto.INT64, [1], [2])]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"], name="matmul"),
             helper.make_node("Add", ["xw", "b"], ["h"], name="add"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "shape"], ["r3"], name="reshape"),
             helper.make_node("ReduceSum", ["r3", "axes"], ["s"], name="reduce", keepdims=0),
             helper.make_node("Softmax", ["s"], ["y"], name="softmax", axis=-1),
             helper.make_node("Shape", ["x"], ["xshape"], name="shape_of_x")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2]),
                               helper.make_tensor_value_info("xshape", TensorProto.INT64, [2])], initializer=inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "runtime_mlp.onnx")
    r = np.maximum(x.astype(np.float64) @ w + b, 0).reshape(2, -1, 2).sum(axis=2)
    y = np.exp(r - r.max(axis=-1, keepdims=True))
    y = y / y.sum(axis=-1, keepdims=True)
    expected["runtime_mlp"] = {"x": values(x), "x_shape": [2, 3], "y": values(y), "y_shape": [2, 2],
                               "xshape": [2, 3]}

    # Conv net, opset 11: Conv (asymmetric pads), Clip (min/max inputs), MaxPool, Squeeze (axes
    # attribute), Gemm (transB, alpha, beta).
    cw = rng.standard_normal((2, 1, 2, 2)).astype(np.float32)
    cb = rng.standard_normal(2).astype(np.float32)
    gw = rng.standard_normal((3, 2)).astype(np.float32)
    gc = rng.standard_normal(3).astype(np.float32)
    x = rng.standard_normal((1, 1, 3, 3)).astype(np.float32)
    inits = [helper.make_tensor("cw", TensorProto.FLOAT, [2, 1, 2, 2], cw.ravel().tolist()),
             helper.make_tensor("cb", TensorProto.FLOAT, [2], cb.ravel().tolist()),
             helper.make_tensor("lo", TensorProto.FLOAT, [], [-0.5]),
             helper.make_tensor("hi", TensorProto.FLOAT, [], [1.5]),
             helper.make_tensor("gw", TensorProto.FLOAT, [3, 2], gw.ravel().tolist()),
             helper.make_tensor("gc", TensorProto.FLOAT, [3], gc.ravel().tolist())]
    nodes = [helper.make_node("Conv", ["img", "cw", "cb"], ["c"], name="conv", pads=[0, 0, 1, 1]),
             helper.make_node("Clip", ["c", "lo", "hi"], ["cl"], name="clip"),
             helper.make_node("MaxPool", ["cl"], ["p"], name="pool", kernel_shape=[3, 3]),
             helper.make_node("Squeeze", ["p"], ["f"], name="squeeze", axes=[2, 3]),
             helper.make_node("Gemm", ["f", "gw", "gc"], ["out"], name="gemm", transB=1, alpha=0.5, beta=2.0)]
    graph = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 1, 3, 3])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 3])], initializer=inits)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), "runtime_conv.onnx")
    c = np.clip(conv2d_ref(x.astype(np.float64), cw, cb, [0, 0, 1, 1], 1), -0.5, 1.5)
    f = c.max(axis=(2, 3))
    out = 0.5 * f @ gw.T.astype(np.float64) + 2.0 * gc
    expected["runtime_conv"] = {"img": values(x), "out": values(out), "out_shape": [1, 3]}

    # An op without a handler.
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("FancyOp", ["r"], ["y"], name="fancy")]
    graph = helper.make_graph(nodes, "unsupported", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), "runtime_unsupported.onnx")


def main():
    os.makedirs(OUT, exist_ok=True)
    gen_attributes()
    gen_tensors()
    gen_external()
    gen_symbolic()
    gen_if()
    gen_runtime()
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"wrote {len(os.listdir(OUT))} files, {total} bytes, to {OUT}")


if __name__ == "__main__":
    main()
