// The page side of the browser benchmark (web/bench/run.mjs drives it through puppeteer).
// It exposes window.bench:
//
//   await bench.init({threads, emberDist, emberRelaxed})  // once per page: one thread count for every runtime
//   await bench.load(runtime, model)        // runtime: 'ember' | 'ember_relaxed' | 'ort' | 'tfjs'; model: 'resnet18' ...
//
// 'ember_relaxed' is emberDist's ember-relaxed.mjs (the GEMM and convolution kernels with relaxed
// SIMD's fused multiply-add; docs/web.md), loaded when emberRelaxed is set: the single-threaded
// build's on one thread, the pthreads build's (emberDist /dist-threads/) on more.
//   await bench.time(runtime, model)        // one inference, in ms (performance.now())
//   await bench.output(runtime, model, k)   // the output of one inference on input k (0, 1), as an Array
//
// Every runtime gets the same input (makeInput; a second one checks that outputs depend on it),
// and each timed call covers the same work: the input copied in, the model run, the output read
// back into a JavaScript Float32Array. ember's
// module is called directly (no worker), so that only inference is timed.
import { convertOnnxToTfjs } from './onnx_to_tfjs.mjs';

const logEl = document.getElementById('log');
const log = (s) => { if (logEl) logEl.textContent += s + '\n'; };
const ort = globalThis.ort, tf = globalThis.tf;

const INPUT_SHAPE = [1, 3, 224, 224];

// A deterministic input in about [-2, 2] (a cheap hash: the same on every runtime and run).
export function makeInput(n, seed = 12345) {
  const x = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; ++i) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    x[i] = ((s >>> 8) / 16777216) * 4 - 2;
  }
  return x;
}
const N = INPUT_SHAPE.reduce((a, b) => a * b, 1);
const inputs = [makeInput(N, 12345), makeInput(N, 987654321)];

const state = { threads: 1, ember: {}, emberError: {}, models: {}, bytes: {} };

async function modelBytes(model) {
  if (!state.bytes[model]) {
    const r = await fetch(`/models/${model}.onnx`);
    if (!r.ok) throw new Error(`fetch /models/${model}.onnx: ${r.status}`);
    state.bytes[model] = new Uint8Array(await r.arrayBuffer());
  }
  return state.bytes[model];
}

async function startEmber(url, threads) {
  const createEmber = (await import(new URL(url, location.href).href)).default;
  const M = await createEmber();
  if (threads > 1) {
    const n = M._ember_web_set_threads(threads);
    if (n !== threads) throw new Error(`ember: set_threads(${threads}) gave ${n}: ${M.UTF8ToString(M._ember_web_error())}`);
  }
  return M;
}

async function init({ threads = 1, emberDist = '/dist/', emberRelaxed = false } = {}) {
  state.threads = threads;
  const info = { crossOriginIsolated: globalThis.crossOriginIsolated === true, threads, userAgent: navigator.userAgent,
    hardwareConcurrency: navigator.hardwareConcurrency };
  // onnxruntime-web: wasm backend (SIMD), `threads` threads
  ort.env.wasm.wasmPaths = new URL('/node_modules/onnxruntime-web/dist/', location.href).href;
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.proxy = false;
  info.ort = ort.env.versions?.web ?? 'unknown';
  // TF.js: the wasm backend, `threads` threads
  tf.wasm.setWasmPaths(new URL('/node_modules/@tensorflow/tfjs-backend-wasm/dist/', location.href).href);
  tf.wasm.setThreadsCount(threads);
  // tfjs-backend-wasm 4.22 caps its thread pool at navigator.hardwareConcurrency / 2 (its
  // backend.cc: "2 threads per core"), read while the module starts: on a 2-core machine it would
  // run 1 thread whatever it is asked. So that it gets the same thread count as the others, the
  // page reports 2 * threads to it while it starts, and restores the real value after.
  const hc = navigator.hardwareConcurrency;
  if (threads > 1 && threads > Math.floor(hc / 2)) {
    Object.defineProperty(navigator, 'hardwareConcurrency', { configurable: true, get: () => 2 * threads });
    info.tfjs_hardware_concurrency_override = 2 * threads;
  }
  try {
    await tf.setBackend('wasm');
    await tf.ready();
  } finally {
    delete navigator.hardwareConcurrency;  // the prototype's getter again
  }
  info.tfjs = tf.version.tfjs;
  info.tfjs_threads = tf.wasm.getThreadsCount();
  info.tfjs_simd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT');
  // ember: the module of emberDist (null: skipped), and its relaxed-SIMD twin
  const builds = emberDist ? [['ember', 'ember.mjs'], ...(emberRelaxed ? [['ember_relaxed', 'ember-relaxed.mjs']] : [])] : [];
  for (const [runtime, file] of builds) {
    try {
      const M = await startEmber(emberDist + file, threads);
      state.ember[runtime] = M;
      info[runtime] = JSON.parse(M.UTF8ToString(M._ember_web_about()));
      if (runtime === 'ember') info.ember_build_threads = info.ember.threads;
    } catch (e) {
      state.emberError[runtime] = String(e?.message ?? e);
      info[`${runtime}_error`] = state.emberError[runtime];
    }
  }
  log(JSON.stringify(info));
  return info;
}

