// engram/agents under the real @openai/agents Runner (pinned in this
// folder's package-lock.json), with a scripted Model that records every
// input: five turns with a tool call; a fact from an earlier thread in the
// model's input on the turn that asks for it; the items round-trip; a
// retried turn stored once (its reply a page of ids back too); popItem;
// clearSession. Run by check.sh.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { Agent, Usage, run, setTracingDisabled, tool } from "@openai/agents";
import { z } from "zod";

const JS = process.env.ENGRAM_JS;
const { Memory, memoryStore } = await import(pathToFileURL(`${JS}/node.js`).href);
const { EngramSession } = await import(pathToFileURL(`${JS}/src/agents.js`).href);
const { InvalidInputError } = await import(pathToFileURL(`${JS}/src/errors.js`).href);

setTracingDisabled(true);
const HOUR = 3_600_000;

function reply(n, text) {
  return { type: "message", id: `msg_scripted_${n}`, role: "assistant", status: "completed", content: [{ type: "output_text", text }] };
}

/** Answers from a script (an Error entry is thrown); records each input. */
class ScriptedModel {
  constructor(script) {
    this.script = [...script];
    this.inputs = [];
  }
  async getResponse(request) {
    this.inputs.push(JSON.parse(JSON.stringify(request.input)));
    const step = this.script.shift();
    if (step instanceof Error) throw step;
    return { usage: new Usage(), output: step };
  }
  async *getStreamedResponse() {
    throw new Error("not scripted");
  }
}

const weather = tool({
  name: "weather",
  description: "The weather in a city.",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `Sunny and 24 C in ${city}.`,
});

async function memoryWithAnEarlierThread() {
  const clock = { ms: 1_764_000_000_000 };
  const memory = await Memory.open({ namespace: "agents", store: memoryStore(), clock: { now: () => clock.ms } });
  for (const [role, content] of [
    ["user", "My sister Ana lives in Porto and works as a marine biologist."],
    ["assistant", "Noted: Ana, your sister, lives in Porto."],
  ]) {
    await memory.addMessage({ role, content, thread: "earlier" });
    clock.ms += 60_000;
  }
  clock.ms += 48 * HOUR; // the next user message's sleep seals that thread
  return { memory, clock };
}

const live = async (memory, thread) =>
  (await memory.messages()).filter((m) => m.thread === thread && !m.erased).map((m) => [m.role, m.content]);

async function turn(agent, session, clock, text) {
  const result = await run(agent, text, { session, sessionInputCallback: session.sessionInputCallback });
  clock.ms += 60_000;
  return result.finalOutput;
}

test("five turns with a tool call: recall in the turn's input, stored once, items round-trip", async () => {
  const { memory, clock } = await memoryWithAnEarlierThread();
  const model = new ScriptedModel([
    [reply(1, "Hello! How can I help with the trip?")],
    [{ type: "function_call", id: "fc_scripted_2", callId: "call_w1", name: "weather", arguments: '{"city":"Lisbon"}', status: "completed" }],
    [reply(3, "It is sunny in Lisbon.")],
    [reply(4, "Your sister Ana lives in Porto.")],
    [reply(5, "A train from Lisbon to Porto takes three hours.")],
    [reply(6, "Have a good trip!")],
  ]);
  const agent = new Agent({ name: "planner", instructions: "Plan trips.", model, tools: [weather] });
  const session = new EngramSession(memory, { thread: "trip" });
  const turns = [
    "Hi, I am planning a trip to Portugal.",
    "What is the weather in Lisbon?",
    "Remind me, where does my sister Ana live?",
    "How long is the train from Lisbon there?",
    "Thanks, that is all.",
  ];
  const outputs = [];
  for (const t of turns) outputs.push(await turn(agent, session, clock, t));
  assert.equal(outputs[1], "It is sunny in Lisbon.");
  assert.equal(model.inputs.length, 6);
  const toolCall = JSON.stringify(model.inputs[2]);
  assert.match(toolCall, /function_call/);
  assert.match(toolCall, /Sunny and 24 C in Lisbon\./);
  // The earlier thread's fact: in no input before that thread was sealed,
  // and in the recall block right before the question on the turn that asks.
  assert.doesNotMatch(JSON.stringify(model.inputs[0]), /Porto/);
  const asking = model.inputs[3];
  assert.equal(asking.at(-1).content, turns[2]);
  assert.equal(asking.at(-2).role, "system", JSON.stringify(asking));
  assert.match(asking.at(-2).content, /Recalled from long-term memory/);
  assert.match(asking.at(-2).content, /Porto/);

  const kept = await live(memory, "trip");
  assert.deepEqual(kept.filter(([r]) => r === "user").map(([, c]) => c), turns);
  assert.equal(kept.length, 12, JSON.stringify(kept));

  const items = await session.getItems();
  assert.deepEqual(await session.getItems(2), items.slice(-2));
  const before = await memory.messages();
  await session.addItems(items);
  assert.deepEqual(await memory.messages(), before);
  const calls = items.filter((i) => i.type === "function_call").map((c) => [c.callId, c.name]);
  assert.deepEqual(calls, [["call_w1", "weather"]]);
  const result = items.find((i) => i.type === "function_call_result");
  assert.equal(result.name, "weather");
  await memory.close?.();
});

