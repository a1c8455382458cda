// sqliteStore over Node's built-in node:sqlite: the store conformance suite
// (test/stores/conformance.js), a memory across a reopen, and the same
// bytes as better-sqlite3 (a file written by one driver read by the other,
// in a child process on the Node of $ENGRAM_BS3_NODE, the one js/'s
// better-sqlite3 was built for). scripts/test-js runs this file on Node 22
// (node:sqlite needs 22.13+); on a Node without node:sqlite it is skipped.

import { test, describe, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Memory } from "engram";
import { sqliteStore } from "engram/sqlite";
import { checks } from "./stores/conformance.js";

const require = createRequire(import.meta.url);
let hasNodeSqlite = true;
try {
  require("node:sqlite");
} catch {
  hasNodeSqlite = false;
}
const skip = !hasNodeSqlite && `node:sqlite is not in Node ${process.versions.node} (scripts/test-js runs this file on Node 22)`;
const dir = mkdtempSync(join(tmpdir(), "engram-nodesqlite-"));
const closers = [];
after(() => {
  for (const close of closers) close();
  rmSync(dir, { recursive: true, force: true });
});

describe("node:sqlite store conformance", { skip }, () => {
  let n = 0;
  for (const [check, run] of Object.entries(checks)) {
    test(check, async () => {
      const file = join(dir, `conf-${n++}.db`);
      const detail = await run(async () => {
        const s = sqliteStore(file, { driver: "node:sqlite" });
        closers.unshift(() => s.close());
        return s;
      });
      if (detail?.conflicts !== undefined) assert.ok(detail.conflicts >= 0);
    });
  }
});

test("a memory on node:sqlite keeps every message across a reopen", { skip }, async () => {
  const file = join(dir, "memory.db");
  let store = sqliteStore(file, { driver: "node:sqlite" });
  assert.equal(store.driver, "node:sqlite");
  let memory = await Memory.open({ namespace: "ana", store, config: { ceiling_tokens: 400 } });
  for (let i = 0; i < 12; i++) {
    await memory.addMessage({ role: i % 2 ? "assistant" : "user", content: `message ${i} about the Lisbon offsite`, client_id: `m${i}` });
  }
  const before = (await memory.messages()).map((m) => m.content);
  await memory.close();
  store.close();
  store = sqliteStore(file, { driver: "node:sqlite" });
  memory = await Memory.open({ namespace: "ana", store, config: { ceiling_tokens: 400 } });
  assert.deepEqual((await memory.messages()).map((m) => m.content), before);
  assert.equal(before.length, 12);
  // A retried add is stored once here too.
  const again = await memory.addMessage({ role: "user", content: "message 0 about the Lisbon offsite", client_id: "m0" });
  assert.equal(again.duplicate, true);
  await memory.close();
  store.close();
});

test("the two drivers write the same bytes: each reads the other's file", { skip: skip || (!process.env.ENGRAM_BS3_NODE && "ENGRAM_BS3_NODE (a Node with js/'s better-sqlite3) is not set") }, () => {
  const a = join(dir, "from-node-sqlite.db");
  const bytes = new Uint8Array([0, 1, 2, 255, 254, 0, 10, 13]);
  const s = sqliteStore(a, { driver: "node:sqlite" });
  s.put("k/one", bytes);
  s.put("k/two", new TextEncoder().encode("text, as bytes"));
  s.close();
  const other = (file, script) =>
    execFileSync(process.env.ENGRAM_BS3_NODE, ["--input-type=module", "-e", script, file], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      encoding: "utf8",
    });
  const read = other(a, `import { sqliteStore } from "engram/sqlite";
    const s = sqliteStore(process.argv[1], { driver: "better-sqlite3" });
    console.log(JSON.stringify({ driver: s.driver, keys: s.list("k/"), one: [...s.get("k/one")], two: new TextDecoder().decode(s.get("k/two")) }));
    s.put("k/three", new Uint8Array([7, 0, 7]));
    s.close();`);
  assert.deepEqual(JSON.parse(read), { driver: "better-sqlite3", keys: ["k/one", "k/two"], one: [...bytes], two: "text, as bytes" });
  const back = sqliteStore(a, { driver: "node:sqlite" });
  assert.deepEqual([...back.get("k/three")], [7, 0, 7]);
  assert.deepEqual(back.list("k/"), ["k/one", "k/three", "k/two"]);
  back.close();
});

test("sqliteStore refuses an unknown driver, naming the supported ones", () => {
  assert.throws(() => sqliteStore(":memory:", { driver: "sqlite3" }), /unknown driver "sqlite3" \(supported: auto, better-sqlite3, node:sqlite\)/);
});

test("a missing driver is named with what is supported", { skip: hasNodeSqlite && "this Node has node:sqlite" }, () => {
  assert.throws(() => sqliteStore(":memory:", { driver: "node:sqlite" }), /better-sqlite3 12 or 13 .* or Node 22\.13\+/);
});
