// Types of "engram/agents" (src/agents.js): an OpenAI Agents SDK Session
// over one thread of a memory. Written without importing @openai/agents
// (the module does not import it): the items are the SDK's AgentInputItem
// shapes, typed loosely, so an EngramSession is assignable to its Session.

import type { Memory, ResponsesItem } from "../index.js";

/** An Agents SDK item (`AgentInputItem`), as the session reads and writes it. */
export type AgentItem = { type?: string; role?: string; id?: string; [key: string]: unknown };

/** The stored message an item rendered by engram names (`msg_engram_7` is 7), or undefined. */
export function engramMessageOf(item: { id?: unknown }): number | undefined;

/** `render("responses")` items in the Agents SDK's shapes (camelCase; tool outputs name their function). */
export function toAgentItems(items: ResponsesItem[]): AgentItem[];

/** An engram message as the session adds it. */
export interface SessionMessage {
  role: "user" | "assistant" | "tool";
  content: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  toolCallId?: string;
  itemId?: string;
}

/** Agents SDK or Responses API items as engram messages (throws InvalidInputError on an item it cannot keep). */
export function itemsToMessages(items: AgentItem[]): SessionMessage[];

/**
 * An Agents SDK `Session` over thread `thread` (default "main") of `memory`: getItems is the
 * view, addItems adds each message once, popItem erases the last message, clearSession the
 * thread. Pass `sessionInputCallback` to `run()` so the turn's recall is in the turn's prompt.
 */
export class EngramSession {
  constructor(memory: Memory, options?: { thread?: string });
  readonly sessionInputCallback: (history: AgentItem[], newItems: AgentItem[]) => Promise<AgentItem[]>;
  getSessionId(): Promise<string>;
  getItems(limit?: number): Promise<AgentItem[]>;
  addItems(items: AgentItem[]): Promise<void>;
  popItem(): Promise<AgentItem | undefined>;
  clearSession(): Promise<void>;
}
