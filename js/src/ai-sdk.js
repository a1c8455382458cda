// The Vercel AI SDK (`ai`, majors 5, 6 and 7) integration, "engram/ai-sdk":
//   - aiSdkModel: engram's tasks through any AI SDK language model
//     (structured output) and its embeddings through any AI SDK embedding
//     model;
//   - engramMiddleware: a language-model middleware that adds each turn to a
//     memory and replaces the prompt with the memory's view, for
//     generateText / streamText (and useChat routes) via wrapLanguageModel.
// `ai` is an optional peer dependency: only this entry imports it.

import { Output, embedMany, generateText, jsonSchema } from "ai";
import { offlineModel } from "./models/offline.js";

/** An error the engine maps to ModelError (`code`: "unavailable" or "bad-answer"). */
function failure(message, code, extra = {}) {
  return Object.assign(new Error(message), { code }, extra);
}

/** Errors of `ai` that mean the answer did not fit (not that the model was unreachable). */
const BAD_ANSWER = new Set([
  "AI_NoObjectGeneratedError",
  "AI_TypeValidationError",
  "AI_JSONParseError",
  "AI_NoContentGeneratedError",
  "AI_InvalidResponseDataError",
]);

/** The engine's failure for what an `ai` call threw. */
function mapped(e, what, signal) {
  if (signal?.aborted) {
    return failure(`${what}: abandoned by the caller (${signal.reason?.message ?? "aborted"})`, "unavailable", { cause: e });
  }
  const code = BAD_ANSWER.has(e?.name) ? "bad-answer" : "unavailable";
  return failure(`${what}: ${e?.message ?? String(e)}`, code, { cause: e });
}

/**
 * A model for engram over AI SDK models.
 *
 * Options: `model` (an AI SDK language model, or a model id string the SDK
 * resolves), `embeddingModel` (an AI SDK embedding model; none: the
 * offline hashing embedder, `offlineModel().embed`), `output`: `"object"`
 * (default: generateText with `Output.object` and the task's JSON schema) or `"text"`
 * (generateText, the schema given in the system prompt, for models without
 * JSON output), `temperature` (0), `maxRetries` (the SDK's retries of a
 * call, 2), `providerOptions`, `headers`, `maxParallelCalls` (embedMany),
 * `countTokens(text)` (synchronous; default: the engine's estimate).
 *
 * `complete` resolves to the answer's JSON text; `embed` to one vector per
 * text. Both take `{ signal }` (the memory aborts it at its deadline) and
 * pass it to the SDK as `abortSignal`. A failure is a thrown error (`code`
 * "unavailable"), an unusable answer one with `code` "bad-answer".
 */
