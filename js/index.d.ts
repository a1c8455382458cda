// Types of the engram npm package (hand-written; kept in step with the
// engine's serde types in src/, whose JSON field names records keep:
// snake_case, the same in every host).

/// <reference lib="esnext.disposable" />

// ---- messages ----------------------------------------------------------------

/** Who spoke. */
export type Role = "system" | "user" | "assistant" | "tool";

/** A tool call as the engine keeps it. */
export interface ToolCall {
  id: string;
  name: string;
  /** Arguments as the model wrote them (usually JSON text). */
  arguments: string;
}

/** A tool call as OpenAI-style chat APIs return it. */
export interface OpenAIToolCall {
  id: string;
  type?: "function";
  function: { name: string; arguments: string | Record<string, unknown> };
}

/** A text part of an OpenAI-style multi-part content (other parts are ignored). */
export interface ContentPart {
  type: string;
  text?: string;
}

/**
 * A message to add: the engine's shape or an OpenAI chat message (an
 * assistant message from the API can be added as it is).
 */
export interface NewMessage {
  role: Role;
  content?: string | null | ContentPart[];
  tool_calls?: Array<ToolCall | OpenAIToolCall>;
  tool_call_id?: string;
  toolCalls?: Array<ToolCall | OpenAIToolCall>;
  toolCallId?: string;
}

/** A message as the memory keeps it, forever. */
export interface Message {
  id: number;
  role: Role;
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** When it was added (host clock, ms since the Unix epoch). */
  at: number;
  tokens: number;
  /** Probability that it starts a new concept (absent where no cut is allowed). */
  boundary?: number;
}

// ---- the view ----------------------------------------------------------------

export type ItemKind = "facts" | "message" | "warning" | "recall";

