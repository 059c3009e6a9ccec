// Reading a File front to back in slices: `readSlices` reads them (in the reading worker,
// www/reader.js, or, where that cannot start, on the page, www/boot.js); `sliceQueue` takes them
// in wherever they are decoded (the loading worker, www/worker.js, or the page itself).
import { KIND } from './protocol.js';

/** Bytes of one slice of a file sent to the loading worker (crates/web/src/model.rs, CHUNK_BYTES). */
export const SLICE_BYTES = 8 << 20;
/** Bytes of one slice of a file the page decodes itself (crates/web/src/feed.rs's QueueSlices
 * copies each into room made once): every buffer is fresh memory to the thread that first writes
 * it (the reader's three and the page's room for one), and at 1M entries 4 MiB slices left
 * 21 MiB fewer pages to fault in than 8 MiB ones. */
export const PAGE_SLICE_BYTES = 4 << 20;
/** Slices read ahead of what the loading worker has decoded. */
export const SLICES_AHEAD = 3;
/** Slices of PAGE_SLICE_BYTES read ahead of what the page has decoded: with three, the reading
 * stopped while the page's thread wrote its first pages (about 60 ms at 1M entries), and a
 * 174 MB file's load waited 74 ms for slices; with eight, 51 ms (medians of 30 loads each, in
 * alternating order; the whole load 586 against 569 ms, within this machine's noise:
 * docs/performance.md). */
export const PAGE_SLICES_AHEAD = 8;

/**
 * Reads `file` front to back into buffers the caller gives: `read(buf, offset)` fills all of
 * `buf` with the bytes at `offset` (the offsets follow each other) and resolves to the filled
 * buffer (the same memory, in a new ArrayBuffer object); `cancel()` stops reading. Where the
 * browser's Blob streams take buffers of the reader's own (BYOB), nothing is allocated per read;
 * elsewhere each slice is read with Blob.arrayBuffer().
 */
function sliceReader(file, from) {
  let reader = null;
  try {
    reader = (from > 0 ? file.slice(from) : file).stream().getReader({ mode: 'byob' });
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

/**
 * Reads `file` from byte `from` (0 unless given) into `ahead` buffers (SLICES_AHEAD unless given)
 * and hands each over as it is filled (the first slices of the sizes in `first`, in buffers of
 * their own, the rest of `sliceBytes`, SLICE_BYTES unless given):
 * `send({ kind: KIND.SLICE, slice, offset }, [slice])`, or `send({ kind: KIND.SLICE_ERROR,
 * message })` if reading fails. The loading worker gives each buffer back once it has copied it
 * (`giveBack(buffer)`), to be read into again, so reading a gigabyte allocates no fresh buffers.
 * `stop()` stops reading and lets the buffers go.
 */
export function readSlices(file, send, from = 0, first = [], sliceBytes = SLICE_BYTES, ahead = SLICES_AHEAD) {
  const slices = sliceReader(file, from);
  const firstBytes = [...first];
  const free = [];
  for (let i = 0; i < Math.min(ahead, Math.ceil((file.size - from) / sliceBytes)); i++) {
    free.push(new ArrayBuffer(Math.min(sliceBytes, file.size - from)));
  }
  let readTo = from;
  let reading = false;
  let stopped = false;
  const readAhead = async () => {
    if (reading) return;
    reading = true;
    try {
      while (!stopped && readTo < file.size && free.length) {
        const offset = readTo;
        const want = Math.min(firstBytes.shift() ?? sliceBytes, file.size - offset);
        // The last slice has a buffer of its own length.
        const buf = want === free[free.length - 1].byteLength ? free.pop() : new ArrayBuffer(want);
        const slice = await slices.read(buf, offset);
        readTo = offset + want;
        if (readTo >= file.size) free.length = 0;
        if (!stopped) send({ kind: KIND.SLICE, slice, offset }, [slice]);
      }
    } catch (err) {
      if (!stopped) send({ kind: KIND.SLICE_ERROR, message: `${err.message || err}` });
    }
    reading = false;
  };
  readAhead();
  return {
    giveBack(buffer) {
      // Kept only while there is more to read (a first slice's smaller buffer is let go).
      if (!stopped && readTo < file.size && buffer.byteLength === sliceBytes) free.push(buffer);
      readAhead();
    },
    stop() {
      stopped = true;
      free.length = 0;
      slices.cancel();
    },
  };
}

/**
 * Slices as they come to whoever decodes them, handed out in order: `next(offset)` resolves to
 * the slice's ArrayBuffer at `offset` once it has come; asking for the next one sends the one
 * before back to whoever sent it (`{ kind: KIND.SLICE_BACK, slice }`), to be read into again.
 * `take(message, from)` takes a KIND.SLICE or KIND.SLICE_ERROR message from `from` (a port or a
 * worker, anything with postMessage) and says whether it was one.
 */
export function sliceQueue() {
  // Slices that came before they were asked for, by offset.
  const early = new Map();
  let waiting = null;
  let readError = null;
  // The slice handed out last, and who sent it.
  let lent = null;
  return {
    next(offset) {
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
    },
    take(m, from) {
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
    },
  };
}
