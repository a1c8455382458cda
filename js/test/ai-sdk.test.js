// engram/ai-sdk against the AI SDK's own mock models (ai/test): aiSdkModel
// answers every task of the sample replay through a MockLanguageModelV2
// (generateObject with the task's schema) and embeds through a
// MockEmbeddingModelV2, giving the same memory as the offline model itself;
// errors and aborts map as openAIModel's do; engramMiddleware over
// generateText and streamText adds each turn to the memory and the mock sees
// the memory's view. Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { generateText, streamText, wrapLanguageModel, tool, stepCountIs, jsonSchema } from "ai";
import { MockEmbeddingModelV2, MockLanguageModelV2, simulateReadableStream } from "ai/test";
import { Memory, ModelError, memoryStore, offlineModel } from "engram";
import { aiSdkModel, engramMiddleware, toAiSdkPrompt } from "engram/ai-sdk";

const SAMPLE = JSON.parse(readFileSync(new URL("../../examples/sample/conversation.json", import.meta.url), "utf8"));
const CONFIG = { ceiling_tokens: 700, recall_budget_tokens: 150, passage_tokens: 80 };
const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
const answer = (text) => ({ content: [{ type: "text", text }], finishReason: "stop", usage, warnings: [] });

/**
 * The task an answer schema is for (ai 5's Output.object drops the schema's
 * name): by its properties; note and trace both answer `facts`, trace's
 * facts name episodes.
 */
function taskOfSchema(schema) {
  const keys = Object.keys(schema.properties ?? {}).join(",");
  const byKey = { boundary: "segment", same_as: "resolve", judgments: "reconcile", parts: "split", "parts,when": "split", relevant: "relevance", kept: "distill" };
  if (keys === "facts") return schema.properties.facts.items?.required?.includes("episodes") ? "trace" : "note";
  return byKey[keys];
}

/** The engram request a structured-output call carries (system, content, the schema, by name from ai 6 on). */
function requestOf(options) {
  const [system, user] = options.prompt;
  assert.equal(system.role, "system");
  assert.equal(user.role, "user");
  assert.equal(options.responseFormat?.type, "json");
  return {
    task: options.responseFormat.name?.replace(/^engram_/, "") ?? taskOfSchema(options.responseFormat.schema),
    system: system.content,
    content: user.content.map((p) => p.text).join(""),
    schema: JSON.stringify(options.responseFormat.schema),
    attempt: 1,
  };
}

/** A mock language model answering engram's tasks with the offline model's rules. */
function offlineMock() {
  const offline = offlineModel();
  return new MockLanguageModelV2({ doGenerate: async (options) => answer(await offline.complete(requestOf(options))) });
}

/** A mock embedding model giving the offline embedder's vectors. */
function embeddingMock() {
  const offline = offlineModel();
  return new MockEmbeddingModelV2({
    maxEmbeddingsPerCall: 16,
    doEmbed: async ({ values }) => ({ embeddings: (await offline.embed(values)).map((v) => Array.from(v)) }),
  });
}

async function replaySample(model) {
  let now = Date.parse(SAMPLE.messages[0].at);
  const memory = await Memory.open({ namespace: "sample", store: memoryStore(), clock: { now: () => now }, config: CONFIG, model });
  for (const m of SAMPLE.messages) {
    now = Date.parse(m.at);
    await memory.addMessage({ role: m.role, content: m.content, tool_calls: m.tool_calls, tool_call_id: m.tool_call_id });
  }
  return memory;
}

