// The files torch.profiler writes, in the page: the Chrome trace as an Active Memory Timeline
// (each allocation's ops with their input shapes and its Python stack), the raw memory timeline
// export as the category chart, a snapshot joined with the memory timeline of the same run, and
// bad input. The figures are those of tests/gen/verify_profiler_trace.py and verify_join.py.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { findPoint, fixture, frames, openFiles, plotData, shot, start } from '../lib/harness.mjs';

const TRACE = fixture('gpt_profile.trace.json.gz');
const PICKLE = fixture('gpt_profile.pickle');
const TIMELINE = fixture('gpt_profile.timeline.json');
const RAW = fixture('gpt_profile.timeline.raw.json.gz');

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

/** Opens `file` and waits for the category chart (or an error, which fails the test). */
async function openChart(page, file) {
  await page.setInputFiles('input[type=file] >> nth=0', file);
  await page.waitForFunction(
    () => !document.getElementById('cat-timeline').hidden || !document.getElementById('error').hidden,
    null,
    { timeout: 60000 },
  );
  const err = await page.evaluate(() => (document.getElementById('error').hidden ? null : document.getElementById('error').textContent));
  assert.equal(err, null);
}

/** Opens a file that memviz must refuse; the error's text. */
async function refused(page, name, buffer) {
  await page.setInputFiles('input[type=file] >> nth=0', { name, mimeType: 'application/json', buffer });
  await page.waitForFunction(() => !document.getElementById('error').hidden, null, { timeout: 60000 });
  return page.textContent('#error-text');
}