export function aiSdkModel(options = {}) {
  const {
    model,
    embeddingModel,
    output = "object",
    temperature = 0,
    maxRetries,
    providerOptions,
    headers,
    maxParallelCalls,
    countTokens,
  } = options;
  if (!model) throw new TypeError("aiSdkModel: `model` (an AI SDK language model) is required");
  if (output !== "object" && output !== "text") throw new TypeError('aiSdkModel: output is "object" or "text"');
  const shared = {
    ...(maxRetries === undefined ? {} : { maxRetries }),
    ...(providerOptions === undefined ? {} : { providerOptions }),
    ...(headers === undefined ? {} : { headers }),
  };

  const result = {
    /** Answers one engram task with the answer's JSON text. */
    async complete(request, { signal } = {}) {
      const what = `${request.task} (attempt ${request.attempt})`;
      let schema;
      try {
        schema = JSON.parse(request.schema);
      } catch (e) {
        throw failure(`${what}: the task's schema is not JSON`, "bad-answer", { cause: e });
      }
      if (output === "text") {
        let text;
        try {
          ({ text } = await generateText({
            model,
            system: `${request.system}\n\nAnswer with one JSON object only, following this JSON schema:\n${request.schema}`,
            prompt: request.content,
            temperature,
            abortSignal: signal,
            ...shared,
          }));
        } catch (e) {
          throw mapped(e, what, signal);
        }
        if (!text?.trim()) throw failure(`${what}: the model wrote nothing`, "bad-answer");
        return text; // the engine's parser repairs code fences and prose around the object
      }
      try {
        // generateText with an object output (generateObject is deprecated
        // from ai 7): ai 6 and 7 read `output`, ai 5 `experimental_output`;
        // each ignores the other key. ai 5 drops the schema's name.
        const spec = Output.object({ schema: jsonSchema(schema), name: `engram_${request.task}` });
        const result = await generateText({
          model,
          output: spec,
          experimental_output: spec,
          system: request.system,
          prompt: request.content,
          temperature,
          abortSignal: signal,
          ...shared,
        });
        return JSON.stringify("output" in result && result.output !== undefined ? result.output : result.experimental_output);
      } catch (e) {
        // The SDK could not parse what the model wrote: hand the text to the
        // engine, whose parser repairs code fences and prose around the
        // object (and says "bad answer" when that is not enough).
        if (e?.name === "AI_NoObjectGeneratedError" && typeof e.text === "string" && e.text.trim() && !signal?.aborted) {
          return e.text;
        }
        throw mapped(e, what, signal);
      }
    },

    /** One embedding per text, in order. */
    embed: embeddingModel
      ? async (texts, { signal } = {}) => {
          if (texts.length === 0) return [];
          let embeddings;
          try {
            ({ embeddings } = await embedMany({
              model: embeddingModel,
              values: Array.from(texts, String),
              abortSignal: signal,
              ...(maxParallelCalls === undefined ? {} : { maxParallelCalls }),
              ...shared,
            }));
          } catch (e) {
            throw mapped(e, "embed", signal);
          }
          if (!Array.isArray(embeddings) || embeddings.length !== texts.length || embeddings.some((v) => !v?.length)) {
            throw failure(`embed: expected ${texts.length} embeddings, got ${embeddings?.length ?? "none"}`, "bad-answer");
          }
          return embeddings;
        }
      : offlineModel().embed,
  };
  if (typeof countTokens === "function") result.countTokens = (text) => countTokens(text);
  return result;
}

// ---- the middleware ------------------------------------------------------------

/** Text of a prompt message's parts (text parts only). */
function partsText(content) {
  if (typeof content === "string") return content;
  return (content ?? [])
    .filter((p) => p?.type === "text")
    .map((p) => p.text)
    .join("\n");
}

/** A tool result's output as the text the memory keeps. */
function outputText(output) {
  if (output == null) return "";
  switch (output.type) {
    case "text":
    case "error-text":
      return String(output.value);
    case "json":
    case "error-json":
      return JSON.stringify(output.value);
    case "content":
      return output.value
        .filter((p) => p.type === "text")
        .map((p) => p.text)
        .join("\n");
    default:
      return typeof output === "string" ? output : JSON.stringify(output);
  }
}

/** A tool call's input as JSON text (prompt parts hold a value, results a string). */
function argumentsText(input) {
  return typeof input === "string" ? input : JSON.stringify(input ?? {});
}

/** A tool call's arguments as the value an AI SDK prompt part holds. */
function inputValue(args) {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/**
 * A 64-bit hash of `text` as 16 hex digits (two 32-bit FNV-1a lanes with
 * different seeds): for client ids, not for security.
 */
function hash64(text) {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}

/** A client id of at most 256 characters: `prefix` kept when short, else hashed. */
function clientIdOf(prefix, rest) {
  const id = `${prefix}:${rest}`;
  return id.length <= 256 ? id : `ai-sdk:h:${hash64(id)}`;
}

/** The app's id of the turn's message: `providerOptions.engram.clientId` on the prompt message. */
function givenId(message) {
  const id = message?.providerOptions?.engram?.clientId;
  return typeof id === "string" && id.length > 0 ? id : null;
}

/**
 * The memory's rendered view (OpenAI messages) as an AI SDK LanguageModelV2
 * prompt. `files`: file parts to put back on the last user message (the
 * memory keeps text only; the model still sees this turn's files).
 */
export function toAiSdkPrompt(messages, files = []) {
  const toolNames = new Map();
  for (const m of messages) for (const c of m.tool_calls ?? []) toolNames.set(c.id, c.function.name);
  const lastUser = messages.findLastIndex((m) => m.role === "user");
  return messages.map((m, i) => {
    switch (m.role) {
      case "system":
        return { role: "system", content: m.content };
      case "user": {
        const content = [{ type: "text", text: m.content }];
        if (i === lastUser) content.push(...files);
        return { role: "user", content };
      }
      case "assistant": {
        const content = m.content ? [{ type: "text", text: m.content }] : [];
        for (const c of m.tool_calls ?? []) {
          content.push({ type: "tool-call", toolCallId: c.id, toolName: c.function.name, input: inputValue(c.function.arguments) });
        }
        return { role: "assistant", content };
      }
      case "tool":
        return {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: m.tool_call_id,
              toolName: toolNames.get(m.tool_call_id) ?? "unknown",
              output: { type: "text", value: m.content },
            },
          ],
        };
      default:
        throw new TypeError(`engramMiddleware: a view message with role ${JSON.stringify(m.role)}`);
    }
  });
}