test("aiSdkModel answers every task of the sample through a mock model, with the task's schema, as the offline model would", async () => {
  const language = offlineMock();
  const embedding = embeddingMock();
  const adapter = aiSdkModel({ model: language, embeddingModel: embedding, maxRetries: 0 });
  const asked = [];
  const recording = {
    complete: (request, options) => {
      asked.push(request);
      return adapter.complete(request, options);
    },
    embed: adapter.embed,
  };
  const viaSdk = await replaySample(recording);
  const direct = await replaySample(offlineModel());

  const tasks = new Set(asked.map((r) => r.task));
  for (const task of ["segment", "note", "trace", "split", "relevance", "distill"]) assert.ok(tasks.has(task), `asked ${task}`);
  assert.equal(language.doGenerateCalls.length, asked.length, "one model call per engram request");
  asked.forEach((request, i) => {
    const call = language.doGenerateCalls[i];
    assert.equal(call.responseFormat.type, "json");
    // ai 5's Output.object drops the name; ai 6 and 7 send it.
    if ("name" in call.responseFormat) assert.equal(call.responseFormat.name, `engram_${request.task}`);
    assert.equal(taskOfSchema(call.responseFormat.schema), request.task);
    assert.deepEqual(call.responseFormat.schema, JSON.parse(request.schema));
    assert.equal(call.temperature, 0);
    assert.deepEqual(plain(call.prompt), [
      { role: "system", content: request.system },
      { role: "user", content: [{ type: "text", text: request.content }] },
    ]);
  });
  assert.ok(embedding.doEmbedCalls.length > 0, "embeddings went through the embedding model");
  assert.ok(embedding.doEmbedCalls.every((c) => c.values.length <= 16), "batched by maxEmbeddingsPerCall");

  const stats = await viaSdk.stats();
  assert.deepEqual(stats.model.failed, {});
  assert.ok(stats.facts[0] > 0, "facts were noted");
  assert.deepEqual(await viaSdk.view(), await direct.view());
  assert.deepEqual(await viaSdk.facts(), await direct.facts());
  viaSdk.free();
  direct.free();
});

const request = {
  task: "segment",
  system: "Judge the boundary.",
  content: "New message: hello",
  schema: JSON.stringify({ type: "object", required: ["boundary"], properties: { boundary: { type: "number" } } }),
  attempt: 1,
};

test("aiSdkModel: text the SDK cannot parse goes to the engine's parser; nothing usable is a bad answer", async () => {
  const fenced = aiSdkModel({ model: new MockLanguageModelV2({ doGenerate: answer('Sure:\n```json\n{"boundary":0.7}\n```') }) });
  assert.equal(await fenced.complete(request), 'Sure:\n```json\n{"boundary":0.7}\n```');
  const empty = aiSdkModel({ model: new MockLanguageModelV2({ doGenerate: answer("") }) });
  await assert.rejects(empty.complete(request), (e) => e.code === "bad-answer" && e.cause?.name === "AI_NoObjectGeneratedError");

  // In a memory, the fenced answer is repaired; an empty one degrades the step.
  const memory = await Memory.open({ namespace: "fenced", store: memoryStore(), model: { ...fenced, embed: offlineModel().embed } });
  await memory.addMessage({ role: "user", content: "Let us plan the launch." });
  await memory.addMessage({ role: "assistant", content: "Sure, what date?" });
  await memory.addMessage({ role: "user", content: "Different topic: my cat is ill." });
  assert.deepEqual((await memory.stats()).model.failed, {});
  memory.free();
});

