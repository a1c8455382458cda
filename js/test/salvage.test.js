// Salvage through the npm package (Node): a memory whose stored log is
// damaged (a log segment truncated, or a byte of it flipped) rejects
// Memory.open with CorruptError naming the key, and opens with
// Memory.openSalvage: read-only, the lost entries named in
// stats().storage_warnings, every message outside them as it was said, every
// write rejected with InvalidInputError and the store left byte for byte as
// it was, and its export imports into a fresh store that takes new messages.
// The JS side of tests/salvage.rs. Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";

import { CorruptError, InvalidInputError, Memory, memoryStore } from "engram";

import { MIN, NEW, fxModel, manualClock } from "./scripted.js";

const NS = "salvage";
/** 8 log entries a segment: 52 messages (an entry each) make 6 segments and a tail of 4. */
const CONFIG = { snapshot_every: 8 };
const READ_ONLY = /opened for salvage: read-only/;

const open = (store, clock, how = "open") => Memory[how]({ namespace: NS, store, model: fxModel(), clock, config: CONFIG });

/** A memory of a scripted conversation of `count` messages (a new concept every 6). */
async function longMemory(count) {
  const store = memoryStore();
  const clock = manualClock();
  const memory = await open(store, clock);
  for (let i = 0; i < count; i++) {
    clock.advance(MIN);
    const user = i % 2 === 0;
    const topic = Math.floor(i / 6);
    const content = user
      ? `${i % 6 === 0 ? `${NEW} ` : ""}message ${i} about topic ${topic}, the lisbon trip`
      : `Reply ${i} on topic ${topic}.`;
    await memory.addMessage({ role: user ? "user" : "assistant", content });
  }
  await memory.close();
  return { store, clock };
}

const copy = (store) => new Map([...store.data].map(([k, v]) => [k, Uint8Array.from(v)]));
const segmentKeys = (store) => store.list(`engram/${NS}/seg/`);
const seqOf = (key) => Number(key.slice(key.lastIndexOf("/") + 1));

/** The log entries `first..=last` a segment held (the next segment's first - 1, or the head's `flushed`). */
function segmentRange(store, key) {
  const segs = segmentKeys(store);
  const next = segs[segs.indexOf(key) + 1];
  const head = JSON.parse(Buffer.from(store.data.get(`engram/${NS}/head`)).toString("utf8"));
  return [seqOf(key), next === undefined ? head.flushed : seqOf(next) - 1];
}

/** The ids of the messages that log entries `first..=last` added, from an export. */
function messagesAddedIn(exported, [first, last]) {
  return new Set(
    JSON.parse(exported)
      .log.filter((e) => e.seq >= first && e.seq <= last)
      .flatMap((e) => e.events)
      .filter((e) => e.type === "message")
      .map((e) => e.id),
  );
}

const DAMAGE = {
  truncate: (v) => v.slice(0, Math.floor(v.length / 2)),
  "flip a byte": (v) => {
    const out = Uint8Array.from(v);
    out[Math.floor((v.length * 2) / 3)] ^= 0x5a;
    return out;
  },
};

/** Every write the memory offers rejects with the read-only InvalidInputError and leaves the store as it was. */
async function assertWritesRefused(memory, store) {
  const before = copy(store);
  const writes = {
    addMessage: () => memory.addMessage({ role: "user", content: "one more thing about lisbon" }),
    note: () => memory.note({ facts: [{ subject: "Ana", predicate: "likes", object: "tea", sentence: "Ana likes tea.", kind: "fact" }] }),
    maintain: () => memory.maintain(),
    endTurn: () => memory.endTurn(),
    setInstructions: () => memory.setInstructions("be brief"),
    erase: () => memory.erase({ message: 1 }),
    import: () => memory.import("{}"),
    destroy: () => memory.destroy(),
  };
  for (const [name, write] of Object.entries(writes)) {
    await assert.rejects(write(), (e) => {
      assert.ok(e instanceof InvalidInputError, `${name}: ${e}`);
      assert.equal(e.code, "invalid-input", name);
      assert.match(e.message, READ_ONLY, name);
      return true;
    });
  }
  assert.deepEqual(copy(store), before, "a refused write changed the store");
}

