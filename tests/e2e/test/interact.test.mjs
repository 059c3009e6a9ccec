// Pointing, zooming, panning, keys, the minimap, the Detail control, the x axis, OOM markers.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, findPoint, fixture, frames, openFiles, plotArea, plotData, readyCount, shot, start, waitPlotChange, waitReady } from '../lib/harness.mjs';

const RESNET = fixture('resnet50_fixed.pickle');
const OOM = fixture('oom.pickle');

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

const view = (d) => d.view.split(',').map(Number);

test('hovering a band shows its stack; a click pins it, Esc unpins', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:') && f.stack.includes('train.py:'));
  assert.ok(hit, 'no band whose stack mentions train.py was found');
  assert.match(hit.stack, /allocation/);
  // Function first, the path shortened (the recorded frame is the line's title).
  assert.match(hit.stack, /^\w+  project\/train\.py:\d+$/m);
  assert.ok(await page.locator('#stack .frame[title^="/home/user/project/train.py:"]').count() > 0);
  await shot(page, 'hover');
  // Click pins; moving away keeps the text.
  await page.mouse.click(hit.x, hit.y);
  await frames(page);
  assert.equal(await page.getAttribute('#stack', 'class'), 'pinned');
  const area = await plotArea(page);
  await page.mouse.move(area.box.x + 5, area.box.y + 5);
  await frames(page);
  assert.equal(await page.textContent('#stack .stack-body'), hit.stack);
  await shot(page, 'pinned');
  await page.keyboard.press('Escape');
  await frames(page);
  assert.notEqual(await page.textContent('#stack'), hit.stack);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the wheel zooms around the pointer and the x axis labels follow', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const d0 = await plotData(page);
  const [a0, b0] = view(d0);
  const area = await plotArea(page);
  const x = area.x + area.width * 0.25;
  await page.mouse.move(x, area.y + area.height / 2);
  await page.mouse.wheel(0, -600);
  const d1 = await waitPlotChange(page, 'view', d0.view);
  const [a1, b1] = view(d1);
  assert.ok(b1 - a1 < (b0 - a0) * 0.7, `window ${a1}..${b1} not narrower than ${a0}..${b0}`);
  // The step under the pointer stays under it.
  const stepAt = (a, b) => a + ((x - area.x) / area.width) * (b - a);
  assert.ok(Math.abs(stepAt(a1, b1) - stepAt(a0, b0)) < (b0 - a0) * 0.01);
  assert.notEqual(d1.xTicks, d0.xTicks, 'x labels changed');
  await shot(page, 'zoomed');
  // Zoom back out fully.
  await page.mouse.wheel(0, 5000);
  await page.waitForFunction(() => document.getElementById('plot').dataset.xTicks !== '' && document.getElementById('plot').dataset.view.startsWith('0.000,'));
  await page.close();
});

/** A 150,000-entry snapshot (more steps than the page draws exactly on every wheel: its
 * timeline keeps held copies) in a fresh folder. */
function largeTimeline() {
  const dir = mkdtempSync(join(tmpdir(), 'memviz-zoom-'));
  const out = join(dir, 'big-150k.pickle');
  execFileSync('python3', [join(ROOT, 'tests/gen/big_snapshot.py'), '--entries', '150000', '--out', out], { stdio: 'pipe' });
  return { dir, out };
}

