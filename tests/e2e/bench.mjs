// Benchmark (not a test): time from choosing a file to the first complete timeline
// (`performance.mark('memviz:ready')`), in headless Chromium against the built dist/.
//
//   node tests/e2e/bench.mjs [--runs N] [--cold] [--dist DIR] [--only] [extra.pickle ...]
//
// Files: every *.pickle in tests/data/real, then
// target/big-1m.pickle if it exists (make it with
// `python3 tests/gen/big_snapshot.py --entries 1000000 --out target/big-1m.pickle`), then any
// files given on the command line (with --only: just those). Each run uses a fresh page. By default a run waits until
// the page has warmed up (body[data-warm], at most 5 s), as it has by the time a person picks a
// file; --cold picks the file as soon as the page can take it.
//
// Prints one row per file: the median over the runs of the total and of each phase, as the
// page reports them in #plot[data-timings]: read (waiting for file slices), parse (decoding the
// pickle), model, layout, yield (letting the page repaint the progress bar), transfer (handing the
// model and layout from the loading Web Worker to the page; in brackets the page's share), draw (the first frame). The total also holds the wait for that frame. "longest task": the longest time the page's
// main thread was busy without a break while loading (PerformanceObserver 'longtask', >= 50 ms).
//
// Then, on the last run's page: page memory after load (JS heap + WebAssembly heap), and the
// medians over 24 wheel zooms and 24 hovers over the plot of: the work (the handler plus the
// frame's drawing) and the latency (from the input event to the painted frame for a zoom, to the
// changed stack text for a hover; a zoom's latency includes the wait for the next frame).
// For a zoom also: "wait", from the input event to its dispatch (Chromium hands wheel events to
// the page at the start of the next frame, so this is the browser's, not the page's), and
// "frame end", from the input event to the end of the main thread's work on that frame (after
// the animation-frame callbacks the browser rasterizes what was drawn on canvases; "latency"
// stops before that); "from dispatch", the same two measured from the dispatch instead of the
// event's time stamp; "zoom exact", from a single wheel zoom after a rest to the exact frame
// that follows the stretched one. Before each wheel the pointer moves and rests for REST_MS, as
// a person's does (a move in the same frame holds the wheel back a frame, on any page). The
// hover column gives in brackets how many of the 24 moves changed the stack text (the median is
// over those). The longest task while loading is given as the median and the maximum over the
// runs; the last column, "longest task", is the longest on the last run's page from the end of
// its load through the zooms and hovers (0: none of 50 ms or more). BENCH_VERBOSE=1 prints when
// each long task began. A last row does the same zooms on a page that only paints a canvas on each wheel:
// the browser's own share.
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
let only = false;
let dist = join(root, 'dist');
const extra = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--runs') runs = Number(args[++i]);
  else if (args[i] === '--cold') cold = true;
  else if (args[i] === '--dist') dist = resolve(args[++i]);
  else if (args[i] === '--only') only = true;
  else extra.push(resolve(args[i]));
}
if (!existsSync(join(dist, 'index.html'))) {
  console.error(`no ${dist}/index.html: build first (trunk build --release)`);
  process.exit(2);
}

const files = [];
const fixtures = resolve(root, 'tests/data/real');
if (only) {
  // Just the files given.
} else if (existsSync(fixtures)) {
  for (const f of readdirSync(fixtures).sort()) if (f.endsWith('.pickle')) files.push(join(fixtures, f));
} else {
  console.log(`note: ${fixtures} not found; no real fixtures`);
}
const big = join(root, 'target/big-1m.pickle');
if (only) {
  // Just the files given.
} else if (existsSync(big)) files.push(big);
else console.log(`note: ${big} not found (python3 tests/gen/big_snapshot.py --entries 1000000 --out target/big-1m.pickle); skipping 1M entries`);
files.push(...extra);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};

/** How long the pointer rests between a move and the wheel zoom that follows it (ms). */
const REST_MS = 100;

