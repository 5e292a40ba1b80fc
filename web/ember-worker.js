// The Web Worker behind web/ember.js: it owns the wasm module (build-wasm*/web/ember.mjs) and is
// the only caller of the C functions in src/web/api.cpp (docs/web.md). The page never touches the
// module, so a long load or run never blocks it.
//
// Protocol: the page posts {id, op, ...args}; the worker answers {id, ok: true, result} or
// {id, ok: false, error: {message, kind}}. kind is 'ember' (ember's own message, from
// ember_web_error()), 'fetch', 'input' or 'fatal'. After a 'fatal' answer (the module aborted or
// trapped: its state can no longer be trusted) the worker answers every request with that error.
// Ops: init, load, run, free.

let M = null;          // the Emscripten module
let fatal = null;      // the message of the crash that killed the module, once it has
const stderr = [];     // the module's last lines on stderr, for crash messages

class WorkerError extends Error {
  constructor(message, kind) {
    super(message);
    this.kind = kind;
  }
}

// Byte sizes of ember's dtypes (include/ember/core/dtype.hpp).
const DTYPE_SIZE = { f64: 8, f32: 4, f16: 2, bf16: 2, i64: 8, i32: 4, i16: 2, i8: 1, u8: 1, bool: 1 };
// The TypedArray an output of each dtype comes back as (f16/bf16: their raw bits).
const DTYPE_ARRAY = {
  f64: Float64Array, f32: Float32Array, f16: Uint16Array, bf16: Uint16Array, i64: BigInt64Array,
  i32: Int32Array, i16: Int16Array, i8: Int8Array, u8: Uint8Array, bool: Uint8Array,
};

function lastStderr() {
  return stderr.length ? ` (stderr: ${stderr.slice(-3).join(' | ')})` : '';
}

// Calls into the module. A C++ Error comes back as a 0/null result and ember_web_error(); a
// JavaScript exception out of the module (abort, trap, stack overflow) means it is dead.
function call(fn, ...args) {
  if (fatal) throw new WebAssembly.RuntimeError(fatal);
  try {
    return M[fn](...args);
  } catch (e) {
    fatal = `ember.js: the wasm module crashed in ${fn.slice(1)}: ${e && e.message ? e.message : e}` +
            `${lastStderr()}; this Ember instance is dead, create a new one`;
    throw new WebAssembly.RuntimeError(fatal);
  }
}

function emberError(fallback) {
  let message = M.UTF8ToString(call('_ember_web_error')) || fallback;
  if (/bad_alloc/.test(message)) message = `ember.js: out of memory (${message}); the wasm heap is limited to 2 GB`;
  return new WorkerError(message, 'ember');
}

function text(ptr, what) {
  if (!ptr) throw emberError(`ember.js: ${what} failed`);
  return M.UTF8ToString(ptr);
}

// The heap's bytes. In the pthreads build a thread that grew the memory leaves this thread's views
// on the old, shorter buffer; the runtime's own accessors (UTF8ToString reads through
// GROWABLE_HEAP_U8) bring Module.HEAPU8 up to date.
function heapU8() {
  M.UTF8ToString(M._ember_web_error());
  return M.HEAPU8;
}

// Copies bytes into the wasm heap; the caller frees the pointer.
function toHeap(bytes) {
  const ptr = call('_malloc', Math.max(bytes.byteLength, 1));
  if (!ptr) throw new WorkerError(`ember.js: out of memory allocating ${bytes.byteLength} bytes in the wasm heap`, 'ember');
  heapU8().set(bytes, ptr);  // read after malloc: memory growth replaces the views
  return ptr;
}

function cString(s) {
  return toHeap(new TextEncoder().encode(s + '\0'));
}

function withHeap(pointers, f) {
  try {
    return f();
  } finally {
    if (!fatal) for (const p of pointers) if (p) M._free(p);
  }
}

