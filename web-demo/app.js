// The engram web demo: a chat over an engram memory (the npm package, in
// IndexedDB) and an inspector of what the memory does. No framework: the
// page's containers are static (index.html, with data-testid attributes for
// the browser test); each refresh rebuilds their contents from the memory's
// own reads (view, episodes, traces, facts, entities, recalls, stats).

import { Memory, indexedDBStore, offlineModel, openAIModel } from "engram";
import { h, byTestId, when, short, span, num, download } from "./dom.js";
import { curve, axis, scaleFor } from "./timeline.js";

const DB = "engram-demo";
const NAMESPACE = "demo";
const KEYS = { settings: "engram-demo.settings", offset: "engram-demo.offset", labels: "engram-demo.labels", thread: "engram-demo.thread" };
/** The thread (chat) of a memory that names none. */
const MAIN = "main";
/** A small ceiling, so fading shows within the five-day sample (its own config says 1200). */
const DEFAULT_CEILING = 900;
const MILESTONES = new Set(["agreed", "decided", "done", "blocked", "next"]);
const MAX_EVENTS = 300;

// ---- state --------------------------------------------------------------------

let memory = null;
let store = null;
/** During a replay, the clock reads the sample's message times. */
let replayAt = null;
let offset = Number(localStorage.getItem(KEYS.offset)) || 0;
/** Who wrote each assistant reply of the chat: "offline" (the responder) or "endpoint". */
let labels = JSON.parse(localStorage.getItem(KEYS.labels) ?? "{}");
const events = [];
let busy = false;
/** The chat shown: a thread of the one memory (each chat its own view; facts and recall shared). */
let thread = localStorage.getItem(KEYS.thread) || MAIN;

/** While the inspector reads the memory, one clock reading for all its reads (a consistent snapshot). */
let frozenAt = null;
/** The demo's clock: real time plus the offset the clock control moved it by (persisted). */
const clock = { now: () => frozenAt ?? replayAt ?? Date.now() + offset };

function settings() {
  try {
    return { ceiling: DEFAULT_CEILING, ...JSON.parse(localStorage.getItem(KEYS.settings) ?? "{}") };
  } catch {
    return { ceiling: DEFAULT_CEILING };
  }
}

const endpointSet = (s = settings()) => Boolean(s.baseURL?.trim() && s.model?.trim());

/**
 * The model of the memory's own tasks: the endpoint's when set (with the
 * built-in embedder when no embedding model is given), else the offline model.
 */
function memoryModel(s = settings()) {
  if (!endpointSet(s)) return offlineModel();
  const api = openAIModel({
    baseURL: s.baseURL.trim(),
    apiKey: s.apiKey || undefined,
    model: s.model.trim(),
    embeddingModel: s.embeddingModel?.trim() || undefined,
  });
  return s.embeddingModel?.trim() ? api : { ...api, embed: offlineModel().embed };
}

function config(s = settings()) {
  const ceiling = Math.max(200, Number(s.ceiling) || DEFAULT_CEILING);
  return { ceiling_tokens: ceiling, recall_budget_tokens: Math.round(ceiling / 6), passage_tokens: 80 };
}

function saveOffset(value) {
  offset = value;
  localStorage.setItem(KEYS.offset, String(offset));
}

function setThread(name) {
  thread = name;
  localStorage.setItem(KEYS.thread, thread);
}

/** A chat's name as the page shows it. */
const chatName = (name) => (name === MAIN ? "main chat" : name);

function saveLabels() {
  localStorage.setItem(KEYS.labels, JSON.stringify(labels));
}

// ---- events and status ----------------------------------------------------------

function log(type, text, level = "info") {
  events.unshift({ at: clock.now(), type, text, level });
  events.length = Math.min(events.length, MAX_EVENTS);
}

function status(text, level = "info") {
  const el = byTestId("status");
  el.textContent = text;
  el.dataset.level = level;
  el.hidden = !text;
}

// ---- opening, closing, resetting --------------------------------------------------

async function open() {
  store = indexedDBStore(DB);
  const s = settings();
  memory = await Memory.open({ namespace: NAMESPACE, store, model: memoryModel(s), clock, config: config(s) });
  memory.on("formed", ({ episodes, message }) => log("formed", `episode${episodes.length > 1 ? "s" : ""} ${episodes.join(", ")} formed${message ? ` at message ${message}` : " (maintain)"}`));
  memory.on("fade", ({ fade, slept, thread: idle }) =>
    log("fade", idle ? `${chatName(idle)} idle for 24 h: put to sleep (fade ${fade}), its episodes noted for every chat` : slept ? `slept: fade ${fade} ran first (24 h of silence)` : `fade ${fade} ran`),
  );
  memory.on("recall", ({ block, message }) => log("recall", `recall block ${block} placed before message ${message}`));
  memory.on("distill", ({ block, distillation: d }) =>
    log("distill", d.failed ? `distill of block ${block} failed: block kept whole` : `block ${block} distilled: kept ${d.kept.length}`),
  );
  memory.on("note", (n) => log("note", `note on episode ${n.episode}: ${n.added.length} added, ${n.merged.length} merged, ${n.retired.length} retired`));
  memory.on("degraded", (d) => log("degraded", `${d.task} failed after ${d.attempts} attempt(s): ${d.error}. ${d.effect}`, "error"));
}

