// Types of the engram npm package. The records the engine returns (facts,
// messages, episodes, views, traces, explanations, outcomes, ...) are
// generated from the Rust types into types/records.d.ts (scripts/check-types;
// scripts/test fails when they drift); this file declares the API around
// them by hand: the Memory class, its options, the store and model
// interfaces, and the inputs. Field names are the engine's JSON ones:
// snake_case, the same in every host.

/// <reference lib="esnext.disposable" />

import type {
  Role,
  ToolCall,
  JsonValue,
  JsonObject,
  Message,
  ItemKind,
  ViewItem,
  View,
  EpisodeState,
  StateChange,
  NoteFailure,
  EpisodeInfo,
  FadeReason,
  Fade,
  FactKind,
  Fact,
  Remembered,
  HistoryEntry,
  FactHistory,
  Page,
  Resolution,
  Entity,
  Erased,
  TraceCause,
  Trace,
  RecallItem,
  Distillation,
  ModelRequestName,
  Degraded,
  Maintained,
  Pending,
  ThreadInfo,
  Batch,
  LastModelError,
  ModelHealth,
  Added,
  NoteOutcome,
  SearchList,
  Hit,
  RecallJudgment,
  Recalled,
  RecallBlock,
  SearchHit,
  EpisodeExplanation,
  MessageExplanation,
  FactExplanation,
  RecallExplanation,
  TaskName,
  Stats as EngineStats,
} from "./types/records.js";

export type {
  Role,
  ToolCall,
  JsonValue,
  JsonObject,
  Message,
  ItemKind,
  ViewItem,
  View,
  EpisodeState,
  StateChange,
  NoteFailure,
  EpisodeInfo,
  FadeReason,
  Fade,
  FactKind,
  Fact,
  Remembered,
  HistoryEntry,
  FactHistory,
  Page,
  Resolution,
  Entity,
  Erased,
  TraceCause,
  Trace,
  RecallItem,
  Distillation,
  ModelRequestName,
  Degraded,
  Maintained,
  Pending,
  ThreadInfo,
  Batch,
  LastModelError,
  ModelHealth,
  Added,
  NoteOutcome,
  SearchList,
  Hit,
  RecallJudgment,
  Recalled,
  RecallBlock,
  SearchHit,
  EpisodeExplanation,
  MessageExplanation,
  FactExplanation,
  RecallExplanation,
  TaskName,
} from "./types/records.js";

// ---- export and import in parts ---------------------------------------------

/** A stream as `importParts` reads it (a web ReadableStream is one). */
export interface ReadableStreamLike {
  getReader(): {
    read(): Promise<{ done: boolean; value?: string | Uint8Array }>;
    releaseLock(): void;
  };
}

/** A Blob or File as `importParts` reads it (its `stream()`). */
export interface BlobLike {
  stream(): ReadableStreamLike | AsyncIterable<Uint8Array>;
}

// ---- messages ----------------------------------------------------------------

/** A tool call as OpenAI-style chat APIs return it. */
export interface OpenAIToolCall {
  id: string;
  type?: "function";
  function: { name: string; arguments: string | Record<string, unknown> };
}

/**
 * A custom tool call of OpenAI's API (free-text input): kept as a tool call
 * whose arguments are the input text (rendered back as a function call).
 */
export interface OpenAICustomToolCall {
  id: string;
  type: "custom";
  custom: { name: string; input: string };
}

/** A text part of an OpenAI-style multi-part content (other parts are ignored). */
export interface ContentPart {
  type: string;
  text?: string;
}

/**
 * A message to add: the engine's shape or an OpenAI chat message (an
 * assistant message from the API, the official `openai` SDK's
 * `ChatCompletionMessage` included, can be added as it is). Role
 * `developer` (OpenAI's newer name for `system`) is taken as `system`.
 */
