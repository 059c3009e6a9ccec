// Search and filter of the timelines, the Allocated Memory (incl. Private Pools) view and the
// Mapped Pages note.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, findPoint, fixture, frames, openFiles, plotData, shot, start } from '../lib/harness.mjs';

const RESNET = fixture('resnet50_fixed.pickle');
const MULTISTREAM = join(ROOT, 'tests/data/real/multistream.pickle');
const MEMPOOL = join(ROOT, 'tests/data/real/metadata_mempool.pickle');

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

/** Pixels of the match outline colour (#d81b60) on the plot. */
const matchPixels = (page) =>
  page.evaluate(() => {
    const c = document.getElementById('plot');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.abs(d[i] - 0xd8) < 10 && Math.abs(d[i + 1] - 0x1b) < 10 && Math.abs(d[i + 2] - 0x60) < 10) n++;
    }
    return n;
  });

const count = (page) => page.textContent('#search-count');

async function showView(page, value) {
  await page.selectOption('#view-select', value);
  await page.waitForFunction(() => !document.getElementById('view-select').disabled && !document.getElementById('status').textContent.includes('Laying out'), null, { polling: 50 });
  await frames(page);
}

test('search: a frame name and an address label find and highlight allocations; sizes filter', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  assert.equal(await count(page), '');
  // Hover an allocation and take its label and a frame from #stack.
  const p = await findPoint(page, (f) => f.hover.startsWith('element:') && /^b[0-9a-f]+_\d+ /.test(f.stack) && /^\w+  \S+\.py:\d+/m.test(f.stack));
  assert.ok(p, 'an allocation with frames');
  const label = p.stack.match(/^(b[0-9a-f]+_\d+) /)[1];
  const fn = p.stack.match(/^(\w+)  \S+\.py:\d+/m)[1];
  await page.mouse.move(1, 1);
  const before = await matchPixels(page);
  await page.fill('#search-frame', fn.toUpperCase());
  await frames(page);
  const n = Number((await count(page)).replaceAll(',', '').match(/^(\d+) match/)?.[1]);
  assert.ok(n > 0, `frame "${fn}": ${await count(page)}`);
  assert.equal((await plotData(page)).searchMatches, String(n));
  const lit = await matchPixels(page);
  assert.ok(lit > before + 50, `highlighted pixels ${before} -> ${lit}`);
  await shot(page, 'search-frame');
  // A size range narrows it.
  await page.fill('#search-min', '1GiB');
  await frames(page);
  assert.equal(await count(page), '0 matches');
  await page.fill('#search-min', '');
  await page.fill('#search-frame', '');
  await frames(page);
  assert.equal(await count(page), '');
  // The address label is one lifetime.
  await page.fill('#search-addr', label);
  await frames(page);
  assert.equal(await count(page), '1 match', `label ${label}`);
  await page.fill('#search-addr', '');
  await page.fill('#search-min', '512KiB');
  await page.fill('#search-max', '1MiB');
  await frames(page);
  assert.ok(Number((await count(page)).match(/^(\d+)/)?.[1]) > 0, await count(page));
  await page.close();
});