for (const [how, damage] of Object.entries(DAMAGE)) {
  test(`a log segment damaged (${how}) fails open with CorruptError and opens with openSalvage, read-only, the loss named`, async () => {
    const { store, clock } = await longMemory(52);
    const segs = segmentKeys(store);
    assert.ok(segs.length >= 3, `${segs.length} segments`);
    const key = segs[Math.floor(segs.length / 2)];
    const lost = segmentRange(store, key);
    const whole = await open(store, clock);
    const wholeMessages = await whole.messages();
    const lostIds = messagesAddedIn(await whole.export(), lost);
    assert.ok(lostIds.size > 0, "the lost entries held messages");
    await whole.close();

    store.data.set(key, damage(store.data.get(key)));

    await assert.rejects(open(store, clock), (e) => {
      assert.ok(e instanceof CorruptError, String(e));
      assert.equal(e.code, "corrupt");
      assert.ok(e.message.includes(key), `names the key: ${e.message}`);
      assert.match(e.message, /salvage/, "says how to recover");
      return true;
    });

    const before = copy(store);
    const memory = await open(store, clock, "openSalvage");
    const stats = await memory.stats();
    assert.ok(
      stats.storage_warnings.some((w) => w.includes(key) && w.includes(`${lost[0]}..=${lost[1]}`)),
      `the loss is reported with its key and range: ${JSON.stringify(stats.storage_warnings, null, 1)}`,
    );

    // Every id has a message: the lost ones erased placeholders, the others as they were said, once.
    const got = await memory.messages();
    assert.equal(got.length, wholeMessages.length);
    for (const [i, m] of got.entries()) {
      const w = wholeMessages[i];
      if (lostIds.has(w.id)) assert.ok(m.erased && m.content === "", `message ${w.id} lost`);
      else assert.deepEqual([m.id, m.role, m.content, m.at], [w.id, w.role, w.content, w.at], `message ${w.id}`);
    }
    const kept = got.filter((m) => !m.erased).map((m) => m.content);
    assert.equal(new Set(kept).size, kept.length, "no message twice");

    // Reads work.
    await memory.view();
    await memory.render("openai");
    await memory.episodes();
    await memory.facts();
    await memory.search("lisbon");

    await assertWritesRefused(memory, store);

    // Export, import into a fresh store, and go on there.
    const exported = await memory.export();
    const fresh = memoryStore();
    const restored = await open(fresh, clock);
    await restored.import(exported);
    assert.deepEqual(await restored.messages(), got, "the import holds the salvaged messages");
    clock.advance(MIN);
    await restored.addMessage({ role: "user", content: "back to the lisbon trip plans" });
    clock.advance(MIN);
    await restored.addMessage({ role: "assistant", content: "Sure, the lisbon trip it is." });
    await restored.close();
    const again = await open(fresh, clock);
    assert.deepEqual((await again.stats()).storage_warnings, []);
    assert.equal((await again.messages()).length, got.length + 2);
    await again.close();

    await memory.close();
    assert.deepEqual(copy(store), before, "salvage wrote to the damaged store");
  });
}

test("an undamaged memory opens with openSalvage with no warnings, the same messages and view, read-only", async () => {
  const { store, clock } = await longMemory(20);
  const whole = await open(store, clock);
  const memory = await open(store, clock, "openSalvage");
  assert.deepEqual((await memory.stats()).storage_warnings, []);
  assert.deepEqual(await memory.messages(), await whole.messages());
  assert.deepEqual(await memory.view(), await whole.view());
  assert.equal(await memory.export(), await whole.export());
  await assertWritesRefused(memory, store);
  await memory.close();
  await whole.close();
});

test("openSalvage checks its options like open", async () => {
  await assert.rejects(Memory.openSalvage({ store: memoryStore() }), InvalidInputError);
  await assert.rejects(Memory.openSalvage({ namespace: NS }), InvalidInputError);
  await assert.rejects(Memory.openSalvage(), InvalidInputError);
});