async function close() {
  await memory?.close();
  await store?.close();
  memory = null;
  store = null;
}

function deleteDatabase() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(DB);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
    // Another tab holds it open: it is deleted once that tab lets go.
    request.onblocked = () => resolve();
  });
}

async function reset() {
  await close();
  await deleteDatabase();
  saveOffset(0);
  setThread(MAIN);
  labels = {};
  saveLabels();
  events.length = 0;
  await open();
}

// ---- actions ----------------------------------------------------------------------

/** Runs one user action at a time; errors go to the status line (never unhandled). */
async function act(name, fn) {
  if (busy) return;
  busy = true;
  document.body.dataset.busy = "true";
  for (const b of document.querySelectorAll("button, textarea, input[type=file]")) b.disabled = true;
  try {
    await fn();
  } catch (e) {
    status(`${name} failed: ${e?.message ?? e}`, "error");
    log("error", `${name}: ${e?.message ?? e}`, "error");
    await refresh().catch(() => {});
  } finally {
    for (const b of document.querySelectorAll("button, textarea, input[type=file]")) b.disabled = false;
    busy = false;
    document.body.dataset.busy = "false";
  }
}

/** Whether the user agrees to replace a memory that holds messages (an empty one needs no asking). */
async function mayReplace(what) {
  const { messages } = await memory.stats();
  return messages === 0 || confirm(`${what} deletes this memory's ${messages} messages (export it first to keep them). Go on?`);
}

async function replay() {
  if (!(await mayReplace("Replaying the sample"))) return;
  status("loading the sample conversation…");
  const sample = await (await fetch("/sample/conversation.json")).json();
  await reset();
  log("replay", `replay of “${sample.title}” (${sample.messages.length} messages) started`);
  const started = performance.now();
  let shown = 0;
  for (const [i, m] of sample.messages.entries()) {
    replayAt = Date.parse(m.at);
    const added = await memory.addMessage({ role: m.role, content: m.content, tool_calls: m.tool_calls, tool_call_id: m.tool_call_id });
    if (added.slept) log("sleep", `message ${added.message} came after ${span(replayAt - Date.parse(sample.messages[i - 1].at))} of silence: the view faded first`);
    status(`replaying the sample: message ${i + 1} of ${sample.messages.length} (${short(replayAt)})`);
    if (performance.now() - shown > 600) {
      await refresh();
      shown = performance.now();
    }
  }
  // From here the clock goes on from the sample's last message.
  saveOffset(replayAt + 60_000 - Date.now());
  replayAt = null;
  const took = performance.now() - started;
  log("replay", `replay finished in ${(took / 1000).toFixed(1)} s`);
  document.body.dataset.replayMs = String(Math.round(took));
  byTestId("replay").dataset.state = "done";
  status(`Replayed ${sample.messages.length} messages in ${(took / 1000).toFixed(1)} s. Jump the clock ahead to watch episodes fade, or ask about an early topic.`);
  await refresh();
}

/** Starts a new chat (a thread of the same memory): it shows once its first message is sent. */
async function newChat() {
  const names = new Set((await memory.threads()).map((t) => t.thread));
  let n = 2;
  while (names.has(`chat-${n}`) || thread === `chat-${n}`) n++;
  setThread(`chat-${n}`);
  log("chat", `new chat: ${chatName(thread)}`);
  status(`A new chat: its view starts with the memory's facts block only; recall brings back what the other chats said.`);
  await refresh();
}

async function switchChat(name) {
  if (name === thread) return;
  setThread(name);
  log("chat", `switched to ${chatName(name)}`);
  status("");
  await refresh();
}

async function jump(ms) {
  saveOffset(offset + ms);
  log("clock", `clock moved ${span(ms)} ahead`);
  status(`Clock moved ${span(ms)} ahead: activations fade; the next user message after 24 h of silence sleeps first.`);
  await refresh();
}

/** The recall block placed before message `id`, as the view shows it (text), if any: the item just before it. */
function recallText(view, id) {
  const at = view.items.findIndex((i) => i.kind === "message" && i.message === id);
  const before = at > 0 ? view.items[at - 1] : null;
  return before?.kind === "recall" ? before.text : null;
}

