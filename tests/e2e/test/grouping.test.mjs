// Grouping the live set: the group-by menu (the user's line by default, metadata keys of the
// file offered), the forward phase's bytes at the peak in one choice, and a click on a group row
// highlights exactly its allocations. Figures: tests/gen/verify_groups.py (see
// crates/core/src/analysis/grouping_tests.rs).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, openFiles, plotArea, plotData, shot, start, backToTimeline } from '../lib/harness.mjs';

const META = join(ROOT, 'tests/data/real/metadata_layers.pickle');

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

const frames = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

test('live set by metadata:phase: the forward bytes at the peak, and its row highlights its allocations', async () => {
  const page = await env.newPage();
  await openFiles(page, META);
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
  await page.click('#analysis [data-act=tab-live]');
  await page.locator('#analysis .an-live-head').waitFor();
  assert.equal(await page.getAttribute('#analysis .an-live-head', 'data-total-bytes'), '289077028');
  // The user's line by default.
  assert.equal(await page.getAttribute('#analysis table.an-groups', 'data-by'), 'user-line');
  const lines = await page.$$eval('#analysis table.an-groups tr[data-act=group]', (trs) =>
    trs.slice(0, 2).map((tr) => [tr.cells[0].textContent, tr.dataset.bytes]),
  );
  assert.deepEqual(lines[1], ['/home/user/project/train.py:296 (forward)', '56721408']);
  // Files typed as not the user's code are skipped for the user's line (`memviz live
  // --library project/train.py`); cleared, the lines come back.
  await page.fill('#analysis input[data-act=library]', 'project/train.py');
  await page.press('#analysis input[data-act=library]', 'Enter');
  await page.waitForFunction(() => ![...document.querySelectorAll('#analysis table.an-groups td.site')].some((td) => td.textContent.includes('train.py')), null, { polling: 50 });
  assert.equal(await page.inputValue('#analysis input[data-act=library]'), 'project/train.py');
  const skipped = await page.$$eval('#analysis table.an-groups tr[data-act=group]', (trs) => trs.map((tr) => [tr.cells[0].textContent, tr.dataset.bytes]));
  assert.ok(skipped.some(([t, b]) => t === '<no frame outside libraries>' && b === '122052648'), JSON.stringify(skipped));
  await page.fill('#analysis input[data-act=library]', '');
  await page.press('#analysis input[data-act=library]', 'Enter');
  await page.waitForSelector('#analysis table.an-groups tr[data-value="/home/user/project/train.py:296 (forward)"]');
  // The menu offers the file's metadata keys.
  const choices = await page.$$eval('#analysis select[data-act=group-by] option', (o) => o.map((x) => x.dataset.by));
  assert.deepEqual(choices, ['user-line', 'frame', 'op', 'metadata', 'category', 'annotation', 'metadata:phase', 'metadata:layer']);
  await page.selectOption('#analysis select[data-act=group-by]', { index: 6 });
  await page.waitForSelector('#analysis table.an-groups[data-by="metadata:phase"]');
  const forward = page.locator('#analysis table.an-groups tr[data-value=forward]');
  assert.equal(await forward.getAttribute('data-bytes'), '120995840');
  assert.equal(await forward.getAttribute('data-count'), '45');
  assert.match(await forward.textContent(), /^forward115\.4 MiB45$/);
  const none = await page.$$eval('#analysis table.an-groups tr[data-act=group]:not([data-value])', (trs) => trs.map((t) => t.cells[0].textContent));
  assert.ok(none.includes("<allocated in autograd's backward thread: metadata is per thread>"), String(none));
  // A click highlights exactly the 45 allocations of the forward phase.
  await forward.click();
  await frames(page);
  assert.equal(await page.getAttribute('#analysis', 'data-highlight'), '45');
  const drawn = Number(await page.getAttribute('#plot', 'data-highlighted'));
  assert.ok(drawn > 0 && drawn <= 45, `bands highlighted: ${drawn}`);
  assert.ok(await forward.evaluate((tr) => tr.classList.contains('selected')));
  await shot(page, 'grouping_metadata_phase');
  // Colour by the same choice: a legend, and the timeline says what it is coloured by.
  await forward.click();
  await page.click('#analysis [data-act=group-colour]');
  await page.waitForSelector('#analysis ul.an-legend li');
  const legend = await page.$$eval('#analysis ul.an-legend li', (li) => li.map((x) => x.textContent));
  assert.ok(legend.includes('forward'), String(legend));
  await frames(page);
  assert.equal(await page.getAttribute('#plot', 'data-coloured-by'), 'metadata:phase');
  await shot(page, 'grouping_colour_by_phase');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test("a highlighted group's bytes at the cursor and under the pointer", async () => {
  const page = await env.newPage();
  await openFiles(page, META);
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
  await page.click('#analysis [data-act=tab-live]');
  await page.locator('#analysis .an-live-head').waitFor();
  await page.selectOption('#analysis select[data-act=group-by]', { index: 6 });
  await page.waitForSelector('#analysis table.an-groups[data-by="metadata:phase"]');
  await page.click('#analysis table.an-groups tr[data-value=forward]');
  await frames(page);
  // The peak's entry, a link in the head, puts the cursor there: the stack panel reads the whole
  // forward phase's bytes then (verify_groups.py: 120,995,840 at entry 125).
  await page.click('#analysis .an-live-head .entry-link');
  await page.waitForFunction(() => document.getElementById('plot').dataset.cursor?.startsWith('125:'), null, { polling: 50 });
  await page.waitForSelector('#stack .stack-group');
  assert.equal(await page.textContent('#stack .stack-group'), 'forward: 115.4 MiB live after entry 125 (at most 146.6 MiB)\n');
  assert.equal(await page.getAttribute('#stack .stack-group', 'title'), 'forward: 115.4 MiB (120995840 bytes)');
  // The pointer over the timeline at the cursor's x reads the same, over a band or not.
  const [, , x] = (await plotData(page)).cursor.split(':');
  const area = await plotArea(page);
  await page.mouse.move(area.box.x + Number(x) + 0.5, area.y + area.height / 2);
  await page.waitForSelector('#tip:not([hidden]) .tip-group');
  const bytes = Number(await page.getAttribute('#tip', 'data-group-bytes'));
  assert.ok(Math.abs(bytes - 120995840) < 20e6, `the forward phase near the peak: ${bytes}`);
  // At the left edge, before the model ran, the phase holds nothing.
  await page.mouse.move(area.x + 1, area.y + area.height / 2);
  await page.waitForFunction(() => document.getElementById('tip').dataset.groupBytes === '0', null, { polling: 50 });
  assert.match(await page.textContent('#tip .tip-group'), /^forward: 0 B live (after entry \d+|before the first entry) \(at most 146\.6 MiB\)$/);
  await shot(page, 'grouping_bytes_at_pointer');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('runs of entries that share a metadata value are a band above the timeline', async () => {
  const page = await env.newPage();
  await openFiles(page, META);
  await frames(page);
  // A row of record_function regions, then the row of metadata runs.
  const rows = Number((await plotData(page)).annotationRows);
  assert.equal(rows, 2);
  const area = await plotArea(page);
  const y = area.box.y + 10 + (rows - 1) * 17 + 8;
  // Along the row, the first run under the pointer that is the forward phase: entries 6..100
  // (the file's first forward pass; crates/core/src/analysis/metadata_runs.rs).
  let found = null;
  for (let x = area.x + 1; x < area.x + area.width * 0.2 && !found; x += 2) {
    await page.mouse.move(x, y);
    await frames(page);
    const text = await page.evaluate(() => {
      const tip = document.getElementById('tip');
      return tip.hidden ? '' : tip.textContent;
    });
    if (text.startsWith('metadata: forward')) found = { x, text };
  }
  assert.ok(found, 'a run of the forward phase in the first fifth of the run');
  assert.match(found.text, /^metadata: forward\nentries 6\.\.100\n\d+\.\d{3} ms\n$/);
  await shot(page, 'grouping_metadata_band');
  // A click zooms to the run.
  const before = (await plotData(page)).view;
  await page.mouse.click(found.x, y);
  await page.waitForFunction((v) => document.getElementById('plot').dataset.view !== v, before, { polling: 50 });
  const [x0, x1] = (await plotData(page)).view.split(',').map(Number);
  assert.ok(x1 - x0 < Number((await plotData(page)).steps) / 4, `zoomed to the run: ${x0}..${x1}`);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('compare by the Live set grouping: each row highlights the allocations of its group in A', async () => {
  const page = await env.newPage();
  await openFiles(page, [META, join(ROOT, 'tests/data/real/growth_leak.pickle')]);
  await backToTimeline(page);
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
  await page.click('#analysis [data-act="tab-compare"]');
  await page.waitForSelector('#analysis .cmp-point');
  assert.equal(await page.locator('#analysis tr[data-act=cmp-group]').count(), 0, 'rows by stack are no handles');
  const button = page.locator('#analysis [data-act=cmp-by-group]');
  assert.equal(await button.textContent(), 'Compare by your line');
  await button.click();
  await page.waitForSelector('#analysis [data-act=cmp-by-group][aria-pressed=true]');
  await page.waitForSelector('#analysis .cmp-point tr[data-act=cmp-group]');
  assert.equal(await page.textContent('#analysis .cmp-point th.site'), 'your line');
  // The first row where A holds something: its A cell's allocations are what a click highlights.
  const rows = page.locator('#analysis .cmp-point tr[data-act=cmp-group]');
  let row = null;
  let count = 0;
  for (let i = 0; i < (await rows.count()) && !row; i++) {
    const title = await rows.nth(i).locator('td').nth(1).getAttribute('title');
    const n = Number(/, (\d+) allocations$/.exec(title)?.[1] ?? 0);
    if (n > 0) {
      row = rows.nth(i);
      count = n;
    }
  }
  assert.ok(row, 'a group A holds');
  await row.evaluate((tr) => tr.closest('details').setAttribute('open', ''));
  await row.click();
  await frames(page);
  assert.equal(await page.getAttribute('#analysis', 'data-highlight'), String(count));
  assert.ok(await row.evaluate((tr) => tr.classList.contains('selected')));
  await shot(page, 'grouping_compare_by_line');
  // Back to stacks: the row's highlight goes with its table.
  await page.click('#analysis [data-act=cmp-by-group]');
  await page.waitForSelector('#analysis [data-act=cmp-by-group][aria-pressed=false]');
  assert.equal(await page.getAttribute('#analysis', 'data-highlight'), '0');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the flame graph with the Live set grouping as its first level', async () => {
  const page = await env.newPage();
  await openFiles(page, META);
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
  await page.click('#analysis [data-act=tab-live]');
  await page.locator('#analysis .an-live-head').waitFor();
  await page.selectOption('#analysis select[data-act=group-by]', { index: 6 });
  await page.waitForSelector('#analysis table.an-groups[data-by="metadata:phase"]');
  await page.click('#analysis [data-act=toggle]');
  await page.selectOption('#view-select', 'flame-graph');
  await page.waitForSelector('#flame:not([hidden]) #flame-graph .fl');
  assert.equal(await page.getAttribute('#flame-graph', 'data-by'), 'frame');
  assert.equal(await page.textContent('#flame-by-title'), 'metadata "phase"');
  await page.check('#flame-by-group');
  await page.waitForFunction(() => document.getElementById('flame-graph').dataset.by === 'metadata:phase', null, { polling: 50 });
  // The first level is the phases; the forward phase weighs the Live set's bytes at the peak.
  const forward = page.locator('#flame-graph .fl[data-name="forward"]');
  assert.equal(await forward.getAttribute('data-value'), '120995840');
  await forward.click();
  await page.waitForFunction(() => document.getElementById('flame-graph').dataset.highlight === '45', null, { polling: 50 });
  await shot(page, 'grouping_flame_by_phase');
  // Back to frames: the focus and its highlight go.
  await page.uncheck('#flame-by-group');
  await page.waitForFunction(() => document.getElementById('flame-graph').dataset.by === 'frame', null, { polling: 50 });
  assert.equal(await page.getAttribute('#flame-graph', 'data-highlight'), '0');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test("a group's highlight follows its group into the other file shown", async () => {
  const page = await env.newPage();
  await openFiles(page, [META, join(ROOT, 'tests/data/real/growth_leak.pickle')]);
  await backToTimeline(page);
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
  await page.click('#analysis [data-act=tab-live]');
  await page.locator('#analysis .an-live-head').waitFor();
  await page.selectOption('#analysis select[data-act=group-by]', { index: 2 });
  await page.waitForSelector('#analysis table.an-groups[data-by="op"]');
  const file = () => page.$eval('#file-select', (s) => s.selectedOptions[0].title);
  const first = await file();
  // `memviz live --by op`: linear holds 10 allocations at the leak's peak, 4 at the layers'.
  const counts = { 'growth_leak.pickle': '10', 'metadata_layers.pickle': '4' };
  const name = (f) => Object.keys(counts).find((k) => f.endsWith(k));
  await page.click('#analysis table.an-groups tr[data-value=linear]');
  await page.waitForFunction((n) => document.getElementById('analysis').dataset.highlight === n, counts[name(first)], { polling: 50 });
  // The other file: its own allocations of linear, its row selected.
  const other = await page.$eval('#file-select', (s) => [...s.options].find((o) => !o.selected).value);
  await page.selectOption('#file-select', other);
  await page.waitForFunction((f) => document.getElementById('file-select').selectedOptions[0].title !== f, first, { polling: 50 });
  const second = await file();
  await page.waitForFunction((n) => document.getElementById('analysis').dataset.highlight === n, counts[name(second)], { polling: 50 });
  await page.waitForSelector('#analysis table.an-groups tr[data-value=linear].selected');
  await frames(page);
  assert.ok(Number((await plotData(page)).highlighted) > 0, 'its bands outlined');
  await shot(page, 'grouping_highlight_follows');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the Categories tab charts the grouping over time', async () => {
  const page = await env.newPage();
  await openFiles(page, META);
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
  await page.click('#analysis [data-act=tab-live]');
  await page.locator('#analysis .an-live-head').waitFor();
  await page.selectOption('#analysis select[data-act=group-by]', { index: 6 });
  await page.waitForSelector('#analysis table.an-groups[data-by="metadata:phase"]');
  await page.click('#analysis [data-act=tab-categories]');
  const button = page.locator('#analysis [data-act=group-timeline]');
  assert.equal(await button.textContent(), 'Chart by metadata "phase" over time');
  await button.click();
  await page.waitForSelector('#cat-timeline:not([hidden]) canvas.cat-chart');
  // The file's peak (289,077,028 bytes) is a sample of the chart.
  assert.equal(await page.getAttribute('#cat-timeline .cat-peak', 'data-peak-bytes'), '289077028');
  assert.match(await page.textContent('#cat-timeline .cat-src'), /^\(allocations grouped by metadata "phase", \d+ points\)$/);
  assert.match(await page.textContent('#cat-timeline .cat-legend'), /forward/);
  await shot(page, 'grouping_over_time');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
