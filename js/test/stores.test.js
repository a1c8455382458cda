// The store conformance suite (test/stores/conformance.js) against every
// store: the in-memory store, SQLite (two connections on one file),
// PostgreSQL (several pools on one server, ENGRAM_PG_URL, as
// scripts/test-postgres starts it; skipped without it unless
// ENGRAM_REQUIRE_PG is set), and the Durable Object store inside the real
// workerd (npm), on its SQLite-backed on-disk storage (test/stores/do/).

import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { memoryStore } from "engram/memory-store";
import { sqliteStore } from "engram/sqlite";
import { checks } from "./stores/conformance.js";

const PG_URL = process.env.ENGRAM_PG_URL;
const closers = [];

function suite(name, fresh) {
  describe(`${name} store conformance`, () => {
    let n = 0;
    for (const [check, run] of Object.entries(checks)) {
      test(check, async () => {
        const open = await fresh(n++);
        const detail = await run(open);
        if (detail?.conflicts !== undefined) assert.ok(detail.conflicts >= 0);
      });
    }
  });
}

suite("memory", async () => {
  const store = memoryStore();
  return async () => store;
});

suite("sqlite", async () => {
  const dir = mkdtempSync(join(tmpdir(), "engram-conf-"));
  closers.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "kv.db");
  return async () => {
    const s = sqliteStore(file);
    closers.unshift(() => s.close());
    return s;
  };
});

