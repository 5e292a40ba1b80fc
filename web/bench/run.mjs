#!/usr/bin/env node
// The browser benchmark of issue 32 ("Performance"): ResNet-18 and MobileNet-v2 at batch 1 in
// headless Chromium through ember's wasm build, onnxruntime-web (wasm backend, SIMD) and
// TensorFlow.js's wasm backend (the ONNX model translated by web/bench/onnx_to_tfjs.mjs), at the
// same thread count; plus the gzip size of ember's single-threaded bundle.
//
//   node web/bench/run.mjs [--quick] [--out build/reports/web-bench.json] [--models resnet18,mobilenet_v2]
//                          [--threads 1,2] [--iters 15] [--warmup 3] [--ember-dist build-wasm/web]
//                          [--ember-threads-dist build-wasm-threads/web] [--chromium /usr/bin/chromium] [--port 0]
//                          [--native build/bench/ember_bench_cpu]
//
// It serves (with COOP/COEP/CORP headers, so that the page is cross-origin isolated and threads
// work) web/ at /, web/node_modules at /node_modules/, the ember build at /dist/, the threaded
// build at /dist-threads/ (when present) and build/web-models at /models/ (exported by
// web/bench/export_models.py when missing); launches Chromium through puppeteer-core; and per
// thread count opens one page (the peers fix their thread count once per page). Per model it loads
// every runtime, checks each output against onnxruntime-web's (max abs diff), warms each up, then
// times `iters` runs in rounds, one run of each runtime per round, the order rotating every round,
// and reports medians. ember runs twice, ember.wasm ('ember') and, where the build has it,
// ember-relaxed.wasm ('ember_relaxed', relaxed SIMD): from the single-threaded build on one thread,
// from the wasm-threads build on more. ember's threaded rows need the wasm-threads build; without
// it they are skipped with the reason. --quick: MobileNet-v2, one thread, 3 warm-up + 5 timed runs (< 60 s).
// --native BIN: after the browser, the native build's benchmark (ember_bench_cpu --threads N --filter
// onnx_MODEL_b1_vs_ort) at each thread count, in the same session; rows gain native_ms (ember's
// median there), native_ort_ms (onnxruntime-node's) and wasm_vs_native / relaxed_vs_native
// (ember_ms / native_ms: how many times slower the module is than the native build).
// Each row's input_sensitivity (how far ort's output moves for another input) says how much its
// diffs prove; where a NAME_check.onnx exists (export_models.py: MobileNet-v2, whose benchmark
// weights make its output nearly constant) every runtime is also compared on it, untimed: row.check.
//
// Output: a table on stdout and JSON at --out: {"chromium", "wasm_gzip_bytes", "wasm_gzip": {...},
// "rows": [{"name": "resnet18_b1_t1", "ember_ms", "ort_ms", "tfjs_ms", "ratio_vs_ort",
// "ratio_vs_tfjs", "max_abs_diff_vs_ort", "tfjs_max_abs_diff_vs_ort", ...}], ...}. Ratios are
// peer_ms / ember_ms (above 1: ember is faster).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';

const here = path.dirname(fileURLToPath(import.meta.url));
const webDir = path.resolve(here, '..');
const repo = path.resolve(webDir, '..');

// ------------------------------------------------------------------ options
function parseArgs(argv) {
  const o = { quick: false, out: 'build/reports/web-bench.json', models: null, threads: null, iters: null, warmup: null,
    emberDist: 'build-wasm/web', emberThreadsDist: 'build-wasm-threads/web', chromium: '/usr/bin/chromium', port: 0,
    native: null };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i], next = () => argv[++i];
    if (a === '--quick') o.quick = true;
    else if (a === '--out') o.out = next();
    else if (a === '--models') o.models = next().split(',');
    else if (a === '--threads') o.threads = next().split(',').map(Number);
    else if (a === '--iters') o.iters = Number(next());
    else if (a === '--warmup') o.warmup = Number(next());
    else if (a === '--ember-dist') o.emberDist = next();
    else if (a === '--ember-threads-dist') o.emberThreadsDist = next();
    else if (a === '--chromium') o.chromium = next();
    else if (a === '--port') o.port = Number(next());
    else if (a === '--native') o.native = next();
    else if (a === '-h' || a === '--help') {
      console.log(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 37).join('\n'));
      process.exit(0);
    } else throw new Error(`run.mjs: unknown argument ${a}`);
  }
  o.models ??= o.quick ? ['mobilenet_v2'] : ['resnet18', 'mobilenet_v2'];
  o.threads ??= o.quick ? [1] : [1, 2];
  o.iters ??= o.quick ? 5 : 15;
  o.warmup ??= 3;
  return o;
}
const opt = parseArgs(process.argv.slice(2));
const abs = (p) => path.resolve(repo, p);

