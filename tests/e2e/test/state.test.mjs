// The whole view in the address (x axis, hide freed, Detail, search, the analysis panel's tab),
// the demo reopened by a reload, the note naming the file a reloaded address waits for; search
// feedback (a size that does not parse, the matches' bytes, n / N stepping with the rest dimmed);
// a load's progress and Cancel in the middle of the plot area.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ROOT, fixture, frames, openFiles, plotData, readyCount, start, waitReady } from '../lib/harness.mjs';
import { join } from 'node:path';

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

test('x axis, hide freed, search and the panel tab survive a reload with the file', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  await page.fill('#search-frame', 'conv');
  await page.fill('#search-min', '1MiB');
  await page.click('#analysis-toggle');
  await page.click('[data-act="tab-live"]');
  await page.selectOption('#x-axis', 'time');
  await page.check('#hide-freed');
  await page.waitForFunction(() => !document.getElementById('status').textContent.includes('Laying out'), null, { polling: 50 });
  await frames(page);
  const h = await hash(page);
  for (const part of ['axis=time', 'hide-freed=1', 'find-frame=conv', 'find-min=1MiB', 'panel=live']) {
    assert.ok(h.includes(part), `${part} in ${h}`);
  }
  const count = await page.textContent('#search-count');
  await reload(page);
  assert.equal(await hash(page), h, 'the fragment survives the reload');
  assert.match(await page.textContent('#restore-note'), /Open resnet50_fixed\.pickle again/);
  assert.equal(await page.isVisible('#restore-note'), true);
  await openFiles(page, RESNET);
  await frames(page);
  assert.equal(await page.isVisible('#restore-note'), false);
  assert.equal(await page.inputValue('#search-frame'), 'conv');
  assert.equal(await page.inputValue('#search-min'), '1MiB');
  assert.equal(await page.isChecked('#hide-freed'), true);
  assert.equal((await plotData(page)).xAxis, 'time');
  assert.equal(await page.textContent('#search-count'), count);
  assert.equal(await page.isVisible('#analysis'), true);
  assert.match(await page.getAttribute('[data-act="tab-live"]', 'class'), /current/);
  assert.equal(await hash(page), h);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a reload of the demo opens the demo again, at the same window', async () => {
  const page = await env.newPage();
  const before = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, before);
  await page.keyboard.press('+');
  await page.waitForFunction(() => /x=\d+-\d+/.test(location.hash), null, { polling: 50 });
  const h = await hash(page);
  const view = (await plotData(page)).view;
  await page.reload();
  await page.waitForFunction(() => performance.getEntriesByName('memviz:ready').length > 0, null, { polling: 50 });
  await frames(page);
  // The address keeps whole steps.
  const [a0, a1] = view.split(',').map(Number);
  const [b0, b1] = (await plotData(page)).view.split(',').map(Number);
  assert.ok(Math.abs(a0 - b0) <= 0.5 && Math.abs(a1 - b1) <= 0.5, `${view} then ${b0},${b1}`);
  assert.equal(await hash(page), h);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('search: a size that does not parse is said so; n and N step through the matches, dimming the rest', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  await page.fill('#search-min', '10 megs');
  await frames(page);
  assert.equal(await page.isVisible('#search-problem'), true);
  assert.match(await page.textContent('#search-problem'), /“10 megs” is not a size/);
  assert.equal(await page.getAttribute('#search-min', 'aria-invalid'), 'true');
  await page.fill('#search-min', '10MiB');
  await frames(page);
  assert.equal(await page.isVisible('#search-problem'), false);
  const n = Number((await page.textContent('#search-count')).replaceAll(',', '').match(/^(\d+)/)[1]);
  assert.ok(n >= 2, `${n} matches`);
  assert.match(await page.textContent('#search-detail'), /^· [\d.]+ [KMG]iB · n \/ N: next \/ previous$/);
  // Enter in a box pins the first match; n the next; N goes back.
  await page.press('#search-min', 'Enter');
  await frames(page);
  const first = (await plotData(page)).hover;
  assert.match(first, /^element:\d+$/);
  assert.match(await page.textContent('#search-detail'), new RegExp(`match 1 of ${n}`));
  await page.locator('#plot').focus();
  await page.keyboard.press('n');
  await frames(page);
  const second = (await plotData(page)).hover;
  assert.notEqual(second, first);
  assert.match(await page.textContent('#search-detail'), new RegExp(`match 2 of ${n}`));
  await page.keyboard.press('Shift+N');
  await frames(page);
  assert.equal((await plotData(page)).hover, first);
  assert.match(await page.textContent('#stack'), /^./, 'the pinned match is described');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a long load shows its progress and Cancel in the middle of the drop zone', async () => {
  const page = await env.newPage();
  // 300 MB: one long string, valid until its end, so reading takes a while: in the loading
  // worker (the page itself reads such a file in a fraction of a second, and the worker's path is
  // the one of files too large for the page).
  await page.evaluate(() => {
    globalThis.memvizOnPageMaxBytes = 128 << 20;
    const n = 300_000_000;
    const head = new Uint8Array(11);
    head.set([0x80, 0x04, 0x8d]);
    new DataView(head.buffer).setBigUint64(3, BigInt(n), true);
    const dt = new DataTransfer();
    dt.items.add(new File([head, new Uint8Array(n).fill(97)], 'long.pickle'));
    document.getElementById('plot').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await page.waitForFunction(() => /^Reading long\.pickle: .+ of 286\.1 MiB/.test(document.getElementById('load-card-text').textContent), null, { timeout: 20000 });
  assert.equal(await page.isVisible('#load-card'), true);
  assert.equal(await page.isVisible('#load-card-cancel'), true);
  // The card is inside the drop zone's area, not at the edge of the page.
  const card = await page.locator('#load-card').boundingBox();
  const zone = await page.locator('#plot-wrap').boundingBox();
  assert.ok(card.x > zone.x && card.x + card.width < zone.x + zone.width, JSON.stringify({ card, zone }));
  await page.click('#load-card-cancel');
  await page.waitForFunction(() => document.getElementById('status').textContent === 'Stopped loading long.pickle.', null, { timeout: 10000 });
  assert.equal(await page.isVisible('#load-card'), false);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a file opened again is read into its place, not added again; files can be closed', async () => {
  const OOM = fixture('oom.pickle');
  const page = await env.newPage();
  await page.setInputFiles('#file-input', [RESNET, OOM]);
  await page.waitForFunction(() => document.querySelectorAll('#file-select option').length === 2 && document.getElementById('progress').hidden, null, { timeout: 60000 });
  const names = () => page.$$eval('#file-select option', (o) => o.map((x) => x.title));
  assert.deepEqual(await names(), ['oom.pickle', 'resnet50_fixed.pickle'], 'name order');
  assert.equal(await page.inputValue('#file-select'), '0');
  // The same file again: read again and shown, not a third entry.
  await openFiles(page, RESNET);
  await frames(page);
  assert.equal(await page.inputValue('#file-select'), '1');
  assert.deepEqual(await names(), ['oom.pickle', 'resnet50_fixed.pickle']);
  assert.match(await page.textContent('#status'), /^resnet50_fixed\.pickle/);
  // Close it: the other one is shown; close that: the landing page.
  await page.click('#close-file');
  await frames(page);
  assert.deepEqual(await names(), ['oom.pickle']);
  assert.match(await page.textContent('#status'), /^oom\.pickle/);
  await page.click('#close-file');
  await frames(page);
  assert.equal(await page.isVisible('#empty'), true);
  assert.equal(await page.isVisible('#close-file'), false);
  // And a file opens again afterwards.
  await openFiles(page, OOM);
  assert.match(await page.textContent('#status'), /^oom\.pickle/);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('? shows the keys, Esc or a click beside them closes them; keyboard focus can be seen', async () => {
  const page = await env.newPage();
  const before = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, before);
  await page.locator('#plot').focus();
  await page.keyboard.press('Shift+?');
  await frames(page);
  assert.equal(await page.isVisible('#help'), true);
  assert.match(await page.textContent('#help'), /next and previous search match/);
  await page.keyboard.press('Escape');
  await frames(page);
  assert.equal(await page.isVisible('#help'), false);
  await page.keyboard.press('Shift+?');
  await frames(page);
  await page.mouse.click(5, 5);
  await frames(page);
  assert.equal(await page.isVisible('#help'), false, 'a click on the backdrop closes it');
  // Tab to the file input: its ring is on its label (Open files…), not on "Try a demo".
  await page.evaluate(() => document.activeElement?.blur());
  await page.keyboard.press('Tab');
  const ring = await page.evaluate(() => ({
    focused: document.activeElement?.id,
    label: getComputedStyle(document.querySelector('label[for=file-input]')).outlineStyle,
    demo: getComputedStyle(document.getElementById('demo')).outlineStyle,
  }));
  assert.equal(ring.focused, 'file-input');
  assert.equal(ring.label, 'solid');
  assert.equal(ring.demo, 'none');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a click on an annotation zooms the timeline to its span', async () => {
  const page = await env.newPage();
  const n = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, n);
  const full = (await plotData(page)).view.split(',').map(Number);
  const box = await page.locator('#plot').boundingBox();
  const { plotArea } = await import('../lib/harness.mjs');
  const area = await plotArea(page);
  await page.mouse.move(area.x + area.width / 3, box.y + 10 + 8);
  await page.waitForFunction(() => document.getElementById('plot').dataset.hover.startsWith('annotation:'));
  await page.mouse.click(area.x + area.width / 3, box.y + 10 + 8);
  await page.waitForFunction((w) => {
    const [a, b] = document.getElementById('plot').dataset.view.split(',').map(Number);
    return b - a < w / 2;
  }, full[1] - full[0], { polling: 50, timeout: 10000 });
  const [x0, x1] = (await plotData(page)).view.split(',').map(Number);
  assert.ok(x1 - x0 < (full[1] - full[0]) / 2, `zoomed from ${full} to ${x0},${x1}`);
  assert.match(await page.textContent('#stack'), /Annotation /);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
