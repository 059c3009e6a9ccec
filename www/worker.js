// The loading Web Worker. The page starts it ahead of time and sends the compiled WebAssembly
// module first (KIND.MODULE), so that instantiating it costs nothing when a file comes; then one
// file to load (KIND.LOAD), answered by memviz-web's worker_load (see crates/web/src/worker.rs).
// The file comes in slices (KIND.SLICE, or KIND.SLICE_ERROR) from a reading worker
// (www/reader.js) over the MessagePort that comes with the file, or from the page: reading a
// Blob goes on only while the reading thread takes events, and this one is busy decoding. Each
// slice's buffer goes back the way it came (KIND.SLICE_BACK) once it has been copied, to be read
// into again. www/protocol.js has every message.
import init, { worker_load } from './memviz-web.js';
import { KIND } from './protocol.js';

let ready = null;
let failure = null;

/** Slices that came before they were asked for, by offset. */
const early = new Map();
let waiting = null;
let readError = null;

/** The slice handed out last, and who sent it: asking for the next one means it has been
 * copied. */
let lent = null;

/** The slice at `offset`, once it has come. The one before goes back, to be read into again. */
function nextSlice(offset) {
  if (lent) lent.from.postMessage({ kind: KIND.SLICE_BACK, slice: lent.slice }, [lent.slice]);
  lent = null;
  return new Promise((resolve, reject) => {
    if (early.has(offset)) {
      lent = early.get(offset);
      early.delete(offset);
      resolve(lent.slice);
    } else if (readError !== null) {
      reject(new Error(readError));
    } else {
      waiting = { offset, resolve, reject };
    }
  });
}

/** Takes a slice (or the news that reading failed) from whoever reads the file (`from`: the
 * page, or the reading worker's port), to whom its buffer goes back. */
function takeSlice(m, from) {
  if (m.kind === KIND.SLICE) {
    const slice = { slice: m.slice, from };
    if (waiting && waiting.offset === m.offset) {
      const w = waiting;
      waiting = null;
      lent = slice;
      w.resolve(m.slice);
    } else {
      early.set(m.offset, slice);
    }
    return true;
  }
  if (m.kind === KIND.SLICE_ERROR) {
    readError = m.message;
    if (waiting) waiting.reject(new Error(readError));
    waiting = null;
    return true;
  }
  return false;
}

self.onmessage = async (e) => {
  const m = e.data;
  if (m.kind === KIND.MODULE) {
    ready = init({ module_or_path: m.module }).catch((err) => {
      failure = `${err}`;
    });
    return;
  }
  if (takeSlice(m, self) || m.kind !== KIND.LOAD) return;
  if (m.port) m.port.onmessage = (p) => takeSlice(p.data, m.port);
  await ready;
  if (failure !== null || ready === null) {
    self.postMessage({ kind: KIND.UNAVAILABLE, message: failure ?? 'no WebAssembly module' });
    return;
  }
  await worker_load(m.file, m.request, nextSlice);
};
