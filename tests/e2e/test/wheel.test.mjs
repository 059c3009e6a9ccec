// The pages the installed wheel's Python API writes (memviz.save_html of a snapshot dict and of
// PyTorch's trace_plot page, and the <iframe srcdoc> a notebook shows) open in Chromium from
// file:// with the network off and every request blocked, up to memviz:ready. scripts/test.sh
// (through scripts/wheel-check.sh) builds the wheel, installs it into a fresh venv and writes
// the pages into $MEMVIZ_WHEEL_PAGE_DIR; without them this test fails.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launch } from '../lib/browser.mjs';

const DIR = process.env.MEMVIZ_WHEEL_PAGE_DIR;

let browser;
before(async () => {
  assert.ok(DIR && existsSync(join(DIR, 'from_dict.html')), `MEMVIZ_WHEEL_PAGE_DIR=${DIR}: no pages of the wheel; run bash scripts/wheel-check.sh and export MEMVIZ_WHEEL_PAGE_DIR=target/wheel-check/pages`);
  browser = await launch();
  await browser.context.setOffline(true);
});
after(async () => {
  await browser?.close();
});

async function openOffline(file) {
  const page = await browser.context.newPage();
  const blocked = [];
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:') || url.startsWith('data:') || url.startsWith('blob:') || url.startsWith('about:')) return route.continue();
    blocked.push(url);
    return route.abort();
  });
  await page.goto(pathToFileURL(join(DIR, file)).href);
  return { page, blocked, errors };
}

async function ready(frame) {
  await frame.waitForFunction(
    () => performance.getEntriesByName('memviz:ready').length > 0 || !document.getElementById('error').hidden,
    null,
    { timeout: 60000, polling: 50 },
  );
  assert.equal(await frame.isVisible('#error'), false, await frame.textContent('#error'));
  return frame.evaluate(() => ({ ...document.getElementById('plot').dataset }));
}

for (const file of ['from_dict.html', 'from_pytorch_page.html']) {
  test(`${file}, written by memviz.save_html, works offline up to memviz:ready`, async () => {
    const { page, blocked, errors } = await openOffline(file);
    const d = await ready(page);
    assert.ok(Number(d.bands) > 0, JSON.stringify(d));
    assert.equal(await page.inputValue('#view-select'), 'active-memory-timeline');
    assert.deepEqual(blocked, []);
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test("the notebook's <iframe srcdoc> shows the viewer offline", async () => {
  const { page, blocked, errors } = await openOffline('notebook_iframe.html');
  const el = await page.waitForSelector('iframe');
  const frame = await el.contentFrame();
  const d = await ready(frame);
  assert.ok(Number(d.bands) > 0, JSON.stringify(d));
  assert.deepEqual(blocked, []);
  assert.deepEqual(errors, []);
  await page.close();
});
