// A model over any OpenAI-compatible HTTP API: OpenAI, Ollama, llama.cpp
// server, vLLM, LM Studio... Completions go to /chat/completions with the
// task's JSON schema as structured output; embeddings to /embeddings.

/** Waits `ms`, or less when `signal` aborts first. */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** An error the engine maps to ModelError (`code`: "unavailable" or "bad-answer"). */
function failure(message, code, extra = {}) {
  return Object.assign(new Error(message), { code }, extra);
}

/**
 * The answer-token bound sent as `max_tokens` with each task's request: its
 * schema's largest useful answer with room to spare (segment and resolve
 * answer one number; reconcile a relation for each of up to 8 facts;
 * relevance the numbers of up to ~40 candidates (`walk_batch` 12 and as
 * many per hop); distill the numbers of up to ~60 recalled items (a block of
 * 1,200 tokens of short facts; at 192 Gemma 3 270M's answers were cut off);
 * split a few phrases; trace up to `trace_batch` (16) facts' episode lists;
 * note up to a few dozen facts of one sentence each).
 */
export const MAX_TOKENS = Object.freeze({
  segment: 48,
  resolve: 48,
  reconcile: 256,
  relevance: 256,
  distill: 512,
  split: 256,
  trace: 512,
  note: 1536,
});

/** Calls when no `concurrency` is given and the server does not say (GET /props `total_slots`). */
export const DEFAULT_CONCURRENCY = 2;

// The response format that worked, per endpoint (base URL and model): a
// server that rejected json_schema is asked in JSON mode by every model made
// for it afterwards, without a rejected request first: "json_object+schema"
// (JSON mode with the task's schema beside it, which llama.cpp's servers
// turn into a grammar), or "json_object" when that was rejected too.
const FORMAT_BY_ENDPOINT = new Map();

/** A response's rejection of its `response_format` (some servers answer 422 or 500, not 400). */
function rejectsFormat(status, text) {
  return (status === 400 || status === 422 || status === 500) && /response_format|json_schema|schema/i.test(text);
}

/**
 * A FIFO of at most `limit()` running calls (read at each start, so a limit
 * learnt later applies to the calls still waiting); a waiter whose signal
 * aborts leaves the queue. Returns `run(fn, signal)` and `wake()`.
 */
function limiter(limit) {
  let running = 0;
  const waiting = [];
  const next = () => {
    while (running < limit() && waiting.length) {
      running++;
      waiting.shift().go();
    }
  };
  const run = async function run(fn, signal) {
    await new Promise((resolve, reject) => {
      const entry = {
        go: () => {
          signal?.removeEventListener("abort", leave);
          resolve();
        },
      };
      const leave = () => {
        const i = waiting.indexOf(entry);
        if (i >= 0) waiting.splice(i, 1);
        reject(signal.reason ?? new Error("aborted"));
      };
      if (signal?.aborted) return leave();
      signal?.addEventListener("abort", leave, { once: true });
      waiting.push(entry);
      next();
    });
    try {
      return await fn();
    } finally {
      running--;
      next();
    }
  };
  return { run, wake: next };
}

