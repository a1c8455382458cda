// An edge worker with one engram memory per user (module worker syntax;
// runs on workerd, Cloudflare Workers and miniflare).
//
//   POST /users/:id/messages   {role, content, client_id?, ...}  -> { added, view }
//   GET  /users/:id/view                             -> OpenAI messages
//   GET  /users/:id/facts                            -> facts
//   GET  /users/:id/stats                            -> counts, pending work, model health
//
// The work that waits after a reply (its boundary judgment, distill of the
// turn's recall block, notes of leaving episodes, a fade ahead) does not
// hold up the response: the memory is opened with `maintain_after_reply:
// false`, and after a reply the object answers first, then runs
// `maintain()` under `state.waitUntil(...)`. The next user message of the
// same user finds the memory maintained (or does what its view needs).
//
// Each user id maps to one Durable Object (`UserMemory`); each request opens
// the memory over the object's transactional storage, makes its call and
// frees it, so the worker holds nothing between requests that the storage
// does not have. Two requests for the same user that overlap both land: the
// engine's compare-and-set commit (writeIf in a storage transaction) makes
// the later one reload and retry.
//
// A client that did not get the response to a POST (a timeout, a dropped
// connection) retries it with the same `client_id`: the message is stored
// once, and the retry's `added.duplicate` is true.
//
// Bindings: MEMORY (the UserMemory namespace); MODEL = "scripted" for the
// local test, otherwise OPENAI_BASE_URL, OPENAI_API_KEY, CHAT_MODEL and
// EMBEDDING_MODEL for any OpenAI-compatible endpoint (with no CHAT_MODEL,
// engram's built-in offline model: for demos and tests); CONFIG (optional)
// the engine config as JSON.

import { Memory, EngramError, durableObjectStore, functionModel, offlineModel, openAIModel } from "engram";

const USER = /^\/users\/([A-Za-z0-9._:@-]{1,64})\/(messages|view|facts|stats)$/;

const json = (body, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

export default {
  async fetch(request, env) {
    const route = new URL(request.url).pathname.match(USER);
    if (!route) return json({ error: "not found: use /users/:id/(messages|view|facts|stats)" }, 404);
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
  return openAIModel({
    baseURL: env.OPENAI_BASE_URL,
    apiKey: env.OPENAI_API_KEY,
    model: env.CHAT_MODEL,
    embeddingModel: env.EMBEDDING_MODEL,
    timeoutMs: 20_000,
  });
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
    const [, user, what] = new URL(request.url).pathname.match(USER);
    let memory;
    try {
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
        const message = await request.json();
        const added = await memory.addMessage(message);
        const view = await memory.render("openai");
        if (endsTurn(message)) {
          // Queued behind render(); free() below waits for it. The response
          // goes out now; waitUntil keeps the object working on it.
          const maintained = memory.maintain().catch((e) => console.error(`engram user:${user}: maintain failed: ${e.message}`));
          this.state.waitUntil?.(maintained);
        }
        return json({ added, view });
      }
      if (request.method !== "GET") return json({ error: "method not allowed" }, 405);
      if (what === "view") return json(await memory.render("openai"));
      if (what === "facts") return json(await memory.facts());
      if (what === "stats") return json(await memory.stats());
      return json({ error: "not found" }, 404);
    } catch (e) {
      if (e instanceof EngramError) {
        const status = e.code === "invalid-input" ? 400 : e.code === "busy" ? 409 : 503;
        return json({ error: e.message, code: e.code }, status);
      }
      throw e;
    } finally {
      memory?.free();
    }
  }
}
