// A chat backend on engram: an HTTP service that answers chat turns for
// many users, one memory per user, every memory in PostgreSQL. Run as many
// instances as you like behind any load balancer, no sticky routing: each
// call syncs with the memory's log head in the database and commits with a
// conditional write, so two instances serving one user at once never lose
// or duplicate a message (a lost race is retried by the engine).
//
//   DATABASE_URL=postgres://... ENGRAM_SERVER_TOKEN=secret node server.js
//
// Environment:
//   DATABASE_URL          PostgreSQL connection string (required)
//   PORT                  port on 127.0.0.1 (default 8790); HOST to change the address
//   ENGRAM_SERVER_TOKEN   the shared secret every request must carry as
//                         `Authorization: Bearer <token>`; the server refuses
//                         to start without it unless ENGRAM_SERVER_INSECURE=1
//                         (local experiments only: anyone who can reach the
//                         port could read and write every user's memory)
//   OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL, OPENAI_EMBEDDING_MODEL
//                         an OpenAI-compatible endpoint for the replies and
//                         for engram's own tasks; without OPENAI_BASE_URL the
//                         built-in offline model runs engram and a labelled
//                         offline responder answers from the recall block
//   ENGRAM_TABLE          the table (default engram_kv); ENGRAM_CACHE the
//                         number of open memories kept per instance (500)
//
// Routes (JSON; the user id is 1-64 letters, digits, `_` or `-`):
//   POST /users/:id/chat      { content, clientId? } -> { reply, message, timing }
//                             timing: engram_ms (the engine and its store),
//                             store_ms and round_trips (the store's share), model_ms
//                             a retried request with the same clientId adds
//                             nothing twice and answers with the stored reply
//                             (clientId: a string of 1-100 characters)
// Errors: 400 bad input (its message), 409 busy, 503 the database down (a
// restart or failover: the pool reconnects), 500 else; 5xx bodies carry no
// internals (they go to stderr).
//   GET  /users/:id/messages  every message of the user's memory
//   GET  /users/:id/view      the view as OpenAI messages
//   GET  /users/:id/threads   the user's chats (threads(): title, counts)
//   POST /users/:id/threads/:thread/chat, GET .../messages, GET .../view
//                             the same in one chat of the user (the thread
//                             name is 1-128 letters, digits or ._-:@); the
//                             routes without a thread are the "main" chat
//   GET  /stats               this instance's counters (turns, conflicts retried)
//   GET  /health              200 when up (no token needed)

import { createServer } from "node:http";
import { timingSafeEqual } from "node:crypto";
import { AsyncLocalStorage } from "node:async_hooks";
import pg from "pg";
import { Memory, offlineModel, openAIModel, InvalidInputError, EngramError, BusyError, StoreError } from "engram";
import { postgresStore } from "engram/postgres";

const env = process.env;
const PORT = Number(env.PORT ?? 8790);
const HOST = env.HOST ?? "127.0.0.1";
const TOKEN = env.ENGRAM_SERVER_TOKEN ?? "";
const CACHE = Number(env.ENGRAM_CACHE ?? 500);

if (!env.DATABASE_URL) throw new Error("set DATABASE_URL to a PostgreSQL connection string");
if (!TOKEN && env.ENGRAM_SERVER_INSECURE !== "1") {
  throw new Error("set ENGRAM_SERVER_TOKEN (requests must carry it as a bearer token), or ENGRAM_SERVER_INSECURE=1 for a local experiment");
}

const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.PG_POOL ?? 10) });
const counters = { turns: 0, conflicts: 0, writes: 0, opened: 0, errors: 0, pool_errors: 0 };
// An idle client the server drops (a restart, a failover,
// pg_terminate_backend, a proxy's idle timeout) is an 'error' event on the
// pool: without a listener Node exits. The pool discards that client and
// connects anew on the next query; calls meanwhile fail as StoreError (503).
pool.on("error", (e) => {
  counters.pool_errors++;
  console.error(`engram chat backend: an idle database connection failed (${e.code ?? e.message}); reconnecting on demand`);
});
const base = postgresStore(pool, { table: env.ENGRAM_TABLE ?? "engram_kv" });
// Each turn's time in the store and its round trips: the store's calls made
// while a turn runs (its AsyncLocalStorage context) add to that turn's tally.
const turnTally = new AsyncLocalStorage();
function timed(name) {
  return async (...args) => {
    const tally = turnTally.getStore();
    const t = performance.now();
    try {
      return await base[name](...args);
    } finally {
      if (tally) {
        tally.store_ms += performance.now() - t;
        tally.round_trips++;
      }
    }
  };
}
const timedWriteIf = timed("writeIf");
// The store as the engine sees it, timed per turn, counting lost races (each one retried).
const store = {
  get: timed("get"),
  getMany: timed("getMany"),
  put: timed("put"),
  delete: timed("delete"),
  list: timed("list"),
  async writeIf(guard, expected, writes) {
    const ok = await timedWriteIf(guard, expected, writes);
    counters.writes++;
    if (!ok) counters.conflicts++;
    return ok;
  },
};
// ENGRAM_FRESH_MS: the engine's fresh_for_ms (default 0: every call reads
// the head; see docs/stores.md, "Round trips").
const config = env.ENGRAM_FRESH_MS ? { fresh_for_ms: Number(env.ENGRAM_FRESH_MS) } : undefined;

