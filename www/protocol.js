// The messages between the page (www/boot.js), the loading worker (www/worker.js, which runs
// crates/web/src/worker.rs) and the reading worker (www/reader.js). Every message is an object
// whose `kind` is one of KIND; crates/web/src/protocol.rs has the same kinds and phases (a test
// there reads this file, so the two cannot drift).

/** What a message is, and the fields that come with it. */
export const KIND = Object.freeze({
  // The page to the loading worker.
  /** `{ kind, module }`: the compiled WebAssembly, sent before any file. */
  MODULE: 'module',
  /** `{ kind, file, request, port }`: load `file` as `request` (bytes) asks; slices come over
   * `port` from a reading worker, or from the page when there is no port. */
  LOAD: 'load',
  // The page to the reading worker.
  /** `{ kind, file, port, from, first }`: read `file` from byte `from` (0 if absent) and send
   * its slices over `port`, the first ones of the sizes in `first` (bytes; none if absent). */
  READ: 'read',
  // The reading worker to the page.
  /** `{ kind }`: the reading worker has started and waits for a file. */
  READER_READY: 'reader-ready',
  // The page or the reading worker to the loading worker.
  /** `{ kind, slice, offset }`: the file's bytes at `offset` (the buffer is transferred). */
  SLICE: 'slice',
  /** `{ kind, message }`: the file could not be read. */
  SLICE_ERROR: 'slice-error',
  // The loading worker to whoever sent it slices.
  /** `{ kind, slice }`: a slice's buffer, copied, going back to be read into again. */
  SLICE_BACK: 'slice-back',
  // The loading worker to the page (crates/web/src/worker.rs sends them; the page passes all but
  // the progress and the parts on to crates/web/src/worker_client.rs).
  /** `{ kind, readBytes, phase }`: how far the load is; `phase` is one of PHASE. */
  PROGRESS: 'progress',
  /** `{ kind, bytes }`: one large column of the next head (the buffer is transferred). */
  PART: 'part',
  /** `{ kind, bytes, group, field }`: one message of a value, after its parts. */
  HEAD: 'head',
  /** `{ kind }`: the model is complete; the plot follows. */
  MODEL_END: 'model-end',
  /** `{ kind }`: the last message of a load. */
  DONE: 'done',
  /** `{ kind }`: the file is a profiler memory timeline, which the page reads itself. */
  PROFILE: 'profile',
  /** `{ kind, message }`: the load failed; `message` is for the user. */
  ERROR: 'error',
  /** `{ kind, message }`: no loading worker can run here (its WebAssembly did not start, say):
   * the page loads on its main thread instead. */
  UNAVAILABLE: 'unavailable',
  /** `{ kind }`: the user stopped the load (the page to crates/web/src/worker_client.rs). */
  CANCELLED: 'cancelled',
});

/** What a load is doing, in KIND.PROGRESS messages. */
export const PHASE = Object.freeze({
  READING: 'reading',
  BUILDING_MODEL: 'building-model',
  HANDING_OVER: 'handing-over',
  LAYING_OUT: 'laying-out',
});