// ------------------------------------------------------------------ models and bundle size
const modelsDir = abs('build/web-models');
if (!opt.models.every((m) => fs.existsSync(path.join(modelsDir, `${m}.onnx`)))) {
  const r = spawnSync('/usr/bin/python3', [path.join(here, 'export_models.py'), modelsDir], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`run.mjs: web/bench/export_models.py failed (status ${r.status})`);
}

const emberDist = abs(opt.emberDist);
const emberThreadsDist = abs(opt.emberThreadsDist);
const haveEmber = fs.existsSync(path.join(emberDist, 'ember.mjs')) && fs.existsSync(path.join(emberDist, 'ember.wasm'));
const haveThreads = fs.existsSync(path.join(emberThreadsDist, 'ember.mjs'));
const haveRelaxed = haveEmber && fs.existsSync(path.join(emberDist, 'ember-relaxed.wasm'));
const haveThreadsRelaxed = haveThreads && fs.existsSync(path.join(emberThreadsDist, 'ember-relaxed.wasm'));
const gz = (f) => zlib.gzipSync(fs.readFileSync(f), { level: 9 }).length;
const wasmGzip = haveEmber ? { wasm: gz(path.join(emberDist, 'ember.wasm')), mjs: gz(path.join(emberDist, 'ember.mjs')),
  wasm_raw: fs.statSync(path.join(emberDist, 'ember.wasm')).size } : null;