/** The offline responder: no LLM; it answers only with what memory recalled for the message. */
function offlineReply(view, added) {
  const block = recallText(view, added.message);
  if (!block) {
    return "(offline responder: no language model is connected, so I can only repeat what memory recalls.) Nothing in memory was recalled for this message. Set an OpenAI-compatible endpoint in Settings for real replies.";
  }
  const lines = block
    .split("\n")
    .slice(1)
    .filter((l) => l.trim());
  return `(offline responder: no language model is connected, so I can only repeat what memory recalled.) From memory:\n${lines.join("\n")}`;
}

/** The chat model's reply through the endpoint, given the view as OpenAI messages. */
async function endpointReply(s) {
  const messages = await memory.render("openai", { thread });
  const res = await fetch(`${s.baseURL.trim().replace(/\/+$/, "")}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(s.apiKey ? { authorization: `Bearer ${s.apiKey}` } : {}) },
    body: JSON.stringify({ model: s.model.trim(), messages }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`the endpoint answered ${res.status}: ${text.slice(0, 300)}`);
  const reply = JSON.parse(text).choices?.[0]?.message;
  if (!reply) throw new Error(`the endpoint's answer has no message: ${text.slice(0, 300)}`);
  return reply;
}

async function send(text) {
  const s = settings();
  status("");
  const added = await memory.addMessage({ role: "user", content: text, client_id: crypto.randomUUID(), thread });
  if (added.slept) log("sleep", `message ${added.message} came after more than 24 h of silence: the view faded first`);
  await refresh();
  let reply;
  let by;
  if (endpointSet(s)) {
    status(`asking ${s.model}…`);
    reply = await endpointReply(s);
    by = "endpoint";
  } else {
    reply = { role: "assistant", content: offlineReply(await memory.view({ thread }), added) };
    by = "offline";
  }
  const answered = await memory.addMessage({ ...reply, thread });
  labels[answered.message] = by;
  saveLabels();
  if (answered.maintain_error) log("maintain", `work left for later: ${answered.maintain_error}`, "error");
  status("");
  await refresh();
}

// The export goes out and comes back in parts, so a memory whose export
// passes what one string can hold (about 512 MiB) still round-trips.
async function exportMemory() {
  const parts = [];
  let length = 0;
  for await (const part of memory.exportParts()) {
    parts.push(part);
    length += part.length;
  }
  const stamp = new Date(clock.now()).toISOString().slice(0, 16).replace(/[:T]/g, "-");
  download(`engram-memory-${stamp}.json`, parts);
  log("export", `exported ${(length / 1024).toFixed(1)} KB in ${parts.length} part${parts.length === 1 ? "" : "s"}`);
  status(`Exported the memory (${(length / 1024).toFixed(1)} KB of JSON).`);
}

async function importMemory(file) {
  // A clear error, before the reset, for a file that is not JSON at all
  // (checked whole while it fits in a string; a larger file is checked by
  // the import itself, which writes nothing unless all of it is right).
  if (file.size < 256 * 1024 * 1024) JSON.parse(await file.text());
  else if (!/^\s*\{/.test(await file.slice(0, 64).text())) throw new Error(`${file.name} is not an engram export (not a JSON object)`);
  if (!(await mayReplace(`Importing ${file.name}`))) return;
  await reset();
  await memory.importParts(file);
  // Keep the clock at or after the memory's last message.
  const last = Math.max(0, ...(await memory.messages()).map((m) => m.at));
  if (last > clock.now()) saveOffset(last + 60_000 - Date.now());
  log("import", `imported ${file.name}`);
  status(`Imported ${file.name}.`);
  await refresh();
}

// ---- rendering ----------------------------------------------------------------------

/** Everything the inspector shows, read from the memory. */
async function read() {
  frozenAt = clock.now();
  try {
    return await readAt(frozenAt);
  } finally {
    frozenAt = null;
  }
}

async function readAt(now) {
  const [view, episodes, traces, facts, entities, recalls, stats, messages, fades, threads, pending] = await Promise.all([
    memory.view({ thread }),
    memory.episodes(),
    memory.traces(),
    memory.facts(),
    memory.entities(),
    memory.recalls(),
    memory.stats(),
    memory.messages(),
    memory.fades(),
    memory.threads(),
    memory.pending({ thread }),
  ]);
  // The last recall block of this chat.
  const here = new Set(messages.filter((m) => (m.thread ?? MAIN) === thread).map((m) => m.id));
  const last = recalls.findLast((b) => here.has(b.message)) ?? null;
  const why = new Map();
  if (last) {
    for (const r of last.items.filter((r) => r.item.kind === "fact")) {
      const explained = await memory.explain({ recall: r.item.id });
      why.set(r.item.id, explained.find((x) => x.block === last.id) ?? null);
    }
  }
  const sources = last ? await sourcesOf(last, facts, episodes, messages) : new Map();
  return { view, episodes, traces, facts, entities, recalls, last, why, sources, stats, pending, messages, fades, threads, now };
}

/**
 * Where each item of recall block `b` was said: `{ thread, at }` by
 * `kind:id`. A fact's from its episode; a passage's from the first message
 * of its text (the passage is its messages' text).
 */
async function sourcesOf(b, facts, episodes, messages) {
  const out = new Map();
  for (const { item } of b.items) {
    if (item.kind === "fact") {
      const f = facts.find((x) => x.id === item.id);
      const e = f && episodes.find((x) => x.id === f.episode);
      if (f) out.set(`fact:${item.id}`, { thread: e?.thread ?? MAIN, at: f.said_at });
    } else if (item.kind === "passage") {
      const text = await memory.hitText(item).catch(() => "");
      const m = messages.find((x) => x.content.length >= 12 && text.includes(x.content.slice(0, 200)));
      if (m) out.set(`passage:${item.id}`, { thread: m.thread ?? MAIN, at: m.at });
    }
  }
  return out;
}

let refreshing = null;
let again = false;

/** Re-reads the memory and redraws; calls during a refresh coalesce into one more. */
async function refresh() {
  if (refreshing) {
    again = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      again = false;
      const data = await read();
      draw(data);
    } while (again);
  })();
  try {
    await refreshing;
  } finally {
    refreshing = null;
  }
  document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed ?? 0) + 1);
}

