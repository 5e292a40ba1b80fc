// The relaxed-SIMD module against the SIMD128 one and an outside reference, in Node.js (docs/web.md):
// ember-relaxed.wasm's GEMM and convolution kernels (f32x4.relaxed_madd) and ember.wasm's (mul +
// add) each run small ONNX models written here, one op each, in shapes that reach the micro-kernel's
// edges, the GEMV paths, the packed and im2col convolutions and the depthwise rows (stride 1 and 2,
// 3x3 and 5x5). Every output must be within a rounding bound of a float64 reference computed here
// (|y - ref| <= K * 2^-23 * sum |terms|, which holds for any summation order, fused or not), and
// the two modules must differ somewhere (the relaxed kernels ran; an FMA rounds once where a mul
// and an add round twice).
//
//   node web/tests/relaxed_simd.test.mjs [--dist build-wasm/web]
//
// --dist build-wasm-threads/web tests the pthreads build's pair the same way, on 2 threads (the
// module's pool of workers runs as Node.js worker threads).
// Node.js 20 needs --experimental-wasm-relaxed-simd; the test restarts itself with it. Prints one
// line of JSON; exits 1 on failure.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const FLAGS = ['--experimental-wasm-relaxed-simd', '--no-experimental-fetch'];

// f32x4.relaxed_madd of three zero locals: validates where the engine has relaxed SIMD (the probe
// of web/ember-worker.js).
const PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 15, 1, 13, 1, 1, 123,
  32, 0, 32, 0, 32, 0, 253, 133, 2, 11]);
if (!WebAssembly.validate(PROBE) && !process.env.EMBER_RELAXED_TEST_CHILD) {
  const r = spawnSync(process.execPath, [...FLAGS, fileURLToPath(import.meta.url), ...process.argv.slice(2)],
                      { stdio: 'inherit', env: { ...process.env, EMBER_RELAXED_TEST_CHILD: '1' } });
  process.exit(r.status ?? 1);
}

const argv = process.argv.slice(2);
const dist = path.resolve(repo, argv.includes('--dist') ? argv[argv.indexOf('--dist') + 1] : 'build-wasm/web');

// ------------------------------------------------------------------ ONNX, hand-written protobuf
const varint = (v) => { const o = []; while (v > 127) { o.push((v & 127) | 128); v = Math.floor(v / 128); } o.push(v); return o; };
const field = (num, payload) => [...varint((num << 3) | 2), ...varint(payload.length), ...payload];
const int = (num, v) => [...varint(num << 3), ...varint(v)];
const str = (num, s) => field(num, [...new TextEncoder().encode(s)]);
const valueInfo = (name, shape) =>
  [...str(1, name), ...field(2, field(1, [...int(1, 1), ...field(2, shape.flatMap((d) => field(1, int(1, d))))]))];
const tensor = (name, shape, data) =>
  [...shape.flatMap((d) => int(1, d)), ...int(2, 1), ...str(8, name), ...field(9, [...new Uint8Array(data.buffer)])];
const attribute = (name, v) => (Array.isArray(v) ? [...str(1, name), ...v.flatMap((x) => int(8, x)), ...int(20, 7)]
                                                 : [...str(1, name), ...int(3, v), ...int(20, 2)]);
// One node `op` of inputs x (the graph input) and weights (initializers), output y.
function model(op, x, weights, yShape, attributes = {}) {
  const names = ['x', ...Object.keys(weights)];
  const node = [...names.flatMap((n) => str(1, n)), ...str(2, 'y'), ...str(4, op),
                ...Object.entries(attributes).flatMap(([k, v]) => field(5, attribute(k, v)))];
  const graph = [...field(1, node), ...str(2, 'g'),
                 ...Object.entries(weights).flatMap(([n, w]) => field(5, tensor(n, w.shape, w.data))),
                 ...field(11, valueInfo('x', x.shape)), ...field(12, valueInfo('y', yShape))];
  return new Uint8Array([...int(1, 8), ...field(7, graph), ...field(8, int(2, 13))]);
}

// ------------------------------------------------------------------ the cases
let seed = 1;
function random(shape) {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; ++i) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    data[i] = (seed >>> 8) / 8388608 - 1;  // [-1, 1)
  }
  return { shape, data };
}

