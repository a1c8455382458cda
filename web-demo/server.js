// The web demo's static server: Node's standard library only, 127.0.0.1 only.
//
//   /                            web-demo/index.html (and the demo's files)
//   /engram/...                  the npm package (js/: browser.js, src/, pkg/)
//   /sample/conversation.json    examples/sample/conversation.json
//
// Usage: node web-demo/server.js [--port N]; the port also comes from
// ENGRAM_DEMO_PORT or PORT (default 8787; when taken, the next free one, up
// to 20 further). Prints the URL once listening. Exported `serve()` is what
// the demo's browser test starts.

import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";

const DEMO = fileURLToPath(new URL(".", import.meta.url));
const ROOT = join(DEMO, "..");
const MOUNTS = [
  ["/engram/", join(ROOT, "js")],
  ["/", DEMO],
];
const FILES = { "/sample/conversation.json": join(ROOT, "examples", "sample", "conversation.json") };
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".ts": "text/plain; charset=utf-8",
};
/** Folders of js/ the page may load (not node_modules, not tests). */
const PACKAGE_PARTS = new Set(["browser.js", "src", "pkg", "package.json"]);

/** The file for a URL path, or null when it is not served. */
function resolve(path) {
  if (FILES[path]) return FILES[path];
  for (const [prefix, dir] of MOUNTS) {
    if (!path.startsWith(prefix)) continue;
    let rest = normalize(path.slice(prefix.length));
    if (rest === "." || rest === "") rest = "index.html";
    if (rest.startsWith("..") || rest.includes(`${sep}..`)) return null;
    if (prefix === "/engram/" && !PACKAGE_PARTS.has(rest.split(sep)[0])) return null;
    if (prefix === "/" && (rest === "server.js" || rest.startsWith("test"))) return null;
    const file = join(dir, rest);
    return file.startsWith(dir) ? file : null;
  }
  return null;
}

async function handle(req, res) {
  let path;
  try {
    path = decodeURIComponent(new URL(req.url, "http://localhost").pathname);
  } catch {
    return res.writeHead(400).end("bad path");
  }
  if (req.method !== "GET" && req.method !== "HEAD") return res.writeHead(405).end();
  const file = resolve(path);
  if (!file) return res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  try {
    const info = await stat(file);
    if (!info.isFile()) return res.writeHead(404).end("not found");
    const body = await readFile(file);
    res.writeHead(200, {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "content-length": body.length,
      // The package is rebuilt in place: never serve a stale copy.
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
    res.end(req.method === "HEAD" ? undefined : body);
  } catch {
    res.writeHead(404, { "content-type": "text/plain" }).end("not found");
  }
}

/**
 * Listens on 127.0.0.1:`port` (0: any free port); when `port` is taken and
 * `tries` > 1, on the next ones. Resolves to `{ server, url }`.
 */
export async function serve({ port = 8787, tries = 1 } = {}) {
  for (let i = 0; ; i++) {
    const server = createServer((req, res) => {
      handle(req, res).catch(() => res.writeHead(500).end());
    });
    try {
      await new Promise((ok, fail) => {
        server.once("error", fail);
        server.listen(port === 0 ? 0 : port + i, "127.0.0.1", ok);
      });
      return { server, url: `http://127.0.0.1:${server.address().port}/` };
    } catch (e) {
      if (e.code !== "EADDRINUSE" || i + 1 >= tries || port === 0) throw e;
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const flag = process.argv.indexOf("--port");
  const wanted = flag > 0 ? process.argv[flag + 1] : process.env.ENGRAM_DEMO_PORT || process.env.PORT || undefined;
  const port = wanted === undefined ? 8787 : Number(wanted);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`demo: bad port ${JSON.stringify(wanted)}`);
    process.exit(2);
  }
  // An explicit port must be that port; the default may move on.
  const { url } = await serve({ port, tries: wanted === undefined ? 20 : 1 }).catch((e) => {
    console.error(`demo: cannot listen on 127.0.0.1:${port}: ${e.message}`);
    process.exit(1);
  });
  console.log(`engram demo: ${url}  (offline model unless you set an endpoint in Settings; Ctrl-C stops it)`);
}
