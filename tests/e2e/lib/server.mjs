// A tiny static file server for dist/, on 127.0.0.1 only. It logs every request so tests can
// check that the page asks for nothing but its own files.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
};

/**
 * Serves `root` on an ephemeral port; resolves to { url, requests, close }. With `prefix` (e.g.
 * "/some/sub/path/") the files are served under that path only, as a static host serves a site
 * published below its root (GitHub Pages: /<repository>/); everything else is 404.
 */
export async function serve(root, { prefix = '/' } = {}) {
  const base = resolve(root);
  const mount = `/${prefix.replace(/^\/+|\/+$/g, '')}/`.replace(/^\/\/$/, '/');
  const requests = [];
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    requests.push({ method: req.method, path: url.pathname });
    if (!url.pathname.startsWith(mount)) {
      res.writeHead(404).end('not found');
      return;
    }
    let path = normalize(join(base, decodeURIComponent(url.pathname.slice(mount.length - 1))));
    if (path !== base && !path.startsWith(base + sep)) {
      res.writeHead(403).end();
      return;
    }
    try {
      if ((await stat(path)).isDirectory()) path = join(path, 'index.html');
      const body = await readFile(path);
      res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}${mount}`,
    requests,
    close: () => new Promise((ok) => server.close(ok)),
  };
}
