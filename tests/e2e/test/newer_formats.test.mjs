// Snapshots of PyTorch 2.14+ in the page: pinned host memory as its own device, `annotate`
// entries on the allocation they name (tooltip, stack panel, Allocator State History), and the
// banner of a trace whose ring buffer overflowed; a state-only file keeps its one column and note.
// Every recording option of 2.10-2.15 opens: skip_actions, host memory only, internal_metadata,
// FX-augmented frames, a pool's segments without traces.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, findPoint, fixture, frames, openFiles, plotArea, shot, start } from '../lib/harness.mjs';

const synth = (name) => join(ROOT, 'tests/data/synth', name);
const STATE_ONLY = fixture('state_only.pickle');

let env;
before(async () => {
  env = await start({ viewport: { width: 1280, height: 800 } });
});
after(async () => {
  await env?.close();
});

const deviceOptions = (page) =>
  page.evaluate(() => [...document.getElementById('device-select').options].map((o) => ({ value: o.value, text: o.textContent })));

async function showView(page, value) {
  await page.selectOption('#view-select', value);
  await page.waitForFunction(() => !document.getElementById('view-select').disabled && !document.getElementById('status').textContent.includes('Laying out'), null, { polling: 50 });
  await frames(page);
}

for (const name of ['pinned_host.pickle', 'pinned_host_lists.pickle']) {
  test(`pinned host memory is a device of its own in the menu and the views (${name})`, async () => {
    const page = await env.newPage();
    await openFiles(page, synth(name));
    const options = await deviceOptions(page);
    assert.equal(options.length, 2, JSON.stringify(options));
    assert.match(options[0].text, /^cuda:0 · /);
    assert.match(options[1].text, /^pinned host · \d+(\.\d+)? (KiB|MiB) reserved \(\d+ entries\)$/, options[1].text);
    assert.equal(await page.inputValue('#device-select'), options[0].value, 'a CUDA device opens first');
    await page.selectOption('#device-select', options[1].value);
    await page.waitForFunction(() => location.hash.includes('device=-1'), null, { polling: 50 });
    await frames(page);
    const hit = await findPoint(page, (f) => f.hover?.startsWith('element:') && f.stack.includes('pin_memory'));
    assert.ok(hit, 'an allocation of pinned host memory with its stack');
    for (const view of ['active-cached-segment-timeline', 'allocator-state-history']) {
      await showView(page, view);
      assert.equal(await page.inputValue('#device-select'), options[1].value, `${view} keeps the device`);
    }
    await page.waitForSelector('#event-rows > div.sel');
    // Each row starts with its entry number (a link), then the row's text.
  const rows = await page.$$eval('#event-rows > div', (d) => d.map((x) => x.textContent.replace(/^\d+/, '')).join('\n'));
    assert.match(rows, /^alloc +b[0-9a-f]+_\d+ /m, rows);
    await shot(page, `newer-formats-${name.replace('.pickle', '')}`);
    assert.deepEqual(page.memviz.errors, []);
    await page.close();
  });
}

