// Benchmark (not a test): a training run in the page, in headless Chromium against the built dist/.
//
//   node tests/e2e/bench-ranks.mjs [--ranks N] [--big FILE] [--dist DIR]
//
// 1. N (default 16) hard links rank0..N-1 of the 1M-entry generated snapshot (FILE, default
//    target/big-1m.pickle; make it with
//    `python3 tests/gen/big_snapshot.py --entries 1000000 --out target/big-1m.pickle`) chosen
//    together → every bar drawn (`performance.mark('memviz:ranks-ready')`): the time, the
//    renderer processes' memory at most (the sum of their resident set sizes, sampled every
//    100 ms from /proc: the page and its workers share the renderer process), and the longest
//    main-thread task (PerformanceObserver 'longtask', >= 50 ms).
// 2. 4 small rank files (tests/gen/make_ranks.py) → the overview.
// 3. rank 0 of the big run focused (its timeline), then `]`: rank 1's timeline after switching
//    (`memviz:ready`), re-read from its file.
// Goals: (1) < 25 s, < 1.5 GB, no task > 50 ms; (2) < 1 s; (3) < 1.5 s.
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './lib/server.mjs';
import { launch } from './lib/browser.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const args = process.argv.slice(2);
let ranks = 16;
let big = join(root, 'target/big-1m.pickle');
let dist = join(root, 'dist');
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--ranks') ranks = Number(args[++i]);
  else if (args[i] === '--big') big = resolve(args[++i]);
  else if (args[i] === '--dist') dist = resolve(args[++i]);
}
if (!existsSync(join(dist, 'index.html'))) {
  console.error(`no ${dist}/index.html: build first (trunk build --release)`);
  process.exit(2);
}
if (!existsSync(big)) {
  console.error(`no ${big}: python3 tests/gen/big_snapshot.py --entries 1000000 --out ${big}`);
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), 'memviz-bench-ranks-'));
const bigRun = [];
for (let r = 0; r < ranks; r++) {
  const p = join(work, `rank${r}.pickle`);
  linkSync(big, p);
  bigRun.push(p);
}
execFileSync('python3', [join(root, 'tests/gen/make_ranks.py'), join(work, 'small')]);
const smallRun = readdirSync(join(work, 'small')).sort().slice(0, 4).map((f) => join(work, 'small', f));

/** Resident bytes of Chromium's renderer processes now. */
function rendererBytes() {
  let sum = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes('--type=renderer')) continue;
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) sum += Number(m[1]) * 1024;
    } catch {
      // The process ended meanwhile.
    }
  }
  return sum;
}

const server = await serve(dist);
const { context, close } = await launch();
const out = [];
async function freshPage() {
  const page = await context.newPage();
  await page.goto(server.url);
  await page.waitForSelector('#demo:not([disabled])');
  await page.waitForSelector('body[data-warm]', { timeout: 5000 }).catch(() => {});
  await page.evaluate(() => {
    globalThis.__longTasks = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) globalThis.__longTasks.push(e.duration);
    }).observe({ type: 'longtask' });
  });
  return page;
}
const marks = (page, name) => page.evaluate((n) => performance.getEntriesByName(n).map((e) => e.startTime), name);
const longest = (page) => page.evaluate(() => Math.max(0, ...globalThis.__longTasks));
try {
  // 1. The big run.
  {
    const page = await freshPage();
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rendererBytes());
    }, 100);
    const t0 = await page.evaluate(() => performance.now());
    await page.setInputFiles('#file-input', bigRun);
    await page.waitForFunction(() => performance.getEntriesByName('memviz:ranks-ready').length > 0, null, { timeout: 600000, polling: 100 });
    clearInterval(sampler);
    peak = Math.max(peak, rendererBytes());
    const [ready] = await marks(page, 'memviz:ranks-ready');
    const bars = await page.$$eval('.rank-bar', (b) => b.filter((x) => Number(x.dataset.peakAllocatedBytes) > 0).length);
    out.push({ what: `${ranks} ranks of ${big.split('/').pop()} → every bar`, ms: ready - t0, rendererMiB: peak / 2 ** 20, longestTaskMs: await longest(page), bars });
    // 3. Focus rank 0, then ] to rank 1.
    let n = (await marks(page, 'memviz:ready')).length;
    await page.click('.rank-bar[data-rank="0"]');
    await page.waitForFunction((k) => performance.getEntriesByName('memviz:ready').length > k, n, { timeout: 300000, polling: 50 });
    n = (await marks(page, 'memviz:ready')).length;
    await page.evaluate(() => { globalThis.__longTasks = []; });
    const t1 = await page.evaluate(() => performance.now());
    await page.keyboard.press(']');
    await page.waitForFunction((k) => performance.getEntriesByName('memviz:ready').length > k, n, { timeout: 300000, polling: 20 });
    const r1 = (await marks(page, 'memviz:ready'))[n];
    out.push({ what: 'a focused 1M rank\'s timeline after ] (re-read)', ms: r1 - t1, rendererMiB: rendererBytes() / 2 ** 20, longestTaskMs: await longest(page), models: await page.getAttribute('#main', 'data-resident-models') });
    await page.close();
  }
  // 2. Four small ranks.
  {
    const page = await freshPage();
    const t0 = await page.evaluate(() => performance.now());
    await page.setInputFiles('#file-input', smallRun);
    await page.waitForFunction(() => performance.getEntriesByName('memviz:ranks-ready').length > 0, null, { timeout: 60000, polling: 10 });
    const [ready] = await marks(page, 'memviz:ranks-ready');
    out.push({ what: '4 small rank files → overview', ms: ready - t0, longestTaskMs: await longest(page) });
    await page.close();
  }
} finally {
  await close();
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
for (const r of out) {
  const parts = [`ms ${r.ms.toFixed(0)}`];
  if (r.rendererMiB !== undefined) parts.push(`renderer ${r.rendererMiB.toFixed(0)} MiB`);
  parts.push(`longest task ${r.longestTaskMs.toFixed(0)} ms`);
  if (r.bars !== undefined) parts.push(`bars ${r.bars}`);
  if (r.models !== undefined) parts.push(`models ${r.models}`);
  console.log(`${r.what}: ${parts.join(', ')}`);
}
