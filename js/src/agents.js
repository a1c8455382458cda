// The OpenAI Agents SDK (`@openai/agents`) integration, "engram/agents":
// EngramSession, a `Session` over one thread of a memory. It imports nothing
// from the SDK (the interface is duck-typed), so the SDK stays the app's own
// dependency. docs/agents-sdk.md.
//
// getItems is the memory's view (`render("responses")`) in the SDK's item
// shapes; addItems adds each message once (client ids from item ids, a user
// item's from its text and the reply before it); sessionInputCallback adds
// the turn's input first so the turn's recall is in the turn's prompt.

import { textOf } from "./content.js";
import { InvalidInputError } from "./errors.js";

/** The ids `render("responses")` gives the items of stored messages. */
const ENGRAM_ID = /^(?:msg|fco)_engram_([0-9]+)$|^fc_engram_([0-9]+)_[0-9]+$/;

/** The stored message an item rendered by engram names, or undefined. */
export function engramMessageOf(item) {
  const found = ENGRAM_ID.exec(String(item?.id ?? ""));
  return found ? Number(found[1] ?? found[2]) : undefined;
}

/**
 * The memory's Responses API items (`render("responses")`, snake_case) in
 * the Agents SDK's item shapes (camelCase; a tool output names its call's
 * function).
 */
export function toAgentItems(items) {
  const names = new Map();
  return items.map((it) => {
    if (it.type === "function_call") {
      names.set(it.call_id, it.name);
      return { type: "function_call", id: it.id, callId: it.call_id, name: it.name, arguments: it.arguments, status: "completed" };
    }
    if (it.type === "function_call_output") {
      const out = {
        type: "function_call_result",
        callId: it.call_id,
        name: names.get(it.call_id) ?? "",
        status: "completed",
        output: { type: "text", text: it.output },
      };
      if (it.id) out.id = it.id;
      return out;
    }
    if (it.role === "assistant") {
      const out = { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: it.content[0]?.text ?? "" }] };
      if (it.id) out.id = it.id;
      return out;
    }
    const out = { type: "message", role: it.role, content: it.content };
    if (it.id) out.id = it.id;
    return out;
  });
}

/**
 * Agents SDK items (or Responses API items) as engram messages: an
 * assistant message and the function calls right after it are one assistant
 * message; reasoning and system/developer items are dropped, items engram
 * rendered skipped. Throws InvalidInputError on any other item type.
 */
export function itemsToMessages(items) {
  const out = [];
  let group = null;
  items.forEach((item, n) => {
    const what = `item ${n}`;
    if (item === null || typeof item !== "object") throw new InvalidInputError(`${what}: an item must be an object`);
    const type = item.type ?? (item.role ? "message" : undefined);
    if (engramMessageOf(item) !== undefined || type === "reasoning") {
      group = null;
      return;
    }
    if (type === "message") {
      if (item.role === "system" || item.role === "developer") {
        group = null;
        return;
      }
      if (item.role !== "user" && item.role !== "assistant") throw new InvalidInputError(`${what}: unknown role ${JSON.stringify(item.role)}`);
      const message = { role: item.role, content: textOf(item.content, what), toolCalls: [], itemId: item.id };
      out.push(message);
      group = item.role === "assistant" ? message : null;
    } else if (type === "function_call") {
      const id = String(item.callId ?? item.call_id ?? "");
      const name = String(item.name ?? "");
      if (!id || !name) throw new InvalidInputError(`${what}: a function_call needs a call id and a name`);
      if (!group) {
        group = { role: "assistant", content: "", toolCalls: [], itemId: item.id ?? `call-${id}` };
        out.push(group);
      }
      group.toolCalls.push({ id, name, arguments: String(item.arguments ?? "") });
    } else if (type === "function_call_result" || type === "function_call_output") {
      const callId = String(item.callId ?? item.call_id ?? "");
      if (!callId) throw new InvalidInputError(`${what}: a tool output needs a call id`);
      const output = item.output;
      const text = typeof output === "string" ? output : output?.type === "text" ? String(output.text ?? "") : textOf(output, what);
      out.push({ role: "tool", content: text, toolCallId: callId, itemId: item.id ?? `output-${callId}` });
      group = null;
    } else {
      throw new InvalidInputError(`${what}: engram cannot keep a ${JSON.stringify(type)} item`);
    }
  });
  return out;
}

