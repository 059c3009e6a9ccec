// Shared set-up for the end-to-end tests: the built page served from dist/ on 127.0.0.1, one
// Chromium per test file, pages that record console errors and every network request.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from './server.mjs';
import { launch } from './browser.mjs';

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(here, '../../..');
export const DIST = resolve(process.env.MEMVIZ_DIST ?? join(ROOT, 'dist'));
export const FIXTURES = join(ROOT, 'tests/data/real');
export const OUT = join(ROOT, 'tests/e2e/out');
mkdirSync(OUT, { recursive: true });

/** Path of a real snapshot of tests/data/real; throws, naming the file, when it is missing. */
export function fixture(name) {
  const p = join(FIXTURES, name);
  if (!existsSync(p)) throw new Error(`fixture ${p} is missing`);
  return p;
}

/** Every file under dist/, as URL paths ("/index.html", ...). */
export function distPaths() {
  const out = new Set(['/']);
  const walk = (dir, prefix) => {
    for (const f of readdirSync(dir)) {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) walk(p, `${prefix}${f}/`);
      else out.add(`${prefix}${f}`);
    }
  };
  walk(DIST, '/');
  return out;
}

/** Starts the server and the browser; returns { server, context, newPage, close }. */
export async function start(contextOptions = {}) {
  if (!existsSync(join(DIST, 'index.html'))) throw new Error(`no ${DIST}/index.html: run trunk build --release first`);
  const server = await serve(DIST);
  const { context, close } = await launch(contextOptions);
  const pages = [];
  return {
    server,
    context,
    /** A fresh page at the app, started; `page.memviz` holds its console errors and requests.
     * `prepare(page)`, if given, runs before the page opens the app (to route its requests). */
    async newPage(prepare) {
      const page = await context.newPage();
      if (prepare) await prepare(page);
      const log = { errors: [], requests: [] };
      page.on('console', (m) => {
        if (m.type() === 'error') log.errors.push(m.text());
      });
      page.on('pageerror', (e) => log.errors.push(e.message));
      page.on('request', (r) => log.requests.push({ method: r.method(), url: r.url(), type: r.resourceType() }));
      page.memviz = log;
      await page.goto(server.url);
      await page.waitForSelector('#demo:not([disabled])');
      pages.push(page);
      return page;
    },
    async close() {
      await close();
      await server.close();
    },
  };
}

/** Number of `memviz:ready` marks so far. */
export const readyCount = (page) => page.evaluate(() => performance.getEntriesByName('memviz:ready').length);

/** Waits until there are more than `before` ready marks (at least `before + count`), or an error shows. */
export async function waitReady(page, before, timeout = 60000, count = 1) {
  await page.waitForFunction(
    (n) => performance.getEntriesByName('memviz:ready').length >= n || !document.getElementById('error').hidden,
    before + count,
    { timeout, polling: 50 },
  );
  const err = await page.evaluate(() => (document.getElementById('error').hidden ? null : document.getElementById('error').textContent));
  if (err) throw new Error(`the page shows an error: ${err}`);
  // A newly shown file's fragment is written in a task after the load's (timers of one delay
  // run in order).
  await page.evaluate(() => new Promise((r) => setTimeout(r, 0)));
}

/** Two snapshots opened together are shown side by side (the Compare view): waits for it, then
 * goes back to the timeline with the toolbar's button. */
export async function backToTimeline(page) {
  await page.waitForFunction(() => document.getElementById('main').classList.contains('compare-shown'));
  await page.click('#compare-toggle');
  await page.waitForFunction(() => !document.getElementById('main').classList.contains('compare-shown'));
}

/** Opens files through the first file input and waits for the timeline and, for several, until
 * each has opened (the first is shown while the others still load behind it). */
export async function openFiles(page, files) {
  const before = await readyCount(page);
  await page.setInputFiles('input[type=file] >> nth=0', files);
  await waitReady(page, before, 60000, Array.isArray(files) ? files.length : 1);
}

/** The plot canvas' data-* attributes. */
export const plotData = (page) => page.evaluate(() => ({ ...document.getElementById('plot').dataset }));

/** Waits until a data-* attribute of the plot differs from `value`. */
export async function waitPlotChange(page, key, value, timeout = 10000) {
  await page.waitForFunction(([k, v]) => document.getElementById('plot').dataset[k] !== v, [key, value], { timeout, polling: 20 });
  return plotData(page);
}

/** The plot area of the canvas in page coordinates (mirrors render::plot_rect). */
export async function plotArea(page) {
  const box = await page.locator('#plot').boundingBox();
  const rows = await page.evaluate(() => Number(document.getElementById('plot').dataset.annotationRows || 0));
  const top = 10 + (rows > 0 ? rows * 17 + 6 : 0);
  return { x: box.x + 84, y: box.y + top, width: box.width - 84 - 20, height: box.height - top - 46, box };
}

/**
 * Moves the mouse over a grid of points in the plot until `accept(dataset, stackText)` holds;
 * returns the point and what was found, or null.
 */
export async function findPoint(page, accept, { cols = 16, rows = 10, area = null } = {}) {
  const a = area ?? (await plotArea(page));
  for (let j = rows - 1; j >= 0; j--) {
    for (let i = 0; i < cols; i++) {
      const x = a.x + ((i + 0.5) / cols) * a.width;
      const y = a.y + ((j + 0.5) / rows) * a.height;
      await page.mouse.move(x, y);
      const found = await page.evaluate(async () => {
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        return { hover: document.getElementById('plot').dataset.hover, stack: document.getElementById('stack').textContent };
      });
      if (accept(found)) return { x, y, ...found };
    }
  }
  return null;
}

/** Resolves after two animation frames (a redraw has happened). */
export const frames = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/** Saves a screenshot to tests/e2e/out/NAME.png. */
export const shot = (page, name) => page.screenshot({ path: join(OUT, `${name}.png`) });

/**
 * The visible cells matching `selector` that take more than one line, or (numbers) whose text
 * is cut; and how many were looked at.
 */
export const brokenCells = (page, selector) =>
  page.$$eval(selector, (cells) => {
    const shown = cells.filter((td) => td.offsetParent !== null && td.textContent.trim() !== '');
    const broken = shown
      .filter((td) => {
        const r = document.createRange();
        r.selectNodeContents(td);
        const tops = new Set([...r.getClientRects()].map((x) => Math.round(x.top)));
        return tops.size > 1 || (td.classList.contains('num') && td.scrollWidth > td.clientWidth);
      })
      .map((td) => td.textContent);
    return { looked: shown.length, broken };
  });
