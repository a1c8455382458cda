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
