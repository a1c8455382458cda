// An edge worker with one engram memory per user (module worker syntax;
// runs on workerd, Cloudflare Workers and miniflare). Deploy it with
// `wrangler deploy` from this folder (wrangler.jsonc beside it); README.md
// here says how.
//
//   POST /users/:id/messages   {role, content, client_id?, ...}  -> { added, view }
//   GET  /users/:id/view                             -> OpenAI messages
//   GET  /users/:id/facts                            -> facts
//   GET  /users/:id/stats                            -> counts, pending work, model health
//   GET  /users/:id/threads                          -> the user's chats (threads())
//   POST /users/:id/threads/:thread/messages, GET /users/:id/threads/:thread/view
//                                                    -> the same in one chat
//
// One memory per user, one thread per chat: each chat has its own view (the
// user's facts block from every chat, its own history and recall). The
// routes without a thread are the "main" chat. A thread name is 1 to 128
// characters, URL-encoded in the path.
//
// AUTHENTICATION. Every route reads and writes a user's whole memory: never
// expose /users/:id/* without it. `authorize(request, env, user)` below is
// the hook: by default a shared secret, `Authorization: Bearer <API_TOKEN>`
// (`wrangler secret put API_TOKEN`), for a backend that calls this worker on
// its users' behalf; a request without it gets 401, and with no API_TOKEN
// set every request gets 503 (the worker fails closed). Replace it with your
// own check (a session, a JWT whose subject must equal `user`, Cloudflare
// Access) when browsers call the worker directly.
//
// The work that waits after a reply (its boundary judgment, distill of the
// turn's recall block, notes of leaving episodes, a fade ahead) does not
// hold up the response: the memory is opened with `maintain_after_reply:
// false`, and after a reply the object answers first, then runs
// `maintain()` under `state.waitUntil(...)`. The next user message of the
// same user finds the memory maintained (or does what its view needs).
//
// Each user id maps to one Durable Object (`UserMemory`, SQLite-backed: see
// the migration in wrangler.jsonc); each request opens the memory over the
// object's transactional storage, makes its call and frees it, so the worker
// holds nothing between requests that the storage does not have. Two
// requests for the same user that overlap both land: the engine's
// compare-and-set commit (writeIf in a storage transaction) makes the later
// one reload and retry.
//
// A client that did not get the response to a POST (a timeout, a dropped
// connection) retries it with the same `client_id`: the message is stored
// once, and the retry's `added.duplicate` is true.
//
// Variables (wrangler.jsonc "vars", secrets with `wrangler secret put`):
//   MEMORY           the UserMemory Durable Object namespace (binding)
//   API_TOKEN        secret: the bearer token every request must carry
//   CHAT_MODEL       the chat model of an OpenAI-compatible endpoint; empty:
//                    engram's built-in offline model (demos and tests)
//   EMBEDDING_MODEL  its embedding model (empty: the offline embedder)
//   OPENAI_BASE_URL  the endpoint (default https://api.openai.com/v1)
//   OPENAI_API_KEY   secret: its key
//   CONFIG           optional: the engine config as JSON
//   MODEL            "scripted": the local tests' deterministic model

import { Memory, EngramError, durableObjectStore, functionModel, offlineModel, openAIModel } from "engram";

const USER = /^\/users\/([A-Za-z0-9._:@-]{1,64})(?:\/threads\/([^/]+))?\/(messages|view|facts|stats|threads)$/;

const json = (body, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** Equal strings, in a time that does not depend on where they differ (both hashed first). */
async function sameSecret(a, b) {
  const digest = async (s) => new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)));
  const [x, y] = await Promise.all([digest(a), digest(b)]);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}

/**
 * The authentication hook: whether `request` may act on `user`'s memory.
 * Returns null to let it through, or the Response that refuses it. Default:
 * a shared secret, `Authorization: Bearer <env.API_TOKEN>`. Replace it with
 * your own check; keep it failing closed.
 */
export async function authorize(request, env, user) {
  if (!env.API_TOKEN) {
    return json({ error: "the worker has no API_TOKEN secret: set one (wrangler secret put API_TOKEN)" }, 503);
  }
  const header = request.headers.get("authorization") ?? "";
  const token = header.startsWith("Bearer ") ? header.slice(7) : null;
  if (token === null || !(await sameSecret(token, env.API_TOKEN))) {
    const res = json({ error: "unauthorized: send Authorization: Bearer <API_TOKEN>" }, 401);
    res.headers.set("www-authenticate", 'Bearer realm="engram"');
    return res;
  }
  void user; // the shared secret may act for every user; a per-user check compares it here
  return null;
}

export default {
  async fetch(request, env) {
    const route = new URL(request.url).pathname.match(USER);
    if (!route) return json({ error: "not found: use /users/:id/(messages|view|facts|stats|threads) or /users/:id/threads/:thread/(messages|view)" }, 404);
    const refused = await authorize(request, env, route[1]);
    if (refused) return refused;
    const memory = env.MEMORY.get(env.MEMORY.idFromName(route[1]));
    return memory.fetch(request);
  },
};