test('search: matches among summarized allocations are counted, and the count says how many are drawn; hide freed filters them', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  await page.fill('#search-max', '64KiB');
  await frames(page);
  const all = await count(page);
  const n = Number(all.replaceAll(',', '').match(/^(\d+) match/)?.[1]);
  assert.ok(n > 0, all);
  // Fewer drawn allocations: most small ones go into the summarized band.
  const bands = (await plotData(page)).bands;
  await page.evaluate(() => {
    const d = document.getElementById('detail');
    d.value = '20';
    d.dispatchEvent(new Event('input', { bubbles: true }));
    d.dispatchEvent(new Event('change', { bubbles: true }));
  });
  await page.waitForFunction((b) => document.getElementById('plot').dataset.bands !== b && !document.getElementById('status').textContent.includes('Laying out'), bands, { polling: 50 });
  await frames(page);
  const text = await count(page);
  const m = text.replaceAll(',', '').match(/^(\d+) matches \((\d+) drawn\)$/);
  assert.ok(m, `count "${text}"`);
  assert.equal(Number(m[1]), n, 'summarized matches still count');
  assert.ok(Number(m[2]) < n);
  const d = await plotData(page);
  assert.equal(d.searchMatches, String(n));
  assert.equal(d.searchDrawn, m[2]);
  assert.match(await page.getAttribute('#search-count', 'title'), /summarized into one band/);
  await shot(page, 'search-summarized');
  // Hide freed: only what was live at the end (or before the trace) can match.
  await page.check('#hide-freed');
  await page.waitForFunction((t) => document.getElementById('search-count').textContent !== t && !document.getElementById('status').textContent.includes('Laying out'), text, { polling: 50 });
  const kept = Number((await count(page)).replaceAll(',', '').match(/^(\d+)/)?.[1]);
  assert.ok(kept < n, `${kept} matches with hide freed, ${n} without`);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('private pools: the CUDA graph pool of multistream.pickle is drawn as an envelope with its capacity', async () => {
  const page = await env.newPage();
  await openFiles(page, MULTISTREAM);
  await showView(page, 'allocated-memory-private-pools');
  const boxes = (await plotData(page)).poolBoxes;
  assert.ok(boxes, 'pool envelopes drawn');
  const box = await page.locator('#plot').boundingBox();
  const [x0, y0, x1, y1] = boxes.split(';')[0].split(',').map(Number);
  let text = '';
  for (const fx of [0.9, 0.7, 0.5, 0.97]) {
    for (const fy of [0.05, 0.2, 0.5, 0.8]) {
      await page.mouse.move(box.x + x0 + (x1 - x0) * fx, box.y + y0 + (y1 - y0) * fy);
      await frames(page);
      text = await page.textContent('#stack');
      if (text.startsWith('Private Pool')) break;
    }
    if (text.startsWith('Private Pool')) break;
  }
  // PyTorch's text: the pool key with the stream numbered as the viewer numbers streams.
  assert.match(text, /^Private Pool \(-?\d+,-?\d+,s\d+\): capacity \d+\.\d\S*B \(\d+ bytes\)\n/);
  // The note above the plot, as PyTorch's viewer has.
  assert.equal(await page.isVisible('#pool-note'), true);
  assert.match(await page.textContent('#pool-note'), /private pool memory \(the dashed envelopes\) is shown as allocated until the pool's segment is freed.*MemPools are not deleted before torch\.cuda\.memory\._snapshot\(\) is called/);
  const noteBox = await page.locator('#pool-note').boundingBox();
  assert.ok(noteBox.y + noteBox.height <= box.y + 1, 'the note sits above the plot, not over it');
  await shot(page, 'private-pools');
  await showView(page, 'active-memory-timeline');
  assert.equal(await page.isVisible('#pool-note'), false, 'the note belongs to the private-pools view');
  await showView(page, 'allocator-state-history');
  assert.equal(await page.isVisible('#pool-note'), false);
  await page.close();
});

test('private pools: a MemPool gets an envelope too; Mapped Pages explains an empty view', async () => {
  const page = await env.newPage();
  await openFiles(page, MEMPOOL);
  await showView(page, 'allocated-memory-private-pools');
  assert.ok((await plotData(page)).poolBoxes, 'pool envelopes drawn');
  assert.equal(await page.isVisible('#view-note'), false);
  await showView(page, 'mapped-pages-timeline');
  assert.equal(await page.isVisible('#view-note'), true);
  assert.match(await page.textContent('#view-note'), /^This snapshot has no expandable segments/);
  await showView(page, 'active-memory-timeline');
  assert.equal(await page.isVisible('#view-note'), false);
  await page.close();
});