/**
 * A model for engram over an OpenAI-compatible endpoint.
 *
 * Options: `baseURL` (default `https://api.openai.com/v1`; e.g.
 * `http://127.0.0.1:11434/v1` for Ollama), `apiKey`, `model` (chat model),
 * `embeddingModel`, `temperature` (0), `timeoutMs` per request (60000),
 * `retries` after the first try (3) with exponential backoff from
 * `backoffMs` (500) up to `maxBackoffMs` (8000) on network errors,
 * timeouts, 408, 429 (honouring Retry-After) and 5xx; `responseFormat`:
 * `"json_schema"` (default; when the server rejects it with a 400, 422 or
 * 500 naming `response_format`, falls back to JSON mode with the task's
 * schema beside it, `{ type: "json_object", schema }`, which llama.cpp's
 * servers enforce as a grammar, and to plain `"json_object"` if that is
 * rejected too; remembered for the endpoint and announced once per step by
 * a `format` event), `"json_object"` (plain JSON mode) or `"none"`; `strict` (false) for `json_schema`; `maxTokens`: the
 * `max_tokens` every request carries, a number for all tasks or an object
 * overriding `MAX_TOKENS` per task (an answer cut there is a bad answer
 * marked truncated); `concurrency`: requests in flight at once, the others
 * queue (default: the server's `total_slots` from GET /props, as llama.cpp's
 * server answers, else `DEFAULT_CONCURRENCY`, 2); `headers`; `fetch`
 * (default `globalThis.fetch`); `countTokens(text)` (synchronous tokenizer;
 * default: the engine's estimate); `embedBatch` (texts per /embeddings
 * request, 128); `onEvent(event)`: also called with each event.
 *
 * `complete` and `embed` take `{ signal }` as a second argument (the memory
 * passes one, aborted at its deadline): an aborted call stops its request
 * on the wire (the connection is closed, so a server that notices stops
 * generating), leaves the queue if it waits there, and stops its retries.
 *
 * `model.on("format", listener)` hears `{ endpoint, from, to, schema,
 * status, reason }` once when the endpoint's response format falls back
 * (`schema`: whether JSON mode now carries the task's schema); it
 * returns a function that stops listening.
 */
