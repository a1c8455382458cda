// Many servers, one memory: 4 Node processes and 2 Python processes (the
// WASI component in wasmtime) write one memory in PostgreSQL at once, 1,200
// messages in all, on the offline model. Every message is stored exactly
// once, each writer's in its own order, and a fresh handle's view equals
// every writer's. Then a writer killed with SIGKILL in the middle of a
// commit (its writes made, COMMIT not sent) loses nothing it had
// acknowledged, and the memory stays readable and writable.
//
// Needs ENGRAM_PG_URL (scripts/test-postgres starts a server) and
// ENGRAM_PYTHON, a python with engram_host's dependencies and psycopg
// (scripts/test-postgres passes the test venv's); skipped without them
// unless ENGRAM_REQUIRE_PG is set.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const PG_URL = process.env.ENGRAM_PG_URL;
const PYTHON = process.env.ENGRAM_PYTHON;
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const skip = !(PG_URL && PYTHON) && !process.env.ENGRAM_REQUIRE_PG && "ENGRAM_PG_URL and ENGRAM_PYTHON are not set (scripts/test-postgres sets them)";

// Every writer started, killed when the tests end (a failed test leaves none running).
const children = [];
after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

// A writer process with its lines as events: acks, done, in-commit, a view.
function writer(kind, table, namespace, id, count, env = {}) {
  const args = [table, namespace, id, String(count)];
  const child =
    kind === "node"
      ? spawn(process.execPath, [join(here, "writers", "writer.mjs"), PG_URL, ...args], { env: { ...process.env, ...env } })
      : spawn(PYTHON, [join(here, "writers", "writer.py"), PG_URL, ...args], {
          env: { ...process.env, ...env, PYTHONPATH: join(root, "hosts", "python") },
        });
  children.push(child);
  const w = { id, child, acks: [], stderr: "", done: null, inCommit: null, view: null, exited: null };
  // Settled by the output, or rejected when the process ends first (a
  // reject after a resolve is a no-op, and makes no unhandled rejection).
  let resolveDone, rejectDone, resolveCommit, rejectCommit;
  w.done = new Promise((res, rej) => ((resolveDone = res), (rejectDone = rej)));
  w.inCommit = new Promise((res, rej) => ((resolveCommit = res), (rejectCommit = rej)));
  // "close": after the process exited and its output was read to the end.
  w.exited = new Promise((r) => child.on("close", (code, signal) => r({ code, signal })));
  child.stderr.on("data", (d) => (w.stderr += d));
  let viewLine = null;
  createInterface({ input: child.stdout }).on("line", (line) => {
    if (line.startsWith("ack ")) w.acks.push(Number(line.split(" ")[2]));
    else if (line === "done") resolveDone();
    else if (line === "in-commit") resolveCommit();
    else if (line.startsWith("[")) viewLine = line;
  });
  const early = (code, signal) => new Error(`writer ${id} exited (code ${code}, signal ${signal}) before finishing:\n${w.stderr}`);
  w.view = w.exited.then(({ code, signal }) => {
    if (code !== 0 || viewLine === null) throw early(code, signal);
    return JSON.parse(viewLine);
  });
  w.exited.then(({ code, signal }) => {
    rejectDone(early(code, signal));
    rejectCommit(early(code, signal));
  });
  w.done.catch(() => {});
  w.view.catch(() => {});
  w.inCommit.catch(() => {});
  return w;
}

async function freshHandle(table, namespace) {
  const { default: pg } = await import("pg");
  const { Memory } = await import("engram");
  const { postgresStore } = await import("engram/postgres");
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const memory = await Memory.open({ namespace, store: postgresStore(pool, { table }) });
  return {
    memory,
    pool,
    async close() {
      await memory.close();
      await pool.query(`DROP TABLE IF EXISTS ${table}`);
      await pool.end();
    },
  };
}

// Every writer's messages, by client id, once each and in the writer's order.
function checkExactlyOnce(messages, writers) {
  const byWriter = new Map();
  const seen = new Set();
  for (const m of messages) {
    assert.ok(m.client_id, `message ${m.id} has no client id`);
    assert.ok(!seen.has(m.client_id), `message ${m.client_id} is stored twice`);
    seen.add(m.client_id);
    const [w, i] = m.client_id.split("-");
    if (!byWriter.has(w)) byWriter.set(w, []);
    byWriter.get(w).push(Number(i));
  }
  for (const [w, count] of writers) {
    const got = byWriter.get(w) ?? [];
    assert.deepEqual(got, Array.from({ length: count }, (_, i) => i), `writer ${w}: its messages once each, in its order`);
  }
  return seen.size;
}

test("six writers in two languages store 1,200 messages exactly once, in each writer's order, and agree on the view", { skip, timeout: 900_000 }, async () => {
  const table = `engram_writers_${process.pid}`;
  const namespace = "shared-user";
  const each = 200;
  const kinds = ["node", "node", "node", "node", "python", "python"];
  const writers = kinds.map((kind, n) => writer(kind, table, namespace, `w${n}`, each));
  await Promise.all(writers.map((w) => w.done));
  for (const w of writers) w.child.stdin.end("view\n");
  const views = await Promise.all(writers.map((w) => w.view));
  await Promise.all(writers.map((w) => w.exited));

  const fresh = await freshHandle(table, namespace);
  try {
    const messages = await fresh.memory.messages();
    assert.equal(checkExactlyOnce(messages, writers.map((w) => [w.id, each])), 1200);
    assert.equal(messages.length, 1200);
    const view = await fresh.memory.render("openai");
    for (const [n, v] of views.entries()) assert.deepEqual(v, view, `writer ${writers[n].id} (${kinds[n]}) sees the fresh handle's view`);
  } finally {
    await fresh.close();
  }
});

test("a writer killed with SIGKILL in the middle of a commit loses nothing it acknowledged", { skip, timeout: 300_000 }, async () => {
  const table = `engram_killed_${process.pid}`;
  const namespace = "killed-user";
  // One writer goes on while the other stops inside its 40th commit.
  const steady = writer("node", table, namespace, "s", 60);
  const victim = writer("node", table, namespace, "k", 100, { ENGRAM_HANG_COMMIT: "40" });
  await victim.inCommit;
  const acked = [...victim.acks];
  victim.child.kill("SIGKILL");
  const { signal } = await victim.exited;
  assert.equal(signal, "SIGKILL");
  await steady.done;
  steady.child.stdin.end("view\n");
  await steady.view;
  await steady.exited;

  const fresh = await freshHandle(table, namespace);
  try {
    const messages = await fresh.memory.messages();
    const victims = messages.filter((m) => m.client_id.startsWith("k-")).map((m) => Number(m.client_id.slice(2)));
    for (const i of acked) assert.ok(victims.includes(i), `acknowledged message k-${i} is stored`);
    assert.ok(acked.length >= 1, "the victim acknowledged messages before it was killed");
    assert.equal(new Set(messages.map((m) => m.client_id)).size, messages.length, "nothing stored twice");
    assert.equal(messages.filter((m) => m.client_id.startsWith("s-")).length, 60, "the steady writer's 60 messages");
    // The memory is still writable: the killed writer's retry of what it never acknowledged lands once.
    const next = acked.length;
    await fresh.memory.addMessage({ role: "user", content: "after the crash", clientId: `k-${next}` });
    await fresh.memory.addMessage({ role: "user", content: "after the crash", clientId: `k-${next}` });
    const after = await fresh.memory.messages();
    assert.equal(after.filter((m) => m.client_id === `k-${next}`).length, 1);
  } finally {
    await fresh.close();
  }
});
