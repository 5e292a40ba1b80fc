// The digit recogniser: what the user draws is turned into an 8x8 image the way UCI's digits were
// made (the NIST bitmaps: the digit fitted to a 32x32 box, aspect ratio kept and centred; each 8x8
// pixel the ink in a 4x4 block, here scaled from 0..16 to [0, 1], bright ink on black) and run
// through the digits CNN as the user draws (at most every 50 ms, and on pointerup).
//
// For tests: window.demo = {ready, predictPixels(arr64) -> {label, probs}, lastInput,
// lastPrediction, settled(), clear(), runs}.
import { startEmber, showError, params, Bars, softmax, argmax, drawGrey } from '../common.mjs';

const MODEL_URL = params.get('model') ?? '/models/digits_cnn.safetensors';
const THROTTLE_MS = 50;
const BOX = 32;          // the NIST bitmap
const INK_WIDTH = Number(params.get('ink')) || 4.5;   // stroke width in the 32x32 box, about that of the dataset's bitmaps (?ink=W)
const PAD_INK_WIDTH = 18;

const pad = document.getElementById('pad');
const ctx = pad.getContext('2d');
const preview = document.getElementById('preview');
const labelEl = document.getElementById('label');
const timingEl = document.getElementById('timing');
const bars = new Bars(document.getElementById('bars'), [...'0123456789']);

const demo = {
  ready: null,
  lastInput: null,        // the 64 values last fed to the model (row-major, [0, 1])
  lastPrediction: null,   // {label, probs}
  runs: 0,
  predictPixels,
  settled,
  clear,
  toPixels: (strokes) => Array.from(rasterize(strokes)),
};
window.demo = demo;

let model = null;

// ---- the drawing ---------------------------------------------------------------------------

let strokes = [];     // [[{x, y}, ...], ...] in pad pixels
let current = null;
let generation = 0;   // bumped by clear(): a prediction begun before it is not shown

function clearPad() {
  ctx.fillStyle = '#000';
  ctx.fillRect(0, 0, pad.width, pad.height);
}

function padPoint(e) {
  const r = pad.getBoundingClientRect();
  return { x: (e.clientX - r.left) * (pad.width / r.width), y: (e.clientY - r.top) * (pad.height / r.height) };
}

function drawSegment(a, b) {
  ctx.strokeStyle = '#fff';
  ctx.fillStyle = '#fff';
  ctx.lineWidth = PAD_INK_WIDTH;
  ctx.lineCap = 'round';
  ctx.lineJoin = 'round';
  ctx.beginPath();
  if (a === b) {
    ctx.arc(a.x, a.y, PAD_INK_WIDTH / 2, 0, 2 * Math.PI);
    ctx.fill();
  } else {
    ctx.moveTo(a.x, a.y);
    ctx.lineTo(b.x, b.y);
    ctx.stroke();
  }
}

pad.addEventListener('pointerdown', (e) => {
  if (e.button !== 0 && e.pointerType === 'mouse') return;
  e.preventDefault();
  pad.setPointerCapture?.(e.pointerId);
  const p = padPoint(e);
  current = [p];
  strokes.push(current);
  drawSegment(p, p);
  request();
});

pad.addEventListener('pointermove', (e) => {
  if (!current) return;
  e.preventDefault();
  const events = e.getCoalescedEvents?.().length ? e.getCoalescedEvents() : [e];
  for (const ev of events) {
    const p = padPoint(ev);
    drawSegment(current[current.length - 1], p);
    current.push(p);
  }
  request();
});

function endStroke(e) {
  if (!current) return;
  current = null;
  pad.releasePointerCapture?.(e.pointerId);
  request(true);
}
pad.addEventListener('pointerup', endStroke);
pad.addEventListener('pointercancel', endStroke);

// ---- the dataset's 8x8 ---------------------------------------------------------------------

const box = document.createElement('canvas');
box.width = box.height = BOX;
const boxCtx = box.getContext('2d', { willReadFrequently: true });

