// The built-in offline model through the package: its answers to every task
// the engine asks while the bundled sample conversation replays, a memory
// opened with no model (the zero-config default), composing it with another
// model, and the model's health after a replay. Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { Memory, functionModel, memoryStore, offlineModel } from "engram";

const SAMPLE = JSON.parse(readFileSync(new URL("../../examples/sample/conversation.json", import.meta.url), "utf8"));
const TASKS = ["segment", "note", "trace", "resolve", "reconcile", "split", "relevance", "distill"];
/** A small ceiling, so episodes leave, get noted and fade during the sample. */
const CONFIG = { ceiling_tokens: 700, recall_budget_tokens: 150, passage_tokens: 80 };

/** The sample's message as the package takes it. */
const toMessage = ({ role, content, tool_calls, tool_call_id }) => ({ role, content, tool_calls, tool_call_id });

/**
 * Replays the sample into a memory over `model` (default: none, so the
 * memory picks the offline model), the clock following the messages.
 */
async function replaySample({ model, config = CONFIG } = {}) {
  let now = Date.parse(SAMPLE.messages[0].at);
  const clock = { now: () => now };
  const memory = await Memory.open({ namespace: "sample", store: memoryStore(), clock, config, ...(model ? { model } : {}) });
  const degraded = [];
  memory.on("degraded", (d) => degraded.push(d));
  for (const m of SAMPLE.messages) {
    now = Date.parse(m.at);
    await memory.addMessage(toMessage(m));
  }
  return { memory, degraded, clock: { advance: (ms) => (now += ms), now: () => now } };
}

/** The top-level keys a task's answer schema requires. */
const required = (request) => JSON.parse(request.schema).required ?? [];

test("offlineModel answers every task the engine asks during the sample with JSON that fits its schema", async () => {
  const offline = offlineModel();
  const asked = [];
  const recording = {
    async complete(request) {
      const answer = await offline.complete(request);
      asked.push({ request, answer });
      return answer;
    },
    embed: offline.embed,
  };
  const { memory } = await replaySample({ model: recording });
  const seen = new Set(asked.map((a) => a.request.task));
  for (const task of ["segment", "note", "trace", "split", "relevance", "distill"]) {
    assert.ok(seen.has(task), `the sample asks ${task} (asked: ${[...seen].join(", ")})`);
  }
  for (const { request, answer } of asked) {
    assert.equal(typeof answer, "string", `${request.task}: JSON text`);
    let parsed;
    assert.doesNotThrow(() => (parsed = JSON.parse(answer)), `${request.task} answer parses: ${answer.slice(0, 200)}`);
    assert.equal(typeof parsed, "object");
    for (const key of required(request)) assert.ok(key in parsed, `${request.task} answer has "${key}": ${answer.slice(0, 200)}`);
  }
  assert.ok(TASKS.includes(asked[0].request.task));
  memory.free();
});

test("offlineModel is deterministic: two replays of the sample give the same view and facts", async () => {
  const a = await replaySample();
  const b = await replaySample();
  assert.deepEqual(await b.memory.view(), await a.memory.view());
  assert.deepEqual(await b.memory.facts(), await a.memory.facts());
  a.memory.free();
  b.memory.free();
});

test("offlineModel's embedder: one unit vector of offlineModel.dimension per text, similar texts closer", async () => {
  const [x, y, z] = await offlineModel().embed(["The landing page goes live", "landing page live", "Packhaus ships orders"]);
  for (const v of [x, y, z]) {
    assert.ok(v instanceof Float32Array);
    assert.equal(v.length, offlineModel.dimension);
    assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-4, "unit length");
  }
  const dot = (p, q) => p.reduce((s, pi, i) => s + pi * q[i], 0);
  assert.ok(dot(x, y) > dot(x, z), `shared words are closer (${dot(x, y)} vs ${dot(x, z)})`);
});

test("offlineModel refuses a request it cannot read with code bad-answer", async () => {
  await assert.rejects(
    async () => offlineModel().complete({ task: "no-such-task", system: "", content: "", schema: "{}", attempt: 1 }),
    (e) => e.code === "bad-answer",
  );
});

