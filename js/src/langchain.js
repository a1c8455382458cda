// The LangChain.js 1.x integration, "engram/langchain": engramMiddleware, an
// agent middleware (for `createAgent` of `langchain`) that keeps one thread
// of a memory as the agent's conversation. It imports nothing from
// LangChain: the app passes `createMiddleware` from "langchain" (an optional
// peer dependency), and the messages it hands the graph are message-likes
// (`{ type, content, id, ... }`) that LangGraph's messages reducer turns
// into LangChain messages. docs/langchain.md.
//
// beforeModel adds the state's messages engram has not seen (each once, a
// client id from the LangChain message id; the messages engram rendered
// carry ids `engram-<message>` and are skipped), then replaces the state's
// messages with engram's view of the thread; afterModel adds the model's
// message, so the final answer is stored when the agent stops.

import { engramMessageOf } from "./agents.js";
import { textOf } from "./content.js";
import { InvalidInputError } from "./errors.js";

/** LangGraph's id for a RemoveMessage that clears the messages before it. */
const REMOVE_ALL_MESSAGES = "__remove_all__";

/** A stored call's arguments (a JSON string) as LangChain's `args` object. */
function argumentsOf(text) {
  if (!text) return {};
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return { arguments: text };
  }
  return value !== null && typeof value === "object" && !Array.isArray(value) ? value : { arguments: value };
}

/**
 * engram's view of `thread` as LangChain message-likes: system items as
 * `{ type: "system" }`, an assistant message with its tool calls as one
 * `{ type: "ai", tool_calls }`, tool outputs as `{ type: "tool" }`. A stored
 * message's id is `engram-<message>`; the facts and recall blocks'
 * `engram-view-<n>`.
 */
export async function viewMessages(memory, thread = "main") {
  const out = [];
  let lastAi = null;
  (await memory.render("responses", { thread })).forEach((item, n) => {
    const message = engramMessageOf(item);
    const id = message !== undefined ? `engram-${message}` : `engram-view-${n}`;
    if (item.type === "function_call") {
      const call = { name: item.name, args: argumentsOf(item.arguments), id: item.call_id, type: "tool_call" };
      if (lastAi && lastAi.id === id) {
        lastAi.tool_calls.push(call);
      } else {
        lastAi = { type: "ai", content: "", tool_calls: [call], id };
        out.push(lastAi);
      }
      return;
    }
    lastAi = null;
    if (item.type === "function_call_output") {
      out.push({ type: "tool", content: item.output, tool_call_id: item.call_id, id });
      return;
    }
    const text = textOf(item.content, `view item ${n}`);
    if (item.role === "assistant") {
      lastAi = { type: "ai", content: text, tool_calls: [], id };
      out.push(lastAi);
    } else if (item.role === "user") {
      out.push({ type: "human", content: text, id });
    } else {
      out.push({ type: "system", content: text, id });
    }
  });
  return out;
}

/** A LangChain message's type ("human", "ai", "system", "tool", ...). */
function typeOf(m) {
  if (typeof m?._getType === "function") return m._getType();
  if (typeof m?.getType === "function") return m.getType();
  return m?.type ?? m?.role;
}

/**
 * The state's messages engram has not seen, as engram messages: system
 * messages and those with engram's ids are skipped; a message without an id
 * (LangGraph gives every state message one) or of another type throws
 * InvalidInputError.
 */
export function newMessages(messages, thread = "main") {
  const out = [];
  (messages ?? []).forEach((m, n) => {
    const id = String(m?.id ?? "");
    const type = typeOf(m);
    if (id.startsWith("engram-") || type === "system" || type === "developer") return;
    const what = `message ${n}`;
    if (!id) throw new InvalidInputError(`${what}: a message without an id cannot be stored exactly once`);
    const message = { content: textOf(m.content, what), clientId: `langchain:${thread}:${id}`, thread };
    if (type === "human" || type === "user") {
      message.role = "user";
    } else if (type === "ai" || type === "assistant") {
      message.role = "assistant";
      const calls = (m.tool_calls ?? []).map((c) => ({ id: String(c.id ?? ""), name: String(c.name ?? ""), arguments: JSON.stringify(c.args ?? {}) }));
      if (calls.length) message.toolCalls = calls;
    } else if (type === "tool") {
      message.role = "tool";
      message.toolCallId = String(m.tool_call_id ?? "");
    } else {
      throw new InvalidInputError(`${what}: engram cannot keep a ${JSON.stringify(type)} message`);
    }
    out.push(message);
  });
  return out;
}

/**
 * A LangChain.js 1.x agent middleware keeping thread `thread` (default
 * "main") of `memory` as the agent's messages. `createMiddleware` is
 * langchain's (`import { createMiddleware } from "langchain"`).
 */
export function engramMiddleware(memory, { thread = "main", createMiddleware, name = "EngramMiddleware" } = {}) {
  if (!memory || typeof memory.render !== "function" || typeof memory.addMessage !== "function") {
    throw new InvalidInputError("engramMiddleware needs an engram Memory");
  }
  if (typeof createMiddleware !== "function") {
    throw new InvalidInputError('engramMiddleware needs langchain\'s createMiddleware: engramMiddleware(memory, { thread, createMiddleware }) with import { createMiddleware } from "langchain"');
  }
  const store = async (messages) => {
    for (const m of newMessages(messages, thread)) await memory.addMessage(m);
  };
  return createMiddleware({
    name,
    /** Stores the new messages, then makes engram's view the messages. */
    beforeModel: async (state) => {
      await store(state.messages);
      return { messages: [{ type: "remove", id: REMOVE_ALL_MESSAGES }, ...(await viewMessages(memory, thread))] };
    },
    /** Stores the model's message. */
    afterModel: async (state) => {
      await store(state.messages);
      return undefined;
    },
  });
}
