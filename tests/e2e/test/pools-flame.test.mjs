// Pins kept by their allocation's key (address and alloc entry) through Detail, hide freed, a
// view of another mode and a reload; the flame view (live set at the peak and bytes × lifetime,
// a click that highlights a frame's allocations on the timeline); the private-pools view on a
// real CUDA-graph pool and on the synthetic pools file.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, findPoint, frames, openFiles, plotData, readyCount, shot, start, waitReady } from '../lib/harness.mjs';

const REUSE = join(ROOT, 'tests/data/synth/segment_reuse.pickle');
const POOLS = join(ROOT, 'tests/data/synth/private_pools.pickle');
const MULTISTREAM = join(ROOT, 'tests/data/real/multistream.pickle');

let env;
before(async () => {
  env = await start({ viewport: { width: 1280, height: 800 } });
});
after(async () => {
  await env?.close();
});

const hash = (page) => page.evaluate(() => location.hash);
const pinned = (page) => page.getAttribute('#stack', 'data-pinned');

async function settled(page) {
  await page.waitForFunction(() => !document.getElementById('view-select').disabled && !document.getElementById('status').textContent.includes('Laying out'), null, { polling: 50 });
  await frames(page);
}

async function showView(page, value) {
  await page.selectOption('#view-select', value);
  await settled(page);
}

