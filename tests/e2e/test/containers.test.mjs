// Compressed snapshots (gzip, xz, zstd) and HTML pages with a snapshot inside (PyTorch's
// `_memory_viz trace_plot` page, memviz's own offline page) load in the page as the snapshot
// inside: the same bands, steps and peak as the plain pickle, through the loading worker, with
// progress counted in the file's (compressed) bytes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { fixture, openFiles, plotData, ROOT, start } from '../lib/harness.mjs';

const RESNET = fixture('resnet50_fixed.pickle');
const CLI = process.env.MEMVIZ_CLI ?? join(ROOT, 'target/debug/memviz');
const CONTAINERS = join(ROOT, 'tests/data/containers');

let env;
let dir;
before(async () => {
  env = await start();
  dir = mkdtempSync(join(tmpdir(), 'memviz-containers-'));
});
after(async () => {
  await env?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The page PyTorch's `_memory_viz._format_viz` writes for `pickle` (its template). */
function pytorchPage(pickle) {
  const pad = Buffer.alloc(3 - (pickle.length % 3));
  const b64 = Buffer.concat([pickle, pad]).toString('base64');
  const files = JSON.stringify([{ name: 'snapshot.pickle', base64: b64 }]).replace('","', '", "').replace('":"', '": "');
  return `\n<!DOCTYPE html>\n<html>\n<head>\n</head>\n<body>\n<script type="module">\nimport {add_local_files} from "https://cdn.jsdelivr.net/gh/pytorch/pytorch@main/torch/utils/viz/MemoryViz.js"\nconst local_files = ${files}\nadd_local_files(local_files, 'Active Memory Timeline')\n</script>\n</body>\n`;
}

const shape = (d) => ({ bands: d.bands, steps: d.steps, yMax: d.yMax, ooms: d.ooms, vertices: d.vertices });

async function load(file) {
  const page = await env.newPage();
  await openFiles(page, file);
  const d = await plotData(page);
  assert.deepEqual(page.memviz.errors, [], file);
  await page.close();
  return d;
}

test('gzip, xz, zstd and HTML pages load with the same bands and steps as the plain pickle', async () => {
  const plain = readFileSync(RESNET);
  const files = { gz: join(dir, 'resnet50_fixed.pickle.gz'), html: join(dir, 'resnet50_fixed.html') };
  writeFileSync(files.gz, gzipSync(plain));
  writeFileSync(files.html, pytorchPage(plain));
  // xz and zstd made by the tools that make them, where they are installed.
  for (const [ext, tool] of [['xz', 'xz'], ['zst', 'zstd']]) {
    try {
      files[ext] = join(dir, `resnet50_fixed.pickle.${ext}`);
      writeFileSync(files[ext], execFileSync(tool, ['-c', '-q'], { input: plain, maxBuffer: 1 << 28 }));
    } catch {
      delete files[ext];
    }
  }
  if (existsSync(CLI)) {
    // memviz's own page, written from the gzip file (it embeds the compressed bytes).
    try {
      files.memviz = join(dir, 'resnet50_fixed.memviz.html');
      execFileSync(CLI, ['trace-plot', files.gz, '-o', files.memviz], { stdio: 'pipe' });
    } catch (e) {
      if (!String(e.stderr).includes('without the web viewer')) throw e;
      delete files.memviz;
    }
  }
  const want = shape(await load(RESNET));
  assert.ok(Number(want.bands) > 100 && Number(want.steps) > 10000, JSON.stringify(want));
  for (const [kind, f] of Object.entries(files)) {
    assert.deepEqual(shape(await load(f)), want, `${kind}: ${f}`);
  }
  // The small ones made by real tools (tests/data/containers) too.
  const oom = shape(await load(fixture('oom.pickle')));
  for (const ext of ['pickle.gz', 'pickle.xz', 'pickle.zst', 'html']) {
    assert.deepEqual(shape(await load(join(CONTAINERS, `oom.${ext}`))), oom, `oom.${ext}`);
  }
});

test('a damaged gzip file and a page without a snapshot get a message naming them', async () => {
  const cut = join(dir, 'cut.pickle.gz');
  const g = gzipSync(readFileSync(RESNET));
  writeFileSync(cut, g.subarray(0, g.length >> 1));
  const empty = join(dir, 'empty.html');
  writeFileSync(empty, '<!DOCTYPE html><html><body>nothing here</body></html>');
  for (const [f, re] of [[cut, /gzip.*truncated/], [empty, /no memory snapshot/]]) {
    const page = await env.newPage();
    await page.setInputFiles('input[type=file] >> nth=0', f);
    await page.waitForSelector('#error:not([hidden])', { timeout: 60000 });
    assert.match(await page.textContent('#error'), re);
    await page.close();
  }
});