function draw(d) {
  drawThreads(d);
  drawHeader(d);
  drawChat(d);
  drawView(d);
  drawEpisodes(d);
  drawGraph(d);
  drawRecall(d);
  drawActivity(d);
}

function drawHeader(d) {
  const s = settings();
  byTestId("clock").textContent = when(d.now);
  byTestId("clock").dateTime = new Date(d.now).toISOString();
  const lead = d.now - Date.now();
  byTestId("clock-offset").textContent = replayAt !== null ? "(replay: the sample's times)" : Math.abs(lead) < 60_000 ? "(real time)" : `(real time ${lead > 0 ? "+" : "−"} ${span(Math.abs(lead))})`;
  const badge = byTestId("model-badge");
  if (endpointSet(s)) {
    badge.textContent = `${s.model} at ${new URL(s.baseURL.trim(), location.href).host}${s.embeddingModel ? ` · ${s.embeddingModel}` : " · built-in embedder"}`;
    badge.title = "the chat and the memory's own tasks go to this endpoint";
    badge.dataset.mode = "endpoint";
  } else {
    badge.textContent = "offline model · no LLM";
    badge.title = "engram's built-in offline model (rules and a hashing embedder): for demos and tests; plug in a real LLM for real use (Settings)";
    badge.dataset.mode = "offline";
  }
  byTestId("chat-mode").textContent = endpointSet(s) ? `replies from ${s.model}` : "replies: offline responder (answers only from the recall block)";
}

/** The chat list: every thread of the memory (and the new chat, before its first message). */
function drawThreads(d) {
  const listed = d.threads.map((t) => ({ name: t.thread, title: t.title, count: t.messages, last: t.last_at }));
  if (!listed.some((t) => t.name === thread)) listed.push({ name: thread, title: "", count: 0, last: null });
  byTestId("threads").replaceChildren(
    ...listed.map((t) =>
      h(
        "button",
        {
          type: "button",
          class: `thread${t.name === thread ? " current" : ""}`,
          dataset: { testid: "thread", thread: t.name, current: t.name === thread },
          title: `${chatName(t.name)}: ${t.count} messages${t.last ? `, last ${short(t.last)}` : ""}`,
          onclick: () => act("switch chat", () => switchChat(t.name)),
        },
        h("b", {}, chatName(t.name)),
        h("span", { class: "title" }, t.title || (t.count ? "" : "new chat")),
      ),
    ),
  );
  byTestId("chat-title").textContent = chatName(thread);
}

/** Episode of each message id of this chat, from the episodes' ranges. */
function episodeOf(episodes) {
  const map = new Map();
  for (const e of episodes) if ((e.thread ?? MAIN) === thread) for (let id = e.first; id <= e.last; id++) map.set(id, e);
  return map;
}

