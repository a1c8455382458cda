// Types of "engram/langchain" (src/langchain.js): a LangChain.js 1.x agent
// middleware over one thread of a memory. Written without importing
// langchain (the module does not import it): the app passes langchain's
// `createMiddleware`, and the middleware is whatever that returns.

import type { Memory, NewMessage } from "../index.js";

/** A LangChain message-like, as the middleware reads (BaseMessage) and writes it. */
export interface LangChainMessageLike {
  type: "system" | "human" | "ai" | "tool";
  content: string;
  id: string;
  tool_calls?: { name: string; args: Record<string, unknown>; id: string; type: "tool_call" }[];
  tool_call_id?: string;
}

/**
 * engram's view of `thread` (default "main") as LangChain message-likes: the facts and recall
 * blocks as system messages (ids `engram-view-<n>`), stored messages with ids `engram-<message>`.
 */
export function viewMessages(memory: Memory, thread?: string): Promise<LangChainMessageLike[]>;

/**
 * The messages engram has not seen, as engram messages (client ids `langchain:<thread>:<id>`):
 * system messages and those with engram's ids are skipped. Throws InvalidInputError on a message
 * without an id, a part that is not text, or a type engram cannot keep.
 */
export function newMessages(messages: ReadonlyArray<{ id?: unknown; content?: unknown }>, thread?: string): NewMessage[];

/** The options of engramMiddleware. */
export interface EngramMiddlewareOptions<M> {
  /** The thread of the memory kept as the agent's messages ("main"). */
  thread?: string;
  /** langchain's `createMiddleware` (`import { createMiddleware } from "langchain"`). */
  createMiddleware: (config: {
    name: string;
    beforeModel: (state: any, runtime: any) => Promise<any>;
    afterModel: (state: any, runtime: any) => Promise<any>;
  }) => M;
  /** The middleware's name ("EngramMiddleware"). */
  name?: string;
}

/**
 * A LangChain.js 1.x agent middleware (for `createAgent({ middleware: [...] })`) keeping thread
 * `thread` of `memory` as the agent's messages: beforeModel adds the state's new messages (each
 * once) and replaces the messages with engram's view; afterModel adds the model's message.
 */
export function engramMiddleware<M>(memory: Memory, options: EngramMiddlewareOptions<M>): M;