/**
 * What of the prompt the memory takes: the caller's system text (the
 * leading system messages), and the turn's new messages: the newest user
 * message when the prompt ends with one; the tool results after the last
 * assistant message when it ends with them (a tool loop's next step, or a
 * client that ran the tools); nothing otherwise. Earlier messages are what
 * the memory already holds.
 *
 * Each new message gets a client id, so a regenerate, a retried request or
 * a repeated tool step adds nothing twice: a user message's is the app's id
 * (`clientId` of the middleware, or `providerOptions.engram.clientId` on
 * the message) joined to a hash of its text, or, with no id given, a hash
 * of the prompt before it joined to a hash of its text; a tool result's is
 * its tool call id. `key` names the turn (its replies' ids derive from it).
 * `thread`: the thread the turn's messages go to; the ids of a thread other
 * than `main` hold a hash of its name (client ids are the memory's, so the
 * same first message in two chats is two messages), `main`'s are as before
 * threads.
 */
function turnOf(prompt, appId, thread) {
  const scope = thread === "main" ? "" : `t${hash64(thread)}:`;
  const idOf = (prefix, rest) => clientIdOf(prefix, scope + rest);
  let lead = 0;
  while (lead < prompt.length && prompt[lead].role === "system") lead++;
  const system = prompt
    .slice(0, lead)
    .map((m) => m.content)
    .join("\n\n");
  const last = prompt.at(-1);
  const added = [];
  let files = [];
  let key = null;
  if (last?.role === "user") {
    const content = partsText(last.content);
    const id = givenId(last) ?? appId;
    key =
      id != null
        ? idOf("ai-sdk:id", `${hash64(content)}:${id}`)
        : idOf("ai-sdk:h", `${hash64(JSON.stringify(prompt.slice(lead, -1)))}:${hash64(content)}`);
    added.push({ role: "user", content, client_id: key, thread, question: true });
    files = last.content.filter?.((p) => p?.type === "file") ?? [];
  } else if (last?.role === "tool") {
    let i = prompt.length;
    while (i > 0 && prompt[i - 1].role === "tool") i--;
    for (const m of prompt.slice(i)) {
      for (const p of m.content) {
        if (p.type !== "tool-result") continue;
        key = idOf("ai-sdk:tool", p.toolCallId);
        added.push({ role: "tool", tool_call_id: p.toolCallId, content: outputText(p.output), client_id: key, thread });
      }
    }
  }
  return { system: lead > 0 ? system : null, added, files, key };
}

/** The assistant reply to add, from the model's content parts (null: nothing to add). */
function replyOf(content) {
  let text = "";
  const toolCalls = [];
  for (const p of content ?? []) {
    if (p.type === "text") text += p.text;
    else if (p.type === "tool-call" && !p.providerExecuted) {
      toolCalls.push({ id: p.toolCallId, name: p.toolName, arguments: argumentsText(p.input) });
    }
  }
  if (!text && toolCalls.length === 0) return null;
  return toolCalls.length ? { role: "assistant", content: text, tool_calls: toolCalls } : { role: "assistant", content: text };
}