// Rejects with "URL: 404 Not Found" when a file of a build is not there.
async function probe(url) {
  const response = await fetch(url, { method: 'HEAD' });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${response.statusText}`.trim());
}

async function importModule(url) {
  const factory = (await import(url)).default;
  if (typeof factory !== 'function') throw new Error(`${url} has no default export (expected createEmber)`);
  return factory;
}

async function instantiate(factory) {
  return factory({
    print: (s) => console.log(s),
    printErr: (s) => {
      stderr.push(s);
      if (stderr.length > 20) stderr.shift();
      console.warn(s);
    },
    onAbort: (what) => {
      fatal = fatal || `ember.js: the wasm module aborted: ${what}${lastStderr()}; this Ember instance is dead, create a new one`;
    },
  });
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not start within ${ms / 1000} s`)), ms); }),
  ]);
}

// A module of one function that returns f32x4.relaxed_madd of three zero v128 locals: it validates
// where the engine has relaxed SIMD (Chromium 114 and later; Node.js 20 with
// --experimental-wasm-relaxed-simd).
const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,  // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b,        // types: () -> v128
  0x03, 0x02, 0x01, 0x00,                          // functions: one of type 0
  0x0a, 0x0f, 0x01, 0x0d, 0x01, 0x01, 0x7b,        // code: one body, one v128 local
  0x20, 0x00, 0x20, 0x00, 0x20, 0x00,              //   local.get 0 (three times)
  0xfd, 0x85, 0x02, 0x0b,                          //   f32x4.relaxed_madd, end
]);

function hasRelaxedSimd() {
  try {
    return WebAssembly.validate(RELAXED_SIMD_PROBE);
  } catch {
    return false;
  }
}

// The modules of one build folder, best first: ember-relaxed.* (the GEMM and convolution kernels
// with relaxed SIMD's fused multiply-add) where the engine has relaxed SIMD and simd is not
// 'simd128', then ember.*. The pthreads build's modules have a third file, NAME.worker.js.
function candidates(simd, threaded) {
  const list = [];
  if (simd !== 'simd128' && hasRelaxedSimd()) list.push({ name: 'ember-relaxed', simd: 'relaxed' });
  list.push({ name: 'ember', simd: 'simd128' });
  return list.map((c) => ({ ...c, files: [`${c.name}.wasm`, ...(threaded ? [`${c.name}.worker.js`] : [])] }));
}

// Starts the first module of `dist` whose files are there and that starts; a later candidate
// silently replaces one that cannot. Returns {module, simd, url} or throws the last failure.
async function startBuild(dist, simd, threaded) {
  let failure = null;
  for (const c of candidates(simd, threaded)) {
    const url = new URL(`${c.name}.mjs`, dist).href;
    try {
      for (const f of c.files) await probe(new URL(f, dist).href);
      const factory = await importModule(url);
      const started = instantiate(factory);
      const module = threaded ? await withTimeout(started, 30000, `the threaded module ${url}`) : await started;
      return { module, simd: c.simd, url: new URL(`${c.name}.wasm`, dist).href };
    } catch (e) {
      fatal = null;  // an abort of the module while it started
      stderr.length = 0;
      failure = { url, e };
    }
  }
  throw new WorkerError(`ember.js: could not load the wasm module ${failure.url}: ${
    failure.e && failure.e.message ? failure.e.message : failure.e}`, 'fetch');
}

// {dist, distThreads, threads, threaded, simd}: threaded asks for the pthreads build (the page
// decided that SharedArrayBuffer is there). Falls back to the single-threaded build when it cannot
// start. simd: 'auto' (the relaxed-SIMD module of the build where the engine has relaxed SIMD and
// the files are there) or 'simd128' (never the relaxed-SIMD modules).
async function init({ dist, distThreads, threads, threaded, fallback, simd = 'auto' }) {
  let why = fallback;
  let started = null;
  if (threaded) {
    try {
      started = await startBuild(distThreads, simd, true);
    } catch (e) {
      threaded = false;
      why = `the threaded build at ${distThreads} could not start (${e && e.message ? e.message : e}); running on one thread`;
    }
  }
  if (!started) started = await startBuild(dist, simd, false);
  M = started.module;
  if (threaded) {
    // no more than the pool of workers made at start (PTHREAD_POOL_SIZE): a thread beyond it would
    // need this worker to return to its event loop before it starts
    const pool = (typeof navigator !== 'undefined' && navigator.hardwareConcurrency) || threads;
    if (!call('_ember_web_set_threads', Math.min(threads, pool))) throw emberError('ember.js: set_threads failed');
  }
  const about = JSON.parse(M.UTF8ToString(call('_ember_web_about')));
  return {
    version: about.version,
    threads: threaded ? about.threads : 1,
    threaded,
    fallback: why || null,
    simd: started.simd,
    module: started.url,
    architectures: JSON.parse(M.UTF8ToString(call('_ember_web_architectures'))),
  };
}