function drawChat(d) {
  const list = byTestId("messages");
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  const ofEpisode = episodeOf(d.episodes);
  const inView = new Set(d.view.items.filter((i) => i.kind === "message").map((i) => i.message));
  const items = d.messages.filter((m) => (m.thread ?? MAIN) === thread).map((m) => {
    const e = ofEpisode.get(m.id);
    const by = labels[m.id];
    const calls = (m.tool_calls ?? []).map((c) => h("div", { class: "tool-call" }, `→ ${c.name}(${c.arguments})`));
    const body =
      m.role === "tool"
        ? h("details", {}, h("summary", {}, `tool output (${m.tokens} tokens)`), h("pre", {}, m.content))
        : h("div", { class: "text" }, m.content);
    return h(
      "li",
      { class: `msg ${m.role} ${e ? e.state : "open"}${by ? ` by-${by}` : ""}`, dataset: { testid: "message", id: m.id, role: m.role, inView: inView.has(m.id) } },
      h(
        "div",
        { class: "meta" },
        h("span", { class: "role" }, m.role),
        by === "offline" && h("span", { class: "badge offline" }, "offline responder"),
        by === "endpoint" && h("span", { class: "badge endpoint" }, "endpoint model"),
        h("span", { class: "ep", title: e ? `episode ${e.id}: ${e.state}` : "not in an episode yet (the open stretch)" }, e ? `ep ${e.id} · ${e.state}` : "open"),
        !inView.has(m.id) && h("span", { class: "badge out" }, "out of view"),
        h("time", {}, `#${m.id} · ${short(m.at)}`),
      ),
      body,
      calls,
    );
  });
  list.replaceChildren(...(items.length ? items : [h("li", { class: "empty" }, "No messages yet. Write one below, or press “Replay sample”.")]));
  if (nearBottom) list.scrollTop = list.scrollHeight;
}

function drawView(d) {
  const { view } = d;
  byTestId("view-tokens").textContent = String(view.tokens);
  byTestId("view-ceiling").textContent = String(view.ceiling);
  const meter = byTestId("view-meter");
  meter.dataset.over = String(view.tokens > view.ceiling);
  meter.querySelector(".fill").style.width = `${Math.min(100, (view.tokens / view.ceiling) * 100).toFixed(1)}%`;
  const landing = d.fades.at(-1)?.landing;
  const mark = meter.querySelector(".landing");
  mark.hidden = !landing;
  if (landing) mark.style.left = `${Math.min(100, (landing / view.ceiling) * 100).toFixed(1)}%`;
  const items = view.items.map((item) =>
    h(
      "li",
      { class: `item ${item.kind} ${item.role}`, dataset: { testid: "view-item", kind: item.kind } },
      h(
        "div",
        { class: "meta" },
        h("span", { class: `kind ${item.kind}` }, item.kind === "message" ? item.role : item.kind === "facts" ? "facts block" : item.kind === "recall" ? "recall block" : "leaving warning"),
        item.episode !== undefined && h("span", {}, `ep ${item.episode}`),
        item.message !== undefined && h("span", {}, `msg #${item.message}`),
        item.facts?.length ? h("span", {}, `${item.facts.length} facts`) : null,
        h("span", { class: "tokens" }, `${item.tokens} tok`),
      ),
      h("div", { class: "text" }, item.text),
      (item.tool_calls ?? []).map((c) => h("div", { class: "tool-call" }, `→ ${c.name}(${c.arguments})`)),
    ),
  );
  if (view.over_ceiling) items.unshift(h("li", { class: "item over" }, `Over the ceiling: ${view.over_ceiling}`));
  byTestId("view").replaceChildren(...(items.length ? items : [h("li", { class: "empty" }, "The view is empty.")]));
}

function drawEpisodes(d) {
  const byEpisode = new Map();
  for (const t of d.traces) {
    if (!byEpisode.has(t.episode)) byEpisode.set(t.episode, []);
    byEpisode.get(t.episode).push(t);
  }
  const t0 = Math.min(d.now, ...d.messages.map((m) => m.at));
  const scale = scaleFor(d.episodes, byEpisode, t0, d.now);
  byTestId("time-axis").replaceChildren(...(d.episodes.length ? axis(scale) : []));
  const maxSig = Math.max(1, ...d.episodes.map((e) => e.significance));
  const rows = d.episodes.map((e) => {
    const c = curve(e, byEpisode.get(e.id) ?? [], scale);
    return h(
      "li",
      {
        class: `episode ${e.state}`,
        dataset: { testid: "episode", id: e.id, state: e.state, activation: e.activation, curveEnd: c.dataset.end },
        title: "click: why is it in or out of view?",
        onclick: () => explainEpisode(e.id),
      },
      h(
        "div",
        { class: "info" },
        h(
          "div",
          { class: "line1" },
          h("b", {}, `#${e.id}`),
          h("span", { class: `state ${e.state}` }, e.state),
          (e.thread ?? MAIN) !== thread && h("span", { class: "chat", title: "an episode of another chat" }, chatName(e.thread ?? MAIN)),
          h("span", { class: "msgs", title: `messages ${e.first} to ${e.last}, ${e.tokens} tokens, ${e.facts.length} facts` }, `msgs ${e.first}–${e.last} · ${e.facts.length}f`),
        ),
        h(
          "div",
          { class: "line2" },
          h("span", { title: "activation now: Σ strength ÷ √minutes" }, `act ${num(e.activation)}`),
          h("span", { class: "sig", title: "significance: Σ strength, never fades" }, `sig ${num(e.significance)}`, h("i", { style: `width:${((e.significance / maxSig) * 100).toFixed(0)}%` })),
        ),
      ),
      c,
    );
  });
  byTestId("episodes").replaceChildren(...(rows.length ? rows : [h("li", { class: "empty" }, "No episode has formed yet: a topic change or the size of the open stretch cuts one.")]));
}

