// A headless-Chromium test of web/ember.js (issue 32): serves the repository with web/serve.mjs,
// opens web/tests/api.html and checks what it found: a model loads from a URL and from bytes, runs
// to a [1,1000] output of finite values, and every bad input (corrupt or truncated bytes, an
// unsupported op, a 404, a wrong shape or dtype) rejects with ember's message while the worker
// keeps serving; then, served without COOP/COEP, that asking for threads falls back to one thread
// and says why. On one thread it must run ember-relaxed.wasm where the build has it (Chromium has
// relaxed SIMD; its output must agree with ember.wasm's to f32 tolerance, and differ) and
// ember.wasm from a dist without it; the same for the pthreads build (build-wasm-threads/web's
// ember-relaxed.wasm where it is there, agreeing with and differing from that build's ember.wasm,
// and its ember.wasm from a dist-threads without it). Fails on any console error in the page or
// its workers.
//
//   node web/tests/api.test.mjs [--model PATH.onnx] [--threads N|auto] [--chromium PATH]
//   (EMBER_WEB_TEST_VERBOSE=1 lists each check on stderr)
//
// The model (default: build/web-models/mobilenet_v2.onnx, else /tmp/models/mobilenet_v2.onnx, or
// $EMBER_WEB_TEST_MODEL) must take one f32 input [1,3,224,224] and give [1,1000]; it is copied into
// build/web-models/. Prints one line of JSON; exits 1 on failure.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const web = path.dirname(here);
const repo = path.dirname(web);
const started = Date.now();

function parseArgs(argv) {
  const options = {
    model: process.env.EMBER_WEB_TEST_MODEL,
    // threads: 'auto' where the pthreads build is there (the isolated page then runs it), else 1
    threads: fs.existsSync(path.join(repo, 'build-wasm-threads', 'web', 'ember.mjs')) ? 'auto' : '1',
    chromium: process.env.CHROMIUM ?? '/usr/bin/chromium',
  };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === '--model') options.model = argv[++i];
    else if (argv[i] === '--threads') options.threads = argv[++i];
    else if (argv[i] === '--chromium') options.chromium = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!options.model) {
    options.model = [path.join(repo, 'build', 'web-models', 'mobilenet_v2.onnx'), '/tmp/models/mobilenet_v2.onnx']
      .find((p) => fs.existsSync(p));
  }
  if (!options.model || !fs.existsSync(options.model)) throw new Error(`no test model (--model PATH): ${options.model}`);
  return options;
}

