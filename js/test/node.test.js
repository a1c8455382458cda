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
  ModelError,
  offlineModel,
} from "engram";
import { replayScenario } from "./scenario.js";
import * as fx from "./scripted.js";

const fixture = JSON.parse(readFileSync(new URL("../../tests/fixtures/scenario.json", import.meta.url), "utf8"));
const T0 = 1_772_445_600_000;
const bytes = (text) => new TextEncoder().encode(text);
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

// The multi-thread scenario (each step's view is its thread's).
const threadsFixture = new URL("../../tests/fixtures/scenario-threads.json", import.meta.url);
test("the multi-thread scenario gives the fixture's view of each step's thread", async () => {
  const fixture = JSON.parse(readFileSync(threadsFixture, "utf8"));
  assert.ok(new Set(fixture.steps.map((s) => s.message.thread ?? "main")).size > 1, "the fixture has more than one thread");
  const { views, mismatches, position, memory } = await replayScenario(engram, fixture, memoryStore());
  assert.deepEqual(mismatches, []);
  assert.equal(position, fixture.transcript.length, "every recorded model call was made");
  assert.equal(views.length, fixture.views.length);
  for (let i = 0; i < views.length; i++) assert.deepEqual(views[i], fixture.views[i], `view after step ${i + 1} (thread ${fixture.steps[i].message.thread ?? "main"})`);
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
  const { WasmMemory } = await engram.init(); // the entry's raw bindings (pkg/web, shared by every entry)
  let release;
  const model = functionModel(() => new Promise((r) => (release = () => r({ boundary: 0.1 }))));
  const raw = await WasmMemory.open("raw", memoryStore(), model, manualClock(), undefined);
  await raw.addMessage({ role: "user", content: "one" });
  // A user message after another: its boundary judgment awaits the model.
  // A raw call (a WasmCall, made thenable by the package) runs once awaited or then'd.
  const pending = Promise.resolve(raw.addMessage({ role: "user", content: "two" }));
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
  // Within a budget facts come before the passages that say them.
  const hits = await memory.search("budget of the offsite", { limit: 3, budget_tokens: 1000 });
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

test("export in parts to a file and import from its stream give the same memory", async () => {
  const { memory } = await replayScenario(engram, fixture, memoryStore());
  const exported = await memory.export();
  const view = await memory.view();
  const parts = [];
  for await (const part of memory.exportParts({ maxBytes: 2048 })) {
    parts.push(part);
    // A message added half-way is not part of this export.
    if (parts.length === 2) await memory.addMessage({ role: "user", content: "added while exporting" });
  }
  assert.ok(parts.length > 3, `${exported.length} bytes came in ${parts.length} parts`);
  assert.equal(parts.join(""), exported, "the parts join to the export as it began");
  await assert.rejects(async () => {
    for await (const _ of memory.exportParts({ maxBytes: "big" }));
  }, InvalidInputError);
  const none = [];
  for await (const part of memory.exportParts(null)) none.push(part);
  assert.ok(none.length >= 1, "null options take the defaults");
  memory.free();
  const dir = mkdtempSync(join(tmpdir(), "engram-parts-"));
  try {
    const { createWriteStream, createReadStream } = await import("node:fs");
    const file = join(dir, "export.json");
    const out = createWriteStream(file);
    for (const part of parts) out.write(part);
    await new Promise((done) => out.end(done));
    const open = (ns) =>
      Memory.open({
        namespace: ns,
        model: functionModel(() => assert.fail("import asks the model nothing")),
        store: memoryStore(),
        clock: manualClock(fixture.steps.at(-1).at),
        config: fixture.config,
      });
    // A Node read stream in 333-byte chunks: cut inside strings and UTF-8.
    const copy = await open("from-file");
    await copy.importParts(createReadStream(file, { highWaterMark: 333 }));
    assert.deepEqual(await copy.view(), view);
    await assert.rejects(copy.importParts([exported]), EngramError, "a memory that holds data refuses an import");
    copy.free();
    // A source that fails half-way leaves nothing behind: the next import is whole.
    const other = await open("failing-source");
    async function* failing() {
      yield bytes(exported.slice(0, 1000));
      throw new Error("disk gone");
    }
    await assert.rejects(other.importParts(failing()), /disk gone/);
    await assert.rejects(other.importParts([exported.slice(0, 1000), 42]), InvalidInputError);
    await assert.rejects(other.importParts(7), InvalidInputError);
    await other.importParts(new Blob([exported]));
    assert.deepEqual(await other.view(), view);
    other.free();
    // Text cut inside a surrogate pair (an emoji) keeps the emoji.
    const emoji = await Memory.open({ namespace: "emoji", model: quietModel(), store: memoryStore(), clock: manualClock() });
    await emoji.addMessage({ role: "user", content: "The garden needs 🍅 and 🌱 by June." });
    const text = await emoji.export();
    const at = text.indexOf("🍅") + 1;
    assert.equal(text.charCodeAt(at - 1) >> 10, 0xd800 >> 10, "a high surrogate ends the first piece");
    const back = await Memory.open({ namespace: "emoji", model: quietModel(), store: memoryStore(), clock: manualClock() });
    await back.importParts([text.slice(0, at), text.slice(at)]);
    assert.equal((await back.messages())[0].content, "The garden needs 🍅 and 🌱 by June.");
    assert.equal(await back.export(), text);
    // Bytes cut inside a character, then text: not one export.
    const cut = bytes(text.slice(0, at - 1)).length + 2;
    const mixed = await Memory.open({ namespace: "emoji", model: quietModel(), store: memoryStore(), clock: manualClock() });
    await assert.rejects(mixed.importParts([bytes(text).slice(0, cut), text.slice(at + 1)]), InvalidInputError);
    await mixed.importParts([bytes(text).slice(0, cut), bytes(text).slice(cut)]);
    assert.equal(await mixed.export(), text, "the same cut as bytes only is fine");
    mixed.free();
    emoji.free();
    back.free();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
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
  const long = new Uint8Array(300_000).map((_, i) => (i * 7) & 0xff);
  assert.equal(await store.writeIf("engram/a/head", null, [["engram/a/snapshot", long], ["engram/a/head", bytes("1")]]), true);
  assert.deepEqual(await store.get("engram/a/snapshot"), long);
  assert.ok([...data.keys()].length > 3, "split into chunks");
  assert.ok([...data.values()].every((v) => v instanceof Uint8Array || typeof v.engramChunks === "number"), "bytes kept natively");
  assert.deepEqual(await store.list("engram/a/"), ["engram/a/head", "engram/a/snapshot"]);
  assert.equal(await store.writeIf("engram/a/head", null, [["engram/a/head", bytes("2")]]), false, "guard mismatch writes nothing");
  // The expected value is compared by content: a fresh array of the same bytes.
  assert.equal(await store.writeIf("engram/a/head", bytes("1"), [["engram/a/snapshot", bytes("short")], ["engram/a/head", bytes("2")]]), true);
  assert.deepEqual(await store.get("engram/a/snapshot"), bytes("short"));
  assert.deepEqual([...data.keys()].sort(), ["engram/a/head", "engram/a/snapshot"], "stale chunks are deleted");

  // Values written as text (before values were bytes), chunked or not, read as their UTF-8.
  data.clear();
  const text = "x".repeat(40_000) + "é".repeat(20_000);
  data.set("engram/b/head", '{"v":1}');
  data.set("engram/b/snapshot", { engramChunks: 2 });
  data.set("\u0001engram-chunk\u0001engram/b/snapshot\u00010", text.slice(0, 32_768));
  data.set("\u0001engram-chunk\u0001engram/b/snapshot\u00011", text.slice(32_768));
  assert.deepEqual(await store.get("engram/b/head"), bytes('{"v":1}'));
  assert.deepEqual(await store.get("engram/b/snapshot"), bytes(text));
  assert.equal(await store.writeIf("engram/b/head", bytes('{"v":1}'), [["engram/b/snapshot", null]]), true);
  assert.deepEqual([...data.keys()], ["engram/b/head"]);
});

test("stores keep bytes and compare writeIf's expected value by content", async () => {
  const dir = mkdtempSync(join(tmpdir(), "engram-bytes-"));
  const stores = { memory: memoryStore(), sqlite: sqliteStore(join(dir, "kv.db")) };
  const odd = new Uint8Array([0, 255, 128, 10, 0]);
  for (const [name, store] of Object.entries(stores)) {
    assert.equal(await store.get("k"), null, name);
    await store.put("k", odd);
    assert.deepEqual(new Uint8Array(await store.get("k")), odd, name);
    assert.equal(await store.writeIf("k", new Uint8Array([0, 255]), [["k", null]]), false, name);
    assert.equal(await store.writeIf("k", odd.slice(), [["k", new Uint8Array(0)], ["j", odd.subarray(1, 3)]]), true, name);
    assert.deepEqual(new Uint8Array(await store.get("k")), new Uint8Array(0), name);
    assert.deepEqual(new Uint8Array(await store.get("j")), new Uint8Array([255, 128]), name);
    assert.equal(await store.writeIf("k", new Uint8Array(0), [["k", null]]), true, `${name}: empty bytes are not absent`);
    assert.equal(await store.writeIf("k", null, []), true, name);
  }
  const kinds = stores.sqlite.database.prepare("SELECT DISTINCT typeof(value) FROM engram_kv").pluck().all();
  assert.deepEqual(kinds, ["blob"]);
  stores.sqlite.close();
});

test("a SQLite table from before values were bytes needs no migration", async () => {
  const dir = mkdtempSync(join(tmpdir(), "engram-legacy-"));
  const path = join(dir, "old.db");
  const Database = createRequire(import.meta.url)("better-sqlite3");
  const old = new Database(path);
  old.exec("CREATE TABLE engram_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID");
  old.prepare("INSERT INTO engram_kv VALUES (?, ?)").run("k", '{"é":1}');
  old.close();
  const store = sqliteStore(path);
  assert.deepEqual(new Uint8Array(store.get("k")), bytes('{"é":1}'), "text rows read as their UTF-8");
  assert.equal(store.writeIf("k", bytes('{"é":1}'), [["k", new Uint8Array([0, 200])]]), true);
  assert.deepEqual(new Uint8Array(store.get("k")), new Uint8Array([0, 200]));
  const memory = await Memory.open({ namespace: "old", model: offlineModel(), store, clock: { now: () => T0 } });
  await memory.addMessage({ role: "user", content: "Hello there." });
  memory.free();
  const again = await Memory.open({ namespace: "old", model: offlineModel(), store, clock: { now: () => T0 } });
  assert.equal((await again.messages()).length, 1);
  again.free();
  store.close();
});

test("a store whose get answers something other than bytes fails the call with StoreError", async () => {
  const inner = memoryStore();
  const seeded = await Memory.open({ namespace: "t", model: offlineModel(), store: inner, clock: { now: () => T0 } });
  await seeded.addMessage({ role: "user", content: "Hello there." });
  seeded.free();
  for (const [wrong, kind] of [
    [(v) => new TextDecoder().decode(v), "string"],
    [(v) => [...v], "Array"],
    [(v) => new Uint16Array(v), "Uint16Array"],
  ]) {
    const store = { ...inner, get: (key) => (inner.get(key) === null ? null : wrong(inner.get(key))) };
    await assert.rejects(
      Memory.open({ namespace: "t", model: offlineModel(), store, clock: { now: () => T0 } }),
      (e) => e instanceof StoreError && e.message.includes(`returned a ${kind}, not a Uint8Array`),
      kind,
    );
  }
  // An ArrayBuffer is bytes too.
  const buffers = { ...inner, get: (key) => inner.get(key)?.slice().buffer ?? null };
  const memory = await Memory.open({ namespace: "t", model: offlineModel(), store: buffers, clock: { now: () => T0 } });
  assert.equal((await memory.messages()).length, 1);
  memory.free();
});

// ---- nothing lost, nothing forged ------------------------------------------------

/** A promise with its resolve function outside. */
function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const SHORT = 200;

test("an add whose answer timed out after the commit is retried with its client id and stored once", async () => {
  const inner = memoryStore();
  const late = [];
  let loseAnswer = false;
  let down = false;
  let commits = 0;
  const store = {
    ...inner,
    get(key) {
      if (down) {
        down = false;
        throw new Error("the store is down");
      }
      return inner.get(key);
    },
    writeIf(guard, expected, writes) {
      const done = inner.writeIf(guard, expected, writes);
      if (done) commits++;
      if (!loseAnswer) return done;
      // The commit lands, then its answer never comes (the deadline cuts
      // it), and the store is down for the read that would have shown the
      // engine its write.
      loseAnswer = false;
      down = true;
      const answer = deferred();
      late.push(() => answer.resolve(done));
      return answer.promise;
    },
  };
  const memory = await Memory.open({
    namespace: "lost", model: quietModel(), store, clock: manualClock(), deadlines: { store: SHORT },
  });
  const first = await memory.addMessage({ role: "user", content: "Plan the Lisbon offsite.", client_id: "m-1" });
  assert.equal(first.duplicate, false);
  const events = [];
  for (const e of ["formed", "fade", "recall", "distill"]) memory.on(e, (d) => events.push([e, d]));

  loseAnswer = true;
  const reply = { role: "assistant", content: "When do you leave?", clientId: "m-2" };
  const started = Date.now();
  const lost = await memory.addMessage(reply).then(() => assert.fail("the answer was lost"), (e) => e);
  assert.ok(lost instanceof StoreError, `${lost}`);
  assert.match(lost.message, /store\.writeIf: timed out: no answer within 200 ms/);
  assert.ok(Date.now() - started >= SHORT - 10, "after the deadline");
  assert.equal(commits, 2, "the lost commit landed");
  const data = new Map(inner.data);

  // The host retries the same message with the same client id.
  events.length = 0;
  const retried = await memory.addMessage(reply);
  assert.equal(retried.duplicate, true, "the retry says duplicate");
  assert.equal(retried.message, 2, "the first add's id");
  assert.deepEqual(events, [], "a duplicate did no work to report");
  assert.equal(commits, 2, "the retry wrote nothing");
  assert.deepEqual(inner.data, data);
  late.splice(0).forEach((answer) => answer());
  await sleep(1);
  assert.deepEqual(
    (await memory.messages()).map((m) => [m.content, m.client_id]),
    [
      ["Plan the Lisbon offsite.", "m-1"],
      ["When do you leave?", "m-2"],
    ],
    "stored once",
  );

  // A write that lands and then fails while the store is up: the engine
  // reads it back and the call succeeds; a host retrying anyway gets a
  // duplicate, and so does an old id.
  const third = { role: "user", content: "On March 2.", client_id: "m-3" };
  const failOnce = store.writeIf;
  store.writeIf = (guard, expected, writes) => {
    store.writeIf = failOnce;
    const done = inner.writeIf(guard, expected, writes);
    commits++;
    return Promise.reject(new Error(`connection reset after the commit (applied: ${done})`));
  };
  const added = await memory.addMessage(third);
  assert.deepEqual([added.message, added.duplicate], [3, false], "the engine read its write back");
  const again = await memory.addMessage(third);
  assert.deepEqual([again.message, again.duplicate], [3, true]);
  const old = await memory.addMessage({ role: "user", content: "Plan the Lisbon offsite.", client_id: "m-1" });
  assert.deepEqual([old.message, old.duplicate], [1, true]);
  assert.equal((await memory.messages()).length, 3);
  assert.equal(commits, 3);

  await assert.rejects(memory.addMessage({ role: "user", content: "hi", client_id: "" }), InvalidInputError);
  await assert.rejects(memory.addMessage({ role: "user", content: "hi", client_id: "x".repeat(257) }), InvalidInputError);
  await assert.rejects(memory.addMessage({ role: "user", content: "hi", client_id: 7 }), InvalidInputError);
  assert.equal((await memory.messages()).length, 3);
  memory.free();
});

/**
 * A model whose calls (once `hung.on`) wait until the test releases them,
 * then answer `late` (a cut, were it taken); it counts calls and keeps the
 * signals it was given.
 */
function hungModel() {
  const hung = { on: false, calls: 0, signals: [], gate: deferred() };
  hung.model = functionModel((req, { signal } = {}) => {
    hung.calls++;
    const answer = req.task === "segment" ? { boundary: 0.1 } : { facts: [] };
    if (!hung.on) return answer;
    hung.signals.push(signal);
    return hung.gate.promise.then(() => (req.task === "segment" ? { boundary: 0.95 } : answer));
  });
  return hung;
}

test("a hung model degrades its steps after the deadline; the queued calls go on and its late answer is ignored", async () => {
  const hung = hungModel();
  const memory = await Memory.open({
    namespace: "hung-model", model: hung.model, store: memoryStore(), clock: manualClock(), deadlines: { model: SHORT },
  });
  await memory.addMessage({ role: "user", content: "Plan the Lisbon offsite." });
  await memory.addMessage({ role: "assistant", content: "When do you leave?" });
  const degraded = [];
  memory.on("degraded", (d) => degraded.push(d));
  hung.on = true;
  const started = Date.now();
  const adding = memory.addMessage({ role: "user", content: "On March 2." });
  const queued = memory.messages().then((m) => [m, degraded.length]);
  const added = await adding;
  const took = Date.now() - started;
  // The reply's judgment and the new message's, asked at once, three attempts each.
  assert.equal(added.degraded.length, 2, JSON.stringify(added.degraded));
  for (const d of added.degraded) {
    assert.equal(d.task, "segment");
    assert.match(d.error, /timed out: no answer within 200 ms/);
  }
  assert.equal(hung.calls, 6, "three attempts per step, each abandoned");
  assert.ok(took >= 3 * SHORT - 10 && took < 10_000, `took ${took} ms (the two steps ask at once)`);
  assert.ok(hung.signals.length === 6 && hung.signals.every((s) => s.aborted), "each abandoned call's signal was aborted");
  const [messages, seen] = await queued;
  assert.equal(messages.length, 3, "the queued call went on");
  assert.equal(seen, 2, "one degraded event per step, before the next call");
  assert.deepEqual(degraded.map((d) => d.task), ["segment", "segment"]);

  // The late answers (cuts) change nothing.
  const before = await memory.export();
  hung.gate.resolve();
  await sleep(5);
  assert.equal(await memory.export(), before);

  hung.on = false;
  const next = await memory.addMessage({ role: "user", content: "And back on March 5." });
  assert.deepEqual(next.degraded, []);
  const [, , , fourth] = await memory.messages();
  assert.equal(fourth.boundary, 0.1, "judged by the model");
  assert.equal((await memory.stats()).model.failed.segment, 6);
  memory.free();
});

test("a hung model with strict rejects the call with ModelError after the deadline and writes nothing", async () => {
  const hung = hungModel();
  const memory = await Memory.open({
    namespace: "hung-strict",
    model: hung.model,
    store: memoryStore(),
    clock: manualClock(),
    config: { strict: true, model_attempts: 1 },
    deadlines: { model: SHORT },
  });
  await memory.addMessage({ role: "user", content: "Plan the Lisbon offsite." });
  await memory.addMessage({ role: "assistant", content: "When do you leave?" });
  const before = await memory.export();
  hung.on = true;
  const err = await memory.addMessage({ role: "user", content: "On March 2." }).then(() => assert.fail("strict"), (e) => e);
  assert.ok(err instanceof ModelError, `${err}`);
  assert.match(err.message, /timed out/);
  assert.equal(await memory.export(), before, "nothing written");
  hung.gate.resolve();
  hung.on = false;
  assert.equal((await memory.addMessage({ role: "user", content: "On March 2." })).message, 3, "the next call goes on");
  memory.free();
});

/** memoryStore whose next call of `method` (once armed) hangs until released, then answers `late`. */
function hangingStore(method) {
  const inner = memoryStore();
  const s = { inner, armed: false, hung: 0, release: null };
  s.store = {
    ...inner,
    [method](...args) {
      if (!s.armed) return inner[method](...args);
      s.armed = false;
      s.hung++;
      const gate = deferred();
      s.release = (late) => gate.resolve(late);
      return gate.promise;
    },
  };
  return s;
}

for (const [method, late] of [
  ["get", '{"version":2,"seq":99}'],
  ["writeIf", true],
]) {
  test(`a store whose ${method} never answers fails the call with StoreError after the deadline; nothing is written and the next call goes on`, async () => {
    const s = hangingStore(method);
    const memory = await Memory.open({
      namespace: `hung-${method}`, model: quietModel(), store: s.store, clock: manualClock(), deadlines: { store: SHORT },
    });
    await memory.addMessage({ role: "user", content: "Plan the Lisbon offsite." });
    const data = new Map(s.inner.data);
    const view = await memory.view();

    s.armed = true;
    const started = Date.now();
    // (A user message: it reads the head first; a reply on this quiet
    // handle would commit without a read.)
    const failing = memory.addMessage({ role: "user", content: "When do you leave?" });
    const queued = memory.view();
    const err = await failing.then(() => assert.fail("the store hung"), (e) => e);
    const took = Date.now() - started;
    assert.equal(s.hung, 1);
    assert.ok(err instanceof StoreError, `${err}`);
    assert.equal(err.code, "store");
    assert.match(err.message, new RegExp(`store\\.${method}: timed out: no answer within 200 ms`));
    assert.ok(took >= SHORT - 10 && took < 10_000, `took ${took} ms`);
    assert.deepEqual(s.inner.data, data, "nothing written");
    assert.deepEqual(await queued, view, "the queued call went on");

    // The late answer changes nothing; the next call succeeds.
    s.release(late);
    await sleep(5);
    assert.deepEqual(s.inner.data, data);
    const added = await memory.addMessage({ role: "user", content: "When do you leave?" });
    assert.equal(added.message, 2);
    assert.deepEqual((await memory.messages()).map((m) => m.content), ["Plan the Lisbon offsite.", "When do you leave?"]);
    memory.free();
  });
}

test("deadlines are ms above 0, or null for none", async () => {
  for (const deadlines of [{ model: 0 }, { store: "10s" }, { model: -5 }, { store: NaN }, 60_000]) {
    await assert.rejects(
      Memory.open({ namespace: "d", model: quietModel(), store: memoryStore(), deadlines }),
      (e) => e instanceof InvalidInputError && /deadlines/.test(e.message),
      JSON.stringify(deadlines),
    );
  }
  const memory = await Memory.open({
    namespace: "d", model: quietModel(), store: memoryStore(), deadlines: { model: null, store: Infinity },
  });
  assert.equal((await memory.addMessage({ role: "user", content: "hi" })).message, 1);
  memory.free();
});

// ---- untrusted text stays data (tests/untrusted_text.rs, the same scenarios) ----

test("hostile facts and names render as data in the facts block", async () => {
  const clock = fx.manualClock();
  const memory = await Memory.open({
    namespace: "test", model: fx.fxModel(), store: memoryStore(), clock, config: { ceiling_tokens: 20_000, fade_ahead: false },
  });
  // Two big turns: the second reaches the ceiling and episode 1 leaves.
  for (const topic of ["garden", "taxes"]) {
    await memory.addMessage({ role: "user", content: fx.sized(`${fx.NEW} ${topic}`, 5_000) });
    clock.advance(fx.MIN);
    await memory.addMessage({ role: "assistant", content: fx.sized(topic, 5_000) });
    clock.advance(fx.MIN);
  }
  assert.equal((await memory.episodes()).find((e) => e.id === 1).state, "sealed");
  const facts = fx.adversarial.strings.map((s, i) => ({
    subject: `${fx.take(s, 200)} ${i}`,
    predicate: "says",
    object: "the user",
    sentence: fx.take(s, 1_500),
    kind: "fact",
  }));
  facts.push({ subject: "Launch", predicate: "is", object: "approved", sentence: "The launch is approved.", kind: "done" });
  const outcome = await memory.note({ episode: 1, facts });
  assert.equal(outcome.added.length + outcome.merged.length, facts.length, "hostile facts are still facts");
  const view = await memory.view();
  const shown = view.items.filter((i) => i.kind === "facts").reduce((n, i) => n + i.facts.length, 0);
  assert.equal(shown, facts.length, "every fact is in the facts block");
  assert.ok(fx.checkRendering(view, 1) > 0);
  memory.free();
});

test("hostile messages quoted in a recall block render as data", async () => {
  const clock = fx.manualClock();
  const memory = await Memory.open({
    namespace: "test",
    model: fx.fxModel(),
    store: memoryStore(),
    clock,
    // Candidates are kept by rank, so whatever matches is shown.
    config: { ceiling_tokens: 6_000, fade_ahead: false, walk_with_model: false, split_with_model: false },
  });
  for (const [i, s] of fx.adversarial.strings.entries()) {
    await memory.addMessage({ role: "user", content: `${fx.NEW} hostile ${i}: ${fx.take(s, 2_000)}` });
    clock.advance(fx.MIN);
    await memory.addMessage({ role: "assistant", content: fx.sized(`reply ${i}`, 1_200) });
    clock.advance(fx.MIN);
  }
  const view = await memory.view();
  const block = view.items.find((i) => i.kind === "recall");
  assert.ok(block, "recall blocks quoting the hostile messages are in view");
  assert.ok(block.text.includes("From the conversation:"), block.text);
  assert.ok(block.text.includes("hostile"), block.text);
  fx.checkRendering(view, 0);
  memory.free();
});

test("a StoreError's cause is the store's own error object, thrown or rejected, at open and after", async () => {
  class DiskFull extends Error {
    code = "ENOSPC";
  }
  const inner = memoryStore();
  let fail = null; // { method, how: "throw" | "reject", error }
  const store = {};
  for (const method of ["get", "put", "delete", "list", "writeIf"]) {
    store[method] = (...args) => {
      if (fail?.method === method) {
        const { error, how } = fail;
        fail = null;
        if (how === "throw") throw error;
        return Promise.reject(error);
      }
      return inner[method](...args);
    };
  }
  const opening = new DiskFull("cannot read: disk gone");
  fail = { method: "get", how: "reject", error: opening };
  const refused = await Memory.open({ namespace: "cause", model: quietModel(), store, clock: manualClock() }).then(
    () => assert.fail("open must reject"),
    (e) => e,
  );
  assert.ok(refused instanceof StoreError, `${refused}`);
  assert.equal(refused.cause, opening, "open's StoreError has the store's error as cause too");

  const memory = await Memory.open({ namespace: "cause", model: quietModel(), store, clock: manualClock() });
  await memory.addMessage({ role: "user", content: "Book the flight to Oslo for Tuesday." });
  for (const how of ["reject", "throw"]) {
    const error = new DiskFull(`disk full (${how})`);
    fail = { method: "writeIf", how, error };
    const err = await memory.addMessage({ role: "assistant", content: "Booked." }).then(
      () => assert.fail("the call must reject"),
      (e) => e,
    );
    assert.ok(err instanceof StoreError, `a StoreError, got ${err}`);
    assert.equal(err.code, "store");
    assert.match(err.message, new RegExp(`disk full \\(${how}\\)`), "the message still says what the store said");
    assert.equal(err.cause, error, "the cause is the very object the store threw");
    assert.equal(err.cause.code, "ENOSPC");
  }
  // A later failure of another kind does not inherit an old cause.
  const ok = await memory.addMessage({ role: "assistant", content: "Booked." });
  assert.equal(ok.message, 2);
  const bad = await memory.addMessage({ role: "robot", content: "beep" }).then(() => assert.fail("bad role"), (e) => e);
  assert.ok(bad instanceof InvalidInputError);
  assert.notEqual(bad.cause instanceof DiskFull, true);
  memory.free();
});

test("with strict, a ModelError's cause is the model's own error object", async () => {
  const boom = new TypeError("the model endpoint is down");
  const memory = await Memory.open({
    namespace: "model-cause",
    model: functionModel(() => {
      throw boom;
    }),
    store: memoryStore(),
    clock: manualClock(),
    config: { strict: true, model_attempts: 1 },
  });
  await memory.addMessage({ role: "user", content: "First." });
  const err = await memory.addMessage({ role: "user", content: "Second, which needs a judgment." }).then(
    () => assert.fail("strict must reject"),
    (e) => e,
  );
  assert.ok(err instanceof ModelError, `${err}`);
  assert.equal(err.cause, boom);
  memory.free();
});

test("without its package entry (src/ imported directly) an open rejects with PackagingError, not invalid-input", async () => {
  const { spawnSync } = await import("node:child_process");
  const src = new URL("../src/index.js", import.meta.url).href;
  const script = `
    const { Memory, memoryStore, PackagingError } = await import(${JSON.stringify(src)});
    try { await Memory.open({ namespace: "n", store: memoryStore() }); console.log("opened"); }
    catch (e) { console.log(JSON.stringify({ code: e.code, name: e.name, packaging: e instanceof PackagingError, message: e.message })); }
  `;
  const out = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  const result = JSON.parse(out.stdout.trim());
  assert.equal(result.code, "packaging");
  assert.equal(result.name, "PackagingError");
  assert.equal(result.packaging, true);
  assert.match(result.message, /sideEffects/);
});