/** One entry of the view. */
export interface ViewItem {
  kind: ItemKind;
  role: Role;
  text: string;
  tokens: number;
  message?: number;
  episode?: number;
  facts?: number[];
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/** What the model should see, with its size against the ceiling. */
export interface View {
  items: ViewItem[];
  tokens: number;
  ceiling: number;
}

/** One message of the view as OpenAI-compatible chat APIs take it. */
export interface OpenAIMessage {
  role: Role;
  content: string;
  tool_calls?: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}

// ---- episodes, facts, entities, traces ------------------------------------------

export type EpisodeState = "live" | "leaving" | "sealed" | "forgotten";

export interface StateChange {
  state: EpisodeState;
  at: number;
  fade?: number;
}

export interface NoteFailure {
  at: number;
  error: string;
}

/** An episode with its activation now and its significance. */
export interface EpisodeInfo {
  id: number;
  /** First and last message ids. */
  first: number;
  last: number;
  formed_at: number;
  tokens: number;
  state: EpisodeState;
  history: StateChange[];
  traces: number[];
  facts: number[];
  note_failures: NoteFailure[];
  activation: number;
  significance: number;
}

export type FactKind = "fact" | "agreed" | "decided" | "done" | "blocked" | "next";

/** A fact as the chat model writes it with the note tool. */
export interface NewFact {
  subject: string;
  predicate: string;
  object: string;
  sentence: string;
  kind?: FactKind;
}

export interface Fact {
  id: number;
  /** Entity ids. */
  subject: number;
  predicate: string;
  object: number;
  sentence: string;
  kind: FactKind;
  episode: number;
  said_at: number;
  noted_at: number;
  /** The embedding, base64 of little-endian f32s. */
  embedding: string;
  restated?: Array<{ episode: number; sentence: string; at: number }>;
  retired?: { by: number; at: number };
}

export type Resolution =
  | { how: "new" }
  | { how: "exact" }
  | { how: "similar"; cosine: number }
  | { how: "judged" };

export interface Entity {
  id: number;
  name: string;
  aliases: Array<{ name: string; normal: string; resolution: Resolution; at: number }>;
  embedding: string;
}

export type TraceCause = { kind: "encoding" } | { kind: "fact"; fact: number } | { kind: "recall"; fact: number };

export interface Trace {
  id: number;
  episode: number;
  cause: TraceCause;
  yes: boolean;
  strength: number;
  at: number;
}

// ---- calls' results ----------------------------------------------------------

export type RecallItem = { kind: "fact"; id: number } | { kind: "passage"; id: number };

export interface Distillation {
  at: number;
  kept: RecallItem[];
  failed: boolean;
}

/** What addMessage did. */
export interface Added {
  message: number;
  /** Episodes formed by cuts this message caused. */
  formed: number[];
  /** Whether this user turn slept first (24 h of silence). */
  slept: boolean;
  /** The fade that ran, if any. */
  fade: number | null;
  /** The recall block placed before this user message, if any. */
  recall: number | null;
  /** The recall block this reply closed, and distill's decision. */
  distilled: [number, Distillation] | null;
}

/** Arguments of the note tool. */
export interface NoteArgs {
  episode?: number;
  facts: NewFact[];
}

export interface NoteOutcome {
  episode: number;
  added: number[];
  merged: number[];
  retired: number[];
  sealed: boolean;
}

export interface Stats {
  messages: number;
  /** live, leaving, sealed, forgotten */
  episodes: [number, number, number, number];
  open_messages: number;
  /** live, retired */
  facts: [number, number];
  entities: number;
  /** all, yes */
  traces: [number, number];
  fades: number;
  log_entries: number;
  view_tokens: number;
  ceiling: number;
}

export type SearchList = "fact_words" | "fact_meaning" | "passage_words" | "passage_meaning";

export interface Hit {
  list: SearchList;
  /** 0 for the whole message, n for part n. */
  query: number;
  rank: number;
}

export interface Recalled {
  item: RecallItem;
  hits: Hit[];
  fused_rank: number | null;
  hop: number;
  via?: number;
  judgment: "relevant" | "fallback";
}

export interface RecallBlock {
  id: number;
  message: number;
  at: number;
  parts: string[];
  split_failed: boolean;
  walk_failed: boolean;
  items: Recalled[];
  distilled?: Distillation;
}

export interface SearchOptions {
  /** Results wanted (10). */
  limit?: number;
  /** Run the relevance walk (model calls) instead of returning the fused ranking (false). */
  walk?: boolean;
  /** Also return facts in the view now (true). */
  include_in_view?: boolean;
}

export interface SearchHit {
  item: RecallItem;
  text: string;
  said_at: number;
  score: number;
  hits: Hit[];
  hop: number;
  retired: boolean;
}

export interface EpisodeExplanation {
  episode: number;
  state: EpisodeState;
  in_view: boolean;
  activation: number;
  significance: number;
  traces: Trace[];
  moves: Array<{ state: EpisodeState; at: number; fade?: Record<string, unknown> }>;
  summary: string;
}

export interface FactExplanation {
  fact: number;
  sentence: string;
  subject: string;
  object: string;
  in_facts_block: boolean;
  episodes: Array<[number, EpisodeState]>;
  retired_by?: [number, number];
  traces: Trace[];
  summary: string;
}

export interface RecallExplanation {
  block: number;
  message: number;
  at: number;
  hits: Hit[];
  fused_rank: number | null;
  hop: number;
  via: number | null;
  judgment: "relevant" | "fallback";
  distill_kept: boolean | null;
  summary: string;
}

/** The `note` tool in OpenAI `tools` format. */
export interface NoteTool {
  type: "function";
  function: { name: "note"; description: string; parameters: Record<string, unknown> };
}

// ---- host objects ------------------------------------------------------------

type MaybePromise<T> = T | Promise<T>;

/** Wall-clock time, read synchronously. */
export interface Clock {
  /** ms since the Unix epoch. */
  now(): number;
}

/** One write of an atomic batch: a value puts, null deletes. */
export type Write = [key: string, value: string | null];

/** Namespaced key-value storage with one conditional atomic multi-key write. */
export interface Store {
  get(key: string): MaybePromise<string | null | undefined>;
  put(key: string, value: string): MaybePromise<void>;
  delete(key: string): MaybePromise<void>;
  /** Every key starting with `prefix`. */
  list(prefix: string): MaybePromise<string[]>;
  /**
   * Applies every write atomically if `guard` holds `expected` (null:
   * absent) and returns true; otherwise writes nothing and returns false.
   */
  writeIf(guard: string, expected: string | null, writes: Write[]): MaybePromise<boolean | void>;
}

export type TaskName = "segment" | "note" | "trace" | "resolve" | "reconcile" | "split" | "relevance" | "distill";

/** One model call of the engine. */
export interface TaskRequest {
  task: TaskName;
  /** Instructions for the model. */
  system: string;
  /** The material to judge. */
  content: string;
  /** JSON schema of the answer, as JSON text. */
  schema: string;
  /** 1 for the first try; retries count up. */
  attempt: number;
}

/**
 * The language model and embedder. Throw an error with `code: "bad-answer"`
 * for an answer that does not fit; anything else thrown counts as the model
 * being unavailable.
 */
export interface Model {
  /** The answer as JSON text following `request.schema`. */
  complete(request: TaskRequest): MaybePromise<string>;
  /** One vector per text, all of one dimension. */
  embed(texts: string[]): MaybePromise<ArrayLike<number>[]>;
  /** Tokens in `text`, synchronously (default: the engine's estimate). */
  countTokens?(text: string): number;
}

/** Fields of the engine's config to change (snake_case; see src/config.rs). */
export interface Config {
  ceiling_tokens?: number;
  target_episode_tokens?: number;
  max_episode_tokens?: number;
  min_episode_tokens?: number;
  boundary_threshold?: number;
  max_message_tokens?: number;
  sleep_after_hours?: number;
  model_attempts?: number;
  conflict_attempts?: number;
  trace_batch?: number;
  resolve_candidates?: number;
  reconcile_candidates?: number;
  same_entity_cosine?: number;
  candidate_entity_cosine?: number;
  snapshot_every?: number;
  max_dimension?: number;
  max_facts_per_note?: number;
  recall_budget_tokens?: number;
  recall_candidates?: number;
  walk_batch?: number;
  walk_hops?: number;
  passage_tokens?: number;
  min_cosine?: number;
}

export interface OpenOptions {
  /** 1 to 128 letters, digits or ._-:@ */
  namespace: string;
  model: Model;
  store: Store;
  /** Default: Date.now(). */
  clock?: Clock;
  config?: Config;
}

// ---- events ----------------------------------------------------------------

export interface MemoryEvents {
  /** The engine asks the model for a task. */
  task: { task: TaskName; attempt: number };
  /** The engine asks for embeddings. */
  embed: { texts: number };
  /** Episodes formed by a cut. */
  formed: { episodes: number[]; message: number };
  /** A fade ran (started or resumed). */
  fade: { fade: number; slept: boolean; message: number };
  /** A recall block was placed before a user message. */
  recall: { block: number; message: number };
  /** Distill decided which recalled items mattered. */
  distill: { block: number; distillation: Distillation };
  /** The note tool wrote facts. */
  note: NoteOutcome;
}

export type MemoryEvent = keyof MemoryEvents;

// ---- the memory ---------------------------------------------------------------

/**
 * One memory. Calls may be made without awaiting the previous one: they run
 * one at a time, in call order.
 */
export declare class Memory implements Disposable, AsyncDisposable {
  private constructor();
  static open(options: OpenOptions): Promise<Memory>;
  addMessage(message: NewMessage): Promise<Added>;
  /** The view now, or as it was at `at` (replayed from the log; nothing is written). */
  view(options?: { at?: number | Date }): Promise<View>;
  render(format?: "openai", options?: { at?: number | Date }): Promise<OpenAIMessage[]>;
  /** Writes facts from the note tool (its arguments object or JSON text). */
  note(args: NoteArgs | string): Promise<NoteOutcome>;
  noteTool(): NoteTool;
  endTurn(): Promise<[number, Distillation] | null>;
  search(query: string, options?: SearchOptions): Promise<SearchHit[]>;
  /** Recall on demand: `search` with the relevance walk, leaving out what is in view. */
  recall(query: string, options?: SearchOptions): Promise<SearchHit[]>;
  recalls(): Promise<RecallBlock[]>;
  episodes(): Promise<EpisodeInfo[]>;
  messages(): Promise<Message[]>;
  facts(): Promise<Fact[]>;
  entities(): Promise<Entity[]>;
  traces(): Promise<Trace[]>;
  stats(): Promise<Stats>;
  explain(what: { episode: number }): Promise<EpisodeExplanation>;
  explain(what: { fact: number }): Promise<FactExplanation>;
  explain(what: { recall: number }): Promise<RecallExplanation[]>;
  export(): Promise<string>;
  import(data: string | object): Promise<void>;
  on<E extends MemoryEvent>(event: E, listener: (detail: MemoryEvents[E]) => void): () => void;
  off<E extends MemoryEvent>(event: E, listener: (detail: MemoryEvents[E]) => void): void;
  readonly closed: boolean;
  /** Frees the engine once the calls already made have settled. */
  free(): void;
  close(): Promise<void>;
  [Symbol.dispose](): void;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Loads the WebAssembly module ahead of the first open (browsers: optionally from `source`). */
export declare function init(source?: unknown): Promise<unknown>;

export declare const systemClock: Clock;

/** A message in the engine's shape, from the engine's or OpenAI's. */
export declare function toNewMessage(message: NewMessage): {
  role: Role;
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
};

// ---- errors ----------------------------------------------------------------

export type ErrorCode =
  | "invalid-input"
  | "store"
  | "model"
  | "corrupt"
  | "unsupported-version"
  | "busy"
  | "closed"
  | "in-use"
  | "internal";

export declare class EngramError extends Error {
  constructor(message: string, options?: { code?: ErrorCode; cause?: unknown });
  readonly code: ErrorCode;
}
export declare class InvalidInputError extends EngramError {}
export declare class StoreError extends EngramError {}
export declare class ModelError extends EngramError {}
export declare class CorruptError extends EngramError {}
export declare class UnsupportedVersionError extends EngramError {}
export declare class BusyError extends EngramError {}
export declare class ClosedError extends EngramError {}
export declare function toEngramError(e: unknown): EngramError;

// ---- adapters ----------------------------------------------------------------

/** The part of `fetch` the OpenAI adapter uses. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body: string; signal: any },
) => Promise<{ ok: boolean; status: number; text(): Promise<string>; headers: { get(name: string): string | null } }>;

export interface OpenAIModelOptions {
  /** Default https://api.openai.com/v1 (Ollama: http://127.0.0.1:11434/v1). */
  baseURL?: string;
  apiKey?: string;
  /** The chat model. */
  model: string;
  /** The embedding model (needed: facts and recall use embeddings). */
  embeddingModel?: string;
  temperature?: number;
  /** Per request (60000). */
  timeoutMs?: number;
  /** Retries after the first try on network errors, timeouts, 408, 429, 5xx (3). */
  retries?: number;
  backoffMs?: number;
  maxBackoffMs?: number;
  responseFormat?: "json_schema" | "json_object" | "none";
  strict?: boolean;
  headers?: Record<string, string>;
  fetch?: FetchLike;
  countTokens?: (text: string) => number;
  embedBatch?: number;
}

export declare function openAIModel(options: OpenAIModelOptions): Model;

export declare function functionModel(
  complete: (request: TaskRequest) => MaybePromise<string | object>,
  options?: {
    embed?: (texts: string[]) => MaybePromise<ArrayLike<number>[]>;
    countTokens?: (text: string) => number;
  },
): Model;

/** Deterministic word-hash vectors: for tests and demos, not semantic. */
export declare function hashEmbed(texts: string[], dimension?: number): number[][];

export interface MemoryStore extends Store {
  readonly data: Map<string, string>;
}
export declare function memoryStore(initial?: Map<string, string> | Record<string, string>): MemoryStore;

export interface IndexedDBStore extends Store {
  close(): Promise<void>;
}
export declare function indexedDBStore(
  name?: string,
  options?: { storeName?: string; indexedDB?: unknown },
): IndexedDBStore;

export interface SqliteStore extends Store {
  /** The better-sqlite3 Database. */
  readonly database: unknown;
  close(): void;
}
/** Node only (better-sqlite3@12). */
export declare function sqliteStore(path: string, options?: { table?: string; database?: unknown }): SqliteStore;

/** The subset of a Durable Object's storage the store uses. */
export interface DurableObjectStorageLike {
  get(key: string): Promise<unknown>;
  get(keys: string[]): Promise<Map<string, unknown>>;
  put(key: string, value: unknown): Promise<void>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(key: string | string[]): Promise<unknown>;
  list(options: { prefix: string }): Promise<Map<string, unknown>>;
  transaction<T>(closure: (txn: DurableObjectStorageLike) => Promise<T>): Promise<T>;
}
export declare function durableObjectStore(storage: DurableObjectStorageLike): Store;