// The strokes fitted to the 32x32 box (longer side filling it, centred), drawn bright on black,
// then each 4x4 block's mean ink: 64 values in [0, 1].
function rasterize(strokeList) {
  const out = new Float32Array(64);
  const points = strokeList.flat();
  if (!points.length) return out;
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const p of points) {
    minX = Math.min(minX, p.x); maxX = Math.max(maxX, p.x);
    minY = Math.min(minY, p.y); maxY = Math.max(maxY, p.y);
  }
  // a dot or a tiny scribble is not blown up to the whole box
  const extent = Math.max(maxX - minX, maxY - minY, pad.width / 8);
  const scale = (BOX - INK_WIDTH) / extent;
  const cx = (minX + maxX) / 2, cy = (minY + maxY) / 2;
  const map = (p) => ({ x: BOX / 2 + (p.x - cx) * scale, y: BOX / 2 + (p.y - cy) * scale });

  boxCtx.setTransform(1, 0, 0, 1, 0, 0);
  boxCtx.fillStyle = '#000';
  boxCtx.fillRect(0, 0, BOX, BOX);
  boxCtx.strokeStyle = boxCtx.fillStyle = '#fff';
  boxCtx.lineWidth = INK_WIDTH;
  boxCtx.lineCap = 'round';
  boxCtx.lineJoin = 'round';
  for (const s of strokeList) {
    if (!s.length) continue;
    const first = map(s[0]);
    boxCtx.beginPath();
    if (s.length === 1) {
      boxCtx.arc(first.x, first.y, INK_WIDTH / 2, 0, 2 * Math.PI);
      boxCtx.fill();
      continue;
    }
    boxCtx.moveTo(first.x, first.y);
    for (let i = 1; i < s.length; ++i) { const q = map(s[i]); boxCtx.lineTo(q.x, q.y); }
    boxCtx.stroke();
  }
  const { data } = boxCtx.getImageData(0, 0, BOX, BOX);
  for (let y = 0; y < BOX; ++y) {
    for (let x = 0; x < BOX; ++x) out[(y >> 2) * 8 + (x >> 2)] += data[4 * (y * BOX + x)] / 255;
  }
  for (let i = 0; i < 64; ++i) out[i] = Math.min(1, out[i] / 16);
  return out;
}

// ---- inference -----------------------------------------------------------------------------

async function infer(pixels) {
  if (!model) throw new Error('the model is not loaded');
  const data = Float32Array.from(pixels);
  if (data.length !== 64) throw new Error(`predictPixels: expected 64 values (8x8), got ${data.length}`);
  const t0 = performance.now();
  const [out] = await model.run({ data, shape: [1, 1, 8, 8] });
  const ms = performance.now() - t0;
  const probs = softmax(Array.from(out.data));
  ++demo.runs;
  return { input: Array.from(data), prediction: { label: argmax(probs), probs }, ms };
}

function show({ input, prediction, ms }) {
  demo.lastInput = input;
  demo.lastPrediction = prediction;
  drawGrey(preview, input, 8, 8);
  labelEl.textContent = String(prediction.label);
  bars.update(prediction.probs);
  timingEl.textContent = `inference ${ms.toFixed(1)} ms`;
}

// Runs the model on 64 values (an 8x8 image, row-major, [0, 1]); shows and returns the prediction.
// Errors show in the page's error box, and reject.
async function predictPixels(arr64) {
  try {
    const result = await infer(arr64);
    show(result);
    return result.prediction;
  } catch (e) {
    showError(e, 'predictPixels');
    throw e;
  }
}

// As the user draws: one inference at a time, at most every THROTTLE_MS, the last drawing always run.
let running = false, dirty = false, timer = null, lastStart = -Infinity;
let waiters = [];

function idle() { return !running && !dirty && !timer; }

function settled() {
  return idle() ? Promise.resolve(demo.lastPrediction) : new Promise((resolve) => waiters.push(resolve));
}

function wake() {
  if (!idle()) return;
  const w = waiters;
  waiters = [];
  for (const resolve of w) resolve(demo.lastPrediction);
}

function request(now = false) {
  if (!model || !strokes.length) return;
  dirty = true;
  if (running) return;
  const wait = now ? 0 : THROTTLE_MS - (performance.now() - lastStart);
  if (timer && (now || wait <= 0)) { clearTimeout(timer); timer = null; }
  if (timer) return;
  if (wait > 0) timer = setTimeout(() => { timer = null; pump(); }, wait);
  else pump();
}

async function pump() {
  if (running || !dirty) { wake(); return; }
  dirty = false;
  running = true;
  lastStart = performance.now();
  const gen = generation;
  try {
    const result = await infer(rasterize(strokes));
    if (gen === generation) show(result);
  } catch (e) {
    showError(e, 'predicting');
  } finally {
    running = false;
  }
  if (dirty && strokes.length) request();
  else { dirty = false; wake(); }
}

function clear() {
  ++generation;
  strokes = [];
  current = null;
  dirty = false;
  if (timer) { clearTimeout(timer); timer = null; }
  clearPad();
  drawGrey(preview, new Float32Array(64), 8, 8);
  labelEl.textContent = '–';
  bars.update(null);
  timingEl.textContent = '';
  demo.lastPrediction = null;
  demo.lastInput = null;
  wake();
}

document.getElementById('clear').addEventListener('click', clear);
clearPad();
drawGrey(preview, new Float32Array(64), 8, 8);

// ---- start ---------------------------------------------------------------------------------

demo.ready = (async () => {
  try {
    const ember = await startEmber();
    model = await ember.load(MODEL_URL, { name: MODEL_URL.split('/').pop() });
    document.getElementById('model-name').textContent =
      `${MODEL_URL.split('/').pop()} (${model.info?.arch || model.info?.kind || 'model'})`;
    if (strokes.length) request(true);   // drawn while it loaded
    return true;
  } catch (e) {
    showError(e, `loading ${MODEL_URL}`);
    return false;
  }
})();