function emberCall(M, ok, what) {
  if (!ok) throw new Error(`ember ${what}: ${M.UTF8ToString(M._ember_web_error())}`);
  return ok;
}

async function load(runtime, model) {
  const key = `${runtime}/${model}`;
  const bytes = await modelBytes(model);
  const t0 = performance.now();
  let run, extra = {};
  if (runtime === 'ember' || runtime === 'ember_relaxed') {
    const M = state.ember[runtime];
    if (!M) throw new Error(`${runtime} not loaded: ${state.emberError[runtime] ?? 'no build'}`);
    const p = M._malloc(bytes.length);
    M.HEAPU8.set(bytes, p);
    const nameP = M._malloc(256);
    M.stringToUTF8(`${model}.onnx`, nameP, 256);
    const id = emberCall(M, M._ember_web_load(p, bytes.length, nameP), 'load');
    M._free(p);
    const n = N;
    const xp = M._malloc(n * 4), sp = M._malloc(4 * INPUT_SHAPE.length), dp = M._malloc(8);
    INPUT_SHAPE.forEach((d, i) => { M.HEAP32[(sp >> 2) + i] = d; });
    M.stringToUTF8('f32', dp, 8);
    let outLen = 0;
    run = (k = 0) => {
      M.HEAPF32.set(inputs[k], xp >> 2);  // the input copied in, as the other runtimes do
      emberCall(M, M._ember_web_set_input(id, 0, xp, dp, sp, INPUT_SHAPE.length), 'set_input');
      emberCall(M, M._ember_web_run(id), 'run');
      if (!outLen) outLen = JSON.parse(M.UTF8ToString(M._ember_web_output_info(id, 0))).shape.reduce((a, b) => a * b, 1);
      const o = emberCall(M, M._ember_web_output_data(id, 0), 'output');
      return M.HEAPF32.slice(o >> 2, (o >> 2) + outLen);
    };
  } else if (runtime === 'ort') {
    const session = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
    const inName = session.inputNames[0], outName = session.outputNames[0];
    run = async (k = 0) => {
      const feeds = { [inName]: new ort.Tensor('float32', inputs[k], INPUT_SHAPE) };
      const res = await session.run(feeds);
      const d = res[outName].data;
      for (const k in res) res[k].dispose?.();
      return d;
    };
  } else if (runtime === 'tfjs') {
    const m = convertOnnxToTfjs(tf, bytes, { inputShape: INPUT_SHAPE });
    extra = m.info;
    run = (k = 0) => m.run(inputs[k]);
  } else throw new Error(`unknown runtime ${runtime}`);
  state.models[key] = run;
  const load_ms = performance.now() - t0;
  log(`loaded ${key} in ${load_ms.toFixed(0)} ms`);
  return { load_ms, ...extra };
}

async function time(runtime, model) {
  const run = state.models[`${runtime}/${model}`];
  const t0 = performance.now();
  await run();
  return performance.now() - t0;
}

async function output(runtime, model, k = 0) {
  return Array.from(await state.models[`${runtime}/${model}`](k));
}

globalThis.bench = { init, load, time, output, ready: true };