/** A deterministic model for the local test: cuts before "Next topic", notes nothing. */
function scriptedModel() {
  return functionModel(async (req) => {
    // An awaited pause, as a real model call has: overlapping requests interleave here.
    await new Promise((resolve) => setTimeout(resolve, 5));
    switch (req.task) {
      case "segment":
        return { boundary: /New message[^\n]*\n[^\n]*: Next topic/.test(req.content) ? 0.9 : 0.1 };
      case "split":
        return { parts: ["message"] };
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
}

function modelFor(env) {
  if (env.MODEL === "scripted") return scriptedModel();
  if (!env.CHAT_MODEL) return offlineModel();
  const model = openAIModel({
    baseURL: env.OPENAI_BASE_URL || undefined,
    apiKey: env.OPENAI_API_KEY,
    model: env.CHAT_MODEL,
    embeddingModel: env.EMBEDDING_MODEL || undefined,
    timeoutMs: 20_000,
  });
  // No embedding model: the built-in embedder gives the vectors.
  return env.EMBEDDING_MODEL ? model : { ...model, embed: offlineModel().embed };
}

/** Whether a message ends the turn: an assistant reply that calls no tool. */
function endsTurn(message) {
  const calls = message?.tool_calls ?? message?.toolCalls;
  return message?.role === "assistant" && !(Array.isArray(calls) && calls.length > 0);
}

/** One user's memory: a Durable Object whose storage holds it. */
export class UserMemory {
  constructor(state, env) {
    this.state = state;
    this.env = env;
  }

  async fetch(request) {
    const [, user, encoded, what] = new URL(request.url).pathname.match(USER);
    let memory;
    try {
      // The chat: "main" when the path names none (the engine checks the name).
      let thread = "main";
      if (encoded !== undefined) {
        if (what !== "messages" && what !== "view") return json({ error: "not found: a thread has /messages and /view" }, 404);
        try {
          thread = decodeURIComponent(encoded);
        } catch {
          return json({ error: "the thread name is not URL-encoded UTF-8", code: "invalid-input" }, 400);
        }
      }
      memory = await Memory.open({
        namespace: `user:${user}`,
        model: modelFor(this.env),
        store: durableObjectStore(this.state.storage),
        // maintain() runs after the response (below), not inside addMessage.
        config: { ...(this.env.CONFIG ? JSON.parse(this.env.CONFIG) : {}), maintain_after_reply: false },
      });
      // A model step that went on without the model (a wrong URL, a model
      // answering junk) shows up in the logs, and counts in stats().model.
      memory.on("degraded", (d) => console.warn(`engram user:${user}: ${d.task} degraded (${d.effect}): ${d.error}`));
      if (what === "messages" && request.method === "POST") {
        let message;
        try {
          message = await request.json();
        } catch {
          return json({ error: "request body is not JSON", code: "invalid-input" }, 400);
        }
        // The path's thread wins over one in the body.
        const added = await memory.addMessage(encoded === undefined ? message : { ...message, thread });
        thread = encoded === undefined ? (message?.thread ?? "main") : thread;
        const view = await memory.render("openai", { thread });
        if (endsTurn(message)) {
          // Queued behind render(); free() below waits for it. The response
          // goes out now; waitUntil keeps the object working on it.
          const maintained = memory.maintain({ thread }).catch((e) => console.error(`engram user:${user}: maintain failed: ${e.message}`));
          this.state.waitUntil?.(maintained);
        }
        return json({ added, view });
      }
      if (request.method !== "GET") return json({ error: "method not allowed" }, 405);
      if (what === "view") return json(await memory.render("openai", { thread }));
      if (what === "threads") return json(await memory.threads());
      if (what === "facts") return json(await memory.facts());
      if (what === "stats") return json(await memory.stats());
      return json({ error: "not found" }, 404);
    } catch (e) {
      if (e instanceof EngramError) {
        // A packaging fault (the worker's bundle lost engram's .wasm) is the
        // deployment's, not the client's: 500, never 400.
        // A 5xx body carries no internals (a store's error can name its
        // address): the detail goes to the log.
        const status = e.code === "invalid-input" ? 400 : e.code === "busy" ? 409 : e.code === "packaging" ? 500 : 503;
        if (status === 400) return json({ error: e.message, code: e.code }, status);
        console.error(`engram user:${user}: ${e.stack ?? e}`);
        const error = status === 409 ? "the memory is busy with other writers: retry" : status === 503 ? "the memory's store or model is unavailable: retry" : "internal error";
        return json({ error, code: e.code }, status);
      }
      throw e;
    } finally {
      memory?.free();
    }
  }
}
