// hitText through the npm package (Node): search clips a hit's text at about
// 1,000 tokens, hitText gives the whole text (equal for a short one), a
// missing item rejects with InvalidInputError, and the call is queued like
// the others. Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";

import { InvalidInputError, Memory, memoryStore } from "engram";

test("hitText gives a clipped hit's whole text", async () => {
  let now = 1_764_000_000_000;
  const clock = { now: () => (now += 60_000) };
  const memory = await Memory.open({ namespace: "hits", store: memoryStore(), clock });
  const long = Array.from({ length: 600 }, (_, i) => `Lisbon offsite note ${i} about the venue and catering.`).join(" ");
  await memory.addMessage({ role: "user", content: long });
  // Other messages, so the query's words are rare among those in view.
  for (const content of ["Ana moved to Porto last spring.", "Carol prefers green tea.", "The report is due Friday."]) {
    await memory.addMessage({ role: "user", content });
  }

  const hits = await memory.search("Lisbon offsite venue");
  const hit = hits.find((h) => h.item.kind !== "fact" && h.text.includes("Lisbon"));
  assert.ok(hit, "the long message is a hit");
  assert.ok(hit.text.length < long.length);
  // Queued like the other calls: made together, both resolve in order.
  const [full, again] = await Promise.all([memory.hitText(hit.item), memory.hitText(hit.item)]);
  assert.ok(full.endsWith(long), full.slice(0, 80)); // the whole message ("user: " first)
  assert.ok(full.startsWith(hit.text.replace(/…$/, "")));
  assert.equal(again, full);

  const short = (await memory.search("Ana Porto spring")).find((h) => h.text.includes("Ana moved"));
  assert.equal(await memory.hitText(short.item), short.text);

  await assert.rejects(memory.hitText({ kind: "passage", id: 999_999 }), InvalidInputError);
  memory.free();
});
