// Types of "engram/ai-sdk" (src/ai-sdk.js): only what that module exports.
// Needs `ai` (major 5), the package's optional peer dependency.

import type { EmbeddingModel, LanguageModel, LanguageModelMiddleware, embedMany } from "ai";
import type { Memory, Model, OpenAIMessage } from "../index.js";

export type { Model } from "../index.js";

/** An AI SDK LanguageModelV2 prompt (what a middleware's `transformParams` returns as `prompt`). */
export type AiSdkPrompt = Awaited<ReturnType<NonNullable<LanguageModelMiddleware["transformParams"]>>>["prompt"];

/** Provider options, passed to every SDK call as they are. */
export type AiSdkProviderOptions = Parameters<typeof embedMany>[0]["providerOptions"];

export interface AiSdkModelOptions {
  /** The AI SDK language model engram's tasks run on (a provider's model, or a model id the SDK resolves). */
  model: LanguageModel;
  /** The AI SDK embedding model (none: the offline hashing embedder, `offlineModel().embed`). */
  embeddingModel?: EmbeddingModel<string>;
  /**
   * "object" (default): generateObject with the task's JSON schema (structured
   * output). "text": generateText with the schema in the system prompt, for
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
 * A model for engram over AI SDK models: each task through generateObject
 * with its JSON schema, embeddings through embedMany. A failure throws with
 * `code` "unavailable", an unusable answer with `code` "bad-answer"; the
 * memory's `{ signal }` goes to the SDK as `abortSignal`.
 */
export declare function aiSdkModel(options: AiSdkModelOptions): Model;

export interface EngramMiddlewareOptions {
  /** The memory of this conversation (one per user or chat). */
  memory: Memory;
  /**
   * The caller's system prompt: "instructions" (default) sets it as the
   * memory's pinned instructions (first in every view, counted, never
   * faded; written only when it changed); "keep" puts it before the view
   * as it is, unstored; "ignore" drops it.
   */
  system?: "instructions" | "keep" | "ignore";
}

/**
 * An AI SDK language-model middleware: adds the turn's new user message
 * (or a tool loop's results) to the memory, replaces the prompt with the
 * memory's view, and adds the reply after generate or once the stream
 * finishes. Use with `wrapLanguageModel({ model, middleware })`.
 */
export declare function engramMiddleware(options: EngramMiddlewareOptions): LanguageModelMiddleware;

/**
 * A rendered view (`memory.render("openai")`) as an AI SDK prompt; `files`
 * go back on the last user message.
 */
export declare function toAiSdkPrompt(messages: OpenAIMessage[], files?: unknown[]): AiSdkPrompt;
