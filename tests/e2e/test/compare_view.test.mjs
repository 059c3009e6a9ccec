// The Compare view: ResNet-50 fixed and buggy (buggy never frees its gradients) on one aligned
// axis. The toolbar's button opens it with two files open; the verdict names the gradients;
// one wheel zooms both timelines and the totals between them; the cursor reads both files at the
// same aligned moment (the same share of the same iteration); A and B change places; the
// timeline's controls hide while it is shown and come back with the timeline.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fixture, openFiles, shot, start, backToTimeline } from '../lib/harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

const windowOf = async (page) => (await page.getAttribute('#compare', 'data-window')).split(',').map(Number);
const readout = (page) => page.evaluate(() => ({ ...document.getElementById('cmp-readout').dataset, text: document.getElementById('cmp-readout').textContent }));

/** Moves the pointer to share `at` of a chart's plot area (the charts' margins: 78 px left, 14 right). */
async function pointAt(page, id, at, y = 0.5) {
  const box = await page.locator(`#${id}`).boundingBox();
  await page.mouse.move(box.x + 78 + (box.width - 92) * at, box.y + box.height * y);
}

/**
 * A page of 1280 x 900 with ResNet-50 fixed and buggy dropped together (the Compare view opens);
 * `globalThis.__mainClasses` lists, for each change of `#main`'s classes, whether it then had a
 * file shown and the Compare view.
 */
async function openPair() {
  const page = await env.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.evaluate(() => {
    const main = document.getElementById('main');
    globalThis.__mainClasses = [];
    new MutationObserver(() => {
      globalThis.__mainClasses.push([main.classList.contains('has-file'), main.classList.contains('compare-shown')]);
    }).observe(main, { attributes: true, attributeFilter: ['class'] });
  });
  await openFiles(page, [fixture('resnet50_fixed.pickle'), fixture('resnet50_buggy.pickle')]);
  return page;
}

