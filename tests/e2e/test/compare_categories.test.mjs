// Two snapshots compared (curves on one axis, differences at matched points), the profiler's
// memory timeline as a stacked category timeline, and snapshots coloured by inferred category.
// The figures are those of the tests in crates/core/src/analysis/{compare,categories}.rs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { brokenCells, findPoint, fixture, frames, openFiles, plotData, shot, start, backToTimeline } from '../lib/harness.mjs';

const BUGGY = fixture('resnet50_buggy.pickle');
const FIXED = fixture('resnet50_fixed.pickle');
const PROFILE = fixture('resnet50_profile.timeline.json');
const PROFILE_GZ = fixture('resnet50_profile.timeline.json.gz');

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

async function openPanel(page) {
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
}

test('compare: the buggy ResNet against the fixed one', async () => {
  const page = await env.newPage();
  await openFiles(page, [FIXED, BUGGY]);
  await backToTimeline(page);
  // Show the fixed file (A); the buggy one is B.
  const names = await page.$$eval('#file-select option', (o) => o.map((x) => x.title));
  const fixedIndex = names.findIndex((n) => n.includes('resnet50_fixed'));
  assert.ok(fixedIndex >= 0, `files: ${names}`);
  await page.selectOption('#file-select', { index: fixedIndex });
  await frames(page);
  await openPanel(page);
  await page.click('#analysis [data-act="tab-compare"]');
  await page.waitForSelector('#analysis .cmp-point');
  assert.match(await page.textContent('#analysis .cmp-files'), /resnet50_fixed/);
  assert.match(await page.textContent('#analysis .cmp-other.current'), /resnet50_buggy/);
  assert.match(await page.textContent('#analysis .cmp-align'), /Aligned by iteration \(5 iterations in A, 5 in B/);
  assert.equal(await page.getAttribute('#analysis canvas.cmp-chart', 'data-points'), '400');
  // The legend names both files.
  const legend = await page.textContent('#analysis .cmp-legend');
  assert.match(legend, /A: resnet50_fixed\.pickle/);
  assert.match(legend, /B: resnet50_buggy\.pickle/);
  const peak = page.locator('#analysis .cmp-point[data-label="peak"]');
  assert.equal(await peak.getAttribute('data-a-bytes'), '443710928');
  assert.equal(await peak.getAttribute('data-b-bytes'), '470210256');
  assert.equal(await peak.getAttribute('data-delta-bytes'), '26499328');
  assert.match(await peak.locator('summary').textContent(), /B − A = \+25\.3 MiB \(26499328 bytes\)/);
  // Both directions are listed.
  const moreB = peak.locator('.cmp-more-b tr.cmp-diff');
  const moreA = peak.locator('.cmp-more-a tr.cmp-diff');
  // Matched on Python frames, B's extra 25.3 MiB at the peak is three sites, and nothing is
  // larger in A.
  const sites = (rows) => rows.locator('td.site').allTextContents();
  assert.deepEqual(await sites(moreB), ['<no Python frames>', 'torch/nn/modules/conv.py:548 (_conv_forward)', 'torch/nn/functional.py:2846 (batch_norm)']);
  const deltas = await moreB.evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.deltaBytes)));
  assert.deepEqual(deltas, [11116800, 7827456, 7555072]);
  assert.equal(deltas.reduce((x, y) => x + y, 0), 26499328);
  assert.equal(await moreA.count(), 0);
  assert.equal(await peak.locator('.cmp-more-a td').textContent(), 'none');
  // fixed was recorded with stacks="all", buggy with "python": the page says so above the
  // results and matches on Python frames only, so the gradients made in backward (C++ frames in
  // fixed, none in buggy) are one row, not a C++ name against "<no frames>".
  const warn = page.locator('#analysis .cmp-warn');
  assert.equal(await warn.count(), 1);
  assert.equal(await warn.getAttribute('data-python-only'), 'true');
  assert.match(await warn.textContent(), /recorded with different settings.*stacks: A all, B python/s);
  assert.ok(await warn.evaluate((w) => w.compareDocumentPosition(document.querySelector('#analysis .cmp-point')) & Node.DOCUMENT_POSITION_FOLLOWING));
  // At every matched point: no C++ name, no "<no frames>", and frameless allocations in one row.
  const points = await page.$$eval('#analysis .cmp-point', (ps) => ps.map((p) => [...p.querySelectorAll('tr.cmp-diff td.site')].map((td) => td.textContent)));
  assert.equal(points.length, 7);
  for (const all of points) {
    assert.deepEqual(all.filter((t) => t === '<no frames>' || t.includes('::')), [], all.join(' | '));
    assert.ok(all.filter((t) => t === '<no Python frames>').length <= 1, all.join(' | '));
  }
  assert.ok(points.flat().includes('<no Python frames>'));
  // Per-iteration points and the end.
  assert.equal(await page.locator('#analysis .cmp-point').count(), 7);
  // The chart has both colours.
  const colours = await page.evaluate(() => {
    const c = document.querySelector('#analysis canvas.cmp-chart');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let a = 0;
    let b = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.abs(d[i] - 0x4e) < 30 && Math.abs(d[i + 1] - 0x79) < 30 && Math.abs(d[i + 2] - 0xa7) < 30) a++;
      if (Math.abs(d[i] - 0xe1) < 30 && Math.abs(d[i + 1] - 0x57) < 30 && Math.abs(d[i + 2] - 0x59) < 30) b++;
    }
    return { a, b };
  });
  assert.ok(colours.a > 50 && colours.b > 50, JSON.stringify(colours));
  await shot(page, 'compare_fixed_buggy');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('compare at 900x700: no number or name is split over lines', async () => {
  const page = await env.newPage();
  await page.setViewportSize({ width: 900, height: 700 });
  await openFiles(page, [FIXED, BUGGY]);
  await backToTimeline(page);
  await openPanel(page);
  await page.click('#analysis [data-act="tab-compare"]');
  await page.waitForSelector('#analysis .cmp-point');
  // Every matched point open, so every table is laid out.
  await page.$$eval('#analysis details.cmp-point', (d) => d.forEach((x) => (x.open = true)));
  await frames(page);
  const nums = await brokenCells(page, '#analysis .cmp-diff td.num');
  assert.ok(nums.looked >= 40, `cells ${nums.looked}`);
  assert.deepEqual(nums.broken, []);
  const names = await brokenCells(page, '#analysis .cmp-diff td.site');
  assert.ok(names.looked >= 12, `cells ${names.looked}`);
  assert.deepEqual(names.broken, []);
  const right = await page.$$eval('#analysis .cmp-diff td.num', (t) => t.every((td) => getComputedStyle(td).textAlign === 'right'));
  assert.equal(right, true);
  // Each site's full key is in its title.
  assert.ok(await page.$$eval('#analysis .cmp-diff td.site', (t) => t.every((td) => td.title.length >= td.textContent.length)));
  await page.locator('#analysis .cmp-warn').scrollIntoViewIfNeeded();
  await shot(page, 'compare_900');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

async function openProfile(page, file) {
  await page.setInputFiles('input[type=file] >> nth=0', file);
  await page.waitForFunction(
    () => !document.getElementById('cat-timeline').hidden || !document.getElementById('error').hidden,
    null,
    { timeout: 60000 },
  );
  const err = await page.evaluate(() => (document.getElementById('error').hidden ? null : document.getElementById('error').textContent));
  assert.equal(err, null);
}

for (const [label, file] of [['json', PROFILE], ['json.gz', PROFILE_GZ]]) {
  test(`categories: the profiler memory timeline (${label})`, async () => {
    const page = await env.newPage();
    await openProfile(page, file);
    assert.equal(await page.getAttribute('#cat-timeline .cat-peak', 'data-peak-bytes'), '415178728');
    assert.match(await page.textContent('#cat-timeline .cat-peak'), /\(415178728 bytes\)/);
    const legend = await page.textContent('#cat-timeline .cat-legend');
    for (const c of ['parameter', 'optimizer_state', 'activation', 'gradient', 'temporary']) assert.match(legend, new RegExp(c));
    assert.doesNotMatch(legend, /inferred/);
    // Hover shows time and bytes per category.
    const box = await page.locator('#cat-timeline canvas.cat-chart').boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.waitForSelector('#cat-timeline .cat-hover-table');
    assert.match(await page.textContent('#cat-timeline .cat-hover-at'), /^t = [\d.]+ (ms|s)$/);
    // A small table: each category's bytes and share, the total, whose rows add up to it.
    const rows = await page.$$eval('#cat-timeline .cat-hover-table tr[data-bytes]', (trs) =>
      trs.map((tr) => ({ name: tr.cells[0].textContent, bytes: Number(tr.dataset.bytes), share: tr.cells[2].textContent })),
    );
    assert.deepEqual(rows.map((r) => r.name).slice(0, 1), ['parameter']);
    const total = Number(await page.getAttribute('#cat-timeline .cat-hover', 'data-total-bytes'));
    assert.equal(rows.reduce((a, r) => a + r.bytes, 0), total);
    assert.ok(rows.every((r) => /^\d+\.\d%$/.test(r.share)));
    assert.match(await page.textContent('#cat-timeline .cat-total'), /^total/);
    // The wheel zooms at the pointer, a drag pans, a double click shows the whole timeline.
    const win = () => page.evaluate(() => {
      const c = document.querySelector('#cat-timeline canvas.cat-chart');
      return [Number(c.dataset.x0), Number(c.dataset.x1)];
    });
    const [w0, w1] = await win();
    await page.mouse.wheel(0, -800);
    await page.waitForFunction((w) => Number(document.querySelector('#cat-timeline canvas.cat-chart').dataset.x1) - Number(document.querySelector('#cat-timeline canvas.cat-chart').dataset.x0) < w, w1 - w0);
    const [z0, z1] = await win();
    assert.ok(z1 - z0 < (w1 - w0) / 2 && z0 > w0 && z1 < w1, `zoomed in: ${z0}..${z1} of ${w0}..${w1}`);
    assert.match(await page.textContent('#cat-timeline .cat-window'), /^Showing t = .* of .* double-click or 0 for all/);
    const cbox = await page.locator('#cat-timeline canvas.cat-chart').boundingBox();
    await page.mouse.move(cbox.x + cbox.width / 2, cbox.y + cbox.height / 2);
    await page.mouse.down();
    await page.mouse.move(cbox.x + cbox.width / 2 + 150, cbox.y + cbox.height / 2, { steps: 5 });
    await page.mouse.up();
    const [d0, d1] = await win();
    assert.ok(d0 < z0 && Math.abs((d1 - d0) - (z1 - z0)) < 1e-6 * (z1 - z0) + 1, `a drag to the right shows earlier times: ${d0}..${d1}`);
    // The minimap under the chart shows the whole timeline; a click there centres the window
    // at that time, its width kept (its plot area lines up with the chart's: 60 px left, 18 right).
    const mbox = await page.locator('#cat-timeline canvas.cat-mini').boundingBox();
    await page.mouse.click(mbox.x + 60 + (mbox.width - 78) * 0.75, mbox.y + mbox.height / 2);
    await page.waitForFunction((d) => Number(document.querySelector('#cat-timeline canvas.cat-chart').dataset.x0) !== d, d0);
    const [m0, m1] = await win();
    assert.ok(Math.abs((m0 + m1) / 2 - (w0 + 0.75 * (w1 - w0))) < 0.01 * (w1 - w0), `centred at three quarters: ${m0}..${m1}`);
    assert.ok(Math.abs((m1 - m0) - (d1 - d0)) < 1e-6 * (d1 - d0) + 1, 'the width kept');
    // The pointer reads the bytes in force at its own time, inside the window.
    await page.mouse.move(cbox.x + 60 + (cbox.width - 78) / 2, cbox.y + cbox.height / 2);
    await page.waitForFunction(() => document.querySelector('#cat-timeline .cat-hover-at')?.textContent.startsWith('t = '));
    const at = await page.textContent('#cat-timeline .cat-hover-at');
    const us = Number(at.match(/([\d.]+) (ms|s)$/)[1]) * (at.endsWith(' ms') ? 1e3 : 1e6);
    assert.ok(Math.abs(us - (m0 + m1) / 2) < 0.02 * (m1 - m0) + 100, `${at} at the middle of ${m0}..${m1}`);
    if (label === 'json') await shot(page, 'categories_profile_zoomed');
    await page.keyboard.press('0');
    await page.waitForFunction(() => document.querySelector('#cat-timeline .cat-window').textContent.startsWith('Showing the whole'));
    await page.keyboard.press('+');
    await page.waitForFunction(() => !document.querySelector('#cat-timeline .cat-window').textContent.startsWith('Showing the whole'));
    await page.mouse.dblclick(cbox.x + cbox.width / 2, cbox.y + cbox.height / 2);
    await page.waitForFunction(() => document.querySelector('#cat-timeline .cat-window').textContent.startsWith('Showing the whole'));
    assert.deepEqual(await win(), [w0, w1]);
    if (label === 'json') await shot(page, 'categories_profile');
    // Close.
    await page.click('#cat-timeline [data-act="cat-close"]');
    await page.waitForSelector('#cat-timeline', { state: 'hidden' });
    assert.deepEqual(page.memviz.errors, []);
    await page.close();
  });
}

test('categories: colour a snapshot by inferred category', async () => {
  const page = await env.newPage();
  await openFiles(page, FIXED);
  await openPanel(page);
  await page.click('#analysis [data-act="tab-categories"]');
  await page.waitForSelector('#analysis .cat-colour');
  const plotPixels = () =>
    page.evaluate(() => {
      const c = document.getElementById('plot');
      return Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data.filter((_, i) => i % 16 === 0)).join(',');
    });
  const before = await plotPixels();
  await page.click('#analysis .cat-colour');
  await page.waitForSelector('#analysis .cat-colour.current');
  await frames(page);
  assert.match(await page.textContent('#analysis .cat-legend'), /inferred/);
  assert.match(await page.textContent('#analysis .cat-legend'), /parameter/);
  assert.ok((await page.locator('#analysis .cat-at-peak tr').count()) > 1);
  assert.notEqual(await plotPixels(), before, 'the timeline changes colour');
  // The table at the peak: no empty category, largest first, one unit for the column.
  const rows = await page.$$eval('#analysis .cat-at-peak tbody tr', (trs) =>
    trs.map((tr) => [tr.dataset.category, Number(tr.dataset.bytes), tr.cells[1].textContent]),
  );
  assert.ok(rows.length >= 3, JSON.stringify(rows));
  assert.ok(rows.every(([, b]) => b > 0), JSON.stringify(rows));
  assert.ok(rows.every(([, b], i) => i === 0 || rows[i - 1][1] >= b), JSON.stringify(rows));
  assert.equal(new Set(rows.map(([, , t]) => t.split(' ').pop())).size, 1, JSON.stringify(rows));
  // A palette of its own (not the Tableau colours of the plain timeline), the legend's swatches
  // are its colours, and the largest category's colour is on the timeline.
  const swatches = await page.$$eval('#analysis .cat-legend .sw', (s) => s.map((x) => getComputedStyle(x).backgroundColor));
  const tableau = ['rgb(78, 121, 167)', 'rgb(242, 142, 43)', 'rgb(89, 161, 79)', 'rgb(225, 87, 89)'];
  assert.ok(swatches.length >= 8 && swatches.every((c) => !tableau.includes(c)), swatches.join(' '));
  const topSwatch = await page.$eval('#analysis .cat-at-peak tbody tr .sw', (x) => getComputedStyle(x).backgroundColor);
  const legendSwatch = await page.$eval(`#analysis .cat-legend .sw.${await page.$eval('#analysis .cat-at-peak tbody tr .sw', (x) => x.classList[1])}`, (x) => getComputedStyle(x).backgroundColor);
  assert.equal(topSwatch, legendSwatch);
  const [r, g, b] = topSwatch.match(/\d+/g).map(Number);
  const onPlot = await page.evaluate(([r, g, b]) => {
    const c = document.getElementById('plot');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - r) < 4 && Math.abs(d[i + 1] - g) < 4 && Math.abs(d[i + 2] - b) < 4) n++;
    return n;
  }, [r, g, b]);
  assert.ok(onPlot > 500, `pixels of the largest category: ${onPlot}`);
  // The stack text names the category of the band under the pointer.
  const hit = await findPoint(page, (f) => (f.hover ?? '').startsWith('element:'));
  assert.ok(hit, 'a band to point at');
  assert.match(hit.stack, /^Category \(inferred\): (parameter|optimizer state|input|temporary|activation|gradient|autograd detail|unknown)\n/);
  await shot(page, 'categories_inferred');
  // Each row is a handle: a click highlights its live allocations at the peak (their bytes add
  // up to the row's: crates/view/src/derived_tests.rs), a second click lets go.
  const top = page.locator('#analysis .cat-at-peak tbody tr').first();
  await top.click();
  await page.waitForFunction(() => Number(document.getElementById('analysis').dataset.highlight) > 0, null, { polling: 50 });
  assert.ok(await top.evaluate((tr) => tr.classList.contains('selected')));
  await frames(page);
  assert.ok(Number((await plotData(page)).highlighted) > 0, 'bands outlined on the timeline');
  await top.click();
  await page.waitForFunction(() => document.getElementById('analysis').dataset.highlight === '0', null, { polling: 50 });
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
