// Writes README's screenshots of the built page (dist/) in headless Chromium, 1280×800, light
// theme: the timeline of a real snapshot with the tooltip of one allocation showing, the rank
// overview of a generated 8-rank run, and the Insights panel. Run by scripts/screenshots.sh.
//
//   node screenshots.mjs [OUT_DIR]      default: docs/img
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT, findPoint, fixture, frames, openFiles, start } from './lib/harness.mjs';

const OUT_DIR = resolve(process.argv[2] ?? join(ROOT, 'docs/img'));
const VIEWPORT = { width: 1280, height: 800 };
const BUGGY = fixture('resnet50_buggy.pickle');

/** Fails the run when the page has shown an error or logged one: a screenshot of a broken page is worse than none. */
function assertClean(page, what) {
  if (page.memviz.errors.length) throw new Error(`${what}: the page logged errors: ${page.memviz.errors.join('; ')}`);
}

async function save(page, name) {
  await frames(page);
  const path = join(OUT_DIR, name);
  await page.screenshot({ path });
  console.log(`screenshots: wrote ${path}`);
}

/** The timeline of resnet50_buggy with the tooltip of a large allocation (4 MiB or more) whose stack names the script. */
const bigWithScript = (f) => f.hover?.startsWith('element:') && /\.py:\d+/.test(f.stack) && Number(f.stack.match(/\((\d+) bytes\) allocation/)?.[1] ?? 0) >= 4 * 2 ** 20;
async function timeline(env) {
  const page = await env.newPage();
  await openFiles(page, BUGGY);
  const hit = await findPoint(page, bigWithScript, { cols: 16, rows: 12 });
  if (!hit) throw new Error('timeline: no allocation of 4 MiB or more with a Python frame was found under the pointer');
  await page.waitForSelector('#tip:not([hidden])');
  assertClean(page, 'timeline');
  await save(page, 'timeline.png');
  await page.close();
}

/** The rank overview of tests/gen/make_ranks.py's run, opened as the e2e test opens it. */
async function ranks(env) {
  const dir = mkdtempSync(join(tmpdir(), 'memviz-shots-'));
  try {
    execFileSync('python3', [join(ROOT, 'tests/gen/make_ranks.py'), join(dir, 'run')]);
    const files = readdirSync(join(dir, 'run')).sort().map((f) => join(dir, 'run', f));
    const page = await env.newPage();
    const ready = () => page.evaluate(() => performance.getEntriesByName('memviz:ranks-ready').length);
    const before = await ready();
    await page.setInputFiles('#file-input', files);
    await page.waitForFunction((n) => performance.getEntriesByName('memviz:ranks-ready').length > n, before, { timeout: 60000, polling: 50 });
    assertClean(page, 'ranks');
    await save(page, 'ranks.png');
    await page.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Insights of resnet50_buggy, its problem (gradients kept alive) selected so the timeline shows them. */
async function insights(env) {
  const page = await env.newPage();
  await openFiles(page, BUGGY);
  await page.click('#analysis-toggle');
  await page.waitForSelector('#analysis:not([hidden]) .an-verdict');
  await page.locator('#analysis .finding.problem').first().click();
  await page.waitForFunction(() => document.getElementById('analysis').dataset.highlight !== '0', null, { polling: 50 });
  // The pointer off the plot, so no tooltip covers the highlight.
  await page.mouse.move(2, 2);
  assertClean(page, 'insights');
  await save(page, 'insights.png');
  await page.close();
}

mkdirSync(OUT_DIR, { recursive: true });
const env = await start({ viewport: VIEWPORT, colorScheme: 'light' });
try {
  await timeline(env);
  await ranks(env);
  await insights(env);
} finally {
  await env.close();
}
