// The installed package from plain JavaScript on Node: a memory over
// memoryStore with no model (the built-in offline model), messages in, a
// view out. Run by check.sh.
import assert from "node:assert/strict";
import { Memory, memoryStore } from "engram";

const memory = await Memory.open({ namespace: "alice", store: memoryStore() });
try {
  await memory.addMessage({ role: "user", content: "I'm Ana. Let's plan the Lisbon offsite for fifteen people." });
  await memory.addMessage({ role: "assistant", content: "Gladly. What is the budget?" });
  await memory.addMessage({ role: "user", content: "About 20,000 euros, and we fly on May 12." });
  const view = await memory.view();
  const messages = await memory.render("openai");
  assert.equal(messages.length, view.items.length);
  assert.ok(messages.some((m) => m.content.includes("20,000 euros")));
  const stats = await memory.stats();
  assert.equal(stats.messages, 3);
  assert.deepEqual(stats.model.failed, {}, "the offline model never fails");
  console.log(`use.mjs: ${stats.messages} messages, view ${view.tokens} of ${view.ceiling} tokens`);
} finally {
  await memory.close();
}
