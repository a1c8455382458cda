// Message metadata and search filters through the npm package (Node): a
// message's metadata comes back from messages(), export and import; a
// search's filter keeps only what it names (metadata, kinds, time); bad
// metadata or a bad filter rejects with InvalidInputError and writes
// nothing. Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";

import { InvalidInputError, Memory, memoryStore } from "engram";

async function opened(namespace, store = memoryStore()) {
  let now = 1_764_000_000_000;
  const clock = { now: () => (now += 60_000) };
  return Memory.open({ namespace, store, clock });
}

test("metadata is kept, returned, exported and matched by a search filter", async () => {
  const memory = await opened("meta");
  await memory.addMessage({ role: "user", content: "Ana moved to Porto last spring.", metadata: { source: "slack", team: { name: "core" } } });
  await memory.addMessage({ role: "user", content: "Carol found a tea shop in Porto.", metadata: { source: "email" } });
  for (const content of ["The report is due Friday.", "Bikes need new tyres.", "Dinner is at eight."]) {
    await memory.addMessage({ role: "user", content });
  }
  const messages = await memory.messages();
  assert.deepEqual(messages[0].metadata, { source: "slack", team: { name: "core" } });
  assert.deepEqual(messages[1].metadata, { source: "email" });
  assert.equal(messages[2].metadata, undefined);

  const all = await memory.search("Porto");
  assert.ok(all.some((h) => h.text.includes("Ana")) && all.some((h) => h.text.includes("Carol")));
  const slack = await memory.search("Porto", { filter: { metadata: { source: "slack" } } });
  assert.ok(slack.length > 0 && slack.every((h) => !h.text.includes("Carol")), JSON.stringify(slack));
  for (const h of slack) {
    assert.ok(h.sources.length > 0 || h.item.kind === "fact");
    for (const id of h.sources) assert.equal(messages[id - 1].metadata?.source, "slack");
  }
  const nested = await memory.search("Porto", { filter: { metadata: { team: { name: "core" } } } });
  assert.ok(nested.some((h) => h.text.includes("Ana")));
  const onlyMessages = await memory.search("Porto", { filter: { kinds: ["message"] } });
  assert.ok(onlyMessages.length > 0 && onlyMessages.every((h) => h.item.kind === "message"));
  const later = await memory.search("Porto", { filter: { from: messages[1].at } });
  assert.ok(later.every((h) => !h.text.includes("Ana")), JSON.stringify(later));
  assert.deepEqual(await memory.search("Porto", { filter: { thread: "elsewhere" } }), []);

  const copy = await opened("copy");
  await copy.import(await memory.export());
  assert.deepEqual(await copy.messages(), messages);
  memory.free();
  copy.free();
});

test("bad metadata or a bad filter rejects and writes nothing", async () => {
  const memory = await opened("bad");
  await memory.addMessage({ role: "user", content: "Ana moved to Porto.", metadata: { source: "slack" } });
  const before = await memory.export();
  for (const metadata of ["text", [1, 2], { big: "x".repeat(5_000) }]) {
    await assert.rejects(memory.addMessage({ role: "user", content: "Hello.", metadata }), InvalidInputError);
  }
  for (const filter of [{ kinds: ["episode"] }, { threads: ["a"] }, { from: 2, to: 1 }, { metadata: "slack" }]) {
    await assert.rejects(memory.search("Porto", { filter }), InvalidInputError, JSON.stringify(filter));
  }
  assert.equal(await memory.export(), before);
  memory.free();
});
