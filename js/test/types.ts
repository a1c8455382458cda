// Compiled with `tsc --noEmit` by scripts/test-js: the API as a TypeScript
// user writes it must type-check against index.d.ts (and misuse must not).

import {
  Memory,
  openAIModel,
  functionModel,
  offlineModel,
  memoryStore,
  indexedDBStore,
  sqliteStore,
  durableObjectStore,
  StoreError,
  EngramError,
  CorruptError,
  InvalidInputError,
  type Added,
  type BlobLike,
  type Degraded,
  type Maintained,
  type Pending,
  type Fade,
  type OpenAIMessage,
  type TaskRequest,
  type Store,
  type View,
  type Batch,
  type BatchProgress,
  type ThreadInfo,
  type EpisodeInfo,
  type Fact,
  type FactHistory,
  type Message,
  type MessageExplanation,
  type Page,
  type Remembered,
} from "engram";

// No DOM or Node lib here: the package types must stand on their own.
declare const console: { log(...values: unknown[]): void };

export async function chat(question: string): Promise<string> {
  const model = openAIModel({ baseURL: "http://127.0.0.1:11434/v1", model: "llama3.2", embeddingModel: "nomic-embed-text" });
  const memory = await Memory.open({ namespace: "alice", model, store: sqliteStore("alice.db"), config: { ceiling_tokens: 6000 } });
  const added: Added = await memory.addMessage({ role: "user", content: question });
  if (added.fade !== null) console.log(`fade ${added.fade} ran`);
  const stop = memory.on("fade", ({ fade, slept }) => console.log(fade, slept));
  memory.on("task", ({ task, attempt }) => console.log(task.toUpperCase(), attempt + 1));
  const messages: OpenAIMessage[] = await memory.render("openai");
  const tools = [memory.noteTool()];
  console.log(tools[0].function.name, messages.length);
  await memory.addMessage({
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "note", arguments: "{}" } }],
  });
  await memory.note({ facts: [{ subject: "Alice", predicate: "likes", object: "tea", sentence: "Alice likes tea.", kind: "fact" }] });
  await memory.note('{"facts": []}');
  const ended = await memory.endTurn();
  if (ended) console.log(ended[0], ended[1].kept.length);
  for (const hit of await memory.search("tea", { limit: 3, include_in_view: false })) console.log(hit.text, hit.score);
  await memory.addMessage({ role: "user", content: "tea again", metadata: { source: "slack", n: [1, { a: null }] } });
  const filtered = await memory.search("tea", {
    filter: { thread: "main", from: 0, to: Date.now(), kinds: ["fact", "message"], entity: 1, metadata: { source: "slack" } },
  });
  for (const hit of filtered) console.log(hit.sources?.length, (await memory.messages())[0].metadata?.source);
  for (const hit of await memory.recall("tea", { limit: 3 })) console.log(hit.text, hit.hop);
  for (const hit of await memory.search("tea")) {
    const full: string = await memory.hitText(hit.item);
    console.log(full.length);
  }
  const view: View = await memory.view();
  await memory.render("openai", { at: new Date(Date.UTC(2026, 2, 2)) });
  const why = await memory.explain({ episode: 1 });
  console.log(why.summary, view.tokens, (await memory.explain({ fact: 1 })).in_facts_block);
  for (const r of await memory.explain({ recall: 1 })) console.log(r.block, r.distill_kept);
  // A regenerated answer replaces the one before it in the view.
  const again: Added = await memory.addMessage({ role: "assistant", content: "Another answer.", replaces: added.message });
  const alt: MessageExplanation = await memory.explain({ message: again.message });
  const replacedBy: number | undefined = (await memory.messages())[0]?.replaced_by;
  console.log(alt.alternatives?.length, alt.in_view, replacedBy);
  const [live, leaving] = (await memory.stats()).episodes;
  console.log(live + leaving, (await memory.episodes())[0]?.activation, (await memory.facts())[0]?.retired?.by);
  await memory.import(await memory.export());
  const parts: string[] = [];
  for await (const part of memory.exportParts({ maxBytes: 1 << 20 })) parts.push(part);
  await memory.importParts(parts);
  const blob: BlobLike = { stream: () => ({ getReader: () => ({ read: async () => ({ done: true }), releaseLock() {} }) }) };
  await memory.importParts(blob);
  const erased = await memory.erase({ message: 1 });
  console.log(erased.messages.length, erased.facts[0], erased.entities[0], (await memory.messages())[0]?.erased);
  // @ts-expect-error: erase takes one of message, episode, fact or entity
  await memory.erase({ passage: 1 });
  await memory.destroy();
  stop();
  try {
    await memory.addMessage({ role: "user", content: "again" });
  } catch (e) {
    if (e instanceof StoreError) console.log(e.code === "store");
    else if (e instanceof EngramError) console.log(e.code);
  }
  memory.free();
  return messages.at(-1)?.content ?? "";
}