// y = x @ w: [M, K] x [K, N]; returns {ref, bound} in float64.
function matmulReference(x, w) {
  const [M, K] = x.shape, N = w.shape[1];
  const ref = new Float64Array(M * N), bound = new Float64Array(M * N);
  for (let i = 0; i < M; ++i) for (let j = 0; j < N; ++j) {
    let s = 0, a = 0;
    for (let k = 0; k < K; ++k) { const p = x.data[i * K + k] * w.data[k * N + j]; s += p; a += Math.abs(p); }
    ref[i * N + j] = s;
    bound[i * N + j] = (K + 2) * 2 ** -23 * a;
  }
  return { ref, bound };
}

// Conv, NCHW, batch 1, square kernel and symmetric padding; group = 1 or C (depthwise).
function convReference(x, w, b, { stride, pad, group }) {
  const [, C, H, W] = x.shape, [O, Cg, KH, KW] = w.shape;
  const OH = Math.floor((H + 2 * pad - KH) / stride) + 1, OW = Math.floor((W + 2 * pad - KW) / stride) + 1;
  const ref = new Float64Array(O * OH * OW), bound = new Float64Array(O * OH * OW);
  const perGroup = O / group;
  for (let o = 0; o < O; ++o) for (let oh = 0; oh < OH; ++oh) for (let ow = 0; ow < OW; ++ow) {
    let s = b.data[o], a = Math.abs(b.data[o]);
    const g = Math.floor(o / perGroup);
    for (let c = 0; c < Cg; ++c) for (let kh = 0; kh < KH; ++kh) for (let kw = 0; kw < KW; ++kw) {
      const ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
      const p = x.data[((g * Cg + c) * H + ih) * W + iw] * w.data[((o * Cg + c) * KH + kh) * KW + kw];
      s += p; a += Math.abs(p);
    }
    ref[(o * OH + oh) * OW + ow] = s;
    bound[(o * OH + oh) * OW + ow] = (Cg * KH * KW + 3) * 2 ** -23 * a;
  }
  return { ref, bound, shape: [1, O, OH, OW] };
}

const cases = [];
for (const [M, K, N] of [[1, 7, 5], [1, 300, 67], [6, 8, 8], [7, 9, 13], [13, 37, 29], [64, 130, 71], [100, 64, 200], [3, 513, 2]]) {
  const x = random([M, K]), w = random([K, N]);
  cases.push({ name: `MatMul ${M}x${K}x${N}`, bytes: model('MatMul', x, { w }, [M, N]), x, ...matmulReference(x, w), shape: [M, N] });
}
for (const [C, O, H, K, stride, pad, group] of [[5, 7, 11, 3, 1, 1, 1], [16, 24, 14, 3, 1, 1, 1], [32, 20, 9, 1, 1, 0, 1],
                                                [3, 8, 23, 3, 2, 1, 1], [6, 6, 17, 3, 1, 1, 6], [6, 6, 17, 3, 2, 1, 6],
                                                [16, 16, 30, 3, 1, 1, 16], [16, 16, 30, 3, 2, 1, 16], [8, 8, 13, 5, 1, 2, 8],
                                                [8, 8, 21, 5, 2, 2, 8]]) {
  const x = random([1, C, H, H]), w = random([O, C / group, K, K]), b = random([O]);
  const r = convReference(x, w, b, { stride, pad, group });
  cases.push({
    name: `Conv C${C} O${O} ${H}x${H} k${K} s${stride} p${pad} g${group}`, x, ...r,
    bytes: model('Conv', x, { w, b }, r.shape, { kernel_shape: [K, K], strides: [stride, stride], pads: [pad, pad, pad, pad], group }),
  });
}

// ------------------------------------------------------------------ the modules
// Emscripten 3.1.6's ES module reads its files through CommonJS's require and __dirname in Node.js.
globalThis.require = createRequire(import.meta.url);
globalThis.__dirname = dist;
// The pthreads build sizes its worker pool by navigator.hardwareConcurrency, which Node.js 20 lacks.
globalThis.navigator ??= { hardwareConcurrency: 2 };

