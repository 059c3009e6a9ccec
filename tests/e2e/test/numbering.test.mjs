// One numbering of the trace (entries, from 0 per device) in every place the page shows a
// position, counts apart from positions, every cited entry a link to the timeline's cursor; and
// stepping through allocations from the keyboard.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, findPoint, fixture, frames, openFiles, plotData, shot, start, waitReady, readyCount } from '../lib/harness.mjs';

const STATE_ONLY = fixture('state_only.pickle');
const POOLS = join(ROOT, 'tests/data/synth/private_pools.pickle');
const DEVICES = join(ROOT, 'tests/data/synth/multi_device.pickle');

let env;
before(async () => {
  env = await start({ viewport: { width: 1280, height: 800 } });
});
after(async () => {
  await env?.close();
});

async function demo(page) {
  const n = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, n);
  await frames(page);
}

/** Texts a user reads about the timeline: none says "step". */
async function readTexts(page) {
  return page.evaluate(() => ({
    status: document.getElementById('status').textContent,
    detail: document.getElementById('detail-label').textContent,
    stack: document.getElementById('stack').textContent,
    tip: document.getElementById('tip')?.textContent ?? '',
    axis: [...document.querySelectorAll('#x-axis option')].map((o) => o.textContent).join('|'),
    devices: [...document.querySelectorAll('#device-select option')].map((o) => o.textContent),
    help: document.querySelector('#statusbar .help')?.getAttribute('title') ?? '',
  }));
}

function noSteps(texts, what) {
  for (const [k, v] of Object.entries(texts)) {
    const s = Array.isArray(v) ? v.join('|') : v;
    assert.doesNotMatch(s, /\bsteps?\b/i, `${what}: ${k} says "step": ${s}`);
  }
}

/** Counts of 1,000 or more group their digits; positions (entries) are bare. */
function countsGrouped(s, what) {
  for (const m of s.matchAll(/(\d[\d,]*) (allocations|entries|segments)\b/g)) {
    const n = Number(m[1].replaceAll(',', ''));
    if (n >= 1000) assert.match(m[1], /^\d{1,3}(,\d{3})+$/, `${what}: "${m[0]}"`);
  }
}

