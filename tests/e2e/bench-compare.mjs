// Benchmark (not a test): two snapshots dropped together against one alone, in headless Chromium
// against the built dist/.
//
//   node tests/e2e/bench-compare.mjs [--runs N] [--dist DIR] A.pickle B.pickle
//
// Each run (default 8) opens B alone on a fresh page (choose → `performance.mark('memviz:ready')`),
// then A and B chosen together on another (choose → the Compare view's charts drawn:
// `#compare[data-window]`, polled each animation frame), and prints both times and their ratio;
// then the medians. The ratio is taken run by run, so that the machine's drift between runs
// does not move it. Give the larger file as B: "the time of opening one" is the longer load.
// Each page waits until it has warmed up (body[data-warm], at most 5 s), as bench.mjs does. The
// 1M-entry files of docs/performance.md: A `python3 tests/gen/big_snapshot.py --entries 1000000
// --out A.pickle`, B the same with `--extra-cpp-frames 48 --unique-stack-fraction 0.4` (the
// shape of a real `stacks="all"` capture).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { serve } from './lib/server.mjs';
import { launch } from './lib/browser.mjs';

const args = process.argv.slice(2);
let runs = 8;
let dist = resolve('dist');
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--runs') runs = Number(args[++i]);
  else if (args[i] === '--dist') dist = resolve(args[++i]);
  else files.push(resolve(args[i]));
}
if (files.length !== 2 || !existsSync(join(dist, 'index.html'))) {
  console.error('usage: node tests/e2e/bench-compare.mjs [--runs N] [--dist DIR] A.pickle B.pickle (with DIR/index.html built)');
  process.exit(2);
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

const server = await serve(dist);
const { context, close } = await launch();

/** Milliseconds from choosing `list` to its first timeline (one file) or the Compare view (two). */
async function timeToReady(list) {
  const page = await context.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(server.url);
  await page.waitForSelector('#demo:not([disabled])');
  await page.waitForSelector('body[data-warm]', { timeout: 5000 }).catch(() => {});
  await page.evaluate(() => {
    globalThis.__ready = null;
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) if (e.name === 'memviz:ready') globalThis.__ready ??= e.startTime;
    }).observe({ entryTypes: ['mark'] });
    const poll = () => {
      if (document.getElementById('compare')?.dataset.window) globalThis.__shown = performance.now();
      else requestAnimationFrame(poll);
    };
    requestAnimationFrame(poll);
    document.getElementById('file-input').addEventListener('change', () => { globalThis.__chosen = performance.now(); }, { capture: true });
  });
  await page.setInputFiles('#file-input', list);
  const done = list.length > 1 ? '__shown' : '__ready';
  await page.waitForFunction((k) => globalThis[k], done, { timeout: 120000, polling: 20 });
  const ms = await page.evaluate((k) => globalThis[k] - globalThis.__chosen, done);
  await page.close();
  return ms;
}

try {
  const rows = [];
  for (let r = 0; r < runs; r++) {
    const one = await timeToReady([files[1]]);
    const both = await timeToReady(files);
    rows.push({ one, both, ratio: both / one });
    console.log(`run ${r + 1}: B alone ${one.toFixed(0)} ms, both to the Compare view ${both.toFixed(0)} ms: ${(both / one).toFixed(2)}x`);
  }
  const m = (k) => median(rows.map((x) => x[k]));
  console.log(`median of ${runs}: B alone ${m('one').toFixed(0)} ms, both ${m('both').toFixed(0)} ms, ratio ${m('ratio').toFixed(2)}x (${Math.min(...rows.map((x) => x.ratio)).toFixed(2)}-${Math.max(...rows.map((x) => x.ratio)).toFixed(2)})`);
} finally {
  await close();
  server.close?.();
}
