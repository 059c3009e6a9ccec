// The hosted site: the static folder Trunk writes works when a host publishes it below its root
// (GitHub Pages serves a repository's site at /<repository>/). Two builds are checked:
//  - dist/ as built (public_url "./", relative links), served under a sub-path;
//  - a build with `trunk build --release --public-url /memviz-site/sub/` (absolute links), served
//    under that path: $MEMVIZ_SUBPATH_DIST when given, else built here when trunk is on PATH.
// Each loads a fixture and waits for the `memviz:ready` mark, with every request under the path.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../lib/server.mjs';
import { launch } from '../lib/browser.mjs';
import { DIST, fixture, ROOT, shot, waitReady } from '../lib/harness.mjs';

const PREFIX = '/memviz-site/sub/';
const OOM = fixture('oom.pickle');

let browser;
let built = null;
let buildError = null;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
  if (built?.tmp) rmSync(built.tmp, { recursive: true, force: true });
});

/** A dist built with the absolute public URL PREFIX (prebuilt, or built now with trunk). */
function subpathDist() {
  if (built || buildError) return built;
  if (process.env.MEMVIZ_SUBPATH_DIST) {
    built = { dir: process.env.MEMVIZ_SUBPATH_DIST };
    return built;
  }
  const tmp = mkdtempSync(join(tmpdir(), 'memviz-subpath-'));
  try {
    execFileSync('trunk', ['build', '--release', '--offline', '--public-url', PREFIX, '--dist', tmp], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 20 * 60 * 1000,
      env: { ...process.env, PATH: `${process.env.HOME}/.cargo/bin:${process.env.PATH}` },
    });
    built = { dir: tmp, tmp };
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    buildError = `trunk build --public-url ${PREFIX} failed or trunk is missing: ${String(e.stderr ?? e.message).slice(-400)}`;
  }
  return built;
}

/** Loads the page from `dir` served under PREFIX, opens the OOM fixture, waits for memviz:ready. */
async function loadUnderPrefix(dir, name) {
  const server = await serve(dir, { prefix: PREFIX });
  const page = await browser.context.newPage();
  const errors = [];
  const failed = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('response', (r) => r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`));
  page.on('requestfailed', (r) => failed.push(`failed ${r.url()}`));
  try {
    assert.ok(server.url.endsWith(PREFIX), server.url);
    await page.goto(server.url);
    await page.waitForSelector('#demo:not([disabled])', { timeout: 60000 });
    await page.setInputFiles('input[type=file] >> nth=0', OOM);
    await waitReady(page, 0);
    assert.ok(Number(await page.getAttribute('#plot', 'data-bands')) > 0, 'the timeline is drawn');
    await shot(page, name);
    assert.deepEqual(failed, [], 'every file is found under the path');
    assert.deepEqual(errors, []);
    const outside = server.requests.filter((r) => !r.path.startsWith(PREFIX));
    assert.deepEqual(outside, [], 'nothing is asked for outside the path');
    assert.ok(server.requests.some((r) => r.path.endsWith('.wasm')), 'the wasm came from under the path');
  } finally {
    await page.close();
    await server.close();
  }
}

test('dist/ as built (relative links) works under a sub-path', async () => {
  await loadUnderPrefix(DIST, 'hosted-relative');
});

test(`a build with --public-url ${PREFIX} works served under that path`, { timeout: 25 * 60 * 1000 }, async () => {
  const b = subpathDist();
  assert.ok(b, buildError);
  const index = readFileSync(join(b.dir, 'index.html'), 'utf8');
  assert.match(index, new RegExp(`href="${PREFIX}[^"]*\\.css"`), 'links carry the public URL');
  assert.ok(existsSync(join(b.dir, 'memviz-web_bg.wasm')));
  await loadUnderPrefix(b.dir, 'hosted-public-url');
});