test("aiSdkModel maps failures: a thrown provider error is unavailable, an abort stops the call; strict memories reject with ModelError", async () => {
  const down = new MockLanguageModelV2({
    doGenerate: async () => {
      throw Object.assign(new Error("connect ECONNREFUSED"), { name: "AI_APICallError" });
    },
  });
  const model = aiSdkModel({ model: down, maxRetries: 0 });
  await assert.rejects(model.complete(request), (e) => e.code === "unavailable" && /ECONNREFUSED/.test(e.message) && e.cause?.name === "AI_APICallError");

  const hanging = new MockLanguageModelV2({
    doGenerate: ({ abortSignal }) =>
      new Promise((_, reject) => {
        abortSignal.addEventListener("abort", () => reject(abortSignal.reason), { once: true });
        setTimeout(() => controller.abort(new Error("deadline")), 1); // the deadline passes while the model thinks
      }),
  });
  const controller = new AbortController();
  const pending = aiSdkModel({ model: hanging, maxRetries: 0 }).complete(request, { signal: controller.signal });
  await assert.rejects(pending, (e) => e.code === "unavailable" && /abandoned by the caller \(deadline\)/.test(e.message));
  assert.equal(hanging.doGenerateCalls[0].abortSignal, controller.signal);

  const brokenEmbedder = new MockEmbeddingModelV2({ doEmbed: async ({ values }) => ({ embeddings: values.slice(1).map(() => [1, 0]) }) });
  await assert.rejects(
    aiSdkModel({ model: down, embeddingModel: brokenEmbedder }).embed(["a", "b"]),
    (e) => e.code === "bad-answer" || e.code === "unavailable",
  );

  const memory = await Memory.open({ namespace: "down", store: memoryStore(), model, config: { strict: true } });
  await memory.addMessage({ role: "user", content: "Let us plan the launch." }); // nothing to judge yet: no model call
  await memory.addMessage({ role: "assistant", content: "Sure, what date?" });
  await assert.rejects(
    memory.addMessage({ role: "user", content: "Different topic: my cat is ill." }),
    (e) => e instanceof ModelError && e.cause?.code === "unavailable" && e.cause.cause?.name === "AI_APICallError",
  );
  assert.equal((await memory.messages()).length, 2, "nothing written");
  memory.free();
});

test("aiSdkModel with no embeddingModel embeds with the offline embedder; output: 'text' uses generateText", async () => {
  const offline = offlineModel();
  const model = aiSdkModel({ model: offlineMock() });
  assert.deepEqual(await model.embed(["the launch date"]), await offline.embed(["the launch date"]));

  const texty = new MockLanguageModelV2({ doGenerate: answer('{"boundary":0.1}') });
  assert.equal(await aiSdkModel({ model: texty, output: "text" }).complete(request), '{"boundary":0.1}');
  const call = texty.doGenerateCalls[0];
  assert.equal(call.responseFormat?.type ?? "text", "text");
  assert.match(call.prompt[0].content, /^Judge the boundary\.\n\nAnswer with one JSON object only.*\n\{"type":"object"/s);
});

// ---- the middleware ----------------------------------------------------------

/** A memory on the offline model, and a chat mock that answers "reply N". */
async function chatSetup() {
  const memory = await Memory.open({ namespace: "chat", store: memoryStore() });
  let n = 0;
  const views = []; // the memory's view when the model was called
  const look = async () => views.push(toAiSdkPrompt(await memory.render("openai")));
  const chat = new MockLanguageModelV2({
    doGenerate: async () => {
      await look();
      return answer(`reply ${++n}`);
    },
    doStream: async () => {
      await look();
      n++;
      return {
        stream: simulateReadableStream({
          chunks: [
            { type: "stream-start", warnings: [] },
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: "reply " },
            { type: "text-delta", id: "t", delta: String(n) },
            { type: "text-end", id: "t" },
            { type: "finish", finishReason: "stop", usage },
          ],
        }),
      };
    },
  });
  const model = wrapLanguageModel({ model: chat, middleware: engramMiddleware({ memory }) });
  return { memory, chat, model, views };
}

/** A value as JSON sees it (the SDK leaves `providerOptions: undefined` on parts). */
const plain = (value) => JSON.parse(JSON.stringify(value));
const lastPrompt = (calls) => plain(calls.at(-1).prompt);
const roles = async (memory) => (await memory.messages()).map((m) => `${m.role}: ${m.content}`);

