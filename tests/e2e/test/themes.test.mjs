// Themes and the design pass: light and dark follow prefers-color-scheme until the toolbar's
// control overrides it (kept across reloads); the page's colours and the canvases' change with
// it, the exported PNG too; the toolbar keeps to one row; the details panel folds and stays
// folded; the keys help is styled like the page.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import { frames, readyCount, shot, start, waitReady } from '../lib/harness.mjs';

let env;
before(async () => {
  env = await start({ viewport: { width: 1280, height: 800 } });
});
after(async () => {
  await env?.close();
});

async function demo(page) {
  const before = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, before);
  await frames(page);
}

/** Computed colours of the page and one pixel of each canvas background. */
const colours = (page) =>
  page.evaluate(() => {
    const css = (sel, prop) => getComputedStyle(document.querySelector(sel))[prop];
    const m = document.getElementById('minimap');
    // The minimap's background, just inside its plot area's top left corner (above the curve).
    const px = m.getContext('2d').getImageData(Math.round(90 * devicePixelRatio), Math.round(6 * devicePixelRatio), 1, 1).data;
    return {
      theme: document.documentElement.dataset.theme,
      drawn: document.getElementById('plot').dataset.theme,
      body: css('html', 'backgroundColor'),
      text: css('body', 'color'),
      header: css('header', 'backgroundColor'),
      stack: css('#stack', 'backgroundColor'),
      minimap: [px[0], px[1], px[2]],
    };
  });

/** The first pixel of a PNG (RGBA, 8 bits): whatever the first row's filter, it is stored as is. */
function firstPixel(png) {
  const chunks = [];
  for (let at = 8; at < png.length; ) {
    const len = png.readUInt32BE(at);
    const type = png.toString('ascii', at + 4, at + 8);
    if (type === 'IDAT') chunks.push(png.subarray(at + 8, at + 8 + len));
    at += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(chunks));
  return [raw[1], raw[2], raw[3]];
}

const dark = (rgb) => rgb.reduce((a, b) => a + b, 0) / 3 < 80;
const rgbOf = (s) => s.match(/\d+/g).slice(0, 3).map(Number);

