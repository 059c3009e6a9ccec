// A training run in the page: the generated 8-rank run (tests/gen/make_ranks.py: rank 3 runs 3x
// the batch, rank 5 keeps 4 MiB more every iteration, rank 6 runs out of memory) opens as a rank
// overview with the right peaks and the three outliers marked; a click opens a rank's timeline,
// [ and ] move the focus, the address keeps the focused rank and a reload says what it waits
// for; an outlier compared in full with the median rank opens both. Files opened one after
// another keep at most two full models; the same file opened again
// is not added again; files can be closed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, frames, openFiles, readyCount, shot, start, waitReady } from '../lib/harness.mjs';

const MIB = 2 ** 20;
const expectedPeak = (rank) => {
  const base = 10 * 10 * MIB;
  if (rank === 3) return base + 3 * 8 * 32 * MIB;
  if (rank === 5) return base + 8 * 32 * MIB + 4 * 4 * MIB;
  return base + 8 * 32 * MIB;
};
const expectedReserved = (rank) => (rank === 3 ? 1024 : 512) * MIB;

let env;
let dir;
let files;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'memviz-ranks-'));
  execFileSync('python3', [join(ROOT, 'tests/gen/make_ranks.py'), join(dir, 'run')]);
  files = readdirSync(join(dir, 'run')).sort().map((f) => join(dir, 'run', f));
  // A folder holds more than snapshots.
  writeFileSync(join(dir, 'run', 'notes.txt'), 'not a snapshot');
  env = await start();
});
after(async () => {
  await env?.close();
});

const ranksReady = (page) => page.evaluate(() => performance.getEntriesByName('memviz:ranks-ready').length);
const hash = (page) => page.evaluate(() => location.hash);
const bars = (page) =>
  page.$$eval('.rank-bar', (els) => els.map((e) => ({ ...e.dataset })));

async function openRun(page) {
  const before = await ranksReady(page);
  await page.setInputFiles('#file-input', files);
  await page.waitForFunction((n) => performance.getEntriesByName('memviz:ranks-ready').length > n, before, { timeout: 60000, polling: 50 });
}