async function fetchBytes(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new WorkerError(`ember.js: could not fetch ${url}: ${e && e.message ? e.message : e}`, 'fetch');
  }
  if (!response.ok) throw new WorkerError(`ember.js: could not fetch ${url}: ${response.status} ${response.statusText}`.trim(), 'fetch');
  return new Uint8Array(await response.arrayBuffer());
}

async function load({ url, bytes, name }) {
  if (url) bytes = await fetchBytes(url);
  else bytes = new Uint8Array(bytes.buffer ?? bytes, bytes.byteOffset ?? 0, bytes.byteLength);
  if (!name) name = url ? decodeURIComponent(new URL(url).pathname.split('/').pop() || url) : '<model>';
  const data = toHeap(bytes);
  const namePtr = cString(name);
  const id = withHeap([data, namePtr], () => call('_ember_web_load', data, bytes.byteLength, namePtr));
  if (!id) throw emberError(`ember.js: loading ${name} failed`);
  try {
    return { id, info: JSON.parse(text(call('_ember_web_info', id), 'info')) };
  } catch (e) {
    if (!fatal) call('_ember_web_free', id);
    throw e;
  }
}

// inputs: [{index, data: ArrayBuffer view, dtype, shape}], checked by ember.js.
function run({ model, inputs }) {
  for (const input of inputs) {
    const bytes = new Uint8Array(input.data.buffer, input.data.byteOffset, input.data.byteLength);
    const data = toHeap(bytes);
    const dtype = cString(input.dtype);
    const shape = toHeap(new Uint8Array(Int32Array.from(input.shape).buffer));
    const ok = withHeap([data, dtype, shape],
                        () => call('_ember_web_set_input', model, input.index, data, dtype, shape, input.shape.length));
    if (!ok) throw emberError('ember.js: set_input failed');
  }
  const count = call('_ember_web_run', model);
  if (!count) throw emberError('ember.js: run failed');
  const outputs = [];
  for (let i = 0; i < count; ++i) {
    const info = JSON.parse(text(call('_ember_web_output_info', model, i), 'output_info'));
    const ptr = call('_ember_web_output_data', model, i);
    const numel = info.shape.reduce((a, b) => a * b, 1);
    const Array_ = DTYPE_ARRAY[info.dtype] ?? Uint8Array;
    const nbytes = numel * (DTYPE_SIZE[info.dtype] ?? 1);
    if (!ptr && nbytes) throw emberError('ember.js: output_data failed');
    // slice copies out of the heap into a buffer of our own, which is transferred to the page
    const copy = heapU8().slice(ptr, ptr + nbytes).buffer;
    outputs.push({ name: info.name, dtype: info.dtype, shape: info.shape, data: new Array_(copy) });
  }
  return outputs;
}

const ops = {
  init,
  load,
  run,
  free: ({ model }) => { call('_ember_web_free', model); return null; },
  // for web/tests/api.test.mjs: calling a function the module lacks throws out of call() as a trap
  // would, which kills the instance
  __crash: () => call('_ember_web_no_such_function'),
};

self.onmessage = async (event) => {
  const { id, op, ...args } = event.data;
  try {
    if (fatal) throw new WorkerError(fatal, 'fatal');
    if (op !== 'init' && !M) throw new WorkerError('ember.js: the module is not initialised', 'ember');
    if (!Object.hasOwn(ops, op)) throw new WorkerError(`ember.js: unknown worker op '${op}'`, 'ember');
    const result = await ops[op](args);
    const transfer = op === 'run' ? result.map((o) => o.data.buffer) : [];
    self.postMessage({ id, ok: true, result }, transfer);
  } catch (e) {
    const kind = fatal ? 'fatal' : e instanceof WorkerError ? e.kind : 'ember';
    const message = fatal || (e && e.message) || String(e);
    self.postMessage({ id, ok: false, error: { message, kind } });
  }
};
