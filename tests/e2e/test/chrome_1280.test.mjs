// What a new user met at 1280 px: the File menu's names cut in the middle (whole in the title),
// the status line whole, the details panel made taller from its top edge, the History's size
// column beside an open Insights panel, and each view keeping its zoom.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, frames, openFiles, plotData, shot, start, waitPlotChange } from '../lib/harness.mjs';

const DEMO = fixture('gpt_amp_annotated.pickle');
const BUGGY = fixture('resnet50_buggy.pickle');

let env;
before(async () => {
  env = await start({ viewport: { width: 1280, height: 800 } });
});
after(async () => {
  await env?.close();
});

const view = (d) => d.view.split(',').map(Number);

async function showView(page, value) {
  await page.selectOption('#view-select', value);
  await page.waitForFunction(() => !document.getElementById('view-select').disabled && !document.getElementById('status').textContent.includes('Laying out'), null, { polling: 50 });
  await frames(page);
}

test('at 1280 px the header is one row, file names are cut in the middle and the status is whole', async () => {
  const page = await env.newPage();
  await openFiles(page, [DEMO, BUGGY]);
  await frames(page);
  const m = await page.evaluate(() => {
    const sel = document.getElementById('file-select');
    const status = document.getElementById('status');
    const shown = [...document.querySelectorAll('header > *')].filter((e) => e.getClientRects().length > 0);
    const tops = shown.map((e) => e.getBoundingClientRect().top);
    return {
      texts: [...sel.options].map((o) => o.textContent),
      titles: [...sel.options].map((o) => o.title),
      fits: sel.scrollWidth <= sel.clientWidth + 1,
      rows: Math.max(...tops) - Math.min(...tops) < 20 ? 1 : 2,
      tops,
      status: [status.scrollWidth, status.clientWidth, status.textContent],
    };
  });
  assert.deepEqual(m.titles, ['gpt_amp_annotated.pickle', 'resnet50_buggy.pickle']);
  assert.deepEqual(m.texts, ['gpt_am…notated', 'resnet50_buggy']);
  assert.equal(m.rows, 1, `the header is one row: ${m.tops}`);
  assert.ok(m.status[0] <= m.status[1], `the status is whole: ${m.status}`);
  await shot(page, 'chrome-1280');
  await page.close();
});

test('the details panel grows when its top edge is dragged up, and the plot gives it the room', async () => {
  const page = await env.newPage();
  await openFiles(page, DEMO);
  const rect = (id) => page.evaluate((i) => document.getElementById(i).getBoundingClientRect().toJSON(), id);
  const before = await rect('stack');
  const plotBefore = await rect('plot');
  const grip = await rect('stack-grip');
  await page.mouse.move(grip.x + 300, grip.y + grip.height / 2);
  await page.mouse.down();
  await page.mouse.move(grip.x + 300, grip.y - 200, { steps: 8 });
  await page.mouse.up();
  await frames(page);
  const after = await rect('stack');
  assert.ok(after.height >= before.height + 150, `details ${before.height} -> ${after.height} px`);
  assert.ok((await rect('plot')).height < plotBefore.height, 'the plot is shorter');
  // And with the keys, back down.
  await page.focus('#stack-grip');
  await page.keyboard.press('ArrowDown');
  assert.ok((await rect('stack')).height < after.height);
  await page.close();
});

test('beside an open Insights panel the History shows its size column whole, and shortens installed paths', async () => {
  const page = await env.newPage();
  await openFiles(page, DEMO);
  await showView(page, 'allocator-state-history');
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden])');
  await frames(page);
  const clipped = await page.evaluate(() => {
    const list = document.getElementById('event-list');
    const width = list.clientWidth;
    return [...document.querySelectorAll('#event-rows > div')].filter((r) => /bytes\)/.test(r.textContent) && r.scrollWidth > width + 1).length;
  });
  assert.equal(clipped, 0, 'rows cut at the list\'s edge');
  const rows = await page.$$eval('#event-rows > div', (d) => d.length);
  assert.ok(rows > 0);
  await page.click('#event-rows > div:nth-child(3)');
  await frames(page);
  assert.doesNotMatch(await page.textContent('#stack'), /site-packages\//);
  await shot(page, 'chrome-1280-history');
  await page.close();
});

test('each view keeps its zoom: the timeline after the segments and the flame graph, the segments after the timeline', async () => {
  const page = await env.newPage();
  await openFiles(page, DEMO);
  const full = await plotData(page);
  await page.focus('#plot');
  await page.keyboard.press('+');
  const zoomed = (await waitPlotChange(page, 'view', full.view)).view;
  await showView(page, 'active-cached-segment-timeline');
  const segFull = (await plotData(page)).view;
  assert.notEqual(segFull, zoomed);
  await page.focus('#plot');
  await page.keyboard.press('+');
  const segZoomed = (await waitPlotChange(page, 'view', segFull)).view;
  await showView(page, 'active-memory-timeline');
  assert.equal((await plotData(page)).view, zoomed, 'the timeline kept its window');
  await showView(page, 'flame-graph');
  await showView(page, 'active-memory-timeline');
  assert.equal((await plotData(page)).view, zoomed, 'after the flame graph too');
  await showView(page, 'active-cached-segment-timeline');
  assert.equal((await plotData(page)).view, segZoomed, 'the segments kept theirs');
  const [a, b] = view(await plotData(page));
  assert.ok(b - a < Number((await plotData(page)).steps));
  await page.close();
});
