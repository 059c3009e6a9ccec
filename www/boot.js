// Loads the page's WebAssembly and starts it; begins reading a file as it is chosen or dropped;
// runs the loading and reading workers. A file of its own (not an inline script) so the
// Content-Security-Policy can forbid inline scripts.
import init, { start, open_run as openRun } from './memviz-web.js';
import { KIND } from './protocol.js';
import { readSlices, sliceQueue, PAGE_SLICE_BYTES, PAGE_SLICES_AHEAD } from './slices.js';

// The theme before the WebAssembly starts (then crates/web/src/chrome.rs keeps it).
try {
  const kept = localStorage.getItem('memviz-theme');
  const dark = kept === 'dark' || (kept !== 'light' && matchMedia('(prefers-color-scheme: dark)').matches);
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
} catch {
  // No storage: the page sets it.
}

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

/** Files dropped before the page has started: kept for it (the browser would otherwise open them
 * as a download). The page opens what its file input holds when it starts. */
const earlyDrops = [];
const keepEarlyDrop = (e) => {
  e.preventDefault();
  if (e.type === 'drop') earlyDrops.push(...(e.dataTransfer?.files ?? []));
};
window.addEventListener('dragover', keepEarlyDrop);
window.addEventListener('drop', keepEarlyDrop);
function handEarlyDrops() {
  window.removeEventListener('dragover', keepEarlyDrop);
  window.removeEventListener('drop', keepEarlyDrop);
  const input = document.getElementById('file-input');
  if (!earlyDrops.length || !input || typeof DataTransfer !== 'function') return;
  const dt = new DataTransfer();
  for (const f of earlyDrops) dt.items.add(f);
  input.files = dt.files;
}

const workerUrl = new URL('./worker.js', import.meta.url);

/** Starts a loading worker and has it instantiate the WebAssembly now, before its file comes. */
function spawnLoader(module) {
  try {
    const worker = new Worker(workerUrl, { type: 'module' });
    worker.broken = false;
    worker.onerror = (e) => {
      e.preventDefault();
      worker.broken = true;
    };
    worker.postMessage({ kind: KIND.MODULE, module });
    return worker;
  } catch {
    return null;
  }
}

const readerUrl = new URL('./reader.js', import.meta.url);

/** Starts a reading worker (www/reader.js), or null where none can start. Its `ready` turns true
 * once it has started (KIND.READER_READY). */
function spawnReader() {
  try {
    const reader = new Worker(readerUrl, { type: 'module' });
    reader.broken = false;
    reader.ready = false;
    reader.onmessage = (e) => {
      if (e.data?.kind === KIND.READER_READY) reader.ready = true;
    };
    reader.onerror = (e) => {
      e.preventDefault();
      reader.broken = true;
    };
    return reader;
  } catch {
    return null;
  }
}

/** A loading worker started ahead of the next load (after a first one), and a reading worker
 * started ahead of the next large file (as the page starts, and after each large file). */
let spare = null;
let spareReader = null;

/** The reading worker waiting for a file, if it has started (a file may then be read from its
 * first byte in it: see readForPage). */
const readyReader = () => (spareReader && !spareReader.broken && spareReader.ready ? spareReader : null);

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

const unavailable = (why) => ({ kind: KIND.UNAVAILABLE, message: why });
const failed = (message) => ({ kind: KIND.ERROR, message });

/** What the page says when the loading worker died reading `file`: most likely its model did not
 * fit in one tab's WebAssembly heap (at most 4 GiB), so it says so and what reads it instead. */
function stoppedMessage(file, why) {
  const size = file.size >= 2 ** 30 ? `${(file.size / 2 ** 30).toFixed(1)} GiB` : `${Math.round(file.size / 2 ** 20)} MiB`;
  return `The loader stopped reading ${file.name} (${size}): ${why}. The file most likely holds more ` +
    `than one browser tab can (a tab's WebAssembly memory is at most 4 GiB). The command line reads ` +
    `files of any size: memviz info ${file.name} (peaks and devices), memviz oom / live / insights (the ` +
    `answers), or memviz trace-plot ${file.name} -o page.html for a page of its timeline; or record ` +
    `fewer entries (max_entries).`;
}

