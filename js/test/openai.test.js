// openAIModel against a local OpenAI-compatible server on 127.0.0.1:
// structured outputs, auth, retries with backoff, timeouts, the JSON-mode
// fallback, embeddings in batches, and a memory driven through it.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import { DEFAULT_CONCURRENCY, InvalidInputError, MAX_TOKENS, Memory, ModelError, memoryStore, openAIModel } from "engram";

const requests = [];
let handler = null;
let props = () => ({ status: 404, body: { error: "not found" } });
let propsAsked = 0;
let server;
let baseURL;

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", async () => {
      const r = { path: req.url, headers: req.headers, body: JSON.parse(body || "null") };
      // GET /props (the slots a llama.cpp server has) is counted apart.
      if (req.method === "GET" && req.url === "/props") {
        propsAsked++;
        const p = props();
        res.writeHead(p.status ?? 200, { "content-type": "application/json" });
        return res.end(JSON.stringify(p.body ?? {}));
      }
      requests.push(r);
      const reply = await handler(r, requests.length, req);
      if (reply === "hang") return; // never answer: the client must time out
      res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...(reply.headers ?? {}) });
      res.end(typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${server.address().port}/v1`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

const chat = (content) => ({ body: { choices: [{ index: 0, message: { role: "assistant", content } }] } });
const request = {
  task: "segment",
  system: "Judge the boundary.",
  content: "New message: hello",
  schema: JSON.stringify({ type: "object", required: ["boundary"], properties: { boundary: { type: "number" } } }),
  attempt: 1,
};
const fast = { backoffMs: 1, maxBackoffMs: 2 };

test("complete sends the task's schema as structured output and retries a 500", async () => {
  requests.length = 0;
  handler = (_, n) => (n === 1 ? { status: 500, body: { error: "overloaded" } } : chat('{"boundary":0.2}'));
  const model = openAIModel({ baseURL: `${baseURL}/`, apiKey: "sk-test", model: "gpt-test", ...fast });
  assert.equal(await model.complete(request), '{"boundary":0.2}');
  assert.equal(requests.length, 2);
  const [first] = requests;
  assert.equal(first.path, "/v1/chat/completions");
  assert.equal(first.headers.authorization, "Bearer sk-test");
  assert.equal(first.body.model, "gpt-test");
  assert.equal(first.body.temperature, 0);
  assert.deepEqual(first.body.messages, [
    { role: "system", content: "Judge the boundary." },
    { role: "user", content: "New message: hello" },
  ]);
  assert.deepEqual(first.body.response_format, {
    type: "json_schema",
    json_schema: { name: "engram_segment", schema: JSON.parse(request.schema), strict: false },
  });
});

test("a 429 is retried; a 401 is not", async () => {
  requests.length = 0;
  handler = (_, n) => (n === 1 ? { status: 429, headers: { "retry-after": "0" }, body: {} } : chat("{}"));
  const model = openAIModel({ baseURL, model: "m", ...fast });
  assert.equal(await model.complete(request), "{}");
  assert.equal(requests.length, 2);

  requests.length = 0;
  handler = () => ({ status: 401, body: { error: "bad key" } });
  await assert.rejects(model.complete(request), (e) => e.code === "unavailable" && e.status === 401 && /bad key/.test(e.message));
  assert.equal(requests.length, 1, "no retry of a client error");
});

test("a request with no answer times out, is retried, then fails as unavailable", async () => {
  requests.length = 0;
  handler = () => "hang";
  const model = openAIModel({ baseURL, model: "m", timeoutMs: 50, retries: 1, ...fast });
  await assert.rejects(model.complete(request), (e) => e.code === "unavailable" && /no answer within 50 ms/.test(e.message));
  assert.equal(requests.length, 2);
});

test("the memory's deadline aborts a request and its retries (the signal each call gets)", async () => {
  requests.length = 0;
  let closed = 0;
  // The hung request's own socket (GET /props, the slots probe, has its own).
  handler = (_, __, req) => {
    req.socket.once("close", () => closed++);
    return "hang";
  };
  const model = openAIModel({ baseURL, model: "m", embeddingModel: "e", timeoutMs: 60_000, retries: 3, ...fast });
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error("deadline")), 100);
  const started = Date.now();
  await assert.rejects(
    model.complete(request, { signal: controller.signal }),
    (e) => e.code === "unavailable" && /abandoned by the caller \(deadline\)/.test(e.message),
  );
  assert.ok(Date.now() - started < 5_000);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(requests.length, 1, "no retry after the abort");
  assert.equal(closed, 1, "the request was cut");
  await assert.rejects(model.embed(["x"], { signal: controller.signal }), /abandoned/, "an aborted signal sends nothing");
  assert.equal(requests.length, 1);

  // Through a memory: a model that does not answer within the deadline is a
  // failed model call; the step degrades and the request is not retried.
  requests.length = 0;
  const memory = await Memory.open({
    namespace: "deadline",
    model: openAIModel({ baseURL, model: "m", retries: 3, ...fast }),
    store: memoryStore(),
    config: { model_attempts: 1 },
    deadlines: { model: 100 },
  });
  await memory.addMessage({ role: "user", content: "Plan the garden." });
  const added = await memory.addMessage({ role: "user", content: "And the herbs." });
  assert.equal(added.degraded.length, 1);
  assert.match(added.degraded[0].error, /timed out: no answer within 100 ms/);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(requests.length, 1, "one request, cut at the deadline, not retried");
  memory.free();
});

test("a server without structured outputs gets JSON mode from then on", async () => {
  requests.length = 0;
  handler = (r) =>
    r.body.response_format?.type === "json_schema"
      ? { status: 400, body: { error: { message: "response_format json_schema is not supported" } } }
      : chat('{"boundary":0.9}');
  // Its own model name: the fallback is remembered per endpoint (base URL and model).
  const model = openAIModel({ baseURL, model: "json-mode-only", ...fast });
  assert.equal(await model.complete(request), '{"boundary":0.9}');
  assert.equal(await model.complete(request), '{"boundary":0.9}');
  assert.deepEqual(
    requests.map((r) => r.body.response_format.type),
    ["json_schema", "json_object", "json_object"],
  );
});

test("a refusal or a missing content is a bad answer", async () => {
  handler = () => ({ body: { choices: [{ message: { role: "assistant", content: null, refusal: "no" } }] } });
  const model = openAIModel({ baseURL, model: "m", ...fast });
  await assert.rejects(model.complete(request), (e) => e.code === "bad-answer");
});

test("embed batches texts and orders vectors by index", async () => {
  requests.length = 0;
  handler = (r) => ({
    body: {
      data: r.body.input.map((t, index) => ({ index, embedding: [t.length, index] })).reverse(),
    },
  });
  const model = openAIModel({ baseURL, model: "m", embeddingModel: "emb", embedBatch: 2, ...fast });
  assert.deepEqual(await model.embed(["a", "bb", "ccc"]), [
    [1, 0],
    [2, 1],
    [3, 0],
  ]);
  assert.deepEqual(
    requests.map((r) => [r.path, r.body.model, r.body.input]),
    [
      ["/v1/embeddings", "emb", ["a", "bb"]],
      ["/v1/embeddings", "emb", ["ccc"]],
    ],
  );
});

test("a memory runs on openAIModel", async () => {
  requests.length = 0;
  handler = (r) => {
    if (r.path.endsWith("/embeddings")) return { body: { data: r.body.input.map((_, index) => ({ index, embedding: [1, 0, 0] })) } };
    const schema = r.body.response_format.json_schema;
    return chat(schema.name === "engram_segment" ? '{"boundary":0.1}' : '{"parts":["x"]}');
  };
  const memory = await Memory.open({
    namespace: "http",
    model: openAIModel({ baseURL, model: "m", embeddingModel: "emb", ...fast }),
    store: memoryStore(),
  });
  await memory.addMessage({ role: "user", content: "Plan the garden: tomatoes along the south wall." });
  await memory.addMessage({ role: "assistant", content: "Tomatoes along the south wall it is." });
  // The reply's boundary judgment goes out with the next user message's.
  await memory.addMessage({ role: "user", content: "And basil between them." });
  assert.deepEqual(
    (await memory.render()).map((m) => m.role),
    ["user", "assistant", "user"],
  );
  const judged = requests.filter((r) => r.body?.response_format?.json_schema?.name === "engram_segment");
  assert.equal(judged.length, 2, "the reply and the new message were judged over HTTP");
  assert.deepEqual((await memory.stats()).model.failed, {});
  memory.free();
});

test("two chats of one memory on openAIModel: each judged on its own messages, each answered from its own view", async () => {
  requests.length = 0;
  handler = (r) => {
    if (r.path.endsWith("/embeddings")) return { body: { data: r.body.input.map((_, index) => ({ index, embedding: [1, 0, 0] })) } };
    const schema = r.body.response_format?.json_schema;
    if (!schema) return chat(`I was given ${r.body.messages.length} messages.`); // the chat model
    return chat(schema.name === "engram_segment" ? '{"boundary":0.1}' : '{"parts":["x"]}');
  };
  const memory = await Memory.open({ namespace: "chats", model: openAIModel({ baseURL, model: "m", embeddingModel: "emb", ...fast }), store: memoryStore() });
  // The turn as an app makes it: add, render the chat's view, ask the chat model, add its reply.
  const turn = async (thread, content) => {
    await memory.addMessage({ role: "user", content, thread });
    const messages = await memory.render("openai", { thread });
    const res = await fetch(`${baseURL}/chat/completions`, { method: "POST", body: JSON.stringify({ model: "chat", messages }) });
    const reply = (await res.json()).choices[0].message;
    await memory.addMessage({ ...reply, thread });
    return messages;
  };
  await turn("garden", "Plan the garden: tomatoes along the south wall.");
  await turn("work", "The quarterly report is due on Friday.");
  const garden = await turn("garden", "And basil between them.");
  assert.deepEqual(garden.map((m) => m.content), ["Plan the garden: tomatoes along the south wall.", "I was given 1 messages.", "And basil between them."]);
  const work = await memory.render("openai", { thread: "work" });
  assert.deepEqual(work.map((m) => m.content), ["The quarterly report is due on Friday.", "I was given 1 messages."]);
  // Boundary judgments see only their own chat's messages.
  const judged = requests.filter((r) => r.body?.response_format?.json_schema?.name === "engram_segment").map((r) => r.body.messages.at(-1).content);
  assert.ok(judged.length >= 2);
  for (const content of judged) assert.ok(!(content.includes("tomatoes") && content.includes("quarterly")), content);
  assert.deepEqual((await memory.threads()).map((t) => [t.thread, t.messages]), [["garden", 4], ["work", 2]]);
  memory.free();
});

/** A localhost URL where nothing listens (a port just closed). */
async function closedURL() {
  const s = createServer();
  await new Promise((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return `http://127.0.0.1:${port}/v1`;
}