export interface NewMessage {
  role: Role | "developer";
  content?: string | null | ContentPart[];
  tool_calls?: Array<ToolCall | OpenAIToolCall | OpenAICustomToolCall>;
  tool_call_id?: string;
  /**
   * The host's own id for the message (1 to 256 characters): adding a
   * message whose id is already in the memory writes nothing and resolves
   * to the first add's message id with `duplicate: true`, so an add whose
   * outcome was lost (a timeout) can be retried safely.
   */
  client_id?: string;
  /**
   * An assistant's call in OpenAI's legacy function calling (deprecated
   * there, still in the SDK's `ChatCompletionMessageParam`): kept as a
   * tool call whose id is `function_call:<name>` (see
   * `OpenAIFunctionMessage`).
   */
  function_call?: { name: string; arguments: string } | null;
  toolCalls?: Array<ToolCall | OpenAIToolCall | OpenAICustomToolCall>;
  toolCallId?: string;
  /** Same as `client_id`. */
  clientId?: string;
  /**
   * The host's own data about the message (a user id, a source, a
   * channel...): a JSON object of at most 4,096 bytes as compact JSON and 8
   * levels deep. Kept, exported, returned with the message, erased with
   * it, and matched by a search's `filter.metadata`.
   */
  metadata?: JsonObject;
  /**
   * The thread (chat) it belongs to: 1 to 128 characters, no control
   * characters; `"main"` when left out (a host with one chat never names
   * one). Every thread has its own view; the facts block, the knowledge
   * graph and recall are the whole memory's.
   */
  thread?: string;
  /**
   * When it was said (ms since the Unix epoch, or a Date), for history
   * loaded after the fact; now when left out. Not in the future, and not
   * before the last message of its thread (InvalidInputError).
   */
  at?: number | Date;
  /**
   * A regenerated answer (assistant only): the id of the user message of
   * its thread it answers again. The messages after that one still shown
   * (the earlier answer, its tool calls and outputs included) are replaced:
   * kept and listed with `replaced_by`, explainable, left out of the view.
   * Nothing after it: it replaces nothing. A `client_id` naming a shown
   * message is a duplicate as ever; one naming a replaced answer adds it
   * again as the one shown.
   */
  replaces?: number;
}

/**
 * The answer to a legacy `function_call` (OpenAI's `function` role, in the
 * SDK's `ChatCompletionMessageParam`): kept as the tool message answering
 * the call `function_call:<name>`. Legacy function calling makes one call a
 * turn, each answered before the next, so the name finds its call.
 */
export interface OpenAIFunctionMessage
  extends Omit<NewMessage, "role" | "content" | "tool_calls" | "toolCalls" | "tool_call_id" | "toolCallId" | "function_call"> {
  role: "function";
  /** The function whose call this answers. */
  name: string;
  content: string | null;
}

/** A message addMessage and addMessages take. */
export type AnyNewMessage = NewMessage | OpenAIFunctionMessage;

// ---- the view ----------------------------------------------------------------

/** A tool call of the rendered view. */
export interface OpenAIFunctionToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/**
 * One message of the view as OpenAI-compatible chat APIs take it: one
 * member per role, so `render("openai")` is assignable to the official
 * `openai` SDK's `ChatCompletionMessageParam[]`. (Fields a role does not
 * have are typed `undefined`, so `m.tool_calls` reads on any message.)
 */
export type OpenAIMessage =
  | { role: "system"; content: string; tool_calls?: undefined; tool_call_id?: undefined }
  | { role: "user"; content: string; tool_calls?: undefined; tool_call_id?: undefined }
  | { role: "assistant"; content: string; tool_calls?: OpenAIFunctionToolCall[]; tool_call_id?: undefined }
  | { role: "tool"; content: string; tool_call_id: string; tool_calls?: undefined };

/**
 * One OpenAI Responses API input item of the view (`render("responses")`), assignable to the
 * official `openai` SDK's `ResponseInputItem`.
 */
export type ResponsesItem =
  | { type: "message"; role: "system" | "user"; content: string; id?: string }
  | {
      type: "message";
      role: "assistant";
      status: "completed";
      content: { type: "output_text"; text: string; annotations: [] }[];
      id?: string;
    }
  | { type: "function_call"; call_id: string; name: string; arguments: string; id?: string }
  | { type: "function_call_output"; call_id: string; output: string; id?: string };

// ---- episodes, facts, entities, traces ------------------------------------------