test('fixed and buggy side by side: the verdict, one zoom and one cursor for both', async () => {
  const page = await openPair();
  // Two snapshots dropped together are shown side by side, the first by name as A; the first
  // open is not shown alone meanwhile: the page shows a file first with the Compare view.
  await page.waitForFunction(() => document.getElementById('compare').dataset.window);
  const firstShown = await page.evaluate(() => globalThis.__mainClasses.find(([file]) => file));
  assert.deepEqual(firstShown, [true, true]);
  assert.match(await page.$eval('#cmp-a option[selected]', (o) => o.title), /resnet50_buggy/);
  // The toolbar's button goes back to the timeline and comes again to the comparison.
  await page.click('#compare-toggle');
  await page.waitForFunction(() => !document.getElementById('main').classList.contains('compare-shown'));
  assert.equal(await page.textContent('#compare-toggle'), 'Compare');
  await page.click('#compare-toggle');
  await page.waitForFunction(() => document.getElementById('main').classList.contains('compare-shown'));
  assert.equal(await page.isVisible('#plot'), false, 'the view takes the timeline\'s place');
  assert.equal(await page.isVisible('#detail'), false, 'the timeline\'s controls act on nothing here');
  assert.equal(await page.textContent('#compare-toggle'), 'Timeline');
  const header = await page.locator('header').boundingBox();
  assert.ok(header.height < 50, `the header stays one row: ${header.height} px`);
  const [a, b] = await page.$$eval('#cmp-a option[selected], #cmp-b option[selected]', (o) => o.map((x) => x.textContent));
  assert.notEqual(a, b);
  const verdict = await page.textContent('#cmp-verdict');
  assert.match(verdict, /the gradients (A|B) keeps across iterations: 161 tensors, 97\.5 MiB, made in backward; (A|B) keeps none/);
  assert.match(await page.textContent('#cmp-aligned'), /^Aligned by iteration annotations \(A has 5, B has 5\)$/);
  assert.deepEqual(await windowOf(page), [0, 5]);
  // Where the runs part is marked on both timelines: at iteration 5's peak, the allocations
  // without a counterpart of the same line and size in the other file.
  const parting = (await page.getAttribute('#compare', 'data-parting')).split(',').map(Number);
  const keeper = verdict.match(/the gradients (A|B) keeps/)[1];
  assert.ok(parting[keeper === 'A' ? 0 : 1] > 0, `${keeper} keeps the gradients; marked: ${parting}`);
  assert.equal(await page.textContent('#cmp-parting'), `Marked on both timelines: at the iteration 5 peak, the allocations with no counterpart in the other file (none of the same source line and size live then; A: ${parting[0]}, B: ${parting[1]}).`);

  // The wheel over A's timeline narrows the one window: both timelines and the totals show it,
  // stretched from the last exact charts while it turns, drawn exactly once it rests.
  await pointAt(page, 'cmp-plot-a', 0.5);
  await page.evaluate(() => {
    window.cmpDrawn = [];
    new MutationObserver(() => window.cmpDrawn.push(document.getElementById('compare').dataset.drawn))
      .observe(document.getElementById('compare'), { attributes: true, attributeFilter: ['data-drawn', 'data-window'] });
  });
  for (let i = 0; i < 3; i++) await page.mouse.wheel(0, -400);
  await page.waitForFunction(() => document.getElementById('compare').dataset.window !== '0.000000,5.000000');
  await page.waitForFunction(() => document.getElementById('compare').dataset.drawn === 'exact');
  const drawn = await page.evaluate(() => window.cmpDrawn);
  assert.ok(drawn.includes('stretched'), `a notch's frame stretches the last exact charts: ${drawn}`);
  assert.equal(drawn.at(-1), 'exact');
  const [x0, x1] = await windowOf(page);
  assert.ok(x1 - x0 < 2.5 && x0 < 2.5 && x1 > 2.5, `the window ${x0}..${x1} keeps 2.5 under the pointer`);
  await shot(page, 'compare-view-zoomed');
  // The PNG export draws the verdict over all three charts.
  const [d] = await Promise.all([page.waitForEvent('download'), page.click('#cmp-png')]);
  assert.match(d.suggestedFilename(), /^resnet50_(fixed|buggy)_vs_resnet50_(fixed|buggy)\.compare\.png$/);
  const png = readFileSync(await d.path());
  const [pw, ph] = [png.readUInt32BE(16), png.readUInt32BE(20)];
  const charts = await page.$$eval('#compare canvas:not(.cmp-cursor)', (c) => c.map((x) => [x.clientWidth, x.clientHeight]));
  const dpr = await page.evaluate(() => devicePixelRatio);
  assert.equal(pw, Math.round(Math.max(...charts.map((c) => c[0])) * dpr));
  assert.equal(ph, Math.round((58 + charts.reduce((n, c) => n + c[1], 0)) * dpr), `${pw}x${ph} for ${charts}`);

  // The cursor is one aligned moment: over A's chart, the totals or B's at the same x, the same.
  const seen = [];
  for (const id of ['cmp-plot-a', 'cmp-diff', 'cmp-plot-b']) {
    // Off the charts first: the readout forgets the moment.
    await page.mouse.move(5, 5);
    await page.waitForFunction(() => !document.getElementById('cmp-readout').dataset.x);
    await pointAt(page, id, 0.3);
    await page.waitForFunction(() => document.getElementById('cmp-readout').dataset.x);
    seen.push(await readout(page));
  }
  assert.ok(seen.every((r) => r.x === seen[0].x), `one moment: ${seen.map((r) => r.x)}`);
  const x = Number(seen[0].x);
  assert.ok(Math.abs(x - (x0 + 0.3 * (x1 - x0))) < (x1 - x0) / 100, `the cursor at ${x}`);
  assert.match(seen[0].text, /^iteration \d\.\d\d · A .* · B .* · B − A [+-]/);
  // Each file is read at its own step there (the iterations differ in length).
  const [sa, sb] = seen[0].steps.split(',').map(Number);
  assert.notEqual(sa, sb);

  // A and B change places: the verdict's sign turns.
  const before = await page.textContent('#cmp-verdict');
  await page.click('#cmp-swap');
  await page.waitForFunction((v) => document.getElementById('cmp-verdict').textContent !== v, before);
  const after = await page.textContent('#cmp-verdict');
  assert.ok(/more at its peak/.test(before) !== /more at its peak/.test(after), `${before} / ${after}`);
  // The address keeps the pair; a page opened from it shows the pair once both files are in.
  await page.waitForFunction(() => /compare=[^&]+,/.test(location.hash));
  const h = await page.evaluate(() => location.hash);
  const [ca, cb] = h.match(/compare=([^,&]+),([^&]+)/).slice(1).map(decodeURIComponent);
  assert.deepEqual([ca, cb].sort(), ['resnet50_buggy.pickle', 'resnet50_fixed.pickle']);
  const again = await env.newPage();
  // A new page at that address (a change of the fragment alone would not start the page again).
  await again.goto(page.url());
  await again.reload();
  await again.waitForSelector('#demo:not([disabled])');
  await openFiles(again, [fixture('resnet50_fixed.pickle'), fixture('resnet50_buggy.pickle')]);
  await again.waitForFunction(() => document.getElementById('main').classList.contains('compare-shown'));
  await again.waitForFunction(() => document.getElementById('compare').dataset.window);
  assert.equal(await again.$eval('#cmp-a option[selected]', (o) => o.title), ca);
  assert.equal(await again.$eval('#cmp-b option[selected]', (o) => o.title), cb);
  await again.close();
  // Back to the timeline.
  await page.click('#compare-toggle');
  await page.waitForFunction(() => !document.getElementById('main').classList.contains('compare-shown'));
  assert.equal(await page.isVisible('#plot'), true);
  assert.equal(await page.isVisible('#detail'), true);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('two dropped together where the second does not open: the first alone, and why', async () => {
  const page = await env.newPage();
  // `resnet50_fixed` first by name, then a file that is no snapshot.
  const bad = { name: 'zz_not_a_snapshot.pickle', mimeType: 'application/octet-stream', buffer: Buffer.from('not a pickle') };
  const fixed = { name: 'resnet50_fixed.pickle', mimeType: 'application/octet-stream', buffer: readFileSync(fixture('resnet50_fixed.pickle')) };
  await page.setInputFiles('#file-input', [fixed, bad]);
  await page.waitForFunction(() => !document.getElementById('error').hidden && document.getElementById('main').classList.contains('has-file'));
  assert.match(await page.textContent('#error'), /zz_not_a_snapshot\.pickle/);
  assert.equal(await page.$eval('#main', (m) => m.classList.contains('compare-shown')), false);
  await page.waitForFunction(() => Number(document.getElementById('plot').dataset.bands) > 0);
  await page.close();
});

test('one file has nothing to compare: no button', async () => {
  const page = await env.newPage();
  await openFiles(page, fixture('resnet50_fixed.pickle'));
  assert.equal(await page.isVisible('#compare-toggle'), false);
  await page.close();
});

test('a row of the table marks its allocations in both timelines; hovering one shows its stack and what the other file holds', async () => {
  const page = await openPair();
  await backToTimeline(page);
  // A row of the Compare tab (by source line) opens the view with its allocations marked.
  await page.click('#analysis-toggle');
  await page.click('#analysis [data-act="tab-compare"]');
  const tabRow = '#analysis details[open] tr[data-act="cmp-row"]';
  await page.waitForSelector(tabRow);
  const want = await page.$eval(tabRow, (r) => `${r.dataset.aBytes},${r.dataset.bBytes}`);
  await page.click(tabRow);
  await page.waitForFunction(() => document.getElementById('main').classList.contains('compare-shown'));
  await page.waitForFunction((w) => document.getElementById('cmp-picked').dataset.bytes === w, want);
  assert.equal(await page.$eval(tabRow, (r) => r.dataset.picked), '1', 'the tab marks its row too');
  await page.click(tabRow);
  await page.waitForFunction(() => !document.getElementById('cmp-picked').dataset.bytes);
  await page.waitForSelector('#cmp-table tr[data-act="cmp-row"]');
  assert.match(await page.textContent('#cmp-table .cmp-table-title'), /^What differs at the iteration 5 peak/);
  // Every row: its marks in A and B are exactly the allocations and bytes the row counts.
  const rows = await page.$$eval('#cmp-table tr[data-act="cmp-row"]', (t) => t.map((r) => ({
    side: r.dataset.side, i: r.dataset.i, a: Number(r.dataset.aBytes), b: Number(r.dataset.bBytes),
    counts: [...r.querySelectorAll('td.num')].slice(1).map((td) => Number(td.title.match(/, (\d+) allocations/)[1])),
    site: r.querySelector('td.site').textContent,
  })));
  assert.ok(rows.length >= 2, `${rows.length} rows`);
  for (const r of rows.slice(0, 6)) {
    const sel = `#cmp-table tr[data-act="cmp-row"][data-side="${r.side}"][data-i="${r.i}"]`;
    await page.click(sel);
    await page.waitForFunction((s) => document.querySelector(s)?.dataset.picked === '1', sel);
    await page.waitForFunction((want) => document.getElementById('cmp-picked').dataset.bytes === want, `${r.a},${r.b}`);
    const counts = (await page.getAttribute('#cmp-picked', 'data-counts')).split(',').map(Number);
    assert.deepEqual(counts, r.counts, `allocations of ${r.site}`);
    assert.ok((await page.textContent('#cmp-picked')).includes(r.site));
  }
  // The same row again: unmarked.
  const last = rows[Math.min(rows.length, 6) - 1];
  await page.click(`#cmp-table tr[data-act="cmp-row"][data-side="${last.side}"][data-i="${last.i}"]`);
  await page.waitForFunction(() => !document.getElementById('cmp-picked').dataset.bytes);
  assert.equal(await page.$$eval('#cmp-table tr[data-picked]', (t) => t.length), 0);

  // Hover: low over B's timeline at iteration 5's peak is an allocation; the box names it and what A
  // holds from its line at that moment, and the other file's bytes are those live there.
  const box = await page.locator('#cmp-plot-b').boundingBox();
  let hovered = null;
  for (const at of [0.95, 0.9, 0.85, 0.8, 0.7, 0.6]) {
    await page.mouse.move(box.x + 78 + (box.width - 92) * at, box.y + box.height - 12);
    try {
      await page.waitForFunction(() => document.getElementById('cmp-hover').dataset.side === 'b', null, { timeout: 1000 });
      hovered = await page.evaluate(() => ({ ...document.getElementById('cmp-hover').dataset, text: document.getElementById('cmp-hover').textContent }));
      break;
    } catch { /* empty space or the summarized band: try further left */ }
  }
  assert.ok(hovered, 'an allocation under the pointer in B');
  assert.match(hovered.text, /^B: b\S+ [\d.]+ \w*B \(\d+ bytes\) allocation\nA at the same moment \(step \d+\): (nothing live from .+|[\d.]+ \w*B from .+ in \d+ allocations?)\n/);
  assert.ok(hovered.text.includes(hovered.site), 'the line it is matched by');
  assert.ok(Number(hovered.bytes) > 0);
  assert.equal(Number(hovered.otherCount) === 0, Number(hovered.otherBytes) === 0);
  await shot(page, 'compare-view-hover');
  // Off the charts: the box goes back to its hint.
  await page.mouse.move(5, 5);
  await page.waitForFunction(() => !document.getElementById('cmp-hover').dataset.side);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('Detail follows the one window in both timelines, with the Detail of A', async () => {
  const page = await openPair();
  await backToTimeline(page);
  // A draws its 50 largest allocations; B was opened with the default Detail.
  await page.$eval('#detail', (el) => {
    el.value = '50';
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  });
  await page.waitForFunction(() => document.getElementById('detail-label').dataset.drawn === '50');
  await page.click('#compare-toggle');
  const focus = () => page.getAttribute('#compare', 'data-focus');
  await page.waitForFunction(() => document.getElementById('compare').dataset.focus === '50:-,50:-');
  // Zoomed into one iteration: once the wheel rests, each draws its 50 largest live there.
  await pointAt(page, 'cmp-plot-a', 0.7);
  for (let i = 0; i < 4; i++) await page.mouse.wheel(0, -400);
  await page.waitForFunction(() => /^50:\d+-\d+,50:\d+-\d+$/.test(document.getElementById('compare').dataset.focus));
  const [fa, fb] = (await focus()).split(',').map((f) => f.split(':')[1].split('-').map(Number));
  assert.ok(fa[1] > fa[0] && fb[1] > fb[0], `${fa} / ${fb}`);
  await shot(page, 'compare-view-detail');
  // The whole view again: the whole trace's largest in both.
  await page.dblclick('#cmp-plot-a');
  await page.waitForFunction(() => document.getElementById('compare').dataset.focus === '50:-,50:-');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