test('annotate entries show on their allocation: tooltip, stack panel, history rows; never as allocations', async () => {
  const page = await env.newPage();
  await openFiles(page, synth('annotate_entries.pickle'));
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:') && f.stack.includes('kv-cache layer 3'), { cols: 24, rows: 14 });
  assert.ok(hit, 'the annotated allocation');
  assert.match(hit.stack, /Annotation \(entry \d+ at [^)]+\): kv-cache layer 3\n/);
  assert.match(hit.stack, /Annotation \(entry \d+ at [^)]+\): kv-cache layer 3: resized for 4096 tokens/);
  assert.match(hit.stack, /build_cache +\S*model\.py:140/, 'with the frames where it was annotated');
  const tip = await page.textContent('#tip');
  assert.match(tip, /annotated: kv-cache layer 3: resized for 4096 tokens \(\+1 earlier\)/, tip);
  // Pinned, the panel keeps it.
  await page.mouse.click(hit.x, hit.y);
  await frames(page);
  assert.match(await page.textContent('#stack'), /kv-cache layer 3/);
  await shot(page, 'newer-formats-annotate');
  const status = await page.textContent('#status');
  const allocations = Number(status.match(/([\d,]+) allocations/)?.[1].replaceAll(',', ''));
  await showView(page, 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  const rows = await page.$$eval('#event-rows > div', (d) => d.map((x) => x.textContent.replace(/^\d+/, '')));
  const annotate = rows.filter((r) => r.startsWith('annotate'));
  assert.equal(annotate.length, 3, rows.join('\n'));
  assert.match(annotate[0], /^annotate +b[0-9a-f]+_\d+ +"kv-cache layer 3"$/);
  assert.ok(annotate.some((r) => r.endsWith('"embedding weight"')));
  const allocRows = rows.filter((r) => r.startsWith('alloc ')).length;
  assert.ok(allocations >= allocRows, `${allocations} allocations, ${allocRows} alloc rows: no annotation counted`);
  const row = page.locator('#event-rows > div', { hasText: 'embedding weight' });
  await row.click();
  await frames(page);
  const text = await page.textContent('#stack');
  assert.match(text, /annotated at \d{4}-\d\d-\d\d/, text);
  assert.match(text, /_annotate_memory/, text);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a trace whose ring buffer overflowed says so above the plot, with what to do', async () => {
  const page = await env.newPage();
  await openFiles(page, synth('trace_overflowed.pickle'));
  await page.waitForSelector('#coverage-note:not([hidden])');
  const note = await page.textContent('#coverage-note');
  assert.match(note, /^Partial history \(cuda:0\): the trace ring buffer overflowed \(max_entries=40\)/, note);
  assert.match(note, /starts mid-run/);
  assert.match(note, /raise max_entries in torch\.cuda\.memory\._record_memory_history\(max_entries=\.\.\.\)/);
  await shot(page, 'newer-formats-overflowed');
  // A real ring buffer that wrapped (PyTorch 2.11 writes no flag): inferred from its frees.
  await openFiles(page, join(ROOT, 'tests/data/real/ring_buffer_wrapped.pickle'));
  await page.waitForFunction(() => /5 frees of allocations never seen/.test(document.getElementById('coverage-note').textContent), null, { polling: 50 });
  const inferred = await page.textContent('#coverage-note');
  assert.match(inferred, /^Partial history \(cuda:0\): the trace starts mid-run \(5 frees of allocations never seen allocated/, inferred);
  // A trace from the start has no such banner.
  await openFiles(page, synth('annotate_entries.pickle'));
  await frames(page);
  assert.equal(await page.getAttribute('#coverage-note', 'hidden'), '');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a state-only snapshot shows its live blocks as one column with the line saying why', async () => {
  const page = await env.newPage();
  await openFiles(page, STATE_ONLY);
  const kind = await page.getAttribute('#plot', 'data-kind');
  assert.equal(kind, 'moment');
  const note = await page.textContent('#pool-note');
  assert.match(note, /enabled='state'|No history/, note);
  assert.match(note, /enabled='all'/, note);
  assert.equal(await page.getAttribute('#coverage-note', 'hidden'), '', 'the column has its own note');
  assert.match(await page.textContent('#status'), /live at the snapshot/);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('skip_actions files open and lay out: no free_requested, no segment entries', async () => {
  const page = await env.newPage();
  for (const name of ['skip_free_requested.pickle', 'skip_segment_actions.pickle']) {
    await openFiles(page, synth(name));
    const hit = await findPoint(page, (f) => f.hover?.startsWith('element:'));
    assert.ok(hit, `${name}: an allocation to point at`);
    assert.match(await page.textContent('#status'), /[\d,]+ allocations/);
    await shot(page, `newer-formats-${name.replace('.pickle', '')}`);
  }
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a recording of pinned host memory only opens on the host, its timeline drawn', async () => {
  const page = await env.newPage();
  await openFiles(page, synth('host_only.pickle'));
  const options = await deviceOptions(page);
  assert.equal(options.length, 2, JSON.stringify(options));
  assert.equal(await page.inputValue('#device-select'), options[1].value, 'the device with the trace opens');
  assert.match(options[1].text, /^pinned host · /);
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:') && f.stack.includes('pin_memory'));
  assert.ok(hit, 'a pinned batch with its stack');
  await shot(page, 'newer-formats-host-only');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test("internal_metadata shows on the allocator's own allocation", async () => {
  const page = await env.newPage();
  await openFiles(page, synth('internal_metadata.pickle'));
  // The prefix block lives three entries and is 2 MiB of 62: a fine grid over the plot's lower third.
  const a = await plotArea(page);
  const area = { ...a, y: a.y + a.height * 0.7, height: a.height * 0.3 };
  const accept = (f) => f.hover?.startsWith('element:') && f.stack.includes('mallocWithAddress');
  const hit = await findPoint(page, accept, { cols: 48, rows: 36, area });
  assert.ok(hit, 'the prefix block of mallocWithAddress');
  assert.match(hit.stack, /Internal \(the allocator's own entry\): mallocWithAddress/);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('FX-augmented frames show their node and the model code', async () => {
  const page = await env.newPage();
  await openFiles(page, synth('fx_frames.pickle'));
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:') && f.stack.includes('>> FX'), { cols: 32, rows: 16 });
  assert.ok(hit, 'an allocation made in compiled code');
  assert.match(hit.stack, />> FX: node=addmm, op=call_function, target=aten\.addmm\.default/);
  assert.match(hit.stack, /h = self\.fc1\(x\)/);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test("a pool's segments without traces (MemPool.snapshot(include_traces=False)) open as one column", async () => {
  const page = await env.newPage();
  await openFiles(page, synth('pool_snapshot_no_traces.pickle'));
  assert.equal(await page.getAttribute('#plot', 'data-kind'), 'moment');
  const hit = await findPoint(page, (f) => f.hover?.startsWith('element:'));
  assert.ok(hit, 'a block of the pool');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
