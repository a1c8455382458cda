// engram/langchain under the real langchain createAgent (langchain and
// @langchain/core pinned in this folder's package-lock.json), with a
// scripted chat model that records every input: an agent run with a tool
// call whose model input is engram's view; a fact said in an earlier thread
// in the model's input (a system message) on the turn that asks for it; the
// exchange stored once, a second invoke on the returned state storing only
// the new messages. Run by check.sh.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { createAgent, createMiddleware, tool } from "langchain";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage } from "@langchain/core/messages";
import { z } from "zod";

const JS = process.env.ENGRAM_JS;
const { Memory, memoryStore } = await import(pathToFileURL(`${JS}/node.js`).href);
const { engramMiddleware, viewMessages, newMessages } = await import(pathToFileURL(`${JS}/src/langchain.js`).href);
const { InvalidInputError } = await import(pathToFileURL(`${JS}/src/errors.js`).href);

const HOUR = 3_600_000;

/** Answers from a script; records the messages of every call. */
class ScriptedChat extends BaseChatModel {
  constructor(script) {
    super({});
    this.script = [...script];
    this.inputs = [];
  }
  _llmType() {
    return "scripted";
  }
  bindTools() {
    return this;
  }
  async _generate(messages) {
    this.inputs.push(messages.map((m) => ({ type: m._getType(), id: m.id, content: m.content, tool_calls: m.tool_calls, tool_call_id: m.tool_call_id })));
    const message = this.script.shift();
    if (!message) throw new Error("the script ran out");
    return { generations: [{ message, text: typeof message.content === "string" ? message.content : "" }] };
  }
}

const weather = tool(async ({ city }) => `Sunny and 24 C in ${city}.`, {
  name: "weather",
  description: "The weather in a city.",
  schema: z.object({ city: z.string() }),
});

async function memoryWithAnEarlierThread() {
  const clock = { ms: 1_764_000_000_000 };
  const memory = await Memory.open({ namespace: "lc", store: memoryStore(), clock: { now: () => clock.ms } });
  for (const [role, content] of [
    ["user", "My sister Zorblax lives in Utrecht and works as a marine biologist."],
    ["assistant", "Noted: Zorblax, your sister, lives in Utrecht."],
  ]) {
    await memory.addMessage({ role, content, thread: "earlier" });
    clock.ms += 60_000;
  }
  clock.ms += 48 * HOUR;
  await memory.maintain({ thread: "earlier" });
  return { memory, clock };
}

const live = async (memory, thread) =>
  (await memory.messages()).filter((m) => m.thread === thread && !m.erased).map((m) => [m.role, m.content]);

test("the model sees engram's view (recall and the tool call included); each exchange is stored once", async () => {
  const { memory, clock } = await memoryWithAnEarlierThread();
  const model = new ScriptedChat([
    new AIMessage({ content: "", tool_calls: [{ name: "weather", args: { city: "Utrecht" }, id: "call_1", type: "tool_call" }] }),
    new AIMessage("Zorblax lives in Utrecht, where it is sunny today."),
    new AIMessage("You are welcome."),
  ]);
  const agent = createAgent({ model, tools: [weather], middleware: [engramMiddleware(memory, { thread: "chat", createMiddleware })] });
  const question = "Where does my sister Zorblax live, and what is the weather there?";
  let state = await agent.invoke({ messages: [{ role: "user", content: question }] });
  clock.ms += 60_000;
  assert.equal(state.messages.at(-1).content, "Zorblax lives in Utrecht, where it is sunny today.");

  // (b) Each model call's input is engram's view at that point: every id
  // names engram's item, the earlier thread's fact in a system message.
  assert.equal(model.inputs.length, 2);
  const [first, second] = model.inputs;
  assert.ok(first.every((m) => String(m.id).startsWith("engram-")), JSON.stringify(first.map((m) => m.id)));
  assert.deepEqual(first.filter((m) => m.type === "human").map((m) => m.content), [question]);
  const system = first.filter((m) => m.type === "system").map((m) => m.content).join("\n");
  assert.match(system, /Utrecht/, JSON.stringify(first));
  assert.equal(first.at(-1).content, question);
  assert.equal(first.at(-2).type, "system");
  assert.match(first.at(-2).content, /Recalled from long-term memory/);
  assert.match(first.at(-2).content, /Zorblax lives in Utrecht/);

  // (a) The second call's input holds the call and its output as engram rendered them.
  assert.ok(second.every((m) => String(m.id).startsWith("engram-")), JSON.stringify(second.map((m) => m.id)));
  const call = second.find((m) => m.type === "ai" && m.tool_calls?.length);
  assert.ok(call, JSON.stringify(second));
  assert.deepEqual(call.tool_calls.map((c) => [c.id, c.name, c.args]), [["call_1", "weather", { city: "Utrecht" }]]);
  const output = second.find((m) => m.type === "tool");
  assert.equal(output.content, "Sunny and 24 C in Utrecht.");
  assert.equal(output.tool_call_id, "call_1");
  assert.match(output.id, /^engram-[0-9]+$/);

  // (c) Stored once each: the question, the call, its output, the answer.
  assert.deepEqual(await live(memory, "chat"), [
    ["user", question],
    ["assistant", ""],
    ["tool", "Sunny and 24 C in Utrecht."],
    ["assistant", "Zorblax lives in Utrecht, where it is sunny today."],
  ]);
  const clientIds = (await memory.messages()).filter((m) => m.thread === "chat").map((m) => m.client_id);
  assert.ok(clientIds.every((id) => typeof id === "string" && id.startsWith("langchain:chat:")), JSON.stringify(clientIds));
  assert.equal(new Set(clientIds).size, clientIds.length);
  // The state ends as engram's view plus the model's last message.
  const view = await viewMessages(memory, "chat");
  assert.deepEqual(state.messages.map((m) => m.content), view.map((m) => m.content));

  // A next turn from the returned state stores only the new exchange.
  const before = (await memory.messages()).length;
  state = await agent.invoke({ messages: [...state.messages, { role: "user", content: "Thanks!" }] });
  assert.equal(state.messages.at(-1).content, "You are welcome.");
  const kept = await live(memory, "chat");
  assert.equal(kept.length, 6, JSON.stringify(kept));
  assert.deepEqual(kept.slice(-2), [
    ["user", "Thanks!"],
    ["assistant", "You are welcome."],
  ]);
  assert.equal((await memory.messages()).length, before + 2);
  assert.equal(JSON.stringify(kept).split(question).length - 1, 1);
  assert.equal(model.inputs.length, 3);
  assert.equal(model.inputs[2].at(-1).content, "Thanks!");
});

test("newMessages skips engram's and system messages; a message it cannot keep throws", () => {
  assert.deepEqual(
    newMessages(
      [
        { type: "system", content: "Be brief.", id: "s1" },
        { type: "human", content: "Seen.", id: "engram-3" },
        { type: "human", content: [{ type: "text", text: "New." }], id: "u1" },
      ],
      "t",
    ),
    [{ role: "user", content: "New.", clientId: "langchain:t:u1", thread: "t" }],
  );
  assert.throws(() => newMessages([{ type: "human", content: "No id." }]), InvalidInputError);
  assert.throws(() => newMessages([{ type: "human", content: [{ type: "image_url", image_url: "x" }], id: "u2" }]), InvalidInputError);
  assert.throws(() => engramMiddleware({ render() {}, addMessage() {} }, { thread: "t" }), InvalidInputError);
});