test("a wrong base URL shows: degraded events, stats().model, and with strict a ModelError that writes nothing", async () => {
  const model = openAIModel({ baseURL: await closedURL(), model: "m", embeddingModel: "emb", retries: 0, timeoutMs: 5_000 });
  const store = memoryStore();
  let now = 1_772_445_600_000;
  const clock = { now: () => (now += 60_000) };
  const memory = await Memory.open({ namespace: "wrong-url", model, store, clock });
  const degraded = [];
  memory.on("degraded", (d) => degraded.push(d));

  // Nothing to recall or judge yet: no model call, nothing degrades.
  await memory.addMessage({ role: "user", content: "Plan the garden: tomatoes along the south wall." });
  const reply = await memory.addMessage({ role: "assistant", content: "Tomatoes along the south wall it is." });
  assert.deepEqual(degraded, []);
  assert.deepEqual(reply.degraded, []);

  // The next user message has judgments to make: they fail, the step goes on
  // without the model, and says so.
  const added = await memory.addMessage({ role: "user", content: "And basil between them." });
  assert.equal(added.message, 3, "the message is added");
  assert.ok(degraded.length >= 1, "a degraded event fired");
  assert.deepEqual(degraded, added.degraded, "one event per degraded step of the call, as addMessage returned them");
  for (const d of degraded) {
    assert.equal(d.task, "segment");
    assert.equal(d.attempts, 3, "model_attempts");
    assert.match(d.error, /model unavailable/);
    assert.equal(typeof d.effect, "string");
    assert.ok(d.effect.length > 0);
    assert.equal(typeof d.at, "number");
  }
  const stats = await memory.stats();
  assert.equal(stats.model.failed.segment, stats.model.calls.segment, "every request failed");
  assert.equal(stats.model.calls.segment, 3 * degraded.length);
  assert.equal(stats.model.consecutive_failures, stats.model.calls.segment);
  assert.equal(stats.model.last_error.task, "segment");
  assert.match(stats.model.last_error.error, /model unavailable/);
  assert.equal(stats.model.degraded_steps, degraded.length);
  assert.equal(degraded.length, 3 - 1, "the reply's and the new message's judgments");
  memory.free();

  // strict: the same failure fails the call, and nothing is written.
  const strict = await Memory.open({ namespace: "wrong-url", model, store, clock, config: { strict: true } });
  const events = [];
  strict.on("degraded", (d) => events.push(d));
  const messages = await strict.messages();
  const data = new Map(store.data);
  const err = await strict.addMessage({ role: "user", content: "Next: the herbs by the door." }).then(
    () => assert.fail("a strict call must reject"),
    (e) => e,
  );
  assert.ok(err instanceof ModelError, `a ModelError, got ${err?.name}: ${err?.message}`);
  assert.equal(err.code, "model");
  assert.match(err.message, /segment failed after 3 attempts/);
  assert.deepEqual(await strict.messages(), messages, "messages() unchanged");
  assert.deepEqual(store.data, data, "nothing was written");
  assert.equal(events.length, 1, "the degraded event fires for the failed call too");
  assert.equal(events[0].task, "segment");
  const after = await strict.stats();
  assert.equal(after.model.failed.segment, 3);
  assert.equal(after.model.degraded_steps, 1);
  assert.equal(after.messages, 3);
  strict.free();
});