/** Zoom and hover work/latency medians (ms) on a page showing a timeline. */
async function measureInteraction(page) {
  const box = await page.locator('#plot').boundingBox();
  // Long tasks from here on are the interaction's (and the loader's ending after the load).
  const tasksBefore = await page.evaluate(() => globalThis.__longTasks.length);
  await page.evaluate(() => {
    globalThis.__bench = { zoom: [], hover: [] };
    // Capturing on the window runs before the page's own listener on the canvas.
    let dispatched = null;
    window.addEventListener('wheel', () => {
      dispatched = performance.now();
    }, { capture: true });
    window.addEventListener('wheel', (e) => {
      const handled = performance.now();
      const start = dispatched ?? handled;
      requestAnimationFrame((frameStart) => {
        const now = performance.now();
        // The frame's time before the handler ran is not the page's work (wheel events are
        // dispatched inside the frame, so frameStart is usually before them).
        const work = handled - start + (now - Math.max(frameStart, handled));
        const z = { work, latency: now - e.timeStamp, wait: start - e.timeStamp, fromDispatch: now - start, end: NaN };
        globalThis.__bench.zoom.push(z);
        setTimeout(() => {
          z.end = performance.now() - e.timeStamp;
          z.endFromDispatch = performance.now() - start;
        }, 0);
      });
    });
    const stack = document.getElementById('stack');
    let moved = null;
    new MutationObserver(() => {
      if (moved) globalThis.__bench.hover.push({ latency: performance.now() - moved.t, work: moved.handled - moved.t });
      moved = null;
    }).observe(stack, { childList: true, subtree: true, characterData: true });
    window.addEventListener('pointermove', (e) => {
      moved = { t: e.timeStamp, handled: performance.now() };
    });
  });
  const cx = box.x + box.width / 2;
  const cy = box.y + box.height * 0.75;
  for (let k = 0; k < 24; k++) {
    // The pointer rests before the wheel turns, as a person's does (a move in the same frame
    // as the wheel holds the wheel back a frame, on any page).
    await page.mouse.move(cx + (k % 5) * 7, cy);
    await page.waitForTimeout(REST_MS);
    await page.mouse.wheel(0, k % 2 === 0 ? -240 : 240);
    await page.waitForTimeout(60);
  }
  for (let k = 0; k < 24; k++) {
    await page.mouse.move(box.x + box.width * (0.08 + 0.84 * ((k * 7) % 24) / 24), box.y + box.height * (0.55 + 0.3 * (k % 3) / 3));
    await page.waitForTimeout(60);
  }
  // A single zoom after a rest: from the input to the exact frame that follows the stretched
  // first one (the page draws exactly again once the wheel has rested).
  const exact = [];
  for (let k = 0; k < 6; k++) {
    await page.mouse.move(cx - k * 9, cy);
    await page.waitForTimeout(400);
    const waiting = page.evaluate(() => new Promise((resolve) => {
      const plot = document.getElementById('plot');
      let t = null;
      window.addEventListener('wheel', (e) => { t = e.timeStamp; }, { capture: true, once: true });
      const obs = new MutationObserver(() => {
        if (t !== null && plot.dataset.preview === '0') {
          obs.disconnect();
          requestAnimationFrame(() => resolve(performance.now() - t));
        }
      });
      obs.observe(plot, { attributes: true, attributeFilter: ['data-preview', 'data-view'] });
      setTimeout(() => resolve(NaN), 5000);
    }));
    await page.mouse.wheel(0, k % 2 === 0 ? -240 : 240);
    exact.push(await waiting);
  }
  const b = await page.evaluate(() => globalThis.__bench);
  const longestAfter = await page.evaluate((k) => Math.max(0, ...globalThis.__longTasks.slice(k)), tasksBefore);
  if (process.env.BENCH_VERBOSE) console.error('  long tasks after the load (ms after memviz:ready, ms):', JSON.stringify(await page.evaluate((k) => globalThis.__longTasks.slice(k).map((d, i) => [Math.round(globalThis.__longTaskStarts[k + i] - performance.getEntriesByName('memviz:ready')[0].startTime), Math.round(d)]), tasksBefore)));
  const med = (xs, k) => median(xs.map((x) => x[k]));
  return { zoomWork: med(b.zoom, 'work'), zoomLatency: med(b.zoom, 'latency'), zoomWait: med(b.zoom, 'wait'), zoomFromDispatch: med(b.zoom, 'fromDispatch'), zoomEnd: med(b.zoom, 'end'), zoomEndFromDispatch: med(b.zoom, 'endFromDispatch'), zooms: b.zoom.length, zoomExact: median(exact), hoverWork: med(b.hover, 'work'), hoverLatency: med(b.hover, 'latency'), hovers: b.hover.length, longestAfter };
}

