// The packed engram tarball inside a scratch app, through real bundlers
// (check.sh beside this file installs and builds; APP names its folder):
//   - Vite's production build, loaded in headless Chromium: open a memory
//     over IndexedDB, add, view;
//   - an esbuild browser bundle with the documented init(url) recipe, and
//     without it (a PackagingError);
//   - an esbuild bundle for Node, run with node where it was built, alone
//     (a PackagingError, code "packaging") and alone with engram_bg.wasm
//     copied beside it;
//   - the worker example (js/examples/worker) bundled by
//     `wrangler deploy --dry-run`, served by workerd with a SQLite-backed
//     Durable Object and the bindings of its wrangler.jsonc: add and view
//     through its routes and its bearer-token hook.

import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const APP = process.env.APP;
if (!APP) throw new Error("APP is not set: run js/test/apps/bundlers/check.sh");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const require = createRequire(import.meta.url);
const WORKERD = join(require.resolve("@cloudflare/workerd-linux-64/package.json"), "..", "bin", "workerd");
const EXPECTED_VIEW = [
  { role: "user", content: "My cat is called Miso." },
  { role: "assistant", content: "Miso is a fine name for a cat." },
];
const scratch = mkdtempSync(join(tmpdir(), "engram-bundlers-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A port nobody listens on now. */
async function freePort() {
  const s = createNetServer();
  await new Promise((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

const sorted = (view) => view.map(({ role, content }) => ({ role, content }));

/** Serves `root` on 127.0.0.1, opens `path` in headless Chromium, and returns #result's JSON and the page errors. */
async function loadInChromium(root, path) {
  const types = { ".js": "text/javascript", ".html": "text/html", ".wasm": "application/wasm" };
  const server = createServer(async (req, res) => {
    const file = join(root, normalize(decodeURIComponent(new URL(req.url, "http://x").pathname).replace(/\/$/, "/index.html")));
    if (!file.startsWith(root)) return res.writeHead(403).end();
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e));
    await page.goto(`http://127.0.0.1:${server.address().port}${path}`);
    await page.waitForFunction(() => document.querySelector("#result")?.textContent !== "loading", null, { timeout: 60_000 });
    return { result: JSON.parse(await page.textContent("#result")), errors };
  } finally {
    await browser.close();
    server.closeAllConnections();
    server.close();
  }
}

test("a Vite production build opens a memory, adds and views in Chromium", async () => {
  const { result, errors } = await loadInChromium(join(APP, "dist-vite"), "/");
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.deepEqual(result.added, [1, 2]);
  assert.deepEqual(sorted(result.view), EXPECTED_VIEW);
  assert.equal(result.errorName, "InvalidInputError", "error names survive minification");
  assert.deepEqual(errors, []);
});

test("an esbuild browser bundle works with init(url of engram/engram.wasm) and initOffline(url of engram/offline.wasm); without either, a PackagingError", async () => {
  const root = join(APP, "dist-esbuild-browser");
  const { result, errors } = await loadInChromium(root, "/");
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.deepEqual(sorted(result.view), EXPECTED_VIEW);
  assert.deepEqual(errors, []);
  const missing = await loadInChromium(root, "/?noinit");
  assert.equal(missing.result.ok, false);
  assert.equal(missing.result.code, "packaging", JSON.stringify(missing.result));
  assert.match(missing.result.error, /engram\/engram\.wasm and call init\(itsUrl\)/);
  const noOffline = await loadInChromium(root, "/?nooffline");
  assert.equal(noOffline.result.ok, false);
  assert.equal(noOffline.result.code, "packaging", JSON.stringify(noOffline.result));
  assert.match(noOffline.result.error, /engram\/offline\.wasm and call initOffline\(itsUrl\)/);
});

function runNode(file) {
  const out = spawnSync(process.execPath, [file], { encoding: "utf8", timeout: 60_000 });
  return { status: out.status, result: JSON.parse(out.stdout.trim().split("\n").pop() || "null"), stderr: out.stderr };
}

test("an esbuild bundle for Node runs where it was built (the package beside it in node_modules)", () => {
  const { status, result, stderr } = runNode(join(APP, "dist-node", "app.mjs"));
  assert.equal(status, 0, `${JSON.stringify(result)} ${stderr}`);
  assert.deepEqual(result.added, [1, 2]);
  assert.deepEqual(sorted(result.view), EXPECTED_VIEW);
});

test("an esbuild bundle shipped alone fails with a PackagingError, and runs with engram_bg.wasm and engram_offline_bg.wasm copied beside it", () => {
  const alone = join(scratch, "node-alone");
  spawnSync("mkdir", ["-p", alone]);
  copyFileSync(join(APP, "dist-node", "app.mjs"), join(alone, "app.mjs"));
  const missing = runNode(join(alone, "app.mjs"));
  assert.equal(missing.status, 1);
  assert.equal(missing.result.code, "packaging", JSON.stringify(missing.result));
  assert.equal(missing.result.name, "PackagingError");
  assert.match(missing.result.error, /engram_bg\.wasm beside the bundle/);
  copyFileSync(join(APP, "node_modules", "engram", "pkg", "web", "engram_bg.wasm"), join(alone, "engram_bg.wasm"));
  // The app opens on the offline model, whose own module is still missing.
  const noOffline = runNode(join(alone, "app.mjs"));
  assert.equal(noOffline.status, 1);
  assert.equal(noOffline.result.code, "packaging", JSON.stringify(noOffline.result));
  assert.match(noOffline.result.error, /engram_offline_bg\.wasm beside the bundle/);
  copyFileSync(join(APP, "node_modules", "engram", "pkg", "offline", "engram_offline_bg.wasm"), join(alone, "engram_offline_bg.wasm"));
  const shipped = runNode(join(alone, "app.mjs"));
  assert.equal(shipped.status, 0, JSON.stringify(shipped.result));
  assert.deepEqual(sorted(shipped.result.view), EXPECTED_VIEW);
});

// ---- the worker --------------------------------------------------------------

let workerd = null;
let origin;
const TOKEN = "bundled-test-token";

/** wrangler.jsonc's vars (its comments are whole lines), as workerd text bindings. */
function wranglerVars() {
  const text = readFileSync(join(APP, "worker", "wrangler.jsonc"), "utf8")
    .split("\n")
    .filter((line) => !/^\s*\/\//.test(line))
    .join("\n");
  return JSON.parse(text).vars ?? {};
}

describe("the worker example bundled by wrangler", () => {
  before(async () => {
    // workerd embeds files by paths relative to its config: both go in one folder.
    const out = join(scratch, "worker-out");
    spawnSync("cp", ["-r", join(APP, "dist-worker"), out]);
    const modules = readdirSync(out)
      .filter((f) => f.endsWith(".js") || f.endsWith(".wasm"))
      .map((f) => `(name = ${JSON.stringify(f)}, ${f.endsWith(".js") ? "esModule" : "wasm"} = embed ${JSON.stringify(f)})`);
    const main = readdirSync(out).find((f) => f === "worker.js");
    assert.ok(main, "wrangler wrote worker.js");
    modules.sort((a, b) => (a.includes('"worker.js"') ? -1 : b.includes('"worker.js"') ? 1 : 0));
    const bindings = [
      '(name = "MEMORY", durableObjectNamespace = "UserMemory")',
      `(name = "API_TOKEN", text = ${JSON.stringify(TOKEN)})`,
      ...Object.entries(wranglerVars()).map(([k, v]) => `(name = ${JSON.stringify(k)}, text = ${JSON.stringify(String(v))})`),
    ];
    const storage = join(scratch, "do-storage");
    spawnSync("mkdir", ["-p", storage]);
    const config = join(out, "bundled.capnp");
    writeFileSync(
      config,
      `using Workerd = import "/workerd/workerd.capnp";
  const config :Workerd.Config = (
    services = [(name = "main", worker = .worker), (name = "do-storage", disk = (writable = true))],
    sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "main")],
  );
  const worker :Workerd.Worker = (
    modules = [${modules.join(", ")}],
    compatibilityDate = "2026-01-01",
    durableObjectNamespaces = [(className = "UserMemory", uniqueKey = "engram-bundled-user-memory", enableSql = true)],
    durableObjectStorage = (localDisk = "do-storage"),
    bindings = [${bindings.join(", ")}],
  );
  `,
    );
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    const child = spawn(WORKERD, ["serve", config, "--directory-path", `do-storage=${storage}`, "--socket-addr", `http=127.0.0.1:${port}`], {
      stdio: ["ignore", "inherit", "inherit"],
    });
    workerd = { child, exited: new Promise((resolve) => child.once("exit", resolve)) };
    for (let i = 0; i < 300; i++) {
      if (child.exitCode !== null) throw new Error(`workerd exited with ${child.exitCode}`);
      try {
        await fetch(`${origin}/`);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error("workerd did not start listening");
  });

  after(async () => {
    if (!workerd) return;
    if (workerd.child.exitCode === null) process.kill(workerd.child.pid, "SIGTERM");
    await workerd.exited;
  });

  test("the wrangler bundle of the worker example, in workerd with a SQLite Durable Object, adds and views through its auth", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const post = (message, headers = auth) =>
      fetch(`${origin}/users/ada/messages`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(message) });
    assert.equal((await post(EXPECTED_VIEW[0], {})).status, 401, "no token: 401");
    for (const [i, message] of EXPECTED_VIEW.entries()) {
      const res = await post({ ...message, client_id: `m${i}` });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(body.added.message, i + 1);
    }
    const retried = await (await post({ ...EXPECTED_VIEW[0], client_id: "m0" })).json();
    assert.equal(retried.added.duplicate, true);
    const view = await fetch(`${origin}/users/ada/view`, { headers: auth });
    assert.equal(view.status, 200);
    assert.deepEqual(sorted(await view.json()), EXPECTED_VIEW);
    assert.equal((await fetch(`${origin}/users/ada/view`)).status, 401);
  });
});