test("messages of the official openai SDK go in as they come: developer is system, function and custom tool calls", async () => {
  const memory = await Memory.open({ namespace: "sdk-shapes", store: memoryStore() });
  try {
    await memory.addMessage({ role: "developer", content: "Answer briefly." });
    await memory.addMessage({ role: "user", content: [{ type: "text", text: "Run the query." }] });
    // completion.choices[0].message, as the SDK returns it.
    await memory.addMessage({
      role: "assistant",
      content: null,
      refusal: null,
      annotations: [],
      tool_calls: [
        { id: "call_f", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } },
        { id: "call_c", type: "custom", custom: { name: "sql", input: "SELECT 1" } },
      ],
    });
    await memory.addMessage({ role: "tool", tool_call_id: "call_f", content: "found" });
    await memory.addMessage({ role: "tool", tool_call_id: "call_c", content: "1" });
    assert.deepEqual(await memory.render("openai"), [
      { role: "system", content: "Answer briefly." },
      { role: "user", content: "Run the query." },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "call_f", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } },
          { id: "call_c", type: "function", function: { name: "sql", arguments: "SELECT 1" } },
        ],
      },
      { role: "tool", tool_call_id: "call_f", content: "found" },
      { role: "tool", tool_call_id: "call_c", content: "1" },
    ]);
  } finally {
    await memory.close();
  }
});