/** The browser's own share: the same wheel zooms on a page that only paints a canvas. */
async function measureFloor(context) {
  const page = await context.newPage();
  await page.setContent(`<canvas id="plot" width="1200" height="600" style="width:1200px;height:600px"></canvas>`);
  await page.evaluate(() => {
    globalThis.__floor = [];
    const c = document.getElementById('plot');
    const g = c.getContext('2d');
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      const start = performance.now();
      g.fillStyle = g.fillStyle === '#000000' ? '#ffffff' : '#000000';
      g.fillRect(0, 0, 1200, 600);
      requestAnimationFrame(() => {
        const now = performance.now();
        const f = { latency: now - e.timeStamp, wait: start - e.timeStamp, end: NaN };
        globalThis.__floor.push(f);
        setTimeout(() => { f.end = performance.now() - e.timeStamp; }, 0);
      });
    }, { passive: false });
  });
  await page.waitForTimeout(300);
  const box = await page.locator('#plot').boundingBox();
  for (let k = 0; k < 24; k++) {
    await page.mouse.move(box.x + box.width / 2 + (k % 5) * 7, box.y + box.height * 0.75);
    await page.waitForTimeout(REST_MS);
    await page.mouse.wheel(0, k % 2 === 0 ? -240 : 240);
    await page.waitForTimeout(60);
  }
  const f = await page.evaluate(() => globalThis.__floor);
  await page.close();
  return { latency: median(f.map((x) => x.latency)), wait: median(f.map((x) => x.wait)), end: median(f.map((x) => x.end)), n: f.length };
}

