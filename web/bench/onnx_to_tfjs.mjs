// A small ONNX -> TensorFlow.js translator for the browser benchmark (web/bench/run.mjs): there
// is no offline converter from ONNX to TF.js here (tfjs-converter takes TensorFlow SavedModels and
// Keras files), so this reads the ONNX protobuf itself and builds a function of tf ops.
//
//   import { parseOnnx, convertOnnxToTfjs } from './onnx_to_tfjs.mjs';
//   const model = convertOnnxToTfjs(tf, bytes);          // tf: the tfjs namespace, backend set
//   const y = await model.run(float32NCHW);             // Float32Array of the (first) output
//   model.info  // {ops: {...}, fused: N, steps: M};  model.dispose()
//
// It runs in NHWC (TF.js's native layout): 4-D values are kept NHWC, the input is transposed once,
// conv weights are rearranged OIHW -> HWIO (depthwise: HW C M) at conversion, and a 4-D value is
// transposed back to NCHW only where the graph flattens or reshapes it over more than one pixel.
// Like TF.js's own converter, it fuses Conv + BatchNormalization (folded into the weights) +
// Relu / Clip(0, 6) into tf.fused.conv2d / depthwiseConv2d, and Gemm's bias into tf.fused.matMul.
// Shape arithmetic (Shape, Gather, Unsqueeze, Concat, Reshape's shape, Constant, ...) is folded at
// conversion: the input's shape is fixed (the ONNX declaration, or `inputShape`).
//
// Ops: Conv (groups, depthwise, dilations), BatchNormalization, Relu, Clip, Add, Sub, Mul, Div,
// MaxPool, AveragePool, GlobalAveragePool, Flatten, Gemm, MatMul, Reshape, Shape, Gather,
// Unsqueeze, Squeeze, Concat, Constant, Identity, Dropout, Softmax, Transpose (constants only).
// Anything else throws an Error naming the op ("converts" is then false for that model).

// ------------------------------------------------------------------ protobuf: the little needed