test("a ChatCompletionMessageParam[] with legacy function calling goes into addMessages as it is", async () => {
  const memory = await Memory.open({ namespace: "sdk-legacy", store: memoryStore() });
  try {
    // Every role of the SDK's union, the deprecated function calling
    // included: an assistant's function_call, then the function message.
    const params = [
      { role: "developer", content: "Answer briefly." },
      { role: "user", content: [{ type: "text", text: "Look it up." }] },
      { role: "assistant", content: null, function_call: { name: "lookup", arguments: '{"q":"x"}' } },
      { role: "function", name: "lookup", content: "found" },
      { role: "assistant", content: "Found it." },
      { role: "user", content: "Again." },
      { role: "assistant", content: null, function_call: { name: "lookup", arguments: '{"q":"y"}' } },
      { role: "function", name: "lookup", content: "found again" },
    ];
    const batch = await memory.addMessages(params);
    assert.equal(batch.messages.length, params.length);
    const rendered = await memory.render("openai");
    assert.deepEqual(rendered.slice(0, 5), [
      { role: "system", content: "Answer briefly." },
      { role: "user", content: "Look it up." },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "function_call:lookup", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }],
      },
      { role: "tool", tool_call_id: "function_call:lookup", content: "found" },
      { role: "assistant", content: "Found it." },
    ]);
    assert.deepEqual(rendered.at(-1), { role: "tool", tool_call_id: "function_call:lookup", content: "found again" });
    await assert.rejects(
      memory.addMessage({ role: "function", content: "no name" }),
      (e) => e instanceof InvalidInputError && /name of the function/.test(e.message),
    );
  } finally {
    await memory.close();
  }
});

// ---- real local servers: format fallback, max_tokens, concurrency ----------