export async function maintained(): Promise<void> {
  const model = openAIModel({ baseURL: "http://127.0.0.1:9/v1", model: "m", embeddingModel: "e" });
  const config = {
    maintain_after_reply: false,
    strict: true,
    strong_boundary: 0.9,
    recall_share: 0.25,
    split_with_model: false,
    walk_with_model: true,
    note_retries: 3,
    fade_ahead: true,
  };
  const memory = await Memory.open({ namespace: "m", model, store: memoryStore(), config });
  memory.on("degraded", ({ task, error, attempts, at, effect }: Degraded) => console.log(task, error, attempts + 1, at, effect));
  memory.on("formed", ({ message }) => console.log(message === null ? "maintain" : message + 1));
  const added = await memory.addMessage({ role: "assistant", content: "Hello." });
  for (const d of added.degraded) console.log(d.effect);
  if (added.maintain_error !== null) console.log(added.maintain_error.length);
  console.log(added.maintained?.noted_late.length);
  const waiting: Pending = await memory.pending();
  console.log(waiting.unjudged.length, waiting.fade_ahead === true, waiting.awaiting_note, waiting.leaving, waiting.undistilled);
  const done: Maintained = await memory.maintain();
  for (const [block, d] of done.distilled) console.log(block, d.kept.length, d.failed);
  console.log(done.judged, done.sealed, done.deferred, done.abandoned, done.gave_way, done.fade ?? 0);
  const stats = await memory.stats();
  console.log(stats.pending.unjudged.length, stats.model.consecutive_failures, stats.model.degraded_steps);
  console.log(stats.model.failed.segment ?? 0, stats.model.calls.embed, stats.model.last_error?.task);
  const fades: Fade[] = await memory.fades();
  console.log(fades.map((f) => (f.reason === "ahead" ? f.landing : f.view_after)));
  const view = await memory.view();
  if (view.over_ceiling !== undefined) console.log(view.over_ceiling.length);
  for (const m of await memory.messages()) if (m.judged === false) console.log(m.id);
  for (const e of await memory.episodes()) console.log(e.noted, e.deferred, e.abandoned);
  for (const b of await memory.recalls()) console.log(b.gave_way, b.items.map((r) => r.judgment === "ranked"));
}

export async function scripted(): Promise<void> {
  const model = functionModel(async (req: TaskRequest) => (req.task === "segment" ? { boundary: 0.2 } : "{}"), {
    embed: (texts) => texts.map(() => new Float32Array(8)),
  });
  const stores: Store[] = [memoryStore(), indexedDBStore("chat"), durableObjectStore({} as never)];
  {
    await using memory = await Memory.open({ namespace: "t", model, store: stores[0], clock: { now: () => 0 } });
    await memory.addMessage({ role: "tool", content: "ok", tool_call_id: "c1" });
  }
}

