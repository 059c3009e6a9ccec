// Loads the page's WebAssembly and starts it. A file of its own (not an inline script) so the
// Content-Security-Policy can forbid inline scripts.
import init, { start } from './memviz-web.js';
import { readSlices } from './slices.js';

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

const readerUrl = new URL('./reader.js', import.meta.url);

/** Starts a reading worker (www/reader.js), or null where none can start. */
function spawnReader() {
  try {
    const reader = new Worker(readerUrl, { type: 'module' });
    reader.broken = false;
    reader.onerror = (e) => {
      e.preventDefault();
      reader.broken = true;
    };
    return reader;
  } catch {
    return null;
  }
}

/** A loading worker and a reading worker started ahead of the next load. */
let spare = null;
let spareReader = null;

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
  // Reads the file and hands it to the worker in slices (see below).
  let reading = null;
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
      setTimeout(() => {
        spare ??= spawnLoader(module);
        spareReader ??= spawnReader();
      }, 500);
    };
    reading?.stop();
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
  // The file is read a few slices ahead of the worker, by a reading worker of its own that sends
  // the slices straight to this one (www/reader.js), or, where that cannot start, here.
  let port = null;
  let readBytes = 0;
  const reader = spareReader && !spareReader.broken ? spareReader : spawnReader();
  spareReader = null;
  const readHere = () => readSlices(file, (m, transfer) => worker.postMessage(m, transfer ?? []));
  if (reader) {
    const channel = new MessageChannel();
    reader.postMessage({ file, port: channel.port1 }, [channel.port1]);
    port = channel.port2;
    reading = { stop: () => reader.terminate(), giveBack() {} };
    // A reading worker that stopped before it read anything (its script did not load, say):
    // the page reads instead.
    reader.onerror = (e) => {
      e.preventDefault();
      reader.terminate();
      if (ended) return;
      if (readBytes === 0) reading = readHere();
      else fail(new Error(`Could not read the file: the reading worker stopped (${e.message || 'no reason given'}).`));
    };
  } else {
    reading = readHere();
  }
  worker.onmessage = (e) => {
    const m = e.data;
    started = true;
    if (failure) return;
    if (m.kind === 'slice-back') {
      reading.giveBack(m.slice);
    } else if (m.kind === 'progress') {
      readBytes = m.readBytes;
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
  if (port) worker.postMessage({ file, request, port }, [port]);
  else worker.postMessage({ file, request });
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
  spareReader = spawnReader();
} catch (e) {
  const el = document.getElementById('error');
  if (el) {
    el.textContent = `memviz could not start: ${e}. A current Chrome, Firefox or Safari is needed.`;
    el.hidden = false;
  }
  throw e;
}
