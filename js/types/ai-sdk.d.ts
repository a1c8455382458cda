// Types of "engram/ai-sdk" (src/ai-sdk.js): only what that module exports.
// Needs `ai` (major 5, 6 or 7), the package's optional peer dependency.
// Every SDK type is taken from what `ai` exports in all three majors (ai 7's
// `EmbeddingModel` is not generic, ai 5's is): the embedding model is the
// type embedMany takes.

import type { LanguageModel, LanguageModelMiddleware, embedMany } from "ai";
import type { Memory, Model, OpenAIMessage } from "../index.js";

export type { Model } from "../index.js";

/** An AI SDK LanguageModelV2 prompt (what a middleware's `transformParams` returns as `prompt`). */
export type AiSdkPrompt = Awaited<ReturnType<NonNullable<LanguageModelMiddleware["transformParams"]>>>["prompt"];

/** An AI SDK embedding model: what `embedMany` takes. */
export type AiSdkEmbeddingModel = Parameters<typeof embedMany>[0]["model"];

/** Provider options, passed to every SDK call as they are. */
export type AiSdkProviderOptions = Parameters<typeof embedMany>[0]["providerOptions"];

export interface AiSdkModelOptions {
  /** The AI SDK language model engram's tasks run on (a provider's model, or a model id the SDK resolves). */
  model: LanguageModel;
  /** The AI SDK embedding model (none: the offline hashing embedder, `offlineModel().embed`). */
  embeddingModel?: AiSdkEmbeddingModel;
  /**
   * "object" (default): generateText with `Output.object` and the task's JSON
   * schema (structured output). "text": generateText with the schema in the system prompt, for
   * models without JSON output (the engine repairs fences and prose around the object).
   */
  output?: "object" | "text";
  /** 0. */
  temperature?: number;
  /** The SDK's retries of each call (its default, 2). */
  maxRetries?: number;
  providerOptions?: AiSdkProviderOptions;
  headers?: Record<string, string | undefined>;
  /** embedMany's parallel requests. */
  maxParallelCalls?: number;
  /** Tokens in `text`, synchronously (default: the engine's estimate). */
  countTokens?: (text: string) => number;
}

/**
 * A model for engram over AI SDK models: each task through generateText
 * with an object output of its JSON schema, embeddings through embedMany. A failure throws with
 * `code` "unavailable", an unusable answer with `code` "bad-answer"; the
 * memory's `{ signal }` goes to the SDK as `abortSignal`.
 */
export declare function aiSdkModel(options: AiSdkModelOptions): Model;

export interface EngramMiddlewareOptions {
  /** The memory of this conversation (one per user; `thread` names the chat). */
  memory: Memory;
  /**
   * The caller's system prompt: "instructions" (default) sets it as the
   * memory's pinned instructions (first in every view, counted, never
   * faded; written only when it changed); "keep" puts it before the view
   * as it is, unstored; "ignore" drops it.
   */
  system?: "instructions" | "keep" | "ignore";
  /**
   * The app's id of the request's user message (e.g. the last UI message's
   * `id` in a useChat route), for one wrapped model per request; a message
   * may carry its own as `providerOptions: { engram: { clientId } }`. None:
   * derived from the prompt before the message and its text. A resent
   * message (regenerate, retry) is added once; an edited one (same id, new
   * text) is added as a new message after the original.
   */
  clientId?: string;
  /**
   * The request body's `trigger` (useChat sends it with `messageId`).
   * With "regenerate-message", or without it when the prompt ends with a
   * user message the memory already holds, the request is a regenerate: the
   * model sees the view up to that message and the reply replaces the
   * earlier answer (kept as an alternative, `replaced_by`, out of the view).
   */
  trigger?: "submit-message" | "regenerate-message";
  /**
   * The chat (thread) of this conversation, "main" by default: the
   * messages go to it and the prompt is its view. One memory per user and
   * one thread per chat share the facts block and recall.
   */
  thread?: string;
}

/**
 * An AI SDK language-model middleware: adds the turn's new user message
 * (or a tool loop's results) to the memory, replaces the prompt with the
 * memory's view, and adds the reply after generate or once the stream
 * finishes, each with a client id so nothing is added twice; a regenerate's
 * reply replaces the answer it regenerates. Use with
 * `wrapLanguageModel({ model, middleware })`.
 */
export declare function engramMiddleware(options: EngramMiddlewareOptions): LanguageModelMiddleware;

/**
 * A rendered view (`memory.render("openai")`) as an AI SDK prompt; `files`
 * go back on the last user message.
 */
export declare function toAiSdkPrompt(messages: OpenAIMessage[], files?: unknown[]): AiSdkPrompt;
