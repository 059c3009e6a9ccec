// The analysis panel: insights (kept gradients, growth per iteration), out-of-memory
// explanations, the live set at a moment, highlights on the timeline and exports. The figures are
// those of the tests in crates/core/src/analysis (checked by tests/gen/verify_*.py).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OUT, ROOT, brokenCells, fixture, openFiles, plotArea, plotData, readyCount, shot, start, waitPlotChange, waitReady } from '../lib/harness.mjs';

const BUGGY = fixture('resnet50_buggy.pickle');
const FIXED = fixture('resnet50_fixed.pickle');
const OOM = fixture('oom.pickle');
const LEAK = join(ROOT, 'tests/data/real/growth_leak.pickle');

let env;
before(async () => {
  env = await start({ acceptDownloads: true });
});
after(async () => {
  await env?.close();
});

/** Waits two frames. */
const frames = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

async function openPanel(page) {
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
}

/** Pixels of the highlight colour (#c2185b) on the plot. */
const highlightPixels = (page) =>
  page.evaluate(() => {
    const c = document.getElementById('plot');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      const [r, g, b] = [d[i], d[i + 1], d[i + 2]];
      if (Math.abs(r - 0xc2) < 12 && Math.abs(g - 0x18) < 12 && Math.abs(b - 0x5b) < 12) n++;
    }
    return n;
  });