async function explainEpisode(id) {
  const box = byTestId("episode-explain");
  try {
    const x = await memory.explain({ episode: id });
    box.replaceChildren(
      h("b", {}, `Episode ${id}: `),
      x.summary,
      h("ul", {}, x.moves.map((m) => h("li", {}, `${short(m.at)}: ${m.state}${m.fade ? ` (fade ${m.fade.id}, ${m.fade.reason}: ${m.fade.view_tokens} → landing ${m.fade.landing} tokens)` : ""}`))),
      h("button", { type: "button", onclick: () => (box.hidden = true) }, "close"),
    );
    box.hidden = false;
  } catch (e) {
    status(`explain failed: ${e.message}`, "error");
  }
}

function drawGraph(d) {
  const names = new Map(d.entities.map((e) => [e.id, e.name]));
  const inBlock = new Set(d.view.items.filter((i) => i.kind === "facts").flatMap((i) => i.facts ?? []));
  const bySubject = new Map();
  for (const f of d.facts) {
    if (!bySubject.has(f.subject)) bySubject.set(f.subject, []);
    bySubject.get(f.subject).push(f);
  }
  const retired = d.facts.filter((f) => f.retired).length;
  const milestones = d.facts.filter((f) => MILESTONES.has(f.kind)).length;
  byTestId("graph-counts").textContent = `${d.entities.length} entities · ${d.facts.length} facts (${retired} retired, ${milestones} milestones) · ${inBlock.size} in the facts block`;
  // Entities whose facts say where the work stands (milestones, retirements) first, then by their number of facts.
  const weight = (e) => {
    const fs = bySubject.get(e.id) ?? [];
    return fs.length + 100 * fs.filter((f) => f.retired || MILESTONES.has(f.kind)).length;
  };
  const entities = [...d.entities].sort((a, b) => weight(b) - weight(a) || a.id - b.id);
  const items = entities.map((e) => {
    const facts = (bySubject.get(e.id) ?? []).sort((a, b) => Number(MILESTONES.has(b.kind)) - Number(MILESTONES.has(a.kind)) || a.id - b.id);
    const aliases = e.aliases.map((a) => a.name).filter((n) => n !== e.name);
    return h(
      "li",
      { class: "entity", dataset: { testid: "entity", id: e.id } },
      h("div", { class: "name" }, e.name, aliases.length ? h("span", { class: "aliases" }, ` also: ${aliases.join(", ")}`) : null, facts.length ? null : h("span", { class: "aliases" }, " (object only)")),
      facts.length
        ? h(
            "ul",
            {},
            facts.map((f) => {
              const milestone = MILESTONES.has(f.kind);
              const sentence = f.retired ? h("s", { class: "sentence" }, f.sentence) : h("span", { class: "sentence" }, f.sentence);
              return h(
                "li",
                {
                  class: `fact${f.retired ? " retired" : ""}${milestone ? " milestone" : ""}${inBlock.has(f.id) ? " inview" : ""}`,
                  dataset: { testid: "fact", id: f.id, kind: f.kind, retired: Boolean(f.retired), milestone },
                },
                milestone ? h("span", { class: `kind-badge ${f.kind}`, dataset: { testid: "milestone" } }, `◆ ${f.kind}`) : null,
                sentence,
                h(
                  "span",
                  { class: "triple" },
                  ` ${f.predicate} → ${names.get(f.object) ?? `#${f.object}`} · ep ${f.episode} · ${short(f.said_at)}`,
                  f.restated?.length ? ` · restated ${f.restated.length}×` : "",
                  f.retired ? ` · retired by #${f.retired.by} on ${short(f.retired.at)}` : "",
                ),
              );
            }),
          )
        : null,
    );
  });
  byTestId("graph").replaceChildren(...(items.length ? items : [h("li", { class: "empty" }, "No facts yet: an episode's facts are written when it leaves the view.")]));
}

const LISTS = { fact_words: "fact words", fact_meaning: "fact meaning", passage_words: "passage words", passage_meaning: "passage meaning" };