/**
 * Loads a File in a Web Worker (crates/web/src/worker.rs says what it sends; www/protocol.js
 * lists the kinds). Returns `{ next, cancel, shown }`: `next()` resolves to the next of the
 * worker's messages as it comes, so the page copies the model in while the worker still works:
 * KIND.HEAD (one message of a value, with the parts it needs added as `parts`), KIND.MODEL_END
 * (the model is complete; the plot follows), KIND.DONE (the last), or KIND.PROFILE; it rejects
 * with how the load ended otherwise: KIND.ERROR (its message is for the user), KIND.CANCELLED,
 * or KIND.UNAVAILABLE when no worker could run (the page then loads on its main thread).
 * `onProgress(message)` is called with each KIND.PROGRESS message as the worker goes. `shown()`
 * says that the page has shown what it loaded: the worker is then ended once the page is idle
 * (END_IDLE_MS). Each worker loads one file; the next one is started when it ends.
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
  const cancel = () => fail({ kind: KIND.CANCELLED });
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
    reader.postMessage({ kind: KIND.READ, file, port: channel.port1 }, [channel.port1]);
    port = channel.port2;
    reading = { stop: () => reader.terminate(), giveBack() {} };
    // A reading worker that stopped before it read anything (its script did not load, say):
    // the page reads instead.
    reader.onerror = (e) => {
      e.preventDefault();
      reader.terminate();
      if (ended) return;
      if (readBytes === 0) reading = readHere();
      else fail(failed(`Could not read the file: the reading worker stopped (${e.message || 'no reason given'}).`));
    };
  } else {
    reading = readHere();
  }
  worker.onmessage = (e) => {
    const m = e.data;
    started = true;
    if (failure) return;
    switch (m.kind) {
      case KIND.SLICE_BACK:
        reading.giveBack(m.slice);
        break;
      case KIND.PROGRESS:
        readBytes = m.readBytes;
        onProgress(m);
        break;
      case KIND.PART:
        parts.push(m.bytes);
        break;
      case KIND.HEAD:
        push({ ...m, parts });
        parts = [];
        break;
      case KIND.MODEL_END:
        push(m);
        break;
      case KIND.DONE:
        // Ended once the page has shown what it loaded (shown()); this is in case it never says.
        setTimeout(() => finish(false), END_UNSHOWN_MS);
        push(m);
        break;
      case KIND.PROFILE:
        finish(false);
        push(m);
        break;
      case KIND.ERROR:
      case KIND.UNAVAILABLE:
        fail(m);
        break;
      default:
        fail(failed(`The loader sent a message of unknown kind ${JSON.stringify(m.kind)}.`));
    }
  };
  worker.onerror = (e) => {
    e.preventDefault();
    const why = e.message || 'it stopped';
    fail(started ? failed(stoppedMessage(file, why)) : unavailable(why));
  };
  if (port) worker.postMessage({ kind: KIND.LOAD, file, request, port }, [port]);
  else worker.postMessage({ kind: KIND.LOAD, file, request });
  // `end()`: a summary-only load is over; the worker goes at once, which frees its heap.
  return { next, cancel, shown: () => finish(false), end: () => finish(true) };
}

/** Bytes read on the page at the start of a file it loads itself when no reading worker has
 * started yet, while one starts, in pieces asked for together (decoding starts with the first
 * piece): 16 MiB, since the page decodes 8 MiB in less time than the worker takes to send its
 * first slice. */
const HEAD_BYTES = 16 << 20;
/** The head's pieces (HEAD_BYTES in all), growing: the browser reads pieces asked for together
 * side by side, so a small first one comes soon (0.5 MiB: 10 ms after asking, against 37 ms for
 * the first of eight 2 MiB pieces) and decoding starts; each piece asked for costs the page's
 * thread 0.5-2 ms. */
const HEAD_PIECES_BYTES = [512 << 10, 1536 << 10, 6 << 20, 8 << 20];
/** The first slices of a reading worker that has started, growing as the head's pieces do
 * before its slices of PAGE_SLICE_BYTES. */
const READER_FIRST_BYTES = [512 << 10, 1536 << 10, 2 << 20];

/** The reads begun for a file as it is chosen or dropped, before the page's own handler runs
 * (which asks for the first bytes 2-9 ms later): `{ file, whole }` for a file the page reads in one
 * piece, `{ file, pieces }` for the head of one it reads in pieces (readForPage). The page takes
 * them in the same task (`memvizTakeEarlyRead`, readForPage); whatever it did not take is let go
 * in the next one. */
let early = null;

/** A promise whose failure is handled where it is used, and nowhere else reported. */
const quiet = (p) => {
  p.catch(() => {});
  return p;
};

/** The head pieces of `file` read now: [offset, Promise of ArrayBuffer] each. */
function headPieces(file) {
  const from = Math.min(HEAD_BYTES, file.size);
  const pieces = [];
  let end = 0;
  for (const piece of HEAD_PIECES_BYTES) {
    const at = end;
    end = Math.min(at + piece, from);
    if (at >= end) break;
    pieces.push([at, quiet(file.slice(at, end).arrayBuffer())]);
  }
  return pieces;
}

