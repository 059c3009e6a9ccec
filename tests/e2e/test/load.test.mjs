// Opening snapshots: file input, drop, several files, the demo, errors, and that nothing but the
// page's own files is ever requested.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serve } from '../lib/server.mjs';
import { DIST, distPaths, fixture, openFiles, plotData, readyCount, shot, start, waitReady } from '../lib/harness.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const RESNET = fixture('resnet50_fixed.pickle');
const OOM = fixture('oom.pickle');

let env;
before(async () => {
  env = await start();
});
after(async () => {
  await env?.close();
});

test('the page starts empty, with a drop zone and no errors', async () => {
  const page = await env.newPage();
  assert.equal(await page.isVisible('#empty'), true);
  assert.match(await page.textContent('#empty'), /Drop PyTorch memory snapshots/);
  assert.equal(await page.isVisible('#error'), false);
  // The first file input is the snapshot picker, and takes several files.
  assert.equal(await page.getAttribute('input[type=file] >> nth=0', 'id'), 'file-input');
  assert.equal(await page.getAttribute('#file-input', 'multiple'), '');
  await shot(page, 'empty');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a load shows its card and progress bar only after a moment: none flashes for a quick one', async () => {
  const page = await env.newPage();
  await page.evaluate(() => {
    window.__shown = [];
    window.__chosen = null;
    addEventListener('change', () => { window.__chosen ??= performance.now(); }, { capture: true });
    const watch = (id) => new MutationObserver(() => {
      if (!document.getElementById(id).hidden) window.__shown.push(performance.now() - window.__chosen);
    }).observe(document.getElementById(id), { attributes: true, attributeFilter: ['hidden'] });
    watch('load-card');
    watch('progress');
  });
  await openFiles(page, join(ROOT, 'tests/data/real/gpt_amp_annotated.pickle'));
  assert.match(await page.textContent('#status'), /gpt_amp_annotated\.pickle/);
  // Shown at once before; now, if the load is slow, 120 ms after the file was chosen.
  const shown = await page.evaluate(() => window.__shown);
  assert.ok(shown.every((ms) => ms >= 100), `shown after ${shown} ms`);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('the timeline and minimap canvases wait at the size a file gives them: a first small file resizes neither', async () => {
  const page = await env.newPage();
  const sizes = () =>
    page.evaluate(() => ['plot', 'minimap'].map((id) => [document.getElementById(id).width, document.getElementById(id).height]));
  const waiting = await sizes();
  assert.ok(waiting.every(([w, h]) => w > 1 && h > 1), `sized before any file: ${JSON.stringify(waiting)}`);
  // A canvas is resized through its width and height attributes.
  await page.evaluate(() => {
    window.__resized = [];
    for (const id of ['plot', 'minimap']) {
      new MutationObserver((records) => window.__resized.push(...records.map((r) => `${id}.${r.attributeName}`)))
        .observe(document.getElementById(id), { attributes: true, attributeFilter: ['width', 'height'] });
    }
  });
  await openFiles(page, join(ROOT, 'tests/data/real/gpt_amp_annotated.pickle'));
  assert.deepEqual(await page.evaluate(() => window.__resized), []);
  const shown = await page.evaluate(() =>
    ['plot', 'minimap'].map((id) => {
      const c = document.getElementById(id);
      return [Math.round(c.clientWidth * devicePixelRatio), Math.round(c.clientHeight * devicePixelRatio)];
    }),
  );
  assert.deepEqual(await sizes(), shown);
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a snapshot opened through the file input is drawn', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  const d = await plotData(page);
  assert.ok(Number(d.steps) > 10000, `steps ${d.steps}`);
  assert.ok(Number(d.bands) > 100, `bands drawn ${d.bands}`);
  assert.match(await page.textContent('#status'), /resnet50_fixed\.pickle/);
  assert.match(await page.textContent('#detail-label'), /^Draw (all [\d,]+|the [\d,]+ largest of [\d,]+) allocations individually$/);
  assert.equal(await page.isVisible('#empty'), false);
  // The canvas backing store is its CSS size times devicePixelRatio.
  const c = await page.evaluate(() => {
    const el = document.getElementById('plot');
    return { w: el.width, h: el.height, cw: el.clientWidth, ch: el.clientHeight, dpr: devicePixelRatio };
  });
  assert.equal(c.w, Math.round(c.cw * c.dpr));
  assert.equal(c.h, Math.round(c.ch * c.dpr));
  const timings = JSON.parse(d.timings);
  assert.ok(timings.total_ms > 0);
  await shot(page, 'resnet50_fixed');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a snapshot dropped on the page is drawn, and files can be switched', async () => {
  const page = await env.newPage();
  await openFiles(page, OOM);
  const before = await readyCount(page);
  const b64 = readFileSync(RESNET).toString('base64');
  await page.evaluate((data) => {
    const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'dropped.pickle', { type: 'application/octet-stream' }));
    const target = document.getElementById('plot');
    target.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, b64);
  await waitReady(page, before);
  assert.match(await page.textContent('#status'), /dropped\.pickle/);
  assert.equal(await page.isVisible('#drop-overlay'), false);
  const options = await page.$$eval('#file-select option', (o) => o.map((x) => x.title));
  assert.deepEqual(options, ['oom.pickle', 'dropped.pickle']);
  // Back to the first file.
  const n = await readyCount(page);
  await page.selectOption('#file-select', '0');
  await waitReady(page, n);
  assert.match(await page.textContent('#status'), /oom\.pickle/);
  await page.close();
});

test('a file chosen or dropped before the page has started opens once it starts', async () => {
  for (const how of ['input', 'drop']) {
    const page = await env.context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // Hold the WebAssembly back so the file comes before the page's own listeners exist.
    let release;
    const held = new Promise((r) => { release = r; });
    await page.route('**/*.wasm', async (route) => { await held; await route.continue(); });
    await page.goto(env.server.url, { waitUntil: 'domcontentloaded' });
    if (how === 'input') {
      await page.setInputFiles('#file-input', OOM);
    } else {
      const b64 = readFileSync(OOM).toString('base64');
      await page.evaluate((data) => {
        const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
        const dt = new DataTransfer();
        dt.items.add(new File([bytes], 'early.pickle'));
        document.body.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
        const kept = !document.body.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
        if (!kept) throw new Error('the early drop was not taken by the page');
      }, b64);
    }
    assert.equal(await readyCount(page), 0);
    release();
    await waitReady(page, 0);
    assert.match(await page.textContent('#status'), how === 'input' ? /oom\.pickle/ : /early\.pickle/, how);
    assert.deepEqual(errors, [], how);
    await page.close();
  }
});

test('several files chosen at once all open', async () => {
  const page = await env.newPage();
  await page.setInputFiles('#file-input', [OOM, RESNET]);
  await page.waitForFunction(
    () => document.querySelectorAll('#file-select option').length === 2 && document.getElementById('progress').hidden,
    null,
    { timeout: 60000 },
  );
  // Opened together, files load in name order and the first is shown (not the last one read).
  assert.equal(await page.inputValue('#file-select'), '0', 'the first file of the batch is shown');
  const options = await page.$$eval('#file-select option', (o) => o.map((x) => x.title));
  assert.deepEqual(options, ['oom.pickle', 'resnet50_fixed.pickle']);
  await page.close();
});

test('"Try a demo" draws the built-in snapshot with its annotations', async () => {
  const page = await env.newPage();
  const n = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, n);
  const d = await plotData(page);
  assert.ok(Number(d.steps) > 1000);
  assert.ok(Number(d.annotationRows) >= 1, 'annotation strip');
  assert.match(await page.textContent('#status'), /demo/);
  await shot(page, 'demo');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

test('a broken file shows an error in words, and the page keeps working', async () => {
  const page = await env.newPage();
  // A truncated pickle.
  const good = readFileSync(OOM);
  await page.setInputFiles('#file-input', { name: 'truncated.pickle', mimeType: 'application/octet-stream', buffer: good.subarray(0, 1000) });
  await page.waitForSelector('#error:not([hidden])');
  assert.match(await page.textContent('#error'), /truncated\.pickle.*truncated/);
  await shot(page, 'error-truncated');
  // A zip (what torch.save writes).
  await page.setInputFiles('#file-input', { name: 'model.pt', mimeType: 'application/zip', buffer: Buffer.from('PK\x03\x04 not really a zip, but it starts like one', 'latin1') });
  await page.waitForFunction(() => /model\.pt/.test(document.getElementById('error').textContent));
  assert.match(await page.textContent('#error'), /torch\.save/);
  // Random bytes.
  await page.setInputFiles('#file-input', { name: 'noise.bin', mimeType: 'application/octet-stream', buffer: Buffer.from([0x80, 0x04, 0xff, 0xfe, 0x00, 0x13]) });
  await page.waitForFunction(() => /noise\.bin/.test(document.getElementById('error').textContent));
  // Empty.
  await page.setInputFiles('#file-input', { name: 'empty.pickle', mimeType: 'application/octet-stream', buffer: Buffer.alloc(0) });
  await page.waitForFunction(() => /empty\.pickle.*empty/.test(document.getElementById('error').textContent));
  // A good file still opens, and the error goes away.
  await openFiles(page, RESNET);
  assert.equal(await page.isVisible('#error'), false);
  assert.ok(Number((await plotData(page)).bands) > 100);
  assert.deepEqual(page.memviz.errors.filter((e) => !/memviz/.test(e)), []);
  await page.close();
});

test('a loader that dies mid-file (out of memory, as a 4 GB snapshot does) says what to use instead; the page keeps working', async () => {
  const page = await env.newPage();
  // A loading worker that starts, reports progress, then dies the way a tab out of WebAssembly
  // memory does.
  await page.context().route('**/worker.js', (route) => route.fulfill({
    contentType: 'text/javascript',
    body: `self.onmessage = (e) => {
      if (e.data.kind !== 'load') return;
      self.postMessage({ kind: 'progress', readBytes: 1 << 20, phase: 'reading' });
      setTimeout(() => { throw new RangeError('WebAssembly.Memory.grow(): Maximum memory size exceeded'); }, 50);
    };`,
  }));
  // Files above 4 MiB go to a worker (the page's own limit is higher).
  await page.evaluate(() => { globalThis.memvizOnPageMaxBytes = 4 << 20; });
  await page.setInputFiles('#file-input', { name: 'huge.pickle', mimeType: 'application/octet-stream', buffer: Buffer.alloc(12 << 20, 0x80) });
  await page.waitForSelector('#error:not([hidden])', { timeout: 30000 });
  const text = await page.textContent('#error');
  assert.match(text, /The loader stopped reading huge\.pickle \(12 MiB\): .*Maximum memory size exceeded/, text);
  assert.match(text, /more than one browser tab can .*memviz info huge\.pickle/, text);
  assert.match(text, /memviz trace-plot huge\.pickle -o page\.html/, text);
  await shot(page, 'error-loader-died');
  // The page is still usable: the demo opens (on the page, no worker needed).
  await page.context().unroute('**/worker.js');
  const n = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, n);
  assert.ok(Number((await plotData(page)).bands) > 10);
  await page.close();
});

test('a long load shows bytes read and time left, and can be cancelled', async () => {
  const page = await env.newPage();
  // 300 MB: one long string, valid until its end, so reading takes a while: in the loading
  // worker (the page itself reads such a file in a fraction of a second, and the worker's path is
  // the one of files too large for the page).
  await page.evaluate(() => {
    globalThis.memvizOnPageMaxBytes = 128 << 20;
    const n = 300_000_000;
    const head = new Uint8Array(11);
    head.set([0x80, 0x04, 0x8d]);
    new DataView(head.buffer).setBigUint64(3, BigInt(n), true);
    const dt = new DataTransfer();
    globalThis.longFile = new File([head, new Uint8Array(n).fill(97)], 'long.pickle');
    dt.items.add(globalThis.longFile);
    document.getElementById('plot').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await page.waitForFunction(() => /Reading long\.pickle: .+ of 286\.1 MiB · about \d+ (s|min) left/.test(document.getElementById('status').textContent), null, { timeout: 20000 });
  assert.equal(await page.isVisible('#cancel-load'), true);
  await shot(page, 'loading');
  await page.click('#cancel-load');
  await page.waitForFunction(() => document.getElementById('status').textContent === 'Stopped loading long.pickle.', null, { timeout: 10000 });
  assert.equal(await page.isVisible('#progress'), false);
  assert.equal(await page.isVisible('#cancel-load'), false);
  assert.equal(await page.isVisible('#error'), false);
  // Esc stops a load too, and the page keeps working.
  await page.evaluate(() => {
    const dt = new DataTransfer();
    dt.items.add(new File([globalThis.longFile], 'long2.pickle'));
    document.getElementById('plot').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await page.waitForFunction(() => /Reading long2\.pickle/.test(document.getElementById('status').textContent), null, { timeout: 10000 }).catch(async (e) => {
    throw new Error(`${e}; status: ${await page.textContent('#status')}; error: ${await page.textContent('#error')}; console: ${page.memviz.errors.join(' | ')}`);
  });
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => document.getElementById('status').textContent === 'Stopped loading long2.pickle.', null, { timeout: 10000 });
  const before = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, before);
  assert.ok(Number((await plotData(page)).bands) > 100);
  await page.close();
  // A file the page loads itself (under its limit) stops the same way, also while it waits for
  // a slice (its reading worker, started with the page, is slow to start here: the page reads
  // the file's first 16 MiB itself).
  const slow = await env.newPage((p) => p.route('**/reader.js', async (route) => {
    await new Promise((r) => setTimeout(r, 20000));
    await route.continue().catch(() => {});
  }));
  assert.equal(await slow.evaluate(() => globalThis.memvizSpareReader()), 'starting');
  await slow.evaluate(() => {
    const dt = new DataTransfer();
    // One long string, as above: the page holds up reading nothing but it.
    const n = 100_000_000 - 11;
    const head = new Uint8Array(11);
    head.set([0x80, 0x04, 0x8d]);
    new DataView(head.buffer).setBigUint64(3, BigInt(n), true);
    dt.items.add(new File([head, new Uint8Array(n).fill(97)], 'long3.pickle'));
    document.getElementById('plot').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  // The first 16 MiB read and nothing more (on a busy machine that took long enough for a time
  // estimate to show after it).
  await slow.waitForFunction(() => /Reading long3\.pickle: 16 MiB of 95\.4 MiB( · about \d+ (s|min) left)?$/.test(document.getElementById('status').textContent), null, { timeout: 10000 }).catch(async (e) => {
    throw new Error(`${e}; status: ${await slow.textContent('#status')}; error: ${await slow.textContent('#error')}`);
  });
  await slow.click('#cancel-load');
  await slow.waitForFunction(() => document.getElementById('status').textContent === 'Stopped loading long3.pickle.', null, { timeout: 5000 });
  assert.equal(await slow.isVisible('#error'), false);
  await slow.unroute('**/reader.js');
  await slow.close();
});

test('small files load and are read on the page, start no loading worker and end the waiting reading worker', async () => {
  const page = await env.newPage();
  const started = (name) => page.evaluate((n) => performance.getEntriesByType('resource').some((r) => r.name.endsWith(n)), name);
  // No loading worker runs before a file needs one; the reading worker (no WebAssembly) starts
  // with the page, to read a large file from its first byte.
  assert.equal(await started('/worker.js'), false);
  await page.waitForFunction(() => globalThis.memvizSpareReader() === 'ready', null, { timeout: 10000 });
  await openFiles(page, RESNET);
  const d = await plotData(page);
  const t = JSON.parse(d.timings);
  assert.equal(t.transfer_ms, 0, 'a 2 MB file is not handed over from a worker');
  assert.ok(t.parse_ms > 0 && t.layout_ms >= 0);
  assert.ok(Number(d.bands) > 0);
  assert.equal(await started('/worker.js'), false, 'no loading worker for a small file');
  assert.equal(await page.evaluate(() => globalThis.memvizSpareReader()), 'none', 'a small file ends the reading worker');
  assert.deepEqual(page.memviz.errors, []);
  await page.close();
});

/** A 300,000-entry snapshot (about 27 MB: several slices of the file) in `dir`, or null
 * without python3. */
function bigSnapshot(dir) {
  const out = join(dir, 'big-300k.pickle');
  try {
    execFileSync('python3', [join(ROOT, 'tests/gen/big_snapshot.py'), '--entries', '300000', '--out', out], { stdio: 'pipe' });
    return out;
  } catch {
    return null;
  }
}

test('a file of many slices reads the same on the page and in a worker, with a reading worker, on the page, and without BYOB streams', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'memviz-slices-'));
  try {
    const file = bigSnapshot(dir);
    assert.ok(file, 'python3 tests/gen/big_snapshot.py failed to write the snapshot');
    const drawn = async (page) => {
      const d = await plotData(page);
      return { bands: Number(d.bands), steps: Number(d.steps), transfer: JSON.parse(d.timings).transfer_ms };
    };
    const readerStarted = (page) => page.evaluate(() => performance.getEntriesByType('resource').some((r) => r.name.endsWith('/reader.js')));
    const workerStarted = (page) => page.evaluate(() => performance.getEntriesByType('resource').some((r) => r.name.endsWith('/worker.js')));
    // Files up to the page's limit load on the page: the reading worker started with the page
    // reads all of it, its first slices growing, into buffers that go back and forth with the
    // page; no loading worker starts.
    const page = await env.newPage();
    assert.equal(await workerStarted(page), false, 'no loading worker before a file needs one');
    await page.waitForFunction(() => globalThis.memvizSpareReader() === 'ready', null, { timeout: 10000 });
    await openFiles(page, file);
    assert.equal(await workerStarted(page), false, 'no loading worker for a file the page loads');
    const onPage = await drawn(page);
    assert.equal(onPage.transfer, 0, 'loaded on the page');
    assert.ok(onPage.steps > 100000, `steps ${onPage.steps}`);
    const same = async (p, what, inWorker) => {
      const d = await drawn(p);
      if (inWorker) assert.ok(d.transfer > 0, `${what}: loaded in the worker`);
      else assert.equal(d.transfer, 0, `${what}: loaded on the page`);
      assert.deepEqual({ bands: d.bands, steps: d.steps }, { bands: onPage.bands, steps: onPage.steps }, what);
    };
    // Where the reading worker has not started when the file comes, the page reads the first
    // 16 MiB itself and the worker the rest: the same plot.
    const late = await env.newPage((p) => p.route('**/reader.js', async (route) => {
      await new Promise((r) => setTimeout(r, 1500));
      await route.continue().catch(() => {});
    }));
    assert.equal(await late.evaluate(() => globalThis.memvizSpareReader()), 'starting');
    await openFiles(late, file);
    assert.ok(await readerStarted(late));
    await same(late, 'the head read on the page', false);
    assert.deepEqual(late.memviz.errors, []);
    await late.close();
    // Above the limit, a loading worker decodes it, fed by the reading worker: the same plot.
    const workerLimit = (p) => p.evaluate(() => { globalThis.memvizOnPageMaxBytes = 4 << 20; });
    await workerLimit(page);
    await openFiles(page, file);
    await same(page, 'in the loading worker', true);
    assert.deepEqual(page.memviz.errors, []);
    await page.close();
    // Where no reading worker can start, the page reads the file itself, and where a Blob's
    // stream cannot be read into the reader's buffers, with a fresh buffer per slice.
    const here = await env.newPage();
    await here.addInitScript(() => {
      const Real = globalThis.Worker;
      globalThis.Worker = function Worker(url, options) {
        if (String(url).endsWith('/reader.js')) throw new Error('no reading worker here');
        return new Real(url, options);
      };
    });
    await here.reload();
    await here.waitForSelector('#demo:not([disabled])');
    assert.equal(await readerStarted(here), false);
    await openFiles(here, file);
    await same(here, 'read and decoded on the page', false);
    await workerLimit(here);
    await openFiles(here, file);
    await same(here, 'read on the page for the loading worker', true);
    await here.evaluate(() => {
      Object.defineProperty(Blob.prototype, 'stream', { value() { throw new TypeError('no streams here'); } });
    });
    await openFiles(here, file);
    await same(here, 'read on the page without streams', true);
    // The page's own loading (no worker at all) draws the same.
    await here.evaluate(() => { delete globalThis.memvizLoadInWorker; });
    await openFiles(here, file);
    await same(here, 'no loading worker at all', false);
    assert.deepEqual(here.memviz.errors, []);
    await here.close();
    // A reading worker whose script fails: the page reads instead, and its buffers come back to it.
    const broken = await env.newPage();
    await broken.route('**/reader.js', (route) => route.fulfill({ contentType: 'text/javascript', body: 'throw new Error("no reading here");' }));
    await broken.reload();
    await broken.waitForSelector('#demo:not([disabled])');
    await openFiles(broken, file);
    await same(broken, 'read on the page after the reading worker failed', false);
    await workerLimit(broken);
    await openFiles(broken, file);
    await same(broken, 'read on the page for the loading worker after the reading worker failed', true);
    await broken.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('nothing is requested but the page\'s own files', async () => {
  const page = await env.newPage();
  await openFiles(page, RESNET);
  await openFiles(page, OOM);
  const n = await readyCount(page);
  await page.click('#demo');
  await waitReady(page, n);
  await page.mouse.move(400, 300);
  await page.mouse.wheel(0, -400);
  await page.waitForTimeout(200);
  const origin = new URL(env.server.url).origin;
  const allowed = distPaths();
  for (const r of page.memviz.requests) {
    const u = new URL(r.url);
    assert.equal(u.origin, origin, `request to another origin: ${r.url}`);
    assert.equal(r.method, 'GET', `non-GET request: ${r.method} ${r.url}`);
    assert.ok(allowed.has(u.pathname), `request for a file not in dist/: ${u.pathname}`);
  }
  // The server saw the same: only GETs of files in dist/.
  for (const r of env.server.requests) {
    assert.equal(r.method, 'GET');
    assert.ok(allowed.has(r.path), `server got ${r.path}`);
  }
  // The built page forbids other connections and inline scripts.
  const csp = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /connect-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline/);
  assert.equal(await page.$$eval('script:not([src])', (s) => s.length), 0, 'no inline scripts');
  // And nothing violated it.
  assert.deepEqual(page.memviz.errors.filter((e) => /Content Security Policy/i.test(e)), []);
  // Once the module is loaded the page forbids every connection, even to its own origin.
  const policies = await page.$$eval('meta[http-equiv="Content-Security-Policy"]', (m) => m.map((x) => x.content));
  assert.ok(policies.includes("connect-src 'none'"), `policies: ${policies.join(' | ')}`);
  const refused = await page.evaluate(async () => {
    const violated = new Promise((res) => document.addEventListener('securitypolicyviolation', (e) => res(e.violatedDirective), { once: true }));
    try {
      await fetch('/index.html');
      return 'fetched';
    } catch {
      return await violated;
    }
  });
  assert.equal(refused, 'connect-src');
  await page.close();
});

test('a page that carries snapshots opens them (pages written by the command line)', async () => {
  // dist/ with the configuration the command line embeds, served from a copy.
  const dir = mkdtempSync(join(tmpdir(), 'memviz-embedded-'));
  cpSync(DIST, dir, { recursive: true });
  const config = { files: [{ name: 'embedded-oom.pickle', base64: readFileSync(OOM).toString('base64') }], view: 'active-memory-timeline', device: 0 };
  const html = readFileSync(join(dir, 'index.html'), 'utf8').replace(
    '</body>',
    `<script type="application/json" id="memviz-embedded">${JSON.stringify(config)}</script>\n</body>`,
  );
  writeFileSync(join(dir, 'index.html'), html);
  const server = await serve(dir);
  try {
    const page = await env.context.newPage();
    await page.goto(server.url);
    await waitReady(page, 0);
    assert.match(await page.textContent('#status'), /embedded-oom\.pickle/);
    assert.equal((await plotData(page)).ooms, '1');
    await page.close();
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