export async function nothingLost(): Promise<void> {
  const model = functionModel((req: TaskRequest, { signal } = {}) => (signal?.aborted ? "{}" : { boundary: 0.1, task: req.task }), {
    embed: (texts, options) => texts.map(() => [options?.signal?.aborted ? 0 : 1, 1]),
  });
  const memory = await Memory.open({
    namespace: "n",
    model,
    store: memoryStore(),
    deadlines: { model: 30_000, store: null },
  });
  const added: Added = await memory.addMessage({ role: "user", content: "hi", client_id: "m-1" });
  const again = await memory.addMessage({ role: "user", content: "hi", clientId: "m-1" });
  console.log(added.duplicate, again.duplicate && again.message === added.message);
  for (const m of await memory.messages()) console.log(m.client_id ?? "no id");
  const custom: Store = {
    get: (key: string) => new Promise<Uint8Array | null>((resolve) => resolve(Uint8Array.from(key, (c) => c.charCodeAt(0)))),
    put: (_key: string, value: Uint8Array) => void value.byteLength,
    delete: async () => {},
    list: () => [],
    writeIf: () => true,
  };
  await Memory.open({ namespace: "c", model, store: custom, deadlines: { store: 2_000 } });
  memory.free();
}

export async function salvage(store: Store): Promise<string> {
  try {
    const memory = await Memory.open({ namespace: "s", store });
    memory.free();
    return "";
  } catch (e) {
    if (!(e instanceof CorruptError)) throw e;
  }
  // Read-only, with whatever of the damaged log can be read.
  const salvaged: Memory = await Memory.openSalvage({ namespace: "s", store, clock: { now: () => 0 }, config: { snapshot_every: 8 } });
  const warnings: string[] = (await salvaged.stats()).storage_warnings;
  console.log(warnings.length, (await salvaged.messages()).filter((m) => m.erased).length);
  try {
    await salvaged.addMessage({ role: "user", content: "refused" });
  } catch (e) {
    if (e instanceof InvalidInputError) console.log(e.code === "invalid-input");
  }
  const exported: string = await salvaged.export();
  await using fresh = await Memory.open({ namespace: "s", store: memoryStore() });
  await fresh.import(exported);
  salvaged.free();
  // @ts-expect-error: openSalvage takes the options of open
  await Memory.openSalvage("s");
  return exported;
}

export async function offline(): Promise<void> {
  // No model: the built-in offline model.
  const memory = await Memory.open({ namespace: "o", store: memoryStore() });
  const vectors: Float32Array[] = await offlineModel().embed(["hello"]);
  console.log(vectors[0].length === offlineModel.dimension);
  const composed = { ...openAIModel({ model: "gpt-4.1-mini" }), embed: offlineModel().embed };
  const other = await Memory.open({ namespace: "c", model: composed, store: memoryStore() });
  const answer: string = await offlineModel().complete({ task: "split", system: "", content: "a", schema: "{}", attempt: 1 });
  console.log(answer.length);
  memory.free();
  other.free();
}

export async function threads(memory: Memory): Promise<void> {
  await memory.addMessage({ role: "user", content: "Plan the trip.", thread: "trip", at: new Date(Date.now() - 3_600_000) });
  const batch: Batch = await memory.addMessages(
    [
      { role: "user", content: "Last year.", thread: "old", at: 1_700_000_000_000, client_id: "h1" },
      { role: "assistant", content: "Noted.", thread: "old", at: 1_700_000_060_000 },
    ],
    { onProgress: ({ done, total }: BatchProgress) => console.log(done / total) },
  );
  console.log(batch.messages[0], batch.duplicates.length);
  const list: ThreadInfo[] = await memory.threads();
  for (const t of list) console.log(t.thread, t.title, t.first_at, t.last_at, t.messages, t.user_messages, t.episodes, t.episodes_in_view);
  const view: View = await memory.view({ thread: "trip" });
  console.log(view.tokens === (await memory.viewTokens({ thread: "trip" })));
  await memory.view({ thread: "trip", at: new Date() });
  await memory.render("openai", { thread: "trip" });
  const waiting: Pending = await memory.pending({ thread: "old" });
  console.log(waiting.idle_threads?.length);
  const done: Maintained = await memory.maintain({ thread: "old" });
  for (const [name, fade] of done.slept ?? []) console.log(name.length, fade + 1);
  await memory.endTurn({ thread: "trip" });
  await memory.endTurn();
  const erased = await memory.erase({ thread: "old" });
  console.log(erased.messages.length);
  for (const m of await memory.messages()) console.log(m.thread ?? "main", m.at);
  for (const e of await memory.episodes()) console.log(e.thread ?? "main");
  for (const f of await memory.fades()) if (f.reason === "idle") console.log(f.thread);
  memory.on("fade", ({ thread }) => console.log(thread?.length));
}

