// The meaning graph is the same on every target: the npm package's engine
// builds, over the same fixed vectors, graph bytes of the checksum that
// tests/fixtures/hnsw-golden.json keeps (the native engine's, which the
// WASI component's test checks too).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import "../node.js";
import { loadWasm } from "../src/memory.js";

test("the package's engine builds the graph of the golden checksum", async () => {
  const golden = JSON.parse(readFileSync(new URL("../../tests/fixtures/hnsw-golden.json", import.meta.url), "utf8"));
  const wasm = await loadWasm();
  assert.equal(wasm.__graphChecksum(golden.rows, golden.dim), golden.checksum);
  assert.notEqual(wasm.__graphChecksum(golden.rows - 1, golden.dim), golden.checksum);
});
