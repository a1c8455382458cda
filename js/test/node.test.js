// The package in Node: the shared scenario, the stores, typed errors, the
// call queue, events, export/import, disposal. Run by scripts/test-js over
// the built package (js/pkg).

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";

import * as engram from "engram";
import {
  Memory,
  functionModel,
  memoryStore,
  sqliteStore,
  durableObjectStore,
  EngramError,
  InvalidInputError,
  StoreError,
  ClosedError,
} from "engram";
import { replayScenario } from "./scenario.js";

const fixture = JSON.parse(readFileSync(new URL("../../tests/fixtures/scenario.json", import.meta.url), "utf8"));
const T0 = 1_772_445_600_000;
const MIN = 60_000;

/** A model that never cuts and writes no facts (the engine's harmless answers). */
const quietModel = () =>
  functionModel((req) => {
    switch (req.task) {
      case "segment":
        return { boundary: 0.1 };
      case "split":
        return { parts: [req.content.split("\n").at(-1) || "message"] };
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

/** Cuts before a message that starts with "Next topic" (a model judging boundaries). */
const cutModel = () =>
  functionModel((req) => {
    if (req.task === "segment") return { boundary: /New message[^\n]*\n[^\n]*: Next topic/.test(req.content) ? 0.9 : 0.1 };
    if (req.task === "split") return { parts: ["message"] };
    if (req.task === "resolve") return { same_as: null };
    if (req.task === "reconcile") return { judgments: [] };
    if (req.task === "relevance") return { relevant: [] };
    if (req.task === "distill") return { kept: [] };
    return { facts: [] };
  });

const manualClock = (t = T0) => ({ now: () => t, set: (v) => (t = v), advance: (ms) => (t += ms) });

function tempDir(t) {
  const dir = mkdtempSync(join(tmpdir(), "engram-js-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test("the shared scenario gives the fixture's view after every step (memoryStore)", async () => {
  const { views, mismatches, position, events, memory } = await replayScenario(engram, fixture, memoryStore());
  assert.deepEqual(mismatches, []);
  assert.equal(position, fixture.transcript.length, "every recorded model call was made");
  assert.equal(views.length, fixture.views.length);
  for (let i = 0; i < views.length; i++) assert.deepEqual(views[i], fixture.views[i], `view after step ${i + 1}`);
  // The progress events follow what the calls returned.
  assert.ok(events.formed > 0 && events.fade > 0, `episodes formed and faded: ${JSON.stringify(events)}`);
  assert.equal(events.task, fixture.transcript.filter((r) => r.call === "complete").length);
  memory.free();
});

test("the scenario over SQLite reopens from the file with the same view", async (t) => {
  const path = join(tempDir(t), "memory.db");
  const store = sqliteStore(path);
  const { memory, views } = await replayScenario(engram, fixture, store);
  assert.deepEqual(views.at(-1), fixture.views.at(-1));
  const before = { view: await memory.view(), facts: await memory.facts(), messages: await memory.messages() };
  await memory.close();
  store.close();

  const reopened = sqliteStore(path);
  const again = await Memory.open({
    namespace: fixture.namespace,
    model: functionModel(() => {
      throw new Error("a reopened memory asks the model nothing to show its view");
    }),
    store: reopened,
    clock: manualClock(fixture.steps.at(-1).at),
    config: fixture.config,
  });
  assert.deepEqual(await again.view(), before.view);
  assert.deepEqual(await again.render("openai"), fixture.views.at(-1));
  assert.deepEqual(await again.facts(), before.facts);
  assert.deepEqual(await again.messages(), before.messages);
  again.free();
  reopened.close();
});

test("a store that rejects a write makes the call reject with StoreError and loses nothing", async () => {
  const inner = memoryStore();
  let failNext = false;
  const store = {
    ...inner,
    writeIf(guard, expected, writes) {
      if (failNext) {
        failNext = false;
        return Promise.reject(new Error("disk full"));
      }
      return inner.writeIf(guard, expected, writes);
    },
  };
  const clock = manualClock();
  const memory = await Memory.open({ namespace: "faults", model: quietModel(), store, clock });
  await memory.addMessage({ role: "user", content: "Book the flight to Oslo for Tuesday." });
  clock.advance(MIN);
  const view = await memory.render();
  const data = new Map(inner.data);

  failNext = true;
  const err = await memory.addMessage({ role: "assistant", content: "Booked: Oslo, Tuesday 9:40." }).then(
    () => assert.fail("the call must reject"),
    (e) => e,
  );
  assert.ok(err instanceof StoreError, `a StoreError, got ${err?.name}`);
  assert.ok(err instanceof EngramError);
  assert.equal(err.code, "store");
  assert.match(err.message, /disk full/);
  assert.deepEqual(await memory.render(), view, "the view is as before the failed call");
  assert.deepEqual(inner.data, data, "nothing was written");

  // The same call succeeds once the store is back, with the next id.
  const added = await memory.addMessage({ role: "assistant", content: "Booked: Oslo, Tuesday 9:40." });
  assert.equal(added.message, 2);
  assert.deepEqual((await memory.messages()).map((m) => m.content), [
    "Book the flight to Oslo for Tuesday.",
    "Booked: Oslo, Tuesday 9:40.",
  ]);
  memory.free();
});

test("a second addMessage while the first awaits the model is queued, not refused", async () => {
  const waiting = [];
  const model = functionModel(
    (req) =>
      new Promise((resolve) => {
        // Each model answer waits until the test releases it.
        waiting.push(() => resolve(req.task === "segment" ? { boundary: 0.1 } : { facts: [] }));
      }),
  );
  const clock = manualClock();
  const memory = await Memory.open({ namespace: "queue", model, store: memoryStore(), clock });
  await memory.addMessage({ role: "user", content: "First message, judged by nobody." });
  const second = memory.addMessage({ role: "assistant", content: "Second message: waits for its judgment." });
  const third = memory.addMessage({ role: "user", content: "Third message, queued behind the second." });
  const view = memory.render();
  // Release model answers as they are asked for, until every call settles.
  let settled = false;
  const all = Promise.all([second, third, view]).finally(() => (settled = true));
  while (!settled) {
    await new Promise((r) => setTimeout(r, 1));
    waiting.splice(0).forEach((release) => release());
  }
  const [a2, a3, rendered] = await all;
  assert.equal(a2.message, 2);
  assert.equal(a3.message, 3);
  assert.deepEqual(
    rendered.map((m) => m.content),
    ["First message, judged by nobody.", "Second message: waits for its judgment.", "Third message, queued behind the second."],
  );
  memory.free();
});

test("the raw binding refuses an overlapping call with code in-use (the class queues instead)", async () => {
  const require = createRequire(import.meta.url);
  const { WasmMemory } = require("../pkg/node/engram.js");
  let release;
  const model = functionModel(() => new Promise((r) => (release = () => r({ boundary: 0.1 }))));
  const raw = await WasmMemory.open("raw", memoryStore(), model, manualClock(), undefined);
  await raw.addMessage({ role: "user", content: "one" });
  // A user message after another: its boundary judgment awaits the model.
  const pending = raw.addMessage({ role: "user", content: "two" });
  await new Promise((r) => setTimeout(r, 1));
  assert.equal(raw.busy, true);
  const err = await raw.view().then(
    () => assert.fail("must reject"),
    (e) => e,
  );
  assert.equal(err.code, "in-use");
  assert.throws(() => raw.takeDegraded(), (e) => e.code === "in-use", "degraded steps are taken between calls");
  release();
  assert.equal((await pending).message, 2);
  assert.equal(raw.busy, false);
  assert.deepEqual(raw.takeDegraded(), []);
  raw.free();
});

test("bad input rejects with InvalidInputError and changes nothing", async () => {
  const memory = await Memory.open({ namespace: "input", model: quietModel(), store: memoryStore(), clock: manualClock() });
  for (const bad of [
    { role: "robot", content: "beep" },
    { role: "user", content: "   " },
    { role: "tool", content: "42", tool_call_id: "nope" },
  ]) {
    const err = await memory.addMessage(bad).then(() => assert.fail(`accepted ${JSON.stringify(bad)}`), (e) => e);
    assert.ok(err instanceof InvalidInputError, `${JSON.stringify(bad)}: ${err}`);
    assert.equal(err.code, "invalid-input");
  }
  assert.equal((await memory.stats()).messages, 0);
  await assert.rejects(memory.explain({ episode: 7 }), InvalidInputError);
  await assert.rejects(memory.render("markdown"), InvalidInputError);
  await assert.rejects(
    Memory.open({ namespace: "bad/ns", model: quietModel(), store: memoryStore() }),
    (e) => e instanceof InvalidInputError && /namespace/.test(e.message),
  );
  await assert.rejects(
    Memory.open({ namespace: "ok", model: quietModel(), store: memoryStore(), config: { ceiling_tokens: 10 } }),
    InvalidInputError,
  );
  await assert.rejects(
    Memory.open({ namespace: "ok", model: quietModel(), store: memoryStore(), clock: { now: () => "soon" } }),
    (e) => e instanceof InvalidInputError && /clock/.test(e.message),
  );
  memory.free();
});

test("OpenAI-shaped messages with tool calls are taken as they come from the API", async () => {
  const memory = await Memory.open({ namespace: "tools", model: quietModel(), store: memoryStore(), clock: manualClock() });
  await memory.addMessage({ role: "user", content: [{ type: "text", text: "Weather in Porto?" }] });
  await memory.addMessage({
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_9", type: "function", function: { name: "weather", arguments: '{"city":"Porto"}' } }],
  });
  await memory.addMessage({ role: "tool", tool_call_id: "call_9", content: "18 C, sunny" });
  assert.deepEqual(await memory.render("openai"), [
    { role: "user", content: "Weather in Porto?" },
    {
      role: "assistant",
      content: "",
      tool_calls: [{ id: "call_9", type: "function", function: { name: "weather", arguments: '{"city":"Porto"}' } }],
    },
    { role: "tool", content: "18 C, sunny", tool_call_id: "call_9" },
  ]);
  memory.free();
});

test("note writes the chat model's facts (arguments as JSON text) and emits a note event", async () => {
  const memory = await Memory.open({
    namespace: "note",
    model: cutModel(),
    store: memoryStore(),
    clock: manualClock(),
    config: { min_episode_tokens: 1 },
  });
  const tool = memory.noteTool();
  assert.equal(tool.type, "function");
  assert.equal(tool.function.name, "note");
  assert.deepEqual(tool.function.parameters.required, ["facts"]);
  await memory.addMessage({ role: "user", content: "Our launch date is June 3, decided today." });
  const formed = [];
  memory.on("formed", (f) => formed.push(f));
  await memory.addMessage({ role: "user", content: "Next topic: the hiring plan." });
  assert.deepEqual(formed, [{ episodes: [1], message: 2 }]);
  const notes = [];
  memory.on("note", (n) => notes.push(n));
  const outcome = await memory.note(
    JSON.stringify({
      facts: [{ subject: "launch", predicate: "is on", object: "June 3", sentence: "The launch is on June 3.", kind: "decided" }],
    }),
  );
  assert.deepEqual(outcome.added, [1]);
  assert.deepEqual(notes, [outcome]);
  const [fact] = await memory.facts();
  assert.equal(fact.sentence, "The launch is on June 3.");
  assert.equal(fact.kind, "decided");
  const why = await memory.explain({ fact: 1 });
  assert.equal(why.sentence, "The launch is on June 3.");
  await assert.rejects(memory.note("{not json"), InvalidInputError);
  memory.free();
});

test("recall on demand walks with the relevance task and changes nothing", async () => {
  const asked = [];
  const model = functionModel((req) => {
    asked.push(req.task);
    if (req.task === "relevance") return { relevant: [1] };
    if (req.task === "segment") return { boundary: 0.9 };
    if (req.task === "split") return { parts: ["launch date"] };
    return { facts: [] };
  });
  const memory = await Memory.open({
    namespace: "recall", model, store: memoryStore(), clock: manualClock(), config: { min_episode_tokens: 1 },
  });
  await memory.addMessage({ role: "user", content: "Our launch date is June 3, decided today." });
  await memory.addMessage({ role: "user", content: "Next topic: the hiring plan for the autumn." });
  await memory.note({
    episode: 1,
    facts: [{ subject: "launch", predicate: "is on", object: "June 3", sentence: "The launch is on June 3.", kind: "decided" }],
  });
  const before = await memory.export();
  asked.length = 0;
  const hits = await memory.recall("When is the launch?", { include_in_view: true });
  assert.equal(hits[0].text, "The launch is on June 3.");
  assert.ok(asked.includes("relevance"), `the walk judged relevance: ${asked}`);
  assert.equal(await memory.export(), before);
  memory.free();
});

test("a read that goes on without the model emits degraded too (a search whose walk fails)", async () => {
  const model = functionModel((req) => {
    if (req.task === "relevance") throw new Error("relevance service down");
    if (req.task === "segment") return { boundary: 0.9 };
    return { facts: [] };
  });
  const memory = await Memory.open({
    namespace: "read-degraded", model, store: memoryStore(), clock: manualClock(), config: { min_episode_tokens: 1, model_attempts: 2 },
  });
  await memory.addMessage({ role: "user", content: "Our launch date is June 3, decided today." });
  await memory.addMessage({ role: "user", content: "Next topic: the hiring plan for the autumn." });
  await memory.note({
    episode: 1,
    facts: [{ subject: "launch", predicate: "is on", object: "June 3", sentence: "The launch is on June 3.", kind: "decided" }],
  });
  const degraded = [];
  memory.on("degraded", (d) => degraded.push(d));
  const before = await memory.export();
  const hits = await memory.recall("When is the launch?", { include_in_view: true });
  assert.equal(hits[0].text, "The launch is on June 3.", "the fused ranking answers");
  assert.equal(degraded.length, 1);
  assert.equal(degraded[0].task, "relevance");
  assert.equal(degraded[0].attempts, 2);
  assert.match(degraded[0].error, /relevance service down/);
  assert.equal(await memory.export(), before, "a search writes nothing");
  const { model: health } = await memory.stats();
  assert.equal(health.failed.relevance, 2);
  assert.equal(health.degraded_steps, 1);
  assert.equal(degraded.length, 1, "each step is emitted once");
  memory.free();
});

test("the scenario's memory answers facts, entities, episodes, search and explain", async () => {
  const { memory } = await replayScenario(engram, fixture, memoryStore());
  const facts = await memory.facts();
  const budget12 = facts.find((f) => f.sentence === "The Lisbon offsite budget is 12000 euros.");
  const budget15 = facts.find((f) => f.sentence === "The Lisbon offsite budget is 15000 euros.");
  assert.ok(budget12 && budget15, "both budget facts are kept");
  assert.deepEqual(budget12.retired?.by, budget15.id, "the newer budget retired the older");
  const entities = await memory.entities();
  assert.deepEqual(
    entities.slice(0, 2).map((e) => e.name),
    ["Acme team", "Lisbon offsite"],
  );
  const hits = await memory.search("budget of the offsite", { limit: 3 });
  assert.equal(hits[0].text, "The Lisbon offsite budget is 12000 euros.");
  assert.equal(hits[0].retired, true, "a retired fact is found and marked");
  const episodes = await memory.episodes();
  assert.ok(episodes.some((e) => e.state === "sealed" || e.state === "forgotten"));
  const why = await memory.explain({ fact: budget12.id });
  assert.match(why.summary, /retired/);
  const episode = await memory.explain({ episode: episodes[0].id });
  assert.equal(episode.episode, episodes[0].id);
  assert.equal(typeof (await memory.recalls()).length, "number");
  const stats = await memory.stats();
  assert.equal(stats.messages, fixture.steps.length);
  memory.free();
});

test("the view at a past time is the view the memory showed then", async () => {
  const { memory } = await replayScenario(engram, fixture, memoryStore());
  let checked = 0;
  for (let i = 0; i + 1 < fixture.steps.length; i++) {
    if (fixture.steps[i + 1].at === fixture.steps[i].at) continue; // two calls in one ms: the later one shows
    assert.deepEqual(await memory.render("openai", { at: fixture.steps[i].at }), fixture.views[i], `view at step ${i + 1}`);
    checked++;
  }
  assert.ok(checked > 20);
  assert.deepEqual(await memory.view({ at: new Date(fixture.steps.at(-1).at) }), await memory.view());
  memory.free();
});

test("export then import into an empty store gives the same view", async () => {
  const { memory } = await replayScenario(engram, fixture, memoryStore());
  const exported = await memory.export();
  const view = await memory.view();
  memory.free();
  const copy = await Memory.open({
    namespace: "moved",
    model: functionModel(() => assert.fail("import asks the model nothing")),
    store: memoryStore(),
    clock: manualClock(fixture.steps.at(-1).at),
    config: fixture.config,
  });
  await copy.import(exported);
  assert.deepEqual(await copy.view(), view);
  await assert.rejects(copy.import(exported), EngramError, "a memory that holds data refuses an import");
  copy.free();
});

test("a freed memory rejects calls with ClosedError; calls made before free settle", async () => {
  const memory = await Memory.open({ namespace: "free", model: quietModel(), store: memoryStore(), clock: manualClock() });
  const before = memory.addMessage({ role: "user", content: "made before free" });
  assert.equal(memory.closed, false);
  memory[Symbol.dispose]();
  assert.equal(memory.closed, true);
  assert.equal((await before).message, 1);
  await assert.rejects(memory.view(), ClosedError);
  assert.throws(() => memory.noteTool(), ClosedError);
});

test("model failures that cannot degrade reject with ModelError; a bad-answer code is kept apart", async () => {
  let thrown = Object.assign(new Error("embedding server down"), { code: "unavailable" });
  const memory = await Memory.open({
    namespace: "model-fails",
    model: functionModel((req) => (req.task === "segment" ? { boundary: 0.9 } : { facts: [] }), {
      embed: () => {
        throw thrown;
      },
    }),
    store: memoryStore(),
    clock: manualClock(),
    config: { min_episode_tokens: 1 },
  });
  await memory.addMessage({ role: "user", content: "Remember: the office wifi password rotates monthly." });
  await memory.addMessage({ role: "user", content: "Now about lunch." });
  const args = {
    facts: [{ subject: "wifi password", predicate: "rotates", object: "monthly", sentence: "The office wifi password rotates monthly." }],
  };
  const err = await memory.note(args).then(() => assert.fail("must reject"), (e) => e);
  assert.equal(err.code, "model");
  assert.equal(err.name, "ModelError");
  assert.match(err.message, /model unavailable: embedding server down/);

  thrown = Object.assign(new Error("vectors of the wrong size"), { code: "bad-answer" });
  const bad = await memory.note(args).then(() => assert.fail("must reject"), (e) => e);
  assert.equal(bad.code, "model");
  assert.match(bad.message, /bad model answer: vectors of the wrong size/);
  assert.deepEqual(await memory.facts(), [], "nothing was written");
  memory.free();
});

test("maintain() runs what waits after a reply when the host calls it; pending() shows it before and nothing after", async () => {
  const launch = { subject: "launch", predicate: "is on", object: "June 3", sentence: "The launch is on June 3.", kind: "decided" };
  const model = functionModel((req) => {
    switch (req.task) {
      case "segment":
        return { boundary: /New message[^\n]*\n[^\n]*: Next topic/.test(req.content) ? 0.95 : 0.1 };
      case "note":
        return { facts: /launch date is June 3/.test(req.content) ? [launch] : [] };
      case "trace":
        return { facts: [] };
      case "resolve":
        return { same_as: null };
      case "reconcile":
        return { judgments: [] };
      case "split":
        return { parts: ["message"] };
      case "distill":
        return { kept: [1] };
      default:
        throw new Error(`unexpected task ${req.task}`);
    }
  });
  const clock = manualClock();
  const memory = await Memory.open({
    namespace: "maintain",
    model,
    store: memoryStore(),
    clock,
    config: { ceiling_tokens: 200, min_episode_tokens: 1, maintain_after_reply: false, walk_with_model: false, fade_ahead: false },
  });
  const events = [];
  for (const e of ["formed", "fade", "distill", "degraded"]) memory.on(e, (d) => events.push([e, d]));
  const pad = (s) => `${s} (${"with every detail written out at length ".repeat(3).trim()})`;
  const add = (role, content) => {
    clock.advance(MIN);
    return memory.addMessage({ role, content });
  };

  let last = null;
  // Long turns, so that the launch episode fades out of the small view; the
  // last reply is short, so the recall block before it keeps its room.
  for (const [user, reply] of [
    ["Our launch date is June 3, decided today by the whole team", pad("Noted: the launch is on June 3")],
    ["Next topic: the hiring plan for the autumn", pad("Two engineers and a designer for the autumn")],
    ["Next topic: the office move to the new building in March", pad("The office moves in March")],
    ["Next topic: back to the launch date, is it still on", "Yes, it holds."],
  ]) {
    const asked = await add("user", pad(user));
    const answered = await add("assistant", reply);
    assert.equal(answered.maintained, null, "the reply did not run maintain (maintain_after_reply: false)");
    assert.equal(answered.maintain_error, null);
    assert.deepEqual(answered.degraded, []);
    const waiting = await memory.pending();
    assert.deepEqual(waiting.unjudged, [answered.message], "the reply's boundary judgment waits");
    const stored = (await memory.messages()).find((m) => m.id === answered.message);
    assert.equal(stored.judged, false);
    events.length = 0;
    const maintained = await memory.maintain();
    assert.deepEqual(maintained.judged, [answered.message], "maintain judged the reply");
    assert.deepEqual(maintained.degraded, []);
    assert.equal("judged" in (await memory.messages()).find((m) => m.id === answered.message), false, "judged is kept only while false");
    assert.deepEqual(await memory.pending(), { unjudged: [], undistilled: [], leaving: [], awaiting_note: [], fade_ahead: false });
    last = { asked, waiting, maintained, events: [...events] };
  }

  // The last user message brought the launch fact back (its episode had
  // faded); the reply ended that turn, and maintain distilled the block.
  const block = last.asked.recall;
  assert.ok(block != null, "a recall block was placed before the last user message");
  assert.deepEqual(last.waiting.undistilled, [block], "its distill waited for maintain");
  assert.deepEqual(last.maintained.distilled, [[block, { at: clock.now(), kept: [{ kind: "fact", id: 1 }], failed: false }]]);
  assert.deepEqual(last.events, [["distill", { block, distillation: last.maintained.distilled[0][1] }]]);
  const [recalled] = (await memory.recalls()).filter((b) => b.id === block);
  assert.equal(recalled.items[0].judgment, "ranked", "the walk is off: kept for its rank");
  assert.deepEqual(recalled.distilled, last.maintained.distilled[0][1]);
  assert.ok((await memory.fades()).length > 0, "the launch episode faded out");
  const stats = await memory.stats();
  assert.deepEqual(stats.pending, { unjudged: [], undistilled: [], leaving: [], awaiting_note: [], fade_ahead: false });
  assert.equal(stats.model.degraded_steps, 0);
  assert.equal(stats.model.consecutive_failures, 0);
  // Every message but the first was judged once; the one block distilled once.
  assert.equal(stats.model.calls.segment, 7, JSON.stringify(stats.model));
  assert.equal(stats.model.calls.distill, 1);
  memory.free();
});

test("a reply that ends the turn runs maintain in the same call by default", async () => {
  const memory = await Memory.open({ namespace: "after-reply", model: quietModel(), store: memoryStore(), clock: manualClock() });
  await memory.addMessage({ role: "user", content: "Book the flight to Oslo for Tuesday." });
  const reply = await memory.addMessage({ role: "assistant", content: "Booked: Oslo, Tuesday 9:40." });
  assert.notEqual(reply.maintained, null);
  assert.deepEqual(reply.maintained.judged, [], "the reply's judgment waits for the next user message's round");
  assert.equal(reply.maintain_error, null);
  assert.deepEqual((await memory.pending()).unjudged, [2]);
  memory.free();
});

test("durableObjectStore keeps long values whole in chunks and hides them from list", async () => {
  // A stand-in for Durable Object storage: Map-backed, transactions run
  // one at a time; the real one is exercised by the worker test.
  const data = new Map();
  let chain = Promise.resolve();
  const api = {
    async get(k) {
      if (Array.isArray(k)) return new Map(k.filter((x) => data.has(x)).map((x) => [x, data.get(x)]));
      return data.get(k);
    },
    async put(k, v) {
      if (typeof k === "object") for (const [a, b] of Object.entries(k)) data.set(a, b);
      else data.set(k, v);
    },
    async delete(k) {
      for (const x of [].concat(k)) data.delete(x);
    },
    async list({ prefix }) {
      return new Map([...data].filter(([k]) => k.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : 1)));
    },
  };
  const storage = { ...api, transaction: (fn) => (chain = chain.then(() => fn(api))) };
  const store = durableObjectStore(storage);
  const long = "x".repeat(100_000) + "é".repeat(50_000);
  assert.equal(await store.writeIf("engram/a/head", null, [["engram/a/snapshot", long], ["engram/a/head", "1"]]), true);
  assert.equal(await store.get("engram/a/snapshot"), long);
  assert.ok([...data.keys()].length > 3, "split into chunks");
  assert.deepEqual(await store.list("engram/a/"), ["engram/a/head", "engram/a/snapshot"]);
  assert.equal(await store.writeIf("engram/a/head", null, [["engram/a/head", "2"]]), false, "guard mismatch writes nothing");
  assert.equal(await store.writeIf("engram/a/head", "1", [["engram/a/snapshot", "short"], ["engram/a/head", "2"]]), true);
  assert.equal(await store.get("engram/a/snapshot"), "short");
  assert.deepEqual([...data.keys()].sort(), ["engram/a/head", "engram/a/snapshot"], "stale chunks are deleted");
});