/** A fact as the chat model writes it with the note tool. */
export interface NewFact {
  subject: string;
  predicate: string;
  object: string;
  sentence: string;
  kind?: FactKind;
}

export interface PageOptions<F> {
  /** 1..1000; 100 when not set. */
  limit?: number;
  /** The `next` of the page before. */
  cursor?: string | null;
  filter?: F;
}

export interface FactFilter {
  /** Only facts that hold (true) or only retired and erased ones (false). */
  live?: boolean;
  kinds?: FactKind[];
  /** Only facts whose subject or object is this entity. */
  entity?: number;
  /** Only facts you stated (true) or only noted ones (false). */
  stated?: boolean;
}

export interface MessageFilter {
  thread?: string;
}

export interface EpisodeFilter {
  thread?: string;
  states?: EpisodeState[];
}

// ---- calls' results ----------------------------------------------------------

/** Progress of addMessages: messages committed so far, of the whole list. */
export interface BatchProgress {
  done: number;
  total: number;
}

export interface AddMessagesOptions {
  /** Called after each commit of at most 1,000 messages. */
  onProgress?: (progress: BatchProgress) => void;
}

/** The thread a call is about (`"main"` when left out). */
export interface ThreadOptions {
  thread?: string;
}

/** View and render options: the thread, and the time to replay the view at. */
export interface ViewOptions extends ThreadOptions {
  at?: number | Date;
}

/** Arguments of the note tool. */
export interface NoteArgs {
  episode?: number;
  facts: NewFact[];
}

/** The engine's counts (types/records.d.ts), and this handle's store calls. */
export interface Stats extends EngineStats {
  /**
   * The store calls this handle made since it opened, by kind (this
   * `stats()` call's own head read included). Each is one round trip on
   * `postgresStore` (a memory's very first commit excepted: a short
   * transaction), one transaction on `sqliteStore`, one storage call or
   * transaction on `durableObjectStore` (docs/stores.md, "Round trips").
   */
  round_trips: RoundTrips;
}

/** Store calls by kind, and their sum. */
export interface RoundTrips {
  get: number;
  /** Batched reads (`Store.getMany`): one each, however many keys. */
  get_many: number;
  put: number;
  delete: number;
  list: number;
  write_if: number;
  total: number;
}

export interface SearchOptions {
  /** Results wanted (10). */
  limit?: number;
  /** Run the relevance walk (model calls) instead of returning the fused ranking (false). */
  walk?: boolean;
  /** Also return facts and messages in the view now (true); the messages in view are embedded for the search (one `embed` call). */
  include_in_view?: boolean;
  /**
   * Return only what fits this many tokens (the items' texts), best first,
   * facts before the passages quoting them (none: `limit` items, a passage
   * quoting a better-ranked fact in its place, the fact further down).
   */
  budget_tokens?: number;
  /**
   * What the search may return (none: anything). Asked of every candidate
   * before ranking, so an item it keeps is found however many better items
   * it leaves out.
   */
  filter?: SearchFilter;
}

/**
 * Which items a search may return: every condition given must hold. Each is
 * a property of the item's source messages: a message's own, a passage's
 * messages, a fact's source messages (or, when its note named none, its
 * episode's).
 */
export interface SearchFilter {
  /** Only items of this thread (a fact's: the thread of the episode that noted it). */
  thread?: string;
  /** Only items said at or after this time (ms since the Unix epoch). */
  from?: number;
  /** Only items said at or before this time (ms, inclusive). */
  to?: number;
  /** Only items of these kinds (empty or absent: every kind). */
  kinds?: Array<"fact" | "passage" | "message">;
  /**
   * Only items about this entity (its id, see `entities()`): facts naming it
   * as subject or object, passages of an episode that noted such a fact or
   * holding the words of one of its names, messages naming it.
   */
  entity?: number;
  /** Only items with a source message whose metadata holds each of these top-level keys with an equal JSON value. */
  metadata?: JsonObject;
}

/** The `note` tool in OpenAI `tools` format. */
export interface NoteTool {
  type: "function";
  function: { name: "note"; description: string; parameters: Record<string, unknown> };
}

// ---- host objects ------------------------------------------------------------

type MaybePromise<T> = T | Promise<T>;

