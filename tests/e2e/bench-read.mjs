// Benchmark (not a test): how long the page's reading worker (www/reader.js) takes to read a
// file by itself, against the page's whole load of the same file, in headless Chromium against
// the built dist/. A large file is read in slices while the page decodes the ones before, so its
// load can end no sooner than its reading: what the load takes beyond the reading is the work
// left once the last slice has come.
//
//   node tests/e2e/bench-read.mjs [--runs N] [--dist DIR] [--busy-ms-per-mib X] FILE...
//
// Per run, in turn on fresh pages: (a) the file read through reader.js with the page's slice
// size and read-ahead (www/slices.js), each slice given back as soon as it comes; (b) the same
// with the page's thread kept busy X ms for each MiB of every slice before it is given back
// (default 1.5, about what decoding a real-shaped file costs there), as it is while a load
// decodes; (c) the page's load (choosing the file -> `performance.mark('memviz:ready')`).
// Prints, per file, the medians and ranges over the runs of (a) and (b) (first slice / last
// slice, ms after the file was chosen) and of (c); then (c) minus (b): the load's time after
// its reading.
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './lib/server.mjs';
import { launch } from './lib/browser.mjs';
import { waitReady } from './lib/harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const args = process.argv.slice(2);
let runs = 7;
let dist = join(root, 'dist');
let busyMsPerMiB = 1.5;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--runs') runs = Number(args[++i]);
  else if (args[i] === '--dist') dist = resolve(args[++i]);
  else if (args[i] === '--busy-ms-per-mib') busyMsPerMiB = Number(args[++i]);
  else files.push(resolve(args[i]));
}
if (!files.length || !existsSync(join(dist, 'index.html'))) {
  console.error('usage: node tests/e2e/bench-read.mjs [--runs N] [--dist DIR] [--busy-ms-per-mib X] FILE...');
  console.error(`(dist: ${dist}; build it first with trunk build --release)`);
  process.exit(2);
}

/** "median (lowest-highest)", rounded. */
const range = (xs) => {
  const s = xs.map(Math.round).sort((a, b) => a - b);
  return `${s[Math.floor((s.length - 1) / 2)]} (${s[0]}-${s.at(-1)})`;
};

/** Reads the file chosen in a file input of its own through a reading worker; ms of the first and last slice. */
async function readAlone(page, file, busy) {
  await page.evaluate(async (busyMsPerMiB) => {
    const { KIND } = await import('./protocol.js');
    const { PAGE_SLICE_BYTES, PAGE_SLICES_AHEAD } = await import('./slices.js');
    const reader = new Worker('./reader.js', { type: 'module' });
    await new Promise((r) => { reader.onmessage = (e) => e.data.kind === KIND.READER_READY && r(); });
    const input = document.createElement('input');
    input.type = 'file';
    input.id = 'bench-read-input';
    document.body.append(input);
    globalThis.__read = new Promise((resolve, reject) => {
      input.addEventListener('change', () => {
        const file = input.files[0];
        const t0 = performance.now();
        const channel = new MessageChannel();
        let got = 0;
        let first = null;
        channel.port2.onmessage = (m) => {
          if (m.data.kind === KIND.SLICE_ERROR) return reject(new Error(m.data.message));
          if (m.data.kind !== KIND.SLICE) return;
          const slice = m.data.slice;
          first ??= performance.now() - t0;
          got += slice.byteLength;
          const until = performance.now() + (busyMsPerMiB * slice.byteLength) / (1 << 20);
          while (performance.now() < until) {
            // The page's thread busy, as it is while it decodes.
          }
          if (got >= file.size) return resolve({ first, last: performance.now() - t0 });
          channel.port2.postMessage({ kind: KIND.SLICE_BACK, slice }, [slice]);
        };
        reader.postMessage(
          { kind: KIND.READ, file, port: channel.port1, sliceBytes: PAGE_SLICE_BYTES, ahead: PAGE_SLICES_AHEAD },
          [channel.port1],
        );
      });
    });
  }, busy);
  await page.setInputFiles('#bench-read-input', file);
  return page.evaluate(() => globalThis.__read);
}

/** The page's load of the file: ms from its choice to the ready mark. */
async function load(page, file) {
  await page.setInputFiles('#file-input', file);
  await waitReady(page, 0, 300000);
  return page.evaluate(
    () => performance.getEntriesByName('memviz:ready')[0].startTime - performance.getEntriesByName('memviz:open')[0].startTime,
  );
}

const server = await serve(dist);
const { context, close } = await launch();
try {
  console.log(`reading alone (a), with the page's thread busy ${busyMsPerMiB} ms/MiB (b), the page's load (c); ${runs} runs each, ms`);
  for (const file of files) {
    const r = { alone: [], busy: [], load: [] };
    for (let k = 0; k < runs; k++) {
      for (const kind of ['alone', 'busy', 'load']) {
        const page = await context.newPage();
        await page.goto(server.url);
        await page.waitForSelector('#demo:not([disabled])');
        await page.waitForSelector('body[data-warm]', { timeout: 5000 }).catch(() => {});
        r[kind].push(kind === 'load' ? await load(page, file) : await readAlone(page, file, kind === 'busy' ? busyMsPerMiB : 0));
        await page.close();
      }
    }
    const tail = r.load.map((l, k) => l - r.busy[k].last);
    console.log(basename(file));
    console.log(`  (a) reading alone: first slice ${range(r.alone.map((x) => x.first))}, last ${range(r.alone.map((x) => x.last))}`);
    console.log(`  (b) page busy:     first slice ${range(r.busy.map((x) => x.first))}, last ${range(r.busy.map((x) => x.last))}`);
    console.log(`  (c) the load:      ${range(r.load)}; after the reading (c - b, per run): ${range(tail)}`);
  }
} finally {
  await close();
  await server.close?.();
}
