// engramMiddleware through the AI SDK's useChat message flow: a chat object
// built on the SDK's own AbstractChat (the machinery under useChat), sending
// through DefaultChatTransport to an in-process route handler that reads the
// request body as a useChat route does (messages, trigger, messageId), runs
// streamText over a mock model wrapped with engramMiddleware and answers
// with toUIMessageStreamResponse. The prompt is what the screen shows: after
// a regenerate the memory's view holds exactly the chat's messages (the new
// answer, not the old one, which stays stored as an alternative); an erased
// thread is gone from threads() and a new chat there starts empty. Run by
// scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";

import { AbstractChat, DefaultChatTransport, convertToModelMessages, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from "ai";
import { MockLanguageModelV2, simulateReadableStream } from "ai/test";
import { Memory, memoryStore } from "engram";
import { engramMiddleware } from "engram/ai-sdk";

const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };

/** The state useChat keeps (React's, without React): the SDK calls these. */
class ChatState {
  constructor(messages = []) {
    this.messages = messages;
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage = (m) => {
    this.messages = this.messages.concat(m);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (i, m) => {
    this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

/** A chat as useChat drives it. */
class Chat extends AbstractChat {
  constructor({ messages, ...init }) {
    super({ ...init, state: new ChatState(messages) });
  }
}

/** One streamed model step: text, or tool calls. */
function step({ text, calls = [] }) {
  const chunks = [{ type: "stream-start", warnings: [] }];
  if (text) chunks.push({ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: text }, { type: "text-end", id: "t" });
  for (const c of calls) chunks.push({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: JSON.stringify(c.input) });
  chunks.push({ type: "finish", finishReason: calls.length ? "tool-calls" : "stop", usage });
  return { stream: simulateReadableStream({ chunks }) };
}

const weather = tool({
  description: "The weather in a city",
  inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
  execute: async ({ city }) => ({ city, celsius: city === "Oslo" ? 4 : 20 }),
});

/**
 * A memory, a mock model answering with `steps` in order, and a route
 * handler as an app writes it: the request body's last message id as the
 * client id, its trigger passed on (`passTrigger`), the chat's id as thread.
 */
async function app(steps, { passTrigger = true } = {}) {
  const memory = await Memory.open({ namespace: "chat", store: memoryStore() });
  const model = new MockLanguageModelV2({ doStream: async () => step(steps.shift()) });
  const bodies = [];
  const route = async (request) => {
    const body = await request.json();
    bodies.push(body);
    const { messages, trigger, id } = body;
    const middleware = engramMiddleware({
      memory,
      thread: id,
      clientId: messages.at(-1).id,
      ...(passTrigger ? { trigger } : {}),
    });
    const result = streamText({
      model: wrapLanguageModel({ model, middleware }),
      messages: convertToModelMessages(messages),
      tools: { weather },
      stopWhen: stepCountIs(4),
    });
    return result.toUIMessageStreamResponse();
  };
  const chat = (id) =>
    new Chat({
      id,
      transport: new DefaultChatTransport({ api: "http://app.test/api/chat", fetch: async (url, init) => route(new Request(url, init)) }),
    });
  return { memory, model, chat, bodies };
}

/** What the screen shows: each UI message's role and text, tool calls by id. */
function screen(chat) {
  return chat.messages.map((m) => ({
    role: m.role,
    text: m.parts
      .filter((p) => p.type === "text")
      .map((p) => p.text)
      .join(""),
    calls: m.parts.filter((p) => p.type.startsWith("tool-")).map((p) => p.toolCallId),
  }));
}

/** What the model's prompt holds for the thread: the view, one entry per turn message (a tool run joined as the screen joins it). */
async function prompt(memory, thread) {
  const out = [];
  for (const m of await memory.render("openai", { thread })) {
    if (m.role === "system") continue;
    const last = out.at(-1);
    if (m.role === "user" || last?.role !== "assistant") {
      out.push({ role: m.role, text: m.content, calls: (m.tool_calls ?? []).map((c) => c.id) });
    } else if (m.role === "assistant") {
      last.text += m.content;
      last.calls.push(...(m.tool_calls ?? []).map((c) => c.id));
    }
  }
  return out;
}

const lastUserText = (call) =>
  call.prompt
    .filter((m) => m.role !== "system")
    .map((m) => `${m.role}: ${m.content.map((p) => p.text ?? p.toolCallId).join("")}`);

for (const passTrigger of [true, false]) {
  const how = passTrigger ? "with the request's trigger" : "without the trigger (the question already held)";
  test(`useChat regenerate ${how}: the view is the screen, the old answer an explainable alternative`, async () => {
    const { memory, model, chat, bodies } = await app([{ text: "Porto." }, { text: "Lisbon." }, { text: "Yes, since 1255." }], { passTrigger });
    const c = chat("offsite");
    await c.sendMessage({ text: "Which city did we pick?" });
    assert.deepEqual(screen(c), [
      { role: "user", text: "Which city did we pick?", calls: [] },
      { role: "assistant", text: "Porto.", calls: [] },
    ]);
    assert.deepEqual(await prompt(memory, "offsite"), screen(c));

    await c.regenerate();
    assert.equal(bodies.at(-1).trigger, "regenerate-message");
    assert.deepEqual(screen(c), [
      { role: "user", text: "Which city did we pick?", calls: [] },
      { role: "assistant", text: "Lisbon.", calls: [] },
    ]);
    // The model answered the question, not its own old answer.
    assert.deepEqual(lastUserText(model.doStreamCalls[1]), ["user: Which city did we pick?"]);
    assert.deepEqual(await prompt(memory, "offsite"), screen(c));
    const stored = await memory.messages();
    assert.deepEqual(
      stored.map((m) => [m.role, m.content, m.replaced_by ?? null]),
      [
        ["user", "Which city did we pick?", null],
        ["assistant", "Porto.", 3],
        ["assistant", "Lisbon.", null],
      ],
    );
    assert.equal(stored[2].replaces, 1);
    const old = await memory.explain({ message: 2 });
    assert.equal(old.in_view, false);
    assert.equal(old.replaced_by, 3);
    assert.match(old.summary, /alternative/);
    assert.deepEqual((await memory.explain({ message: 3 })).alternatives, [2]);

    // The conversation goes on from what the screen shows.
    await c.sendMessage({ text: "Is it the capital?" });
    assert.deepEqual(lastUserText(model.doStreamCalls[2]), [
      "user: Which city did we pick?",
      "assistant: Lisbon.",
      "user: Is it the capital?",
    ]);
    assert.deepEqual(await prompt(memory, "offsite"), screen(c));
    assert.equal((await memory.messages()).length, 5);
    memory.free();
  });
}

test("useChat regenerate that gets the same answer adds nothing; one back to a replaced answer shows it again", async () => {
  const { memory, chat } = await app([{ text: "Red." }, { text: "Red." }, { text: "Blue." }, { text: "Red." }]);
  const c = chat("colours");
  await c.sendMessage({ text: "Name a colour." });
  await c.regenerate(); // the same answer: a retry, nothing added
  assert.equal((await memory.messages()).length, 2);
  assert.deepEqual(await prompt(memory, "colours"), screen(c));
  await c.regenerate(); // Blue replaces Red
  await c.regenerate(); // Red again: shown again, Blue its alternative
  assert.deepEqual(screen(c).at(-1).text, "Red.");
  assert.deepEqual(await prompt(memory, "colours"), screen(c));
  assert.deepEqual(
    (await memory.messages()).map((m) => [m.content, m.replaced_by ?? null]),
    [
      ["Name a colour.", null],
      ["Red.", 3],
      ["Blue.", 4],
      ["Red.", null],
    ],
  );
  memory.free();
});

test("useChat regenerate of a tool run: the whole run is replaced, the new run shown", async () => {
  const { memory, chat } = await app([
    { calls: [{ id: "call-1", name: "weather", input: { city: "Oslo" } }] },
    { text: "4 °C in Oslo." },
    { calls: [{ id: "call-2", name: "weather", input: { city: "Porto" } }] },
    { text: "Oh, you meant Porto: 20 °C." },
  ]);
  const c = chat("trip");
  await c.sendMessage({ text: "Weather where we are going?" });
  assert.deepEqual(screen(c).at(-1), { role: "assistant", text: "4 °C in Oslo.", calls: ["call-1"] });
  assert.deepEqual(await prompt(memory, "trip"), screen(c));
  await c.regenerate();
  assert.deepEqual(screen(c), [
    { role: "user", text: "Weather where we are going?", calls: [] },
    { role: "assistant", text: "Oh, you meant Porto: 20 °C.", calls: ["call-2"] },
  ]);
  assert.deepEqual(await prompt(memory, "trip"), screen(c));
  const stored = await memory.messages();
  assert.deepEqual(
    stored.map((m) => [m.role, m.replaced_by ?? null]),
    [
      ["user", null],
      ["assistant", 5],
      ["tool", 5],
      ["assistant", 5],
      ["assistant", null],
      ["tool", null],
      ["assistant", null],
    ],
  );
  assert.deepEqual((await memory.explain({ message: 5 })).alternatives, [2, 3, 4]);
  memory.free();
});

test("useChat in a thread, then erase({ thread }): gone from threads(), and a new chat there starts empty", async () => {
  const { memory, model, chat } = await app([{ text: "Noted." }, { text: "Hello again." }, { text: "Kept." }]);
  const doomed = chat("doomed");
  await doomed.sendMessage({ text: "My locker code is 4411." });
  const other = chat("other");
  await other.sendMessage({ text: "Keep this one." });
  assert.deepEqual(
    (await memory.threads()).map((t) => t.thread),
    ["doomed", "other"],
  );
  await memory.erase({ thread: "doomed" });
  assert.deepEqual(
    (await memory.threads()).map((t) => t.thread),
    ["other"],
  );
  assert.deepEqual(await prompt(memory, "doomed"), []);
  // The same chat id again, as a new chat: its prompt is its own message only.
  const again = chat("doomed");
  await again.sendMessage({ text: "Hi." });
  assert.deepEqual(lastUserText(model.doStreamCalls.at(-1)), ["user: Hi."]);
  assert.deepEqual(await prompt(memory, "doomed"), screen(again));
  assert.ok(!JSON.stringify(await memory.render("openai", { thread: "doomed" })).includes("4411"));
  // The other chat is as it was.
  assert.deepEqual(await prompt(memory, "other"), screen(other));
  memory.free();
});
