// What the demo pages share: starting ember (web/ember.js), the error box, notices, probability
// bars. Every failure lands in the page's #errors box (and console.warn), never only in the
// console, and never stops the page: the demos catch around each load and run.
//
//   import { startEmber, showError, Bars, softmax } from '../common.mjs';
//   const ember = await startEmber();          // shows threads / fallback in the header
//   try { ... } catch (e) { showError(e, 'loading the model'); }

export const params = new URLSearchParams(location.search);

let emberModule = null;

// Imported at run time, so that a missing or broken ember.js is an error in the page, not a
// module graph that silently never runs.
export async function emberApi() {
  if (!emberModule) emberModule = await import('../ember.js');
  return emberModule;
}

function box(id) {
  let el = document.getElementById(id);
  if (!el) {
    el = document.createElement('div');
    el.id = id;
    (document.querySelector('main') ?? document.body).prepend(el);
  }
  return el;
}

// The text of an error: EmberError and Error carry ember's message; anything else is stringified.
export function errorText(err) {
  if (err == null) return 'unknown error';
  if (typeof err === 'string') return err;
  if (err.message) return err.message;
  try { return JSON.stringify(err); } catch { return String(err); }
}

export function showError(err, context = '') {
  const el = box('errors');
  el.classList.add('visible');
  const div = document.createElement('div');
  div.className = 'error';
  div.setAttribute('role', 'alert');
  const close = document.createElement('button');
  close.textContent = '×';
  close.title = 'dismiss';
  close.onclick = () => { div.remove(); if (!el.children.length) el.classList.remove('visible'); };
  const kind = document.createElement('b');
  kind.textContent = (err && err.name && err.name !== 'Error' ? err.name : 'Error') + (context ? ` (${context}):` : ':');
  const message = document.createElement('span');
  message.className = 'message';
  message.textContent = errorText(err);
  div.append(close, kind, message);
  el.append(div);
  // a warning, not console.error: the page handled it (the browser tests read console errors as bugs)
  console.warn(`[ember demo] ${context ? context + ': ' : ''}${errorText(err)}`);
  return div;
}

export function clearErrors() {
  const el = document.getElementById('errors');
  if (el) { el.replaceChildren(); el.classList.remove('visible'); }
}

export function showNotice(text) {
  const div = document.createElement('div');
  div.className = 'notice';
  div.textContent = text;
  box('notices').append(div);
  return div;
}

export function setStatus(text) {
  const el = document.getElementById('status');
  if (el) el.textContent = text;
}

// Anything that escapes a handler still reaches the error box.
window.addEventListener('error', (e) => showError(e.error ?? e.message, 'uncaught'));
window.addEventListener('unhandledrejection', (e) => { e.preventDefault(); showError(e.reason, 'unhandled'); });

// Starts ember: threads from ?threads=N (default 'auto'); says so when it fell back to one thread
// (no SharedArrayBuffer: the page is not cross-origin isolated).
export async function startEmber() {
  setStatus('starting ember…');
  const { Ember } = await emberApi();
  const threads = params.get('threads') ?? 'auto';
  const ember = await Ember.create({ threads: /^\d+$/.test(threads) ? Number(threads) : threads });
  const info = ember.info ?? {};
  setStatus(`ember ${info.version ?? ''} · ${info.threads ?? 1} thread${info.threads === 1 ? '' : 's'}` +
            (info.threaded ? ' (pthreads build)' : ' (single-threaded build)') +
            (info.simd === 'relaxed' ? ' · relaxed SIMD' : ''));
  if (info.fallback) {
    const why = typeof info.fallback === 'string' ? info.fallback
      : 'SharedArrayBuffer is not available (the page is not cross-origin isolated)';
    showNotice(`Running on one thread: ${why}` + (/COOP|cross-origin/i.test(why) ? ''
      : '. Serve the page with the COOP/COEP headers (web/serve.sh does) for the multi-threaded build.'));
  }
  return ember;
}

export async function fetchJSON(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status} ${r.statusText}`);
  return r.json();
}

export function softmax(logits) {
  const max = Math.max(...logits);
  const e = Array.from(logits, (v) => Math.exp(v - max));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / sum);
}

export function argmax(values) {
  let best = 0;
  for (let i = 1; i < values.length; ++i) if (values[i] > values[best]) best = i;
  return best;
}

// Indices of the k largest values, largest first.
export function topk(values, k) {
  return Array.from(values.keys()).sort((a, b) => values[b] - values[a] || a - b).slice(0, k);
}

// A column of labelled probability bars.
export class Bars {
  constructor(container, labels) {
    this.rows = labels.map((label) => {
      const name = document.createElement('div');
      name.className = 'label';
      name.textContent = label;
      const bar = document.createElement('div');
      bar.className = 'bar';
      const fill = document.createElement('div');
      bar.append(fill);
      const value = document.createElement('div');
      value.className = 'value';
      value.textContent = '–';
      container.append(name, bar, value);
      return { bar, fill, value };
    });
  }
  update(probs) {
    const best = probs ? argmax(probs) : -1;
    this.rows.forEach((row, i) => {
      const p = probs ? probs[i] : 0;
      row.fill.style.width = `${(100 * p).toFixed(1)}%`;
      row.value.textContent = probs ? p.toFixed(3) : '–';
      row.bar.classList.toggle('best', i === best);
    });
  }
}

// Draws grey values (row-major, [0, 1], 1 = white) into a canvas of width x height.
export function drawGrey(canvas, values, width, height) {
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(width, height);
  for (let i = 0; i < width * height; ++i) {
    const v = Math.round(255 * Math.min(1, Math.max(0, values[i])));
    img.data[4 * i] = img.data[4 * i + 1] = img.data[4 * i + 2] = v;
    img.data[4 * i + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
}

// Loads an image File (or Blob) into an ImageBitmap-like drawable.
export async function decodeImage(file) {
  if (typeof createImageBitmap === 'function') return createImageBitmap(file);
  const url = URL.createObjectURL(file);
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    return img;
  } finally { URL.revokeObjectURL(url); }
}

// Wires a drop zone and a file input to onFile(file).
export function acceptFiles(dropZone, fileInput, onFile) {
  const take = (file) => { if (file) Promise.resolve(onFile(file)).catch((e) => showError(e, file.name)); };
  fileInput?.addEventListener('change', () => { take(fileInput.files[0]); fileInput.value = ''; });
  if (!dropZone) return;
  dropZone.addEventListener('dragover', (e) => { e.preventDefault(); dropZone.classList.add('over'); });
  dropZone.addEventListener('dragleave', () => dropZone.classList.remove('over'));
  dropZone.addEventListener('drop', (e) => {
    e.preventDefault();
    dropZone.classList.remove('over');
    take(e.dataTransfer.files[0]);
  });
}
