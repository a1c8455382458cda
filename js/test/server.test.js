// The chat backend example (js/examples/server) for real: two instances on
// one PostgreSQL (ENGRAM_PG_URL, started by scripts/test-postgres), the load
// generator's short run (12 users, 3 turns each, every turn to a random
// instance), every memory exact at the end; requests without the token are
// refused and a retried turn adds nothing twice. Skipped without
// ENGRAM_PG_URL unless ENGRAM_REQUIRE_PG is set.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

const PG_URL = process.env.ENGRAM_PG_URL;
const skip = !PG_URL && !process.env.ENGRAM_REQUIRE_PG && "ENGRAM_PG_URL is not set (scripts/test-postgres sets it)";
const SERVER = fileURLToPath(new URL("../examples/server/server.js", import.meta.url));
const LOAD = fileURLToPath(new URL("../examples/server/load.mjs", import.meta.url));
const TOKEN = "test-token-0123456789";
const table = `engram_server_${process.pid}`;
const servers = [];

async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

async function startServer() {
  const port = await freePort();
  const child = spawn(process.execPath, [SERVER], {
    env: { ...process.env, DATABASE_URL: PG_URL, PORT: String(port), ENGRAM_SERVER_TOKEN: TOKEN, ENGRAM_TABLE: table },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const exited = new Promise((r) => child.once("exit", r));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch (e) {
      if (i > 300) throw e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  servers.push({ child, exited });
  return url;
}

let urls = [];
before(async () => {
  if (skip) return;
  urls = [await startServer(), await startServer()];
});
after(async () => {
  for (const { child, exited } of servers) {
    if (child.exitCode === null) child.kill("SIGTERM");
    await exited;
  }
  if (PG_URL) {
    const { default: pg } = await import("pg");
    const pool = new pg.Pool({ connectionString: PG_URL });
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.end();
  }
});

const call = (url, path, init = {}) =>
  fetch(`${url}${path}`, { ...init, headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}`, ...init.headers } });

test("a request without the bearer token is refused with 401 and changes nothing", { skip }, async () => {
  const res = await fetch(`${urls[0]}/users/mallory/chat`, { method: "POST", body: JSON.stringify({ content: "hi" }) });
  assert.equal(res.status, 401);
  const wrong = await call(urls[0], "/users/mallory/chat", { method: "POST", body: "{}", headers: { authorization: "Bearer nope" } });
  assert.equal(wrong.status, 401);
  assert.deepEqual(await (await call(urls[1], "/users/mallory/messages")).json(), []);
});

test("a turn retried on the other instance adds nothing twice", { skip }, async () => {
  const body = JSON.stringify({ content: "My sister Ana moved to Lisbon.", clientId: "turn-1" });
  const first = await (await call(urls[0], "/users/retry/chat", { method: "POST", body })).json();
  const again = await (await call(urls[1], "/users/retry/chat", { method: "POST", body })).json();
  assert.equal(again.duplicate, true);
  assert.equal(again.message, first.message);
  const ids = (await (await call(urls[1], "/users/retry/messages")).json()).map((m) => m.client_id);
  assert.deepEqual(ids, ["turn-1:q", "turn-1:a"]);
});

test("bad input is a 400 with the engram error code", { skip }, async () => {
  const res = await call(urls[0], "/users/bad/chat", { method: "POST", body: JSON.stringify({ content: 42 }) });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).code, "invalid-input");
});

test("twelve users over two instances with no sticky routing: every memory exact", { skip, timeout: 300_000 }, async () => {
  const child = spawn(process.execPath, [LOAD], {
    env: { ...process.env, URLS: urls.join(","), TOKEN, USERS: "12", TURNS: "3", GAP_MS: "0-200", DEADLINE_S: "240" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  const code = await new Promise((r) => child.once("exit", r));
  const result = JSON.parse(out);
  assert.equal(code, 0, out);
  assert.equal(result.memories_exact, "12/12");
  assert.equal(result.turns, 36);
  assert.equal(result.failed_turns, 0);
});
