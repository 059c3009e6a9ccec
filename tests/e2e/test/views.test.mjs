// The views beside the Active Memory Timeline: Allocator State History (virtualized event list,
// keys, clicks, the segment map and its hover texts), the segment and mapped-pages timelines, and
// Allocator Settings.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, frames, openFiles, plotData, shot, start } from '../lib/harness.mjs';

const RESNET = fixture('resnet50_fixed.pickle');
const OOM = fixture('oom.pickle');
const needFixtures = RESNET && OOM ? false : 'needs ../shared/fixtures';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

const listState = (page) =>
  page.evaluate(() => {
    const l = document.getElementById('event-list');
    const sel = document.querySelector('#event-rows > div.sel');
    return {
      rows: Number(l.dataset.rows),
      selected: Number(l.dataset.selected),
      inDom: document.querySelectorAll('#event-rows > div').length,
      selText: sel?.textContent ?? null,
      selVisible: sel ? (() => {
        const a = sel.getBoundingClientRect();
        const b = l.getBoundingClientRect();
        return a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
      })() : false,
      stack: document.getElementById('stack').textContent,
      header: document.getElementById('segmap-header').textContent,
    };
  });

async function showView(page, value) {
  await page.selectOption('#view-select', value);
  await page.waitForFunction(() => !document.getElementById('view-select').disabled && !document.getElementById('status').textContent.includes('Laying out'), null, { polling: 50 });
  await frames(page);
}

