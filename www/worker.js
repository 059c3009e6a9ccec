// The loading Web Worker. The page starts it ahead of time and sends the compiled WebAssembly
// module first ({ module }), so that instantiating it costs nothing when a file comes; then one
// { file, request } to load, answered by memviz-web's worker_load (see crates/web/src/worker.rs).
// The page reads the file and sends it in slices ({ slice, offset } or { sliceError }): reading a
// Blob goes on only while the reading thread takes events, and the page's thread is free while
// this one decodes. Each slice's buffer goes back ({ kind: 'slice-back', slice }) once it has
// been copied, to be read into again.
import init, { worker_load } from './memviz-web.js';

let ready = null;
let failure = null;

/** Slices that came before they were asked for, by offset. */
const early = new Map();
let waiting = null;
let readError = null;

/** The slice handed out last: asking for the next one means it has been copied. */
let lent = null;

/** The slice at `offset`, once the page has sent it. The one before goes back to the page, to
 * be read into again. */
function nextSlice(offset) {
  if (lent) self.postMessage({ kind: 'slice-back', slice: lent }, [lent]);
  lent = null;
  return new Promise((resolve, reject) => {
    if (early.has(offset)) {
      const b = early.get(offset);
      early.delete(offset);
      lent = b;
      resolve(b);
    } else if (readError !== null) {
      reject(new Error(readError));
    } else {
      waiting = { offset, resolve, reject };
    }
  });
}

self.onmessage = async (e) => {
  const m = e.data;
  if (m.module) {
    ready = init({ module_or_path: m.module }).catch((err) => {
      failure = `${err}`;
    });
    return;
  }
  if (m.slice) {
    if (waiting && waiting.offset === m.offset) {
      const w = waiting;
      waiting = null;
      lent = m.slice;
      w.resolve(m.slice);
    } else {
      early.set(m.offset, m.slice);
    }
    return;
  }
  if (m.sliceError) {
    readError = m.sliceError;
    if (waiting) waiting.reject(new Error(readError));
    waiting = null;
    return;
  }
  await ready;
  if (failure !== null || ready === null) {
    self.postMessage({ kind: 'failed', message: failure ?? 'no WebAssembly module' });
    return;
  }
  await worker_load(m.file, m.request, nextSlice);
};