const threaded = fs.existsSync(path.join(dist, 'ember.worker.js'));  // the pthreads build

async function start(file) {
  const createEmber = (await import(path.join(dist, file))).default;
  const wasmBinary = fs.readFileSync(path.join(dist, file.replace(/\.mjs$/, '.wasm')));  // its own lookup takes a file: URL for a path
  const M = await createEmber({ wasmBinary, print: () => {}, printErr: (s) => process.stderr.write(`${file}: ${s}\n`) });
  if (threaded && !M._ember_web_set_threads(2)) throw new Error(`${file}: set_threads(2): ${M.UTF8ToString(M._ember_web_error())}`);
  return M;
}

function run(M, c) {
  const check = (ok, what) => { if (!ok) throw new Error(`${what}: ${M.UTF8ToString(M._ember_web_error())}`); return ok; };
  const bytesP = M._malloc(c.bytes.length);
  M.HEAPU8.set(c.bytes, bytesP);
  const nameP = M._malloc(64);
  M.stringToUTF8('case.onnx', nameP, 64);
  const id = check(M._ember_web_load(bytesP, c.bytes.length, nameP), 'load');
  const xP = M._malloc(c.x.data.length * 4), shapeP = M._malloc(4 * c.x.shape.length), dtypeP = M._malloc(8);
  M.HEAPF32.set(c.x.data, xP >> 2);
  c.x.shape.forEach((d, i) => { M.HEAP32[(shapeP >> 2) + i] = d; });
  M.stringToUTF8('f32', dtypeP, 8);
  check(M._ember_web_set_input(id, 0, xP, dtypeP, shapeP, c.x.shape.length), 'set_input');
  check(M._ember_web_run(id), 'run');
  const info = JSON.parse(M.UTF8ToString(check(M._ember_web_output_info(id, 0), 'output_info')));
  if (JSON.stringify(info.shape) !== JSON.stringify(c.shape)) throw new Error(`output shape ${JSON.stringify(info.shape)}, expected ${JSON.stringify(c.shape)}`);
  const o = check(M._ember_web_output_data(id, 0), 'output_data');
  const y = M.HEAPF32.slice(o >> 2, (o >> 2) + c.ref.length);
  for (const p of [bytesP, nameP, xP, shapeP, dtypeP]) M._free(p);
  M._ember_web_free(id);
  return y;
}

const summary = { test: 'web/relaxed_simd', ok: false, dist: path.relative(repo, dist), cases: cases.length, failed: [] };
try {
  const modules = { relaxed: await start('ember-relaxed.mjs'), simd128: await start('ember.mjs') };
  summary.threads = JSON.parse(modules.relaxed.UTF8ToString(modules.relaxed._ember_web_about())).threads;
  let differ = 0;
  for (const c of cases) {
    const out = {};
    for (const [kind, M] of Object.entries(modules)) {
      try {
        out[kind] = run(M, c);
      } catch (e) {
        summary.failed.push(`${c.name} (${kind}): ${e.message}`);
        continue;
      }
      let worst = -1, ratio = 0;
      for (let i = 0; i < c.ref.length; ++i) {
        const r = Math.abs(out[kind][i] - c.ref[i]) / c.bound[i];
        if (!(r <= ratio)) { ratio = r; worst = i; }  // NaN counts as worst
      }
      if (!(ratio <= 1)) {
        summary.failed.push(`${c.name} (${kind}): y[${worst}] = ${out[kind][worst]}, reference ${c.ref[worst]} ` +
                            `(bound ${c.bound[worst].toExponential(2)})`);
      }
    }
    if (out.relaxed && out.simd128 && out.relaxed.some((v, i) => v !== out.simd128[i])) ++differ;
  }
  summary.cases_differing = differ;
  if (differ === 0) summary.failed.push('the relaxed-SIMD and SIMD128 modules agree bit for bit on every case: the relaxed kernels did not run');
  summary.ok = summary.failed.length === 0;
} catch (e) {
  summary.failed.push(String(e && e.stack ? e.stack : e));
}
console.log(JSON.stringify(summary));
process.exit(summary.ok ? 0 : 1);
