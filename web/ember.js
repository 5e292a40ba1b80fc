// ember in the page: runs ONNX files and ember-trained safetensors models on typed arrays, with
// the wasm build (docs/web.md) in a Web Worker (ember-worker.js), so that the page never blocks.
//
//   import { Ember } from './ember.js';
//   const ember = await Ember.create({ threads: 'auto' });
//   const model = await ember.load('/models/mobilenet_v2.onnx');
//   const [logits] = await model.run({ data: pixels, shape: [1, 3, 224, 224] });  // Float32Array
//
// Every failure (ember's C++ errors, a failed fetch, a bad input, a crashed module) rejects the
// promise with an EmberError carrying the message. Types: ember.d.ts; guide: README.md.

// ember's dtype of each TypedArray; other dtypes (f16, bf16, bool) are given as {dtype}.
const DTYPE_OF = new Map([
  [Float32Array, 'f32'], [Float64Array, 'f64'], [Int32Array, 'i32'], [BigInt64Array, 'i64'],
  [Int16Array, 'i16'], [Int8Array, 'i8'], [Uint8Array, 'u8'], [Uint8ClampedArray, 'u8'],
]);
const DTYPE_SIZE = { f64: 8, f32: 4, f16: 2, bf16: 2, i64: 8, i32: 4, i16: 2, i8: 1, u8: 1, bool: 1 };

/** An error from ember: its C++ message, or one from this file. kind: 'ember' (C++), 'fetch',
 *  'input' (rejected before reaching the module), 'fatal' (the module or worker died). */
export class EmberError extends Error {
  constructor(message, kind = 'ember') {
    super(message);
    this.name = 'EmberError';
    this.kind = kind;
  }
}

function fail(message) {
  throw new EmberError(`ember.js: ${message}`, 'input');
}

function describeShape(shape) {
  return `[${shape.join(', ')}]`;
}

// One input ({data, shape, dtype?}, or a bare TypedArray when the model declares the shape) as
// the worker takes it.
function prepareInput(value, index, declared, modelName) {
  const where = `input ${declared ? `'${declared.name}'` : index} of ${modelName}`;
  const input = ArrayBuffer.isView(value) ? { data: value } : value;
  const kind = (v) => (v === null || v === undefined ? String(v) : v.constructor?.name ?? typeof v);
  if (!input || typeof input !== 'object')
    fail(`${where} must be {data: TypedArray, shape: number[]} (or a TypedArray), got ${kind(value)}`);
  if (!ArrayBuffer.isView(input.data) || input.data instanceof DataView)
    fail(`${where}: data must be a TypedArray (Float32Array, Int32Array, BigInt64Array, ...), got ${kind(input.data)}`);
  const dtype = input.dtype ?? DTYPE_OF.get(input.data.constructor);
  if (!dtype) fail(`${where}: a ${input.data.constructor.name} needs an explicit dtype (one of ${Object.keys(DTYPE_SIZE).join(' ')})`);
  if (!(dtype in DTYPE_SIZE)) fail(`${where}: unknown dtype '${dtype}' (expected one of ${Object.keys(DTYPE_SIZE).join(' ')})`);
  let shape = input.shape;
  if (shape === undefined) {
    shape = declared?.shape;
    if (!shape || shape.some((d) => typeof d !== 'number'))
      fail(`${where}: give its shape (the model declares ${shape ? describeShape(shape.map((d) => d ?? '?')) : 'none'})`);
  }
  if (!Array.isArray(shape) && !ArrayBuffer.isView(shape)) fail(`${where}: shape must be an array of sizes`);
  shape = Array.from(shape, Number);
  if (shape.length > 8) fail(`${where}: rank ${shape.length} is more than 8`);
  if (shape.some((d) => !Number.isInteger(d) || d < 0 || d > 0x7fffffff))
    fail(`${where}: shape ${describeShape(shape)} must hold non-negative integers`);
  const numel = shape.reduce((a, b) => a * b, 1);
  const bytes = numel * DTYPE_SIZE[dtype];
  if (bytes !== input.data.byteLength) {
    const have = input.data.byteLength / DTYPE_SIZE[dtype];
    fail(`${where}: shape ${describeShape(shape)} holds ${numel} ${dtype} values, the data has ${Number.isInteger(have) ? have : `${input.data.byteLength} bytes, not a whole number of`} ${Number.isInteger(have) ? 'values' : `${dtype} values`}`);
  }
  return { index, data: input.data, dtype, shape };
}

