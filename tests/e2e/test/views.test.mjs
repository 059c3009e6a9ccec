// The views beside the Active Memory Timeline: Allocator State History (virtualized event list,
// keys, clicks, the segment map and its hover texts), the segment and mapped-pages timelines, and
// Allocator Settings.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, fixture, frames, openFiles, plotData, shot, start } from '../lib/harness.mjs';

const RESNET = fixture('resnet50_fixed.pickle');
const OOM = fixture('oom.pickle');
const MULTISTREAM = join(ROOT, 'tests/data/real/multistream.pickle');
const STATE_ONLY = fixture('state_only.pickle');

// PyTorch's viewer's event rows, written independently of the page: annotate_snapshot (streams
// numbered in order of first appearance and left out when every trace entry is on the default
// stream; per-address versions; a free_requested followed by the free_completed of the same
// address becomes one `free`) and formatEvent (action padded to 14, label to 18, formatSize with
// JavaScript's toFixed rounding, "\n" + 14 spaces + "(stream N)").
const REFERENCE_ROWS_PY = String.raw`
import json, math, pickle, sys
from fractions import Fraction
def fmt(n):
    orig = n; x = Fraction(n)
    for u in ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei', 'Zi']:
        if abs(x) < 1024:
            t = x * 10; q = math.floor(t)
            if t - q >= Fraction(1, 2): q += 1
            return f"{q // 10}.{q % 10}{u}B ({orig} bytes)"
        x /= 1024
    return f"{float(x):.1f}YiB"
snap = pickle.load(open(sys.argv[1], 'rb'))
if isinstance(snap, list): snap = {'segments': snap, 'device_traces': []}
names = {0: 0}; bv = {}; sv = {}
def ver(m, a, inc):
    r = m.get(a, 0)
    if inc: m[a] = r + 1
    return r
traces = []
for tr in snap.get('device_traces', []):
    nt = []
    for t in tr:
        t = dict(t); s = t.get('stream', 0)
        if s not in names: names[s] = len(names)
        t['stream'] = names[s]; a = t['action']
        if a == 'free_completed':
            t['version'] = ver(bv, t['addr'], True)
            if nt and nt[-1]['action'] == 'free_requested' and nt[-1]['addr'] == t['addr']:
                nt[-1]['action'] = 'free'; continue
        elif a in ('free_requested', 'alloc'): t['version'] = ver(bv, t['addr'], False)
        elif a in ('segment_free', 'segment_unmap'): t['version'] = ver(sv, t['addr'], True)
        elif a in ('segment_alloc', 'segment_map'): t['version'] = ver(sv, t['addr'], False)
        nt.append(t)
    traces.append(nt)
show = len(names) > 1
def fe(t):
    st = '\n              (stream %d)' % t['stream'] if show else ''
    a = t['action']
    if a == 'oom': return f"OOM (requested {fmt(t['size'])}, CUDA has {fmt(t['device_free'])} memory free){st}"
    if a == 'snapshot': return 'snapshot'
    pre = 's' if a.startswith('segment') else 'b'
    return f"{a:<14} {(pre + format(t['addr'], 'x') + '_' + str(t['version'])):<18} {fmt(t['size'])}{st}"
print(json.dumps([[fe(t) for t in nt] for nt in traces]))
`;

/** The reference's event rows of every device of a file, or null without python3. */
function referenceRows(file) {
  try {
    return JSON.parse(execFileSync('python3', ['-c', REFERENCE_ROWS_PY, file], { maxBuffer: 1 << 28 }).toString());
  } catch {
    return null;
  }
}

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
      selText: sel?.querySelector('.ev')?.textContent ?? null,
      selEntry: sel ? Number(sel.dataset.entry) : null,
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

