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
import { sliceQueue } from './slices.js';

let ready = null;
let failure = null;

/** The file's slices as they come (from the reading worker or the page). */
const slices = sliceQueue();

self.onmessage = async (e) => {
  const m = e.data;
  if (m.kind === KIND.MODULE) {
    ready = init({ module_or_path: m.module }).catch((err) => {
      failure = `${err}`;
    });
    return;
  }
  if (slices.take(m, self) || m.kind !== KIND.LOAD) return;
  if (m.port) m.port.onmessage = (p) => slices.take(p.data, m.port);
  await ready;
  if (failure !== null || ready === null) {
    self.postMessage({ kind: KIND.UNAVAILABLE, message: failure ?? 'no WebAssembly module' });
    return;
  }
  await worker_load(m.file, m.request, (offset) => slices.next(offset));
};
