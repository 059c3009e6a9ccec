// Pages written by the command line: `memviz segment-plot` opens from file:// with every network
// request blocked and shows the Allocator State History of the embedded snapshot.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launch } from '../lib/browser.mjs';
import { fixture, ROOT, shot } from '../lib/harness.mjs';

const OOM = fixture('oom.pickle');
const CLI = process.env.MEMVIZ_CLI ?? join(ROOT, 'target/debug/memviz');
const skip = !OOM ? 'needs ../shared/fixtures' : !existsSync(CLI) ? `needs ${CLI}: run trunk build --release, then cargo build -p memviz` : false;

let browser;
let dir;
before(async () => {
  if (skip) return;
  browser = await launch();
  dir = mkdtempSync(join(tmpdir(), 'memviz-offline-'));
});
after(async () => {
  await browser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('segment-plot writes a page that works offline from file://', { skip }, async () => {
  const out = join(dir, 'x.html');
  execFileSync(CLI, ['segment-plot', OOM, '-o', out]);
  const page = await browser.context.newPage();
  const blocked = [];
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:') || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    blocked.push(url);
    return route.abort();
  });
  await page.goto(pathToFileURL(out).href);
  await page.waitForFunction(() => performance.getEntriesByName('memviz:ready').length > 0 || !document.getElementById('error').hidden, null, { timeout: 60000, polling: 50 });
  assert.equal(await page.isVisible('#error'), false, await page.textContent('#error'));
  assert.equal(await page.inputValue('#view-select'), 'allocator-state-history');
  await page.waitForSelector('#event-rows > div.sel');
  const rows = Number(await page.getAttribute('#event-list', 'data-rows'));
  assert.equal(Number(await page.getAttribute('#event-list', 'data-selected')), rows - 1, 'the last event is selected');
  assert.match(await page.textContent('#stack'), /^\(.* allocated \/ .* reserved\)\n/);
  assert.ok(Number(await page.getAttribute('#segmap', 'data-segments')) > 0);
  await shot(page, 'offline-segment-plot');
  assert.deepEqual(blocked, [], 'no network requests');
  assert.deepEqual(errors, []);
  await page.close();
});
