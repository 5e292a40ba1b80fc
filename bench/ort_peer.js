#!/usr/bin/env node
// ONNX Runtime's side of the onnx_*_vs_ort benchmarks: ember_bench_cpu (bench/bench_cpu.cpp)
// starts it as a child process and asks it for timed samples, interleaved with its own samples
// of ember, as the harness does for an in-process peer (docs/benchmarks.md, "ONNX Runtime").
//
//   NODE_PATH=build/ort/node_modules node bench/ort_peer.js MODEL INPUT SHAPE THREADS OUTPUT [--samples N]
//
// MODEL   an .onnx file (external data is found relative to it)
// INPUT   the model's one input, raw little-endian f32, of
// SHAPE   e.g. 1,3,224,224
// THREADS intraOpNumThreads (interOpNumThreads 1, sequential execution, all graph optimisations)
// OUTPUT  where the first output of the first run is written, raw little-endian f32
//
// The session is created, warmed up and calibrated before the first line on stdout:
//   {"ready": true, "onnxruntime": "1.31.1", "output_shape": [1, 1000], "reps": 2}
// `reps` runs make one sample of at least --min-sample-ms (20, the harness's min_sample_ms).
// Then one line in, one line out:
//   sample     -> {"ms": 18.2}   time per run over one sample of `reps` runs of session.run
//   report N   -> {"median_ms": 18.2, "min_ms": 17.9, "samples": N}   over the last N samples
// and EOF ends it. With --samples N it times N samples by itself and prints the report line
// (for a run by hand). After each sample it waits until ONNX Runtime's worker threads stop
// spinning (they spin for ~35 ms after a run), so that they do not take a core from ember's
// sample that follows.
'use strict';

const fs = require('fs');
const readline = require('readline');
const ort = require('onnxruntime-node');

function usage() {
  process.stderr.write('usage: ort_peer.js MODEL INPUT SHAPE THREADS OUTPUT [--samples N] [--min-sample-ms MS]\n');
  process.exit(2);
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// CPU time of all of this process's threads, in nanoseconds (0 where /proc cannot tell).
function cpuNs() {
  let total = 0;
  try {
    for (const tid of fs.readdirSync('/proc/self/task')) {
      try {
        total += Number(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread exited
      }
    }
  } catch {
    return 0;
  }
  return total;
}

// Waits until the process has used under 10% of a core in each of 5 consecutive 2 ms windows
// (at most `maxMs`). ONNX Runtime's workers spin in bursts for ~30 ms after a run, with quiet
// gaps of a few ms between them: one quiet window let ember's next sample start beside the
// spinning and run 35-50% slower (2 vCPUs, 2026-12-07: ResNet-18 b1 26-29 ms against 19 ms
// with a 200 ms pause after each ONNX Runtime sample).
async function settle(maxMs) {
  const start = nowMs();
  let before = cpuNs(), t = start, quiet = 0;
  while (t - start < maxMs) {
    await sleep(2);
    const used = cpuNs(), now = nowMs();
    quiet = before > 0 && used - before < 0.1 * (now - t) * 1e6 ? quiet + 1 : 0;
    if (quiet >= 5) return;
    before = used;
    t = now;
  }
}

function median(values) {
  const v = [...values].sort((a, b) => a - b);
  const n = v.length;
  return n % 2 ? v[(n - 1) / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

async function main() {
  const args = process.argv.slice(2);
  const option = (flag, fallback) => {
    const i = args.indexOf(flag);
    if (i < 0) return fallback;
    const value = Number(args[i + 1]);
    args.splice(i, 2);
    if (!(value > 0)) usage();
    return value;
  };
  const standaloneSamples = option('--samples', 0);
  const minSampleMs = option('--min-sample-ms', 20);
  if (args.length !== 5) usage();
  const [modelPath, inputPath, shapeText, threadsText, outputPath] = args;
  const shape = shapeText.split(',').map(Number);
  const threads = Number(threadsText);
  if (shape.some((d) => !Number.isInteger(d) || d < 0) || !(threads >= 1)) usage();

  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
  });
  const bytes = fs.readFileSync(inputPath);
  const count = shape.reduce((a, b) => a * b, 1);
  if (bytes.length !== 4 * count) {
    throw new Error(`${inputPath}: ${bytes.length} bytes, shape [${shape}] needs ${4 * count}`);
  }
  const data = new Float32Array(count);
  new Uint8Array(data.buffer).set(bytes);  // (a copy: the file's buffer need not be 4-byte aligned)
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, shape) };
  const outputName = session.outputNames[0];

  // Warm-up (the first run allocates), then the output of one run for the numeric check.
  await session.run(feeds);
  const result = (await session.run(feeds))[outputName];
  const out = result.data;
  fs.writeFileSync(outputPath, new Uint8Array(out.buffer, out.byteOffset, out.byteLength));

  const timedLoop = async (reps) => {
    const t0 = nowMs();
    for (let i = 0; i < reps; ++i) await session.run(feeds);
    return nowMs() - t0;
  };
  // Calibration as bench/harness.cpp's: loops grown until one lasts half a sample, then the
  // runs a sample needs to last at least minSampleMs.
  let n = 1, perRun;
  for (;;) {
    const t = await timedLoop(n);
    if (t >= 0.5 * minSampleMs) {
      perRun = t / n;
      break;
    }
    n = Math.ceil(n * Math.min(Math.max(minSampleMs / Math.max(t, 1e-4), 2), 100));
  }
  const reps = Math.max(1, Math.ceil(minSampleMs / perRun));
  await settle(200);

  const samples = [];
  const sample = async () => {
    const ms = (await timedLoop(reps)) / reps;
    samples.push(ms);
    await settle(200);
    return { ms };
  };
  const report = (count) => {
    const last = samples.slice(-count);
    return { median_ms: median(last), min_ms: Math.min(...last), samples: last.length };
  };
  const reply = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

  if (standaloneSamples) {
    for (let s = 0; s < standaloneSamples; ++s) await sample();
    reply({ onnxruntime: ort.env.versions.node, reps, ...report(standaloneSamples) });
    return;
  }
  reply({ ready: true, onnxruntime: ort.env.versions.node, output_shape: result.dims, reps });
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const [command, arg] = line.trim().split(/\s+/);
    if (command === 'sample') reply(await sample());
    else if (command === 'report' && Number(arg) > 0) reply(report(Number(arg)));
    else throw new Error(`unknown command: ${line}`);
  }
}

main().catch((e) => {
  process.stderr.write(`ort_peer.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