test("engramMiddleware over generateText: each turn's user message and reply go into the memory, the model sees the view", async () => {
  const { memory, chat, model, views } = await chatSetup();
  const history = [];
  for (const text of ["Hi, I am Dana.", "We launch the shop on May 3.", "What did I say the launch date was?"]) {
    history.push({ role: "user", content: text });
    const result = await generateText({ model, system: "You are a concise assistant.", messages: history });
    history.push({ role: "assistant", content: result.text });
    // The prompt the mock received is the memory's view.
    assert.deepEqual(lastPrompt(chat.doGenerateCalls), views.at(-1));
  }
  assert.deepEqual(await roles(memory), [
    "user: Hi, I am Dana.",
    "assistant: reply 1",
    "user: We launch the shop on May 3.",
    "assistant: reply 2",
    "user: What did I say the launch date was?",
    "assistant: reply 3",
  ]);
  // The caller's system prompt became the pinned instructions, first in the view.
  assert.equal(await memory.instructions(), "You are a concise assistant.");
  const prompt = lastPrompt(chat.doGenerateCalls);
  assert.equal(prompt.filter((m) => m.role === "user").length, 3, "the earlier turns come from the memory");
  assert.deepEqual(prompt[0], { role: "system", content: "You are a concise assistant." });
  assert.deepEqual(prompt.at(-1), { role: "user", content: [{ type: "text", text: "What did I say the launch date was?" }] });
  memory.free();
});

test("engramMiddleware over streamText: the reply is added once the stream finishes; only the newest user message is added", async () => {
  const { memory, chat, model, views } = await chatSetup();
  // The client resends the whole conversation every turn (as useChat does), with its own earlier replies.
  const history = [];
  for (const text of ["Plan the launch.", "Make it May 3.", "Remind me of the date."]) {
    history.push({ role: "user", content: text });
    const result = streamText({ model, messages: history });
    let streamed = "";
    for await (const delta of result.textStream) streamed += delta;
    assert.equal(await result.text, streamed);
    history.push({ role: "assistant", content: streamed });
    assert.deepEqual(lastPrompt(chat.doStreamCalls), views.at(-1));
  }
  assert.deepEqual(await roles(memory), [
    "user: Plan the launch.",
    "assistant: reply 1",
    "user: Make it May 3.",
    "assistant: reply 2",
    "user: Remind me of the date.",
    "assistant: reply 3",
  ]);
  assert.equal(await memory.instructions(), null, "no system prompt, no instructions");
  memory.free();
});

test("engramMiddleware: a stream that errors adds no reply; system 'keep' puts the caller's prompt before the view unstored", async () => {
  const memory = await Memory.open({ namespace: "err", store: memoryStore() });
  const failing = new MockLanguageModelV2({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: "partial" },
          { type: "error", error: new Error("provider died") },
          { type: "finish", finishReason: "error", usage },
        ],
      }),
    }),
  });
  const model = wrapLanguageModel({ model: failing, middleware: engramMiddleware({ memory, system: "keep" }) });
  const result = streamText({ model, system: "Be brief.", prompt: "Hello there", onError: () => {} });
  await result.consumeStream();
  assert.deepEqual(await roles(memory), ["user: Hello there"]);
  assert.equal(await memory.instructions(), null);
  const prompt = plain(failing.doStreamCalls[0].prompt);
  assert.deepEqual(prompt[0], { role: "system", content: "Be brief." });
  assert.deepEqual(prompt.slice(1), toAiSdkPrompt(await memory.render("openai")));
  memory.free();
});

test("engramMiddleware in a tool loop: the tool call, its result and the final reply are added, the user message once", async () => {
  const memory = await Memory.open({ namespace: "tools", store: memoryStore() });
  const chat = new MockLanguageModelV2({
    doGenerate: [
      {
        content: [{ type: "tool-call", toolCallId: "call-1", toolName: "weather", input: '{"city":"Oslo"}' }],
        finishReason: "tool-calls",
        usage,
        warnings: [],
      },
      answer("It is 4 °C in Oslo."),
    ],
  });
  const model = wrapLanguageModel({ model: chat, middleware: engramMiddleware({ memory }) });
  const weather = tool({
    description: "The weather in a city",
    inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
    execute: async ({ city }) => ({ city, celsius: 4 }),
  });
  const result = await generateText({ model, prompt: "Weather in Oslo?", tools: { weather }, stopWhen: stepCountIs(3) });
  assert.equal(result.text, "It is 4 °C in Oslo.");
  const messages = await memory.messages();
  assert.deepEqual(
    messages.map((m) => [m.role, m.content, m.tool_calls?.map((c) => `${c.id} ${c.name} ${c.arguments}`) ?? m.tool_call_id ?? null]),
    [
      ["user", "Weather in Oslo?", null],
      ["assistant", "", ['call-1 weather {"city":"Oslo"}']],
      ["tool", '{"city":"Oslo","celsius":4}', "call-1"],
      ["assistant", "It is 4 °C in Oslo.", null],
    ],
  );
  // The second step's prompt is the view, the tool call and result paired by id and name.
  const prompt = plain(chat.doGenerateCalls[1].prompt);
  assert.deepEqual(prompt.slice(-2), [
    { role: "assistant", content: [{ type: "tool-call", toolCallId: "call-1", toolName: "weather", input: { city: "Oslo" } }] },
    {
      role: "tool",
      content: [{ type: "tool-result", toolCallId: "call-1", toolName: "weather", output: { type: "text", value: '{"city":"Oslo","celsius":4}' } }],
    },
  ]);
  memory.free();
});

