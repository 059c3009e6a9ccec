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

try {
  const wasm = await init();
  forbidConnections();
  // Bytes of the WebAssembly heap, for the benchmark's page-memory figure.
  globalThis.memvizWasmBytes = () => wasm.memory.buffer.byteLength;
  start();
} catch (e) {
  const el = document.getElementById('error');
  if (el) {
    el.textContent = `memviz could not start: ${e}. A current Chrome, Firefox or Safari is needed.`;
    el.hidden = false;
  }
  throw e;
}