test('the demo: entries on the x axis, in the tooltip and the stack, counts grouped, no step anywhere', async () => {
  const page = await env.newPage();
  await demo(page);
  const d = await plotData(page);
  const ticks = d.xTicks.split('|').filter(Boolean);
  assert.ok(ticks.length >= 3, `ticks ${d.xTicks}`);
  for (const t of ticks) assert.match(t, /^\d+$/, `an entry number: ${t}`);
  const entries = ticks.map(Number);
  assert.ok(entries.every((e, i) => i === 0 || e > entries[i - 1]), `ascending ${entries}`);
  let texts = await readTexts(page);
  const deviceCount = Number(texts.devices[0].match(/\(([\d,]+) entr/)[1].replaceAll(',', ''));
  assert.ok(entries[entries.length - 1] < deviceCount, `ticks within the device's ${deviceCount} entries`);
  assert.match(texts.status, /· [\d,]+ allocations$/);
  assert.match(texts.axis, /trace entries/);
  countsGrouped([texts.status, texts.detail, ...texts.devices].join(' · '), 'demo');
  // Hover an allocation made in the trace: its lifetime in entries.
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:') && /allocated at entry \d+/.test(f.stack));
  assert.ok(hit, 'an allocation');
  texts = await readTexts(page);
  assert.match(texts.tip, /entries \d+\.\.\d+|from entry \d+|freed at entry \d+|live /);
  noSteps(texts, 'hovered');
  // Pin it: the stack text's entries are links that put the cursor there.
  await page.mouse.click(hit.x, hit.y);
  await frames(page);
  const link = page.locator('#stack .stack-head .entry-link').first();
  assert.ok(await link.count(), `the stack text cites an entry: ${await page.textContent('#stack')}`);
  const entry = await link.getAttribute('data-entry');
  assert.equal(await link.textContent(), `entry ${entry}`);
  await link.click();
  await page.waitForFunction((e) => document.getElementById('plot').dataset.cursor?.startsWith(`${e}:`), entry, { polling: 50 });
  const [, , x] = (await plotData(page)).cursor.split(':');
  assert.ok(Number.isFinite(Number(x)), `the cursor is drawn in the window (${x})`);
  await shot(page, 'numbering-stack-cursor');
  // The address holds the entry (a user can type it there); a reload puts the cursor back.
  await page.waitForFunction((e) => location.hash.includes(`entry=${e}`), entry, { polling: 50 });
  await page.reload();
  await waitReady(page, 0);
  await page.waitForFunction((e) => document.getElementById('plot').dataset.cursor?.startsWith(`${e}:`), entry, { polling: 50 });
  await page.mouse.click(hit.x, hit.y);
  await frames(page);
  await link.click();
  await page.waitForFunction(() => !document.getElementById('plot').dataset.cursor, null, { polling: 50 });
  noSteps(await readTexts(page), 'pinned');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('History: rows are numbered by their entry, the header counts apart, an entry link puts the cursor on the timeline', async () => {
  const page = await env.newPage();
  await demo(page);
  await page.selectOption('#view-select', 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  const row = await page.evaluate(() => {
    const sel = document.querySelector('#event-rows > div.sel');
    return {
      entry: sel.dataset.entry,
      button: sel.querySelector('.row-entry').textContent,
      header: document.getElementById('segmap-header').textContent,
      entries: Number(document.getElementById('event-list').dataset.entries),
    };
  });
  assert.equal(row.button, row.entry);
  assert.equal(Number(row.entry), row.entries - 1, 'the last entry is selected');
  assert.match(row.header, new RegExp(`after entry ${row.entry} · ${row.entries.toLocaleString('en-US')} entries$`));
  // Every row shown carries its entry; rows with two entries (a joined free) skip one.
  const numbers = await page.evaluate(() => [...document.querySelectorAll('#event-rows > div[data-entry]')].map((d) => Number(d.dataset.entry)));
  assert.ok(numbers.every((n, i) => i === 0 || n > numbers[i - 1]), 'ascending');
  // The row's entry link: the timeline, the cursor on that entry.
  const target = page.locator('#event-rows > div .row-entry').nth(3);
  const want = await target.textContent();
  await target.click();
  await page.waitForFunction(() => document.getElementById('view-select').value === 'active-memory-timeline', null, { polling: 50 });
  await page.waitForFunction((e) => document.getElementById('plot').dataset.cursor?.startsWith(`${e}:`), want, { polling: 50 });
  await shot(page, 'numbering-history-cursor');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a CUDA-graph file, a state-only file and a multi-device file: entries and counts, no step', async () => {
  const page = await env.newPage();
  for (const [name, file] of [['pools', POOLS], ['state-only', STATE_ONLY], ['devices', DEVICES]]) {
    await openFiles(page, file);
    await frames(page);
    const d = await plotData(page);
    const ticks = d.xTicks.split('|').filter(Boolean);
    if (d.kind === 'moment') assert.deepEqual(ticks, [], `${name}: a moment has no x axis`);
    for (const t of ticks) assert.match(t, /^\d+$/, `${name}: an entry number: ${t}`);
    const texts = await readTexts(page);
    noSteps(texts, name);
    countsGrouped([texts.status, texts.detail, ...texts.devices].join(' · '), name);
    for (const o of texts.devices) assert.match(o, /\([\d,]+ entr(y|ies)\)$/, `${name}: ${o}`);
    const hit = await findPoint(page, (f) => f.hover?.startsWith('element:'), { cols: 10, rows: 6 });
    if (hit) noSteps(await readTexts(page), `${name} hovered`);
    await shot(page, `numbering-${name}`);
  }
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('keys on the focused timeline step through allocations, up and down the stack, Enter pins, Esc leaves', async () => {
  const page = await env.newPage();
  await demo(page);
  const sel = async () => (await plotData(page)).selected;
  // Not focused: the keys are left alone.
  await page.locator('#status').click();
  await page.keyboard.press('.');
  await frames(page);
  assert.equal(await sel(), '');
  await page.locator('#plot').focus();
  await page.keyboard.press('.');
  await frames(page);
  const first = await sel();
  assert.match(first, /^b[0-9a-f]+_\d+@\d+$/, `selected ${first}`);
  let d = await plotData(page);
  assert.match(d.hover, /^element:\d+$/);
  // Shown as a hover: the tooltip, the stack text, the cursor on the entry that allocated it.
  assert.equal(await page.isVisible('#tip'), true);
  assert.match(await page.textContent('#tip'), /allocation/);
  assert.match(await page.textContent('#stack'), /allocated at entry \d+|live /);
  const firstEntry = Number(first.split('@')[1]);
  assert.ok(d.cursor.startsWith(`${firstEntry}:`), `cursor ${d.cursor} on entry ${firstEntry}`);
  await page.keyboard.press('.');
  await frames(page);
  const second = await sel();
  assert.notEqual(second, first);
  assert.ok(Number(second.split('@')[1]) >= firstEntry, 'later in time');
  await page.keyboard.press(',');
  await frames(page);
  assert.equal(await sel(), first, 'back to the first');
  // Up and down the stack.
  await page.keyboard.press('ArrowUp');
  await frames(page);
  const above = await sel();
  await page.keyboard.press('ArrowDown');
  await frames(page);
  const below = await sel();
  assert.ok(above !== first || below !== first, 'up or down moved the selection');
  // Many steps: the window follows the selection.
  const view0 = (await plotData(page)).view;
  await page.keyboard.press('+');
  await page.keyboard.press('+');
  await page.keyboard.press('+');
  for (let i = 0; i < 60; i++) await page.keyboard.press('.');
  await frames(page);
  d = await plotData(page);
  const [x0, x1] = d.view.split(',').map(Number);
  const cursorStep = Number(d.cursor.split(':')[1]);
  assert.ok(x0 <= cursorStep && cursorStep <= x1, `the selection at ${cursorStep} is in ${d.view} (was ${view0})`);
  // Enter pins it; Esc leaves the selection and unpins.
  await page.keyboard.press('Enter');
  await frames(page);
  d = await plotData(page);
  assert.match(d.pinned, /^element:\d+$/);
  assert.equal(d.pinned, d.hover);
  assert.ok(await page.getAttribute('#stack', 'data-pinned'), 'the panel says what is pinned');
  await shot(page, 'numbering-keys-pinned');
  await page.keyboard.press('Escape');
  await frames(page);
  d = await plotData(page);
  assert.equal(d.selected, '');
  assert.equal(d.pinned, '');
  // The help sheet lists the keys.
  await page.keyboard.press('?');
  await frames(page);
  const help = await page.textContent('#help');
  assert.match(help, /next and previous allocation/);
  assert.match(help, /stacked above and below/);
  assert.match(help, /pin the selected allocation/);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
