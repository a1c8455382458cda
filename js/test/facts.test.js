// Facts you can address, through the npm package (Node): remember on a new
// memory (a triple, or a sentence the offline note model reads), fact(id),
// paged facts / messages / episodes with a cursor walk while facts are
// added, history, revise as a new fact that retires the old one, and bad
// input rejecting with InvalidInputError and changing nothing. The same
// semantics as tests/addressable_facts.rs. Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";

import { InvalidInputError, Memory, memoryStore } from "engram";

const T0 = 1_764_000_000_000;

async function open(store = memoryStore()) {
  let now = T0;
  const clock = { now: () => now, advance: (ms) => (now += ms) };
  const memory = await Memory.open({ namespace: "facts", store, clock });
  return { memory, clock, store };
}

const lisbon = { subject: "Ana", predicate: "lives in", object: "Lisbon", sentence: "Ana lives in Lisbon." };
const porto = { subject: "Ana", predicate: "lives in", object: "Porto", sentence: "Ana lives in Porto." };

test("a new memory remembers a stated fact whose source is the host", async () => {
  const { memory, store } = await open();
  await assert.rejects(memory.note({ facts: [lisbon] }), /remember/);
  assert.deepEqual(await memory.remember(lisbon), { fact: 1, merged: false, retired: [] });
  const f = await memory.fact(1);
  assert.equal(f.sentence, "Ana lives in Lisbon.");
  assert.deepEqual([f.episode, f.said_at, f.noted_at], [0, T0, T0]);
  assert.equal(await memory.fact(2), null);
  await assert.rejects(memory.fact(0), InvalidInputError);
  // In the store: another handle reads it back.
  const other = await Memory.open({ namespace: "facts", store, clock: { now: () => T0 } });
  assert.deepEqual(await other.facts(), [f]);
  // The same triple again merges into it.
  assert.deepEqual(await memory.remember({ ...lisbon, sentence: "Ana is living in Lisbon." }), {
    fact: 1,
    merged: true,
    retired: [],
  });
});

test("a sentence becomes a fact through the note model", async () => {
  const { memory } = await open();
  const done = await memory.remember("Carol prefers green tea over coffee.");
  assert.equal(done.merged, false);
  const f = await memory.fact(done.fact);
  assert.equal(f.episode, 0);
  assert.match(f.sentence, /green tea/);
});

test("revise writes a new fact that retires the old one, and history says so", async () => {
  const { memory, clock } = await open();
  await memory.remember(lisbon);
  clock.advance(60_000);
  assert.deepEqual(await memory.revise(1, porto), { fact: 2, merged: false, retired: [1] });
  const old = await memory.history(1);
  assert.equal(old.live, false);
  assert.deepEqual(old.entries, [
    { kind: "added", episode: 0, sentence: "Ana lives in Lisbon.", at: T0 },
    { kind: "retired_by", fact: 2, at: T0 + 60_000 },
  ]);
  const now = await memory.history(2);
  assert.deepEqual(now.entries.at(-1), { kind: "retired", fact: 1, at: T0 + 60_000 });
  await assert.rejects(memory.revise(1, "Ana lives in Faro."), /already retired/);
  await assert.rejects(memory.revise(2, porto), /already says/);
  assert.equal((await memory.facts()).length, 2);
});

test("a cursor walk returns each fact once, in order, while facts are added between pages", async () => {
  const { memory } = await open();
  for (let i = 1; i <= 250; i++) {
    await memory.remember({ subject: `Person ${i}`, predicate: "likes", object: `thing ${i}`, sentence: `Person ${i} likes thing ${i}.` });
  }
  const seen = [];
  let cursor;
  let added = 0;
  for (;;) {
    const page = await memory.facts({ limit: 40, cursor });
    seen.push(...page.items.map((f) => f.id));
    if (added < 6) {
      added += 1;
      await memory.remember({ subject: `Late ${added}`, predicate: "likes", object: "coffee", sentence: `Late ${added} likes coffee.` });
    }
    if (!page.next) break;
    cursor = page.next;
  }
  assert.deepEqual(seen, Array.from({ length: 256 }, (_, i) => i + 1));
  // Filters, and the old unpaged call.
  const stated = await memory.facts({ filter: { stated: false } });
  assert.deepEqual(stated, { items: [], next: null });
  assert.equal((await memory.facts()).length, 256);
});

test("messages and episodes page too", async () => {
  const { memory, clock } = await open();
  for (let i = 0; i < 5; i++) {
    await memory.addMessage({ role: "user", content: `Question ${i} about the garden.` });
    clock.advance(60_000);
    await memory.addMessage({ role: "assistant", content: `Answer ${i}.` });
  }
  const first = await memory.messages({ limit: 4 });
  assert.deepEqual(first.items.map((m) => m.id), [1, 2, 3, 4]);
  assert.equal(first.next, "message:4");
  const rest = await memory.messages({ limit: 100, cursor: first.next });
  assert.deepEqual(rest.items.map((m) => m.id), [5, 6, 7, 8, 9, 10]);
  assert.equal(rest.next, null);
  const episodes = await memory.episodes({ limit: 1000 });
  assert.deepEqual(episodes.items, await memory.episodes());
});

test("bad input rejects with InvalidInputError and changes nothing", async () => {
  const { memory, store } = await open();
  await memory.remember(lisbon);
  const before = await memory.export();
  const bad = [
    memory.remember(""),
    memory.remember(42),
    memory.remember({ subject: "Ana" }),
    memory.revise(9, porto),
    memory.history(9),
    memory.facts({ limit: 0 }),
    memory.facts({ limit: 1001 }),
    memory.facts({ cursor: "nonsense" }),
    memory.facts({ cursor: "message:1" }),
    memory.facts({ cursor: "fact:5" }),
    memory.messages({ filter: { thread: "not a thread!" } }),
  ];
  for (const call of bad) await assert.rejects(call, InvalidInputError);
  assert.equal(await memory.export(), before);
  assert.ok(store);
});
