// The demos in a real browser (issue 32): Debian's chromium, headless, driven by puppeteer-core
// (no browser is downloaded). It serves the repository with web/serve.mjs on a free port, then
//   digits   draws digits with mouse events, checks each prediction against the native build's
//            (build/web/ember_web_reference on the same 8x8 inputs: same label, probabilities
//            within 1e-4);
//   fashion  checks the test images' predictions against the native build's; classifies an image;
//   onnx     runs MobileNet-v2, checks the output against the native build's;
// with no console errors on any page and a screenshot of each in build/reports/web/<demo>.png.
// Then bad input: a missing model, a truncated model, an ONNX op the build lacks, an input of the
// wrong size (each must show ember's message in the page's error box while the page keeps
// working), and no SharedArrayBuffer (the one-thread fallback, said in the page).
//
//   node web/tests/browser.test.mjs [--only digits,fashion,onnx,bad] [--headful]
//   env: CHROMIUM (default /usr/bin/chromium), EMBER_WEB_REFERENCE (default build/web/ember_web_reference),
//        EMBER_WEB_MODELS (the models folder served at /models/; default build/web-models),
//        EMBER_WEB_DEMO_THREADS (?threads=N for the three demos; default their 'auto'),
//        EMBER_WEB_EXPECT_SIMD (relaxed or simd128: the module each demo must report in its status line)
//
// Prints one JSON line {"chromium", "demos_ok", "demos", "bad_input_ok", "bad_input", "failed", ...}
// and writes it to build/reports/web-demos.json; exits 1 on any failure.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const reports = path.join(repo, 'build', 'reports');
const shots = path.join(reports, 'web');
const scratch = path.join(shots, 'inputs');
const models = path.resolve(process.env.EMBER_WEB_MODELS ?? path.join(repo, 'build', 'web-models'));
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PROB_TOL = 1e-4;
const demoQuery = process.env.EMBER_WEB_DEMO_THREADS ? `?threads=${process.env.EMBER_WEB_DEMO_THREADS}` : '';
const expectSimd = process.env.EMBER_WEB_EXPECT_SIMD;
const READY_MS = 30000;

const argv = process.argv.slice(2);
const only = (() => { const i = argv.indexOf('--only'); return i >= 0 ? new Set(argv[i + 1].split(',')) : null; })();
const wanted = (name) => !only || only.has(name);

const started = Date.now();
const failures = [];
const summary = { chromium: null, demos_ok: 0, demos: 0, bad_input_ok: 0, bad_input: 0, failed: 0 };

function log(...a) { console.error(`[${((Date.now() - started) / 1000).toFixed(1)}s]`, ...a); }
function fail(what, detail) { failures.push(`${what}: ${detail}`); log(`FAIL ${what}: ${detail}`); }
function check(cond, what, detail) { if (!cond) fail(what, detail); return !!cond; }

const softmax = (v) => { const m = Math.max(...v); const e = v.map((x) => Math.exp(x - m)); const s = e.reduce((a, b) => a + b, 0); return e.map((x) => x / s); };
const argmax = (v) => v.reduce((b, x, i) => (x > v[b] ? i : b), 0);
const maxAbsDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

// ---- the native reference ------------------------------------------------------------------

function findReference() {
  const candidates = [process.env.EMBER_WEB_REFERENCE, path.join(repo, 'build/web/ember_web_reference'),
                      path.join(repo, 'build/web/tools/ember_web_reference')].filter(Boolean);
  return candidates.find((p) => fs.existsSync(p)) ?? null;
}
const referenceTool = findReference();

// {"outputs": [[...]], "argmax": [...]} of the native build for inputs {"shape", "inputs"}.
function reference(modelFile, inputsFile) {
  if (!referenceTool) throw new Error('build/web/ember_web_reference is not built (the native build\'s web tools)');
  const out = execFileSync(referenceTool, [modelFile, inputsFile], { encoding: 'utf8', maxBuffer: 256 << 20, timeout: 60000, stdio: ['ignore', 'pipe', 'pipe'] });
  return JSON.parse(out);
}

function writeJSON(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(value));
  return file;
}

// ---- the server ----------------------------------------------------------------------------

