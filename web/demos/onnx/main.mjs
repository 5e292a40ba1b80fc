// ONNX inference: a torchvision model exported to ONNX (MobileNet-v2 by default, ?model=URL or a
// picked file), on a test pattern or a dropped image, with the per-inference time (the median of
// the last runs).
//
// For tests: window.demo = {ready, runOnce() -> {ms, median, top5, scores, shape, finite},
// runRaw({data, shape}), loadModel(urlOrBuffer, name), input(), lastOutput, info}.
import { startEmber, showError, params, softmax, topk, decodeImage, acceptFiles, errorText } from '../common.mjs';

const MODEL_URL = params.get('model') ?? '/models/mobilenet_v2.onnx';
const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];
const KEEP = 20;   // runs in the median

const canvas = document.getElementById('image');
const ctx = canvas.getContext('2d', { willReadFrequently: true });
const $ = (id) => document.getElementById(id);

const demo = { ready: null, runOnce, runRaw, loadModel, input: () => Array.from(input ?? []), lastOutput: null, info: null };
window.demo = demo;

let ember = null, model = null, input = null, inputShape = [1, 3, 224, 224];
let times = [];
let busy = Promise.resolve();

// One call into the worker at a time, in order (the buttons may be pressed while one runs).
function serial(fn) {
  const next = busy.then(fn, fn);
  busy = next.catch(() => {});
  return next;
}

// ---- the image -----------------------------------------------------------------------------

function drawTestPattern() {
  const w = canvas.width, h = canvas.height;
  const grad = ctx.createLinearGradient(0, 0, w, h);
  grad.addColorStop(0, '#1b4f9c');
  grad.addColorStop(0.5, '#e8c547');
  grad.addColorStop(1, '#b83a3a');
  ctx.fillStyle = grad;
  ctx.fillRect(0, 0, w, h);
  for (let i = 0; i < 8; ++i) {
    ctx.fillStyle = i % 2 ? '#ffffff' : '#202020';
    ctx.fillRect(i * (w / 8), h - 28, w / 8, 28);
  }
  ctx.fillStyle = '#2a9d57';
  ctx.beginPath();
  ctx.arc(w * 0.35, h * 0.4, w * 0.2, 0, 2 * Math.PI);
  ctx.fill();
  ctx.strokeStyle = '#fff';
  ctx.lineWidth = 6;
  ctx.strokeRect(w * 0.55, h * 0.2, w * 0.3, h * 0.35);
  prepareInput();
}

function drawImageCover(img) {
  const w = canvas.width, h = canvas.height;
  const s = Math.max(w / img.width, h / img.height);   // shorter side to the input's, centre-cropped
  const dw = img.width * s, dh = img.height * s;
  ctx.fillStyle = '#000';
  ctx.fillRect(0, 0, w, h);
  ctx.imageSmoothingQuality = 'high';
  ctx.drawImage(img, (w - dw) / 2, (h - dh) / 2, dw, dh);
  prepareInput();
}

// The canvas, normalised, as NCHW floats.
function prepareInput() {
  const [, c, h, w] = inputShape;
  const { data } = ctx.getImageData(0, 0, w, h);
  input = new Float32Array(c * h * w);
  for (let ch = 0; ch < c; ++ch) {
    const m = MEAN[ch] ?? 0.5, s = STD[ch] ?? 0.25;
    for (let i = 0; i < h * w; ++i) input[ch * h * w + i] = (data[4 * i + Math.min(ch, 2)] / 255 - m) / s;
  }
}

// ---- the model -----------------------------------------------------------------------------

function dims(shape) {
  return (shape ?? []).map((d) => (typeof d === 'number' && d > 0 ? d : null));
}