/** Hex SHA-256 of a string (Web Crypto: Node >= 20, browsers, workers). */
async function sha256(text) {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Message ids one page of `EngramSession`'s backward walk covers (a page's most). */
const ANCHOR_WINDOW = 1000;

/** An Agents SDK `Session` over thread `thread` of `memory`. */
export class EngramSession {
  #memory;
  #thread;

  constructor(memory, { thread = "main" } = {}) {
    if (!memory || typeof memory.render !== "function" || typeof memory.addMessage !== "function") {
      throw new InvalidInputError("EngramSession needs an engram Memory");
    }
    this.#memory = memory;
    this.#thread = thread;
    /** `sessionInputCallback` of the Runner's options: see docs/agents-sdk.md. */
    this.sessionInputCallback = async (_history, newItems) => {
      await this.addItems(newItems);
      return this.getItems();
    };
  }

  async getSessionId() {
    return this.#thread;
  }

  /** The view as items (the latest `limit` when given). */
  async getItems(limit) {
    const items = toAgentItems(await this.#memory.render("responses", { thread: this.#thread }));
    if (limit === undefined || limit === null) return items;
    return limit > 0 ? items.slice(-limit) : [];
  }

  /** Adds the items' messages, each once; a bad item throws before anything is added. */
  async addItems(items) {
    const messages = itemsToMessages(items);
    if (!messages.length) return;
    const thread = this.#thread;
    let anchor = await this.#anchor();
    for (const m of messages) {
      const clientId = m.itemId
        ? `agents:${thread}:${m.itemId}`
        : `agents:${thread}:${m.role}:${(await sha256(`${anchor}\0${m.role}\0${m.content}`)).slice(0, 32)}`;
      const message = { role: m.role, content: m.content, clientId, thread };
      if (m.toolCalls?.length) message.toolCalls = m.toolCalls;
      if (m.toolCallId) message.toolCallId = m.toolCallId;
      await this.#memory.addMessage(message);
      if (m.role !== "user") anchor = clientId;
    }
  }

  /**
   * The id of the thread's last message that is not the user's and not
   * erased (`"start"` when none), which names the user input after it:
   * found from the thread's last id back, a page of ids at a time, not by
   * listing every message of the memory at every turn.
   */
  async #anchor() {
    const thread = this.#thread;
    const info = (await this.#memory.threads()).find((t) => t.thread === thread);
    if (!info) return "start";
    for (let hi = info.last_message; hi >= info.first_message; hi -= ANCHOR_WINDOW) {
      // The page holds the thread's messages with ids in (lo, hi], and later ones.
      const lo = hi - ANCHOR_WINDOW;
      const page = await this.#memory.messages({
        limit: ANCHOR_WINDOW,
        ...(lo >= 1 ? { cursor: `message:${lo}` } : {}),
        filter: { thread },
      });
      const kept = page.items.filter((m) => m.id <= hi && m.role !== "user" && !m.erased);
      if (kept.length) return String(kept[kept.length - 1].id);
    }
    return "start";
  }

  /** Erases the thread's last message; resolves to its last item (undefined when none). */
  async popItem() {
    const items = await this.getItems();
    for (let i = items.length - 1; i >= 0; i--) {
      const message = engramMessageOf(items[i]);
      if (message !== undefined) {
        await this.#memory.erase({ message });
        return items[i];
      }
    }
    return undefined;
  }

  /** Erases every message of the thread, for good. */
  async clearSession() {
    await this.#memory.erase({ thread: this.#thread });
  }
}