const rejectSchema = (status) => (r) =>
  r.body.response_format?.type === "json_schema"
    ? { status, body: { error: { message: `1 validation error for CreateChatCompletionRequest: response_format: Input should be 'text' or 'json_object'` } } }
    : chat('{"boundary":0.4}');

for (const status of [400, 422, 500]) {
  test(`a ${status} naming response_format falls back to JSON mode at once, remembered for the endpoint and said once`, async () => {
    requests.length = 0;
    handler = rejectSchema(status);
    const heard = [];
    const seen = [];
    const options = { baseURL, model: `fallback-${status}`, retries: 3, ...fast };
    const model = openAIModel({ ...options, onEvent: (e) => seen.push(e) });
    model.on("format", (detail) => heard.push(detail));
    assert.equal(await model.complete(request), '{"boundary":0.4}');
    assert.equal(await model.complete(request), '{"boundary":0.4}');
    assert.deepEqual(
      requests.map((r) => r.body.response_format.type),
      ["json_schema", "json_object", "json_object"],
      "the rejection is not retried as it was; later calls go straight to JSON mode",
    );
    assert.equal(heard.length, 1);
    assert.equal(heard[0].status, status);
    assert.equal(heard[0].from, "json_schema");
    assert.equal(heard[0].to, "json_object");
    assert.equal(heard[0].schema, true);
    assert.match(heard[0].reason, /response_format/);
    assert.deepEqual(seen.map((e) => e.event), ["format"]);
    // JSON mode carries the task's schema (llama.cpp's servers make it a grammar).
    assert.deepEqual(requests[1].body.response_format, { type: "json_object", schema: JSON.parse(request.schema) });

    // Another model for the same endpoint starts in JSON mode, silently.
    requests.length = 0;
    const again = openAIModel(options);
    let told = 0;
    again.on("format", () => told++);
    assert.equal(await again.complete(request), '{"boundary":0.4}');
    assert.deepEqual(requests.map((r) => r.body.response_format.type), ["json_object"]);
    assert.equal(told, 0);
  });
}

test("a server that rejects the schema beside JSON mode too gets plain JSON mode, said once more", async () => {
  requests.length = 0;
  handler = (r) =>
    r.body.response_format?.type === "json_schema" || r.body.response_format?.schema
      ? { status: 400, body: { error: { message: `response_format: unknown field ${r.body.response_format.schema ? "schema" : "json_schema"}` } } }
      : chat('{"boundary":0.3}');
  const heard = [];
  const options = { baseURL, model: "plain-json", ...fast };
  const model = openAIModel(options);
  model.on("format", (d) => heard.push([d.from, d.to, d.schema]));
  assert.equal(await model.complete(request), '{"boundary":0.3}');
  assert.equal(await model.complete(request), '{"boundary":0.3}');
  assert.deepEqual(
    requests.map((r) => [r.body.response_format.type, "schema" in r.body.response_format]),
    [
      ["json_schema", false],
      ["json_object", true],
      ["json_object", false],
      ["json_object", false],
    ],
  );
  assert.deepEqual(heard, [
    ["json_schema", "json_object", true],
    ["json_object+schema", "json_object", false],
  ]);
  // Remembered: a new model for the endpoint sends plain JSON mode first.
  requests.length = 0;
  assert.equal(await openAIModel(options).complete(request), '{"boundary":0.3}');
  assert.deepEqual(requests.map((r) => r.body.response_format), [{ type: "json_object" }]);
});

test("a 500 that does not name response_format is retried in json_schema, no fallback", async () => {
  requests.length = 0;
  handler = (_, n) => (n < 3 ? { status: 500, body: { error: "kv cache full" } } : chat('{"boundary":0.1}'));
  let told = 0;
  const model = openAIModel({ baseURL, model: "no-fallback", ...fast });
  model.on("format", () => told++);
  assert.equal(await model.complete(request), '{"boundary":0.1}');
  assert.deepEqual(requests.map((r) => r.body.response_format.type), ["json_schema", "json_schema", "json_schema"]);
  assert.equal(told, 0);
});