test('a small timeline zooms exactly in the next frame, with no stretched copy', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const d0 = await plotData(page);
  assert.ok(Number(d0.steps) < 100000, `steps ${d0.steps}`);
  const area = await plotArea(page);
  await page.mouse.move(area.x + area.width * 0.6, area.y + area.height / 2);
  await frames(page);
  await page.evaluate(() => {
    globalThis.__previews = [];
    const plot = document.getElementById('plot');
    new MutationObserver(() => globalThis.__previews.push(plot.dataset.preview)).observe(plot, { attributes: true, attributeFilter: ['data-preview'] });
  });
  await page.mouse.wheel(0, -600);
  const d1 = await waitPlotChange(page, 'view', d0.view);
  const previews = await page.evaluate(() => globalThis.__previews);
  assert.ok(previews.length > 0 && !previews.includes('1'), `frames drawn: ${JSON.stringify(previews)}`);
  assert.equal(await page.getAttribute('#plot', 'data-preview'), '0');
  assert.ok(Number(d1.bands) > 0);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a zoom shows in the next frame, stretched from the last exact one, then exactly', async () => {
  const big = largeTimeline();
  const page = await env.newPage();
  await openFiles(page, big.out);
  const d0 = await plotData(page);
  const area = await plotArea(page);
  await page.mouse.move(area.x + area.width * 0.6, area.y + area.height / 2);
  await frames(page);
  // Record each frame's kind, and whether a stretched frame has bands in the middle of the plot.
  await page.evaluate(([x, y]) => {
    globalThis.__frames = [];
    const plot = document.getElementById('plot');
    const base = document.getElementById('plot-base');
    new MutationObserver(() => {
      const px = base.getContext('2d').getImageData(Math.round(x * devicePixelRatio), Math.round(y * devicePixelRatio), 1, 1).data;
      globalThis.__frames.push({ preview: plot.dataset.preview, alpha: px[3], view: plot.dataset.view });
    }).observe(plot, { attributes: true, attributeFilter: ['data-preview'] });
  }, [area.width * 0.6 + (area.x - area.box.x), area.height * 0.9 + (area.y - area.box.y)]);
  await page.mouse.wheel(0, -600);
  const d1 = await waitPlotChange(page, 'view', d0.view);
  const seen = await page.evaluate(() => globalThis.__frames);
  const first = seen.findIndex((f) => f.preview === '1');
  assert.ok(first >= 0, `no stretched frame: ${JSON.stringify(seen)}`);
  assert.equal(seen[first].alpha, 255, 'the stretched frame shows the bands');
  assert.equal(seen[first].view, d0.view, 'test hooks describe exact frames only');
  assert.ok(seen.slice(first).some((f) => f.preview === '0'), 'an exact frame follows');
  assert.equal(await page.getAttribute('#plot', 'data-preview'), '0');
  assert.ok(Number(d1.bands) > 0);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
  rmSync(big.dir, { recursive: true, force: true });
});

test('dragging pans; keys zoom, pan and reset', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const full = await plotData(page);
  const area = await plotArea(page);
  await page.keyboard.press('+');
  const z = await waitPlotChange(page, 'view', full.view);
  const [za, zb] = view(z);
  assert.ok(za > 0 && zb < Number(full.steps));
  // Drag right: the window moves left (earlier steps).
  await page.mouse.move(area.x + area.width / 2, area.y + area.height / 2);
  await page.mouse.down();
  await page.mouse.move(area.x + area.width / 2 + 150, area.y + area.height / 2, { steps: 5 });
  await page.mouse.up();
  const p = await waitPlotChange(page, 'view', z.view);
  const [pa, pb] = view(p);
  assert.ok(pa < za, `dragged right but window ${pa} >= ${za}`);
  assert.ok(Math.abs(pb - pa - (zb - za)) < 1e-6 * Number(full.steps) + 0.01, 'panning keeps the width');
  await page.keyboard.press('ArrowRight');
  const r = await waitPlotChange(page, 'view', p.view);
  assert.ok(view(r)[0] > pa);
  await page.keyboard.press('-');
  await waitPlotChange(page, 'view', r.view);
  await page.keyboard.press('0');
  await page.waitForFunction((v) => document.getElementById('plot').dataset.view === v, full.view);
  await page.close();
});

test('a window brushed on the minimap is shown with y fitted to its peak', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const full = await plotData(page);
  const box = await page.locator('#minimap').boundingBox();
  const left = box.x + 84;
  const width = box.width - 84 - 20;
  // The last fifth of the run.
  await page.mouse.move(left + width * 0.8, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(left + width * 0.99, box.y + box.height / 2, { steps: 4 });
  await page.mouse.up();
  const d = await waitPlotChange(page, 'view', full.view);
  const [a, b] = view(d);
  const steps = Number(full.steps);
  assert.ok(Math.abs(a - 0.8 * steps) < 0.01 * steps, `start ${a}`);
  assert.ok(Math.abs(b - 0.99 * steps) < 0.01 * steps, `end ${b}`);
  assert.ok(Number(d.yMax) <= Number(full.yMax), 'y fitted to the window');
  await shot(page, 'brushed');
  await page.close();
});