test('the 8-rank run: bars with the right peaks, the three outliers and their reasons', async () => {
  assert.equal(files.length, 8);
  const page = await env.newPage();
  await openRun(page);
  assert.match(await page.textContent('#ranks-rule'), /8 ranks · .*rankN.* · 8 of 8 read/);
  assert.equal(await page.isVisible('#ranks'), true);
  assert.equal(await page.isVisible('#plot'), false, 'the overview takes the timeline\'s place');
  assert.equal(await page.textContent('#status'), 'A run of 8 ranks · the rank overview');
  const b = await bars(page);
  assert.equal(b.length, 8);
  for (const [i, bar] of b.entries()) {
    assert.equal(Number(bar.rank), i);
    assert.equal(Number(bar.peakAllocatedBytes), expectedPeak(i), `rank ${i}'s peak`);
    assert.equal(Number(bar.peakReservedBytes), expectedReserved(i), `rank ${i}'s reserved`);
  }
  const outliers = Object.fromEntries(b.filter((x) => x.outlier).map((x) => [x.rank, x.outlier]));
  assert.deepEqual(outliers, { 3: 'peak', 5: 'growth', 6: 'oom' });
  assert.equal(await page.$$eval('#ranks-multiples .multiple', (e) => e.length), 8);
  assert.equal(await page.$$eval('#ranks-overlay polyline', (e) => e.length), 8);
  assert.equal(await page.getAttribute('#ranks-overlay', 'data-aligned-by'), 'iteration');
  // What differs: each outlier against the median rank, by stack, bytes each way.
  assert.equal(await page.$$eval('#ranks-differs .differs', (e) => e.length), 3);
  const more = await page.$$eval('.differs[data-rank="3"] td[data-delta-bytes]', (r) => r.map((x) => Number(x.dataset.deltaBytes)));
  assert.ok(more.some((m) => m === 2 * 8 * 32 * MIB), `rank 3 holds 512 MiB more activations: ${more}`);
  assert.match(await page.textContent('.differs[data-rank="3"] tr:first-child'), /difference \(rank 3.* − median\)/);
  // Every byte count shown is exact here (each rank keeps all its stacks): no 0 B that means "not kept".
  assert.equal(await page.$$eval('.differs td[data-at-most-bytes]', (r) => r.length), 0);
  // Against the median at the matched moment: its peak in the iteration rank 3 peaks in.
  const matched = await page.getAttribute('.differs[data-rank="3"]', 'data-matched-iteration');
  assert.ok(Number(matched) >= 1, `matched iteration: ${matched}`);
  assert.match(await page.textContent('.differs[data-rank="3"] h3'), new RegExp(`the median's peak in the same iteration \\(iteration ${matched}\\)`));
  // Rank 6 peaks as the median does (its OOM is what marks it): its table says so, not empty.
  const oom = await page.$$eval('.differs[data-rank="6"] tr', (r) => r.map((x) => x.textContent));
  if (oom.length === 1) assert.match(oom[0], /^stack/);
  const none = await page.$$eval('.differs tr.differs-none', (r) => r.map((x) => x.closest('.differs').dataset.rank + ': ' + x.textContent));
  for (const t of none) assert.match(t, /^\d+: Their peaks hold the same bytes for every stack: .* is an outlier for (oom|growth|peak)/, t);
  for (const rank of ['3', '5', '6']) {
    const rows = await page.$$eval(`.differs[data-rank="${rank}"] tr`, (r) => r.length);
    assert.ok(rows >= 2, `rank ${rank}'s table has a row under its header`);
  }
  await shot(page, 'ranks-overview');
  // The overlay reads: byte and iteration axes, a legend entry per rank (the outliers saying why),
  // no two curves drawn alike, and the bytes of every rank under the pointer.
  assert.deepEqual(await page.$$eval('#ranks-overlay .y-axis text', (t) => t.map((x) => x.textContent).slice(0, 2)), ['0', '200 MiB']);
  assert.ok((await page.$$eval('#ranks-overlay .x-axis text', (t) => t.map((x) => x.textContent))).includes('iteration →'));
  const legend = await page.$$eval('#ranks-legend li', (l) => l.map((e) => e.textContent));
  assert.equal(legend.length, 8);
  assert.match(legend[3], /^rank 3 · peak 868 MiB · an outlier \(peak\): peak 868 MiB, 2\.4× the median rank \d's 356 MiB; the largest difference at its peak: \+512 MiB at train\.py:\d+/);
  const looks = await page.$$eval('#ranks-overlay polyline', (p) =>
    p.map((e) => [e.getAttribute('stroke'), e.getAttribute('stroke-dasharray'), e.getAttribute('stroke-dashoffset'), e.classList.contains('outlier')].join(' ')));
  assert.equal(new Set(looks).size, 8, `each curve drawn its own way: ${looks}`);
  const overlay = await page.locator('#ranks-overlay').boundingBox();
  assert.equal(await page.isVisible('#ranks-overlay .col[data-column="20"] .readout'), false);
  await page.locator('#ranks-overlay').scrollIntoViewIfNeeded();
  const col = await page.locator('#ranks-overlay .col[data-column="20"] .col-hit').boundingBox();
  await page.mouse.move(col.x + col.width / 2, col.y + col.height / 2);
  await page.waitForFunction(() => getComputedStyle(document.querySelector('#ranks-overlay .col[data-column="20"] .readout')).visibility === 'visible');
  const readout = await page.$$eval('#ranks-overlay .col[data-column="20"] .readout text', (t) => t.map((x) => x.textContent));
  assert.match(readout[0], /^iteration \d\.\d$/);
  assert.equal(readout.length, 9, `a heading and 8 ranks: ${readout}`);
  const listed = await page.getAttribute('#ranks-overlay .col[data-column="20"]', 'data-bytes');
  assert.equal(listed.split(',').length, 8);
  assert.ok(overlay.width > 0);
  // The address says the overview is shown; a reload says what it waits for.
  assert.match(await hash(page), /ranks=overview/);
  await page.reload();
  await page.waitForSelector('#demo:not([disabled])');
  assert.match(await page.textContent('#restore-note'), /a run's rank overview.*cannot read files without you/);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('an outlier compared in full with the median rank: both models in, core\'s compare', async () => {
  const page = await env.newPage();
  await openRun(page);
  await page.click('#ranks-differs [data-compare="3"]');
  await page.waitForSelector('#analysis .cmp-point[data-label="peak"]', { timeout: 60000 });
  // A is the median rank, B the outlier: B − A has the overview's sign (outlier − median).
  assert.match(await page.textContent('#analysis .cmp-files'), /rank4_memory_snapshot/);
  assert.match(await page.textContent('#analysis .cmp-other.current'), /rank3_memory_snapshot/);
  const peak = page.locator('#analysis .cmp-point[data-label="peak"]');
  assert.equal(Number(await peak.getAttribute('data-a-bytes')), expectedPeak(4));
  assert.equal(Number(await peak.getAttribute('data-b-bytes')), expectedPeak(3));
  assert.ok(Number(await peak.getAttribute('data-delta-bytes')) > 0, 'the outlier holds more: a positive B − A');
  assert.equal(Number(await page.getAttribute('#main', 'data-resident-models')), 2);
  // Beside the panel, the two side by side on one aligned axis.
  await page.waitForFunction(() => document.getElementById('main').classList.contains('compare-shown'));
  await page.waitForFunction(() => document.getElementById('compare').dataset.window);
  assert.match(await page.textContent('#cmp-aligned'), /^Aligned by /);
  assert.match(await page.textContent('#cmp-verdict'), /^B holds .* more at its peak/);
  assert.equal(await page.textContent('#compare-toggle'), 'Timeline');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a folder opens as a run ("Open folder…"), its other files left out', async () => {
  const page = await env.newPage();
  const before = await ranksReady(page);
  await page.setInputFiles('#folder-input', join(dir, 'run'));
  await page.waitForFunction((n) => performance.getEntriesByName('memviz:ranks-ready').length > n, before, { timeout: 60000, polling: 50 });
  const b = await bars(page);
  assert.deepEqual(b.map((x) => Number(x.rank)), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.equal(await page.getAttribute('#ranks-rule', 'data-rule'), 'rank-in-name');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a folder dropped on the page opens as a run: its directory entries are walked, nested folders too', async () => {
  const page = await env.newPage();
  const before = await ranksReady(page);
  // The bytes of the run's files, given to the page; the drop carries one directory entry
  // (FileSystemDirectoryEntry's shape: isDirectory, createReader().readEntries in batches, a
  // nested folder) as Chromium's drop of a folder does. No script can make real entries.
  const blobs = files.map((f) => ({ name: f.split('/').pop(), b64: readFileSync(f).toString('base64') }));
  await page.evaluate((list) => {
    const file = (x) => new File([Uint8Array.from(atob(x.b64), (c) => c.charCodeAt(0))], x.name);
    const fileEntry = (x, dir) => ({ isFile: true, isDirectory: false, name: x.name, fullPath: `/${dir}/${x.name}`, file: (ok) => ok(file(x)) });
    const dirEntry = (name, path, children) => ({
      isFile: false,
      isDirectory: true,
      name,
      fullPath: `/${path}`,
      createReader() {
        // Two batches, then an empty one, as readEntries answers.
        const batches = [children.slice(0, 3), children.slice(3), []];
        return { readEntries: (ok) => ok(batches.shift() ?? []) };
      },
    });
    const inner = dirEntry('late', 'run/late', list.slice(6).map((x) => fileEntry(x, 'run/late')));
    const top = dirEntry('run', 'run', [...list.slice(0, 6).map((x) => fileEntry(x, 'run')), inner, fileEntry({ name: 'notes.txt', b64: btoa('not a snapshot') }, 'run')]);
    const e = new Event('drop', { bubbles: true, cancelable: true });
    Object.defineProperty(e, 'dataTransfer', { value: { items: [{ kind: 'file', webkitGetAsEntry: () => top }], files: [] } });
    document.getElementById('main').dispatchEvent(e);
  }, blobs);
  await page.waitForFunction((n) => performance.getEntriesByName('memviz:ranks-ready').length > n, before, { timeout: 60000, polling: 50 });
  const b = await bars(page);
  assert.deepEqual(b.map((x) => Number(x.rank)), [0, 1, 2, 3, 4, 5, 6, 7]);
  for (const [i, bar] of b.entries()) assert.equal(Number(bar.peakAllocatedBytes), expectedPeak(i), `rank ${i}`);
  assert.equal(await page.getAttribute('#ranks-rule', 'data-rule'), 'rank-in-name');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a click opens a rank\'s timeline, [ and ] move the focus, the address keeps it', async () => {
  const page = await env.newPage();
  await openRun(page);
  let n = await readyCount(page);
  await page.click('.rank-bar[data-rank="3"]');
  await waitReady(page, n);
  await frames(page);
  assert.match(await page.textContent('#status'), /rank3_memory_snapshot\.pickle/);
  assert.equal(await page.isVisible('#plot'), true);
  assert.equal(await page.isVisible('#ranks'), false);
  assert.match(await hash(page), /rank=3(&|$)/);
  n = await readyCount(page);
  await page.keyboard.press(']');
  await waitReady(page, n);
  assert.match(await page.textContent('#status'), /rank4_memory_snapshot\.pickle/);
  assert.match(await hash(page), /rank=4(&|$)/);
  n = await readyCount(page);
  await page.keyboard.press('[');
  await page.waitForFunction(() => /rank3_memory/.test(document.getElementById('status').textContent), null, { timeout: 30000 });
  assert.match(await hash(page), /rank=3(&|$)/);
  // Three ranks opened: two full models at most.
  await frames(page);
  assert.ok(Number(await page.getAttribute('#main', 'data-resident-models')) <= 2);
  // Back to the overview, which the address says.
  await page.click('#ranks-toggle');
  await frames(page);
  assert.equal(await page.isVisible('#ranks'), true);
  assert.match(await hash(page), /ranks=overview/);
  await page.click('#ranks-toggle');
  await frames(page);
  assert.equal(await page.isVisible('#plot'), true);
  // A reload: the page cannot read the files again by itself, and says so.
  await page.reload();
  await page.waitForSelector('#demo:not([disabled])');
  const note = await page.textContent('#restore-note');
  assert.match(note, /rank 3 of a run/);
  assert.match(note, /cannot read files without you/);
  // Opened again, the run comes back on rank 3's timeline.
  n = await readyCount(page);
  await page.setInputFiles('#file-input', files);
  await waitReady(page, n);
  assert.match(await page.textContent('#status'), /rank3_memory_snapshot\.pickle/);
  assert.match(await hash(page), /rank=3(&|$)/);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('files opened one after another keep two full models, the others listed to be read again; the same file again is not added; close works', async () => {
  const page = await env.newPage();
  // Copies under names that give no ranks, opened one at a time.
  const singles = [];
  for (const name of ['alpha', 'bravo', 'charlie', 'delta', 'echo']) {
    const p = join(dir, `${name}.pickle`);
    copyFileSync(files[0], p);
    singles.push(p);
  }
  for (const f of singles) await openFiles(page, f);
  const models = async () => Number(await page.getAttribute('#main', 'data-resident-models'));
  const names = () => page.$$eval('#file-select option', (o) => o.map((x) => x.title));
  const closed = (n) => `${n}.pickle (closed: choose to read again)`;
  assert.ok((await models()) <= 2, `resident models: ${await models()}`);
  assert.deepEqual(await names(), ['delta.pickle', 'echo.pickle', closed('alpha'), closed('bravo'), closed('charlie')]);
  // The same file again: read into its place and shown, not a third entry and no "(2)".
  await openFiles(page, singles[3]);
  assert.deepEqual(await names(), ['delta.pickle', 'echo.pickle', closed('alpha'), closed('bravo'), closed('charlie')]);
  assert.match(await page.textContent('#status'), /^delta\.pickle/);
  // A closed file chosen in the menu is read again from its file and shown; the oldest other
  // model goes in its place.
  const n = await readyCount(page);
  await page.selectOption('#file-select', 'r0');
  await waitReady(page, n);
  assert.match(await page.textContent('#status'), /^alpha\.pickle/);
  assert.ok((await models()) <= 2, `resident models: ${await models()}`);
  assert.deepEqual(await names(), ['echo.pickle', 'alpha.pickle', closed('bravo'), closed('charlie'), closed('delta')]);
  await page.click('#close-file');
  await frames(page);
  assert.deepEqual(await names(), ['echo.pickle', closed('bravo'), closed('charlie'), closed('delta')]);
  assert.equal(await models(), 1);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