const server = await serve(dist);
const { context, close } = await launch();
const rows = [];
let floor = null;
try {
  for (const file of files) {
    const results = [];
    for (let r = 0; r < runs; r++) {
      const page = await context.newPage();
      await page.goto(server.url);
      await page.waitForSelector('#demo:not([disabled])');
      if (!cold) await page.waitForSelector('body[data-warm]', { timeout: 5000 }).catch(() => {});
      await page.evaluate(() => {
        globalThis.__longTasks = [];
        globalThis.__longTaskStarts = [];
        new PerformanceObserver((l) => {
          for (const e of l.getEntries()) {
            globalThis.__longTasks.push(e.duration);
            globalThis.__longTaskStarts.push(e.startTime);
          }
        }).observe({ type: 'longtask' });
      });
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
          wasmBytes: globalThis.memvizWasmBytes ? globalThis.memvizWasmBytes() : null,
          longestTask: Math.max(0, ...globalThis.__longTasks),
          // Where each long task began: ms after the file was chosen, and before the load ended.
          longTasks: globalThis.__longTasks.map((d, i) => ({ ms: d, fromOpen: globalThis.__longTaskStarts[i] - open.startTime, beforeReady: ready.startTime - globalThis.__longTaskStarts[i] })),
        };
      });
      if (process.env.BENCH_VERBOSE && res.longTasks?.length) console.error(`  run ${r}: long tasks while loading`, JSON.stringify(res.longTasks.map((t) => [Math.round(t.fromOpen), Math.round(t.ms), Math.round(t.beforeReady)])), '(ms after choosing the file, ms, ms before ready)');
      res.interact = !res.error && r === runs - 1 ? await measureInteraction(page) : null;
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
      transfer: t('transfer_ms'),
      decode: t('decode_ms'),
      draw: t('first_draw_ms'),
      bands: t('bands_drawn'),
      longest: median(ok.map((x) => x.longestTask)),
      longestMax: Math.max(0, ...ok.map((x) => x.longestTask)),
      memMiB: ok.length ? (ok[ok.length - 1].memory + ok[ok.length - 1].wasmBytes) / 1048576 : NaN,
      interact: ok.length ? ok[ok.length - 1].interact : null,
    });
    const last = rows[rows.length - 1];
    console.error(`${last.file}: ${last.error ?? `${last.total.toFixed(0)} ms`}`);
  }
  floor = await measureFloor(context);
} finally {
  await close();
  await server.close();
}

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '-');
console.log(`\nmemviz: choose file -> first complete timeline (median of ${runs} run(s), ${cold ? 'cold page' : 'warmed-up page'}), ms`);
const head = ['file', 'MiB', 'total', 'read', 'parse', 'model', 'layout', 'yield', 'transfer (page)', 'draw', 'bands', 'longest task (median / max)'];
const table = rows.map((r) =>
  r.error
    ? [r.file, fmt(r.mib, 1), `error: ${r.error}`]
    : [r.file, fmt(r.mib, 1), fmt(r.total), fmt(r.read), fmt(r.parse), fmt(r.model), fmt(r.layout), fmt(r.wait), `${fmt(r.transfer)} (${fmt(r.decode)})`, fmt(r.draw), fmt(r.bands), `${fmt(r.longest)} / ${fmt(r.longestMax)}`],
);
const widths = head.map((h, i) => Math.max(h.length, ...table.map((row) => (row[i] ?? '').length)));
const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
console.log(line(head));
for (const row of table) console.log(line(row));

console.log('\nafter load, on the last run\'s page: page memory (JS + WebAssembly heaps, MiB); wheel zoom and hover, median ms (work = handler + drawing; latency = input to painted frame / to stack text; wait = input to dispatch; frame end = input to the end of the frame\'s main-thread work)');
console.log('from dispatch = from the page receiving the wheel event: to its frame\'s animation callbacks done / to the end of the frame\'s main-thread work; zoom exact = input to the exact frame after a single zoom (the first frame stretches the last exact one)');
const head2 = ['file', 'MiB', 'memory', 'zoom work', 'zoom latency', 'zoom wait', 'zoom from dispatch', 'zoom frame end', 'frame end from dispatch', 'zoom exact', 'hover work', 'hover latency', 'longest task'];
const table2 = rows.filter((r) => !r.error && r.interact).map((r) => [
  r.file, fmt(r.mib, 1), fmt(r.memMiB), fmt(r.interact.zoomWork, 1), fmt(r.interact.zoomLatency, 1), fmt(r.interact.zoomWait, 1), fmt(r.interact.zoomFromDispatch, 1), fmt(r.interact.zoomEnd, 1), fmt(r.interact.zoomEndFromDispatch, 1), fmt(r.interact.zoomExact, 1), fmt(r.interact.hoverWork, 1) + ` (${r.interact.hovers})`, fmt(r.interact.hoverLatency, 1), fmt(r.interact.longestAfter),
]);
if (floor) table2.push(['(a page that only paints a canvas)', '-', '-', '-', fmt(floor.latency, 1), fmt(floor.wait, 1), fmt(floor.latency - floor.wait, 1), fmt(floor.end, 1), fmt(floor.end - floor.wait, 1), '-', '-', '-', '-']);
const widths2 = head2.map((h, i) => Math.max(h.length, ...table2.map((row) => (row[i] ?? '').length)));
const line2 = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths2[i]) : c.padStart(widths2[i]))).join('  ');
console.log(line2(head2));
for (const row of table2) console.log(line2(row));
