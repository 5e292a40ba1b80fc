// The Fashion-MNIST classifier: the model ./demo.sh trains, on the test images of
// fashion_samples.json and on an image the user drops (or picks).
//
// For tests: window.demo = {ready, predictions: [argmax per sample], logits: [[10] per sample],
// labels, classify(imageData | canvas | image | 784 values) -> {label, name, probs}, toInput(...)}.
import { startEmber, showError, params, fetchJSON, Bars, softmax, argmax, drawGrey, decodeImage, acceptFiles } from '../common.mjs';

const MODEL_URL = params.get('model') ?? '/models/fashion_cnn.safetensors';
const SAMPLES_URL = params.get('samples') ?? '/models/fashion_samples.json';
const CLASSES = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'];
const SIZE = 28;

const demo = { ready: null, predictions: [], logits: [], labels: [], classify, toInput };
window.demo = demo;

let model = null;
const droppedBars = new Bars(document.getElementById('dropped-bars'), CLASSES);

const className = (label) => (typeof label === 'number' ? CLASSES[label] ?? String(label) : String(label));

async function logitsOf(input) {
  if (!model) throw new Error('the model is not loaded');
  const [out] = await model.run({ data: Float32Array.from(input), shape: [1, 1, SIZE, SIZE] });
  return Array.from(out.data);
}

// ---- an image -> 28x28 in the Fashion-MNIST style ------------------------------------------

function canvasOf(w, h) {
  const c = document.createElement('canvas');
  c.width = w;
  c.height = h;
  return c;
}

// Anything drawable (ImageData, canvas, ImageBitmap, <img>) -> 784 values in [0, 1], object bright
// on black: grey, inverted when the border is light, background stretched to 0, the object's
// bounding box scaled so its longer side is 28 pixels, centred.
function toInput(src) {
  if (src.length === SIZE * SIZE && !(src instanceof ImageData)) return Float32Array.from(src);
  const w = src.width, h = src.height;
  if (!w || !h) throw new Error('classify: an empty image');
  // at most 256 pixels a side is plenty for 28x28
  const k = Math.min(1, 256 / Math.max(w, h));
  const W = Math.max(1, Math.round(w * k)), H = Math.max(1, Math.round(h * k));
  const c = canvasOf(W, H);
  const cx = c.getContext('2d', { willReadFrequently: true });
  cx.fillStyle = '#fff';              // transparency is background
  cx.fillRect(0, 0, W, H);
  if (src instanceof ImageData) {
    const tmp = canvasOf(w, h);
    tmp.getContext('2d').putImageData(src, 0, 0);
    src = tmp;
  }
  cx.imageSmoothingQuality = 'high';
  cx.drawImage(src, 0, 0, W, H);
  const px = cx.getImageData(0, 0, W, H).data;
  const grey = new Float32Array(W * H);
  for (let i = 0; i < W * H; ++i) grey[i] = (0.299 * px[4 * i] + 0.587 * px[4 * i + 1] + 0.114 * px[4 * i + 2]) / 255;

  // the background: the border's median
  const border = [];
  for (let x = 0; x < W; ++x) border.push(grey[x], grey[(H - 1) * W + x]);
  for (let y = 0; y < H; ++y) border.push(grey[y * W], grey[y * W + W - 1]);
  border.sort((a, b) => a - b);
  let bg = border[border.length >> 1];
  const invert = bg > 0.5;
  if (invert) { for (let i = 0; i < grey.length; ++i) grey[i] = 1 - grey[i]; bg = 1 - bg; }
  let peak = 0;
  for (let i = 0; i < grey.length; ++i) { grey[i] = Math.max(0, grey[i] - bg); peak = Math.max(peak, grey[i]); }
  if (peak > 0) for (let i = 0; i < grey.length; ++i) grey[i] /= peak;

  // the object's bounding box
  let x0 = W, y0 = H, x1 = -1, y1 = -1;
  for (let y = 0; y < H; ++y) for (let x = 0; x < W; ++x) {
    if (grey[y * W + x] > 0.1) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
  }
  if (x1 < 0) { x0 = 0; y0 = 0; x1 = W - 1; y1 = H - 1; }
  const bw = x1 - x0 + 1, bh = y1 - y0 + 1;

  const g = canvasOf(W, H);
  const gx = g.getContext('2d');
  const img = gx.createImageData(W, H);
  for (let i = 0; i < W * H; ++i) {
    const v = Math.round(255 * grey[i]);
    img.data[4 * i] = img.data[4 * i + 1] = img.data[4 * i + 2] = v;
    img.data[4 * i + 3] = 255;
  }
  gx.putImageData(img, 0, 0);

  const out = canvasOf(SIZE, SIZE);
  const ox = out.getContext('2d', { willReadFrequently: true });
  ox.fillStyle = '#000';
  ox.fillRect(0, 0, SIZE, SIZE);
  const s = SIZE / Math.max(bw, bh);
  const dw = bw * s, dh = bh * s;
  ox.imageSmoothingQuality = 'high';
  ox.drawImage(g, x0, y0, bw, bh, (SIZE - dw) / 2, (SIZE - dh) / 2, dw, dh);
  const od = ox.getImageData(0, 0, SIZE, SIZE).data;
  const values = new Float32Array(SIZE * SIZE);
  for (let i = 0; i < values.length; ++i) values[i] = od[4 * i] / 255;
  values.inverted = invert;
  return values;
}

