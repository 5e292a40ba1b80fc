// A small static server for the web layer (docs/web.md): node's http module, no dependencies.
//
//   /               web/                        ember.js, the demos, the tests' pages
//   /dist/          build-wasm/web/             the single-threaded module (ember.mjs, ember.wasm)
//   /dist-threads/  build-wasm-threads/web/     the pthreads module
//   /models/        build/web-models/           the demos' models
//
// Every response carries COOP/COEP/CORP, so that the page is cross-origin isolated and the
// pthreads build gets SharedArrayBuffer; --no-isolation leaves COOP/COEP out (the one-thread
// fallback). Usage: node web/serve.mjs [--port N] [--host H] [--no-isolation] [--models DIR]
// [--dist DIR] [--dist-threads DIR]; --port 0 picks a free port. It prints the URL when listening.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const web = path.dirname(fileURLToPath(import.meta.url));
const repo = path.dirname(web);

const MIME = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8', '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm', '.onnx': 'application/octet-stream', '.safetensors': 'application/octet-stream',
  '.bin': 'application/octet-stream', '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg',
  '.gif': 'image/gif', '.svg': 'image/svg+xml', '.ico': 'image/x-icon', '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8', '.ts': 'text/plain; charset=utf-8',
};

function parseArgs(argv) {
  const options = {
    port: 8080, host: '127.0.0.1', isolation: true,
    models: path.join(repo, 'build', 'web-models'),
    dist: path.join(repo, 'build-wasm', 'web'),
    distThreads: path.join(repo, 'build-wasm-threads', 'web'),
  };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === '--port') options.port = Number(value());
    else if (arg === '--host') options.host = value();
    else if (arg === '--no-isolation') options.isolation = false;
    else if (arg === '--models') options.models = path.resolve(value());
    else if (arg === '--dist') options.dist = path.resolve(value());
    else if (arg === '--dist-threads') options.distThreads = path.resolve(value());
    else if (arg === '--help' || arg === '-h') {
      console.log('usage: serve.mjs [--port N] [--host H] [--no-isolation] [--models DIR] [--dist DIR] [--dist-threads DIR]');
      process.exit(0);
    } else throw new Error(`unknown argument ${arg} (try --help)`);
  }
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) throw new Error('--port takes 0..65535');
  return options;
}

// The longest prefix wins; '/' is last.
function mounts(options) {
  return [
    ['/dist-threads/', options.distThreads],
    ['/dist/', options.dist],
    ['/models/', options.models],
    ['/', web],
  ];
}

// The file under a mount that a URL path names, or null when it would leave the mount.
function resolve(urlPath, table) {
  for (const [prefix, root] of table) {
    if (urlPath === prefix.slice(0, -1) && prefix !== '/') return { redirect: prefix };
    if (!urlPath.startsWith(prefix)) continue;
    const rest = urlPath.slice(prefix.length);
    const file = path.resolve(root, '.' + path.posix.normalize('/' + rest));
    if (file !== root && !file.startsWith(root + path.sep)) return null;
    return { file, root };
  }
  return null;
}

export function createServer(options) {
  const table = mounts(options);
  return http.createServer((req, res) => {
    const headers = { 'Cross-Origin-Resource-Policy': 'same-origin', 'Cache-Control': 'no-cache' };
    if (options.isolation) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    const send = (status, body, extra = {}) => {
      res.writeHead(status, { ...headers, 'Content-Type': 'text/plain; charset=utf-8', ...extra });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n', { Allow: 'GET, HEAD' });
    let urlPath;
    try {
      urlPath = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      return send(400, 'bad request\n');
    }
    if (urlPath.includes('\0')) return send(400, 'bad request\n');
    const hit = resolve(urlPath, table);
    if (!hit) return send(404, 'not found\n');
    if (hit.redirect) return send(301, '', { Location: hit.redirect });
    let file = hit.file;
    fs.stat(file, (err, stat) => {
      if (!err && stat.isDirectory()) {
        if (!urlPath.endsWith('/')) return send(301, '', { Location: urlPath + '/' });
        file = path.join(file, 'index.html');
        try {
          stat = fs.statSync(file);
        } catch (e) {
          err = e;
        }
      }
      if (err || !stat.isFile()) return send(404, `not found: ${urlPath}\n`);
      // a symbolic link must not lead out of its mount either
      fs.realpath(file, (err2, real) => {
        const rootReal = fs.realpathSync(hit.root);
        if (err2 || (real !== rootReal && !real.startsWith(rootReal + path.sep))) return send(404, `not found: ${urlPath}\n`);
        res.writeHead(200, {
          ...headers,
          'Content-Type': MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
          'Content-Length': stat.size,
        });
        if (req.method === 'HEAD') return res.end();
        fs.createReadStream(file).on('error', () => res.destroy()).pipe(res);
      });
    });
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  let options;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`serve.mjs: ${e.message}`);
    process.exit(2);
  }
  const server = createServer(options);
  server.on('error', (e) => {
    console.error(`serve.mjs: ${e.message}`);
    process.exit(1);
  });
  server.listen(options.port, options.host, () => {
    const { port } = server.address();
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    console.log(`ember web: http://${host}:${port}/ (${options.isolation ? 'cross-origin isolated' : 'not isolated: --no-isolation'})`);
    for (const [prefix, root] of mounts(options))
      console.log(`  ${prefix.padEnd(15)} ${path.relative(repo, root) || '.'}${fs.existsSync(root) ? '' : '  (missing)'}`);
  });
}
