// Loads the page's WebAssembly and starts it. A file of its own (not an inline script) so the
// Content-Security-Policy can forbid inline scripts.
import init, { start } from './memviz-web.js';

try {
  await init();
  start();
} catch (e) {
  const el = document.getElementById('error');
  if (el) {
    el.textContent = `memviz could not start: ${e}. A current Chrome, Firefox or Safari is needed.`;
    el.hidden = false;
  }
  throw e;
}