async function setDetail(page, n) {
  await page.$eval('#detail', (el, v) => {
    el.value = String(v);
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, n);
  await page.waitForFunction((v) => document.getElementById('detail-label').dataset.drawn === String(v), n, { polling: 50 });
  await settled(page);
}

test('a pin at a reused address keeps its lifetime through Detail, hide freed, the segment view and a reload', async () => {
  const page = await env.newPage();
  await openFiles(page, REUSE);
  // A later lifetime of an address (version 1 or more in its label).
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:') && /^b[0-9a-f]+_[1-9]\d* /.test(f.stack), { cols: 24, rows: 12 });
  assert.ok(hit, 'no allocation at a reused address found');
  await page.mouse.click(hit.x, hit.y);
  await frames(page);
  const label = await pinned(page);
  assert.match(label, /^b[0-9a-f]+_[1-9]\d*$/);
  const addr = label.slice(1).split('_')[0];
  const h = await hash(page);
  const pin = h.match(/pin=(b[0-9a-f]+_e\d+)/)?.[1];
  assert.ok(pin, `the fragment names the pin by its key: ${h}`);
  assert.equal(pin.slice(1).split('_')[0], addr);
  const total = Number(await page.getAttribute('#detail-label', 'data-total'));
  for (const step of ['detail', 'hide', 'unhide', 'full']) {
    if (step === 'detail') await setDetail(page, 1);
    if (step === 'hide') await page.check('#hide-freed');
    if (step === 'unhide') await page.uncheck('#hide-freed');
    if (step === 'full') await setDetail(page, total);
    await settled(page);
    const now = await pinned(page);
    if (step === 'hide' && now === null) {
      // Freed within the trace, so hide freed leaves it out: remembered, not pinned elsewhere.
      assert.match(await hash(page), new RegExp(`pin=${pin}`), 'the key stays in the fragment');
      continue;
    }
    assert.equal(now, label, `after ${step}`);
    assert.match(await hash(page), new RegExp(`pin=${pin}(&|$)`), `after ${step}`);
  }
  // The segment timeline has no such allocation; back on the allocations it is pinned again.
  await showView(page, 'active-cached-segment-timeline');
  assert.notEqual(await pinned(page), label);
  await showView(page, 'active-memory-timeline');
  assert.equal(await pinned(page), label, 'pinned again after the view switch');
  // A reload opens the same lifetime from the fragment.
  const before = await hash(page);
  await page.reload();
  await page.waitForSelector('#demo:not([disabled])');
  await openFiles(page, REUSE);
  await frames(page);
  assert.equal(await hash(page), before);
  assert.equal(await pinned(page), label, 'the same lifetime after a reload');
  await shot(page, 'pools-flame-pin-reuse');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

// What `memviz live --json` (and `memviz flame --json`, node 0) prints for the demo snapshot
// (tests/data/real/gpt_amp_annotated.pickle): the live bytes at its peak, after entry 2355.
const DEMO_PEAK_LIVE_BYTES = 3_833_025_704;

const flameRoot = (page) => page.$eval('#flame-graph', (g) => ({
  value: Number(g.dataset.rootValue),
  unit: g.dataset.unit,
  boxes: Number(g.dataset.boxes),
  focus: g.dataset.focus,
  highlight: Number(g.dataset.highlight),
}));

test('flame view: the demo\'s live set at the peak, bytes × lifetime, a frame focused and highlighted on the timeline', async () => {
  const page = await env.newPage();
  const ready = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, ready);
  await showView(page, 'flame-graph');
  await page.waitForSelector('#flame:not([hidden]) #flame-graph .fl');
  let r = await flameRoot(page);
  assert.equal(r.unit, 'bytes');
  assert.equal(r.value, DEMO_PEAK_LIVE_BYTES, 'root = live bytes at the peak');
  assert.match(await page.textContent('#flame-title'), /^Live at the peak: /);
  const root = page.locator('#flame-graph .fl[data-node="0"]');
  assert.equal(Number(await root.getAttribute('data-value')), r.value);
  assert.ok(r.boxes > 5, `${r.boxes} boxes`);
  // Python frames only under stacks that have them: no C++ frame below a .py frame.
  const names = await page.$$eval('#flame-graph .fl', (els) => els.map((e) => e.dataset.name));
  assert.ok(names.some((n) => /\.py:\d+ \(/.test(n)), 'Python frames are shown');
  assert.ok(!names.some((n) => n.includes('CUDACachingAllocator')), 'allocator internals are not');
  // Hover: frame, bytes and share in the stack panel.
  const child = page.locator('#flame-graph .fl[data-node]:not([data-node="0"])').first();
  await child.hover();
  await frames(page);
  assert.match(await page.textContent('#stack'), /\d+(\.\d)? (B|KiB|MiB|GiB) · \d+\.\d% of /);
  // Click a frame deep enough to name some allocations, not all.
  const target = await page.$$eval('#flame-graph .fl', (els, total) => {
    const e = els.find((x) => Number(x.dataset.value) < total * 0.6 && Number(x.dataset.value) > total * 0.02 && x.offsetWidth > 30);
    return e?.dataset.node ?? null;
  }, r.value);
  assert.ok(target, 'a frame of 2–60% of the live bytes');
  const targetValue = Number(await page.getAttribute(`#flame-graph .fl[data-node="${target}"]`, 'data-value'));
  await page.click(`#flame-graph .fl[data-node="${target}"]`);
  await frames(page);
  r = await flameRoot(page);
  assert.equal(r.focus, target, 'focused');
  assert.ok(r.highlight > 0, 'its allocations are highlighted');
  const focusedBox = await page.$eval(`#flame-graph .fl[data-node="${target}"]`, (e) => e.style.width);
  assert.match(focusedBox, /^100(\.0+)?%$/, 'the focused frame fills the width');
  assert.match(await hash(page), /view=flame-graph.*&frame=/);
  await shot(page, 'pools-flame-flame-focused');
  // The timeline shows them highlighted.
  await showView(page, 'active-memory-timeline');
  await page.waitForFunction(() => Number(document.getElementById('plot').dataset.highlighted) > 0, null, { polling: 50 });
  const d = await plotData(page);
  assert.ok(Number(d.highlighted) > 0 && Number(d.highlighted) <= r.highlight, `${d.highlighted} highlighted bands`);
  await shot(page, 'pools-flame-timeline-highlight');
  // Bytes × lifetime over the (whole) window.
  await showView(page, 'flame-graph');
  await page.check('input[name=flame-mode][value=lifetime]');
  await page.waitForFunction(() => document.getElementById('flame-graph').dataset.unit === 'byte-entries', null, { polling: 50 });
  r = await flameRoot(page);
  assert.ok(r.value > targetValue, 'byte-entries outweigh bytes');
  assert.match(await page.textContent('#flame-title'), /^Bytes × lifetime over entries \d+–\d+ \(the visible window\)/);
  assert.match(await hash(page), /flame=lifetime/);
  // Clicking the focused frame again shows the whole graph and clears the highlight.
  const again = await page.$('#flame-graph .fl.focus');
  if (again) {
    await again.click();
    await frames(page);
    assert.equal((await flameRoot(page)).focus, '');
  }
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('private pools: a real CUDA-graph pool and the synthetic pools each drawn as envelopes of their reserved memory', async () => {
  for (const file of [MULTISTREAM, POOLS]) {
    const page = await env.newPage();
    await openFiles(page, file);
    await showView(page, 'allocated-memory-private-pools');
    await page.waitForFunction(() => document.getElementById('plot').dataset.poolKeys, null, { polling: 50 });
    const d = await plotData(page);
    const envelopes = d.poolKeys.split(';');
    // An envelope per (pool, stream), named as PyTorch names them, sized by reserved memory.
    for (const e of envelopes) assert.match(e, /^-?\d+,-?\d+,s\d+:[1-9]\d*$/, d.poolKeys);
    assert.ok(envelopes.length >= (file === POOLS ? 2 : 1), `${file}: ${d.poolKeys}`);
    assert.equal(new Set(envelopes.map((e) => e.split(':')[0])).size, envelopes.length, 'one envelope per key');
    assert.ok(d.poolBoxes, 'drawn');
    assert.match(await page.textContent('#pool-note'), /never shrinks/);
    await shot(page, `pools-flame-${file.endsWith('multistream.pickle') ? 'multistream' : 'synth'}-pools`);
    assert.deepEqual(page.memviz.errors, []);
    await page.close();
  }
});

test('private pools: each pool\'s small allocations fold into one stripe of its colour, with its own hover text', async () => {
  const page = await env.newPage();
  await openFiles(page, MULTISTREAM);
  await showView(page, 'allocated-memory-private-pools');
  await page.waitForFunction(() => document.getElementById('plot').dataset.poolKeys, null, { polling: 50 });
  // Every allocation has a band at full Detail: nothing to fold.
  assert.equal((await plotData(page)).poolStripes, '');
  await setDetail(page, 4);
  const d = await plotData(page);
  const keys = d.poolKeys.split(';').map((e) => e.split(':')[0]);
  const stripes = d.poolStripes.split(';');
  assert.ok(stripes.length >= 1, d.poolStripes);
  for (const s of stripes) {
    const [key, count] = s.split(':');
    assert.ok(keys.includes(key), `${key} is a pool of ${d.poolKeys}`);
    assert.ok(Number(count) > 0, s);
  }
  const hit = await findPoint(page, (f) => /small allocations, folded into one stripe/.test(f.stack), { cols: 24, rows: 20 });
  assert.ok(hit, 'no pointer position over a pool\'s stripe');
  assert.match(hit.stack, /^Private Pool \(-?\d+,-?\d+,s\d+\): small allocations, folded into one stripe\n[\d.]+ [KMGT]?i?B live here, of \d+ allocations of this pool/, hit.stack);
  await shot(page, 'pools-flame-stripes');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('insights: stalled frees of the record_stream file are a problem whose entries are links to the timeline', async () => {
  const page = await env.newPage();
  await openFiles(page, join(ROOT, 'tests/data/synth/record_stream.pickle'));
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
  const card = page.locator('#analysis .finding.problem[data-kind=stalled_free]');
  assert.equal(await card.count(), 1);
  assert.match(await card.textContent(), /2 frees waited for another stream \(record_stream\)/);
  assert.ok(Number(await card.getAttribute('data-elements')) >= 1, 'it names the allocations held');
  const link = card.locator('.entry-link').first();
  assert.ok(await link.count(), 'the entries it cites are links');
  const entry = await link.getAttribute('data-i');
  await link.click();
  await page.waitForFunction(() => document.getElementById('plot').dataset.cursor, null, { polling: 50 });
  assert.ok((await plotData(page)).cursor.startsWith(`${entry}:`), 'the cursor is on the cited entry');
  await shot(page, 'pools-flame-stalled-frees');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
