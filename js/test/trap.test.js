// What a call that fails inside the WebAssembly module does: a bad size is
// refused before it reaches an allocation (InvalidInputError), and a trap
// (a WebAssembly.RuntimeError) rejects the call's promise with a
// TrappedError instead of escaping as an uncaught exception; every later
// call of that module instance rejects too. Its own file: a trap makes the
// process's module instance unusable for the tests after it.

import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory, functionModel, memoryStore, InvalidInputError, TrappedError } from "engram";

const T0 = 1_772_445_600_000;
const clock = { now: () => T0 };
const model = () =>
  functionModel((req) => {
    switch (req.task) {
      case "segment":
        return { boundary: 0.1 };
      case "split":
        return { parts: ["message"] };
      case "resolve":
        return { same_as: null };
      case "reconcile":
        return { judgments: [] };
      case "relevance":
        return { relevant: [] };
      case "distill":
        return { kept: [] };
      default:
        return { facts: [] };
    }
  });

const uncaught = [];
process.on("uncaughtException", (e) => uncaught.push(e));
process.on("unhandledRejection", (e) => uncaught.push(e));

test("a search limit of 1e9 rejects with InvalidInputError naming the range, and the memory goes on", async () => {
  const memory = await Memory.open({ namespace: "limits", model: model(), store: memoryStore(), clock });
  await memory.addMessage({ role: "user", content: "Ana moved to Porto last spring" });
  for (const options of [{ limit: 1e9 }, { limit: 0 }, { limit: 1001 }, { budget_tokens: 0 }]) {
    const err = await memory.search("Ana", options).then(
      () => assert.fail(`accepted ${JSON.stringify(options)}`),
      (e) => e,
    );
    assert.ok(err instanceof InvalidInputError, `${JSON.stringify(options)}: ${err}`);
    assert.match(err.message, /\.\.=/);
  }
  // Past what a wasm32 usize holds: refused by the conversion, as bad input too.
  await assert.rejects(memory.search("Ana", { limit: 2 ** 53 }), InvalidInputError);
  assert.ok(Array.isArray(await memory.search("Ana", { limit: 1000 })));
  await memory.close();
});

test("a user message while a tool call waits rejects naming abandonToolCall; abandonToolCall closes the call", async () => {
  const memory = await Memory.open({ namespace: "abandon", model: model(), store: memoryStore(), clock });
  await memory.addMessage({ role: "user", content: "Find me a hotel." });
  await memory.addMessage({ role: "assistant", content: "", tool_calls: [{ id: "h1", name: "hotels", arguments: "{}" }] });
  await assert.rejects(
    memory.addMessage({ role: "user", content: "Never mind." }),
    (e) => e instanceof InvalidInputError && /abandonToolCall/.test(e.message),
  );
  const added = await memory.abandonToolCall("h1");
  assert.equal(added.message, 3);
  await memory.addMessage({ role: "user", content: "Never mind." });
  const rendered = await memory.render("openai");
  assert.deepEqual(
    rendered.map((m) => m.role),
    ["user", "assistant", "tool", "user"],
  );
  assert.equal(rendered[2].tool_call_id, "h1");
  await assert.rejects(memory.abandonToolCall("h1"), InvalidInputError);
  await memory.close();
});

test("a trap inside the module rejects the call with TrappedError; every later call and open rejects too", async () => {
  const store = memoryStore();
  const memory = await Memory.open({ namespace: "trap", model: model(), store, clock });
  const other = await Memory.open({ namespace: "other", model: model(), store, clock });
  await memory.addMessage({ role: "user", content: "Kept before the trap." });
  const queued = memory.stats();
  const trap = memory[Symbol.for("engram.trapForTests")]();
  const after = memory.view();
  const err = await trap.then(
    () => assert.fail("a trap must reject"),
    (e) => e,
  );
  assert.ok(err instanceof TrappedError, String(err));
  assert.equal(err.code, "trapped");
  assert.ok(err.cause instanceof WebAssembly.RuntimeError, String(err.cause));
  assert.equal((await queued).messages, 1, "the call queued before the trap settled normally");
  // The call queued behind it, later calls on both handles and a new open
  // reject with the poisoned module's error.
  await assert.rejects(after, (e) => e instanceof TrappedError && /open the memory again/.test(e.message));
  await assert.rejects(memory.addMessage({ role: "user", content: "after" }), TrappedError);
  await assert.rejects(other.view(), TrappedError);
  await assert.rejects(Memory.open({ namespace: "trap", model: model(), store, clock }), TrappedError);
  memory.free();
  other.free();
  // What was committed before the trap is in the store.
  assert.ok((await store.list("")).some((k) => k.includes("trap")));
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(uncaught, [], "nothing escaped as an uncaught exception");
});
