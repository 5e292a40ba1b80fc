// Types of web/ember.js: ember's wasm build in a Web Worker (docs/web.md, web/README.md).
//
//   const ember = await Ember.create({ threads: 'auto' });
//   const model = await ember.load('/models/mobilenet_v2.onnx');
//   const [out] = await model.run({ data: new Float32Array(3 * 224 * 224), shape: [1, 3, 224, 224] });

/** ember's dtype names (include/ember/core/dtype.hpp). */
export type DType = 'f64' | 'f32' | 'f16' | 'bf16' | 'i64' | 'i32' | 'i16' | 'i8' | 'u8' | 'bool';

/** The typed arrays an input may be; f16 and bf16 are their raw bits in a Uint16Array, bool is a Uint8Array. */
export type InputArray =
  | Float32Array | Float64Array | Int32Array | BigInt64Array | Int16Array | Int8Array | Uint8Array
  | Uint8ClampedArray | Uint16Array;

/** The typed array of each output dtype. */
export interface OutputArrays {
  f64: Float64Array; f32: Float32Array; f16: Uint16Array; bf16: Uint16Array; i64: BigInt64Array;
  i32: Int32Array; i16: Int16Array; i8: Int8Array; u8: Uint8Array; bool: Uint8Array;
}

/** One input tensor. The dtype follows from the array (Float32Array: 'f32', BigInt64Array: 'i64',
 *  ...) unless given; the shape may be left out when the model declares every size. */
export interface Tensor {
  data: InputArray;
  shape?: readonly number[];
  dtype?: DType;
}

/** run()'s inputs: one tensor (or a bare typed array), an array by position, or an object keyed by input name. */
export type Inputs = Tensor | InputArray | ReadonlyArray<Tensor | InputArray> | { [inputName: string]: Tensor | InputArray };

/** One output of a run; data is a fresh array that the caller owns. */
export type Output = {
  [D in DType]: { name: string; dtype: D; shape: number[]; data: OutputArrays[D] };
}[DType];

/** A model's declared inputs and outputs. Unknown sizes are null, or the name of their dimension. */
export interface ModelInfo {
  kind: 'onnx' | 'module';
  /** the registered architecture (EMBER_WEB_MODEL) of a safetensors model; '' for ONNX */
  arch: string;
  inputs: { name: string; dtype?: DType | null; shape?: Array<number | string | null> | null }[];
  outputs: { name: string }[];
}

export interface EmberInfo {
  version: string;
  /** the CPU backend's thread count */
  threads: number;
  /** whether the pthreads build runs */
  threaded: boolean;
  /** null, or why the module runs on one thread although more were asked for */
  fallback: string | null;
  /** 'relaxed': ember-relaxed.wasm (of dist, or of distThreads when threaded), whose GEMM and
   *  convolution kernels use relaxed SIMD's fused multiply-add (the browser has relaxed SIMD);
   *  'simd128': ember.wasm */
  simd: 'relaxed' | 'simd128';
  /** the URL of the .wasm file that runs: dist's or distThreads' ember-relaxed.wasm or ember.wasm */
  module: string;
}

export interface CreateOptions {
  /** 'auto' (navigator.hardwareConcurrency; the default) or a count; more than 1 needs the page to be cross-origin isolated */
  threads?: 'auto' | number;
  /** the folder of the single-threaded build's ember.mjs and ember.wasm (relative to the page); default ./dist/ beside ember.js */
  dist?: string | URL;
  /** the folder of the pthreads build; default ../dist-threads/ beside dist */
  distThreads?: string | URL;
  /** ember-worker.js (relative to the page); default the one beside ember.js */
  workerUrl?: string | URL;
  /** 'auto' (the default): ember-relaxed.wasm where the browser has relaxed SIMD and the build
   *  folder (dist, or distThreads when threaded) has it, else ember.wasm; 'simd128': always ember.wasm */
  simd?: 'auto' | 'simd128';
}

export interface LoadOptions {
  /** the name used in error messages; default the URL's file name */
  name?: string;
  /** hand an ArrayBuffer to the worker instead of copying it (it is detached afterwards) */
  transfer?: boolean;
}

export interface RunOptions {
  /** hand the inputs' buffers to the worker instead of copying them (they are detached afterwards) */
  transfer?: boolean;
}

/** Every failure: ember's C++ message ('ember'), a failed fetch ('fetch'), an input rejected in
 *  JavaScript ('input'), or a dead module or worker ('fatal': create a new Ember). */
export class EmberError extends Error {
  readonly name: 'EmberError';
  readonly kind: 'ember' | 'fetch' | 'input' | 'fatal';
}

export class Model {
  readonly info: ModelInfo;
  readonly name: string;
  run(inputs: Inputs, options?: RunOptions): Promise<Output[]>;
  free(): Promise<void>;
}

export class Ember {
  /** starts the worker and the module; rejects with an EmberError when the module cannot load */
  static create(options?: CreateOptions): Promise<Ember>;
  readonly info: EmberInfo;
  /** the architectures registered with EMBER_WEB_MODEL, which safetensors models may name */
  readonly architectures: string[];
  /** an ONNX file, or safetensors whose metadata "model" names a registered architecture */
  load(source: string | URL | ArrayBuffer | ArrayBufferView | Blob, options?: LoadOptions): Promise<Model>;
  /** stops the worker; pending and later calls reject */
  terminate(): void;
}

export default Ember;