// ------------------------------------------------------------------ the server
const roots = [  // URL prefix -> directory; the longest prefix wins
  ['/node_modules/', path.join(webDir, 'node_modules')],
  ['/dist-threads/', emberThreadsDist],
  ['/dist/', emberDist],
  ['/models/', modelsDir],
  ['/', webDir],
];
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
  '.json': 'application/json', '.onnx': 'application/octet-stream', '.map': 'application/json', '.css': 'text/css' };
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const [prefix, dir] = roots.find(([p]) => url.startsWith(p));
  const file = path.join(dir, url.slice(prefix.length));
  const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp',
    'Cross-Origin-Resource-Policy': 'same-origin', 'Cache-Control': 'no-store' };
  if (!file.startsWith(dir) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    res.writeHead(404, headers).end('not found');
    return;
  }
  res.writeHead(200, { ...headers, 'Content-Type': types[path.extname(file)] ?? 'application/octet-stream',
    'Content-Length': fs.statSync(file).size });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(opt.port, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

// ------------------------------------------------------------------ the browser
const puppeteer = (await import('puppeteer-core')).default;  // web/node_modules
const browser = await puppeteer.launch({ executablePath: opt.chromium, headless: true, args: ['--no-sandbox'],
  protocolTimeout: 600_000 });
const chromium = await browser.version();

const median = (a) => { const s = [...a].sort((x, y) => x - y), m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const maxAbsDiff = (a, b) => {
  if (!a || !b) return null;
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; ++i) m = Math.max(m, Math.abs(a[i] - b[i]));
  return Number.isNaN(m) ? Infinity : m;
};
const argmax = (a) => a.reduce((bi, v, i) => (v > a[bi] ? i : bi), 0);
const r4 = (x) => (x == null || !Number.isFinite(x) ? x : Number(x.toPrecision(3)));  // 3 significant digits
const round = (x, d = 2) => (x == null ? null : Math.round(x * 10 ** d) / 10 ** d);

const rows = [], pages = [];
const started = performance.now();
try {
  for (const threads of opt.threads) {
    const page = await browser.newPage();
    const consoleErrors = [];
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    await page.goto(`${base}/bench/bench.html`, { waitUntil: 'load' });
    await page.waitForFunction(() => globalThis.bench?.ready === true, { timeout: 60_000 });
    let emberDistUrl = null, emberSkip = null;
    if (!haveEmber) emberSkip = `no ember build at ${opt.emberDist}`;
    else if (threads === 1) emberDistUrl = '/dist/';
    else if (haveThreads) emberDistUrl = '/dist-threads/';
    else emberSkip = `no threaded ember build at ${opt.emberThreadsDist} (cmake --preset wasm-threads)`;
    // the relaxed-SIMD module (ember-relaxed.wasm) beside the build's ember.wasm
    const emberRelaxed = threads === 1 ? haveRelaxed : haveThreadsRelaxed;
    const info = await page.evaluate((a) => globalThis.bench.init(a), { threads, emberDist: emberDistUrl, emberRelaxed });
    if (info.ember_error) emberSkip = `ember failed to start: ${info.ember_error}`;
    const relaxedSkip = emberSkip ?? (!emberRelaxed ? `no ember-relaxed.wasm in ${threads === 1 ? opt.emberDist : opt.emberThreadsDist}`
                                     : info.ember_relaxed_error ? `failed to start: ${info.ember_relaxed_error}` : null);
    if (threads > 1 && !info.crossOriginIsolated) throw new Error('run.mjs: the page is not cross-origin isolated');
    pages.push({ threads, ...info });
    console.error(`[t${threads}] ${JSON.stringify(info)}`);

    for (const model of opt.models) {
      const name = `${model}_b1_t${threads}`;
      const row = { name, model, batch: 1, threads, ember_ms: null, ember_relaxed_ms: null, ort_ms: null, tfjs_ms: null,
        tfjs_threads: info.tfjs_threads };  // what tf.wasm.getThreadsCount() says it uses
      const skipped = {};
      if (emberSkip) skipped.ember = emberSkip;
      if (relaxedSkip) skipped.ember_relaxed = relaxedSkip;
      const active = [];
      for (const rt of ['ember', 'ember_relaxed', 'ort', 'tfjs']) {
        if (skipped[rt]) continue;
        try {
          const r = await page.evaluate((a, b) => globalThis.bench.load(a, b), rt, model);
          row[`${rt}_load_ms`] = round(r.load_ms, 0);
          if (rt === 'tfjs') row.tfjs_conversion = { ops: r.ops, fused: r.fused, steps: r.steps };
          active.push(rt);
        } catch (e) {
          skipped[rt] = `${rt === 'tfjs' ? 'does not convert: ' : 'load failed: '}${String(e.message ?? e).split('\n')[0]}`;
        }
      }
      // outputs: each against onnxruntime-web's
      const outs = {};
      for (const rt of [...active]) {
        try {
          outs[rt] = await page.evaluate((a, b) => globalThis.bench.output(a, b), rt, model);
        } catch (e) {
          skipped[rt] = `run failed: ${String(e.message ?? e).split('\n')[0]}`;
          active.splice(active.indexOf(rt), 1);
        }
      }
      row.max_abs_diff_vs_ort = r4(maxAbsDiff(outs.ember, outs.ort));
      row.tfjs_max_abs_diff_vs_ort = r4(maxAbsDiff(outs.tfjs, outs.ort));
      row.ember_relaxed_max_abs_diff_vs_ort = r4(maxAbsDiff(outs.ember_relaxed, outs.ort));
      row.ember_relaxed_max_abs_diff_vs_ember = r4(maxAbsDiff(outs.ember_relaxed, outs.ember));
      if (outs.ort) {
        row.ort_output_max_abs = r4(Math.max(...outs.ort.map(Math.abs)));
        row.top1_agrees = Object.fromEntries(Object.entries(outs).map(([k, v]) => [k, argmax(v) === argmax(outs.ort)]));
        // how much the output moves for another input: a diff far below it means the check has teeth
        const other = await page.evaluate((a, b) => globalThis.bench.output(a, b, 1), 'ort', model);
        row.input_sensitivity = r4(maxAbsDiff(outs.ort, other));
      }
      // warm-up, then rounds of one run each, the order rotating
      for (let w = 1; w < opt.warmup; ++w)  // the output run above was the first
        for (const rt of active) await page.evaluate((a, b) => globalThis.bench.time(a, b), rt, model);
      const times = Object.fromEntries(active.map((rt) => [rt, []]));
      for (let it = 0; it < opt.iters; ++it) {
        for (let q = 0; q < active.length; ++q) {
          const rt = active[(it + q) % active.length];
          times[rt].push(await page.evaluate((a, b) => globalThis.bench.time(a, b), rt, model));
        }
      }
      for (const rt of active) {
        row[`${rt}_ms`] = round(median(times[rt]));
        row[`${rt}_ms_min`] = round(Math.min(...times[rt]));
      }
      // the check variant (export_models.py): the same graph, an output that depends on the input
      const check = `${model}_check`;
      if (fs.existsSync(path.join(modelsDir, `${check}.onnx`)) && active.includes('ort')) {
        const co = {};
        for (const rt of active) {
          try {
            await page.evaluate((a, b) => globalThis.bench.load(a, b), rt, check);
            co[rt] = await page.evaluate((a, b) => globalThis.bench.output(a, b), rt, check);
          } catch (e) {
            co[rt] = null;
            console.error(`[t${threads}] ${rt} on ${check}: ${String(e.message ?? e).split('\n')[0]}`);
          }
        }
        const other = await page.evaluate((a, b) => globalThis.bench.output(a, b, 1), 'ort', check);
        row.check = { model: check, input_sensitivity: r4(maxAbsDiff(co.ort, other)),
          ort_output_max_abs: r4(Math.max(...co.ort.map(Math.abs))),
          ember_max_abs_diff_vs_ort: r4(maxAbsDiff(co.ember, co.ort)),
          ember_relaxed_max_abs_diff_vs_ort: r4(maxAbsDiff(co.ember_relaxed, co.ort)), tfjs_max_abs_diff_vs_ort: r4(maxAbsDiff(co.tfjs, co.ort)) };
      }
      row.ratio_vs_ort = row.ember_ms && row.ort_ms ? round(row.ort_ms / row.ember_ms, 3) : null;
      row.ratio_vs_tfjs = row.ember_ms && row.tfjs_ms ? round(row.tfjs_ms / row.ember_ms, 3) : null;
      row.relaxed_speedup = row.ember_ms && row.ember_relaxed_ms ? round(row.ember_ms / row.ember_relaxed_ms, 3) : null;
      row.relaxed_ratio_vs_ort = row.ember_relaxed_ms && row.ort_ms ? round(row.ort_ms / row.ember_relaxed_ms, 3) : null;
      row.iters = opt.iters;
      row.warmup = opt.warmup;
      if (Object.keys(skipped).length) row.skipped = skipped;
      rows.push(row);
      console.error(`[t${threads}] ${JSON.stringify(row)}`);
    }
    if (consoleErrors.length) pages.at(-1).console_errors = consoleErrors.slice(0, 20);
    await page.close();
  }
} finally {
  await browser.close();
  server.close();
}

// ------------------------------------------------------------------ the native build
if (opt.native) {
  for (const threads of opt.threads) {
    const out = path.join(fs.mkdtempSync(path.join(fs.realpathSync('/tmp'), 'ember-native-')), 'native.json');
    const filter = opt.models.map((m) => `onnx_${m}_b1_vs_ort`).join(',');
    const r = spawnSync(abs(opt.native), ['--threads', String(threads), '--filter', filter, '--out', out],
                        { cwd: repo, encoding: 'utf8' });
    const results = r.status === 0 && fs.existsSync(out) ? JSON.parse(fs.readFileSync(out, 'utf8')) : [];
    if (r.status !== 0) console.error(`[native t${threads}] ${opt.native} failed (status ${r.status}): ${(r.stderr || r.stdout).slice(-400)}`);
    for (const row of rows.filter((x) => x.threads === threads)) {
      const n = results.find((x) => x.name === `onnx_${row.model}_b1_vs_ort`);
      if (!n) continue;
      row.native_ms = round(n.ember_ms);
      row.native_ort_ms = round(n.peer_ms);
      row.wasm_vs_native = row.ember_ms ? round(row.ember_ms / n.ember_ms, 2) : null;
      row.relaxed_vs_native = row.ember_relaxed_ms ? round(row.ember_relaxed_ms / n.ember_ms, 2) : null;
    }
    fs.rmSync(path.dirname(out), { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------ report
const report = {
  chromium,
  wasm_gzip_bytes: wasmGzip ? wasmGzip.wasm + wasmGzip.mjs : null,
  wasm_gzip: wasmGzip && { 'ember.wasm': wasmGzip.wasm, 'ember.mjs': wasmGzip.mjs, 'ember.wasm_raw_bytes': wasmGzip.wasm_raw,
    dist: opt.emberDist },
  ember_threads_build: haveThreads ? opt.emberThreadsDist : null,
  native: opt.native,
  quick: opt.quick,
  pages,
  rows,
  seconds: round((performance.now() - started) / 1000, 1),
};
fs.mkdirSync(path.dirname(abs(opt.out)), { recursive: true });
fs.writeFileSync(abs(opt.out), JSON.stringify(report, null, 2) + '\n');

const fmtE = (x, w) => (x == null ? '-' : Number.isFinite(x) ? x.toExponential(1) : String(x)).padStart(w);
const fmt = (x, w, d = 1) => (x == null ? '-' : typeof x === 'number' ? x.toFixed(d) : String(x)).padStart(w);
console.log(`${chromium}; ember bundle gzip: ${report.wasm_gzip_bytes ?? '-'} bytes (${opt.emberDist})`);
console.log(`${'row'.padEnd(22)}${'ember ms'.padStart(10)}${'ort ms'.padStart(10)}${'tfjs ms'.padStart(10)}` +
  `${'ort/ember'.padStart(11)}${'tfjs/ember'.padStart(11)}${'diff ember'.padStart(12)}${'diff tfjs'.padStart(11)}`);
for (const r of rows) {
  console.log(`${r.name.padEnd(22)}${fmt(r.ember_ms, 10)}${fmt(r.ort_ms, 10)}${fmt(r.tfjs_ms, 10)}${fmt(r.ratio_vs_ort, 11, 3)}` +
    `${fmt(r.ratio_vs_tfjs, 11, 3)}${fmtE(r.max_abs_diff_vs_ort, 12)}${fmtE(r.tfjs_max_abs_diff_vs_ort, 11)}`);
  if (r.ember_relaxed_ms) console.log(`  ember-relaxed.wasm: ${fmt(r.ember_relaxed_ms, 0)} ms (${fmt(r.relaxed_speedup, 0, 3)}x ember.wasm, ` +
    `${fmt(r.relaxed_ratio_vs_ort, 0, 3)}x ort); diff vs ember.wasm ${fmtE(r.ember_relaxed_max_abs_diff_vs_ember, 0)}, vs ort ` +
    `${fmtE(r.ember_relaxed_max_abs_diff_vs_ort, 0)}`);
  if (r.native_ms) console.log(`  native ember: ${fmt(r.native_ms, 0)} ms (ember.wasm ${fmt(r.wasm_vs_native, 0, 2)}x slower` +
    `${r.relaxed_vs_native ? `, ember-relaxed.wasm ${fmt(r.relaxed_vs_native, 0, 2)}x` : ''}); onnxruntime-node ${fmt(r.native_ort_ms, 0)} ms`);
  for (const [rt, why] of Object.entries(r.skipped ?? {})) console.log(`  ${rt} skipped: ${why}`);
  if (r.tfjs_threads !== r.threads) console.log(`  tfjs: asked for ${r.threads} threads, tf.wasm.getThreadsCount() says ${r.tfjs_threads}`);
  console.log(`  output moves by ${r.input_sensitivity ?? '-'} for another input (max |output| ${r.ort_output_max_abs ?? '-'})`);
  if (r.check) console.log(`  ${r.check.model}: ember diff ${fmtE(r.check.ember_max_abs_diff_vs_ort, 0)}, tfjs diff ` +
    `${fmtE(r.check.tfjs_max_abs_diff_vs_ort, 0)}; output moves by ${r.check.input_sensitivity} for another input ` +
    `(max |output| ${r.check.ort_output_max_abs})`);
}
console.log(`wrote ${opt.out} (${report.seconds} s)`);