test("engramMiddleware: a regenerate leaves one copy of the question; the regenerated answer replaces the first in the view", async () => {
  const { memory, chat, model } = await chatSetup();
  const history = [{ role: "user", content: "Which city did we pick for the offsite?" }];
  await generateText({ model, messages: history });
  // useChat's regenerate: the same conversation, the last answer dropped.
  await generateText({ model, messages: history });
  // And once more through streamText.
  const streamed = streamText({ model, messages: history });
  await streamed.consumeStream();
  // Every answer is kept; each regenerated one replaced the one before.
  assert.deepEqual(await roles(memory), [
    "user: Which city did we pick for the offsite?",
    "assistant: reply 1",
    "assistant: reply 2",
    "assistant: reply 3",
  ]);
  assert.deepEqual(
    (await memory.messages()).map((m) => m.replaced_by ?? null),
    [null, 3, 4, null],
  );
  // The view is what the screen shows: the question and the newest answer.
  assert.deepEqual(
    (await memory.render("openai")).map((m) => `${m.role}: ${m.content}`),
    ["user: Which city did we pick for the offsite?", "assistant: reply 3"],
  );
  // A regenerate's model saw the question, not the answer it regenerates.
  assert.deepEqual(lastPrompt(chat.doGenerateCalls), [
    { role: "user", content: [{ type: "text", text: "Which city did we pick for the offsite?" }] },
  ]);
  assert.deepEqual(plain(chat.doStreamCalls[0].prompt), lastPrompt(chat.doGenerateCalls));
  memory.free();
});

test("engramMiddleware: a retried request that gets the same answer adds nothing; the same words later in the chat are new", async () => {
  const memory = await Memory.open({ namespace: "retry", store: memoryStore() });
  const chat = new MockLanguageModelV2({ doGenerate: async () => answer("Sure.") });
  const model = wrapLanguageModel({ model: chat, middleware: engramMiddleware({ memory }) });
  const first = [{ role: "user", content: "ok" }];
  await generateText({ model, messages: first });
  await generateText({ model, messages: first }); // the response was lost: the client retries
  const later = [...first, { role: "assistant", content: "Sure." }, { role: "user", content: "ok" }];
  await generateText({ model, messages: later });
  assert.deepEqual(await roles(memory), ["user: ok", "assistant: Sure.", "user: ok", "assistant: Sure."]);
  memory.free();
});