test("every request carries max_tokens bound from its task; maxTokens overrides; a cut answer is a truncated bad answer", async () => {
  requests.length = 0;
  handler = () => chat("{}");
  const tasks = Object.keys(MAX_TOKENS);
  assert.deepEqual(tasks.sort(), ["distill", "note", "reconcile", "relevance", "resolve", "segment", "split", "trace"]);
  const model = openAIModel({ baseURL, model: "bounds", ...fast });
  for (const task of tasks) await model.complete({ ...request, task });
  assert.deepEqual(requests.map((r) => r.body.max_tokens), tasks.map((t) => MAX_TOKENS[t]));
  assert.ok(MAX_TOKENS.segment < MAX_TOKENS.note);

  requests.length = 0;
  await openAIModel({ baseURL, model: "bounds", maxTokens: 99 }).complete(request);
  await openAIModel({ baseURL, model: "bounds", maxTokens: { note: 700 } }).complete({ ...request, task: "note" });
  await openAIModel({ baseURL, model: "bounds", maxTokens: { note: 700 } }).complete(request);
  assert.deepEqual(requests.map((r) => r.body.max_tokens), [99, 700, MAX_TOKENS.segment]);
  for (const bad of [0, -1, 1.5, "64", { note: 0 }]) {
    assert.throws(() => openAIModel({ baseURL, model: "bounds", maxTokens: bad }), TypeError);
  }

  handler = () => ({ body: { choices: [{ index: 0, finish_reason: "length", message: { role: "assistant", content: '{"facts":[{"sub' } }] } });
  await assert.rejects(model.complete({ ...request, task: "note" }), (e) => e.code === "bad-answer" && /^truncated: .*max_tokens \(1536\)/.test(e.message));
});

/** Runs `n` completions at once against a server that answers after `ms`; the most in flight at once. */
async function peakInFlight(model, n, ms = 60) {
  let inFlight = 0;
  let peak = 0;
  handler = async () => {
    peak = Math.max(peak, ++inFlight);
    await new Promise((r) => setTimeout(r, ms));
    inFlight--;
    return chat('{"boundary":0.3}');
  };
  const answers = await Promise.all(Array.from({ length: n }, () => model.complete(request)));
  assert.deepEqual(answers, Array(n).fill('{"boundary":0.3}'));
  return peak;
}

test("concurrency: the server's total_slots from /props, asked once; else the default; or as given", async () => {
  requests.length = 0;
  propsAsked = 0;
  props = () => ({ body: { total_slots: 1 } });
  const oneSlot = openAIModel({ baseURL, model: "slots", ...fast });
  assert.equal(await peakInFlight(oneSlot, 5), 1, "a one-slot server gets one request at a time");
  assert.equal(await peakInFlight(oneSlot, 3), 1);
  assert.equal(propsAsked, 1);
  assert.equal(requests.length, 8, "queued, not dropped");

  props = () => ({ status: 404, body: {} });
  assert.equal(DEFAULT_CONCURRENCY, 2);
  assert.equal(await peakInFlight(openAIModel({ baseURL, model: "slots", ...fast }), 6), DEFAULT_CONCURRENCY);

  propsAsked = 0;
  assert.equal(await peakInFlight(openAIModel({ baseURL, model: "slots", concurrency: 3, ...fast }), 6), 3);
  assert.equal(propsAsked, 0, "an explicit concurrency asks nothing");
  for (const bad of [0, 1.5, "2"]) assert.throws(() => openAIModel({ baseURL, model: "m", concurrency: bad }), TypeError);
  props = () => ({ status: 404, body: { error: "not found" } });
});

test("an abandoned call waiting in the queue leaves it unsent; the running one is cut on the wire", async () => {
  requests.length = 0;
  let closed = 0;
  handler = (_, __, req) => {
    req.socket.once("close", () => closed++);
    return "hang";
  };
  const model = openAIModel({ baseURL, model: "queue", concurrency: 1, ...fast });
  const first = new AbortController();
  const second = new AbortController();
  const running = model.complete(request, { signal: first.signal });
  const waiting = model.complete(request, { signal: second.signal });
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(requests.length, 1, "the second waits for the one slot");
  second.abort(new Error("deadline"));
  await assert.rejects(waiting, (e) => e.code === "unavailable" && /abandoned by the caller while queued \(deadline\)/.test(e.message));
  first.abort(new Error("deadline"));
  await assert.rejects(running, (e) => e.code === "unavailable" && /abandoned by the caller \(deadline\)/.test(e.message));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(requests.length, 1, "the abandoned waiter was never sent");
  assert.equal(closed, 1, "the running request's connection was closed");

  // The slot is free again.
  handler = () => chat('{"boundary":0.5}');
  assert.equal(await model.complete(request), '{"boundary":0.5}');
});