/**
 * The memory's rendered view of `thread` up to and including user message
 * `question` (the prompt of a regenerate: what the screen shows while the
 * new answer comes, the old one already gone from it). Cut after the user
 * message of the rendered messages that is `question` (the view's user
 * message items and the rendered user messages are one to one).
 */
async function viewThrough(memory, thread, question) {
  const [view, rendered] = [await memory.view({ thread }), await memory.render("openai", { thread })];
  const users = view.items.filter((it) => it.kind === "message" && it.role === "user");
  const k = users.findIndex((it) => it.message === question);
  if (k < 0) return rendered; // not in the view (it left it): nothing to cut
  let seen = -1;
  const end = rendered.findIndex((m) => m.role === "user" && ++seen === k);
  return rendered.slice(0, end + 1);
}

/**
 * An AI SDK language-model middleware (LanguageModelV2Middleware) that gives
 * a chat memory:
 *
 *     const model = wrapLanguageModel({ model: openai("gpt-4.1"), middleware: engramMiddleware({ memory }) });
 *     const result = streamText({ model, messages });
 *
 * Before each model call it adds the turn's new message to `memory` (the
 * newest user message; or, in a tool loop, the tool results after the last
 * assistant message) and replaces the prompt with the memory's view
 * (`memory.render("openai")` as a LanguageModelV2 prompt). Earlier messages
 * a client resends are not added again: the memory holds them already, and
 * the view decides what the model sees. After generate (and after a stream
 * finishes) it adds the assistant's reply, its tool calls included; a
 * stream that errors or is cancelled adds nothing.
 *
 * The caller's system prompt (`system:` or leading system messages), by
 * `system`:
 *   - "instructions" (default): set as the memory's pinned instructions
 *     (`memory.setInstructions`, written only when it changed): first in
 *     every view, counted toward the ceiling, never faded. No system prompt
 *     leaves the memory's instructions as they are.
 *   - "keep": put before the view as it is, every call (not stored, not
 *     counted toward the ceiling).
 *   - "ignore": dropped (set instructions yourself with setInstructions).
 *
 * Nothing is added twice. Every message the middleware adds has a client id
 * (the memory's exactly-once mechanism): a regenerate or a retried request
 * resends the same user message, whose id is already in the memory, so it
 * is not added again; a tool result's id is its tool call id; a reply's is
 * derived from its turn's and its own content (a retry that gets the same
 * answer adds it once).
 *
 * A regenerate replaces, as the screen does: a request whose prompt ends
 * with a user message the memory already holds (or any, with `trigger:
 * "regenerate-message"`, the AI SDK's useChat `regenerate()`) is a new
 * answer to it. The model sees the view up to that message (not the answer
 * being regenerated), and the reply is added with `replaces` (the core's
 * regenerate): the messages after the question in the thread (the earlier
 * answer, its tool calls and outputs included) stay stored, listed with
 * `replaced_by` and explainable (`memory.explain({ message })`), but leave
 * the view. A regenerate whose first answer was never stored replaces
 * nothing; one that comes back with an answer it replaced shows that one
 * again. Facts already noted from a replaced answer stay. `trigger`: the
 * request body's `trigger` (useChat sends it with `messageId`), e.g.
 * `engramMiddleware({ memory, clientId: messages.at(-1).id, trigger })`;
 * without it a regenerate is still found by the user message already held.
 *
 * The user message's id: the app's
 * own (`clientId` here, for the request's last message, e.g. the UI
 * message's `id` in a useChat route; or `providerOptions: { engram: {
 * clientId } }` on the prompt message), else derived from the prompt before
 * it and its text, which needs the client to send the conversation (useChat
 * does). Either way the id is joined to a hash of the text: an edited
 * message (same id, new text) is added as a new message, the correction
 * after the original (engram never deletes by itself; `memory.erase`
 * does).
 *
 * `thread` names the chat (default "main"): every message the middleware
 * adds goes to it and the prompt is its view (the memory's facts block,
 * that chat's own episodes and recall). One memory per user, one thread
 * per chat: what one chat taught reaches the others through the facts
 * block and recall.
 */