test('insights: the buggy ResNet keeps its gradients alive, and the finding highlights them', async () => {
  const page = await env.newPage();
  await openFiles(page, BUGGY);
  assert.equal(await page.isVisible('#analysis'), false);
  await openPanel(page);
  const verdict = await page.textContent('#analysis .an-verdict');
  assert.match(verdict, /1 problem found/);
  const problem = page.locator('#analysis .finding.problem');
  assert.equal(await problem.count(), 1);
  const text = await problem.textContent();
  assert.match(text, /Gradients stay alive/);
  assert.match(text, /97\.5 MiB \(161 tensors\)/);
  assert.match(text, /zero_grad\(set_to_none=True\)/);
  assert.equal(await problem.getAttribute('data-kind'), 'gradients');
  assert.equal(await problem.getAttribute('data-elements'), '161');
  assert.match(await page.textContent('#analysis .an-iterations'), /Optimizer\.step#SGD\.step/);
  // No steady growth.
  assert.match(await page.textContent('#analysis .an-growth'), /No steady growth/);
  const before = await highlightPixels(page);
  await problem.click();
  await frames(page);
  assert.equal(await page.getAttribute('#analysis', 'data-highlight'), '161');
  assert.equal(await problem.evaluate((el) => el.classList.contains('selected')), true);
  const lit = await highlightPixels(page);
  assert.ok(lit > before + 200, `highlighted pixels ${before} -> ${lit}`);
  await shot(page, 'analysis_buggy_gradients');
  // A second click clears it.
  await problem.click();
  await frames(page);
  assert.equal(await page.getAttribute('#analysis', 'data-highlight'), '0');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('insights: the fixed ResNet has no problem', async () => {
  const page = await env.newPage();
  await openFiles(page, FIXED);
  await openPanel(page);
  assert.match(await page.textContent('#analysis .an-verdict'), /No problem found/);
  assert.equal(await page.locator('#analysis .finding.problem').count(), 0);
  assert.equal(await page.getAttribute('#analysis .an-verdict', 'data-problems'), '0');
  // Fragmentation over time: the most reserved-but-unallocated moment.
  const frag = page.locator('#analysis canvas.an-frag');
  assert.equal(await frag.getAttribute('data-max-unused-row'), '4180');
  assert.equal(await frag.getAttribute('data-max-unused-bytes'), '204713944');
  assert.match(await page.textContent('#analysis .an-frag-summary'), /at entry 4180/);
  const inked = await frag.evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
    return n;
  });
  assert.ok(inked > 1000, `chart pixels ${inked}`);
  // Drawn at device resolution.
  assert.deepEqual(
    await frag.evaluate((c) => [c.width, c.height]),
    await frag.evaluate((c) => [Math.round(c.clientWidth * devicePixelRatio), Math.round(c.clientHeight * devicePixelRatio)]),
  );
  // x is the timeline's: the chart covers the timeline's visible window, and follows its zoom.
  const view = () => page.getAttribute('#plot', 'data-view');
  assert.equal(await frag.getAttribute('data-window'), await view());
  const a = await plotArea(page);
  await page.mouse.move(a.x + a.width * 0.6, a.y + a.height / 2);
  for (let i = 0; i < 4; i++) {
    await page.mouse.wheel(0, -300);
    await frames(page);
  }
  await page.waitForFunction(() => {
    const c = document.querySelector('#analysis canvas.an-frag');
    return c.dataset.window === document.getElementById('plot').dataset.view;
  });
  const [x0, x1] = (await view()).split(',').map(Number);
  assert.ok(x1 - x0 < 13000 / 4, `zoomed window ${x0}..${x1}`);
  const [s0, s1] = (await frag.getAttribute('data-window-steps')).split(',').map(Number);
  assert.ok(Math.abs(s0 - x0) <= 1 && Math.abs(s1 - x1) <= 1, `steps ${s0}..${s1}`);
  // Pointing at the timeline marks that step on the chart and reads the values there.
  await page.mouse.move(a.x + a.width * 0.5, a.y + a.height - 8);
  await page.waitForFunction(() => document.querySelector('#analysis .an-frag-at').textContent.startsWith('After entry'));
  const step = Number(await frag.getAttribute('data-marker-step'));
  assert.ok(step >= x0 && step <= x1, `marker ${step} in ${x0}..${x1}`);
  assert.match(await page.textContent('#analysis .an-frag-at'), /^After entry \d+: reserved [\d.]+ \w+, allocated [\d.]+ \w+, reserved − allocated [\d.]+ \w+, largest free block/);
  await frag.scrollIntoViewIfNeeded();
  await shot(page, 'analysis_fixed');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('insights: growth_leak grows by 8398852 bytes per iteration', async () => {
  const page = await env.newPage();
  await openFiles(page, LEAK);
  await openPanel(page);
  assert.match(await page.textContent('#analysis .an-iterations'), /^8 iterations/);
  assert.match(await page.textContent('#analysis .an-iterations'), /ProfilerStep#N/);
  // One size format in the headline, the exact bytes on hover.
  assert.match(await page.textContent('#analysis .an-growth'), /^Growth: \+8 MiB per iteration$/);
  assert.equal(await page.getAttribute('#analysis .an-growth b', 'title'), '8398852 bytes per iteration');
  // The first row is the user's line, with relu's and linear's growth together.
  const first = page.locator('#analysis tr.an-growing').first();
  assert.match(await first.textContent(), /^\/home\/user\/project\/train\.py:20 \(growth_leak\)\+8 MiB/);
  assert.equal(await first.getAttribute('data-bytes'), '8398848');
  await first.click();
  await frames(page);
  assert.equal(await page.getAttribute('#analysis', 'data-highlight'), '26');
  await first.click();
  await frames(page);
  assert.equal(await page.getAttribute('#analysis', 'data-highlight'), '0', 'a second click clears it');
  assert.match(await page.locator('#analysis tr.an-growing-frame').first().textContent(), /^\+8 MiBtorch\/nn\/functional\.py:1723 \(relu\)$/);
  const growth = page.locator('#analysis .finding.problem[data-kind=growth]');
  assert.equal(await growth.count(), 1);
  await growth.click();
  await frames(page);
  assert.ok(Number(await page.getAttribute('#analysis', 'data-highlight')) > 0);
  await shot(page, 'analysis_growth_leak');
  // Growth follows the Live set's grouping: by operator, relu first (`memviz insights --by op`).
  await page.click('#analysis [data-act=tab-live]');
  await page.selectOption('#analysis select[data-act=group-by]', { index: 2 });
  await page.waitForSelector('#analysis table.an-groups[data-by=op]');
  await page.click('#analysis [data-act=tab-insights]');
  await page.waitForSelector('#analysis table.an-growth-lines[data-by=op]');
  assert.equal(await page.textContent('#analysis table.an-growth-lines th.site'), 'operator');
  const relu = page.locator('#analysis tr.an-growing').first();
  assert.match(await relu.textContent(), /^relu\+8 MiB/);
  assert.equal(await relu.getAttribute('data-bytes'), '8388608');
  await relu.click();
  await frames(page);
  assert.ok(Number(await page.getAttribute('#analysis', 'data-highlight')) > 0);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('out-of-memory explainer: requested, device free, reserved vs allocated, holders, what to try', async () => {
  const page = await env.newPage();
  await openFiles(page, OOM);
  await openPanel(page);
  const oom = page.locator('#analysis section.oom');
  assert.equal(await oom.count(), 1);
  const t = await oom.textContent();
  assert.match(t, /Out of memory at entry 45/);
  assert.match(t, /requested\S*\s*[\d.]+ \w+ \(546068992 bytes\)/);
  assert.match(t, /device free[\d.]+ \w+ \(146806013952 bytes\)/);
  assert.match(t, /reserved[\d.]+ \w+ \(2751463424 bytes\)/);
  assert.match(t, /allocated[\d.]+ \w+ \(2740593636 bytes\)/);
  assert.match(t, /free in segments[\d.]+ \w+ \(9246208 bytes\)/);
  assert.match(t, /largest free block[\d.]+ \w+ \(2059264 bytes\) on the request's stream/);
  assert.match(t, /train\.py:205 \(oom\)/);
  assert.match(t, /What to try/);
  assert.ok((await oom.locator('ul.try li').count()) > 0);
  await oom.locator('[data-act=oom]').click();
  await frames(page);
  assert.equal(await page.getAttribute('#analysis', 'data-highlight'), '10');
  const frag = page.locator('#analysis canvas.an-frag');
  assert.equal(await frag.getAttribute('data-max-unused-row'), '36');
  assert.equal(await frag.getAttribute('data-max-unused-bytes'), '877647382');
  await shot(page, 'analysis_oom');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('live set: the peak by default, rows highlight, a click on the timeline picks a moment, exports download', async () => {
  const page = await env.newPage();
  await openFiles(page, BUGGY);
  await openPanel(page);
  await page.click('#analysis [data-act=tab-live]');
  const head = page.locator('#analysis .an-live-head');
  await head.waitFor();
  assert.equal(await head.getAttribute('data-row'), '2302');
  assert.equal(await head.getAttribute('data-total-bytes'), '470210256');
  assert.equal(await head.getAttribute('data-count'), '857');
  assert.match(await head.textContent(), /At the peak, after entry 2302 .*: 448\.4 MiB \(470210256 bytes\) in 857 allocations/);
  const rows = await page.$$eval('#analysis .an-sites tbody tr[data-act=site]', (trs) =>
    trs.slice(0, 4).map((tr) => [tr.cells[0].textContent, tr.dataset.bytes, tr.cells[2].textContent]),
  );
  assert.deepEqual(rows, [
    ['<no frames>', '145840288', '167'],
    ['<no frames, allocated before the trace>', '137650152', '324'],
    ['torch/optim/sgd.py:455 (_multi_tensor_sgd)', '102228128', '161'],
    ['torch/nn/modules/conv.py:548 (_conv_forward)', '43954176', '51'],
  ]);
  // The tree: root, then the three children of the verified figures.
  const kids = await page.$$eval('#analysis .an-tree > details > details > summary', (s) => s.map((x) => x.textContent));
  assert.match(kids[0], /train\.py:305 \(<module>\)/);
  assert.match(kids[1], /^<no frames> /);
  // Choosing a row highlights its allocations.
  await page.click('#analysis .an-sites tr[data-key="site:2"]');
  await frames(page);
  assert.equal(await page.getAttribute('#analysis', 'data-highlight'), '161');
  await shot(page, 'analysis_live_peak');
  // Exports of the live set.
  const download = async (act) => {
    const [d] = await Promise.all([page.waitForEvent('download'), page.click(`#analysis [data-act=${act}]`)]);
    return { name: d.suggestedFilename(), body: readFileSync(await d.path()) };
  };
  const csv = await download('csv');
  assert.equal(csv.name, 'resnet50_buggy.live.entry2302.csv');
  const lines = csv.body.toString().trim().split('\n');
  assert.equal(lines.length, 858);
  assert.match(lines[0], /^element,address,size_bytes/);
  const sum = lines.slice(1).reduce((s, l) => s + Number(l.split(',')[2]), 0);
  assert.equal(sum, 470210256);
  const json = JSON.parse((await download('json')).body.toString());
  assert.equal(json.total_bytes, 470210256);
  assert.equal(json.allocations.length, 857);
  const ss = await download('speedscope');
  assert.equal(ss.name, 'resnet50_buggy.live.entry2302.speedscope.json');
  const prof = JSON.parse(ss.body.toString());
  assert.equal(prof.profiles[0].weights.reduce((a, b) => a + b, 0), 470210256);
  const png = await download('png');
  assert.equal(png.name, 'resnet50_buggy.timeline.png');
  assert.deepEqual([...png.body.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  // At twice the page's density, with a title above the plot and a legend below it.
  const css = await page.evaluate(() => [document.getElementById('plot').clientWidth, document.getElementById('plot').clientHeight]);
  assert.equal(png.body.readUInt32BE(16), Math.round(css[0] * 2));
  assert.equal(png.body.readUInt32BE(20), Math.round((css[1] + 66) * 2));
  writeFileSync(join(OUT, 'export.png'), png.body);
  // With the live set shown, a click near the left edge picks an early moment (and pins what is
  // under the pointer); Shift+click does the same from any tab.
  const a = await plotArea(page);
  await page.mouse.click(a.x + a.width * 0.05, a.y + a.height - 5);
  await page.waitForFunction(() => document.querySelector('#analysis .an-live-head')?.dataset.row !== '2302');
  const row = Number(await page.getAttribute('#analysis .an-live-head', 'data-row'));
  assert.ok(row < 2302, `row ${row}`);
  assert.match((await plotData(page)).hover, /^element:/);
  await page.click('#analysis [data-act=peak]');
  await page.waitForFunction(() => document.querySelector('#analysis .an-live-head')?.dataset.row === '2302');
  await page.keyboard.down('Shift');
  await page.mouse.click(a.x + a.width * 0.05, a.y + a.height - 5);
  await page.keyboard.up('Shift');
  await page.waitForFunction((r) => document.querySelector('#analysis .an-live-head')?.dataset.row === String(r), row);
  assert.match(await page.textContent('#analysis .an-live-head'), /^After entry \d+/);
  await page.click('#analysis [data-act=peak]');
  await page.waitForFunction(() => document.querySelector('#analysis .an-live-head')?.dataset.row === '2302');
  await shot(page, 'analysis_live_moment');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('live set at 900x700: numbers and names on one line, the tree totals never cut', async () => {
  const page = await env.newPage();
  await page.setViewportSize({ width: 900, height: 700 });
  await openFiles(page, BUGGY);
  await openPanel(page);
  await page.click('#analysis [data-act=tab-live]');
  await page.locator('#analysis .an-live-head').waitFor();
  const nums = await brokenCells(page, '#analysis .an-sites td.num');
  assert.ok(nums.looked >= 16, `cells ${nums.looked}`);
  assert.deepEqual(nums.broken, []);
  const sites = await brokenCells(page, '#analysis .an-sites td.site');
  assert.ok(sites.looked >= 8, `cells ${sites.looked}`);
  assert.deepEqual(sites.broken, []);
  // Names cut with an ellipsis keep the whole name in their title.
  const titles = await page.$$eval('#analysis .an-sites td.site', (t) => t.every((td) => td.title === td.textContent));
  assert.equal(titles, true);
  const aligned = await page.$eval('#analysis .an-sites td.num', (td) => getComputedStyle(td).textAlign);
  assert.equal(aligned, 'right');
  // Every shown tree node's totals lie inside its row, whole.
  const cut = await page.$$eval('#analysis .an-tree summary', (ss) =>
    ss
      .filter((s) => s.offsetParent !== null)
      .map((s) => {
        const b = s.querySelector('.t-bytes');
        const r = b.getBoundingClientRect();
        return r.right <= s.getBoundingClientRect().right + 0.5 && b.scrollWidth <= b.clientWidth + 0.5 ? null : b.textContent;
      })
      .filter(Boolean),
  );
  assert.deepEqual(cut, []);
  assert.ok((await page.locator('#analysis .an-tree summary .t-bytes').count()) > 5);
  await shot(page, 'analysis_live_900');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('insights: an out-of-memory card says each thing once; code spans are <code> and wrap', async () => {
  const page = await env.newPage();
  await page.setViewportSize({ width: 900, height: 700 });
  await openFiles(page, OOM);
  await openPanel(page);
  const body = page.locator('#analysis .an-body');
  const card = page.locator('#analysis .finding[data-kind=oom]');
  assert.equal(await card.count(), 1);
  assert.equal(await card.locator('li, .try').count(), 0);
  // Each line of "What happened" and "What to try" is in the panel once.
  const lines = await page.$$eval('#analysis section.oom > ul li', (l) => l.map((x) => x.textContent));
  assert.ok(lines.length >= 3, `${lines.length} lines`);
  const text = await body.textContent();
  for (const l of lines) assert.equal(text.split(l).length - 1, 1, `said more than once: ${l}`);
  // No raw backticks; code spans are escaped text in <code>.
  assert.equal(text.includes('`'), false);
  const codes = await page.$$eval('#analysis code', (c) => c.map((x) => [x.textContent, x.children.length]));
  assert.ok(codes.length >= 2, JSON.stringify(codes));
  assert.ok(codes.every(([, kids]) => kids === 0));
  assert.ok(codes.some(([t]) => t.startsWith('PYTORCH_CUDA_ALLOC_CONF=') || t.startsWith('torch.')), JSON.stringify(codes));
  // Long code wraps inside the panel: nothing runs past its edge.
  const over = await page.evaluate(() => {
    const b = document.querySelector('#analysis .an-body');
    const right = b.getBoundingClientRect().right;
    return [b.scrollWidth - b.clientWidth, [...b.querySelectorAll('code')].filter((c) => c.getBoundingClientRect().right > right + 0.5).length];
  });
  assert.deepEqual(over, [0, 0]);
  await page.locator('#analysis section.oom h4', { hasText: 'What to try' }).scrollIntoViewIfNeeded();
  await shot(page, 'analysis_oom_900');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('insights: an iteration row zooms the timeline to that iteration', async () => {
  const page = await env.newPage();
  await openFiles(page, BUGGY);
  await openPanel(page);
  const rows = page.locator('#analysis tr.an-it');
  assert.equal(await rows.count(), 5);
  const view = async () => (await plotData(page)).view.split(',').map(Number);
  const [f0, f1] = await view();
  const windows = [];
  for (const k of [1, 2]) {
    const before = (await plotData(page)).view;
    await rows.nth(k).click();
    await waitPlotChange(page, 'view', before);
    windows.push(await view());
  }
  const [[a0, a1], [b0, b1]] = windows;
  // Each window is one of five iterations, and the third starts where the second ends.
  for (const [x0, x1] of windows) {
    assert.ok(x0 > f0 && x1 < f1 && x1 - x0 < (f1 - f0) / 3, `window ${x0}..${x1} of ${f0}..${f1}`);
  }
  assert.ok(a1 - a0 > (f1 - f0) / 12, `window ${a0}..${a1}`);
  assert.equal(a1, b0);
  assert.ok(b1 > b0);
  // The URL keeps the window (written once the window has rested).
  await page.waitForFunction(() => /x=\d+-\d+/.test(location.hash));
  await shot(page, 'analysis_iteration_zoom');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('insights: the demo notes its unused allocator cache', async () => {
  const page = await env.newPage();
  const before = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, before);
  await openPanel(page);
  const note = page.locator('#analysis .finding.note[data-kind=unused_cache]');
  assert.equal(await note.count(), 1);
  assert.match(await note.textContent(), /The allocator's cache holds 3 GiB it does not use \(69% of the 4\.4 GiB reserved, after entry \d+\)/);
  assert.match(await page.textContent('#analysis .an-verdict'), /No problem found · \d+ notes?/);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('an entry cited in Insights is a link that puts a cursor on the timeline there', async () => {
  const page = await env.newPage();
  await openFiles(page, BUGGY);
  await openPanel(page);
  const link = page.locator('#analysis .finding.problem .entry-link').first();
  assert.ok(await link.count(), 'the finding cites an entry');
  const entry = await link.getAttribute('data-i');
  assert.match(await link.textContent(), new RegExp(`^entr(y|ies) ${entry}\\b`));
  await link.click();
  await page.waitForFunction(() => document.getElementById('plot').dataset.cursor, null, { polling: 50 });
  const [cursorEntry, step, x] = (await plotData(page)).cursor.split(':');
  assert.equal(cursorEntry, entry);
  const box = await page.locator('#plot').boundingBox();
  assert.ok(Number(x) >= 84 && Number(x) <= box.width - 20, `cursor at x ${x}`);
  // Zoom far in at the other end of the plot, so the entry is out of the window; the link
  // brings it back into view.
  const area = await plotArea(page);
  const far = Number(x) < box.width / 2 ? area.x + area.width - 2 : area.x + 2;
  const before = await plotData(page);
  await page.mouse.move(far, area.y + area.height / 2);
  for (let i = 0; i < 12; i++) await page.mouse.wheel(0, -400);
  await page.waitForFunction((v) => document.getElementById('plot').dataset.view !== v, before.view, { polling: 50 });
  await page.waitForTimeout(300);
  const out = (await plotData(page)).view.split(',').map(Number);
  assert.ok(Number(step) < out[0] || Number(step) > out[1], `step ${step} outside ${out}`);
  await link.click();
  await page.waitForFunction(() => !document.getElementById('plot').dataset.cursor, null, { polling: 50 });
  await link.click();
  await page.waitForFunction(() => document.getElementById('plot').dataset.cursor, null, { polling: 50 });
  const [x0, x1] = (await plotData(page)).view.split(',').map(Number);
  assert.ok(x0 <= Number(step) && Number(step) <= x1, `step ${step} in the window ${x0}..${x1}`);
  assert.ok(x1 - x0 < out[1] - out[0] + 1, 'the same zoom');
  // The finding's highlight is not what that click did.
  assert.equal(await page.locator("#analysis .finding.selected").count(), 0);
  await shot(page, 'entry-cursor');
  // A second click takes it away.
  await link.click();
  await page.waitForFunction(() => !document.getElementById('plot').dataset.cursor, null, { polling: 50 });
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
