// Loads the page's WebAssembly and starts it. A file of its own (not an inline script) so the
// Content-Security-Policy can forbid inline scripts.
import init, { start } from './memviz-web.js';

/** From here on the page may not open any connection: the second policy is enforced on top of
 * the first one, whose `connect-src 'self'` only lets the WebAssembly module itself be fetched. */
function forbidConnections() {
  const meta = document.createElement('meta');
  meta.httpEquiv = 'Content-Security-Policy';
  meta.content = "connect-src 'none'";
  document.head.appendChild(meta);
}

/** The page's WebAssembly, compiled once: the page and every loading worker instantiate it. */
async function compileWasm() {
  const response = await fetch(new URL('./memviz-web_bg.wasm', import.meta.url));
  if (!response.ok) throw new Error(`its WebAssembly could not be fetched (${response.status})`);
  if (WebAssembly.compileStreaming && response.headers.get('Content-Type') === 'application/wasm') {
    return WebAssembly.compileStreaming(response);
  }
  return WebAssembly.compile(await response.arrayBuffer());
}

const workerUrl = new URL('./worker.js', import.meta.url);

/** Starts a loading worker and has it instantiate the WebAssembly now, before any file comes. */
function spawnLoader(module) {
  try {
    const worker = new Worker(workerUrl, { type: 'module' });
    worker.broken = false;
    worker.onerror = (e) => {
      e.preventDefault();
      worker.broken = true;
    };
    worker.postMessage({ module });
    return worker;
  } catch {
    return null;
  }
}

/** Bytes of one slice of a file sent to a worker (crates/web/src/model.rs, CHUNK_BYTES). */
const SLICE_BYTES = 8 << 20;
/** Slices read ahead of what the worker has decoded. */
const SLICES_AHEAD = 3;

/**
 * Reads `file` front to back into buffers the caller gives: `read(buf, offset)` fills all of
 * `buf` with the bytes at `offset` (the offsets follow each other) and resolves to the filled
 * buffer (the same memory, in a new ArrayBuffer object); `cancel()` stops reading. Where the
 * browser's Blob streams take buffers of the reader's own (BYOB), nothing is allocated per read;
 * elsewhere each slice is read with Blob.arrayBuffer().
 */
function sliceReader(file) {
  let reader = null;
  try {
    reader = file.stream().getReader({ mode: 'byob' });
  } catch {
    reader = null;
  }
  if (!reader) {
    return {
      read: async (buf, offset) => {
        const b = await file.slice(offset, offset + buf.byteLength).arrayBuffer();
        if (b.byteLength !== buf.byteLength) throw new Error('the file changed while it was read');
        return b;
      },
      cancel() {},
    };
  }
  return {
    read: async (buf, offset) => {
      let at = 0;
      let b = buf;
      while (at < b.byteLength) {
        const { done, value } = await reader.read(new Uint8Array(b, at, b.byteLength - at));
        if (done) throw new Error(`the file ended at ${offset + at} bytes, before its size: it changed while it was read`);
        b = value.buffer;
        at += value.byteLength;
      }
      return b;
    },
    cancel() {
      reader.cancel().catch(() => {});
    },
  };
}

/** A worker started ahead of the next load. */
let spare = null;

/** When the page last had input (performance.now() ms). */
let lastInputMs = 0;
for (const type of ['pointerdown', 'pointermove', 'wheel', 'keydown']) {
  window.addEventListener(type, () => { lastInputMs = performance.now(); }, { capture: true, passive: true });
}

/** How long a finished worker is kept: until the page has had no input for IDLE_MS, at least
 * MIN_MS and at most MAX_MS after the page has shown the file (shown()). Ending a worker frees
 * its memory, and freeing a gigabyte holds the process's memory map locked for 50-120 ms: the
 * page's thread waits for it in its next mmap or mprotect (a growing heap, a new buffer), so if
 * the page is busy then (copying the model in, a zoom's exact frame) that becomes a long task.
 * The worker is ended while the user is not doing anything. */
const END_IDLE_MS = 1000;
/** A worker whose load is done but which the page never said it has shown is ended this long
 * after its last answer. */
const END_UNSHOWN_MS = 30000;
const END_MIN_MS = 500;
const END_MAX_MS = 10000;

/** Calls `end` once the page is idle (see END_IDLE_MS). */
function endWhenIdle(end) {
  const since = performance.now();
  const check = () => {
    const now = performance.now();
    if (now - since >= END_MAX_MS || (now - since >= END_MIN_MS && now - lastInputMs >= END_IDLE_MS)) end();
    else setTimeout(check, 200);
  };
  setTimeout(check, END_MIN_MS);
}

const unavailable = (why) => Object.assign(new Error(why), { workerUnavailable: true });

/**
 * Loads a File in a Web Worker (crates/web/src/worker.rs says what it sends). Returns
 * `{ next, cancel, shown }`: `next()` resolves to the next of the worker's answers as it comes, so the
 * page copies the model in while the worker still works: `{ kind: 'head', bytes, group, field,
 * parts }` (one message of a value, with the parts it needs), `{ kind: 'model-end' }` (the
 * model is complete; the plot follows), `{ kind: 'done' }` (the last), or `{ kind: 'profile' }`;
 * it rejects with an Error whose message is for the user, or with `workerUnavailable` set when
 * no worker could run (the page then loads on its main thread). `onProgress(readBytes, phase)`
 * is called as the worker goes. `shown()` says that the page has shown what it loaded: the worker
 * is then ended once the page is idle (END_IDLE_MS). Each worker loads one file; the next one is
 * started when it ends.
 */