/** Begins reading one file chosen or dropped, as the page will (the limits are the page's:
 * `memvizReadEarly`, set when it starts). */
function readEarly(files) {
  early = null;
  const limits = globalThis.memvizReadEarly;
  if (!limits || files.length !== 1) return;
  const file = files[0];
  if (file.size <= limits.wholeMaxBytes) early = { file, whole: quiet(file.arrayBuffer()) };
  // A reading worker that has started reads all of a larger one (readForPage).
  else if (file.size <= limits.onPageMaxBytes && !readyReader()) early = { file, pieces: headPieces(file) };
  // Let go in the next task, unless a later choice has begun reads of its own.
  const begun = early;
  setTimeout(() => { if (early === begun) early = null; }, 0);
}

/** The read of all of `file` begun as it was chosen, if there is one (once). */
globalThis.memvizTakeEarlyRead = (file) => {
  if (!early || early.file !== file || !early.whole) return null;
  const { whole } = early;
  early = null;
  return whole;
};

/** As a file is chosen or dropped (before the page's own handler runs): reads it, and starts the
 * reading worker when a large file comes and none is waiting, since a worker takes 60-160 ms to
 * start and read its first slice; for small files only, the waiting one is ended, so that its
 * heap does not weigh on the tab while they load. */
function readerAhead() {
  const ahead = (files) => {
    const list = [...(files ?? [])];
    const big = list.some((f) => f.size > HEAD_BYTES);
    if (!big && list.length && spareReader) {
      spareReader.terminate();
      spareReader = null;
    }
    // After the above: a file of up to HEAD_BYTES has its pieces read here.
    readEarly(list);
    if (big && !spareReader) spareReader = spawnReader();
  };
  document.getElementById('file-input')?.addEventListener('change', (e) => ahead(e.target.files), { capture: true });
  window.addEventListener('drop', (e) => ahead(e.dataTransfer?.files), { capture: true });
}

/**
 * Reads `file` for the page's own decoding (the files that load on the page, see
 * ON_PAGE_MAX_BYTES in crates/web/src/app/mod.rs): a reading worker reads it into buffers that
 * come over a MessagePort, so the page's thread only decodes (reading a Blob on it costs a task
 * per chunk of the browser's pipe); where no reading worker starts, the page reads it.
 * Returns `{ next(offset), stop() }`: `next` resolves to the ArrayBuffer of the slice at
 * `offset` (asking for it gives the one before back, to be read into again); `stop()` ends the
 * reading, whether or not it is done.
 */
function readForPage(file) {
  const queue = sliceQueue();
  let reading = null;
  let stopped = false;
  // A reading worker that has started reads the whole file, its first slices growing as the
  // head's pieces do (so decoding starts soon). Where none has, the first HEAD_BYTES are read
  // here at once, in pieces all asked for together, while one starts (60-160 ms to its first
  // slice); it reads from there on. Reading on the page costs its thread a task per chunk of the
  // browser's pipe: at 1M entries, the ready worker's first 16 MiB came 23 ms sooner.
  const nowhere = { postMessage() {} };
  const ready = readyReader();
  const from = ready ? 0 : Math.min(HEAD_BYTES, file.size);
  // Begun as the file was chosen, if it was (readEarly).
  const pieces = ready ? [] : early?.file === file && early.pieces ? early.pieces : headPieces(file);
  early = null;
  for (const [at, reading] of pieces) {
    reading.then(
      (slice) => queue.take({ kind: KIND.SLICE, slice, offset: at }, nowhere),
      (err) => queue.take({ kind: KIND.SLICE_ERROR, message: `${err.message || err}` }, nowhere),
    );
  }
  // Buffers of slices read on the page go back to the page's own reader.
  const back = { postMessage: (m) => reading?.giveBack(m.slice) };
  const readHere = () => readSlices(file, (m) => queue.take(m, back), from, [], PAGE_SLICE_BYTES, PAGE_SLICES_AHEAD);
  const reader = from >= file.size ? null : spareReader && !spareReader.broken ? spareReader : spawnReader();
  spareReader = null;
  if (reader) {
    const channel = new MessageChannel();
    const port = channel.port2;
    let got = false;
    port.onmessage = (e) => {
      got = true;
      queue.take(e.data, port);
    };
    const first = from === 0 ? READER_FIRST_BYTES : [];
    reader.postMessage({ kind: KIND.READ, file, port: channel.port1, from, first, sliceBytes: PAGE_SLICE_BYTES, ahead: PAGE_SLICES_AHEAD }, [channel.port1]);
    reading = { stop: () => { reader.terminate(); port.close(); }, giveBack() {} };
    // A reading worker that stopped before it sent anything: the page reads instead.
    reader.onerror = (e) => {
      e.preventDefault();
      reader.terminate();
      if (stopped) return;
      if (!got) reading = readHere();
      else queue.take({ kind: KIND.SLICE_ERROR, message: `the reading worker stopped (${e.message || 'no reason given'})` }, back);
    };
  } else {
    reading = from < file.size ? readHere() : { stop() {}, giveBack() {} };
  }
  return {
    next: (offset) => queue.next(offset),
    stop() {
      if (stopped) return;
      stopped = true;
      reading.stop();
      // A slice waited for now, or asked for later, fails.
      queue.take({ kind: KIND.SLICE_ERROR, message: 'the reading was stopped' }, nowhere);
      // The next large file's reader starts ahead of time.
      setTimeout(() => { spareReader ??= spawnReader(); }, 500);
    },
  };
}