test('Allocator State History: the last event is selected; keys and clicks move the selection; the map explains itself', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  await showView(page, 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  let s = await listState(page);
  // 10184 trace entries; each free_requested + free_completed pair is one `free` row.
  assert.ok(s.rows > 5000 && s.rows < 10184, `rows ${s.rows}`);
  assert.equal(s.selected, s.rows - 1, 'the last event is selected');
  assert.ok(s.selVisible, 'the selected row is scrolled into view');
  assert.ok(s.inDom < 200, `only the visible rows exist (${s.inDom} in the DOM)`);
  assert.match(s.stack, /^\(\d+\.\d[KMG]?i?B \(\d+ bytes\) allocated \/ \d+\.\d[KMG]?i?B \(\d+ bytes\) reserved\)\n/);
  assert.match(s.header, /allocated \/ .* reserved\) after entry \d+ · [\d,]+ entries$/);
  assert.equal(s.header.match(/after entry (\d+)/)[1], String(s.selEntry), 'the header names the selected row\'s entry');
  // formatEvent: action padded to 14, label to 18, then the size.
  assert.match(s.selText, /^(alloc|free|free_requested|free_completed|segment_alloc|segment_free) +[bs][0-9a-f]+_\d+ +\d+\.\dK?M?G?i?B \(\d+ bytes\)$/);
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
  // The rounding waste: a red sliver at the end of a block. Find red pixels on the map and point
  // at them.
  const reds = await page.evaluate(() => {
    const c = document.getElementById('segmap');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const r = c.getBoundingClientRect();
    const out = [];
    for (let y = 0; y < c.height && out.length < 400; y += 2) {
      for (let x = 0; x < c.width; x++) {
        const i = (y * c.width + x) * 4;
        if (d[i] === 0xd6 && d[i + 1] === 0x27 && d[i + 2] === 0x28) out.push([(x + 0.5) * (r.width / c.width), (y + 0.5) * (r.height / c.height)]);
      }
    }
    return out;
  });
  for (const [x, y] of reds.filter((_, i) => i % 7 === 0)) {
    await page.mouse.move(box.x + x, box.y + y);
    const h = await page.evaluate(async () => {
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      return { hover: document.getElementById('segmap').dataset.hover, stack: document.getElementById('stack').textContent };
    });
    if (h.hover.startsWith('rounding:')) {
      found.rounding = h.stack;
      break;
    }
  }
  assert.ok(found.rounding, `a rounding area was found on the map (${reds.length} red pixels)`);
  assert.match(found.rounding, /^Free space lost due to rounding \d+\.\d\S*B \(\d+ bytes\) \(stream \d+\)\n/);
  assert.ok(found.block, 'a block was found on the map');
  assert.match(found.block, /^b[0-9a-f]+_\d+ \d+\.\d\S*B \(\d+ bytes\) allocation( \(block freed but waiting due to record_stream\))? \(stream \d+\)\n/);
  assert.ok(found.segment, 'free space of a segment was found on the map');
  assert.match(found.segment, /^s[0-9a-f]+_\d+: segment \d+\.\d\S*B \(\d+ bytes\) allocated, \d+\.\d\S*B \(\d+ bytes\) free( \([\d.e-]+% internal\))? \(stream \d+\)\n/);
  await shot(page, 'state-history-hover');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

/** The rendered rows: [{ row, text, height }]. */
const renderedRows = (page) =>
  page.evaluate(() => [...document.querySelectorAll('#event-rows > div[data-row]')].map((d) => ({ row: Number(d.dataset.row), text: d.querySelector('.ev').textContent, height: d.getBoundingClientRect().height })));

/** Scrolls the event list so that `row` is near the top, and waits for the redraw. */
async function scrollToRow(page, row, rowPx) {
  await page.evaluate(([r, px]) => {
    const l = document.getElementById('event-list');
    l.scrollTop = r * px;
  }, [row, rowPx]);
  await frames(page);
  await frames(page);
}

for (const [name, file, everyRow] of [['resnet50_fixed', RESNET, false], ['multistream', MULTISTREAM, true], ['oom', OOM, true]]) {
  test(`Allocator State History rows of ${name} equal PyTorch's formatEvent rows`, async () => {
    const want = referenceRows(file);
    assert.ok(want, 'python3 failed to write the reference rows');
    const rowsOf = want.find((d) => d.length > 0) ?? [];
    const page = await env.newPage();
    await openFiles(page, file);
    await showView(page, 'allocator-state-history');
    await page.waitForSelector('#event-rows > div.sel');
    const s = await listState(page);
    assert.equal(s.rows, rowsOf.length, 'one row per event, pairs joined as the reference joins them');
    const twoLines = rowsOf.some((r) => r.includes('\n'));
    const rowPx = (await renderedRows(page))[0].height;
    assert.equal(rowPx, twoLines ? 36 : 18, 'rows with a stream line are two lines tall');
    const starts = everyRow ? Array.from({ length: Math.ceil(rowsOf.length / 10) }, (_, i) => i * 10) : [0, 1000, 2345, Math.floor(rowsOf.length / 2), rowsOf.length - 30];
    let compared = 0;
    for (const start of starts) {
      await scrollToRow(page, start, rowPx);
      for (const r of await renderedRows(page)) {
        assert.equal(r.text, rowsOf[r.row], `row ${r.row}`);
        assert.equal(r.height, rowPx);
        compared++;
      }
    }
    assert.ok(compared >= Math.min(rowsOf.length, 100), `${compared} rows compared`);
    if (twoLines) {
      assert.match(s.selText, /\n {14}\(stream \d+\)$/);
      await shot(page, `state-history-${name}`);
    }
    assert.deepEqual(page.memviz.errors, []);
    await page.close();
  });
}

test('the OOM snapshot: the last event of the history and its map', async () => {
  const page = await env.newPage();
  await openFiles(page, OOM);
  await showView(page, 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  const s = await listState(page);
  assert.equal(s.selected, s.rows - 1);
  const oomRow = await page.evaluate(() => [...document.querySelectorAll('#event-rows > div')].map((d) => d.querySelector('.ev')?.textContent ?? '').find((t) => t.startsWith('OOM')));
  if (oomRow) assert.match(oomRow, /^OOM \(requested .*, CUDA has .* memory free\)$/);
  assert.ok(Number(await page.getAttribute('#segmap', 'data-segments')) > 0);
  await shot(page, 'state-history-oom');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('Active Cached Segment Timeline and Mapped Pages Timeline reuse the timeline', async () => {
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

test('a snapshot without history is one column of what was live, with a note saying why', async () => {
  const page = await env.newPage();
  await openFiles(page, STATE_ONLY);
  const d = await plotData(page);
  assert.equal(d.kind, 'moment');
  assert.equal(d.xTicks, '', 'no step ticks');
  assert.ok(Number(d.bands) > 0, `bands ${d.bands}`);
  assert.equal(await page.isVisible('#pool-note'), true);
  assert.match(await page.textContent('#pool-note'), /^Recorded with _record_memory_history\(enabled='state'\): no history\. What was live when the snapshot was taken is shown as one column: \d+ allocated blocks/);
  assert.match(await page.textContent('#status'), /live at the snapshot/);
  assert.equal(await page.isDisabled('#x-axis'), true);
  // The column stands in the middle of the plot: its sides are empty, its middle holds blocks.
  const box = await page.locator('#plot').boundingBox();
  const y = box.y + box.height - 46 - 3;
  await page.mouse.move(box.x + 84 + 10, y);
  await frames(page);
  assert.equal((await plotData(page)).hover, '', 'nothing beside the column');
  await page.mouse.move(box.x + 84 + (box.width - 104) / 2, y);
  await page.waitForFunction(() => document.getElementById('plot').dataset.hover?.startsWith('element:'), null, { polling: 50 });
  assert.match(await page.textContent('#stack'), /^b[0-9a-f]+_\d+ \d+(\.\d+)? ?(B|KiB|MiB|GiB) \(\d+ bytes\) allocation\n[^]*live when the snapshot was taken/);
  await shot(page, 'state-only');
  // Other timelines of it say the same; the event list still works.
  await page.selectOption('#view-select', 'active-cached-segment-timeline');
  await page.waitForFunction(() => document.getElementById('plot').dataset.kind === 'moment' && !document.getElementById('pool-note').hidden, null, { polling: 50 });
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a view with nothing to show is marked in the menu and drawn as an empty state', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const labels = await page.$$eval('#view-select option', (os) => Object.fromEntries(os.map((o) => [o.value, o.textContent])));
  assert.equal(labels['mapped-pages-timeline'], 'Mapped Pages Timeline (no expandable segments)');
  assert.equal(labels['allocated-memory-private-pools'], 'Allocated Memory (incl. Private Pools) (no private pools)');
  assert.equal(labels['active-memory-timeline'], 'Active Memory Timeline');
  await showView(page, 'mapped-pages-timeline');
  await page.waitForFunction(() => document.getElementById('plot').dataset.kind === 'empty', null, { polling: 50 });
  const d = await plotData(page);
  assert.equal(d.bands, '0');
  assert.equal(d.xTicks, '');
  assert.match(await page.textContent('#view-note'), /expandable_segments:True/);
  await shot(page, 'mapped-pages-empty');
  await page.close();
  // A file with expandable segments and private pools has its views unmarked.
  const other = await env.newPage();
  await openFiles(other, join(ROOT, 'tests/data/real/expandable_segments.pickle'));
  const marked = await other.$eval('#view-select option[value="mapped-pages-timeline"]', (o) => o.textContent);
  assert.equal(marked, 'Mapped Pages Timeline');
  await other.close();
});

test('Allocator Settings: a table with explanations, or a plain note', async () => {
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

test('"hide freed" leaves out allocations made and freed within the trace', async () => {
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
  // The x axis stays: the same steps, window and ticks; the status says how many are shown.
  const hidden = await plotData(page);
  assert.deepEqual([hidden.steps, hidden.view, hidden.xTicks], [all.steps, all.view, all.xTicks]);
  const total = (await page.textContent('#status')).replaceAll(',', '').match(/(\d+) of (\d+) allocations shown/);
  assert.ok(total, await page.textContent('#status'));
  assert.ok(Number(total[1]) < Number(total[2]));
  assert.equal(await page.getAttribute('#detail-label', 'data-total'), total[1]);
  await shot(page, 'hide-freed');
  await page.uncheck('#hide-freed');
  await page.waitForFunction((b) => document.getElementById('plot').dataset.bands === b, all.bands, { polling: 50 });
  assert.match(await page.textContent('#status'), new RegExp(` · ${Number(total[2]).toLocaleString('en-US')} allocations$`));
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