test("stats().round_trips counts the handle's store calls by kind, as the store counts them", async () => {
  const { Memory } = await import("engram");
  const dir = mkdtempSync(join(tmpdir(), "engram-trips-"));
  const store = sqliteStore(join(dir, "kv.db"));
  try {
    let now = Date.UTC(2026, 0, 5, 9);
    const memory = await Memory.open({ namespace: "trips", store, clock: { now: () => (now += 50) } });
    const opened = (await memory.stats()).round_trips;
    // The open's reads and this call's head read; nothing written yet.
    assert.equal(opened.total, store.roundTrips);
    assert.equal(opened.write_if, 0);
    assert.ok(opened.get >= 2, JSON.stringify(opened));
    await memory.addMessage({ role: "user", content: "Which compost suits the raised beds?" });
    await memory.render("openai");
    await memory.addMessage({ role: "assistant", content: "Leaf mould, dug in each March." });
    const after = (await memory.stats()).round_trips;
    assert.equal(after.total, store.roundTrips);
    assert.equal(after.total, after.get + after.get_many + after.put + after.delete + after.list + after.write_if);
    // The question: a head read and a commit; render: a head read; the reply: a commit; stats(): a head read.
    assert.equal(after.write_if, 2, JSON.stringify(after));
    assert.equal(after.get - opened.get, 3, JSON.stringify(after));
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a store whose getMany answers the wrong shape fails the open with StoreError, and one without getMany is read key by key", async () => {
  const { Memory, StoreError } = await import("engram");
  let now = Date.UTC(2026, 0, 5, 9);
  const clock = { now: () => (now += 50) };
  const store = memoryStore();
  const writer = await Memory.open({ namespace: "shape", store, clock });
  for (let i = 0; i < 5; i++) await writer.addMessage({ role: "user", content: `Note ${i}: the shed key is under the pot.` });
  const texts = (await writer.messages()).map((m) => m.content);
  const before = new Map([...store.data].map(([k, v]) => [k, [...v].join(",")]));
  for (const [answer, said] of [
    // (Five entries and the key after the head, in one batch.)
    [(keys) => keys.slice(1), /store\.getMany returned 5 values for 6 keys/],
    [() => "nope", /store\.getMany returned a string/],
    [(keys) => keys.map(() => "text"), /store\.getMany returned a string/],
  ]) {
    const broken = { ...store, getMany: answer };
    await assert.rejects(Memory.open({ namespace: "shape", store: broken, clock }), (e) => e instanceof StoreError && said.test(e.message));
  }
  // Nothing was written by the refused opens.
  assert.deepEqual(new Map([...store.data].map(([k, v]) => [k, [...v].join(",")])), before);
  const { getMany, ...plain } = store;
  assert.equal(typeof getMany, "function");
  const reader = await Memory.open({ namespace: "shape", store: plain, clock });
  assert.deepEqual((await reader.messages()).map((m) => m.content), texts);
  const trips = (await reader.stats()).round_trips;
  assert.equal(trips.get_many, 0);
  assert.ok(trips.get >= 6, JSON.stringify(trips));
});

if (PG_URL) {
  const { default: pg } = await import("pg");
  const { postgresStore } = await import("engram/postgres");
  const tag = `t${process.pid}`;
  suite("postgres", async (n) => {
    const table = `engram_conf_${tag}_${n}`;
    return async () => {
      // Each handle its own pool: separate connections, as separate servers have.
      const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
      closers.push(async () => {
        await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
        await pool.end();
      });
      return postgresStore(pool, { table });
    };
  });

  test("postgres: the schema is created once when many stores start at the same moment", async () => {
    const table = `engram_conf_${tag}_race`;
    const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: PG_URL, max: 2 }));
    try {
      const stores = pools.map((p) => postgresStore(p, { table }));
      await Promise.all(stores.map((s, i) => s.put(`r/${i}`, new Uint8Array([i]))));
      assert.deepEqual(await stores[0].list("r/"), ["r/0", "r/1", "r/2", "r/3", "r/4", "r/5"]);
    } finally {
      await pools[0].query(`DROP TABLE IF EXISTS ${table}`);
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  test("postgres: a new memory's first commit is one statement, and two first writers make one memory", async () => {
    const { Memory } = await import("engram");
    const table = `engram_conf_${tag}_first`;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
    try {
      const store = postgresStore(pool, { table });
      await store.get("warm/head"); // the table is created once, before counting
      let now = Date.UTC(2026, 0, 5, 9);
      const clock = { now: () => (now += 50) };
      const seen = [];
      const spy = { ...store, writeIf: (g, e, w) => (seen.push(e), store.writeIf(g, e, w)) };
      const memory = await Memory.open({ namespace: "first", store: spy, clock });
      const before = store.roundTrips;
      await memory.addMessage({ role: "user", content: "The balcony faces south." });
      assert.deepEqual(seen, [null], "the first message's commit creates the memory");
      // Its head read and its one-statement commit.
      assert.equal(store.roundTrips - before, 2);
      // Two handles on one new namespace, each adding its first message at
      // once: one creates the memory, the other loses the race, reloads and
      // adds after it; both messages are kept once each.
      const a = await Memory.open({ namespace: "race", store, clock });
      const b = await Memory.open({ namespace: "race", store: postgresStore(pool, { table }), clock });
      await Promise.all([a.addMessage({ role: "user", content: "From tab A." }), b.addMessage({ role: "user", content: "From tab B." })]);
      const fresh = await Memory.open({ namespace: "race", store: postgresStore(pool, { table }) });
      assert.deepEqual((await fresh.messages()).map((m) => m.content).sort(), ["From tab A.", "From tab B."]);
    } finally {
      await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
      await pool.end();
    }
  });

  test("postgres: a chat turn after the open costs at most 4 round trips (add, render, view, reply)", async () => {
    const { Memory } = await import("engram");
    const table = `engram_conf_${tag}_trips`;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
    try {
      const store = postgresStore(pool, { table });
      // The chat backend's configuration (js/examples/server): a handle per
      // user reuses the state it committed for a second. A manual clock
      // moves 50 ms a call and 20 s between turns.
      let now = Date.UTC(2026, 0, 5, 9);
      const clock = { now: () => (now += 50) };
      const memory = await Memory.open({ namespace: "trips", store, clock, config: { fresh_for_ms: 1000 } });
      const turns = [];
      for (let i = 0; i < 24; i++) {
        now += 20_000;
        const before = store.roundTrips;
        await memory.addMessage({ role: "user", content: `Turn ${i}: how do I keep the tomatoes on the balcony watered in July?`, clientId: `q${i}` });
        await memory.render("openai");
        await memory.view();
        await memory.addMessage({ role: "assistant", content: `Water them early, turn ${i}; a saucer under each pot keeps some back.`, clientId: `a${i}` });
        turns.push(store.roundTrips - before);
      }
      const worst = Math.max(...turns.slice(1));
      assert.ok(worst <= 4, `round trips per turn after the first: ${turns.join(" ")}`);
      // Every call read its state from the store or from its own commit: a
      // fresh handle sees the same conversation.
      const fresh = await Memory.open({ namespace: "trips", store: postgresStore(pool, { table }) });
      assert.deepEqual(await fresh.render("openai"), await memory.render("openai"));
      assert.equal((await fresh.messages()).length, 48);
    } finally {
      await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
      await pool.end();
    }
  });

  test("postgres: with the default config a backend turn after the open costs at most 4 round trips (add, render, reply)", async () => {
    const { Memory } = await import("engram");
    const table = `engram_conf_${tag}_trips0`;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
    try {
      const store = postgresStore(pool, { table });
      let now = Date.UTC(2026, 0, 5, 9);
      const clock = { now: () => (now += 50) };
      const memory = await Memory.open({ namespace: "trips0", store, clock });
      const statements = [];
      const calls = [];
      for (let i = 0; i < 24; i++) {
        now += 20_000;
        const before = store.roundTrips;
        // (stats() reads the head: one statement, counted in its own figures.)
        const t0 = (await memory.stats()).round_trips;
        await memory.addMessage({ role: "user", content: `Turn ${i}: which compost suits the raised beds in spring?`, clientId: `q${i}` });
        await memory.render("openai");
        await memory.addMessage({ role: "assistant", content: `Leaf mould, turn ${i}, dug in each March.`, clientId: `a${i}` });
        statements.push(store.roundTrips - before - 1);
        const t1 = (await memory.stats()).round_trips;
        calls.push(t1.total - t0.total - 1);
        // The question's head read and commit, render's head read, the
        // reply's commit (its maintain has nothing to write here).
        if (i > 0) assert.equal(t1.write_if - t0.write_if, 2, `turn ${i}: ${JSON.stringify(t1)} after ${JSON.stringify(t0)}`);
      }
      assert.ok(Math.max(...statements.slice(1)) <= 4, `statements per turn after the first: ${statements.join(" ")}`);
      assert.ok(Math.max(...calls.slice(1)) <= 4, `store calls per turn after the first: ${calls.join(" ")}`);
      const fresh = await Memory.open({ namespace: "trips0", store: postgresStore(pool, { table }) });
      assert.deepEqual(await fresh.render("openai"), await memory.render("openai"));
      assert.equal((await fresh.messages()).length, 48);
    } finally {
      await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
      await pool.end();
    }
  });

  test("postgres: a reply committed on a state another server moved lands after its commit, once", async () => {
    const { Memory } = await import("engram");
    const table = `engram_conf_${tag}_held`;
    const pools = [new pg.Pool({ connectionString: PG_URL, max: 2 }), new pg.Pool({ connectionString: PG_URL, max: 2 })];
    try {
      // a's store counts its commits (stats() would read the head itself).
      const pa = postgresStore(pools[0], { table });
      let commits = 0;
      const counted = { get: pa.get, put: pa.put, delete: pa.delete, list: pa.list, writeIf: (...args) => (commits++, pa.writeIf(...args)) };
      const a = await Memory.open({ namespace: "held", store: counted });
      const b = await Memory.open({ namespace: "held", store: postgresStore(pools[1], { table }) });
      await a.addMessage({ role: "user", content: "from a, a question" });
      await b.addMessage({ role: "user", content: "from b, meanwhile" });
      // a's reply is tried on a's own state (no head read), conflicts with
      // b's commit, reloads and lands after it.
      const before = commits;
      await a.addMessage({ role: "assistant", content: "from a, the reply", clientId: "r1" });
      assert.ok(commits - before >= 2, `commits: ${commits - before}`);
      // The same reply retried through b is recognised, not stored twice.
      assert.equal((await b.addMessage({ role: "assistant", content: "from a, the reply", clientId: "r1" })).duplicate, true);
      for (const m of [a, b]) {
        assert.deepEqual(
          (await m.messages()).map((x) => x.content),
          ["from a, a question", "from b, meanwhile", "from a, the reply"],
        );
      }
    } finally {
      await pools[0].query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  test("postgres: with fresh_for_ms 0 (the default) every call reads the head: another handle's commit is seen at once", async () => {
    const { Memory } = await import("engram");
    const table = `engram_conf_${tag}_strict`;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
    try {
      const a = await Memory.open({ namespace: "strict", store: postgresStore(pool, { table }) });
      const b = await Memory.open({ namespace: "strict", store: postgresStore(pool, { table }) });
      await a.addMessage({ role: "user", content: "first, from a" });
      await b.addMessage({ role: "user", content: "second, from b" });
      assert.deepEqual(
        (await a.messages()).map((m) => m.content),
        ["first, from a", "second, from b"],
      );
    } finally {
      await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
      await pool.end();
    }
  });

  test("postgres: bad arguments are refused before any query", () => {
    assert.throws(() => postgresStore(undefined), /needs a pg.Pool/);
    assert.throws(() => postgresStore({ query() {}, connect() {} }, { table: "x; DROP TABLE y" }), /bad table name/);
  });
} else {
  test("postgres store conformance", { skip: !process.env.ENGRAM_REQUIRE_PG && "ENGRAM_PG_URL is not set (scripts/test-postgres sets it)" }, () => {
    assert.fail("ENGRAM_REQUIRE_PG is set but ENGRAM_PG_URL is not: start a server (scripts/test-postgres)");
  });
}

describe("durable object store conformance (workerd)", () => {
  const require = createRequire(import.meta.url);
  const WORKERD = join(require.resolve("@cloudflare/workerd-linux-64/package.json"), "..", "bin", "workerd");
  const dir = fileURLToPath(new URL("./stores/do/", import.meta.url));
  let child, exited, storage, origin;
  before(async () => {
    storage = mkdtempSync(join(tmpdir(), "engram-conf-do-"));
    const port = await new Promise((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const { port } = s.address();
        s.close(() => resolve(port));
      });
    });
    origin = `http://127.0.0.1:${port}`;
    child = spawn(WORKERD, ["serve", "config.capnp", "--directory-path", `do-storage=${storage}`, "--socket-addr", `http=127.0.0.1:${port}`], {
      cwd: dir,
      stdio: ["ignore", "inherit", "inherit"],
    });
    exited = new Promise((resolve) => child.once("exit", resolve));
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`workerd exited with ${child.exitCode}`);
      try {
        await fetch(`${origin}/checks`);
        break;
      } catch (e) {
        if (i > 300) throw e;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  });
  after(async () => {
    if (child?.exitCode === null) child.kill("SIGTERM");
    await exited;
    rmSync(storage, { recursive: true, force: true });
  });
  for (const name of Object.keys(checks)) {
    test(name, async () => {
      const res = await fetch(`${origin}/run?check=${encodeURIComponent(name)}`);
      const out = await res.json();
      assert.ok(out.ok, out.error);
    });
  }
  test("the worker runs exactly the suite's checks", async () => {
    assert.deepEqual(await (await fetch(`${origin}/checks`)).json(), Object.keys(checks));
  });
});

test.after(async () => {
  for (const close of closers) await close();
});
