// Errors a person can read and put away: a text file is called text (not "corrupt pickle at
// byte 0: memo index 101 was never stored"), the error box can be dismissed, and the page keeps
// working after it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, readyCount, shot, start, waitReady } from '../lib/harness.mjs';

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

test('a text file is called text, the error can be dismissed, and the demo still opens', async () => {
  const page = await env.newPage();
  await page.setInputFiles('#file-input', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello world\nthis is text\n') });
  await page.waitForSelector('#error:not([hidden])');
  const text = await page.textContent('#error-text');
  assert.match(text, /notes\.txt/);
  assert.match(text, /text file/);
  assert.doesNotMatch(text, /memo index|corrupt pickle/);
  await shot(page, 'error-text-file');
  await page.click('#error-close');
  await page.waitForSelector('#error', { state: 'hidden' });
  const n = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, n);
  assert.equal(await page.isVisible('#error'), false);
  assert.deepEqual(page.memviz.errors.filter((e) => !/memviz/.test(e)), []);
  await page.close();
});

test("the profiler's picture of its memory timeline is shown as the picture it is, with the export to use instead", async () => {
  const page = await env.newPage();
  const html = readFileSync(join(ROOT, 'tests/data/profiler/memory_timeline_picture.html'));
  await page.setInputFiles('#file-input', { name: 'memory.html', mimeType: 'text/html', buffer: html });
  await page.waitForSelector('#error:not([hidden]) #error-picture');
  const text = await page.textContent('#error-text');
  assert.match(text, /memory\.html/);
  assert.match(text, /export_memory_timeline\("x\.json"/);
  // The 8x4 picture's four coloured bands, drawn from its own pixels (tests/gen/make_profiler_page.py).
  const picture = await page.evaluate(() => {
    const c = document.getElementById('error-picture');
    const ctx = c.getContext('2d');
    const rows = [0, 1, 2, 3].map((y) => Array.from(ctx.getImageData(4, y, 1, 1).data.slice(0, 3)));
    return { w: c.width, h: c.height, rows, label: c.getAttribute('aria-label') };
  });
  assert.deepEqual([picture.w, picture.h], [8, 4]);
  assert.deepEqual(picture.rows, [[0x1f, 0x77, 0xb4], [0xff, 0x7f, 0x0e], [0x2c, 0xa0, 0x2c], [0xd6, 0x27, 0x28]]);
  assert.match(picture.label, /memory timeline/);
  await shot(page, 'error-profiler-picture');
  // Another error takes its place: the picture goes with the message it was under.
  await page.setInputFiles('#file-input', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello\n') });
  await page.waitForFunction(() => /notes\.txt/.test(document.getElementById('error-text').textContent));
  await page.waitForSelector('#error-picture', { state: 'detached' });
  assert.deepEqual(page.memviz.errors.filter((e) => !/memviz/.test(e)), []);
  await page.close();
});
