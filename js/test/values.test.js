// Values JSON cannot carry, through every method of the npm package (Node):
// the binding crosses values as JSON text, where NaN and ±Infinity are null
// and an Invalid Date a NaN time, read as "not given". Every such value, in
// every field of every method that takes one, rejects with
// InvalidInputError naming the method and the field, and the store is not
// written. Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";

import { InvalidInputError, Memory, memoryStore } from "engram";

const BAD = [
  ["NaN", NaN],
  ["Infinity", Infinity],
  ["-Infinity", -Infinity],
  ["Invalid Date", new Date("garbage")],
];

/** A store that counts its writes. */
function countingStore() {
  const store = memoryStore();
  const counted = { ...store, writes: 0 };
  for (const name of ["put", "delete", "writeIf"]) {
    counted[name] = (...args) => {
      counted.writes += 1;
      return store[name](...args);
    };
  }
  return counted;
}

/** Each call and the field it names, built around one bad value `v`. */
function calls(v) {
  const msg = { role: "user", content: "hello" };
  return [
    ["addMessage", "at", (m) => m.addMessage({ ...msg, at: v })],
    ["addMessage", "metadata.score", (m) => m.addMessage({ ...msg, metadata: { score: v } })],
    ["addMessage", "metadata.list[1]", (m) => m.addMessage({ ...msg, metadata: { list: [1, v] } })],
    ["addMessage", "thread", (m) => m.addMessage({ ...msg, thread: v })],
    ["addMessage", "client_id", (m) => m.addMessage({ ...msg, client_id: v })],
    ["addMessages", "[0].at", (m) => m.addMessages([{ ...msg, at: v }])],
    ["addMessages", "[1].metadata.n", (m) => m.addMessages([msg, { ...msg, metadata: { n: v } }])],
    ["view", "at", (m) => m.view({ at: v })],
    ["view", "thread", (m) => m.view({ thread: v })],
    ["viewTokens", "at", (m) => m.viewTokens({ at: v })],
    ["render", "at", (m) => m.render("openai", { at: v })],
    ["maintain", "thread", (m) => m.maintain({ thread: v })],
    ["pending", "thread", (m) => m.pending({ thread: v })],
    ["endTurn", "thread", (m) => m.endTurn({ thread: v })],
    ["search", "limit", (m) => m.search("hello", { limit: v })],
    ["search", "filter.from", (m) => m.search("hello", { filter: { from: v } })],
    ["search", "filter.until", (m) => m.search("hello", { filter: { until: v } })],
    ["search", "filter.metadata.score", (m) => m.search("hello", { filter: { metadata: { score: v } } })],
    ["recall", "max_tokens", (m) => m.recall("hello", { max_tokens: v })],
    ["hitText", "id", (m) => m.hitText({ kind: "message", id: v })],
    ["explain", "episode", (m) => m.explain({ episode: v })],
    ["erase", "message", (m) => m.erase({ message: v })],
    ["erase", "thread", (m) => m.erase({ thread: v })],
    ["note", "facts[0].at", (m) => m.note({ facts: [{ subject: "Ana", predicate: "lives in", object: "Porto", sentence: "Ana lives in Porto.", at: v }] })],
    ["import", "messages[0].at", (m) => m.import({ version: 3, messages: [{ id: 1, at: v }] })],
    ["abandonToolCall", "argument 1", (m) => m.abandonToolCall(v)],
  ];
}

test("every non-finite number and Invalid Date is refused, naming the method and field, and nothing is written", async () => {
  let now = 1_764_000_000_000;
  const clock = { now: () => (now += 60_000) };
  const store = countingStore();
  const memory = await Memory.open({ namespace: "values", store, clock });
  await memory.addMessage({ role: "user", content: "A first message." });
  const before = new Map(store.data);
  const writes = store.writes;
  let refused = 0;
  for (const [label, v] of BAD) {
    for (const [method, field, call] of calls(v)) {
      await assert.rejects(
        () => call(memory),
        (e) => {
          assert.ok(e instanceof InvalidInputError, `${method} ${field} ${label}: ${e}`);
          assert.ok(e.message.startsWith(`${method}: ${field} is ${label}`), `${method} ${field} ${label}: ${e.message}`);
          return true;
        },
      );
      refused += 1;
    }
  }
  assert.equal(refused, BAD.length * calls(0).length);
  assert.equal(store.writes, writes, "a refused call wrote to the store");
  assert.deepEqual(store.data, before);
  assert.equal((await memory.messages()).length, 1);
  // Finite values and valid Dates still go through.
  const added = await memory.addMessage({ role: "user", content: "Dated.", at: new Date(now + 1), metadata: { score: 0.5 } });
  assert.equal((await memory.messages())[1].metadata.score, 0.5);
  assert.ok(added);
});

test("open refuses a config number JSON cannot carry", async () => {
  for (const [label, v] of BAD) {
    await assert.rejects(
      () => Memory.open({ namespace: "values-open", store: memoryStore(), config: { ceiling_tokens: v } }),
      (e) => e instanceof InvalidInputError && e.message.startsWith(`open: config.ceiling_tokens is ${label}`),
    );
  }
});
