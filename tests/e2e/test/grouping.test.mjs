// Grouping the live set: the group-by menu (the user's line by default, metadata keys of the
// file offered), the forward phase's bytes at the peak in one choice, and a click on a group row
// highlights exactly its allocations. Figures: tests/gen/verify_groups.py (see
// crates/core/src/analysis/grouping_tests.rs).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, openFiles, shot, start } from '../lib/harness.mjs';

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