/** The part of an AbortSignal a host callback may use. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** What the memory passes to each model call: `signal` aborts at the call's deadline. */
export interface CallOptions {
  signal?: AbortSignalLike;
}

/** Wall-clock time, read synchronously. */
export interface Clock {
  /**
   * ms since the Unix epoch (`Date.now()`, not `Date.now() / 1000`): a
   * reading before 2000 or after 3000 rejects the call with
   * `InvalidInputError` naming the likely mistake ("did you pass seconds?");
   * a reading earlier than the memory's last stamp is clamped to it and
   * reported in `stats().storage_warnings` (a line starting `clock:`).
   */
  now(): number;
}

/** One write of an atomic batch: a value puts, null deletes. */
export type Write = [key: string, value: Uint8Array | null];

/**
 * Namespaced key-value storage with one conditional atomic multi-key write.
 * Values are bytes: keep each `Uint8Array` as given (the engine never
 * reuses one) and give the same bytes back.
 */
export interface Store {
  /** The bytes at `key` (a Uint8Array, a Node Buffer or an ArrayBuffer), or null/undefined when absent. */
  get(key: string): MaybePromise<Uint8Array | ArrayBuffer | null | undefined>;
  put(key: string, value: Uint8Array): MaybePromise<void>;
  delete(key: string): MaybePromise<void>;
  /**
   * Optional: the bytes at each of `keys`, in order (null/undefined where
   * absent), in one round trip. The engine reads a log's tail and packs
   * this way (at most 64 keys a call); a store without it is read key by
   * key.
   */
  getMany?(keys: string[]): MaybePromise<Array<Uint8Array | ArrayBuffer | null | undefined>>;
  /** Every key starting with `prefix`. */
  list(prefix: string): MaybePromise<string[]>;
  /**
   * Applies every write atomically if `guard` holds `expected` (null:
   * absent; compare the bytes by content, not identity) and returns true;
   * otherwise writes nothing and returns false.
   */
  writeIf(guard: string, expected: Uint8Array | null, writes: Write[]): MaybePromise<boolean | void>;
}

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
  complete(request: TaskRequest, options?: CallOptions): MaybePromise<string>;
  /** One vector per text, all of one dimension. */
  embed(texts: string[], options?: CallOptions): MaybePromise<ArrayLike<number>[]>;
  /** Tokens in `text`, synchronously (default: the engine's estimate). */
  countTokens?(text: string): number;
}

/** Fields of the engine's config to change (snake_case; see src/base/config.rs). */
export interface Config {
  ceiling_tokens?: number;
  target_episode_tokens?: number;
  max_episode_tokens?: number;
  min_episode_tokens?: number;
  boundary_threshold?: number;
  /** A boundary this strong cuts even under the size floor (0.9; within boundary_threshold..=1). */
  strong_boundary?: number;
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
  /** Rows each maintain links into the meaning graphs (2048; 0: never, every search exact). Indexes below 4096 rows keep no graph. */
  graph_rows_per_maintain?: number;
  max_dimension?: number;
  max_facts_per_note?: number;
  recall_budget_tokens?: number;
  recall_candidates?: number;
  walk_batch?: number;
  walk_hops?: number;
  passage_tokens?: number;
  min_cosine?: number;
  /** Largest share of the ceiling recall blocks in view may take; older blocks give way first (0.25; within (0, 0.5]). */
  recall_share?: number;
  /** Ask the model to split a user message into its parts (true). Off: split by punctuation, no call. */
  split_with_model?: boolean;
  /** Judge recall candidates with the model (true). Off: the best-ranked are kept, no call. */
  walk_with_model?: boolean;
  /** Times maintain() retries a deferred note before giving it up (3). */
  note_retries?: number;
  /** A model task that fails after its retries fails the call with ModelError, writing nothing (false: the step degrades). */
  strict?: boolean;
  /** At the end of a turn, fade when the next turn would not fit (true). */
  fade_ahead?: boolean;
  /** A reply that ends the turn runs maintain() in the same call (true). Off: call maintain() yourself. */
  maintain_after_reply?: boolean;
  /** Reuse the state for this many ms after the handle last read the head or committed (0, the default: every call reads the head; a chat backend holding a handle per user: 1000). */
  fresh_for_ms?: number;
}

