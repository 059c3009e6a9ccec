// No sequence of user actions breaks the page. For several kinds of file (a training run, CUDA
// graphs, expandable segments, a state-only snapshot): every view is visited and left again, then
// a few hundred seeded random actions (views, wheel, keys, clicks, drags, the Detail slider, the
// search boxes, the x axis, Insights and its tabs). Any page error, console error or the crash box
// fails the test, with the seed and the last actions so that it can be replayed:
// MONKEY_SEEDS=7 node --test test/monkey.test.mjs
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, fixture, frames, openFiles, start } from '../lib/harness.mjs';

const FILES = [
  ['a training run', fixture('resnet50_fixed.pickle')],
  ['CUDA graphs and a memory pool', join(ROOT, 'tests/data/real/metadata_mempool.pickle')],
  ['expandable segments', join(ROOT, 'tests/data/real/expandable_segments.pickle')],
  ['state only', fixture('state_only.pickle')],
];
const SEEDS = (process.env.MONKEY_SEEDS ?? '1,2,3,4,5').split(',').map(Number);
const ACTIONS = Number(process.env.MONKEY_ACTIONS ?? 250);

/** A small seeded generator (mulberry32), so a failing run can be replayed. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What is wrong with the page now: a crash box, an error, or null. */
async function problem(page) {
  if (page.memviz.errors.length) return `page error: ${page.memviz.errors.join(' | ')}`;
  return page.evaluate(() => {
    const el = document.getElementById('error');
    if (el.dataset.crash) return `crash box: ${el.textContent}`;
    if (!el.hidden && /internal error|panicked/.test(el.textContent)) return `error box: ${el.textContent}`;
    return null;
  });
}

const views = (page) => page.evaluate(() => [...document.querySelectorAll('#view-select option')].map((o) => o.value));

/** Chooses `value` in a select as a person would, if the select and that option can be used. */
async function selectIfEnabled(page, selector, value) {
  return page.evaluate(([s, v]) => {
    const el = document.querySelector(s);
    const opt = el && [...el.options].find((o) => o.value === v);
    if (!el || el.disabled || el.offsetParent === null || !opt || opt.disabled) return false;
    el.value = v;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return true;
  }, [selector, value]);
}

/** A point inside an element's box, chosen by `r`, or null when it is not shown. */
async function pointIn(page, selector, r) {
  const box = await page.locator(selector).first().boundingBox().catch(() => null);
  if (!box || box.width < 2 || box.height < 2) return null;
  return { x: box.x + 1 + r() * (box.width - 2), y: box.y + 1 + r() * (box.height - 2) };
}