function loadInWorker(module, file, request, onProgress) {
  let worker = spare && !spare.broken ? spare : spawnLoader(module);
  spare = null;
  if (!worker) {
    return { next: () => Promise.reject(unavailable('this browser cannot start a worker')), cancel() {} };
  }
  // Answers not yet taken, and the page's wait for the next one.
  const queue = [];
  let waiting = null;
  let failure = null;
  let ended = false;
  // The file's reader and the buffers it reads into (see below).
  const slices = sliceReader(file);
  const free = [];
  const push = (answer) => {
    if (waiting) {
      const w = waiting;
      waiting = null;
      w.resolve(answer);
    } else queue.push(answer);
  };
  const next = () => {
    if (queue.length) return Promise.resolve(queue.shift());
    if (failure) return Promise.reject(failure);
    return new Promise((resolve, reject) => { waiting = { resolve, reject }; });
  };
  // Ends the worker: at once when the load failed or was cancelled; when the load is done, once
  // the page has shown it (shown()) and had no input for a while (endWhenIdle). The next worker starts
  // after this one has ended.
  const finish = (now) => {
    if (ended) return;
    ended = true;
    const end = () => {
      worker.terminate();
      setTimeout(() => { spare ??= spawnLoader(module); }, 500);
    };
    slices.cancel();
    free.length = 0;
    if (now) end();
    else endWhenIdle(end);
  };
  const fail = (err) => {
    if (failure) return;
    failure = err;
    queue.length = 0;
    finish(true);
    if (waiting) {
      const w = waiting;
      waiting = null;
      w.reject(err);
    }
  };
  const cancel = () => fail(new Error('cancelled'));
  let parts = [];
  let started = false;
  // The file is read here, a few slices ahead of the worker, into buffers that go back and forth
  // between the two (the worker returns each once it has copied it), so reading a gigabyte
  // touches no fresh memory: a fresh 8 MiB buffer per slice cost this thread 0.6 s of page
  // faults per gigabyte. Reading goes on while the worker decodes.
  for (let i = 0; i < Math.min(SLICES_AHEAD, Math.ceil(file.size / SLICE_BYTES)); i++) {
    free.push(new ArrayBuffer(Math.min(SLICE_BYTES, file.size)));
  }
  let readTo = 0;
  let reading = false;
  const readAhead = async () => {
    if (reading) return;
    reading = true;
    try {
      while (!ended && readTo < file.size && free.length) {
        const offset = readTo;
        const want = Math.min(SLICE_BYTES, file.size - offset);
        // The last slice has a buffer of its own length.
        const buf = want === free[free.length - 1].byteLength ? free.pop() : new ArrayBuffer(want);
        const slice = await slices.read(buf, offset);
        readTo = offset + want;
        if (readTo >= file.size) free.length = 0;
        if (!ended) worker.postMessage({ slice, offset }, [slice]);
      }
    } catch (err) {
      if (!ended) worker.postMessage({ sliceError: `${err.message || err}` });
    }
    reading = false;
  };
  readAhead();
  worker.onmessage = (e) => {
    const m = e.data;
    started = true;
    if (failure) return;
    if (m.kind === 'slice-back') {
      // Kept only while there is more to read.
      if (readTo < file.size) free.push(m.slice);
      readAhead();
    } else if (m.kind === 'progress') {
      onProgress(m.readBytes, m.phase);
    } else if (m.kind === 'part') parts.push(m.bytes);
    else if (m.kind === 'head') {
      push({ kind: 'head', bytes: m.bytes, group: m.group, field: m.field, parts });
      parts = [];
    } else if (m.kind === 'model-end') push({ kind: 'model-end' });
    else if (m.kind === 'done') {
      // Ended once the page has shown what it loaded (shown()); this is in case it never says.
      setTimeout(() => finish(false), END_UNSHOWN_MS);
      push({ kind: m.kind });
    } else if (m.kind === 'profile') {
      finish(false);
      push({ kind: m.kind });
    } else if (m.kind === 'error') fail(new Error(m.message));
    else if (m.kind === 'failed') fail(unavailable(m.message));
  };
  worker.onerror = (e) => {
    e.preventDefault();
    const why = e.message || 'it stopped';
    fail(started ? new Error(`The loader stopped: ${why}. The file may be too large for this browser tab.`) : unavailable(why));
  };
  worker.postMessage({ file, request });
  return { next, cancel, shown: () => finish(false) };
}

try {
  const module = await compileWasm();
  const wasm = await init({ module_or_path: module });
  forbidConnections();
  // Bytes of the WebAssembly heap, for the benchmark's page-memory figure.
  globalThis.memvizWasmBytes = () => wasm.memory.buffer.byteLength;
  globalThis.memvizLoadInWorker = (file, request, onProgress) => loadInWorker(module, file, request, onProgress);
  start();
  spare = spawnLoader(module);
} catch (e) {
  const el = document.getElementById('error');
  if (el) {
    el.textContent = `memviz could not start: ${e}. A current Chrome, Firefox or Safari is needed.`;
    el.hidden = false;
  }
  throw e;
}
