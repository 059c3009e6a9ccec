// Errors a person can read and put away: a text file is called text (not "corrupt pickle at
// byte 0: memo index 101 was never stored"), the error box can be dismissed, and the page keeps
// working after it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readyCount, shot, start, waitReady } from '../lib/harness.mjs';

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