/** A loaded model. */
export class Model {
  #ember;
  #id;
  #freed = false;

  constructor(ember, id, info, name) {
    this.#ember = ember;
    this.#id = id;
    /** {kind: 'onnx'|'module', arch, inputs: [{name, dtype, shape}], outputs: [{name}]} */
    this.info = info;
    this.name = name;
  }

  /** Runs the model. inputs: one {data, shape, dtype?}, an array of them by position, or an
   *  object keyed by input name. options.transfer hands the inputs' buffers to the worker instead
   *  of copying them (they are detached afterwards). Resolves to [{name, dtype, shape, data}]. */
  async run(inputs, options = {}) {
    if (this.#freed) fail(`${this.name} was freed`);
    const declared = this.info.inputs;
    let list;
    if (Array.isArray(inputs)) {
      list = inputs.map((v, i) => prepareInput(v, i, declared[i], this.name));
    } else if (ArrayBuffer.isView(inputs) ||
               (inputs && typeof inputs === 'object' && 'data' in inputs && !declared.some((d) => d.name === 'data'))) {
      list = [prepareInput(inputs, 0, declared[0], this.name)];
    } else if (inputs && typeof inputs === 'object') {
      list = Object.entries(inputs).map(([name, v]) => {
        const i = declared.findIndex((d) => d.name === name);
        if (i < 0) fail(`${this.name} has no input '${name}' (its inputs: ${declared.map((d) => `'${d.name}'`).join(', ')})`);
        return prepareInput(v, i, declared[i], this.name);
      });
    } else {
      fail(`run() takes {data, shape}, an array of inputs or an object keyed by input name, got ${inputs === null ? null : typeof inputs}`);
    }
    if (list.length > declared.length)
      fail(`${this.name} has ${declared.length} input(s), got ${list.length}`);
    const set = new Set(list.map((x) => x.index));
    const missing = declared.filter((_, i) => !set.has(i)).map((d) => `'${d.name}'`);
    if (missing.length) fail(`${this.name}: missing input(s) ${missing.join(', ')}`);
    const transfer = options.transfer
      ? [...new Set(list.map((x) => x.data.buffer).filter((b) => b instanceof ArrayBuffer))]
      : [];
    return this.#ember._call('run', { model: this.#id, inputs: list }, transfer);
  }

  /** Frees the model in the module; later runs reject. */
  async free() {
    if (this.#freed) return;
    this.#freed = true;
    await this.#ember._call('free', { model: this.#id });
  }
}

/** The wasm module, running in a Web Worker. */
export class Ember {
  #worker;
  #pending = new Map();
  #nextId = 1;
  #dead = null;

  /** Starts the worker and the module. options: {threads: 'auto' | number (default 'auto'), dist
   *  (URL of the folder with ember.mjs and ember.wasm; default ./dist/ beside this file),
   *  distThreads (the pthreads build; default ../dist-threads/ beside dist), workerUrl, simd: 'auto'
   *  (the default: the build's relaxed-SIMD module where the browser has relaxed SIMD) | 'simd128'}. */
  static async create(options = {}) {
    const base = typeof location !== 'undefined' ? location.href : import.meta.url;
    const dist = new URL(options.dist ?? './dist/', options.dist ? base : import.meta.url);
    if (!dist.pathname.endsWith('/')) dist.pathname += '/';
    const distThreads = new URL(options.distThreads ?? '../dist-threads/', options.distThreads ? base : dist);
    if (!distThreads.pathname.endsWith('/')) distThreads.pathname += '/';
    const cores = (typeof navigator !== 'undefined' && navigator.hardwareConcurrency) || 1;
    const asked = options.threads ?? 'auto';
    if (asked !== 'auto' && !(Number.isInteger(asked) && asked >= 1))
      fail(`threads must be 'auto' or a positive integer, got ${asked}`);
    const threads = asked === 'auto' ? cores : asked;
    let threaded = threads > 1;
    let fallback = null;
    if (threaded && !(globalThis.crossOriginIsolated && typeof SharedArrayBuffer !== 'undefined')) {
      threaded = false;
      const what = asked === 'auto' ? `threads: 'auto' would use ${threads} threads` : `${threads} threads were asked for`;
      fallback = `${what}, but SharedArrayBuffer is unavailable: the page is not ` +
                 'cross-origin isolated (serve it with Cross-Origin-Opener-Policy: same-origin and ' +
                 'Cross-Origin-Embedder-Policy: require-corp, as web/serve.sh does); running on one thread';
    }
    const simd = options.simd ?? 'auto';
    if (simd !== 'auto' && simd !== 'simd128') fail(`simd must be 'auto' or 'simd128', got ${simd}`);
    const ember = new Ember(new URL(options.workerUrl ?? './ember-worker.js', options.workerUrl ? base : import.meta.url));
    try {
      const about = await ember._call('init', { dist: dist.href, distThreads: distThreads.href, threads, threaded, fallback, simd });
      ember.architectures = about.architectures;
      ember.info = { version: about.version, threads: about.threads, threaded: about.threaded, fallback: about.fallback,
                     simd: about.simd, module: about.module };
      if (ember.info.fallback) console.info(`ember: ${ember.info.fallback}`);
    } catch (e) {
      ember.terminate();
      throw e;
    }
    return ember;
  }

  constructor(workerUrl) {
    /** {version, threads, threaded, fallback: null | why the module runs on one thread,
     *  simd: 'relaxed' | 'simd128' (which module's GEMM and convolution kernels run),
     *  module: the URL of the .wasm file that runs} */
    this.info = null;
    /** the model names registered with EMBER_WEB_MODEL */
    this.architectures = [];
    this.#worker = new Worker(workerUrl, { type: 'module', name: 'ember' });
    this.#worker.onmessage = ({ data }) => {
      const pending = this.#pending.get(data.id);
      if (!pending) return;
      this.#pending.delete(data.id);
      if (data.ok) pending.resolve(data.result);
      else {
        if (data.error.kind === 'fatal') this.#die(data.error.message);
        pending.reject(new EmberError(data.error.message, data.error.kind));
      }
    };
    this.#worker.onerror = (event) => {
      event.preventDefault?.();
      const what = event.message || `the worker script ${workerUrl} failed to load or threw`;
      this.#die(`ember.js: the ember worker died: ${what}`);
    };
    this.#worker.onmessageerror = () => this.#die('ember.js: a message from the ember worker could not be read');
  }