const endpoint = env.OPENAI_BASE_URL?.replace(/\/+$/, "");
const model = endpoint
  ? openAIModel({ baseURL: endpoint, apiKey: env.OPENAI_API_KEY, model: env.OPENAI_MODEL, embeddingModel: env.OPENAI_EMBEDDING_MODEL })
  : offlineModel();

// Open memories, least recently used first out. A cached handle is only a
// cache: every call syncs with the database first.
const open = new Map();
async function memoryOf(user) {
  let m = open.get(user);
  if (m) {
    open.delete(user);
    open.set(user, m);
    return m;
  }
  m = Memory.open({ namespace: `user-${user}`, store, model, ...(config ? { config } : {}) });
  open.set(user, m);
  counters.opened++;
  m.catch(() => open.delete(user));
  while (open.size > CACHE) {
    const [oldest, handle] = open.entries().next().value;
    open.delete(oldest);
    handle.then((h) => h.close()).catch(() => {});
  }
  return m;
}

async function chatReply(messages, view, added) {
  if (!endpoint) return { role: "assistant", content: offlineReply(view, added) };
  const res = await fetch(`${endpoint}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(env.OPENAI_API_KEY ? { authorization: `Bearer ${env.OPENAI_API_KEY}` } : {}) },
    body: JSON.stringify({ model: env.OPENAI_MODEL, messages }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`the chat endpoint answered ${res.status}: ${text.slice(0, 300)}`);
  const reply = JSON.parse(text).choices?.[0]?.message;
  if (!reply) throw new Error(`the chat endpoint's answer has no message: ${text.slice(0, 300)}`);
  return reply;
}

/** No LLM: answers only with what memory recalled for the message (labelled as such). */
function offlineReply(view, added) {
  const at = view.items.findIndex((i) => i.kind === "message" && i.message === added.message);
  const block = at > 0 && view.items[at - 1].kind === "recall" ? view.items[at - 1].text : null;
  if (!block) return "(offline responder) Noted. Nothing in memory was recalled for this message.";
  return `(offline responder) From memory:\n${block.split("\n").slice(1).filter((l) => l.trim()).join("\n")}`;
}

/** The longest client id a chat turn takes (the memory's own limit is 256, with the thread's name and `:q`). */
const MAX_CLIENT_ID = 100;

async function turn(user, thread, body) {
  if (typeof body?.content !== "string" || body.content.length === 0) throw new InvalidInputError("chat needs { content: string }");
  // A client id is the client's own key for the turn, so a retry is
  // recognised: a non-empty string or absent. Anything else is refused,
  // never coerced (null as "null" would make every later turn a duplicate).
  const clientId = body.clientId;
  if (clientId !== undefined && (typeof clientId !== "string" || clientId.length === 0 || clientId.length > MAX_CLIENT_ID)) {
    throw new InvalidInputError(`clientId must be a string of 1 to ${MAX_CLIENT_ID} characters, or left out`);
  }
  const memory = await memoryOf(user);
  const tally = { store_ms: 0, round_trips: 0 };
  return turnTally.run(tally, () => answer(memory, thread, body, clientId, tally));
}

/** The turn on an open memory; the store's time and trips go to `tally`. */
async function answer(memory, thread, body, clientId, tally) {
  const t0 = performance.now();
  // Client ids are the whole memory's: a chat's own are prefixed with its name.
  const scoped = clientId && (thread === "main" ? clientId : `${thread}:${clientId}`);
  const added = await memory.addMessage({ role: "user", content: body.content, thread, clientId: scoped && `${scoped}:q` });
  if (added.duplicate) {
    // A retried turn answers with the reply the memory holds, never a new
    // one the memory does not (one is there unless the first try failed
    // between the question and the answer: then answer now).
    const stored = (await memory.messages()).find((m) => m.client_id === `${scoped}:a`);
    if (stored) {
      counters.turns++;
      return { reply: stored.content, message: added.message, duplicate: true, timing: { engram_ms: performance.now() - t0, model_ms: 0, ...tally }, maintain_error: null };
    }
  }
  // One read: the chat model gets the rendered view; the offline responder
  // reads the recall block from the view itself.
  const messages = endpoint ? await memory.render("openai", { thread }) : null;
  const view = endpoint ? null : await memory.view({ thread });
  const t1 = performance.now();
  const reply = await chatReply(messages, view, added);
  const t2 = performance.now();
  const answered = await memory.addMessage({ ...reply, thread, clientId: scoped && `${scoped}:a` });
  const t3 = performance.now();
  counters.turns++;
  return {
    reply: reply.content,
    message: added.message,
    duplicate: Boolean(added.duplicate),
    // engram_ms includes store_ms (the store's calls in the turn, round_trips of them).
    timing: { engram_ms: t1 - t0 + (t3 - t2), model_ms: t2 - t1, ...tally },
    maintain_error: answered.maintain_error ?? null,
  };
}

/**
 * The status and body of a failed request: bad input is the client's (400,
 * its message); busy is a retry later (409); the store down is 503; all
 * else 500. A 5xx body carries no internals (the store's error names the
 * database's address): the detail goes to the log.
 */
function failure(e) {
  if (e instanceof InvalidInputError) return [400, { error: e.message, code: e.code }];
  if (e instanceof BusyError || e instanceof StoreError) {
    console.error(`engram chat backend: ${e.code}: ${e.message}`);
    if (e instanceof BusyError) return [409, { error: "the memory is busy with other writers: retry", code: e.code }];
    return [503, { error: "the memory's store is unavailable: retry", code: e.code }];
  }
  console.error(`engram chat backend: ${e?.stack ?? e}`);
  return [500, { error: "internal error", code: e instanceof EngramError ? e.code : "internal" }];
}

function authorised(req) {
  if (!TOKEN) return true;
  const got = Buffer.from(req.headers.authorization ?? "");
  const want = Buffer.from(`Bearer ${TOKEN}`);
  return got.length === want.length && timingSafeEqual(got, want);
}

async function readJson(req) {
  let size = 0;
  const chunks = [];
  for await (const c of req) {
    size += c.length;
    if (size > 1 << 20) throw new InvalidInputError("request body over 1 MiB");
    chunks.push(c);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
  } catch {
    throw new InvalidInputError("request body is not JSON");
  }
}

const send = (res, status, body) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

const server = createServer(async (req, res) => {
  const url = new URL(req.url, "http://localhost");
  try {
    if (url.pathname === "/health") return send(res, 200, { ok: true });
    if (!authorised(req)) return send(res, 401, { error: "missing or wrong bearer token", code: "unauthorized" });
    if (url.pathname === "/stats" && req.method === "GET") return send(res, 200, { ...counters, open: open.size });
    const m = url.pathname.match(/^\/users\/([A-Za-z0-9_-]{1,64})(?:\/threads\/([^/]+))?\/(chat|messages|view)$/);
    const list = url.pathname.match(/^\/users\/([A-Za-z0-9_-]{1,64})\/threads$/);
    if (list && req.method === "GET") return send(res, 200, await (await memoryOf(list[1])).threads());
    if (!m) return send(res, 404, { error: "no such route", code: "not-found" });
    const [, user, encoded, what] = m;
    let thread = "main";
    try {
      if (encoded !== undefined) thread = decodeURIComponent(encoded);
    } catch {
      throw new InvalidInputError("the thread name is not URL-encoded UTF-8");
    }
    if (what === "chat" && req.method === "POST") return send(res, 200, await turn(user, thread, await readJson(req)));
    if (what === "messages" && req.method === "GET") {
      const all = await (await memoryOf(user)).messages();
      return send(res, 200, encoded === undefined ? all : all.filter((x) => (x.thread ?? "main") === thread));
    }
    if (what === "view" && req.method === "GET") return send(res, 200, await (await memoryOf(user)).render("openai", { thread }));
    return send(res, 405, { error: "method not allowed", code: "method" });
  } catch (e) {
    counters.errors++;
    send(res, ...failure(e));
  }
});

server.listen(PORT, HOST, () => process.stdout.write(`engram chat backend on http://${HOST}:${server.address().port}\n`));

const shutdown = async () => {
  server.close();
  for (const m of open.values()) await m.then((h) => h.close()).catch(() => {});
  await pool.end();
  process.exit(0);
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
