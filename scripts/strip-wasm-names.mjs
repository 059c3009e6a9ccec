// Trunk post-build hook: drops the WebAssembly "name" section (function names for debuggers and
// profilers, about a quarter of the module) from release builds, so the page downloads less.
// Debug builds keep it, and so does a release build with MEMVIZ_KEEP_WASM_NAMES=1 (for profiling).
import { readFileSync, writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Reads an unsigned LEB128 number at `at`; returns [value, next offset]. */
function leb(bytes, at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[at++];
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (b < 0x80) return [value, at];
  }
}

/** The module without its custom sections named `drop`. */
export function withoutCustomSections(bytes, drop) {
  const keep = [bytes.subarray(0, 8)];
  let at = 8;
  while (at < bytes.length) {
    const start = at;
    const id = bytes[at++];
    const [size, body] = leb(bytes, at);
    const end = body + size;
    if (end > bytes.length) throw new Error('truncated section');
    let name = null;
    if (id === 0) {
      const [len, text] = leb(bytes, body);
      name = new TextDecoder().decode(bytes.subarray(text, text + len));
    }
    if (!(id === 0 && drop.includes(name))) keep.push(bytes.subarray(start, end));
    at = end;
  }
  return Buffer.concat(keep);
}

if (process.env.TRUNK_PROFILE === 'release' && !process.env.MEMVIZ_KEEP_WASM_NAMES) {
  const dir = process.env.TRUNK_STAGING_DIR;
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.wasm'))) {
    const path = join(dir, f);
    const before = readFileSync(path);
    const after = withoutCustomSections(before, ['name']);
    writeFileSync(path, after);
    console.log(`strip-wasm-names: ${f} ${before.length} -> ${after.length} bytes`);
  }
}