function drawRecall(d) {
  const root = byTestId("recall");
  const b = d.last;
  if (!b) {
    root.replaceChildren(h("p", { class: "empty" }, "No recall yet: each user message searches memory for what it touches."));
    return;
  }
  const facts = new Map(d.facts.map((f) => [f.id, f]));
  const message = d.messages.find((m) => m.id === b.message);
  const shown = recallText(d.view, b.message);
  const part = (q) => (q === 0 ? "whole message" : `part ${q}: “${b.parts[q - 1] ?? "?"}”`);
  const kept = (item) => (b.distilled ? b.distilled.kept.some((k) => k.kind === item.kind && k.id === item.id) : null);
  const distill = b.distilled
    ? b.distilled.failed
      ? "distill failed: block kept whole"
      : `distilled ${short(b.distilled.at)}: kept ${b.distilled.kept.length} of ${b.items.length}`
    : "not distilled yet (after the reply)";
  root.replaceChildren(
    h(
      "div",
      { class: "recall-head", dataset: { testid: "recall-block", id: b.id, items: b.items.length } },
      h("div", {}, h("b", {}, `Block ${b.id}`), ` before message #${b.message} · ${short(b.at)} · ${distill}${b.gave_way ? " · gave way (no longer in view)" : ""}`),
      message && h("blockquote", {}, message.content),
      h("div", { class: "parts" }, "split into: ", b.parts.length ? b.parts.map((p) => h("code", {}, p)) : h("i", {}, "the whole message"), b.split_failed ? " (split failed)" : "", b.walk_failed ? " · relevance walk failed: kept by rank" : ""),
    ),
    b.items.length
      ? h(
          "ol",
          { class: "recall-items" },
          b.items.map((r) => {
            const f = r.item.kind === "fact" ? facts.get(r.item.id) : null;
            const k = kept(r.item);
            const why = f ? d.why.get(f.id) : null;
            const src = d.sources.get(`${r.item.kind}:${r.item.id}`);
            const other = src && src.thread !== thread;
            return h(
              "li",
              { class: `recall-item ${r.judgment}`, dataset: { testid: "recall-item", kind: r.item.kind, id: r.item.id } },
              h(
                "div",
                { class: "what" },
                h("span", { class: `judgment ${r.judgment}` }, r.judgment),
                k === null ? null : h("span", { class: `kept ${k}` }, k ? "kept by distill" : "dropped by distill"),
                f ? (f.retired ? h("s", {}, f.sentence) : f.sentence) : `passage #${r.item.id} of the conversation (quoted in the block below)`,
              ),
              src
                ? h(
                    "div",
                    { class: `source${other ? " other" : ""}`, dataset: { testid: "recall-source", thread: src.thread, other: Boolean(other) } },
                    other ? `↩ from another chat: ${chatName(src.thread)} · said ${short(src.at)}` : `this chat · said ${short(src.at)}`,
                  )
                : null,
              h(
                "div",
                { class: "why" },
                `fused rank ${r.fused_rank ?? "–"}`,
                r.hop ? ` · hop ${r.hop} via fact #${r.via}` : " · found directly",
                " · ",
                r.hits.map((hit) => h("span", { class: "hit", title: part(hit.query) }, `${LISTS[hit.list] ?? hit.list} #${hit.rank}${hit.query ? ` (part ${hit.query})` : ""}`)),
              ),
              why ? h("div", { class: "explain-line" }, why.summary) : null,
            );
          }),
        )
      : h("p", { class: "empty" }, "This block is empty."),
    shown ? h("details", { open: true }, h("summary", {}, "as the model sees it"), h("pre", { class: "block-text" }, shown)) : h("p", { class: "note" }, "Not in the view now."),
  );
}

function drawActivity(d) {
  const { stats } = d;
  const p = d.pending;
  const ids = (xs) => (xs.length ? xs.map((x) => `#${x}`).join(", ") : "none");
  byTestId("pending").replaceChildren(
    h("dt", {}, "unjudged messages"),
    h("dd", {}, ids(p.unjudged)),
    h("dt", {}, "blocks to distill"),
    h("dd", {}, ids(p.undistilled)),
    h("dt", {}, "leaving episodes"),
    h("dd", {}, ids(p.leaving)),
    h("dt", {}, "notes to retry"),
    h("dd", {}, ids(p.awaiting_note)),
    h("dt", {}, "fade ahead due"),
    h("dd", {}, p.fade_ahead ? "yes" : "no"),
    h("dt", {}, "idle chats to sleep"),
    h("dd", {}, p.idle_threads?.map(chatName).join(", ") ?? "none"),
  );
  const m = stats.model;
  const tasks = Object.keys(m.calls).sort();
  byTestId("model-health").replaceChildren(
    h(
      "table",
      { class: "health" },
      h("tr", {}, h("th", {}, "task"), h("th", {}, "calls"), h("th", {}, "failed")),
      tasks.map((t) => h("tr", { class: m.failed[t] ? "failed" : "" }, h("td", {}, t), h("td", {}, String(m.calls[t])), h("td", {}, String(m.failed[t] ?? 0)))),
    ),
    h("p", { class: m.consecutive_failures ? "bad" : "note" }, `${m.degraded_steps} degraded steps · ${m.consecutive_failures} consecutive failures since open`, m.last_error ? ` · last error (${m.last_error.task}): ${m.last_error.error}` : ""),
  );
  const [live, leaving, sealed, forgotten] = stats.episodes;
  byTestId("counts").replaceChildren(
    h("dt", {}, "messages"),
    h("dd", {}, `${stats.messages} in ${d.threads.length} chat${d.threads.length === 1 ? "" : "s"} (${stats.open_messages} in the open stretch)`),
    h("dt", {}, "episodes"),
    h("dd", {}, `${live} live · ${leaving} leaving · ${sealed} sealed · ${forgotten} forgotten`),
    h("dt", {}, "facts"),
    h("dd", {}, `${stats.facts[0]} live · ${stats.facts[1]} retired · ${stats.entities} entities`),
    h("dt", {}, "traces"),
    h("dd", {}, `${stats.traces[1]} yes of ${stats.traces[0]} judged`),
    h("dt", {}, "fades"),
    h("dd", {}, `${stats.fades}${d.fades.length ? ` (last: ${d.fades.at(-1).reason}, ${d.fades.at(-1).view_tokens} → ${d.fades.at(-1).view_after ?? "…"} tokens)` : ""}`),
    h("dt", {}, "log"),
    h("dd", {}, `${stats.log_entries} entries in IndexedDB “${DB}”`),
    stats.storage_warnings.length ? [h("dt", {}, "storage"), h("dd", { class: "bad" }, stats.storage_warnings.join("; "))] : null,
  );
  const degraded = events.filter((e) => e.type === "degraded").length;
  byTestId("degraded-count").textContent = degraded ? `${degraded} degraded` : "no degraded step";
  byTestId("degraded-count").dataset.count = String(degraded);
  byTestId("events").replaceChildren(
    ...(events.length
      ? events.slice(0, 120).map((e) => h("li", { class: `event ${e.level}`, dataset: { testid: "event", type: e.type } }, h("time", {}, short(e.at)), h("span", { class: "type" }, e.type), e.text))
      : [h("li", { class: "empty" }, "Events of this session (fades, notes, recall, distill, degraded steps) show here.")]),
  );
}