test("Memory.open with no model uses the offline model: a conversation gets episodes, facts and a view", async () => {
  let now = Date.parse("2026-03-02T09:00:00Z");
  const memory = await Memory.open({ namespace: "zero-config", store: memoryStore(), clock: { now: () => now } });
  const tasks = new Set();
  memory.on("task", ({ task }) => tasks.add(task));
  const turns = [
    ["user", "Let's plan the trip to Lisbon for the team. We are fifteen people and want to fly on May 12."],
    ["assistant", "Gladly. May 12 it is: I'll look at flights from Berlin to Lisbon for fifteen people."],
    ["user", "Next topic: the budget. Our budget for the offsite is 20,000 euros."],
    ["assistant", "Noted: the offsite budget is 20,000 euros."],
  ];
  for (const [role, content] of turns) {
    now += 60_000;
    await memory.addMessage({ role, content });
  }
  const view = await memory.view();
  assert.equal(view.items.filter((i) => i.kind === "message").length, 4);
  assert.ok(view.tokens > 0 && view.tokens <= view.ceiling);
  assert.ok(tasks.has("segment"), `the engine asked the offline model (asked: ${[...tasks]})`);
  const stats = await memory.stats();
  assert.equal(stats.messages, 4);
  assert.deepEqual(stats.model.failed, {}, `no failed request: ${JSON.stringify(stats.model)}`);
  memory.free();
});

test("the offline model composes: an LLM's tasks with the offline embedder, and the offline tasks with another embedder", async () => {
  // An LLM stand-in for the tasks; embeddings from the built-in embedder.
  const llm = functionModel((req) => {
    if (req.task === "segment") return { boundary: /Next topic/.test(req.content.split("New message").at(-1) ?? "") ? 0.95 : 0.05 };
    if (req.task === "note") {
      return { facts: [{ subject: "Offsite", predicate: "takes place in", object: "Lisbon", sentence: "The offsite takes place in Lisbon.", kind: "decided" }] };
    }
    return offlineModel().complete(req);
  });
  const composed = { ...llm, embed: offlineModel().embed };
  let now = Date.parse("2026-03-02T09:00:00Z");
  const memory = await Memory.open({
    namespace: "composed",
    model: composed,
    store: memoryStore(),
    clock: { now: () => now },
    config: { ceiling_tokens: 300, min_episode_tokens: 1 },
  });
  for (let i = 0; i < 6; i++) {
    now += 60_000;
    await memory.addMessage({ role: "user", content: `${i % 2 ? "Next topic: " : ""}The offsite in Lisbon, point ${i}: ${"details ".repeat(20)}` });
    now += 60_000;
    await memory.addMessage({ role: "assistant", content: `Noted point ${i}. ${"more ".repeat(20)}` });
  }
  const facts = await memory.facts();
  assert.ok(facts.length > 0, "the LLM's note wrote facts");
  // Embeddings are base64 of little-endian f32s: the offline embedder's size.
  const bytes = Buffer.from(facts[0].embedding, "base64").length;
  assert.equal(bytes, 4 * offlineModel.dimension);
  memory.free();

  // The other way round: the offline tasks, a host embedder.
  const other = { ...offlineModel(), embed: (texts) => texts.map((t) => [t.length % 7, 1, 2]) };
  const second = await Memory.open({ namespace: "composed-2", model: other, store: memoryStore() });
  await second.addMessage({ role: "user", content: "Hello, let's plan the garden." });
  assert.equal((await second.view()).items.length, 1);
  second.free();
});

test("after the sample, the offline model has failed no request and no step degraded", async () => {
  const { memory, degraded, clock } = await replaySample();
  // A week later, a question about an early topic: a sleep, then recall.
  clock.advance(7 * 24 * 3600_000);
  const added = await memory.addMessage({ role: "user", content: "Remind me: what did we decide for the landing page?" });
  const stats = await memory.stats();
  assert.deepEqual(stats.model.failed, {}, `failed requests: ${JSON.stringify(stats.model)}`);
  assert.equal(stats.model.degraded_steps, 0);
  assert.deepEqual(degraded, []);
  const episodes = await memory.episodes();
  assert.ok(episodes.length > 1, "the sample formed episodes");
  const facts = await memory.facts();
  assert.ok(facts.length > 0, "notes wrote facts");
  assert.ok(added.slept, "a week of silence made the turn sleep first");
  memory.free();
});

test("instructions are pinned first in the view, changed by setting again, and refused when too large", async () => {
  const memory = await Memory.open({ namespace: "instr", store: memoryStore(), config: { ceiling_tokens: 400 } });
  assert.equal(await memory.setInstructions("You are Robin, a trip planner."), true);
  await memory.addMessage({ role: "user", content: "Let's plan the Lisbon offsite." });
  const view = await memory.view();
  assert.equal(view.items[0].kind, "instructions");
  assert.deepEqual((await memory.render("openai"))[0], { role: "system", content: "You are Robin, a trip planner." });
  assert.equal(await memory.setInstructions("You are Robin, a trip planner."), false);
  await assert.rejects(memory.setInstructions("word ".repeat(400)), (e) => e.code === "invalid-input");
  assert.equal(await memory.instructions(), "You are Robin, a trip planner.");
  assert.equal(await memory.setInstructions(""), true);
  assert.equal(await memory.instructions(), null);
});
