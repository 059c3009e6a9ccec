// The stack panel (Python frames first, C++ frames folded, lines cut to the panel), the pin's
// header and unpin button and highlight, the tooltip at the pointer, and the page's size texts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { findPoint, fixture, frames, openFiles, plotArea, shot, start } from '../lib/harness.mjs';

const RESNET = fixture('resnet50_fixed.pickle');

let env;
before(async () => {
  env = await start({ viewport: { width: 1280, height: 800 } });
});
after(async () => {
  await env?.close();
});

const body = (page) => page.textContent('#stack .stack-body');
const frameLine = /^\w+  \S+\.py:\d+/;

/** A point over an allocation whose stack has Python frames and folded C++ frames. */
async function pythonAndCpp(page) {
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:') && /\+\d+ C\+\+ frames/.test(f.stack) && /^\w+  \S+\.py:\d+/m.test(f.stack));
  assert.ok(hit, 'no allocation with Python and C++ frames found');
  return hit;
}

test('stacks: Python frames first, name first, user code bold, C++ frames folded, no line wider than the panel', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const hit = await pythonAndCpp(page);
  const lines = hit.stack.split('\n');
  assert.match(lines[0], /^b[0-9a-f]+_\d+ \d+(\.\d)? (B|KiB|MiB|GiB) (\(\d+ bytes\) )?allocation$/, 'the size in the page\'s one format');
  assert.doesNotMatch(hit.stack, /\d\.0 ?[KMG]?i?B|\d[KMG]iB/, 'no trailing .0, a space before the unit');
  const firstFrame = lines.findIndex((l) => frameLine.test(l));
  assert.ok(firstFrame >= 0 && firstFrame <= 6, `first Python frame at line ${firstFrame}:\n${hit.stack}`);
  assert.ok(!hit.stack.includes('CUDACachingAllocator'), 'C++ frames are folded');
  // Pin it to read it; the fold opens and closes.
  await page.mouse.click(hit.x, hit.y);
  await frames(page);
  const fold = page.locator('#stack button.fold');
  const n = Number((await fold.textContent()).match(/^\+(\d+) C\+\+ frames$/)?.[1]);
  assert.ok(n > 0, await fold.textContent());
  assert.equal(await page.locator('#stack .frame.native').count(), 0);
  await fold.click();
  await frames(page);
  assert.equal(await fold.textContent(), `hide ${n} C++ frames`);
  assert.equal(await fold.getAttribute('aria-expanded'), 'true');
  const native = await page.locator('#stack .frame.native').count();
  assert.ok(native > 0 && native <= n, `${native} C++ rows for ${n} frames`);
  const text = await body(page);
  assert.ok(text.indexOf('CUDACachingAllocator') > text.search(/^\w+  \S+\.py:\d+/m), 'C++ frames come after the Python ones');
  // Every line fits: the panel does not scroll sideways, and each frame keeps its recorded text.
  const fit = await page.evaluate(() => {
    const s = document.getElementById('stack');
    const rows = [...s.querySelectorAll('.frame')];
    return {
      scroll: s.scrollWidth - s.clientWidth,
      rows: rows.length,
      titled: rows.filter((r) => /:\d+:/.test(r.title)).length,
      userBold: rows.filter((r) => r.classList.contains('user')).map((r) => getComputedStyle(r.querySelector('.fn')).fontWeight),
      libGrey: rows.filter((r) => r.classList.contains('lib')).map((r) => getComputedStyle(r).color),
    };
  });
  assert.ok(fit.scroll <= 1, `the panel scrolls ${fit.scroll} px sideways`);
  assert.equal(fit.titled, fit.rows, 'every frame has its recorded file:line:name as a title');
  assert.ok(fit.userBold.length > 0 && fit.userBold.every((w) => Number(w) >= 700), `user frames: ${fit.userBold}`);
  assert.ok(fit.libGrey.every((c) => c !== 'rgb(29, 29, 31)'), 'library frames are dimmed');
  await shot(page, 'stack-open');
  // The choice stays for the next stack.
  await page.keyboard.press('Escape');
  await frames(page);
  assert.equal(await page.locator('#stack button.fold').count(), 0, 'nothing shown once unpinned and the pointer is away');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('pinning: a header with the label and an unpin button, a filled highlight; × and Esc unpin', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const hit = await pythonAndCpp(page);
  const label = hit.stack.match(/^(b[0-9a-f]+_\d+) /)[1];
  // Pixels of the pin's yellow on the plot (no band's colour, nor a blend of two, has so little blue).
  const yellow = () =>
    page.evaluate(() => {
      const c = document.getElementById('plot');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 250 && d[i] > 180 && d[i + 1] > 140 && d[i + 2] < 20) n++;
      return n;
    });
  assert.equal(await yellow(), 0, 'the hovered band is only outlined');
  await page.mouse.click(hit.x, hit.y);
  await frames(page);
  assert.equal(await page.getAttribute('#stack', 'data-pinned'), label);
  assert.equal(await page.getAttribute('#stack', 'class'), 'pinned');
  assert.equal(await page.textContent('#stack .stack-pin'), `Pinned ${label} · Esc or × to unpin`);
  const filled = await yellow();
  assert.ok(filled > 30, `the pinned band is filled yellow: ${filled} px`);
  // Hovering another place keeps the pinned stack in the panel.
  const pinned = await body(page);
  const area = await plotArea(page);
  await page.mouse.move(area.x + 3, area.y + area.height - 3);
  await frames(page);
  assert.equal(await body(page), pinned);
  await shot(page, 'stack-pinned');
  await page.click('#stack button.unpin');
  await frames(page);
  assert.equal(await page.getAttribute('#stack', 'data-pinned'), null);
  assert.equal(await page.locator('#stack .stack-pin').count(), 0);
  await page.mouse.move(5, 5);
  await frames(page);
  assert.equal(await yellow(), 0, 'the fill is gone');
  // Esc unpins too.
  await page.mouse.click(hit.x, hit.y);
  await frames(page);
  assert.equal(await page.getAttribute('#stack', 'data-pinned'), label);
  await page.keyboard.press('Escape');
  await frames(page);
  assert.equal(await page.getAttribute('#stack', 'data-pinned'), null);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the tooltip follows the pointer without covering it, and hides on leave and while dragging', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const hit = await pythonAndCpp(page);
  const tip = page.locator('#tip');
  const state = () =>
    page.evaluate(() => {
      const t = document.getElementById('tip');
      const r = t.getBoundingClientRect();
      return { hidden: t.hidden, target: t.dataset.target, hover: document.getElementById('plot').dataset.hover, text: t.innerText, box: [r.left, r.top, r.right, r.bottom] };
    });
  const covers = (box, x, y) => x >= box[0] && x <= box[2] && y >= box[1] && y <= box[3];
  let s = await state();
  assert.equal(s.hidden, false);
  assert.equal(s.target, s.hover);
  const lines = s.text.split('\n');
  assert.match(lines[0], /^\d+(\.\d)? (B|KiB|MiB|GiB) allocation$/);
  assert.match(lines[1], frameLine, 'the innermost frame of the user\'s code');
  assert.match(lines[2], /^entries \d+\.\.\d+$|^from entry \d+, still allocated at the end$|^live /);
  assert.ok(!covers(s.box, hit.x, hit.y), `the tip ${s.box} covers the point`);
  await shot(page, 'tip');
  // Near the far corner it flips to the other side of the pointer.
  const area = await plotArea(page);
  for (const [fx, fy] of [[0.97, 0.97], [0.03, 0.97], [0.97, 0.5], [0.5, 0.03]]) {
    const x = area.x + area.width * fx;
    const y = area.y + area.height * fy;
    await page.mouse.move(x, y);
    await frames(page);
    s = await state();
    if (!s.hidden) {
      assert.ok(!covers(s.box, x, y), `at ${fx},${fy} the tip ${s.box} covers the point`);
      assert.equal(s.target, s.hover);
    }
  }
  // Leaving the plot hides it.
  await page.mouse.move(hit.x, hit.y);
  await frames(page);
  assert.equal((await state()).hidden, false);
  await page.mouse.move(5, 5);
  await frames(page);
  assert.equal(await tip.isHidden(), true, 'hidden once the pointer left the plot');
  // A drag hides it.
  await page.mouse.move(hit.x, hit.y);
  await page.mouse.down();
  await page.mouse.move(hit.x + 40, hit.y, { steps: 4 });
  await frames(page);
  assert.equal(await tip.isHidden(), true, 'hidden while dragging');
  await page.mouse.up();
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the Segment timeline counts segments, and sizes follow one format', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  assert.match(await page.textContent('#status'), / · peak \d+(\.\d)? (MiB|GiB) · [\d,]+ allocations$/);
  await page.selectOption('#view-select', 'active-cached-segment-timeline');
  await frames(page);
  await frames(page);
  assert.match(await page.textContent('#status'), / · [\d,]+ segments$/);
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:'));
  assert.ok(hit, 'a segment under the pointer');
  assert.match(hit.stack, /^s[0-9a-f]+_\d+ \d+(\.\d)? (B|KiB|MiB|GiB)( \(\d+ bytes\))? segment\n/);
  assert.match(await page.textContent('#tip .tip-size'), /^\d+(\.\d)? (B|KiB|MiB|GiB) segment$/);
  await page.close();
});