// Starts web/serve.mjs on a free port; resolves to {url, stop}.
function serve(extra = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(web, 'serve.mjs'), '--port', '0', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve.mjs did not start: ${out}`)), 10000);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/http:\/\/[^/\s]+\//);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[0], stop: () => child.kill() });
      }
    });
    child.stderr.on('data', (chunk) => { out += chunk; });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`serve.mjs exited (${code}): ${out}`)); });
  });
}

// Opens the test page; returns {state, consoleErrors}. `expected404` lists URL parts whose 404s the
// page provokes on purpose (Chromium logs them as console errors).
async function runPage(browser, url, expected404 = []) {
  const page = await browser.newPage();
  const consoleErrors = [];
  const watch = (where) => (msg) => {
    if (msg.type() !== 'error') return;
    const text = msg.text();
    const at = msg.location()?.url ?? '';
    if (/status of 404/.test(text) && expected404.some((part) => at.includes(part) || text.includes(part))) return;
    consoleErrors.push(`${where}: ${text}${at ? ` (${at})` : ''}`);
  };
  page.on('console', watch('page'));
  page.on('pageerror', (e) => consoleErrors.push(`page: uncaught ${e.message}`));
  page.on('workercreated', (worker) => worker.on('console', watch(`worker ${worker.url().split('/').pop()}`)));
  await page.goto(url);
  await page.waitForFunction('window.emberTest && window.emberTest.done', { timeout: 60000, polling: 100 });
  const state = await page.evaluate(() => window.emberTest);
  await page.close();
  return { state, consoleErrors };
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const models = path.join(repo, 'build', 'web-models');
  fs.mkdirSync(models, { recursive: true });
  const modelName = path.basename(options.model);
  const target = path.join(models, modelName);
  if (path.resolve(options.model) !== target) fs.copyFileSync(options.model, target);

  const { default: puppeteer } = await import(path.join(web, 'node_modules', 'puppeteer-core', 'lib', 'esm', 'puppeteer', 'puppeteer-core.js'));
  const browser = await puppeteer.launch({ executablePath: options.chromium, headless: true, args: ['--no-sandbox'] });
  const servers = [];
  const summary = { test: 'web/api', ok: false, chromium: await browser.version(), checks: 0, failed: [], console_errors: [] };
  try {
    const threadedBuild = fs.existsSync(path.join(repo, 'build-wasm-threads', 'web', 'ember.mjs'));
    const expectThreaded = threadedBuild && options.threads !== '1' && os.availableParallelism() > 1 ? 1 : 0;
    // Chromium 114 and later has relaxed SIMD: the worker must pick ember-relaxed.wasm where it is
    const relaxedBuild = fs.existsSync(path.join(repo, 'build-wasm', 'web', 'ember-relaxed.wasm'));
    const expectSimd = relaxedBuild ? 'relaxed' : 'simd128';
    // and the pthreads build's twin, ember-relaxed.wasm in build-wasm-threads/web
    const threadsDist = path.join(repo, 'build-wasm-threads', 'web');
    const threadedRelaxed = threadedBuild && fs.existsSync(path.join(threadsDist, 'ember-relaxed.wasm'));
    const expectThreadedSimd = threadedRelaxed ? 'relaxed' : 'simd128';
    const isolated = await serve();
    servers.push(isolated);
    const full = await runPage(browser,
      `${isolated.url}tests/api.html?mode=full&threads=${options.threads}&expectThreaded=${expectThreaded}&expectSimd=${expectSimd}` +
      `&expectThreadedSimd=${expectThreadedSimd}&model=/models/${encodeURIComponent(modelName)}`,
      // without the pthreads build, asking for threads probes /dist-threads/ and falls back; without
      // its relaxed-SIMD module, the look for it is one 404
      ['/no-such-', ...(threadedBuild ? [] : ['/dist-threads/']), ...(threadedBuild && !threadedRelaxed ? ['/dist-threads/ember-relaxed.wasm'] : [])]);
    const fallbackServer = await serve(['--no-isolation']);
    servers.push(fallbackServer);
    const fallback = await runPage(browser, `${fallbackServer.url}tests/api.html?mode=fallback&threads=4&expectSimd=${expectSimd}`);
    // a dist without ember-relaxed.*: the worker takes ember.mjs (the HEAD of ember-relaxed.wasm
    // is the one 404)
    let plain = { state: { checks: [] }, consoleErrors: [] };
    if (relaxedBuild) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ember-dist-'));
      for (const f of ['ember.mjs', 'ember.wasm']) fs.copyFileSync(path.join(repo, 'build-wasm', 'web', f), path.join(dir, f));
      const plainServer = await serve(['--no-isolation', '--dist', dir]);
      servers.push(plainServer);
      plain = await runPage(browser, `${plainServer.url}tests/api.html?mode=fallback&threads=4&expectSimd=simd128`,
                            ['ember-relaxed.wasm']);
      fs.rmSync(dir, { recursive: true, force: true });
    }

    // a dist-threads without ember-relaxed.*: the isolated page runs the pthreads build's ember.wasm
    let plainThreads = { state: { checks: [] }, consoleErrors: [] };
    if (threadedRelaxed && expectThreaded) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ember-dist-threads-'));
      for (const f of ['ember.mjs', 'ember.wasm', 'ember.worker.js']) fs.copyFileSync(path.join(threadsDist, f), path.join(dir, f));
      const plainServer = await serve(['--dist-threads', dir]);
      servers.push(plainServer);
      plainThreads = await runPage(browser,
        `${plainServer.url}tests/api.html?mode=module&threads=${options.threads}&expectThreaded=1&expectThreadedSimd=simd128` +
        `&model=/models/${encodeURIComponent(modelName)}`, ['ember-relaxed.wasm']);
      fs.rmSync(dir, { recursive: true, force: true });
    }

    const checks = [...full.state.checks, ...fallback.state.checks.map((c) => ({ ...c, name: `fallback: ${c.name}` })),
                    ...plain.state.checks.map((c) => ({ ...c, name: `no relaxed build: ${c.name}` })),
                    ...plainThreads.state.checks.map((c) => ({ ...c, name: `no threaded relaxed build: ${c.name}` }))];
    summary.checks = checks.length;
    summary.failed = checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
    summary.console_errors = [...full.consoleErrors, ...fallback.consoleErrors, ...plain.consoleErrors,
                              ...plainThreads.consoleErrors];
    summary.info = full.state.info;
    summary.fallback = fallback.state.info?.fallback ?? null;
    const timing = (name) => full.state.checks.find((c) => c.name === name)?.detail.match(/^(\d+) ms/)?.[1];
    summary.run_ms = Number(timing('run: [1,1000], finite') ?? NaN);
    summary.ok = summary.failed.length === 0 && summary.console_errors.length === 0 && checks.length > 0;
    if (process.env.EMBER_WEB_TEST_VERBOSE) for (const c of checks) console.error(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`);
  } finally {
    for (const s of servers) s.stop();
    await browser.close();
  }
  summary.seconds = Number(((Date.now() - started) / 1000).toFixed(1));
  console.log(JSON.stringify(summary));
  process.exit(summary.ok ? 0 : 1);
}

main().catch((e) => {
  console.log(JSON.stringify({ test: 'web/api', ok: false, error: String(e && e.stack ? e.stack : e) }));
  process.exit(1);
});
