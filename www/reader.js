// The reading Web Worker: reads the File the page gives it, front to back, and sends it in
// slices over the MessagePort it gets with it, straight to the loading worker (www/worker.js) or
// the page, which sends each slice's buffer back the same way. It says when it has started, so
// the page knows it can read a file from its first byte. Reading a Blob costs the reading thread a
// task per chunk of the browser's pipe (0.6 s a gigabyte), and every task on the page's thread
// can be held up by the loading worker's memory work; here neither touches the page.
import { KIND } from './protocol.js';
import { readSlices } from './slices.js';

self.onmessage = (e) => {
  if (e.data.kind !== KIND.READ) return;
  const { file, port, from, first, sliceBytes, ahead } = e.data;
  const send = (m, transfer) => port.postMessage(m, transfer ?? []);
  const reading = readSlices(file, send, from ?? 0, first ?? [], sliceBytes, ahead);
  port.onmessage = (m) => {
    if (m.data.kind === KIND.SLICE_BACK) reading.giveBack(m.data.slice);
  };
};

self.postMessage({ kind: KIND.READER_READY });