async function loadModel(source, name) {
  return serial(async () => {
    const old = model;
    model = null;
    $('model-name').textContent = `${name} (loading…)`;
    try {
      model = await ember.load(source, { name });
    } catch (e) {
      $('model-name').textContent = `${name} (failed)`;
      model = old;   // the page keeps the model it had
      if (old) $('model-name').textContent = `${name} failed; still running ${demo.info?.name ?? 'the previous model'}`;
      throw e;
    }
    try { old?.free?.(); } catch { /* already gone */ }
    const info = model.info ?? {};
    demo.info = { ...info, name };
    $('model-name').textContent = name;
    $('model-inputs').textContent = (info.inputs ?? []).map((i) => `${i.name} ${i.dtype ?? ''} [${(i.shape ?? []).join(', ')}]`).join('; ') || '?';
    $('model-outputs').textContent = (info.outputs ?? []).map((o) => o.name).join(', ') || '?';
    const shape = dims(info.inputs?.[0]?.shape);
    inputShape = [1, shape[1] ?? 3, shape[2] ?? 224, shape[3] ?? 224];
    if (canvas.width !== inputShape[3] || canvas.height !== inputShape[2]) {
      canvas.width = inputShape[3];
      canvas.height = inputShape[2];
      drawTestPattern();
    } else {
      prepareInput();
    }
    times = [];
    return demo.info;
  });
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

// One inference on the current image: its time, and the top 5 classes.
async function runOnce() {
  return serial(async () => {
    if (!model) throw new Error('no model is loaded');
    const t0 = performance.now();
    const outputs = await model.run({ data: input, shape: inputShape });
    const ms = performance.now() - t0;
    times.push(ms);
    if (times.length > KEEP) times.shift();
    const out = outputs[0];
    const logits = Array.from(out.data);
    const top5 = topk(logits, 5);
    const probs = softmax(logits);
    demo.lastOutput = logits;
    const med = median(times);
    $('timing').textContent = `${med.toFixed(1)} ms`;
    $('timing-detail').textContent = `per inference, median of the last ${times.length} run${times.length === 1 ? '' : 's'} (this one ${ms.toFixed(1)} ms)`;
    const rows = top5.map((i) => `<tr><td>${i}</td><td>${logits[i].toFixed(4)}</td><td>${probs[i].toFixed(4)}</td></tr>`);
    $('top5').innerHTML = '<tr><td class="muted">index</td><td class="muted">logit</td><td class="muted">softmax</td></tr>' + rows.join('');
    return { ms, median: med, top5, scores: top5.map((i) => logits[i]), shape: out.shape, finite: logits.every(Number.isFinite), name: out.name };
  });
}

// Runs on a given input (for tests of bad input): the error goes to the error box, and comes back.
async function runRaw({ data, shape }) {
  try {
    const outputs = await serial(() => model.run({ data: Float32Array.from(data), shape }));
    return { ok: true, shape: outputs[0]?.shape };
  } catch (e) {
    showError(e, 'running');
    return { ok: false, error: errorText(e) };
  }
}

// ---- the controls --------------------------------------------------------------------------

$('run').addEventListener('click', () => runOnce().catch((e) => showError(e, 'running')));
$('run10').addEventListener('click', async () => {
  try { for (let i = 0; i < 10; ++i) await runOnce(); } catch (e) { showError(e, 'running'); }
});
$('pattern').addEventListener('click', () => { drawTestPattern(); runOnce().catch((e) => showError(e, 'running')); });
acceptFiles($('drop'), $('image-file'), async (file) => {
  drawImageCover(await decodeImage(file).catch(() => { throw new Error(`${file.name}: not an image the browser can decode`); }));
  await runOnce();
});
acceptFiles(null, $('model-file'), async (file) => {
  await loadModel(await file.arrayBuffer(), file.name);
  await runOnce();
});

demo.ready = (async () => {
  drawTestPattern();
  try {
    ember = await startEmber();
    const info = ember.info ?? {};
    $('threads').textContent = `${info.threads ?? 1}` + (info.threaded ? ' (pthreads)' : ' (single-threaded build)') +
      (info.fallback ? ' — fell back to one thread (see the notice)' : '');
    await loadModel(MODEL_URL, MODEL_URL.split('/').pop());
    await runOnce();
    times = [];   // the first run is a warm-up: the median is of the runs after it
    $('timing-detail').textContent += ' (warm-up)';
    return true;
  } catch (e) {
    showError(e, `loading ${MODEL_URL}`);
    return false;
  }
})();