test("engramMiddleware: the app's message ids (clientId, providerOptions.engram.clientId); an edit adds the corrected text after the original", async () => {
  const memory = await Memory.open({ namespace: "ids", store: memoryStore() });
  let n = 0;
  const chat = new MockLanguageModelV2({ doGenerate: async () => answer(`reply ${++n}`) });
  // One wrapped model per request, as a route builds it, with the UI message's id.
  const send = (id, messages) =>
    generateText({ model: wrapLanguageModel({ model: chat, middleware: engramMiddleware({ memory, clientId: id }) }), messages });
  await send("ui-1", [{ role: "user", content: "Book the room for Thursday." }]);
  await send("ui-1", [{ role: "user", content: "Book the room for Thursday." }]); // a retry
  await send("ui-1", [{ role: "user", content: "Book the room for Friday." }]); // edited in the UI
  // The id on the message itself; the same words under another id are another message.
  const plain = wrapLanguageModel({ model: chat, middleware: engramMiddleware({ memory }) });
  const tagged = (id) => [{ role: "user", content: "thanks", providerOptions: { engram: { clientId: id } } }];
  await generateText({ model: plain, messages: tagged("ui-2") });
  await generateText({ model: plain, messages: tagged("ui-2") });
  await generateText({ model: plain, messages: tagged("ui-3") });
  assert.deepEqual(await roles(memory), [
    "user: Book the room for Thursday.",
    "assistant: reply 1",
    "assistant: reply 2",
    "user: Book the room for Friday.",
    "assistant: reply 3",
    "user: thanks",
    "assistant: reply 4",
    "assistant: reply 5",
    "user: thanks",
    "assistant: reply 6",
  ]);
  assert.throws(() => engramMiddleware({ memory, clientId: "" }), TypeError);
  memory.free();
});

test("engramMiddleware with a thread per chat: each chat's prompt is its own view; the same first words in two chats are two messages", async () => {
  const memory = await Memory.open({ namespace: "chats", store: memoryStore() });
  let n = 0;
  const prompts = [];
  const chat = new MockLanguageModelV2({
    doGenerate: async (options) => {
      prompts.push(options.prompt);
      return answer(`reply ${++n}`);
    },
  });
  const modelFor = (thread) => wrapLanguageModel({ model: chat, middleware: engramMiddleware({ memory, thread }) });
  const trip = modelFor("trip");
  const work = modelFor("work");
  // Both chats start with the same words (derived client ids must not collide).
  await generateText({ model: trip, system: "Be brief.", messages: [{ role: "user", content: "Hello." }] });
  await generateText({ model: work, system: "Be brief.", messages: [{ role: "user", content: "Hello." }] });
  await generateText({
    model: trip,
    messages: [
      { role: "user", content: "Hello." },
      { role: "assistant", content: "reply 1" },
      { role: "user", content: "We fly to Lima on May 3." },
    ],
  });
  await generateText({
    model: work,
    messages: [
      { role: "user", content: "Hello." },
      { role: "assistant", content: "reply 2" },
      { role: "user", content: "The report is due Friday." },
    ],
  });
  const byThread = async (thread) =>
    (await memory.messages()).filter((m) => (m.thread ?? "main") === thread).map((m) => `${m.role}: ${m.content}`);
  assert.deepEqual(await byThread("trip"), ["user: Hello.", "assistant: reply 1", "user: We fly to Lima on May 3.", "assistant: reply 3"]);
  assert.deepEqual(await byThread("work"), ["user: Hello.", "assistant: reply 2", "user: The report is due Friday.", "assistant: reply 4"]);
  assert.deepEqual(await byThread("main"), []);
  // Each prompt was that chat's view: the instructions are shared, the messages are its own.
  const texts = (prompt) => prompt.filter((m) => m.role !== "system").flatMap((m) => m.content.map((p) => p.text));
  assert.deepEqual(texts(prompts[2]), ["Hello.", "reply 1", "We fly to Lima on May 3."]);
  assert.deepEqual(texts(prompts.at(-1)), ["Hello.", "reply 2", "The report is due Friday."]);
  assert.deepEqual(prompts.at(-1)[0], { role: "system", content: "Be brief." });
  assert.deepEqual(toAiSdkPrompt(await memory.render("openai", { thread: "work" })).slice(0, -1), prompts.at(-1));
  assert.throws(() => engramMiddleware({ memory, thread: "" }), TypeError);
  assert.throws(() => engramMiddleware({ memory, thread: 3 }), TypeError);
  memory.free();
});

