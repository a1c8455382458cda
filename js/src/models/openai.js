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
 * A model for engram over an OpenAI-compatible endpoint.
 *
 * Options: `baseURL` (default `https://api.openai.com/v1`; e.g.
 * `http://127.0.0.1:11434/v1` for Ollama), `apiKey`, `model` (chat model),
 * `embeddingModel`, `temperature` (0), `timeoutMs` per request (60000),
 * `retries` after the first try (3) with exponential backoff from
 * `backoffMs` (500) up to `maxBackoffMs` (8000) on network errors,
 * timeouts, 408, 429 (honouring Retry-After) and 5xx; `responseFormat`:
 * `"json_schema"` (default; falls back to `"json_object"` once if the server
 * rejects it), `"json_object"` or `"none"`; `strict` (false) for
 * `json_schema`; `headers`; `fetch` (default `globalThis.fetch`);
 * `countTokens(text)` (synchronous tokenizer; default: the engine's
 * estimate); `embedBatch` (texts per /embeddings request, 128).
 *
 * `complete` and `embed` take `{ signal }` as a second argument (the memory
 * passes one, aborted at its deadline): an aborted call stops its request
 * and its retries.
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
  } = options;
  let responseFormat = options.responseFormat ?? "json_schema";
  if (typeof model !== "string" || !model) throw new TypeError("openAIModel: `model` (the chat model name) is required");
  if (typeof fetchFn !== "function") throw new TypeError("openAIModel: no fetch available; pass `fetch`");
  if (!["json_schema", "json_object", "none"].includes(responseFormat)) {
    throw new TypeError('openAIModel: responseFormat is "json_schema", "json_object" or "none"');
  }
  const root = baseURL.replace(/\/+$/, "");
  const baseHeaders = { "content-type": "application/json", ...headers };
  if (apiKey) baseHeaders.authorization = `Bearer ${apiKey}`;

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
        lastError = error;
      } catch (e) {
        if (e.code === "bad-answer" || (e.status && e.status !== 408 && e.status !== 429 && e.status < 500)) throw e;
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
    if (responseFormat === "json_object") return { type: "json_object" };
    return undefined;
  }

  const result = {
    /** Answers one engram task with the JSON text the chat model wrote. */
    async complete(request, { signal } = {}) {
      const body = {
        model,
        temperature,
        messages: [
          { role: "system", content: request.system },
          { role: "user", content: request.content },
        ],
      };
      let data;
      for (;;) {
        const response_format = format(request);
        try {
          data = await post("/chat/completions", response_format ? { ...body, response_format } : body, signal);
          break;
        } catch (e) {
          // Servers without structured outputs reject json_schema with a 400:
          // fall back to JSON mode for the rest of this model's life.
          if (responseFormat === "json_schema" && e.status === 400 && /response_format|json_schema|schema/i.test(e.message)) {
            responseFormat = "json_object";
            continue;
          }
          throw e;
        }
      }
      const message = data?.choices?.[0]?.message;
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
        const data = await post("/embeddings", { model: embeddingModel, input: batch, encoding_format: "float" }, signal);
        const rows = Array.isArray(data?.data) ? [...data.data].sort((a, b) => a.index - b.index) : [];
        if (rows.length !== batch.length || rows.some((r) => !Array.isArray(r?.embedding))) {
          throw failure(`/embeddings: expected ${batch.length} embeddings`, "bad-answer");
        }
        for (const r of rows) out.push(r.embedding);
      }
      return out;
    },
  };
  if (typeof countTokens === "function") result.countTokens = (text) => countTokens(text);
  return result;
}