// ---- settings dialog ---------------------------------------------------------------

function openSettings() {
  const dialog = byTestId("settings");
  const form = dialog.querySelector("form");
  const s = settings();
  for (const name of ["baseURL", "apiKey", "model", "embeddingModel", "ceiling"]) form.elements[name].value = s[name] ?? "";
  dialog.returnValue = "";
  dialog.showModal();
}

async function saveSettings() {
  const form = byTestId("settings").querySelector("form");
  const s = {};
  for (const name of ["baseURL", "apiKey", "model", "embeddingModel"]) s[name] = form.elements[name].value.trim();
  s.ceiling = Math.max(200, Number(form.elements.ceiling.value) || DEFAULT_CEILING);
  localStorage.setItem(KEYS.settings, JSON.stringify(s));
  await close();
  await open();
  log("settings", endpointSet(s) ? `model: ${s.model} at ${s.baseURL}` : "model: offline");
  status(endpointSet(s) ? `The chat and the memory's tasks now go to ${s.model}.` : "Offline: the built-in model and the offline responder.");
  await refresh();
}

// ---- wiring ------------------------------------------------------------------------

function wire() {
  byTestId("replay").addEventListener("click", () => act("replay", replay));
  byTestId("new-chat").addEventListener("click", () => act("new chat", newChat));
  for (const b of document.querySelectorAll("[data-jump]")) b.addEventListener("click", () => act("clock", () => jump(Number(b.dataset.jump))));
  byTestId("export").addEventListener("click", () => act("export", exportMemory));
  byTestId("import").addEventListener("change", (ev) => {
    const file = ev.target.files?.[0];
    ev.target.value = "";
    if (file) act("import", () => importMemory(file));
  });
  byTestId("reset").addEventListener("click", () =>
    act("reset", async () => {
      if (!(await mayReplace("Reset"))) return;
      await reset();
      log("reset", "memory deleted; starting empty");
      status("Reset: the memory is empty and the clock is real time again.");
      await refresh();
    }),
  );
  byTestId("settings-open").addEventListener("click", openSettings);
  byTestId("settings").addEventListener("close", () => {
    if (byTestId("settings").returnValue === "save") act("settings", saveSettings);
  });
  const form = byTestId("composer");
  const input = byTestId("input");
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    act("send", async () => {
      input.value = "";
      await send(text);
    });
  });
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  // Errors nobody caught still reach the status line.
  window.addEventListener("unhandledrejection", (ev) => status(`error: ${ev.reason?.message ?? ev.reason}`, "error"));
  // The activation curves move with the clock: redraw once a minute when idle.
  setInterval(() => {
    if (!busy && memory && document.visibilityState === "visible") refresh().catch(() => {});
  }, 60_000);
}

async function main() {
  wire();
  status("loading engram…");
  const started = performance.now();
  await open();
  await refresh();
  status("");
  document.body.dataset.loadMs = String(Math.round(performance.now() - started));
  document.body.dataset.ready = "true";
}

main().catch((e) => {
  status(`engram could not start: ${e?.message ?? e}`, "error");
});