class Reader {
  constructor(bytes, start = 0, end = bytes.length) {
    this.b = bytes;
    this.p = start;
    this.end = end;
  }
  more() { return this.p < this.end; }
  varint() {  // as a Number (exact below 2^53); negatives (10 bytes) via BigInt
    let lo = 0, shift = 0, b;
    const start = this.p;
    do {
      b = this.b[this.p++];
      if (shift < 49) lo += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    if (shift > 49) {  // long: redo with BigInt, two's complement int64
      let v = 0n; let s = 0n;
      for (let q = start; q < this.p; ++q) { v |= BigInt(this.b[q] & 0x7f) << s; s += 7n; }
      return Number(BigInt.asIntN(64, v));
    }
    return lo;
  }
  // Yields [field, wire, value]: value is a Number (varint), or [start, end) of bytes (len/fixed)
  *fields() {
    while (this.more()) {
      const key = this.varint();
      const field = Math.floor(key / 8), wire = key & 7;
      if (wire === 0) yield [field, wire, this.varint()];
      else if (wire === 2) {
        const n = this.varint();
        const s = this.p;
        this.p += n;
        yield [field, wire, [s, s + n]];
      } else if (wire === 5) { const s = this.p; this.p += 4; yield [field, wire, [s, s + 4]]; }
      else if (wire === 1) { const s = this.p; this.p += 8; yield [field, wire, [s, s + 8]]; }
      else throw new Error(`onnx_to_tfjs: unsupported protobuf wire type ${wire}`);
    }
    if (this.p !== this.end) throw new Error('onnx_to_tfjs: truncated protobuf');
  }
  sub([s, e]) { return new Reader(this.b, s, e); }
  str([s, e]) { return new TextDecoder().decode(this.b.subarray(s, e)); }
  f32([s]) { return new DataView(this.b.buffer, this.b.byteOffset + s, 4).getFloat32(0, true); }
  packedVarints(range) { const r = this.sub(range), out = []; while (r.more()) out.push(r.varint()); return out; }
  packedF32([s, e]) {
    const dv = new DataView(this.b.buffer, this.b.byteOffset + s, e - s), out = [];
    for (let q = 0; q < e - s; q += 4) out.push(dv.getFloat32(q, true));
    return out;
  }
}

// ints: wire 0 (one) or wire 2 (packed)
function pushInts(out, r, wire, v) { if (wire === 0) out.push(v); else out.push(...r.packedVarints(v)); }

const DTYPES = { 1: 'float32', 2: 'uint8', 3: 'int8', 6: 'int32', 7: 'int64', 9: 'bool', 11: 'float64' };

function parseTensor(r) {
  const t = { name: '', dims: [], dtype: 1, data: null };
  let raw = null; const floats = [], ints = [], doubles = [];
  for (const [f, w, v] of r.fields()) {
    if (f === 1) pushInts(t.dims, r, w, v);
    else if (f === 2) t.dtype = v;
    else if (f === 4) { if (w === 2) floats.push(...r.packedF32(v)); else floats.push(r.f32(v)); }
    else if (f === 5 || f === 7) pushInts(ints, r, w, v);
    else if (f === 8) t.name = r.str(v);
    else if (f === 9) raw = v;
    else if (f === 10) { const dv = new DataView(r.b.buffer, r.b.byteOffset + v[0], v[1] - v[0]); for (let q = 0; q < v[1] - v[0]; q += 8) doubles.push(dv.getFloat64(q, true)); }
    else if (f === 14 && v === 1) throw new Error(`onnx_to_tfjs: tensor ${t.name} has external data (embed the weights in the .onnx file)`);
  }
  const n = t.dims.reduce((a, b) => a * b, 1);
  if (raw) {
    const [s, e] = raw;
    const bytes = r.b.slice(s, e);  // aligned copy
    const dv = new DataView(bytes.buffer);
    if (t.dtype === 1) t.data = new Float32Array(bytes.buffer, 0, n);
    else if (t.dtype === 7) { t.data = new Array(n); for (let i = 0; i < n; ++i) t.data[i] = Number(dv.getBigInt64(8 * i, true)); }
    else if (t.dtype === 6) t.data = Array.from(new Int32Array(bytes.buffer, 0, n));
    else if (t.dtype === 11) t.data = Array.from(new Float64Array(bytes.buffer, 0, n));
    else if (t.dtype === 2 || t.dtype === 9) t.data = Array.from(bytes.subarray(0, n));
    else if (t.dtype === 3) t.data = Array.from(new Int8Array(bytes.buffer, 0, n));
    else throw new Error(`onnx_to_tfjs: tensor ${t.name}: data type ${t.dtype} not supported`);
  } else if (t.dtype === 1) t.data = Float32Array.from(floats);
  else if (t.dtype === 11) t.data = doubles;
  else t.data = ints;
  if (t.data.length !== n) throw new Error(`onnx_to_tfjs: tensor ${t.name} has ${t.data.length} values for dims [${t.dims}]`);
  return t;
}

function parseAttribute(r) {
  const a = { name: '', value: undefined };
  const ints = [], floats = [];
  let type = 0;
  for (const [f, w, v] of r.fields()) {
    if (f === 1) a.name = r.str(v);
    else if (f === 2) a.value = r.f32(v);
    else if (f === 3) a.value = v;
    else if (f === 4) a.value = r.str(v);
    else if (f === 5) a.value = parseTensor(r.sub(v));
    else if (f === 7) { if (w === 2) floats.push(...r.packedF32(v)); else floats.push(r.f32(v)); }
    else if (f === 8) pushInts(ints, r, w, v);
    else if (f === 20) type = v;
  }
  if (type === 6 || (a.value === undefined && floats.length)) a.value = floats;
  if (type === 7 || (a.value === undefined && ints.length)) a.value = ints;
  if (a.value === undefined) a.value = type === 6 || type === 7 ? [] : undefined;
  return a;
}

function parseNode(r) {
  const n = { inputs: [], outputs: [], name: '', op: '', domain: '', attrs: {} };
  for (const [f, , v] of r.fields()) {
    if (f === 1) n.inputs.push(r.str(v));
    else if (f === 2) n.outputs.push(r.str(v));
    else if (f === 3) n.name = r.str(v);
    else if (f === 4) n.op = r.str(v);
    else if (f === 5) { const a = parseAttribute(r.sub(v)); n.attrs[a.name] = a.value; }
    else if (f === 7) n.domain = r.str(v);
  }
  return n;
}

function parseValueInfo(r) {
  const vi = { name: '', dtype: null, shape: null };
  for (const [f, , v] of r.fields()) {
    if (f === 1) vi.name = r.str(v);
    else if (f === 2) {
      for (const [tf_, , tv] of r.sub(v).fields()) {
        if (tf_ !== 1) continue;  // tensor_type
        for (const [ef, , ev] of r.sub(tv).fields()) {
          if (ef === 1) vi.dtype = ev;
          else if (ef === 2) {
            vi.shape = [];
            for (const [df, , dv] of r.sub(ev).fields()) {
              if (df !== 1) continue;
              let dim = null;
              for (const [xf, , xv] of r.sub(dv).fields()) { if (xf === 1) dim = xv; else if (xf === 2) dim = r.str(xv); }
              vi.shape.push(dim);
            }
          }
        }
      }
    }
  }
  return vi;
}

// The parts of a ModelProto the translator needs.
export function parseOnnx(bytes) {
  // a plain Uint8Array (a Node Buffer's slice() would share memory, not copy)
  const b = ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : new Uint8Array(bytes);
  const r = new Reader(b);
  const model = { opset: 0, graph: null };
  for (const [f, , v] of r.fields()) {
    if (f === 7) {
      const g = { nodes: [], initializers: new Map(), inputs: [], outputs: [] };
      for (const [gf, , gv] of r.sub(v).fields()) {
        if (gf === 1) g.nodes.push(parseNode(r.sub(gv)));
        else if (gf === 5) { const t = parseTensor(r.sub(gv)); g.initializers.set(t.name, t); }
        else if (gf === 11) g.inputs.push(parseValueInfo(r.sub(gv)));
        else if (gf === 12) g.outputs.push(parseValueInfo(r.sub(gv)));
      }
      model.graph = g;
    } else if (f === 8) {
      let domain = '', version = 0;
      for (const [of, , ov] of r.sub(v).fields()) { if (of === 1) domain = r.str(ov); else if (of === 2) version = ov; }
      if (domain === '' || domain === 'ai.onnx') model.opset = version;
    }
  }
  if (!model.graph) throw new Error('onnx_to_tfjs: no graph in the file (not an ONNX model?)');
  return model;
}

// ------------------------------------------------------------------ the translator

const prod = (a) => a.reduce((x, y) => x * y, 1);
const NHWC_AXIS = [0, 3, 1, 2];  // NCHW axis -> NHWC axis

function broadcastShape(a, b) {
  const n = Math.max(a.length, b.length), out = [];
  for (let i = 0; i < n; ++i) {
    const x = a[a.length - n + i] ?? 1, y = b[b.length - n + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) throw new Error(`onnx_to_tfjs: shapes [${a}] and [${b}] do not broadcast`);
    out.push(x === 1 ? y : x);
  }
  return out;
}

// Constants: {c: true, dims, data (Float32Array or Array of Numbers), dtype ('float32' | 'int64' ...)}.
// Runtime values: {c: false, shape (ONNX's logical, NCHW), nhwc (4-D stored NHWC), id (env slot)}.

function constElementwise(op, a, b) {
  const dims = broadcastShape(a.dims, b.dims), n = prod(dims);
  const idx = (t, i) => {  // broadcast index
    let off = 0, stride = 1, rem = i;
    const ds = [];
    for (let k = dims.length - 1; k >= 0; --k) { ds[k] = rem % dims[k]; rem = Math.floor(rem / dims[k]); }
    for (let k = t.dims.length - 1; k >= 0; --k) {
      const d = t.dims[k], j = ds[dims.length - t.dims.length + k];
      off += (d === 1 ? 0 : j) * stride; stride *= d;
    }
    return t.data[off];
  };
  const f = { Add: (x, y) => x + y, Sub: (x, y) => x - y, Mul: (x, y) => x * y,
    Div: a.dtype === 'float32' ? (x, y) => x / y : (x, y) => Math.trunc(x / y) }[op];
  const data = a.dtype === 'float32' ? new Float32Array(n) : new Array(n);
  for (let i = 0; i < n; ++i) data[i] = f(idx(a, i), idx(b, i));
  return { c: true, dims, data, dtype: a.dtype };
}

export function convertOnnxToTfjs(tf, bytes, options = {}) {
  const model = bytes.graph ? bytes : parseOnnx(bytes);
  const g = model.graph;
  const values = new Map();  // name -> const or runtime value
  for (const [name, t] of g.initializers) values.set(name, { c: true, dims: t.dims, data: t.data, dtype: DTYPES[t.dtype] });
  const realInputs = g.inputs.filter((vi) => !g.initializers.has(vi.name));
  if (realInputs.length !== 1) throw new Error(`onnx_to_tfjs: ${realInputs.length} graph inputs; only one is supported`);
  const input = realInputs[0];
  const inShape = options.inputShape ?? input.shape;
  if (!inShape || inShape.some((d) => typeof d !== 'number' || d <= 0))
    throw new Error(`onnx_to_tfjs: input '${input.name}' has no fixed shape (pass options.inputShape)`);
  if (input.dtype !== null && input.dtype !== 1) throw new Error('onnx_to_tfjs: only a float32 input is supported');

  const steps = [];       // (env) => void, in graph order
  const keep = [];        // tf tensors made at conversion (weights), freed by dispose()
  const ops = {};
  let slots = 0, fused = 0;
  const runtime = (shape, nhwc) => ({ c: false, shape, nhwc, id: slots++ });
  const inVal = runtime(inShape, inShape.length === 4);
  values.set(input.name, inVal);
  const weight = (data, shape) => { const t = tf.tensor(data, shape, 'float32'); keep.push(t); return t; };

  const consumers = new Map();
  for (const n of g.nodes) for (const i of n.inputs) if (i) consumers.set(i, (consumers.get(i) ?? 0) + 1);
  for (const o of g.outputs) consumers.set(o.name, (consumers.get(o.name) ?? 0) + 1);
  const get = (name, node) => {
    const v = values.get(name);
    if (!v) throw new Error(`onnx_to_tfjs: ${node.op} '${node.name}': unknown input '${name}'`);
    return v;
  };
  const constOf = (name, node) => {
    const v = get(name, node);
    if (!v.c) throw new Error(`onnx_to_tfjs: ${node.op} '${node.name}': input '${name}' must be a constant here`);
    return v;
  };
  // a runtime value in ONNX's (NCHW) order, as a step-time getter
  const plain = (v) => {
    if (v.c) { const t = weight(v.data, v.dims.length ? v.dims : []); return () => t; }
    if (v.nhwc && prod(v.shape.slice(2)) > 1) return (env) => tf.transpose(env[v.id], [0, 3, 1, 2]);
    if (v.nhwc) return (env) => tf.reshape(env[v.id], v.shape);
    return (env) => env[v.id];
  };
  // an operand of an elementwise op with a 4-D NHWC runtime value: constants rearranged to NHWC
  const operandFor = (v, other) => {
    if (!v.c) return (env) => env[v.id];
    let dims = v.dims, data = v.data;
    if (other && other.nhwc) {
      const d4 = [...Array(4 - dims.length).fill(1), ...dims];
      const t0 = tf.tensor(data, d4, 'float32');
      const t = tf.transpose(t0, [0, 2, 3, 1]);
      t0.dispose(); keep.push(t);
      return () => t;
    }
    const t = weight(data, dims);
    return () => t;
  };

  // Constant nodes first: a fused activation's Clip bounds may come after the Conv in graph order
  const nodes = [];
  for (const n of g.nodes) {
    if (n.op !== 'Constant') { nodes.push(n); continue; }
    const v = n.attrs.value;
    if (!(v && v.dims)) throw new Error('onnx_to_tfjs: Constant without a tensor value not supported');
    values.set(n.outputs[0], { c: true, dims: v.dims, data: v.data, dtype: DTYPES[v.dtype] });
    ops.Constant = (ops.Constant ?? 0) + 1;
  }
  const skip = new Set();
  for (let k = 0; k < nodes.length; ++k) {
    if (skip.has(k)) continue;
    const node = nodes[k];
    const A = node.attrs;
    ops[node.op] = (ops[node.op] ?? 0) + 1;
    if (node.domain && node.domain !== 'ai.onnx') throw new Error(`onnx_to_tfjs: op ${node.domain}.${node.op} not supported`);
    const ins = node.inputs;
    const out = node.outputs[0];
    const allConst = ins.filter((i) => i).every((i) => get(i, node).c);
    switch (node.op) {
      case 'Identity': case 'Dropout':
        values.set(out, get(ins[0], node));
        break;
      case 'Shape': {
        const v = get(ins[0], node);
        values.set(out, { c: true, dims: [(v.c ? v.dims : v.shape).length], data: [...(v.c ? v.dims : v.shape)], dtype: 'int64' });
        break;
      }
      case 'Gather': {
        const d = constOf(ins[0], node), i = constOf(ins[1], node);
        const axis = A.axis ?? 0;
        if (axis !== 0 || d.dims.length !== 1) throw new Error('onnx_to_tfjs: Gather only folds 1-D constants on axis 0');
        const data = i.data.map((j) => d.data[j < 0 ? j + d.dims[0] : j]);
        values.set(out, { c: true, dims: i.dims, data, dtype: d.dtype });
        break;
      }
      case 'Unsqueeze': case 'Squeeze': {
        const v = get(ins[0], node);
        const axes = ins[1] ? constOf(ins[1], node).data : A.axes;
        const shape = v.c ? v.dims : v.shape;
        let dims;
        if (node.op === 'Unsqueeze') {
          const r = shape.length + axes.length;
          const ax = axes.map((a) => (a < 0 ? a + r : a));
          dims = []; let s = 0;
          for (let q = 0; q < r; ++q) dims.push(ax.includes(q) ? 1 : shape[s++]);
        } else {
          const ax = (axes ?? shape.map((d, q) => (d === 1 ? q : -1)).filter((q) => q >= 0)).map((a) => (a < 0 ? a + shape.length : a));
          dims = shape.filter((_, q) => !ax.includes(q));
        }
        if (v.c) values.set(out, { ...v, dims });
        else reshapeTo(v, dims, out);
        break;
      }
      case 'Concat': {
        const vs = ins.map((i) => get(i, node));
        const axis0 = A.axis;
        if (allConst) {
          const r = vs[0].dims.length, axis = axis0 < 0 ? axis0 + r : axis0;
          if (r !== 1 || axis !== 0) throw new Error('onnx_to_tfjs: Concat only folds 1-D constants');
          const data = vs.flatMap((v) => Array.from(v.data));
          values.set(out, { c: true, dims: [data.length], data, dtype: vs[0].dtype });
        } else {
          const r = vs[0].shape?.length ?? vs[0].dims.length, axis = axis0 < 0 ? axis0 + r : axis0;
          const nhwc = r === 4;
          const getters = vs.map((v) => (nhwc ? operandFor(v, { nhwc: true }) : plainOrSelf(v)));
          const shape = [...(vs[0].shape ?? vs[0].dims)];
          shape[axis] = vs.reduce((s, v) => s + (v.shape ?? v.dims)[axis], 0);
          const o = runtime(shape, nhwc);
          const tAxis = nhwc ? NHWC_AXIS[axis] : axis;
          steps.push((env) => { env[o.id] = tf.concat(getters.map((f) => f(env)), tAxis); });
          values.set(out, o);
        }
        break;
      }
      case 'Reshape': {
        const v = get(ins[0], node), s = constOf(ins[1], node).data;
        const shape = v.c ? v.dims : v.shape;
        const dims = s.map((d, q) => (d === 0 && !A.allowzero ? shape[q] : d));
        const known = prod(dims.filter((d) => d !== -1));
        const full = dims.map((d) => (d === -1 ? prod(shape) / known : d));
        if (v.c) values.set(out, { ...v, dims: full });
        else reshapeTo(v, full, out);
        break;
      }
      case 'Flatten': {
        const v = get(ins[0], node);
        const shape = v.c ? v.dims : v.shape;
        const axis = (A.axis ?? 1) < 0 ? A.axis + shape.length : (A.axis ?? 1);
        const full = [prod(shape.slice(0, axis)), prod(shape.slice(axis))];
        if (v.c) values.set(out, { ...v, dims: full });
        else reshapeTo(v, full, out);
        break;
      }
      case 'Transpose': {
        if (!allConst) throw new Error('onnx_to_tfjs: Transpose of a runtime value not supported');
        const v = constOf(ins[0], node);
        const t = tf.tensor(v.data, v.dims, 'float32'), p = tf.transpose(t, A.perm);
        values.set(out, { c: true, dims: p.shape, data: p.dataSync(), dtype: v.dtype });
        t.dispose(); p.dispose();
        break;
      }
      case 'Add': case 'Sub': case 'Mul': case 'Div': {
        const a = get(ins[0], node), b = get(ins[1], node);
        if (allConst) { values.set(out, constElementwise(node.op, a, b)); break; }
        const ref = a.c ? b : a;
        const fa = operandFor(a, ref), fb = operandFor(b, ref);
        const shape = broadcastShape(a.c ? a.dims : a.shape, b.c ? b.dims : b.shape);
        if (shape.length !== ref.shape.length) throw new Error(`onnx_to_tfjs: ${node.op} broadcasting to a higher rank not supported`);
        if (!a.c && !b.c && a.nhwc !== b.nhwc) throw new Error(`onnx_to_tfjs: ${node.op} of mixed layouts`);
        const o = runtime(shape, ref.nhwc);
        const f = { Add: tf.add, Sub: tf.sub, Mul: tf.mul, Div: tf.div }[node.op];
        steps.push((env) => { env[o.id] = f(fa(env), fb(env)); });
        values.set(out, o);
        break;
      }
      case 'Relu': case 'Clip': case 'Sigmoid': case 'Tanh': {
        const v = get(ins[0], node);
        if (v.c) throw new Error(`onnx_to_tfjs: ${node.op} of a constant not supported`);
        const f = unaryFn(node);
        const o = runtime(v.shape, v.nhwc);
        steps.push((env) => { env[o.id] = f(env[v.id]); });
        values.set(out, o);
        break;
      }
      case 'Softmax': {
        const v = get(ins[0], node);
        const r = v.shape.length, axis = (A.axis ?? -1) < 0 ? (A.axis ?? -1) + r : A.axis;
        if (v.nhwc || axis !== r - 1) throw new Error('onnx_to_tfjs: Softmax only over the last axis of a non-image value');
        const o = runtime(v.shape, false);
        steps.push((env) => { env[o.id] = tf.softmax(env[v.id]); });
        values.set(out, o);
        break;
      }
      case 'Conv': convNode(k, node); break;
      case 'BatchNormalization': {
        const v = get(ins[0], node);
        if (v.c || !v.nhwc) throw new Error('onnx_to_tfjs: BatchNormalization only of a 4-D runtime value');
        const [sc, bi, me, va] = ins.slice(1).map((i) => constOf(i, node).data);
        const eps = A.epsilon ?? 1e-5;
        const s = sc.map((x, c) => x / Math.sqrt(va[c] + eps)), b = bi.map((x, c) => x - me[c] * s[c]);
        const ts = weight(Float32Array.from(s), [s.length]), tb = weight(Float32Array.from(b), [b.length]);
        const o = runtime(v.shape, true);
        steps.push((env) => { env[o.id] = tf.add(tf.mul(env[v.id], ts), tb); });
        values.set(out, o);
        break;
      }
      case 'MaxPool': case 'AveragePool': {
        const v = get(ins[0], node);
        if (!v.nhwc) throw new Error(`onnx_to_tfjs: ${node.op} of a non-4-D value`);
        if (A.ceil_mode) throw new Error(`onnx_to_tfjs: ${node.op} with ceil_mode not supported`);
        if ((A.dilations ?? [1, 1]).some((d) => d !== 1)) throw new Error(`onnx_to_tfjs: ${node.op} with dilations not supported`);
        const [kh, kw] = A.kernel_shape, [sh, sw] = A.strides ?? [1, 1];
        const [pt, pl, pb, pr] = A.pads ?? [0, 0, 0, 0];
        if (A.auto_pad && A.auto_pad !== 'NOTSET') throw new Error(`onnx_to_tfjs: auto_pad not supported`);
        if (node.op === 'AveragePool' && (pt || pl || pb || pr) && !A.count_include_pad)
          ; // tfjs' avgPool excludes the padding too: same as ONNX's default
        const pad = padArg(pt, pl, pb, pr);
        const H = Math.floor((v.shape[2] + pt + pb - kh) / sh) + 1, W = Math.floor((v.shape[3] + pl + pr - kw) / sw) + 1;
        const o = runtime([v.shape[0], v.shape[1], H, W], true);
        const f = node.op === 'MaxPool' ? tf.maxPool : tf.avgPool;
        steps.push((env) => { env[o.id] = f(env[v.id], [kh, kw], [sh, sw], pad); });
        values.set(out, o);
        break;
      }
      case 'GlobalAveragePool': case 'GlobalMaxPool': {
        const v = get(ins[0], node);
        if (!v.nhwc) throw new Error(`onnx_to_tfjs: ${node.op} of a non-4-D value`);
        const o = runtime([v.shape[0], v.shape[1], 1, 1], true);
        const f = node.op === 'GlobalAveragePool' ? tf.mean : tf.max;
        steps.push((env) => { env[o.id] = f(env[v.id], [1, 2], true); });
        values.set(out, o);
        break;
      }
      case 'Gemm': case 'MatMul': {
        const a = get(ins[0], node), b = constOf(ins[1], node);
        if (a.c || a.shape.length !== 2 || b.dims.length !== 2) throw new Error(`onnx_to_tfjs: ${node.op} only of a 2-D value by a 2-D constant`);
        if (A.transA) throw new Error('onnx_to_tfjs: Gemm transA not supported');
        const alpha = A.alpha ?? 1, beta = A.beta ?? 1;
        let [K, M] = b.dims;
        let w = b.data;
        if (A.transB) {  // [M, K] -> [K, M]
          [M, K] = b.dims;
          w = new Float32Array(K * M);
          for (let m = 0; m < M; ++m) for (let q = 0; q < K; ++q) w[q * M + m] = b.data[m * K + q];
        }
        if (alpha !== 1) w = w.map((x) => x * alpha);
        const tw = weight(w, [K, M]);
        let tb = null;
        if (node.op === 'Gemm' && ins[2]) {
          const c = constOf(ins[2], node);
          if (prod(c.dims) !== M) throw new Error('onnx_to_tfjs: Gemm bias must have one value per output');
          tb = weight(c.data.map((x) => x * beta), [M]);
        }
        const fa = plain(a);
        const o = runtime([a.shape[0], M], false);
        steps.push((env) => { env[o.id] = tf.fused.matMul({ a: fa(env), b: tw, bias: tb ?? undefined }); });
        if (tb) ++fused;
        values.set(out, o);
        break;
      }
      default:
        throw new Error(`onnx_to_tfjs: ONNX op ${node.op} not supported`);
    }
  }

  function plainOrSelf(v) { return v.c ? operandFor(v, null) : plain(v); }

  function reshapeTo(v, dims, out) {
    const src = plain(v);
    const nhwc = dims.length === 4;
    const o = runtime(dims, nhwc);
    if (nhwc) steps.push((env) => { env[o.id] = tf.transpose(tf.reshape(src(env), dims), [0, 2, 3, 1]); });
    else steps.push((env) => { env[o.id] = tf.reshape(src(env), dims); });
    values.set(out, o);
  }

  function unaryFn(node) {
    if (node.op === 'Relu') return tf.relu;
    if (node.op === 'Sigmoid') return tf.sigmoid;
    if (node.op === 'Tanh') return tf.tanh;
    const [lo, hi] = clipRange(node);
    if (lo === 0 && hi === 6) return tf.relu6;
    if (lo === 0 && hi === Infinity) return tf.relu;
    return (x) => tf.clipByValue(x, lo, hi);
  }

  function clipRange(node) {
    const scalar = (i, dflt) => (node.inputs[i] ? constOf(node.inputs[i], node).data[0] : dflt);
    if (node.inputs.length > 1) return [scalar(1, -Infinity), scalar(2, Infinity)];
    return [node.attrs.min ?? -Infinity, node.attrs.max ?? Infinity];
  }

  function padArg(pt, pl, pb, pr) {
    if (pt === pb && pl === pr && pt === pl) return pt === 0 ? 'valid' : pt;
    return [[0, 0], [pt, pb], [pl, pr], [0, 0]];
  }

  // The single consumer of `name` among the following nodes, when there is exactly one.
  function soleConsumer(k, name) {
    if (consumers.get(name) !== 1 || g.outputs.some((o) => o.name === name)) return -1;
    for (let j = k + 1; j < nodes.length; ++j) if (nodes[j].inputs.includes(name)) return j;
    return -1;
  }

  function convNode(k, node) {
    const A = node.attrs, ins = node.inputs;
    const x = get(ins[0], node), wv = constOf(ins[1], node);
    if (x.c || !x.nhwc) throw new Error('onnx_to_tfjs: Conv only of a 4-D (2-D image) runtime value');
    if (A.auto_pad && A.auto_pad !== 'NOTSET') throw new Error('onnx_to_tfjs: Conv auto_pad not supported');
    const [O, IG, kh, kw] = wv.dims;
    const group = A.group ?? 1;
    const C = x.shape[1];
    const [sh, sw] = A.strides ?? [1, 1], [dh, dw] = A.dilations ?? [1, 1];
    const [pt, pl, pb, pr] = A.pads ?? [0, 0, 0, 0];
    let W = Float32Array.from(wv.data);
    let bias = ins[2] ? Float32Array.from(constOf(ins[2], node).data) : null;
    let outName = node.outputs[0];
    // Conv -> BatchNormalization: folded into the weights
    let j = soleConsumer(k, outName);
    if (j >= 0 && nodes[j].op === 'BatchNormalization' && nodes[j].inputs[0] === outName) {
      const bn = nodes[j];
      const [sc, bi, me, va] = bn.inputs.slice(1).map((i) => constOf(i, bn).data);
      const eps = bn.attrs.epsilon ?? 1e-5;
      const per = IG * kh * kw;
      bias = bias ?? new Float32Array(O);
      for (let o = 0; o < O; ++o) {
        const s = sc[o] / Math.sqrt(va[o] + eps);
        for (let q = 0; q < per; ++q) W[o * per + q] *= s;
        bias[o] = (bias[o] - me[o]) * s + bi[o];
      }
      skip.add(j); ops.BatchNormalization = (ops.BatchNormalization ?? 0) + 1; ++fused;
      outName = bn.outputs[0];
      j = soleConsumer(j, outName);
    }
    // -> Relu / Clip(0, 6): the fused activation
    let activation = 'linear';
    if (j >= 0 && nodes[j].inputs[0] === outName) {
      const a = nodes[j];
      if (a.op === 'Relu') activation = 'relu';
      else if (a.op === 'Clip') {
        const [lo, hi] = clipRange(a);
        if (lo === 0 && hi === 6) activation = 'relu6';
        else if (lo === 0 && hi === Infinity) activation = 'relu';
      }
      if (activation !== 'linear') { skip.add(j); ops[a.op] = (ops[a.op] ?? 0) + 1; ++fused; outName = a.outputs[0]; }
    }
    const pad = padArg(pt, pl, pb, pr);
    const H = Math.floor((x.shape[2] + pt + pb - dh * (kh - 1) - 1) / sh) + 1;
    const Wd = Math.floor((x.shape[3] + pl + pr - dw * (kw - 1) - 1) / sw) + 1;
    const o = runtime([x.shape[0], O, H, Wd], true);
    const tbias = bias ? weight(bias, [O]) : undefined;
    if (group === 1) {
      const f = new Float32Array(kh * kw * IG * O);  // OIHW -> HWIO
      for (let oo = 0; oo < O; ++oo) for (let i = 0; i < IG; ++i) for (let h = 0; h < kh; ++h) for (let w = 0; w < kw; ++w)
        f[((h * kw + w) * IG + i) * O + oo] = W[((oo * IG + i) * kh + h) * kw + w];
      const tw = weight(f, [kh, kw, IG, O]);
      steps.push((env) => {
        env[o.id] = tf.fused.conv2d({ x: env[x.id], filter: tw, strides: [sh, sw], pad, dataFormat: 'NHWC',
          dilations: [dh, dw], bias: tbias, activation });
      });
    } else if (group === C && IG === 1) {  // depthwise, multiplier O / C
      const mult = O / C;
      const f = new Float32Array(kh * kw * C * mult);  // [C*mult, 1, kh, kw] -> [kh, kw, C, mult]
      for (let c = 0; c < C; ++c) for (let m = 0; m < mult; ++m) for (let h = 0; h < kh; ++h) for (let w = 0; w < kw; ++w)
        f[((h * kw + w) * C + c) * mult + m] = W[((c * mult + m) * kh + h) * kw + w];
      const tw = weight(f, [kh, kw, C, mult]);
      steps.push((env) => {
        env[o.id] = tf.fused.depthwiseConv2d({ x: env[x.id], filter: tw, strides: [sh, sw], pad, dataFormat: 'NHWC',
          dilations: [dh, dw], bias: tbias, activation });
      });
    } else {  // grouped: one conv per group, concatenated
      const OG = O / group;
      const tws = [];
      for (let gi = 0; gi < group; ++gi) {
        const f = new Float32Array(kh * kw * IG * OG);
        for (let oo = 0; oo < OG; ++oo) for (let i = 0; i < IG; ++i) for (let h = 0; h < kh; ++h) for (let w = 0; w < kw; ++w)
          f[((h * kw + w) * IG + i) * OG + oo] = W[(((gi * OG + oo) * IG + i) * kh + h) * kw + w];
        tws.push(weight(f, [kh, kw, IG, OG]));
      }
      const tbs = bias ? Array.from({ length: group }, (_, gi) => weight(bias.slice(gi * OG, (gi + 1) * OG), [OG])) : [];
      steps.push((env) => {
        const xs = tf.split(env[x.id], group, 3);
        env[o.id] = tf.concat(xs.map((xi, gi) => tf.fused.conv2d({ x: xi, filter: tws[gi], strides: [sh, sw], pad,
          dataFormat: 'NHWC', dilations: [dh, dw], bias: tbs[gi], activation })), 3);
      });
    }
    values.set(outName, o);
  }

  const outVals = g.outputs.map((vi) => get(vi.name, { op: 'output', name: vi.name }));
  const outGetters = outVals.map((v) => plainOrSelf(v));
  const info = { ops, fused, steps: steps.length, output_shapes: outVals.map((v) => (v.c ? v.dims : v.shape)) };

  return {
    info,
    // x: Float32Array in the ONNX input's layout (NCHW); returns the first output's values
    async run(x) {
      const y = tf.tidy(() => {
        const env = new Array(slots);
        const t = tf.tensor(x, inShape, 'float32');
        env[inVal.id] = inVal.nhwc ? tf.transpose(t, [0, 2, 3, 1]) : t;
        for (const s of steps) s(env);
        return outGetters[0](env);
      });
      const data = await y.data();
      y.dispose();
      return data;
    },
    dispose() { for (const t of keep) t.dispose(); keep.length = 0; },
  };
}
