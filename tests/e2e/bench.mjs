// Benchmark (not a test): time from choosing a file to the first complete timeline
// (`performance.mark('memviz:ready')`), in headless Chromium against the built dist/.
//
//   node tests/e2e/bench.mjs [--runs N] [--cold] [--dist DIR] [extra.pickle ...]
//
// Files: every *.pickle in ../shared/fixtures (relative to the repository root), then
// target/big-1m.pickle if it exists (make it with
// `python3 tests/gen/big_snapshot.py --entries 1000000 --out target/big-1m.pickle`), then any
// files given on the command line. Each run uses a fresh page. By default a run waits until
// the page has warmed up (body[data-warm], at most 5 s), as it has by the time a person picks a
// file; --cold picks the file as soon as the page can take it.
//
// Prints one row per file: the median over the runs of the total and of each phase, as the
// page reports them in #plot[data-timings]: read (waiting for file slices), parse (decoding the
// pickle), model, layout, yield (letting the page repaint the progress bar), draw (the first
// frame). The total also holds the wait for that frame.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve, basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './lib/server.mjs';
import { launch } from './lib/browser.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const args = process.argv.slice(2);
let runs = 3;
let cold = false;
let dist = join(root, 'dist');
const extra = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--runs') runs = Number(args[++i]);
  else if (args[i] === '--cold') cold = true;
  else if (args[i] === '--dist') dist = resolve(args[++i]);
  else extra.push(resolve(args[i]));
}
if (!existsSync(join(dist, 'index.html'))) {
  console.error(`no ${dist}/index.html: build first (trunk build --release)`);
  process.exit(2);
}

const files = [];
const fixtures = resolve(root, '../shared/fixtures');
if (existsSync(fixtures)) {
  for (const f of readdirSync(fixtures).sort()) if (f.endsWith('.pickle')) files.push(join(fixtures, f));
} else {
  console.log(`note: ${fixtures} not found; skipping the shared fixtures`);
}
const big = join(root, 'target/big-1m.pickle');
if (existsSync(big)) files.push(big);
else console.log(`note: ${big} not found (python3 tests/gen/big_snapshot.py --entries 1000000 --out target/big-1m.pickle); skipping 1M entries`);
files.push(...extra);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};

const server = await serve(dist);
const { context, close } = await launch();
const rows = [];
try {
  for (const file of files) {
    const results = [];
    for (let r = 0; r < runs; r++) {
      const page = await context.newPage();
      await page.goto(server.url);
      await page.waitForSelector('#demo:not([disabled])');
      if (!cold) await page.waitForSelector('body[data-warm]', { timeout: 5000 }).catch(() => {});
      await page.setInputFiles('#file-input', file);
      await page.waitForFunction(
        () => performance.getEntriesByName('memviz:ready').length > 0 || !document.getElementById('error').hidden,
        null,
        { timeout: 300000, polling: 50 },
      );
      const res = await page.evaluate(() => {
        const err = document.getElementById('error');
        if (!err.hidden) return { error: err.textContent };
        const open = performance.getEntriesByName('memviz:open')[0];
        const ready = performance.getEntriesByName('memviz:ready')[0];
        return {
          total: ready.startTime - open.startTime,
          timings: JSON.parse(document.getElementById('plot').dataset.timings || '{}'),
          memory: performance.memory ? performance.memory.usedJSHeapSize : null,
        };
      });
      await page.close();
      if (res.error) {
        results.push({ error: res.error });
        break;
      }
      results.push(res);
    }
    const ok = results.filter((x) => !x.error);
    const t = (k) => median(ok.map((x) => x.timings[k] ?? NaN));
    rows.push({
      file: basename(file),
      mib: statSync(file).size / 1048576,
      error: results.find((x) => x.error)?.error,
      total: median(ok.map((x) => x.total)),
      read: t('read_ms'),
      parse: t('parse_ms'),
      model: t('model_ms'),
      layout: t('layout_ms'),
      wait: t('wait_ms'),
      draw: t('first_draw_ms'),
      bands: t('bands_drawn'),
    });
    const last = rows[rows.length - 1];
    console.error(`${last.file}: ${last.error ?? `${last.total.toFixed(0)} ms`}`);
  }
} finally {
  await close();
  await server.close();
}

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '-');
console.log(`\nmemviz: choose file -> first complete timeline (median of ${runs} run(s), ${cold ? 'cold page' : 'warmed-up page'}), ms`);
const head = ['file', 'MiB', 'total', 'read', 'parse', 'model', 'layout', 'yield', 'draw', 'bands'];
const table = rows.map((r) =>
  r.error
    ? [r.file, fmt(r.mib, 1), `error: ${r.error}`]
    : [r.file, fmt(r.mib, 1), fmt(r.total), fmt(r.read), fmt(r.parse), fmt(r.model), fmt(r.layout), fmt(r.wait), fmt(r.draw), fmt(r.bands)],
);
const widths = head.map((h, i) => Math.max(h.length, ...table.map((row) => (row[i] ?? '').length)));
const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
console.log(line(head));
for (const row of table) console.log(line(row));