export async function addressable(memory: Memory): Promise<number> {
  const stated: Remembered = await memory.remember("Ana lives in Lisbon.");
  const triple = await memory.remember({ subject: "Ana", predicate: "likes", object: "tea", sentence: "Ana likes tea.", kind: "preference" });
  const fact: Fact | null = await memory.fact(stated.fact);
  const history: FactHistory = await memory.history(triple.fact);
  const revised = await memory.revise(stated.fact, "Ana lives in Porto.");
  let cursor: string | null | undefined;
  let seen = 0;
  do {
    const page: Page<Fact> = await memory.facts({ limit: 100, cursor, filter: { live: true, kinds: ["preference"], stated: true } });
    seen += page.items.length;
    cursor = page.next;
  } while (cursor);
  const messages: Page<Message> = await memory.messages({ filter: { thread: "main" } });
  const episodes: Page<EpisodeInfo> = await memory.episodes({ filter: { states: ["sealed"] } });
  const all: Fact[] = await memory.facts();
  // @ts-expect-error: a page's limit is a number
  await memory.facts({ limit: "ten" });
  // @ts-expect-error: a statement is a sentence or a fact
  await memory.remember(7);
  const steps = history.entries.map((e) => (e.kind === "erased" ? 0 : e.at));
  return seen + (fact?.id ?? 0) + revised.retired.length + messages.items.length + episodes.items.length + all.length + steps.length;
}

export async function misuse(memory: Memory): Promise<void> {
  // @ts-expect-error: a thread is named by a string
  await memory.addMessage({ role: "user", content: "hi", thread: 2 });
  // @ts-expect-error: a date is ms or a Date
  await memory.addMessage({ role: "user", content: "hi", at: "yesterday" });
  // @ts-expect-error: a thread is erased by its name
  await memory.erase({ thread: 1 });
  // @ts-expect-error: view options are an object
  await memory.view("trip");
  // @ts-expect-error: addMessages takes a list
  await memory.addMessages({ role: "user", content: "hi" });
  // @ts-expect-error: roles are system, user, assistant or tool
  await memory.addMessage({ role: "robot", content: "beep" });
  // @ts-expect-error: only the OpenAI rendering exists
  await memory.render("markdown");
  // @ts-expect-error: unknown event
  memory.on("progress", () => {});
  // @ts-expect-error: config fields are the engine's
  await Memory.open({ namespace: "x", model: functionModel(() => "{}"), store: memoryStore(), config: { ceiling: 1 } });
  // @ts-expect-error: the constructor is private: use Memory.open
  new Memory();
  // @ts-expect-error: strict is a boolean
  await Memory.open({ namespace: "x", model: functionModel(() => "{}"), store: memoryStore(), config: { strict: "yes" } });
  // @ts-expect-error: records keep the engine's snake_case names
  (await memory.maintain()).notedLate;
  // @ts-expect-error: a client id is a string
  await memory.addMessage({ role: "user", content: "hi", client_id: 7 });
  // @ts-expect-error: offlineModel.dimension is read-only
  offlineModel.dimension = 3;
  // @ts-expect-error: deadlines are ms
  await Memory.open({ namespace: "x", model: functionModel(() => "{}"), store: memoryStore(), deadlines: { model: "60s" } });
}