  #die(message) {
    if (this.#dead) return;
    this.#dead = message;
    this.#worker.terminate();
    for (const { reject } of this.#pending.values()) reject(new EmberError(message, 'fatal'));
    this.#pending.clear();
  }

  /** Loads an ONNX file or a safetensors model (its metadata "model" names a registered
   *  architecture) from a URL, an ArrayBuffer or a Uint8Array. options: {name (for messages),
   *  transfer (hand the buffer to the worker instead of copying it)}. */
  async load(source, options = {}) {
    let args;
    let transfer = [];
    if (typeof source === 'string' || source instanceof URL) {
      const url = new URL(source, typeof location !== 'undefined' ? location.href : import.meta.url).href;
      args = { url, name: options.name };
    } else if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
      const bytes = source instanceof ArrayBuffer ? new Uint8Array(source)
        : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
      args = { bytes, name: options.name ?? '<model>' };
      if (options.transfer && bytes.buffer instanceof ArrayBuffer) transfer = [bytes.buffer];
    } else if (typeof Blob !== 'undefined' && source instanceof Blob) {
      args = { bytes: new Uint8Array(await source.arrayBuffer()), name: options.name ?? source.name ?? '<model>' };
      transfer = [args.bytes.buffer];
    } else {
      fail(`load() takes a URL, an ArrayBuffer, a Uint8Array or a Blob, got ${Object.prototype.toString.call(source)}`);
    }
    const { id, info } = await this._call('load', args, transfer);
    return new Model(this, id, info, args.name ?? decodeURIComponent(new URL(args.url).pathname.split('/').pop()));
  }

  /** Stops the worker; pending and later calls reject. */
  terminate() {
    this.#die('ember.js: this Ember instance was terminated');
  }

  // Posts one request to the worker (internal; Model uses it).
  _call(op, args, transfer = []) {
    if (this.#dead) return Promise.reject(new EmberError(this.#dead, 'fatal'));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, op, ...args }, transfer);
    });
  }
}

export default Ember;