test('profiler: a Chrome trace opens as an Active Memory Timeline with ops, shapes and Python lines', async () => {
  const page = await env.newPage();
  await openFiles(page, TRACE);
  const data = await plotData(page);
  // ProfilerStep#N, ## forward ## and the other record_function ranges are the annotation rows.
  assert.ok(Number(data.annotationRows) >= 2, JSON.stringify(data));
  // The peak is the trace's own Total Allocated (verify_profiler_trace.py: 653,884,928 B on cuda:0).
  assert.match(await page.textContent('#status'), /^gpt_profile\.trace\.json\.gz · peak 623\.6 MiB · /);
  // An allocation made inside aten::gelu names the op, its input shapes, the module's line and
  // the script's line that ran the step.
  const hit = await findPoint(page, (f) => /^aten::gelu$/m.test(f.stack), { cols: 24, rows: 12 });
  assert.ok(hit, 'an allocation of aten::gelu');
  assert.match(hit.stack, /aten::gelu\n    input shapes: \[8, 256, 1536\]\n/);
  assert.match(hit.stack, /forward  modules\/activation\.py:812/);
  assert.match(hit.stack, /gen_snapshots\.py:\d+/);
  await shot(page, 'profiler_trace');
  // Insights run on it: the iterations are the ProfilerStep#N ranges, the optimizer state is
  // found, and the Live set at the peak credits lines and ops (verify_profiler_trace.py: live
  // at the peak inside aten::sum, 132,153,344 B = 126 MiB).
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
  const insights = await page.textContent('#analysis');
  assert.match(insights, /3 iterations, from the starts of the ProfilerStep#N annotations/);
  assert.match(insights, /Optimizer state: 88\.9 MiB \(78 tensors\)/);
  await page.click('#analysis [data-act="tab-live"]');
  await page.waitForFunction(() => /At the peak, after entry 673 .*: 623\.6 MiB \(653884928 bytes\)/.test(document.getElementById('analysis').textContent));
  const live = await page.textContent('#analysis');
  assert.match(live, /torch\/optim\/adam\.py:139 \(_init_group\)88\.9 MiB78/);
  assert.match(live, /By innermost framesitebytescountaten::sum126 MiB3/);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('profiler: the raw memory timeline export opens as the category chart', async () => {
  const page = await env.newPage();
  await openChart(page, RAW);
  // The peak of the raw events as tests/gen/verify_join.py sums them.
  assert.equal(await page.getAttribute('#cat-timeline .cat-peak', 'data-peak-bytes'), '653294848');
  const legend = await page.textContent('#cat-timeline .cat-legend');
  for (const c of ['parameter', 'optimizer_state', 'activation', 'gradient']) assert.match(legend, new RegExp(c));
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('profiler: a snapshot and the memory timeline of the same run are joined', async () => {
  const page = await env.newPage();
  await page.setInputFiles('input[type=file] >> nth=0', [PICKLE, TIMELINE]);
  await page.waitForSelector('#cat-timeline .cat-join', { timeout: 60000 });
  const join = await page.textContent('#cat-timeline .cat-join');
  // tests/gen/verify_join.py: 837 of the profiler's 840 allocations, 39 live when it started.
  assert.match(join, /837 of the profiler's 840 allocations matched/);
  assert.match(join, /39 live when it started/);
  // The same run's regions over the chart.
  await page.waitForSelector('#cat-timeline .cat-phases:not([hidden]) .cat-phase');
  const phases = await page.$$eval('#cat-timeline .cat-phase', (s) => s.map((x) => x.title));
  assert.ok(phases.some((t) => /ProfilerStep#1/.test(t)), phases.join(' | '));
  await shot(page, 'profiler_join');
  // Its timeline coloured by category: the stack text says which categories are the profiler's.
  await page.click('#cat-timeline [data-act="cat-show-timeline"]');
  await page.waitForSelector('#cat-timeline', { state: 'hidden' });
  await frames(page);
  const hit = await findPoint(page, (f) => /^Category \(the profiler's\): /.test(f.stack));
  assert.ok(hit, 'an allocation with the profiler category');
  await shot(page, 'profiler_join_timeline');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test("profiler: the Chrome trace and the memory timeline of the same run are joined, the trace's steps over the chart", async () => {
  const page = await env.newPage();
  await page.setInputFiles('input[type=file] >> nth=0', [TRACE, TIMELINE]);
  await page.waitForSelector('#cat-timeline .cat-join', { timeout: 60000 });
  // Both come from the profiler's own events: every allocation matches, one (from before the
  // profiler) keeps its inferred category.
  assert.match(await page.textContent('#cat-timeline .cat-join'), /^Joined with gpt_profile\.trace\.json\.gz: 840 of the profiler's 840 allocations matched .*; the category of the other allocation is inferred\./);
  await page.waitForSelector('#cat-timeline .cat-phases:not([hidden]) .cat-phase');
  const phases = await page.$$eval('#cat-timeline .cat-phase', (s) => s.map((x) => x.title));
  for (const name of ['ProfilerStep#1', '## forward ##', '## backward ##', '## optimizer ##']) assert.ok(phases.includes(name), phases.join(' | '));
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('profiler: bad input says what is wrong and how to mend it', async () => {
  const page = await env.newPage();
  const plain = gunzipSync(readFileSync(TRACE));
  assert.match(await refused(page, 'cut.trace.json', plain.subarray(0, plain.length >> 1)), /the profiler trace is cut off: it ends at byte \d+ inside its traceEvents list/);
  assert.match(await refused(page, 'timeline.json', Buffer.from('[[1,2,3],[4,5]]')), /not a profiler memory timeline/);
  assert.match(await refused(page, 'raw.json', Buffer.from('[[1, 2, 3, 99]]')), /not a profiler memory timeline/);
  const noMemory = '{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}';
  assert.match(await refused(page, 'nomem.json', Buffer.from(noMemory)), /profile_memory=True/);
  // The page stays usable: a good file opens after them, here under the name Kineto's
  // tensorboard_trace_handler gives it.
  const kineto = 'worker0.1733389871000.pt.trace.json.gz';
  await openFiles(page, { name: kineto, mimeType: 'application/gzip', buffer: readFileSync(TRACE) });
  assert.equal(await page.evaluate(() => document.getElementById('error').hidden), true);
  assert.match(await page.textContent('#status'), /^worker0\.1733389871000\.pt\.trace\.json\.gz · peak 623\.6 MiB · /);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