test('Allocator State History: the last event is selected; keys and clicks move the selection; the map explains itself', { skip: needFixtures }, async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  await showView(page, 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  let s = await listState(page);
  assert.ok(s.rows > 10000, `rows ${s.rows}`);
  assert.equal(s.selected, s.rows - 1, 'the last event is selected');
  assert.ok(s.selVisible, 'the selected row is scrolled into view');
  assert.ok(s.inDom < 200, `only the visible rows exist (${s.inDom} in the DOM)`);
  assert.match(s.stack, /^\(\d+\.\d[KMG]?i?B \(\d+ bytes\) allocated \/ \d+\.\d[KMG]?i?B \(\d+ bytes\) reserved\)\n/);
  assert.match(s.header, /allocated \/ .* reserved\) after event \d+ of \d+/);
  // formatEvent: action padded to 14, label to 18, then the size.
  assert.match(s.selText, /^(alloc|free_requested|free_completed|segment_alloc|segment_free) +[bs][0-9a-f]+_\d+ +\d+\.\dK?M?G?i?B \(\d+ bytes\)/);
  assert.equal(s.selText.indexOf(' '), s.selText.match(/^\S+/)[0].length);
  assert.equal(s.selText.match(/^\S+ +/)[0].length, 15);
  // ArrowUp moves the selection and redraws the map.
  await page.locator('#event-list').focus();
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('ArrowUp');
  await frames(page);
  s = await listState(page);
  assert.equal(s.selected, s.rows - 3);
  await page.keyboard.press('ArrowDown');
  await frames(page);
  assert.equal((await listState(page)).selected, s.rows - 2);
  // Home jumps to the first event; the map shows the state after it.
  await page.keyboard.press('Home');
  await frames(page);
  s = await listState(page);
  assert.equal(s.selected, 0);
  assert.ok(s.selVisible);
  // Scroll to the middle: still only the visible rows.
  await page.evaluate(() => { const l = document.getElementById('event-list'); l.scrollTop = l.scrollHeight / 2; });
  await frames(page);
  await frames(page);
  s = await listState(page);
  assert.ok(s.inDom < 200);
  const mid = await page.evaluate(() => Number(document.querySelector('#event-rows > div:nth-child(5)').dataset.row));
  assert.ok(mid > 1000, `row ${mid} in the middle`);
  await page.click('#event-rows > div:nth-child(5)');
  await frames(page);
  s = await listState(page);
  assert.equal(s.selected, mid, 'a click selects');
  await shot(page, 'state-history');
  // Pointing at the map: a block, a segment.
  const box = await page.locator('#segmap').boundingBox();
  const found = {};
  for (let j = 0; j < 24 && !(found.block && found.segment); j++) {
    for (let i = 0; i < 40; i++) {
      await page.mouse.move(box.x + 8 + ((i + 0.5) / 40) * (box.width - 16), box.y + 8 + ((j + 0.3) / 24) * (box.height - 16));
      const h = await page.evaluate(async () => {
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        return { hover: document.getElementById('segmap').dataset.hover, stack: document.getElementById('stack').textContent };
      });
      const kind = h.hover.split(':')[0];
      if (kind && !found[kind]) found[kind] = h.stack;
      if (found.block && found.segment) break;
    }
  }
  assert.ok(found.block, 'a block was found on the map');
  assert.match(found.block, /^b[0-9a-f]+_\d+ \d+\.\d\S*B \(\d+ bytes\) allocation( \(block freed but waiting due to record_stream\))? \(stream \d+\)\n/);
  if (found.segment) assert.match(found.segment, /^s[0-9a-f]+_\d+: segment .* allocated, .* free \([\d.e-]+% internal\) \(stream \d+\)/);
  await shot(page, 'state-history-hover');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the OOM snapshot: the last event of the history and its map', { skip: needFixtures }, async () => {
  const page = await env.newPage();
  await openFiles(page, OOM);
  await showView(page, 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  const s = await listState(page);
  assert.equal(s.selected, s.rows - 1);
  const oomRow = await page.evaluate(() => [...document.querySelectorAll('#event-rows > div')].map((d) => d.textContent).find((t) => t.startsWith('OOM')));
  if (oomRow) assert.match(oomRow, /^OOM \(requested .*, CUDA has .* memory free\)$/);
  assert.ok(Number(await page.getAttribute('#segmap', 'data-segments')) > 0);
  await shot(page, 'state-history-oom');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('Active Cached Segment Timeline and Mapped Pages Timeline reuse the timeline', { skip: needFixtures }, async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const alloc = await plotData(page);
  await showView(page, 'active-cached-segment-timeline');
  await page.waitForFunction((b) => document.getElementById('plot').dataset.bands !== b, alloc.bands, { polling: 50 });
  const seg = await plotData(page);
  assert.ok(Number(seg.bands) > 0, 'segments are drawn');
  assert.match(await page.textContent('#status'), /peak/);
  assert.equal(await page.isVisible('#plot'), true);
  assert.equal(await page.isVisible('#panel'), false);
  await shot(page, 'segment-timeline');
  await showView(page, 'mapped-pages-timeline');
  await frames(page);
  assert.equal(await page.isVisible('#plot'), true);
  await shot(page, 'mapped-pages-timeline');
  await showView(page, 'active-memory-timeline');
  await frames(page);
  assert.equal((await plotData(page)).bands, alloc.bands);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('Allocator Settings: a table with explanations, or a plain note', { skip: needFixtures }, async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  await showView(page, 'allocator-settings');
  await page.waitForSelector('#settings:not([hidden])');
  const text = await page.textContent('#settings');
  if (text.includes('No allocator settings')) {
    assert.equal(text, 'No allocator settings recorded in this snapshot.');
  } else {
    assert.match(text, /expandable_segments/);
    assert.match(text, /mapping pages/);
    assert.match(text, /max_split_size/);
  }
  assert.equal(await page.isVisible('#plot'), false);
  await shot(page, 'settings');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('"hide freed" leaves out allocations made and freed within the trace', { skip: needFixtures }, async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const all = await plotData(page);
  await page.check('#hide-freed');
  const kept = await page.waitForFunction((b) => {
    const d = document.getElementById('plot').dataset;
    return d.bands !== b && !document.getElementById('status').textContent.includes('Laying out') ? d.bands : null;
  }, all.bands, { polling: 50 });
  const n = Number(await kept.jsonValue());
  assert.ok(n < Number(all.bands), `${n} bands with hide freed, ${all.bands} without`);
  await frames(page);
  await shot(page, 'hide-freed');
  await page.uncheck('#hide-freed');
  await page.waitForFunction((b) => document.getElementById('plot').dataset.bands === b, all.bands, { polling: 50 });
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