export function openAIModel(options = {}) {
  const {
    baseURL = "https://api.openai.com/v1",
    apiKey,
    model,
    embeddingModel,
    temperature = 0,
    timeoutMs = 60_000,
    retries = 3,
    backoffMs = 500,
    maxBackoffMs = 8_000,
    strict = false,
    headers = {},
    fetch: fetchFn = globalThis.fetch,
    countTokens,
    embedBatch = 128,
    concurrency,
    maxTokens,
    onEvent,
  } = options;
  let responseFormat = options.responseFormat ?? "json_schema";
  if (typeof model !== "string" || !model) throw new TypeError("openAIModel: `model` (the chat model name) is required");
  if (typeof fetchFn !== "function") throw new TypeError("openAIModel: no fetch available; pass `fetch`");
  if (!["json_schema", "json_object", "none"].includes(responseFormat)) {
    throw new TypeError('openAIModel: responseFormat is "json_schema", "json_object" or "none"');
  }
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1)) {
    throw new TypeError("openAIModel: concurrency is an integer >= 1");
  }
  const bounds = { ...MAX_TOKENS };
  if (typeof maxTokens === "number") for (const k of Object.keys(bounds)) bounds[k] = maxTokens;
  else if (maxTokens && typeof maxTokens === "object") Object.assign(bounds, maxTokens);
  else if (maxTokens !== undefined) throw new TypeError("openAIModel: maxTokens is a number or an object of numbers per task");
  for (const [k, v] of Object.entries(bounds)) {
    if (!(Number.isInteger(v) && v >= 1)) throw new TypeError(`openAIModel: maxTokens.${k} is an integer >= 1`);
  }
  const root = baseURL.replace(/\/+$/, "");
  const endpoint = `${root} ${model}`;
  // After a fallback from json_schema, JSON mode carries the task's schema
  // (`{ type: "json_object", schema }`: llama.cpp's servers constrain the
  // answer to it) unless the server rejected that too.
  let schemaInJsonMode = false;
  const learnt = FORMAT_BY_ENDPOINT.get(endpoint);
  if (responseFormat === "json_schema" && learnt) {
    responseFormat = "json_object";
    schemaInJsonMode = learnt === "json_object+schema";
  }
  const listeners = new Map();
  function emit(event, detail) {
    for (const fn of [...(listeners.get(event) ?? [])]) {
      try {
        fn(detail);
      } catch (e) {
        queueMicrotask(() => {
          throw e;
        });
      }
    }
    if (typeof onEvent === "function") onEvent({ event, ...detail });
  }
  const baseHeaders = { "content-type": "application/json", ...headers };
  if (apiKey) baseHeaders.authorization = `Bearer ${apiKey}`;

  // The server's slots, asked once when the model is made (llama.cpp's
  // server answers GET /props, at the root beside /v1; any failure gives
  // the default). Until it answers, one call at a time: the first call
  // does not wait for it, and a one-slot server is never flooded.
  let slots = concurrency ?? 1;
  const gate = limiter(() => slots);
  const queued = gate.run;
  if (concurrency === undefined) {
    (async () => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 2_000);
      try {
        const res = await fetchFn(`${root.replace(/\/v1$/, "")}/props`, { headers: baseHeaders, signal: controller.signal });
        const n = res.ok ? (await res.json())?.total_slots : undefined;
        return Number.isInteger(n) && n >= 1 ? n : DEFAULT_CONCURRENCY;
      } catch {
        return DEFAULT_CONCURRENCY;
      } finally {
        clearTimeout(timer);
      }
    })().then((n) => {
      slots = n;
      gate.wake();
    });
  }

  /**
   * One POST with timeout; retried with backoff when the failure is
   * transient, until `signal` (the caller's) aborts.
   */
  async function post(path, body, signal) {
    const abandoned = () => failure(`${path}: abandoned by the caller (${signal.reason?.message ?? "aborted"})`, "unavailable");
    let lastError;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) {
        const backoff = Math.min(maxBackoffMs, backoffMs * 2 ** (attempt - 1));
        const wait = Math.max(backoff * (0.5 + Math.random() / 2), lastError?.retryAfterMs ?? 0);
        await sleep(Math.min(wait, 60_000), signal);
      }
      if (signal?.aborted) throw abandoned();
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), timeoutMs);
      const stop = () => controller.abort();
      signal?.addEventListener("abort", stop, { once: true });
      try {
        const res = await fetchFn(`${root}${path}`, {
          method: "POST",
          headers: baseHeaders,
          body: JSON.stringify(body),
          signal: controller.signal,
        });
        const text = await res.text();
        if (res.ok) {
          try {
            return JSON.parse(text);
          } catch {
            throw failure(`${path}: the response is not JSON: ${text.slice(0, 200)}`, "bad-answer");
          }
        }
        const retryAfter = Number(res.headers.get("retry-after"));
        const error = failure(`${path}: HTTP ${res.status}: ${text.slice(0, 500)}`, "unavailable", {
          status: res.status,
          retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
        });
        if (res.status !== 408 && res.status !== 429 && res.status < 500) throw error;
        if (path === "/chat/completions" && rejectsFormat(res.status, text)) throw Object.assign(error, { format: true });
        lastError = error;
      } catch (e) {
        if (e.code === "bad-answer" || e.format || (e.status && e.status !== 408 && e.status !== 429 && e.status < 500)) throw e;
        if (signal?.aborted) throw abandoned();
        lastError = controller.signal.aborted
          ? failure(`${path}: no answer within ${timeoutMs} ms`, "unavailable", { cause: e })
          : e.code === "unavailable"
            ? e
            : failure(`${path}: ${e.message}`, "unavailable", { cause: e });
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener("abort", stop);
      }
    }
    throw lastError;
  }

  function format(request) {
    if (responseFormat === "json_schema") {
      return {
        type: "json_schema",
        json_schema: { name: `engram_${request.task}`, schema: JSON.parse(request.schema), strict },
      };
    }
    if (responseFormat === "json_object") return schemaInJsonMode ? { type: "json_object", schema: JSON.parse(request.schema) } : { type: "json_object" };
    return undefined;
  }

  const result = {
    /** Answers one engram task with the JSON text the chat model wrote. */
    async complete(request, { signal } = {}) {
      const limit = bounds[request.task] ?? Math.max(...Object.values(bounds));
      const body = {
        model,
        temperature,
        max_tokens: limit,
        messages: [
          { role: "system", content: request.system },
          { role: "user", content: request.content },
        ],
      };
      let data;
      for (;;) {
        const response_format = format(request);
        try {
          const sent = response_format ? { ...body, response_format } : body;
          data = await queued(() => post("/chat/completions", sent, signal), signal).catch((e) => {
            throw signal?.aborted && !e.code ? failure(`/chat/completions: abandoned by the caller while queued (${signal.reason?.message ?? "aborted"})`, "unavailable") : e;
          });
          break;
        } catch (e) {
          // Servers without structured outputs reject json_schema (400, or
          // 422 or 500 from some): JSON mode from then on, for this endpoint.
          if (response_format?.type === "json_schema" && rejectsFormat(e.status, e.message)) {
            const first = !FORMAT_BY_ENDPOINT.has(endpoint);
            responseFormat = "json_object";
            schemaInJsonMode = true;
            if (first) FORMAT_BY_ENDPOINT.set(endpoint, "json_object+schema");
            else schemaInJsonMode = FORMAT_BY_ENDPOINT.get(endpoint) === "json_object+schema";
            if (first) emit("format", { endpoint: root, model, from: "json_schema", to: "json_object", schema: true, status: e.status, reason: e.message });
            continue;
          }
          // JSON mode with the schema beside it rejected too: plain JSON mode.
          if (response_format?.schema && rejectsFormat(e.status, e.message)) {
            const first = FORMAT_BY_ENDPOINT.get(endpoint) !== "json_object";
            schemaInJsonMode = false;
            FORMAT_BY_ENDPOINT.set(endpoint, "json_object");
            if (first) emit("format", { endpoint: root, model, from: "json_object+schema", to: "json_object", schema: false, status: e.status, reason: e.message });
            continue;
          }
          const now = format(request);
          if (now?.type !== response_format?.type || Boolean(now?.schema) !== Boolean(response_format?.schema)) continue; // another call fell back meanwhile
          throw e;
        }
      }
      const choice = data?.choices?.[0];
      if (choice?.finish_reason === "length") {
        throw failure(`truncated: the ${request.task} answer reached max_tokens (${limit})`, "bad-answer");
      }
      const message = choice?.message;
      if (message?.refusal) throw failure(`the model refused: ${message.refusal}`, "bad-answer");
      if (typeof message?.content !== "string") throw failure("the response has no message content", "bad-answer");
      return message.content;
    },

    /** One embedding per text, in order. */
    async embed(texts, { signal } = {}) {
      if (!embeddingModel) throw failure("openAIModel: no `embeddingModel` given", "unavailable");
      const out = [];
      for (let i = 0; i < texts.length; i += embedBatch) {
        const batch = texts.slice(i, i + embedBatch);
        const data = await queued(() => post("/embeddings", { model: embeddingModel, input: batch, encoding_format: "float" }, signal), signal).catch((e) => {
          throw signal?.aborted && !e.code ? failure(`/embeddings: abandoned by the caller while queued (${signal.reason?.message ?? "aborted"})`, "unavailable") : e;
        });
        const rows = Array.isArray(data?.data) ? [...data.data].sort((a, b) => a.index - b.index) : [];
        if (rows.length !== batch.length || rows.some((r) => !Array.isArray(r?.embedding))) {
          throw failure(`/embeddings: expected ${batch.length} embeddings`, "bad-answer");
        }
        for (const r of rows) out.push(r.embedding);
      }
      return out;
    },
  };
  /** Listens to the model's events (`format`); returns a function that stops listening. */
  result.on = (event, listener) => {
    if (event !== "format") throw new TypeError(`openAIModel: unknown event ${JSON.stringify(event)}`);
    if (typeof listener !== "function") throw new TypeError("openAIModel: a listener is a function");
    if (!listeners.has(event)) listeners.set(event, new Set());
    listeners.get(event).add(listener);
    return () => listeners.get(event).delete(listener);
  };
  if (typeof countTokens === "function") result.countTokens = (text) => countTokens(text);
  return result;
}