const servers = [];
function startServer(extra = []) {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [path.join(repo, 'web/serve.mjs'), '--port', '0', '--models', models, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
    servers.push(proc);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve.mjs printed no URL in 10 s: ${out}`)), 10000);
    const take = (chunk) => {
      out += chunk;
      const m = out.match(/http:\/\/[^\s/]+\//);
      if (m) { clearTimeout(timer); resolve(m[0]); }
    };
    proc.stdout.on('data', take);
    proc.stderr.on('data', (c) => { out += c; });
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`serve.mjs exited (${code}): ${out}`)); });
  });
}

// ---- pages ---------------------------------------------------------------------------------

let browser;

// A page whose console errors and uncaught exceptions are collected.
async function openPage(url) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1180, height: 900 });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()} ${m.location()?.url ?? ''}`); });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message ?? e}`));
  const failedRequests = [];   // reported, not failures (an aborted prefetch is one)
  page.on('requestfailed', (r) => failedRequests.push(`${r.url()} ${r.failure()?.errorText ?? ''}`));
  await page.goto(url, { waitUntil: 'load', timeout: 20000 });
  return { page, errors, failedRequests };
}

// window.demo.ready's value (true when the demo loaded), or throws on a timeout.
async function waitReady(page) {
  await page.waitForFunction(() => !!(window.demo && window.demo.ready), { timeout: 10000 });  // !!: not the promise
  return page.evaluate((ms) => Promise.race([
    window.demo.ready,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`demo.ready did not settle in ${ms} ms`)), ms)),
  ]), READY_MS);
}

// With EMBER_WEB_EXPECT_SIMD, the demo's status line must name that module ('relaxed SIMD' or not).
async function checkSimd(page, demo) {
  if (!expectSimd) return true;
  const status = await page.$eval('#status', (e) => e.textContent).catch(() => '');
  summary.status = { ...summary.status, [demo]: status };
  return check(/relaxed SIMD/.test(status) === (expectSimd === 'relaxed'), `${demo} runs the ${expectSimd} module`, status);
}

const errorBox = (page) => page.$$eval('#errors .error', (els) => els.map((e) => e.querySelector('.message')?.textContent ?? e.textContent));
const notices = (page) => page.$$eval('#notices .notice', (els) => els.map((e) => e.textContent));

async function finishDemo(name, page, errors, ok, details, failedRequests = []) {
  if (failedRequests.length) details.failed_requests = failedRequests;
  const shot = path.join(shots, `${name}.png`);
  await page.screenshot({ path: shot, fullPage: true }).catch((e) => fail(`${name} screenshot`, e.message));
  const box = await errorBox(page).catch(() => []);
  ok = check(box.length === 0, `${name} error box`, JSON.stringify(box)) && ok;
  ok = check(errors.length === 0, `${name} console errors`, JSON.stringify(errors)) && ok;
  summary.demos += 1;
  if (ok) summary.demos_ok += 1;
  summary[name] = { ok, screenshot: path.relative(repo, shot), ...details };
  log(`${name}: ${ok ? 'ok' : 'FAILED'}`);
  await page.close();
}

// ---- digits --------------------------------------------------------------------------------

// Strokes in [0, 1] pad coordinates, for a few digits.
function ellipse(cx, cy, rx, ry, a0 = 0, a1 = 2 * Math.PI, n = 36) {
  return Array.from({ length: n + 1 }, (_, i) => { const t = a0 + ((a1 - a0) * i) / n; return [cx + rx * Math.sin(t), cy - ry * Math.cos(t)]; });
}
const DIGITS = [
  { digit: 0, strokes: [ellipse(0.5, 0.5, 0.22, 0.34)] },
  { digit: 1, strokes: [[[0.38, 0.3], [0.52, 0.15], [0.52, 0.86]]] },
  { digit: 2, strokes: [[[0.3, 0.3], [0.38, 0.18], [0.55, 0.14], [0.7, 0.24], [0.7, 0.38], [0.3, 0.84], [0.76, 0.84]]] },
  { digit: 3, strokes: [ellipse(0.5, 0.32, 0.18, 0.17, -1.4, 2.6, 20).concat(ellipse(0.5, 0.67, 0.2, 0.19, 0.4, 4.5, 24))] },
  { digit: 4, strokes: [[[0.58, 0.14], [0.26, 0.6], [0.8, 0.6]], [[0.62, 0.3], [0.62, 0.88]]] },
  { digit: 7, strokes: [[[0.28, 0.22], [0.3, 0.16], [0.72, 0.16], [0.46, 0.86]], [[0.38, 0.52], [0.68, 0.5]]] },  // crossed, as many of UCI's 7s
];

async function drawStrokes(page, strokes) {
  const r = await page.$eval('#pad', (el) => { const b = el.getBoundingClientRect(); return { x: b.left, y: b.top, w: b.width, h: b.height }; });
  const at = ([u, v]) => [r.x + u * r.w, r.y + v * r.h];
  for (const stroke of strokes) {
    await page.mouse.move(...at(stroke[0]));
    await page.mouse.down();
    for (const p of stroke.slice(1)) await page.mouse.move(...at(p), { steps: 6 });
    await page.mouse.up();
  }
}

async function testDigits(base) {
  const { page, errors, failedRequests } = await openPage(`${base}demos/digits/${demoQuery}`);
  let ok = check(await waitReady(page), 'digits ready', 'the demo did not load (see its error box)');
  ok = await checkSimd(page, 'digits') && ok;
  const drawn = [];
  if (ok) {
    for (const { digit, strokes } of DIGITS) {
      await page.click('#clear');
      await drawStrokes(page, strokes);
      const r = await page.evaluate(async () => {
        await window.demo.settled();
        return { input: window.demo.lastInput, prediction: window.demo.lastPrediction, runs: window.demo.runs };
      });
      if (!check(r.input && r.prediction, `digits draw ${digit}`, 'no prediction after drawing')) { ok = false; continue; }
      drawn.push({ digit, ...r });
    }
    // what is on screen for the screenshot: the last digit drawn
    // predictPixels on the same input gives the same answer
    if (drawn.length) {
      const again = await page.evaluate((x) => window.demo.predictPixels(x), drawn[drawn.length - 1].input);
      ok = check(again.label === drawn[drawn.length - 1].prediction.label, 'digits predictPixels', 'a different label for the same input') && ok;
    }
  }
  const details = { drawn: drawn.map((d) => ({ intended: d.digit, predicted: d.prediction.label })), runs: drawn.at(-1)?.runs ?? 0 };
  if (drawn.length) {
    try {
      const file = writeJSON(path.join(scratch, 'digits_inputs.json'), { shape: [1, 1, 8, 8], inputs: drawn.map((d) => d.input) });
      const native = reference(path.join(models, 'digits_cnn.safetensors'), file);
      let worst = 0;
      drawn.forEach((d, i) => {
        const probs = softmax(native.outputs[i]);
        worst = Math.max(worst, maxAbsDiff(probs, d.prediction.probs));
        ok = check(native.argmax[i] === d.prediction.label, `digits native label (${d.digit})`, `page ${d.prediction.label}, native ${native.argmax[i]}`) && ok;
      });
      ok = check(worst <= PROB_TOL, 'digits probabilities', `max |page - native| ${worst} > ${PROB_TOL}`) && ok;
      details.native_agree = ok;
      details.max_prob_diff = worst;
    } catch (e) { ok = false; fail('digits native reference', e.message); }
  }
  details.intended_right = details.drawn.filter((d) => d.intended === d.predicted).length;
  await finishDemo('digits', page, errors, ok, details, failedRequests);
}

// ---- fashion -------------------------------------------------------------------------------

async function testFashion(base) {
  const { page, errors, failedRequests } = await openPage(`${base}demos/fashion/${demoQuery}`);
  let ok = check(await waitReady(page), 'fashion ready', 'the demo did not load (see its error box)');
  ok = await checkSimd(page, 'fashion') && ok;
  const details = {};
  if (ok) {
    const { predictions, logits, labels } = await page.evaluate(() => ({ predictions: window.demo.predictions, logits: window.demo.logits, labels: window.demo.labels }));
    details.samples = predictions.length;
    details.right = predictions.filter((p, i) => p === labels[i]).length;
    ok = check(predictions.length > 0, 'fashion samples', 'no predictions') && ok;
    try {
      const native = reference(path.join(models, 'fashion_cnn.safetensors'), path.join(models, 'fashion_samples.json'));
      ok = check(native.argmax.length === predictions.length, 'fashion native count', `${native.argmax.length} vs ${predictions.length}`) && ok;
      const disagree = predictions.filter((p, i) => p !== native.argmax[i]).length;
      ok = check(disagree === 0, 'fashion native labels', `${disagree} of ${predictions.length} differ: page ${predictions}, native ${native.argmax}`) && ok;
      const worst = Math.max(0, ...logits.map((l, i) => maxAbsDiff(softmax(l), softmax(native.outputs[i]))));
      ok = check(worst <= PROB_TOL, 'fashion probabilities', `max |page - native| ${worst} > ${PROB_TOL}`) && ok;
      details.native_agree = disagree === 0;
      details.max_prob_diff = worst;
    } catch (e) { ok = false; fail('fashion native reference', e.message); }

    // a "photo": the first test image, dark on a light background, 3x larger, through classify()
    const photo = await page.evaluate(async () => {
      const values = (await (await fetch('/models/fashion_samples.json')).json()).inputs[0];
      const c = document.createElement('canvas');
      c.width = c.height = 120;
      const g = c.getContext('2d');
      g.fillStyle = '#f4f1ea';
      g.fillRect(0, 0, 120, 120);
      const img = new ImageData(28, 28);
      values.forEach((v, i) => { const x = 255 - Math.round(255 * v * 0.9); img.data.set([x, x, x, 255], 4 * i); });
      const t = document.createElement('canvas');
      t.width = t.height = 28;
      t.getContext('2d').putImageData(img, 0, 0);
      g.drawImage(t, 18, 18, 84, 84);
      const r = await window.demo.classify(g.getImageData(0, 0, 120, 120));
      return { label: r.label, inverted: r.inverted, sum: r.probs.reduce((a, b) => a + b, 0), first: window.demo.predictions[0] };
    });
    ok = check(photo.inverted && Math.abs(photo.sum - 1) < 1e-4 && photo.label >= 0 && photo.label < 10, 'fashion classify', JSON.stringify(photo)) && ok;
    details.photo = { label: photo.label, sample_label: photo.first };

    // a dropped (picked) PNG: a screenshot of the first test image's canvas, through the file input
    const png = path.join(scratch, 'fashion_sample0.png');
    await (await page.$('.sample canvas')).screenshot({ path: png });
    const before = await page.$eval('#dropped-label', (e) => e.textContent);
    await page.evaluate(() => { document.getElementById('dropped-label').textContent = '…'; });
    await (await page.$('#file')).uploadFile(png);
    try {
      await page.waitForFunction(() => document.getElementById('dropped-label').textContent !== '…', { timeout: 10000 });
      details.picked = await page.$eval('#dropped-label', (e) => e.textContent);
    } catch { ok = false; fail('fashion file input', `no classification (was ${before})`); }
  }
  await finishDemo('fashion', page, errors, ok, details, failedRequests);
}

// ---- onnx ----------------------------------------------------------------------------------

async function testOnnx(base) {
  const { page, errors, failedRequests } = await openPage(`${base}demos/onnx/${demoQuery}`);
  let ok = check(await waitReady(page), 'onnx ready', 'the demo did not load (see its error box)');
  ok = await checkSimd(page, 'onnx') && ok;
  const details = {};
  if (ok) {
    let r;
    for (let i = 0; i < 3; ++i) r = await page.evaluate(() => window.demo.runOnce());
    details.median_ms = Number(r.median.toFixed(2));
    details.top5 = r.top5;
    details.threads = await page.$eval('#threads', (e) => e.textContent);
    ok = check(JSON.stringify(r.shape) === '[1,1000]', 'onnx output shape', JSON.stringify(r.shape)) && ok;
    ok = check(r.finite, 'onnx output finite', 'NaN or infinity in the logits') && ok;
    try {
      const { input, output } = await page.evaluate(() => ({ input: window.demo.input(), output: window.demo.lastOutput }));
      const file = writeJSON(path.join(scratch, 'onnx_input.json'), { shape: [1, 3, 224, 224], inputs: [input] });
      const native = reference(path.join(models, 'mobilenet_v2.onnx'), file).outputs[0];
      const scale = Math.max(1, ...native.map(Math.abs));
      const diff = maxAbsDiff(output, native);
      const tol = 1e-3 * scale;
      ok = check(diff <= tol, 'onnx native output', `max |page - native| ${diff} > ${tol}`) && ok;
      const nativeTop = Array.from(native.keys()).sort((a, b) => native[b] - native[a]).slice(0, 5);
      // the same top 5, but for near-ties (within the tolerance) that may swap
      const same = nativeTop.every((k, i) => k === r.top5[i] || Math.abs(native[k] - native[r.top5[i]]) <= tol);
      ok = check(same, 'onnx native top-5', `page ${r.top5}, native ${nativeTop}`) && ok;
      details.native_top5 = nativeTop;
      details.max_abs_diff = diff;
    } catch (e) { ok = false; fail('onnx native reference', e.message); }
  }
  await finishDemo('onnx', page, errors, ok, details, failedRequests);
}

// ---- bad input -----------------------------------------------------------------------------

// A minimal ONNX file (protobuf by hand) with one node of an op that no build has.
function unsupportedOpOnnx() {
  const varint = (n) => { const b = []; do { let x = n & 0x7f; n = Math.floor(n / 128); if (n) x |= 0x80; b.push(x); } while (n); return b; };
  const field = (no, type, payload) => [...varint((no << 3) | type), ...(type === 2 ? [...varint(payload.length), ...payload] : varint(payload))];
  const str = (s) => [...Buffer.from(s)];
  const valueInfo = (name) => field(1, 2, str(name)).concat(field(2, 2,             // name, type
    field(1, 2, field(1, 0, 1).concat(field(2, 2, field(1, 2, field(1, 0, 4)))))));  // tensor_type {f32, shape [4]}
  const node = field(1, 2, str('x')).concat(field(2, 2, str('y')), field(3, 2, str('n0')), field(4, 2, str('EmberNoSuchOp')));
  const graph = field(1, 2, node).concat(field(2, 2, str('g')), field(11, 2, valueInfo('x')), field(12, 2, valueInfo('y')));
  const model = field(1, 0, 8).concat(field(2, 2, str('browser.test')), field(7, 2, graph), field(8, 2, field(1, 2, []).concat(field(2, 0, 17))));
  return Buffer.from(model);
}

async function badInput(name, fn) {
  summary.bad_input += 1;
  try {
    const result = await fn();
    summary.bad_input_ok += 1;
    (summary.bad ??= {})[name] = result;
    log(`bad input ${name}: ok`);
  } catch (e) {
    (summary.bad ??= {})[name] = { error: e.message };
    fail(`bad input ${name}`, e.message);
  }
}

// The error box gets one more entry; its text.
async function newError(page, before, what) {
  try {
    await page.waitForFunction((n) => document.querySelectorAll('#errors .error').length > n, { timeout: 15000 }, before);
  } catch { throw new Error(`${what}: no error shown in the page`); }
  return (await errorBox(page)).at(-1);
}

async function testBadInput(base, unisolatedBase) {
  fs.mkdirSync(scratch, { recursive: true });
  // a model that is not there: the page loads, says so, and stays usable
  await badInput('missing_model', async () => {
    const { page } = await openPage(`${base}demos/onnx/?model=/models/does-not-exist.onnx`);
    const ready = await waitReady(page);
    if (ready) throw new Error('demo.ready was true for a missing model');
    const text = (await errorBox(page)).join(' | ');
    if (!/does-not-exist/.test(text)) throw new Error(`the error box does not name the file: ${text}`);
    await page.close();
    return { message: text };
  });

  const { page, errors, failedRequests } = await openPage(`${base}demos/onnx/`);
  if (!(await waitReady(page))) { fail('bad input', 'the onnx demo did not load'); await page.close(); return; }
  const stillWorks = async () => {
    const r = await page.evaluate(() => window.demo.runOnce());
    if (!r.finite || JSON.stringify(r.shape) !== '[1,1000]') throw new Error('the page no longer runs its model');
  };

  // a truncated model file, through the model file input
  await badInput('truncated_model', async () => {
    const file = path.join(scratch, 'truncated.onnx');
    fs.writeFileSync(file, fs.readFileSync(path.join(models, 'mobilenet_v2.onnx')).subarray(0, 200000));
    const before = (await errorBox(page)).length;
    await (await page.$('#model-file')).uploadFile(file);
    const message = await newError(page, before, 'a truncated model');
    await stillWorks();
    return { message };
  });

  // random bytes
  await badInput('corrupt_model', async () => {
    const file = path.join(scratch, 'corrupt.onnx');
    const bytes = Buffer.alloc(4096);
    for (let i = 0; i < bytes.length; ++i) bytes[i] = (i * 2654435761) >>> 24;
    fs.writeFileSync(file, bytes);
    const before = (await errorBox(page)).length;
    await (await page.$('#model-file')).uploadFile(file);
    const message = await newError(page, before, 'a corrupt model');
    await stillWorks();
    return { message };
  });

  // an op the build lacks
  await badInput('unsupported_op', async () => {
    const file = path.join(scratch, 'unsupported_op.onnx');
    fs.writeFileSync(file, unsupportedOpOnnx());
    const before = (await errorBox(page)).length;
    await (await page.$('#model-file')).uploadFile(file);
    const message = await newError(page, before, 'an unsupported op');
    if (!/EmberNoSuchOp/.test(message)) throw new Error(`the message does not name the op: ${message}`);
    return { message };
  });

  // an input of the wrong size (for the model that is loaded now, whichever it is)
  await badInput('wrong_size_input', async () => {
    const before = (await errorBox(page)).length;
    const r = await page.evaluate(() => window.demo.runRaw({ data: new Float32Array(3 * 100 * 100), shape: [1, 3, 100, 100] }));
    if (r.ok) throw new Error('a [1, 3, 100, 100] input ran');
    const message = await newError(page, before, 'a wrong-size input');
    return { message };
  });
  await page.screenshot({ path: path.join(shots, 'onnx-bad-input.png'), fullPage: true });
  const unexpected = errors.filter((e) => !/status of 404/.test(e));
  check(unexpected.length === 0, 'bad input console errors', JSON.stringify(unexpected));
  await page.close();

  // no SharedArrayBuffer: two threads asked for on a page that is not cross-origin isolated
  await badInput('no_shared_array_buffer', async () => {
    const { page: p, errors: errs } = await openPage(`${unisolatedBase}demos/onnx/?threads=2`);
    const ready = await waitReady(p);
    const said = (await notices(p)).join(' | ');
    await p.screenshot({ path: path.join(shots, 'onnx-no-isolation.png') });
    await p.close();
    if (!ready) throw new Error('the demo did not load without cross-origin isolation');
    if (!/SharedArrayBuffer/.test(said)) throw new Error(`no fallback notice in the page (notices: ${said || 'none'})`);
    if (errs.length) throw new Error(`console errors: ${errs.join('; ')}`);
    return { notice: said };
  });
}

// ---- main ----------------------------------------------------------------------------------

async function main() {
  fs.mkdirSync(scratch, { recursive: true });
  const base = await startServer();
  const unisolatedBase = wanted('bad') ? await startServer(['--no-isolation']) : null;
  log(`serving ${base}${unisolatedBase ? ` and ${unisolatedBase} (not isolated)` : ''}; reference ${referenceTool ?? 'missing'}`);
  browser = await puppeteer.launch({
    executablePath: chromiumPath,
    headless: !argv.includes('--headful'),
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  summary.chromium = (await browser.version()).replace(/^[^/]*\//, '');
  const run = async (name, fn) => {
    if (!wanted(name)) return;
    try { await fn(); } catch (e) {
      fail(name, e.stack ?? e.message);
      if (name !== 'bad') { summary.demos += 1; summary[name] = { ok: false, error: e.message }; }
    }
  };
  if (!only) {
    const { page, errors } = await openPage(base);
    const links = await page.$$eval('a[href^="demos/"]', (as) => as.map((a) => a.getAttribute('href')));
    summary.landing_ok = check(['demos/digits/', 'demos/fashion/', 'demos/onnx/'].every((l) => links.includes(l)) && !errors.length,
                               'landing page', `links ${links}, console errors ${errors}`);
    await page.close();
  }
  await run('digits', () => testDigits(base));
  await run('fashion', () => testFashion(base));
  await run('onnx', () => testOnnx(base));
  await run('bad', () => testBadInput(base, unisolatedBase));
}

const watchdog = setTimeout(() => { fail('browser test', 'timed out after 180 s'); finish(); }, 180000);
let finished = false;
async function finish() {
  if (finished) return;
  finished = true;
  clearTimeout(watchdog);
  await browser?.close().catch(() => {});
  for (const s of servers) s.kill();
  summary.failed = failures.length;
  summary.seconds = Number(((Date.now() - started) / 1000).toFixed(1));
  if (failures.length) summary.failures = failures;
  fs.mkdirSync(reports, { recursive: true });
  const line = JSON.stringify(summary);
  fs.writeFileSync(path.join(reports, 'web-demos.json'), line + '\n');
  console.log(line);
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => fail('browser test', e.stack ?? e.message)).finally(finish);
