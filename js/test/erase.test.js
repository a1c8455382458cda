// Erasure through the npm package (Node): after erase no stored value and
// no export holds the erased text or its embedding, another namespace in the
// same store is untouched value for value, the memory reopens to the same
// state, bad input rejects with InvalidInputError and changes nothing, a
// failing store changes nothing, and destroy removes every key of the
// namespace. Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";

import { InvalidInputError, Memory, StoreError, memoryStore } from "engram";

const SECRET = "Zorblax";
/** A tight ceiling and short episodes: the first ones leave and get noted. */
const CONFIG = { ceiling_tokens: 120, target_episode_tokens: 40, max_episode_tokens: 80, min_episode_tokens: 12 };
const TURNS = [
  `${SECRET} Petrov bought a red locker in Utrecht last summer.`,
  "Let's plan the Lisbon offsite for the sales team in March.",
  "We agreed the budget is 12000 euros for the whole offsite.",
  "The venue should be near the river and have a big terrace.",
  "The quarterly report is due on Friday at noon.",
  "Carol prefers green tea over coffee every morning.",
  "The server migration finished without any downtime.",
];

async function open(namespace, store) {
  let now = 1_764_000_000_000;
  const clock = { now: () => (now += 60_000) };
  return Memory.open({ namespace, store, clock, config: CONFIG });
}

async function converse(memory) {
  for (const [i, t] of TURNS.entries()) {
    await memory.addMessage({ role: "user", content: t });
    await memory.addMessage({ role: "assistant", content: `Noted, point ${i}.` });
  }
}

// Stored values are bytes (binary log entries and segments): texts are
// searched as UTF-8, vectors as stored, f16 little-endian.
const holds = (value, needle) => {
  const n = typeof needle === "string" ? Buffer.from(needle, "utf8") : Buffer.from(needle);
  return Buffer.from(value).indexOf(n) >= 0;
};

// The f16 bits of an f32 that f16 represents exactly (engram keeps vectors
// at f16 precision).
function toF16(x) {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, x, true);
  const b = view.getUint32(0, true);
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const man = b & 0x7fffff;
  if (exp === 0 && man === 0) return sign;
  const e = exp - 112;
  if (e <= 0) return sign | ((man | 0x800000) >>> (14 - e));
  return sign | (e << 10) | (man >>> 13);
}

// A vector listed as base64 of its f32 bytes, as stored: f16 bytes.
function f16Bytes(b64) {
  const buf = Buffer.from(b64, "base64");
  const out = new Uint8Array((buf.length / 4) * 2);
  for (let i = 0; i < buf.length / 4; i++) {
    const h = toF16(buf.readFloatLE(i * 4));
    out[2 * i] = h & 0xff;
    out[2 * i + 1] = h >>> 8;
  }
  return out;
}

const values = (store, ns, inside = true) =>
  new Map([...store.data].filter(([k]) => k.startsWith(`engram/${ns}/`) === inside));

async function readable(memory) {
  const stats = await memory.stats();
  // The handle's own counters, not the memory's.
  delete stats.model;
  delete stats.round_trips;
  return {
    messages: await memory.messages(),
    facts: await memory.facts(),
    entities: await memory.entities(),
    view: await memory.view(),
    stats,
  };
}

test("erase of a message leaves no byte of it in the store or the export, the other namespace untouched", async () => {
  const store = memoryStore();
  const other = await open("other", store);
  await converse(other);
  const memory = await open("alice", store);
  await converse(memory);
  const untouched = values(store, "alice", false);
  const facts = (await memory.facts()).filter((f) => f.sentence.includes(SECRET));
  const names = (await memory.entities()).filter((e) => e.name.includes(SECRET));
  assert.ok(facts.length > 0, "the offline model noted the first message");
  // Embeddings are stored as base64 of little-endian f32s, as listed.
  const vectors = [...facts, ...names].map((x) => x.embedding).filter((v) => v);

  const erased = await memory.erase({ message: 1 });
  assert.deepEqual(erased.messages, [1]);
  for (const f of facts) assert.ok(erased.facts.includes(f.id));
  for (const e of names) assert.ok(erased.entities.includes(e.id));
  const export_ = await memory.export();
  assert.ok(vectors.length > 0);
  for (const v of [...values(store, "alice").values()]) {
    assert.ok(!holds(v, SECRET), "the secret is still stored");
    for (const b of vectors) assert.ok(!holds(v, f16Bytes(b)), "an erased embedding is still stored");
  }
  assert.ok(!export_.includes(SECRET), "the secret is still exported");
  for (const b of vectors) assert.ok(!export_.includes(b), "an erased embedding is still exported");
  // The other namespace still holds its own copy of the secret (so the
  // search above can find what it looks for).
  assert.ok([...values(store, "other").values()].some((v) => holds(v, SECRET)));
  const [first] = await memory.messages();
  assert.equal(first.erased, true);
  assert.equal(first.content, "");
  assert.deepEqual(values(store, "alice", false), untouched);
  const again = await open("alice", store);
  assert.deepEqual(await readable(again), await readable(memory));
  const why = await memory.explain({ fact: facts[0].id });
  assert.match(why.summary, /erased/);
  for (const m of [memory, other, again]) m.free();
});

test("erase of an unknown id or kind rejects with InvalidInputError and changes nothing", async () => {
  const store = memoryStore();
  const memory = await open("alice", store);
  await converse(memory);
  const before = new Map(store.data);
  for (const what of [{ message: 999 }, { fact: 0 }, { episode: 999 }, { entity: 999 }, { passage: 1 }, {}, { message: -1 }]) {
    await assert.rejects(memory.erase(what), InvalidInputError, JSON.stringify(what));
  }
  assert.deepEqual(store.data, before);
  memory.free();
});

test("a store that fails during erase leaves the memory and the store as they were", async () => {
  const inner = memoryStore();
  let fail = false;
  const store = {
    ...inner,
    writeIf(guard, expected, writes) {
      return fail ? Promise.reject(new Error("disk full")) : inner.writeIf(guard, expected, writes);
    },
  };
  const memory = await open("alice", store);
  await converse(memory);
  const before = new Map(inner.data);
  const read = await readable(memory);
  fail = true;
  await assert.rejects(memory.erase({ message: 1 }), StoreError);
  fail = false;
  assert.deepEqual(inner.data, before);
  assert.deepEqual(await readable(memory), read);
  memory.free();
});

test("erase of an entity takes its facts; destroy removes every key of the namespace", async () => {
  const store = memoryStore();
  const other = await open("other", store);
  await converse(other);
  const untouched = values(store, "alice", false);
  const memory = await open("alice", store);
  await converse(memory);
  const entity = (await memory.entities()).find((e) => e.name.includes(SECRET));
  const facts = (await memory.facts()).filter((f) => f.subject === entity.id || f.object === entity.id);
  const erased = await memory.erase({ entity: entity.id });
  assert.deepEqual(erased.facts, facts.map((f) => f.id).sort((a, b) => a - b));
  for (const v of values(store, "alice").values()) {
    for (const f of facts) assert.ok(!holds(v, f16Bytes(f.embedding)));
  }
  // Names as fields, in the export (the decoded log): the message that
  // said the name stays, the entity is what must go.
  const export_ = await memory.export();
  assert.ok(!export_.includes(`"name":${JSON.stringify(entity.name)}`));
  for (const f of facts) assert.ok(!export_.includes(f.embedding));
  await memory.destroy();
  assert.equal(values(store, "alice").size, 0);
  assert.deepEqual(new Map(store.data), untouched);
  assert.deepEqual(await memory.messages(), []);
  memory.free();
  other.free();
});
