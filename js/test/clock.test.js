// The host clock in the npm package: a clock in seconds (`Date.now() / 1000`)
// or any reading before 2000 rejects with InvalidInputError naming the likely
// mistake and writes nothing; a clock stepped back is clamped to the memory's
// last stamp and reported in `stats().storage_warnings`. Run by
// scripts/test-js over the built package (js/pkg).

import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory, memoryStore, InvalidInputError, EngramError } from "engram";

const T0 = 1_772_445_600_000;
const MIN = 60_000;

test("a clock in seconds is refused naming the mistake, and nothing is written", async () => {
  const store = memoryStore();
  let now = () => Date.now() / 1000;
  const memory = await Memory.open({ namespace: "seconds", store, clock: { now: () => now() } });
  await assert.rejects(memory.addMessage({ role: "user", content: "Let's plan the Lisbon offsite." }), (e) => {
    assert.ok(e instanceof InvalidInputError && e instanceof EngramError, String(e));
    assert.match(e.message, /which is before 2000/);
    assert.match(e.message, /clocks must return milliseconds since the Unix epoch/);
    assert.match(e.message, /did you pass seconds\?/);
    return true;
  });
  assert.deepEqual(await memory.messages(), []);
  assert.equal(store.data.size, 0, "nothing written");
  // With a clock in ms the same memory goes on.
  now = () => Date.now();
  await memory.addMessage({ role: "user", content: "Let's plan the Lisbon offsite." });
  assert.equal((await memory.messages()).length, 1);
});

test("any reading before 2000 is refused", async () => {
  for (const reading of [0, 1_000, 946_684_799_999]) {
    const memory = await Memory.open({ namespace: "early", store: memoryStore(), clock: { now: () => reading } });
    await assert.rejects(memory.addMessage({ role: "user", content: "Hello." }), (e) => {
      assert.ok(e instanceof InvalidInputError, String(e));
      assert.match(e.message, /before 2000/);
      return true;
    });
  }
});

test("a clock stepped back is clamped to the last stamp and reported", async () => {
  let t = T0 + 10 * MIN;
  const memory = await Memory.open({ namespace: "back", store: memoryStore(), clock: { now: () => t } });
  await memory.addMessage({ role: "user", content: "Hello." });
  assert.deepEqual((await memory.stats()).storage_warnings, []);
  t = T0 + 5 * MIN;
  await memory.addMessage({ role: "user", content: "Hello again." });
  assert.deepEqual((await memory.messages()).map((m) => m.at), [T0 + 10 * MIN, T0 + 10 * MIN]);
  const warning = (await memory.stats()).storage_warnings.at(-1);
  assert.match(warning, /^clock:/);
  assert.ok(warning.includes(`${5 * MIN} ms before the memory's last stamp`), warning);
});
