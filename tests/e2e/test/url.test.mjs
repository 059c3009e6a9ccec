// The page's place in location.hash: view, device, zoom window, pinned allocation and selected
// event survive a reload when the same file is opened again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, findPoint, fixture, frames, openFiles, plotArea, plotData, start, waitPlotChange } from '../lib/harness.mjs';

const RESNET = fixture('resnet50_fixed.pickle');

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

const hash = (page) => page.evaluate(() => location.hash);

async function reload(page) {
  await page.reload();
  await page.waitForSelector('#demo:not([disabled])');
}

test('zoom window and pin round-trip through the fragment', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const d0 = await plotData(page);
  const area = await plotArea(page);
  await page.mouse.move(area.x + area.width * 0.4, area.y + area.height / 2);
  await page.mouse.wheel(0, -800);
  const d1 = await waitPlotChange(page, 'view', d0.view);
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:'));
  assert.ok(hit, 'a band to pin');
  await page.mouse.click(hit.x, hit.y);
  await frames(page);
  const pinnedText = await page.textContent('#stack');
  const h = await hash(page);
  assert.match(h, /^#file=resnet50_fixed\.pickle&view=active-memory-timeline&device=0&x=\d+-\d+&pin=b[0-9a-f]+_([ep]\d+|g)$/);
  const [x0, x1] = h.match(/x=(\d+)-(\d+)/).slice(1).map(Number);
  const [v0, v1] = d1.view.split(',').map(Number);
  assert.ok(Math.abs(x0 - v0) <= 1 && Math.abs(x1 - v1) <= 1, `${h} vs ${d1.view}`);
  await reload(page);
  assert.equal(await hash(page), h, 'the fragment survives the reload');
  await openFiles(page, RESNET);
  await frames(page);
  const d2 = await plotData(page);
  const [w0, w1] = d2.view.split(',').map(Number);
  assert.ok(Math.abs(w0 - x0) <= 1 && Math.abs(w1 - x1) <= 1, `restored window ${d2.view}, wanted ${x0}-${x1}`);
  assert.equal(await page.getAttribute('#stack', 'class'), 'pinned');
  assert.equal(await page.textContent('#stack'), pinnedText, 'the same allocation is pinned');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('view and selected event round-trip through the fragment', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  await page.selectOption('#view-select', 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  await page.locator('#event-list').focus();
  for (let i = 0; i < 5; i++) await page.keyboard.press('ArrowUp');
  await frames(page);
  const sel = await page.getAttribute('#event-list', 'data-selected');
  const h = await hash(page);
  assert.match(h, new RegExp(`view=allocator-state-history&device=0&event=${sel}$`));
  await reload(page);
  await openFiles(page, RESNET);
  await page.waitForSelector('#event-rows > div.sel');
  assert.equal(await page.inputValue('#view-select'), 'allocator-state-history');
  assert.equal(await page.getAttribute('#event-list', 'data-selected'), sel);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('device, view and selected event of a second device round-trip through the fragment', async () => {
  const file = join(ROOT, 'tests/data/synth/multi_device.pickle');
  const page = await env.newPage();
  await openFiles(page, file);
  const options = await page.evaluate(() => [...document.getElementById('device-select').options].map((o) => ({ value: o.value, text: o.textContent })));
  assert.ok(options.length >= 2, JSON.stringify(options));
  const current = await page.inputValue('#device-select');
  const other = options.find((o) => o.value !== current && !/\(0 entries\)/.test(o.text));
  const index = other.text.match(/\d+/)[0];
  await page.selectOption('#device-select', other.value);
  await page.waitForFunction((i) => location.hash.includes(`device=${i}`), index, { polling: 50 });
  await page.selectOption('#view-select', 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  await page.locator('#event-list').focus();
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('ArrowUp');
  await frames(page);
  const sel = await page.getAttribute('#event-list', 'data-selected');
  const text = await page.textContent('#stack');
  const h = await hash(page);
  assert.match(h, new RegExp(`^#file=multi_device\\.pickle&view=allocator-state-history&device=${index}&event=${sel}$`));
  await reload(page);
  assert.equal(await hash(page), h);
  await openFiles(page, file);
  await page.waitForSelector('#event-rows > div.sel');
  assert.equal(await page.inputValue('#device-select'), other.value, 'the same device');
  assert.equal(await page.inputValue('#view-select'), 'allocator-state-history');
  assert.equal(await page.getAttribute('#event-list', 'data-selected'), sel);
  assert.equal(await page.textContent('#stack'), text, 'the same event and state');
  assert.equal(await hash(page), h);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