/**
 * "Hello.", then a turn that fails after its input is stored and is
 * retried (`between` runs after the first turn): each message stored once.
 */
async function retriedTurn(thread, between = async () => {}) {
  const { memory, clock } = await memoryWithAnEarlierThread();
  const model = new ScriptedModel([[reply(1, "Hi!")], new Error("the model timed out"), [reply(2, "Lisbon is lovely in May.")]]);
  const agent = new Agent({ name: "a", model });
  const session = new EngramSession(memory, { thread });
  await turn(agent, session, clock, "Hello.");
  await between(memory);
  await assert.rejects(turn(agent, session, clock, "When should I visit Lisbon?"));
  await turn(agent, session, clock, "When should I visit Lisbon?");
  assert.deepEqual(await live(memory, thread), [
    ["user", "Hello."],
    ["assistant", "Hi!"],
    ["user", "When should I visit Lisbon?"],
    ["assistant", "Lisbon is lovely in May."],
  ]);
  return { memory, clock, model, agent, session };
}

test("a retried turn is stored once", async () => {
  await retriedTurn("retry");
});

test("a retried turn is stored once when the thread's last reply is over a thousand ids back", async () => {
  // Another chat writes 1,200 messages before the failed turn: its input
  // is named by the reply before it, found more than a page of ids back.
  const { memory, clock, model, agent, session } = await retriedTurn("far", async (memory) => {
    for (let batch = 0; batch < 2; batch++) {
      const other = Array.from({ length: 600 }, (_, i) => ({
        role: i % 2 ? "assistant" : "user",
        content: `other chat, message ${batch * 600 + i}`,
        thread: "other",
      }));
      await memory.addMessages(other);
    }
  });
  const ids = (await memory.messages()).filter((m) => m.thread === "far").map((m) => m.id);
  assert.ok(ids[2] - ids[1] > 1000, `the input is ${ids[2] - ids[1]} ids after the reply`);
  // The same words after another reply are a new message.
  model.script.push([reply(3, "Still May.")]);
  await turn(agent, session, clock, "When should I visit Lisbon?");
  const asked = (await live(memory, "far")).filter(([r, c]) => r === "user" && c === "When should I visit Lisbon?");
  assert.equal(asked.length, 2);
});

test("popItem removes only the last message; clearSession erases the thread", async () => {
  const { memory } = await memoryWithAnEarlierThread();
  const session = new EngramSession(memory, { thread: "pop" });
  await session.addItems([
    { role: "user", content: "First question." },
    { type: "message", role: "assistant", id: "msg_a1", status: "completed", content: [{ type: "output_text", text: "First answer." }] },
    { role: "user", content: "Second question." },
    { type: "message", role: "assistant", id: "msg_a2", status: "completed", content: [{ type: "output_text", text: "Second answer." }] },
  ]);
  const popped = await session.popItem();
  assert.equal(popped.content[0].text, "Second answer.");
  assert.deepEqual(await live(memory, "pop"), [
    ["user", "First question."],
    ["assistant", "First answer."],
    ["user", "Second question."],
  ]);
  assert.ok((await memory.threads()).some((t) => t.thread === "pop"));
  await session.clearSession();
  assert.deepEqual(await live(memory, "pop"), []);
  assert.ok(!(await memory.threads()).some((t) => t.thread === "pop"), "the erased thread is gone from threads()");
  assert.deepEqual((await session.getItems()).filter((i) => i.role === "user"), []);
});

test("a bad item throws and adds nothing", async () => {
  const { memory } = await memoryWithAnEarlierThread();
  const session = new EngramSession(memory, { thread: "bad" });
  const before = await memory.messages();
  await assert.rejects(session.addItems([{ role: "user", content: "Fine." }, { type: "web_search_call", id: "ws_1" }]), InvalidInputError);
  await assert.rejects(session.addItems([{ role: "user", content: [{ type: "input_image", image: "x" }] }]), InvalidInputError);
  assert.deepEqual(await memory.messages(), before);
});