test('lower Detail summarizes small allocations into one band and keeps the x axis', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const total = Number(await page.getAttribute('#detail-label', 'data-total'));
  assert.equal(await page.textContent('#detail-label'), `Draw all ${Number(total).toLocaleString('en-US')} allocations individually`);
  const d0 = await plotData(page);
  await page.$eval('#detail', (el) => {
    el.value = '30';
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  });
  await page.waitForFunction(() => document.getElementById('detail-label').dataset.drawn === '30');
  assert.equal(await page.textContent('#detail-label'), `Draw the 30 largest of ${Number(total).toLocaleString('en-US')} allocations individually`);
  const d1 = await waitPlotChange(page, 'bands', d0.bands);
  assert.ok(Number(d1.bands) <= 30, `bands ${d1.bands}`);
  // Time does not rescale: the same steps, window, ticks and annotation rows.
  assert.deepEqual([d1.steps, d1.view, d1.xTicks, d1.annotationRows], [d0.steps, d0.view, d0.xTicks, d0.annotationRows]);
  const hit = await findPoint(page, (f) => f.hover === 'summarized');
  assert.ok(hit, 'summarized band not found');
  assert.match(hit.stack, /summarized/i);
  await shot(page, 'detail-30');
  await page.close();
});

test('the x axis can show time', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const d0 = await plotData(page);
  assert.equal(await page.isDisabled('#x-axis'), false);
  await page.selectOption('#x-axis', 'time');
  const d1 = await waitPlotChange(page, 'xAxis', d0.xAxis);
  assert.equal(d1.xAxis, 'time');
  assert.match(d1.xTicks, /\d (ms|s)\b/);
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:'));
  assert.ok(hit, 'hover works on the time axis');
  await shot(page, 'time-axis');
  await page.close();
});

test('an OOM is marked on the timeline and explained on hover', async () => {
  const page = await env.newPage();
  await openFiles(page, OOM);
  const d = await plotData(page);
  assert.equal(d.ooms, '1');
  const x = Number(d.oomX.split(',')[0]);
  const box = await page.locator('#plot').boundingBox();
  const area = await plotArea(page);
  await page.mouse.move(box.x + x - 1, area.y + area.height / 2);
  await page.waitForFunction(() => document.getElementById('plot').dataset.hover.startsWith('oom:'));
  assert.match(await page.textContent('#stack'), /^OOM at entry \d+: requested/);
  await shot(page, 'oom');
  await page.close();
});

test('the canvas stays sharp on HiDPI screens and follows the window size', async () => {
  const hi = await start({ deviceScaleFactor: 2, viewport: { width: 1100, height: 760 } });
  try {
    const page = await hi.newPage();
    await openFiles(page, RESNET);
    const size = () =>
      page.evaluate(() => {
        const el = document.getElementById('plot');
        return { w: el.width, h: el.height, cw: el.clientWidth, ch: el.clientHeight, dpr: devicePixelRatio };
      });
    const s = await size();
    assert.equal(s.dpr, 2);
    assert.equal(s.w, s.cw * 2);
    assert.equal(s.h, s.ch * 2);
    await shot(page, 'hidpi');
    await page.setViewportSize({ width: 800, height: 600 });
    await page.waitForFunction((w) => document.getElementById('plot').width !== w, s.w);
    await frames(page);
    const t = await size();
    assert.equal(t.w, t.cw * 2);
    assert.ok(t.cw < s.cw);
    await shot(page, 'hidpi-small');
    await page.close();
  } finally {
    await hi.close();
  }
});

test('annotations are drawn along the top and explained on hover', async () => {
  const page = await env.newPage();
  const n = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, n);
  // Keys work right after the button was clicked.
  const d0 = await plotData(page);
  await page.keyboard.press('+');
  await waitPlotChange(page, 'view', d0.view);
  await page.keyboard.press('0');
  await page.waitForFunction((v) => document.getElementById('plot').dataset.view === v, d0.view);
  const box = await page.locator('#plot').boundingBox();
  const area = await plotArea(page);
  // First row of the strip (10 px from the top, rows of 17 px), a third of the way in.
  await page.mouse.move(area.x + area.width / 3, box.y + 10 + 8);
  await page.waitForFunction(() => document.getElementById('plot').dataset.hover.startsWith('annotation:'));
  assert.match(await page.textContent('#stack'), /^Annotation ## step \d ##\n.* UTC to .* UTC \(\d+\.\d+ ms\)/);
  await shot(page, 'annotation');
  await page.close();
});