export interface OpenOptions {
  /** 1 to 128 letters, digits or ._-:@ */
  namespace: string;
  /**
   * The LLM and embedder engram asks (default: `offlineModel()`, the
   * built-in rules and hashing embedder: for demos and tests; plug in a
   * real LLM for real use).
   */
  model?: Model;
  store: Store;
  /** Default: Date.now(). */
  clock?: Clock;
  config?: Config;
  /**
   * How long each host callback may take, in ms (null: no deadline). A model
   * call that has not settled in time is a failed model call (the step
   * degrades; with `strict`, the call rejects with ModelError); a store call,
   * a failed store call (the call rejects with StoreError, writing nothing).
   * Its late answer is ignored, and the queued calls go on. Synchronous
   * callbacks (the clock, countTokens, a synchronous store) cannot be cut.
   */
  deadlines?: Deadlines;
}

export interface Deadlines {
  /** Each `complete` and `embed` call (60000). */
  model?: number | null;
  /** Each store call (10000). */
  store?: number | null;
}

// ---- events ----------------------------------------------------------------

export interface MemoryEvents {
  /** The engine asks the model for a task. */
  task: { task: TaskName; attempt: number };
  /** The engine asks for embeddings. */
  embed: { texts: number };
  /** Episodes formed by a cut (`message`: the call's message; null for maintain()). */
  formed: { episodes: number[]; message: number | null };
  /** A fade ran (started or resumed; `message` null for maintain()); `thread` for a thread maintain() put to sleep. */
  fade: { fade: number; slept: boolean; message: number | null; thread?: string };
  /** A recall block was placed before a user message. */
  recall: { block: number; message: number };
  /** Distill decided which recalled items mattered. */
  distill: { block: number; distillation: Distillation };
  /** The note tool wrote facts. */
  note: NoteOutcome;
  /** A step went on without the model (emitted after the call that made it, reads included). */
  degraded: Degraded;
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
  /**
   * `open`, read-only, with whatever of a damaged log can be read (the way
   * back when `open` rejects with CorruptError): lost entries are skipped and
   * reported in `stats().storage_warnings`; every write rejects with
   * InvalidInputError; `export()` it and `import()` into a new store.
   */
  static openSalvage(options: OpenOptions): Promise<Memory>;
  addMessage(message: AnyNewMessage): Promise<Added>;
  /**
   * Adds history (each message with its own `thread` and `at`) with no model
   * call, in commits of at most 1,000 messages; judgments, cuts and notes
   * wait for maintain(). A bad message rejects with InvalidInputError and
   * writes nothing of its commit; the error's `added` holds the Batch of the
   * commits before it.
   */
  addMessages(messages: readonly AnyNewMessage[], options?: AddMessagesOptions): Promise<Batch>;
  /** Every thread with a message, by name. */
  threads(): Promise<ThreadInfo[]>;
  /** Closes a tool call that waits for its output and will have none (adds its "no output" tool message). */
  abandonToolCall(callId: string): Promise<Added>;
  /** The view of `thread` (default "main") now, or as it was at `at` (replayed from the log; nothing is written). */
  view(options?: ViewOptions): Promise<View>;
  /** The size of `thread`'s view now, in tokens. */
  viewTokens(options?: ThreadOptions): Promise<number>;
  render(format?: "openai", options?: ViewOptions): Promise<OpenAIMessage[]>;
  /**
   * The view as OpenAI Responses API input items: `message` items (an assistant's text as one
   * `output_text` part), one `function_call` per tool call, a tool message as a
   * `function_call_output`; items of stored messages carry ids `msg_engram_<message>`,
   * `fc_engram_<message>_<k>`, `fco_engram_<message>`.
   */
  render(format: "responses", options?: ViewOptions): Promise<ResponsesItem[]>;
  /**
   * Sets your own instructions (persona, tool policy): pinned first in every view,
   * counted toward the ceiling, never faded; "" removes them. Resolves to whether
   * they changed.
   */
  setInstructions(text: string): Promise<boolean>;
  /** Your instructions now, or null. */
  instructions(): Promise<string | null>;
  /** Writes facts from the note tool (its arguments object or JSON text). */
  note(args: NoteArgs | string): Promise<NoteOutcome>;
  noteTool(): NoteTool;
  /** maintain() with the latest turn counted as over; the latest user message's block if distilled now. */
  endTurn(options?: ThreadOptions): Promise<[number, Distillation] | null>;
  /**
   * The work that waits after a reply, when the host chooses; resolves to what it did.
   * `thread`'s judgments and fade ahead, and the whole memory's distill, notes and sleep of idle threads.
   */
  maintain(options?: ThreadOptions): Promise<Maintained>;
  /** Work waiting for maintain({ thread }). */
  pending(options?: ThreadOptions): Promise<Pending>;
  search(query: string, options?: SearchOptions): Promise<SearchHit[]>;
  /** The whole text of a search hit's item (`search` cuts a hit's text at about 1,000 tokens). */
  hitText(item: RecallItem): Promise<string>;
  /** Recall on demand: `search` with the relevance walk, leaving out what is in view. */
  recall(query: string, options?: SearchOptions): Promise<SearchHit[]>;
  recalls(): Promise<RecallBlock[]>;
  episodes(): Promise<EpisodeInfo[]>;
  /** One page of episodes, in id order. */
  episodes(options: PageOptions<EpisodeFilter>): Promise<Page<EpisodeInfo>>;
  messages(): Promise<Message[]>;
  /** One page of messages, in id order. */
  messages(options: PageOptions<MessageFilter>): Promise<Page<Message>>;
  facts(): Promise<Fact[]>;
  /** One page of facts, in id order: a walk by `next` returns each once while facts are added. */
  facts(options: PageOptions<FactFilter>): Promise<Page<Fact>>;
  /** Remembers a fact you state (a sentence, or its triple), at any time; its source is the host. */
  remember(statement: string | NewFact): Promise<Remembered>;
  /** A new fact that retires fact `id` (facts are never edited in place). */
  revise(id: number, statement: string | NewFact): Promise<Remembered>;
  /** Fact `id`, or null. */
  fact(id: number): Promise<Fact | null>;
  /** What merged into fact `id`, what it retired, what retired it, with times. */
  history(id: number): Promise<FactHistory>;
  entities(): Promise<Entity[]>;
  traces(): Promise<Trace[]>;
  fades(): Promise<Fade[]>;
  stats(): Promise<Stats>;
  explain(what: { episode: number }): Promise<EpisodeExplanation>;
  explain(what: { fact: number }): Promise<FactExplanation>;
  explain(what: { recall: number }): Promise<RecallExplanation[]>;
  explain(what: { message: number }): Promise<MessageExplanation>;
  export(): Promise<string>;
  /**
   * The export in parts (whole log entries, about `maxBytes` each, default
   * 8 MiB): joined, they are `export()` as it stood when the iteration
   * began. For memories whose export passes a string's limit (~512 MiB).
   */
  exportParts(options?: { maxBytes?: number }): AsyncGenerator<string, void, undefined>;
  import(data: string | object): Promise<void>;
  /**
   * Loads an export given in pieces (cut anywhere): strings or UTF-8 bytes
   * from an iterable, async iterable, ReadableStream or Blob. Nothing is
   * written until all of it is read and checked.
   */
  importParts(
    source:
      | string
      | Uint8Array
      | ArrayBuffer
      | BlobLike
      | ReadableStreamLike
      | Iterable<string | Uint8Array>
      | AsyncIterable<string | Uint8Array>,
  ): Promise<void>;
  /**
   * Erases for good a message (with its tool exchange and the facts noted
   * from its episode), an episode (its messages), a fact, or an entity (with
   * every fact naming it), or a thread (every message of it): no stored value
   * nor the export keeps its text or embedding. Unknown ids reject with
   * InvalidInputError.
   */
  erase(
    what: { message: number } | { episode: number } | { fact: number } | { entity: number } | { thread: string },
  ): Promise<Erased>;
  /** Deletes every key of the memory's namespace; the memory stays open, empty. */
  destroy(): Promise<void>;
  on<E extends MemoryEvent>(event: E, listener: (detail: MemoryEvents[E]) => void): () => void;
  off<E extends MemoryEvent>(event: E, listener: (detail: MemoryEvents[E]) => void): void;
  readonly closed: boolean;
  /** Frees the engine once the calls already made have settled. */
  free(): void;
  close(): Promise<void>;
  /** free(): `using memory = ...` in TypeScript 5.2+ (compiled down; Node 20 defines the symbols). */
  [Symbol.dispose](): void;
  /**
   * close(): `await using memory = await Memory.open(...)` in TypeScript 5.2+,
   * compiled for Node 20 (target ES2022 or lower); plain JavaScript on Node 20
   * has no `using` syntax: call `await memory.close()` in a `finally`.
   */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Loads the WebAssembly module ahead of the first open, optionally from
 * `source`: browsers take a URL, Response, bytes or WebAssembly.Module (for
 * bundlers that do not emit the package's `.wasm` themselves, such as
 * esbuild: serve `engram/engram.wasm` and pass its URL); Node a path, file
 * URL, bytes or Module (a bundle shipped without `node_modules`); workers a
 * compiled Module. Rejects with PackagingError when the module cannot be
 * found or loaded.
 */
export declare function init(source?: unknown): Promise<unknown>;

/**
 * Loads the offline model's own WebAssembly module (`engram/offline.wasm`)
 * ahead of the first open on it, optionally from `source` (as for `init`).
 * `Memory.open` loads it when the model is (or borrows from) `offlineModel()`;
 * an app on a real LLM never downloads it.
 */
export declare function initOffline(source?: unknown): Promise<unknown>;

export declare const systemClock: Clock;

/** A message in the engine's shape, from the engine's or OpenAI's. */
export declare function toNewMessage(message: AnyNewMessage): {
  role: Role;
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  client_id?: string;
  metadata?: JsonObject;
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
  | "packaging"
  | "in-use"
  | "internal";

export declare class EngramError extends Error {
  constructor(message: string, options?: { code?: ErrorCode; cause?: unknown });
  readonly code: ErrorCode;
}
export declare class InvalidInputError extends EngramError {}
/** The store failed. `cause`: the very error object the store threw or rejected with (or the deadline's StoreError). */
export declare class StoreError extends EngramError {}
/** The model failed where the step cannot degrade (or with `strict`). `cause`: the error the model threw, when it threw one. */
export declare class ModelError extends EngramError {}
export declare class CorruptError extends EngramError {}
export declare class UnsupportedVersionError extends EngramError {}
export declare class BusyError extends EngramError {}
export declare class ClosedError extends EngramError {}
/**
 * The package's WebAssembly module cannot be found or loaded: a build fault
 * (an entry file a bundler dropped, a `.wasm` not shipped beside a bundle),
 * never the caller's input. Fix the build or pass the module to `init(source)`.
 */
export declare class PackagingError extends EngramError {}

/** The WebAssembly module trapped: this and every later call of that module instance reject; load it again and reopen. */
export declare class TrappedError extends EngramError {}
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
  /**
   * "json_schema" (default): when the server rejects it with a 400, 422 or
   * 500 naming `response_format`, JSON mode from then on for the endpoint
   * (base URL and model), announced once by a `format` event.
   */
  responseFormat?: "json_schema" | "json_object" | "none";
  strict?: boolean;
  /**
   * The `max_tokens` of every request: one number for all tasks, or per task
   * over `MAX_TOKENS`. An answer cut there is a bad answer marked truncated.
   */
  maxTokens?: number | Partial<Record<TaskName, number>>;
  /**
   * Requests in flight at once; the others wait their turn (default: the
   * server's `total_slots` from GET /props, as llama.cpp's server answers,
   * else `DEFAULT_CONCURRENCY`).
   */
  concurrency?: number;
  headers?: Record<string, string>;
  fetch?: FetchLike;
  countTokens?: (text: string) => number;
  embedBatch?: number;
  /** Also called with each event of the model. */
  onEvent?: (event: { event: "format" } & FormatFallback) => void;
}

/**
 * The endpoint rejected json_schema: its requests use JSON mode from now on, with the task's schema
 * beside it (`schema: true`; llama.cpp's servers enforce it as a grammar), or, when that was rejected
 * too, plain JSON mode (`from: "json_object+schema"`, `schema: false`).
 */
export interface FormatFallback {
  endpoint: string;
  model: string;
  from: "json_schema" | "json_object+schema";
  to: "json_object";
  /** Whether JSON mode carries the task's schema from now on. */
  schema: boolean;
  /** The HTTP status of the rejection. */
  status: number;
  /** The rejection's text. */
  reason: string;
}

export interface OpenAIModel extends Model {
  /** Listens to `format` (the response format fell back); returns a function that stops listening. */
  on(event: "format", listener: (detail: FormatFallback) => void): () => void;
}

export declare function openAIModel(options: OpenAIModelOptions): OpenAIModel;

/**
 * The `max_tokens` sent per task by default: segment and resolve 48;
 * relevance and distill 192; reconcile and split 256; trace 512; note 1536.
 */
export declare const MAX_TOKENS: Readonly<Record<TaskName, number>>;

/** Requests in flight when neither `concurrency` nor the server's /props says (2). */
export declare const DEFAULT_CONCURRENCY: number;

export declare function functionModel(
  complete: (request: TaskRequest, options?: CallOptions) => MaybePromise<string | object>,
  options?: {
    embed?: (texts: string[], options?: CallOptions) => MaybePromise<ArrayLike<number>[]>;
    countTokens?: (text: string) => number;
  },
): Model;

/** The offline model's `complete` and `embed`: plain functions (no `this`), so they compose with other models. */
export interface OfflineModel extends Model {
  /** The answer's JSON text (synchronous once the WebAssembly module is loaded). */
  complete(request: TaskRequest, options?: CallOptions): MaybePromise<string>;
  /** One vector of `offlineModel.dimension` numbers per text. */
  embed(texts: string[], options?: CallOptions): MaybePromise<Float32Array[]>;
}

/**
 * The built-in offline model: every task answered by rules inside the
 * engine, and a hashing embedder; deterministic, no network, no key. The
 * default of `Memory.open`. For demos and tests; plug in a real LLM for real
 * use. Compose it: `{ ...openAIModel({...}), embed: offlineModel().embed }`.
 */
export declare const offlineModel: {
  (): OfflineModel;
  /** Size of the offline embedder's vectors (256). */
  readonly dimension: number;
};

/** Deterministic word-hash vectors: for tests and demos, not semantic. */
export declare function hashEmbed(texts: string[], dimension?: number): number[][];

export interface MemoryStore extends Store {
  /** Every value, as bytes (decode the head with `new TextDecoder().decode(v)`). */
  readonly data: Map<string, Uint8Array>;
}
/** `initial` seeds it; string values are taken as their UTF-8. */
export declare function memoryStore(
  initial?: Map<string, Uint8Array | string> | Record<string, Uint8Array | string>,
): MemoryStore;

export interface IndexedDBStore extends Store {
  close(): Promise<void>;
}
export declare function indexedDBStore(
  name?: string,
  options?: { storeName?: string; indexedDB?: unknown },
): IndexedDBStore;

export interface SqliteStore extends Store {
  /** The driver in use. */
  readonly driver: "better-sqlite3" | "node:sqlite";
  /** The driver's Database (better-sqlite3's, or node:sqlite's DatabaseSync). */
  readonly database: unknown;
  /** Calls the engine made to the store so far (each one transaction). */
  readonly roundTrips: number;
  close(): void;
}
/**
 * Node only: over better-sqlite3 12 or 13, or the built-in node:sqlite (Node
 * 22.13+ / 23.4+). `driver: "auto"` (default) takes better-sqlite3 when it is
 * installed, else node:sqlite. Both write the same table and bytes.
 */
export declare function sqliteStore(
  path: string,
  options?: { table?: string; database?: unknown; driver?: "auto" | "better-sqlite3" | "node:sqlite" },
): SqliteStore;

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
export interface DurableObjectStore extends Store {
  /** Calls the engine made to the store so far (each one storage transaction or read). */
  readonly roundTrips: number;
}
export declare function durableObjectStore(storage: DurableObjectStorageLike): DurableObjectStore;