// Classifies an image (ImageData, canvas, ImageBitmap, <img>, or 784 values) and shows it; errors
// show in the page's error box, and reject.
async function classify(image) {
  try {
    return await classifyImage(image);
  } catch (e) {
    showError(e, 'classifying');
    throw e;
  }
}

async function classifyImage(image) {
  const input = toInput(image);
  const probs = softmax(await logitsOf(input));
  const label = argmax(probs);
  drawGrey(document.getElementById('dropped-input'), input, SIZE, SIZE);
  document.getElementById('dropped-label').textContent = CLASSES[label];
  droppedBars.update(probs);
  return { label, name: CLASSES[label], probs, input: Array.from(input), inverted: !!input.inverted };
}

acceptFiles(document.getElementById('drop'), document.getElementById('file'), async (file) => {
  const original = document.getElementById('dropped-original');
  if (original.src.startsWith('blob:')) URL.revokeObjectURL(original.src);
  original.src = URL.createObjectURL(file);
  original.hidden = false;
  const bitmap = await decodeImage(file).catch(() => { throw new Error(`${file.name}: not an image the browser can decode`); });
  await classifyImage(bitmap);   // acceptFiles shows its errors
});

// ---- the test images -----------------------------------------------------------------------

async function showSamples() {
  const samples = await fetchJSON(SAMPLES_URL);
  const shape = samples.shape ?? [1, 1, SIZE, SIZE];
  const n = shape.reduce((a, b) => a * b, 1);
  if (n !== SIZE * SIZE) throw new Error(`${SAMPLES_URL}: samples of shape [${shape}], the model takes [1, 1, 28, 28]`);
  const grid = document.getElementById('samples');
  demo.labels = samples.labels ?? [];
  let right = 0;
  for (let i = 0; i < samples.inputs.length; ++i) {
    const input = samples.inputs[i];
    const logits = await logitsOf(input);
    const pred = argmax(logits);
    demo.logits.push(logits);
    demo.predictions.push(pred);
    const truth = demo.labels[i];
    const ok = truth === undefined || truth === pred || truth === CLASSES[pred];
    if (ok) ++right;
    const card = document.createElement('div');
    card.className = 'sample' + (ok ? '' : ' wrong');
    const c = document.createElement('canvas');
    c.className = 'pixelated';
    drawGrey(c, input, SIZE, SIZE);
    const p = document.createElement('div');
    p.className = 'pred';
    p.textContent = `${CLASSES[pred]} ${ok ? '✓' : '✗'}`;
    const t = document.createElement('div');
    t.className = 'muted';
    t.textContent = truth === undefined ? '' : `true: ${className(truth)}`;
    card.append(c, p, t);
    grid.append(card);
  }
  document.getElementById('accuracy').textContent = `${right} / ${samples.inputs.length} right`;
}

demo.ready = (async () => {
  try {
    const ember = await startEmber();
    model = await ember.load(MODEL_URL, { name: MODEL_URL.split('/').pop() });
  } catch (e) {
    showError(e, `loading ${MODEL_URL}`);
    return false;
  }
  try {
    await showSamples();
    return true;
  } catch (e) {
    showError(e, `the test images (${SAMPLES_URL})`);
    return false;
  }
})();