test('the theme follows prefers-color-scheme: page and canvases, light and dark', async () => {
  const page = await env.newPage();
  await page.emulateMedia({ colorScheme: 'light' });
  await demo(page);
  const light = await colours(page);
  assert.equal(light.theme, 'light');
  assert.equal(light.drawn, 'light');
  assert.equal(light.body, 'rgb(255, 255, 255)');
  assert.deepEqual(light.minimap, [0xf6, 0xf6, 0xf6]);
  await shot(page, 'theme-light');
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForFunction(() => document.getElementById('plot').dataset.theme === 'dark', null, { polling: 50 });
  await frames(page);
  const d = await colours(page);
  assert.equal(d.theme, 'dark');
  assert.equal(d.body, 'rgb(23, 25, 28)');
  assert.ok(!dark(rgbOf(d.text)), `light text on dark: ${d.text}`);
  assert.ok(dark(rgbOf(d.header)) && dark(rgbOf(d.stack)), JSON.stringify(d));
  assert.deepEqual(d.minimap, [0x21, 0x24, 0x29], 'the minimap is painted in the dark theme');
  assert.equal(await page.getAttribute('#theme-toggle', 'data-choice'), 'auto');
  assert.match(await page.getAttribute('#theme-toggle', 'title'), /^Theme: auto \(dark\)/);
  await shot(page, 'theme-dark');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the theme control overrides the system, is kept across reloads, and the PNG export uses it', async () => {
  const page = await env.newPage();
  await page.emulateMedia({ colorScheme: 'light' });
  await page.evaluate(() => localStorage.removeItem('memviz-theme'));
  await demo(page);
  const choice = () => page.getAttribute('#theme-toggle', 'data-choice');
  const click = async (want) => {
    await page.click('#theme-toggle');
    await page.waitForFunction((w) => document.getElementById('theme-toggle').dataset.choice === w, want, { polling: 20 });
  };
  assert.equal(await choice(), 'auto');
  await click('light');
  await click('dark');
  await page.waitForFunction(() => document.getElementById('plot').dataset.theme === 'dark', null, { polling: 50 });
  assert.equal(await page.evaluate(() => localStorage.getItem('memviz-theme')), 'dark');
  assert.equal((await colours(page)).body, 'rgb(23, 25, 28)', 'dark although the system is light');
  // The exported timeline is in the theme shown.
  await page.click('#analysis-toggle');
  await page.click('#analysis [data-act=tab-live]');
  await page.locator('#analysis [data-act=png]').waitFor();
  const [d] = await Promise.all([page.waitForEvent('download'), page.click('#analysis [data-act=png]')]);
  const png = readFileSync(await d.path());
  assert.deepEqual(firstPixel(png), [23, 25, 28], 'the PNG stands on the dark background');
  await page.click('#analysis-toggle');
  // A reload keeps the choice, before and after the page starts.
  await page.reload();
  await page.waitForSelector('#demo:not([disabled])');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  assert.equal(await choice(), 'dark');
  await click('auto');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the toolbar is one row at 1280 px and fits at 900 px; the keys help is styled like the page', async () => {
  const page = await env.newPage();
  await page.emulateMedia({ colorScheme: 'dark' });
  await demo(page);
  const rows = () =>
    page.evaluate(() => {
      const tops = [...document.querySelectorAll('header > *')]
        .filter((e) => e.offsetParent !== null && e.getBoundingClientRect().width > 2 && e.getBoundingClientRect().height > 2)
        .map((e) => Math.round(e.getBoundingClientRect().top + e.getBoundingClientRect().height / 2));
      const header = document.querySelector('header');
      tops.sort((a, b) => a - b);
      const rows = tops.filter((t, i) => i === 0 || t - tops[i - 1] > 10).length;
      return { rows, height: header.getBoundingClientRect().height, overflow: header.scrollWidth - header.clientWidth };
    });
  const wide = await rows();
  assert.equal(wide.rows, 1, JSON.stringify(wide));
  assert.ok(wide.height <= 40, `header ${wide.height} px tall`);
  await page.setViewportSize({ width: 900, height: 700 });
  await frames(page);
  const narrow = await rows();
  assert.ok(narrow.rows <= 2 && narrow.overflow <= 0, JSON.stringify(narrow));
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.click('#help-button');
  await page.waitForSelector('#help:not([hidden])');
  const help = await page.evaluate(() => {
    const box = getComputedStyle(document.querySelector('#help > div'));
    const kbd = getComputedStyle(document.querySelector('#help kbd'));
    return { bg: box.backgroundColor, fg: box.color, kbd: kbd.backgroundColor, panel: getComputedStyle(document.getElementById('stack')).backgroundColor };
  });
  assert.equal(help.bg, help.panel, 'the help box is a panel of the page');
  assert.ok(dark(rgbOf(help.bg)) && !dark(rgbOf(help.fg)), JSON.stringify(help));
  await shot(page, 'theme-dark-help');
  await page.keyboard.press('Escape');
  await page.waitForSelector('#help', { state: 'hidden' });
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the details panel folds to one line, the plot takes its room, and it stays folded', async () => {
  const page = await env.newPage();
  await page.evaluate(() => localStorage.removeItem('memviz-stack-collapsed'));
  await demo(page);
  const plotHeight = () => page.evaluate(() => document.getElementById('plot').clientHeight);
  const open = await plotHeight();
  assert.ok(await page.isVisible('#stack'));
  assert.equal(await page.getAttribute('#stack-toggle', 'aria-expanded'), 'true');
  await page.click('#stack-toggle');
  await page.waitForFunction((h) => document.getElementById('plot').clientHeight > h + 40, open, { polling: 50 });
  assert.ok(!(await page.isVisible('#stack')));
  assert.equal(await page.getAttribute('#stack-toggle', 'aria-expanded'), 'false');
  assert.match(await page.textContent('#stack-toggle'), /Details/);
  await frames(page);
  // The timeline is drawn at its new size (a small one, as the demo's, on #plot alone).
  const drawn = await page.evaluate(() => [document.getElementById('plot').height, Math.round(document.getElementById('plot').clientHeight * devicePixelRatio)]);
  assert.equal(await page.evaluate(() => document.getElementById('plot-base').height), 1, 'the base layer keeps no pixels');
  assert.equal(drawn[0], drawn[1]);
  await shot(page, 'stack-folded');
  await page.reload();
  await page.waitForSelector('#demo:not([disabled])');
  await demo(page);
  assert.ok(!(await page.isVisible('#stack')), 'still folded after a reload');
  await page.click('#stack-toggle');
  await page.waitForSelector('#stack', { state: 'visible' });
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});