test("the chat route example answers a POST through the wrapped mock model and remembers across requests", async () => {
  const { createChatRoute } = await import("../examples/ai-sdk-route.js");
  const store = memoryStore();
  let n = 0;
  const chat = new MockLanguageModelV2({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: [
          { type: "text-start", id: "t" },
          { type: "text-delta", id: "t", delta: `answer ${++n}` },
          { type: "text-end", id: "t" },
          { type: "finish", finishReason: "stop", usage },
        ],
      }),
    }),
  });
  const POST = createChatRoute({ chatModel: chat, store, engramModel: offlineModel() });
  const ask = async (messages) => {
    const res = await POST(new Request("http://local/api/chat", { method: "POST", body: JSON.stringify({ userId: "dana", messages }) }));
    assert.equal(res.status, 200);
    return res.text();
  };
  const ui = (id, role, text) => ({ id, role, parts: [{ type: "text", text }] });
  const first = await ask([ui("1", "user", "I am Dana.")]);
  assert.match(first, /answer 1/);
  const second = await ask([ui("1", "user", "I am Dana."), ui("2", "assistant", "answer 1"), ui("3", "user", "Who am I?")]);
  assert.match(second, /answer 2/);
  // A second chat of the same user (useChat sends the chat's id): a thread of the same memory.
  const res = await POST(new Request("http://local/api/chat", { method: "POST", body: JSON.stringify({ userId: "dana", id: "chat-2", messages: [ui("1", "user", "I am Dana.")] }) }));
  assert.match(await res.text(), /answer 3/);
  const memory = await Memory.open({ namespace: "user:dana", store });
  assert.deepEqual(await roles(memory), ["user: I am Dana.", "assistant: answer 1", "user: Who am I?", "assistant: answer 2", "user: I am Dana.", "assistant: answer 3"]);
  assert.deepEqual(
    (await memory.threads()).map((t) => [t.thread, t.messages]),
    [
      ["chat-2", 2],
      ["main", 4],
    ],
  );
  memory.free();
});

test("types: engram/ai-sdk type-checks against ai's types (tsc --strict), and misuse does not", async () => {
  const ts = (await import("typescript")).default;
  const file = new URL("./ai-sdk-types.virtual.ts", import.meta.url).pathname;
  const source = `
    import { generateText, streamText, wrapLanguageModel } from "ai";
    import { MockEmbeddingModelV2, MockLanguageModelV2 } from "ai/test";
    import { Memory, memoryStore } from "engram";
    import { aiSdkModel, engramMiddleware, toAiSdkPrompt, type AiSdkPrompt } from "engram/ai-sdk";
    export async function chat(): Promise<string> {
      const chat = new MockLanguageModelV2();
      const engramModel = aiSdkModel({ model: chat, embeddingModel: new MockEmbeddingModelV2<string>(), output: "object" });
      const memory = await Memory.open({ namespace: "n", store: memoryStore(), model: engramModel });
      await memory.setInstructions("Be brief.");
      const model = wrapLanguageModel({ model: chat, middleware: engramMiddleware({ memory, system: "keep" }) });
      streamText({ model, messages: [{ role: "user", content: "hi" }] });
      const prompt: AiSdkPrompt = toAiSdkPrompt(await memory.render("openai"));
      // @ts-expect-error system is "instructions", "keep" or "ignore"
      engramMiddleware({ memory, system: "replace" });
      // @ts-expect-error the model is required
      aiSdkModel({ embeddingModel: new MockEmbeddingModelV2<string>() });
      return (await generateText({ model, prompt: String(prompt.length) })).text;
    }
  `;
  const options = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ["lib.es2022.d.ts", "lib.esnext.disposable.d.ts", "lib.dom.d.ts"],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => f === file || fileExists.call(host, f);
  host.readFile = (f) => (f === file ? source : readFile.call(host, f));
  host.getSourceFile = (f, v, ...rest) => (f === file ? ts.createSourceFile(f, source, v) : getSourceFile.call(host, f, v, ...rest));
  const program = ts.createProgram([file], options, host);
  const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  assert.deepEqual(errors, []);
});