/** One random action; returns a short description of it. */
async function act(page, r) {
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const kind = pick(['view', 'view', 'wheel', 'wheel', 'key', 'click', 'drag', 'move', 'detail', 'search', 'xaxis', 'insights', 'tab', 'minimap', 'device', 'list']);
  switch (kind) {
    case 'view': {
      const v = pick(await views(page));
      await selectIfEnabled(page, '#view-select', v);
      return `view ${v}`;
    }
    case 'wheel': {
      const p = await pointIn(page, '#plot', r);
      if (!p) return 'wheel (no plot)';
      await page.mouse.move(p.x, p.y);
      const dy = (r() - 0.5) * 1200;
      await page.mouse.wheel(0, dy);
      return `wheel ${dy.toFixed(0)} at ${p.x.toFixed(0)},${p.y.toFixed(0)}`;
    }
    case 'key': {
      const k = pick(['+', '-', 'ArrowLeft', 'ArrowRight', '0', 'Escape', 'ArrowUp', 'ArrowDown', 'Home', 'End', 'PageDown', '?']);
      await page.keyboard.press(k);
      return `key ${k}`;
    }
    case 'click':
    case 'move': {
      const target = pick(['#plot', '#plot', '#segmap', '#event-list', '#minimap']);
      const p = await pointIn(page, target, r);
      if (!p) return `${kind} (no ${target})`;
      if (kind === 'click') await page.mouse.click(p.x, p.y);
      else await page.mouse.move(p.x, p.y);
      return `${kind} ${target} ${p.x.toFixed(0)},${p.y.toFixed(0)}`;
    }
    case 'drag':
    case 'minimap': {
      const target = kind === 'minimap' ? '#minimap' : '#plot';
      const a = await pointIn(page, target, r);
      const b = await pointIn(page, target, r);
      if (!a || !b) return `drag (no ${target})`;
      await page.mouse.move(a.x, a.y);
      await page.mouse.down();
      await page.mouse.move((a.x + b.x) / 2, (a.y + b.y) / 2);
      await page.mouse.move(b.x, b.y);
      await page.mouse.up();
      return `drag ${target} ${a.x.toFixed(0)}→${b.x.toFixed(0)}`;
    }
    case 'detail': {
      const v = Math.floor(r() * 15001);
      const ok = await page.evaluate((v) => {
        const el = document.getElementById('detail');
        if (!el || el.disabled) return false;
        el.value = String(v);
        el.dispatchEvent(new Event('input', { bubbles: true }));
        el.dispatchEvent(new Event('change', { bubbles: true }));
        return true;
      }, v);
      return ok ? `detail ${v}` : 'detail (disabled)';
    }
    case 'search': {
      const box = pick(['#search-addr', '#search-frame', '#search-min', '#search-max']);
      const text = pick(['', 'b7f', 'forward', 'conv', '1MiB', '512KiB', 'zz', '4096', '-1', 'ä∑', '1e30']);
      const ok = await page.evaluate(([s, t]) => {
        const el = document.querySelector(s);
        if (!el || el.disabled || el.offsetParent === null) return false;
        el.value = t;
        el.dispatchEvent(new Event('input', { bubbles: true }));
        return true;
      }, [box, text]);
      return ok ? `search ${box}=${JSON.stringify(text)}` : `search (no ${box})`;
    }
    case 'xaxis': {
      const v = pick(['steps', 'time']);
      return (await selectIfEnabled(page, '#x-axis', v)) ? `x axis ${v}` : 'x axis (disabled)';
    }
    case 'device': {
      const opts = await page.evaluate(() => [...document.querySelectorAll('#device-select option')].map((o) => o.value));
      if (!opts.length) return 'device (none)';
      const v = pick(opts);
      return (await selectIfEnabled(page, '#device-select', v)) ? `device ${v}` : 'device (disabled)';
    }
    case 'insights': {
      const ok = await page.evaluate(() => {
        const b = document.getElementById('analysis-toggle');
        if (!b || b.disabled) return false;
        b.click();
        return true;
      });
      return ok ? 'insights toggle' : 'insights (disabled)';
    }
    case 'tab': {
      const n = await page.evaluate(() => document.querySelectorAll('#analysis:not([hidden]) .an-tabs .tab, #analysis:not([hidden]) [data-act]').length);
      if (!n) return 'tab (none)';
      const i = Math.floor(r() * n);
      const what = await page.evaluate((i) => {
        const el = document.querySelectorAll('#analysis:not([hidden]) .an-tabs .tab, #analysis:not([hidden]) [data-act]')[i];
        if (!el) return 'gone';
        el.click();
        return el.dataset.act ?? el.textContent;
      }, i);
      return `insights ${what}`;
    }
    case 'list': {
      const p = await pointIn(page, '#event-list', r);
      if (!p) return 'list (hidden)';
      await page.mouse.move(p.x, p.y);
      await page.mouse.wheel(0, (r() - 0.3) * 3000);
      return 'list scroll';
    }
    default:
      return kind;
  }
}

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

for (const [what, file] of FILES) {
  test(`monkey: ${what}, every view and back, then ${ACTIONS} random actions × ${SEEDS.length} seeds`, async () => {
    assert.ok(file && existsSync(file), `fixture missing: ${file}`);
    for (const seed of SEEDS) {
      const page = await env.newPage();
      await openFiles(page, file);
      const log = [];
      const check = async (step) => {
        await frames(page);
        const p = await problem(page);
        assert.equal(p, null, `${what}, seed ${seed}, after ${step}; last actions: ${log.slice(-12).join('; ')}`);
      };
      // Every view, each time back to the timeline (where coming back used to panic).
      for (const v of await views(page)) {
        await selectIfEnabled(page, '#view-select', v);
        log.push(`view ${v}`);
        await check(`view ${v}`);
        await selectIfEnabled(page, '#view-select', 'active-memory-timeline');
        log.push('view active-memory-timeline');
        await check(`back from ${v}`);
        const drawn = await page.evaluate(() => document.getElementById('plot').width);
        assert.ok(drawn > 1, `${what}: the timeline is drawn after coming back from ${v} (canvas ${drawn} px)`);
      }
      const r = rng(seed);
      for (let i = 0; i < ACTIONS; i++) {
        log.push(await act(page, r));
        if (i % 10 === 9) await check(`action ${i + 1}`);
      }
      await check('the end');
      await page.close();
    }
  });
}