/** The snapshot files under a dropped folder's entry (FileSystemEntry), with their paths. */
async function filesOfEntry(entry, out) {
  if (entry.isFile) {
    const file = await new Promise((resolve) => entry.file(resolve, () => resolve(null)));
    if (file) out.push({ file, path: entry.fullPath.replace(/^\//, '') });
    return;
  }
  if (!entry.isDirectory) return;
  const reader = entry.createReader();
  // readEntries answers in batches until an empty one.
  for (;;) {
    const batch = await new Promise((resolve) => reader.readEntries(resolve, () => resolve([])));
    if (batch.length === 0) break;
    for (const e of batch) await filesOfEntry(e, out);
  }
}

/** The files under a directory handle (showDirectoryPicker), with their paths. */
async function filesOfHandle(dir, prefix, out) {
  for await (const h of dir.values()) {
    if (h.kind === 'file') out.push({ file: await h.getFile(), path: `${prefix}${h.name}` });
    else await filesOfHandle(h, `${prefix}${h.name}/`, out);
  }
}

/** Hands a run's files to the page (crates/web/src/app/run.rs), in path order. */
function openFound(found) {
  found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  openRun(found.map((f) => f.file), found.map((f) => f.path));
}

/** A folder dropped on the page, or picked with "Open folder…", opens as a run; files dropped
 * without a folder go the usual way (crates/web/src/app/listeners.rs). */
function watchFolders() {
  window.addEventListener('drop', (e) => {
    const items = [...(e.dataTransfer?.items ?? [])];
    const entries = items.map((i) => i.webkitGetAsEntry?.()).filter(Boolean);
    if (!entries.some((en) => en.isDirectory)) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    const found = [];
    Promise.all(entries.map((en) => filesOfEntry(en, found))).then(() => openFound(found));
  }, { capture: true });
  const input = document.getElementById('folder-input');
  input?.addEventListener('change', () => {
    const found = [...input.files].map((file) => ({ file, path: file.webkitRelativePath || file.name }));
    input.value = '';
    if (found.length) openFound(found);
  });
  document.getElementById('open-folder')?.addEventListener('click', async () => {
    if (!window.showDirectoryPicker) {
      input?.click();
      return;
    }
    let dir;
    try {
      dir = await window.showDirectoryPicker();
    } catch {
      return; // The user closed the picker.
    }
    const found = [];
    await filesOfHandle(dir, `${dir.name}/`, found);
    openFound(found);
  });
}

try {
  const module = await compileWasm();
  const wasm = await init({ module_or_path: module });
  forbidConnections();
  // Bytes of the WebAssembly heap, for the benchmark's page-memory figure.
  globalThis.memvizWasmBytes = () => wasm.memory.buffer.byteLength;
  globalThis.memvizLoadInWorker = (file, request, onProgress) => loadInWorker(module, file, request, onProgress);
  globalThis.memvizReadForPage = readForPage;
  handEarlyDrops();
  // No loading worker starts before a file needs one: small files load on the page (see
  // ON_PAGE_MAX_BYTES in crates/web/src/app/mod.rs), and its heap would only weigh on the tab.
  // The reading worker (no WebAssembly; 1.4 MB of the tab) starts now, so that a large file is
  // read from its first byte off the page's thread; a small file ends it (readerAhead).
  readerAhead();
  start();
  spareReader ??= spawnReader();
  // Whether a reading worker waits for a file, started or not (for the page's tests).
  globalThis.memvizSpareReader = () => (spareReader && !spareReader.broken ? (spareReader.ready ? 'ready' : 'starting') : 'none');
  watchFolders();
} catch (e) {
  const el = document.getElementById('error');
  if (el) {
    el.textContent = `memviz could not start: ${e}. A current Chrome, Firefox or Safari is needed.`;
    el.hidden = false;
  }
  throw e;
}