/** A run of `steps` repeats of one training step (four 16 MiB weights live throughout, then 30
 * activations of 1..30 MiB allocated and freed), as a pickle in a fresh folder. */
function repeatedRun(steps) {
  const dir = mkdtempSync(join(tmpdir(), 'memviz-repeated-'));
  const out = join(dir, 'repeated.pickle');
  const code = `
import pickle, sys
fr = lambda line: [{'filename': 'train.py', 'line': line, 'name': 'step'}]
t = [{'action': 'alloc', 'addr': (1 << 32) + w * (1 << 28), 'size': 16 << 20, 'stream': 0, 'frames': fr(10)} for w in range(4)]
for s in range(int(sys.argv[2])):
    t += [{'action': 'alloc', 'addr': (1 << 40) + k * (1 << 28), 'size': k << 20, 'stream': 0, 'frames': fr(100 + k)} for k in range(1, 31)]
    t += [{'action': 'free_completed', 'addr': (1 << 40) + k * (1 << 28), 'size': k << 20, 'stream': 0, 'frames': fr(200)} for k in range(30, 0, -1)]
pickle.dump({'segments': [], 'device_traces': [t]}, open(sys.argv[1], 'wb'))
`;
  execFileSync('python3', ['-c', code, out, String(steps)], { stdio: 'pipe' });
  return { dir, out };
}

test('zoomed into a late step of a long repeated run, Detail draws that step one allocation at a time', async () => {
  const run = repeatedRun(200);
  const page = await env.newPage();
  try {
    await openFiles(page, run.out);
    await page.$eval('#detail', (el) => {
      el.value = '40';
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await page.waitForFunction(() => document.getElementById('detail-label').dataset.drawn === '40');
    // The whole run: its 40 largest allocations are the first steps' (the earlier among equals).
    assert.equal(await page.getAttribute('#detail-label', 'data-focus'), '');
    const area = await plotArea(page);
    await page.mouse.move(area.x + area.width * 0.75, area.y + area.height / 2);
    for (let i = 0; i < 60; i++) {
      const [a, b] = view(await plotData(page));
      if (b - a < 45) break;
      await page.mouse.wheel(0, -400);
      await frames(page);
    }
    const [a, b] = view(await plotData(page));
    assert.ok(b - a < 45 && a > 12004 * 0.6, `window ${a}..${b}`);
    // Once the wheel rests, Detail is chosen among the allocations live in the window.
    await page.waitForFunction(() => document.getElementById('detail-label').dataset.focus !== '', null, { timeout: 10000 });
    assert.match(await page.textContent('#detail-label'), /^Draw the 40 largest of 6,004 allocations individually, chosen in this window$/);
    const seen = { summarized: 0, element: 0 };
    await findPoint(page, (f) => {
      if (f.hover === 'summarized') seen.summarized += 1;
      if (f.hover?.startsWith('element:')) seen.element += 1;
      return false;
    }, { cols: 12, rows: 6 });
    assert.equal(seen.summarized, 0, `points on the summarized band: ${JSON.stringify(seen)}`);
    assert.ok(seen.element > 20, `points on allocations: ${JSON.stringify(seen)}`);
    await shot(page, 'detail-in-window');
    // The whole view again: the whole run's Detail.
    for (let i = 0; i < 60 && !(await plotData(page)).view.startsWith('0.000,'); i++) {
      await page.mouse.wheel(0, 2000);
      await frames(page);
    }
    await page.waitForFunction(() => document.getElementById('detail-label').dataset.focus === '', null, { timeout: 10000 });
    assert.equal(await page.textContent('#detail-label'), 'Draw the 40 largest of 6,004 allocations individually');
    assert.deepEqual(page.memviz.errors, []);
  } finally {
    await page.close();
    rmSync(run.dir, { recursive: true, force: true });
  }
});
