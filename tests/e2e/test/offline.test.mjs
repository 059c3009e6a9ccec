// Pages written by the command line open from file:// with the network switched off and every
// request blocked, and show the chosen view: `memviz trace-plot` (a snapshot or a profiler trace; plain, --segments, -d DEVICE,
// --filter-freed), `memviz segment-plot`, `memviz compare A B --html` (the Compare view) and
// the empty viewer of `memviz viewer`, which accepts a file.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launch } from '../lib/browser.mjs';
import { fixture, frames, ROOT, shot, waitReady } from '../lib/harness.mjs';

const OOM = fixture('oom.pickle');
const RESNET = fixture('resnet50_fixed.pickle');
const BUGGY = fixture('resnet50_buggy.pickle');
const MULTI_DEVICE = join(ROOT, 'tests/data/synth/multi_device.pickle');
const CLI = process.env.MEMVIZ_CLI ?? join(ROOT, 'target/debug/memviz');

let browser;
let dir;
before(async () => {
  assert.ok(existsSync(CLI), `no ${CLI}: run trunk build --release, then cargo build -p memviz`);
  browser = await launch();
  // The network switched off, on top of every request being blocked.
  await browser.context.setOffline(true);
  dir = mkdtempSync(join(tmpdir(), 'memviz-offline-'));
});
after(async () => {
  await browser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs the CLI; returns the page it wrote. */
function write(name, args) {
  const out = join(dir, name);
  execFileSync(CLI, [...args, '-o', out]);
  assert.ok(statSync(out).size > 100000, 'one file with everything inlined');
  return out;
}

/**
 * Opens a written page from file:// offline, with every request other than file:, data: and
 * blob: aborted; waits for memviz:ready unless `empty`. Returns { page, blocked, errors }.
 */
async function openOffline(out, { empty = false } = {}) {
  const page = await browser.context.newPage();
  const blocked = [];
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:') || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    blocked.push(url);
    return route.abort();
  });
  await page.goto(pathToFileURL(out).href);
  if (empty) {
    await page.waitForSelector('#demo:not([disabled])', { timeout: 60000 });
  } else {
    await waitReady(page, 0);
  }
  assert.equal(await page.isVisible('#error'), false, await page.textContent('#error'));
  return { page, blocked, errors };
}

async function done({ page, blocked, errors }) {
  assert.deepEqual(blocked, [], 'no network requests');
  assert.deepEqual(errors, []);
  await page.close();
}

const bands = async (page) => Number(await page.getAttribute('#plot', 'data-bands'));

test('segment-plot writes a page that works offline from file:// and shows the Allocator State History', async () => {
  const o = await openOffline(write('segment.html', ['segment-plot', OOM]));
  const { page } = o;
  assert.equal(await page.inputValue('#view-select'), 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  const rows = Number(await page.getAttribute('#event-list', 'data-rows'));
  assert.equal(Number(await page.getAttribute('#event-list', 'data-selected')), rows - 1, 'the last event is selected');
  assert.match(await page.textContent('#stack'), /^\(.* allocated \/ .* reserved\)\n/);
  assert.ok(Number(await page.getAttribute('#segmap', 'data-segments')) > 0);
  await shot(page, 'offline-segment-plot');
  await done(o);
});

test("trace-plot of a profiler trace writes its Active Memory Timeline, the trace's own peak and its steps", async () => {
  const trace = await openOffline(write('profiler-trace.html', ['trace-plot', fixture('gpt_profile.trace.json.gz')]));
  // verify_profiler_trace.py: the trace's Total Allocated peaks at 653,884,928 B (623.6 MiB).
  assert.match(await trace.page.textContent('#status'), /^gpt_profile\.trace\.json\.gz · peak 623\.6 MiB · 841 allocations/);
  assert.ok(Number(await trace.page.getAttribute('#plot', 'data-annotation-rows')) >= 2);
  await done(trace);
});

test('trace-plot writes the Active Memory Timeline; --segments the segment timeline; --filter-freed hides freed allocations', async () => {
  const plain = await openOffline(write('trace.html', ['trace-plot', RESNET]));
  assert.equal(await plain.page.inputValue('#view-select'), 'active-memory-timeline');
  assert.equal(await plain.page.isChecked('#hide-freed'), false);
  const all = await bands(plain.page);
  assert.ok(all > 100, `${all} bands`);
  assert.match(await plain.page.textContent('#status'), /resnet50_fixed\.pickle/);
  await shot(plain.page, 'offline-trace-plot');
  await done(plain);

  const seg = await openOffline(write('trace-segments.html', ['trace-plot', RESNET, '--segments']));
  assert.equal(await seg.page.inputValue('#view-select'), 'active-cached-segment-timeline');
  const segBands = await bands(seg.page);
  assert.ok(segBands > 0 && segBands < all, `${segBands} segment bands`);
  await shot(seg.page, 'offline-trace-plot-segments');
  await done(seg);

  const kept = await openOffline(write('trace-filtered.html', ['trace-plot', RESNET, '--filter-freed']));
  assert.equal(await kept.page.inputValue('#view-select'), 'active-memory-timeline');
  assert.equal(await kept.page.isChecked('#hide-freed'), true);
  const keptBands = await bands(kept.page);
  assert.ok(keptBands > 0 && keptBands < all, `${keptBands} bands with --filter-freed, ${all} without`);
  await done(kept);
});

test('trace-plot -d DEVICE opens on that device', async () => {
  for (const d of ['0', '2']) {
    const o = await openOffline(write(`trace-d${d}.html`, ['trace-plot', MULTI_DEVICE, '-d', d]));
    const label = await o.page.evaluate(() => {
      const s = document.getElementById('device-select');
      return s.options[s.selectedIndex]?.textContent ?? '';
    });
    assert.match(label, new RegExp(`^cuda:${d} `), `device ${d}: ${label}`);
    await done(o);
  }
});

test('viewer writes the empty viewer, which opens a chosen file offline', async () => {
  const o = await openOffline(write('viewer.html', ['viewer']), { empty: true });
  const { page } = o;
  assert.equal(await page.isVisible('#empty'), true);
  await page.setInputFiles('input[type=file] >> nth=0', OOM);
  await waitReady(page, 0);
  assert.ok((await bands(page)) > 0);
  await frames(page);
  await shot(page, 'offline-viewer');
  await done(o);
});

test('memviz compare A B --html: the two side by side, offline, with the verdict', async () => {
  const out = join(dir, 'compare.html');
  execFileSync(CLI, ['compare', RESNET, BUGGY, '--html', out]);
  assert.ok(statSync(out).size > 100000, 'one file with everything inlined');
  const { page, blocked, errors } = await openOffline(out);
  await page.waitForFunction(() => document.getElementById('main').classList.contains('compare-shown'), null, { timeout: 60000 });
  await page.waitForFunction(() => document.getElementById('compare').dataset.window);
  assert.equal(await page.title(), 'resnet50_fixed.pickle vs resnet50_buggy.pickle · memviz');
  assert.equal(await page.$eval('#cmp-a option[selected]', (o) => o.title), 'resnet50_fixed.pickle');
  assert.equal(await page.$eval('#cmp-b option[selected]', (o) => o.title), 'resnet50_buggy.pickle');
  assert.match(await page.textContent('#cmp-verdict'), /^B holds 25\.3 MiB more at its peak; .*the gradients B keeps across iterations: 161 tensors, 97\.5 MiB/);
  await shot(page, 'offline-compare');
  assert.deepEqual(blocked, []);
  assert.deepEqual(errors, []);
  await page.close();
});
