// Two snapshots compared (curves on one axis, differences at matched points), the profiler's
// memory timeline as a stacked category timeline, and snapshots coloured by inferred category.
// The figures are those of the tests in crates/core/src/analysis/{compare,categories}.rs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, frames, openFiles, shot, start } from '../lib/harness.mjs';

const BUGGY = fixture('resnet50_buggy.pickle');
const FIXED = fixture('resnet50_fixed.pickle');
const PROFILE = fixture('resnet50_profile.timeline.json');
const PROFILE_GZ = fixture('resnet50_profile.timeline.json.gz');
const needSnapshots = BUGGY && FIXED ? false : 'needs ../shared/fixtures';
const needProfile = PROFILE && PROFILE_GZ ? false : 'needs ../shared/fixtures';

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

test('compare: the buggy ResNet against the fixed one', { skip: needSnapshots }, async () => {
  const page = await env.newPage();
  await openFiles(page, [FIXED, BUGGY]);
  // Show the fixed file (A); the buggy one is B.
  const names = await page.$$eval('#file-select option', (o) => o.map((x) => x.textContent));
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
  assert.ok((await moreB.count()) >= 3);
  assert.ok((await moreA.count()) >= 2);
  assert.match(await moreB.nth(1).textContent(), /torch\/nn\/modules\/conv\.py:548 \(_conv_forward\)/);
  assert.equal(await moreA.first().getAttribute('data-delta-bytes'), '-91820032');
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
  test(`categories: the profiler memory timeline (${label})`, { skip: needProfile }, async () => {
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
    await page.waitForFunction(() => document.querySelector('#cat-timeline .cat-hover').textContent.startsWith('t = '));
    const hover = await page.textContent('#cat-timeline .cat-hover');
    assert.match(hover, /^t = [\d.]+ (ms|s): parameter [\d.]+ \S+ \(\d+ bytes\);.*total/);
    if (label === 'json') await shot(page, 'categories_profile');
    // Close.
    await page.click('#cat-timeline [data-act="cat-close"]');
    await page.waitForSelector('#cat-timeline', { state: 'hidden' });
    assert.deepEqual(page.memviz.errors, []);
    await page.close();
  });
}

test('categories: colour a snapshot by inferred category', { skip: needSnapshots }, async () => {
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
  await shot(page, 'categories_inferred');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