export function engramMiddleware({ memory, system = "instructions", clientId, thread = "main", trigger } = {}) {
  if (!memory || typeof memory.render !== "function" || typeof memory.addMessage !== "function") {
    throw new TypeError("engramMiddleware: `memory` (an engram Memory) is required");
  }
  if (!["instructions", "keep", "ignore"].includes(system)) {
    throw new TypeError('engramMiddleware: system is "instructions", "keep" or "ignore"');
  }
  if (clientId != null && (typeof clientId !== "string" || clientId.length === 0)) {
    throw new TypeError("engramMiddleware: clientId is a non-empty string (the id of the request's user message)");
  }
  if (typeof thread !== "string" || thread.length === 0) {
    throw new TypeError("engramMiddleware: thread is a non-empty string (the chat's name)");
  }
  if (trigger != null && trigger !== "submit-message" && trigger !== "regenerate-message") {
    throw new TypeError('engramMiddleware: trigger is "submit-message" or "regenerate-message" (the request body\'s trigger)');
  }

  // The turn key of each call's transformed params (the object the SDK
  // hands back to wrapGenerate / wrapStream).
  const turnKeys = new WeakMap();
  // The user message a regenerate answers again (its memory id), by
  // transformed params.
  const regenerates = new WeakMap();

  /** Adds the reply, its client id derived from the turn's and its own content: a retried answer is added once. */
  const addReply = async (content, params) => {
    const reply = replyOf(content);
    if (!reply) return;
    const key = params && turnKeys.get(params);
    if (key) reply.client_id = clientIdOf("ai-sdk:reply", `${hash64(JSON.stringify(reply))}:${key}`);
    reply.thread = thread;
    const question = params && regenerates.get(params);
    if (question != null) reply.replaces = question;
    await memory.addMessage(reply);
  };

  return {
    middlewareVersion: "v2",

    async transformParams({ params }) {
      const turn = turnOf(params.prompt ?? [], clientId ?? null, thread);
      if (system === "instructions" && turn.system != null && turn.system !== (await memory.instructions())) {
        await memory.setInstructions(turn.system);
      }
      let question = null;
      for (const { question: isQuestion, ...m } of turn.added) {
        const added = await memory.addMessage(m);
        // A user message already held, or useChat's regenerate: a new answer to it.
        if (isQuestion && (added.duplicate || trigger === "regenerate-message")) question = added.message;
      }
      const rendered =
        question == null ? await memory.render("openai", { thread }) : await viewThrough(memory, thread, question);
      const prompt = toAiSdkPrompt(rendered, turn.files);
      if (system === "keep" && turn.system != null) prompt.unshift({ role: "system", content: turn.system });
      const transformed = { ...params, prompt };
      if (turn.key) turnKeys.set(transformed, turn.key);
      if (question != null) regenerates.set(transformed, question);
      return transformed;
    },

    async wrapGenerate({ doGenerate, params }) {
      const result = await doGenerate();
      await addReply(result.content, params);
      return result;
    },

    async wrapStream({ doStream, params }) {
      const { stream, ...rest } = await doStream();
      const texts = new Map();
      const order = [];
      const calls = [];
      let failed = false;
      const collect = new TransformStream({
        transform(part, controller) {
          switch (part.type) {
            case "text-delta":
              if (!texts.has(part.id)) {
                texts.set(part.id, "");
                order.push(part.id);
              }
              texts.set(part.id, texts.get(part.id) + part.delta);
              break;
            case "tool-call":
              calls.push(part);
              break;
            case "error":
              failed = true;
              break;
            case "finish":
              // A string in LanguageModelV2, { unified, raw } from V3 on.
              if ((part.finishReason?.unified ?? part.finishReason) === "error") failed = true;
              break;
          }
          controller.enqueue(part);
        },
        // The stream closes once the reply is in the memory (an add that
        // fails errors the stream), so a server keeps running until then.
        async flush() {
          if (failed) return;
          const text = order.map((id) => texts.get(id)).join("");
          await addReply([{ type: "text", text }, ...calls], params);
        },
      });
      return { stream: stream.pipeThrough(collect), ...rest };
    },
  };
}
