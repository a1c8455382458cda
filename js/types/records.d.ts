// GENERATED from the Rust record types (ts-rs, feature `ts`): do not edit.
// Regenerate with `scripts/check-types --write`; scripts/test fails when
// this file differs from what the Rust types generate.

/** A JSON value. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };
/** A task name, or "embed" for embeddings (as the model's health counts them). */
export type ModelRequestName = TaskName | "embed";

/**
 * Who spoke.
 */
export type Role = "system" | "user" | "assistant" | "tool";

/**
 * A tool call made by the assistant.
 */
export type ToolCall = {
  /**
   * The call's id; the tool message answering it carries the same id.
   */
  id: string,
  /**
   * Tool name.
   */
  name: string,
  /**
   * Arguments as the model wrote them (usually JSON text).
   */
  arguments: string, };

/**
 * A message as the memory keeps it, forever.
 */
export type Message = {
  /**
   * Message id (1, 2, ... in order of arrival).
   */
  id: number,
  /**
   * Who spoke.
   */
  role: Role,
  /**
   * The text.
   */
  content: string,
  /**
   * Tool calls of an assistant message.
   */
  tool_calls?: Array<ToolCall>,
  /**
   * For a tool message: the call it answers.
   */
  tool_call_id?: string,
  /**
   * When it was added (host clock, ms since the Unix epoch).
   */
  at: number,
  /**
   * Its size in tokens as the host's model counts them, framing included.
   */
  tokens: number,
  /**
   * The boundary judgment: probability that it starts a new concept.
   * `None` where no cut is allowed or the judgment failed.
   */
  boundary?: number,
  /**
   * Whether its boundary judgment is settled: made (or failed), or not
   * needed. `false` while the judgment waits for the next step.
   */
  judged?: boolean,
  /**
   * The host's id for it, when it gave one.
   */
  client_id?: string,
  /**
   * Whether it was erased on request (`crate::erase`): its content, its
   * metadata and its tool calls' names and arguments are gone, its
   * tokens are 0, and
   * it is not shown (its id, role, time and tool call ids stay, so the
   * conversation keeps its shape).
   */
  erased?: boolean,
  /**
   * Its thread (`NewMessage::thread`).
   */
  thread?: string,
  /**
   * The host's data about it (`NewMessage::metadata`); gone when it is
   * erased.
   */
  metadata?: JsonObject,
  /**
   * For a regenerated answer: the user message it answers again
   * (`NewMessage::replaces`).
   */
  replaces?: number,
  /**
   * The regenerated answer that replaced it, when one did: it is an
   * alternative, kept and explainable but not shown (not in the view, not
   * in a pending tool call). Derived by the fold from the later
   * message's `replaces`, never written in its own event.
   */
  replaced_by?: number, };

/**
 * What a view item is.
 */
export type ItemKind = "instructions" | "facts" | "message" | "warning" | "recall";

/**
 * One entry of the view, ready for a chat API.
 */
export type ViewItem = {
  /**
   * What it is.
   */
  kind: ItemKind,
  /**
   * Chat role it is sent with.
   */
  role: Role,
  /**
   * The text.
   */
  text: string,
  /**
   * Tokens, framing included.
   */
  tokens: number,
  /**
   * The message, for a message item.
   */
  message?: number,
  /**
   * The episode, for a message or warning item.
   */
  episode?: number,
  /**
   * Facts shown, for a facts or recall item.
   */
  facts?: Array<number>,
  /**
   * Tool calls of an assistant message.
   */
  tool_calls?: Array<ToolCall>,
  /**
   * The call a tool message answers.
   */
  tool_call_id?: string, };

/**
 * The whole view, with its size against the ceiling.
 */
export type View = {
  /**
   * Items in order.
   */
  items: Array<ViewItem>,
  /**
   * Total tokens.
   */
  tokens: number,
  /**
   * The ceiling at which a fade starts.
   */
  ceiling: number,
  /**
   * Why the view is over the ceiling, when it is: only what cannot leave
   * (the newest episode and the messages after it, with their recall
   * blocks) can hold it there, and the view says so instead of hiding it.
   */
  over_ceiling?: string, };

/**
 * Where an episode stands. It only ever moves forward:
 * live -> leaving -> sealed -> forgotten.
 */
export type EpisodeState = "live" | "leaving" | "sealed" | "forgotten";

/**
 * One move of an episode to a new state.
 */
export type StateChange = {
  /**
   * The state entered.
   */
  state: EpisodeState,
  /**
   * When (host clock, ms).
   */
  at: number,
  /**
   * The fade that moved it, if a fade did (a host's `note` call can seal
   * a leaving episode without one).
   */
  fade?: number, };

/**
 * A note attempt that failed.
 */
export type NoteFailure = {
  /**
   * When.
   */
  at: number,
  /**
   * What went wrong.
   */
  error: string, };

/**
 * An episode: a run of whole, consecutive messages about one concept.
 */
export type Episode = {
  /**
   * Episode id (1, 2, ... in order of formation).
   */
  id: number,
  /**
   * First message id.
   */
  first: number,
  /**
   * Last message id (inclusive).
   */
  last: number,
  /**
   * When it formed: the time of its last message (its encoding stamp).
   */
  formed_at: number,
  /**
   * Its messages' tokens.
   */
  tokens: number,
  /**
   * Current state.
   */
  state: EpisodeState,
  /**
   * Every state change, oldest first (formation as live included).
   */
  history: Array<StateChange>,
  /**
   * Ids of its yes-traces (derived from the trace log).
   */
  traces: Array<number>,
  /**
   * Facts whose source it is (written by notes about it).
   */
  facts: Array<number>,
  /**
   * Failed note attempts, with the last error, for `explain`.
   */
  note_failures: Array<NoteFailure>,
  /**
   * When its facts were last written.
   */
  noted?: number,
  /**
   * When it left the view without facts (its note had failed).
   */
  deferred?: number,
  /**
   * When its note was given up after `note_retries` more failures.
   */
  abandoned?: number,
  /**
   * Its thread: its messages are that thread's messages from `first` to
   * `last` (other threads' messages between them are not its own).
   */
  thread?: string, };

/**
 * An episode as hosts list it.
 */
export type EpisodeInfo = {
  /**
   * Activation now.
   */
  activation: number,
  /**
   * Significance.
   */
  significance: number,
  /**
   * Episode id (1, 2, ... in order of formation).
   */
  id: number,
  /**
   * First message id.
   */
  first: number,
  /**
   * Last message id (inclusive).
   */
  last: number,
  /**
   * When it formed: the time of its last message (its encoding stamp).
   */
  formed_at: number,
  /**
   * Its messages' tokens.
   */
  tokens: number,
  /**
   * Current state.
   */
  state: EpisodeState,
  /**
   * Every state change, oldest first (formation as live included).
   */
  history: Array<StateChange>,
  /**
   * Ids of its yes-traces (derived from the trace log).
   */
  traces: Array<number>,
  /**
   * Facts whose source it is (written by notes about it).
   */
  facts: Array<number>,
  /**
   * Failed note attempts, with the last error, for `explain`.
   */
  note_failures: Array<NoteFailure>,
  /**
   * When its facts were last written.
   */
  noted?: number,
  /**
   * When it left the view without facts (its note had failed).
   */
  deferred?: number,
  /**
   * When its note was given up after `note_retries` more failures.
   */
  abandoned?: number,
  /**
   * Its thread: its messages are that thread's messages from `first` to
   * `last` (other threads' messages between them are not its own).
   */
  thread?: string, };

/**
 * What a fact says about the work. Milestones say where the work stands.
 */
export type FactKind = "fact" | "agreed" | "decided" | "done" | "blocked" | "next" | "preference";

/**
 * A later mention of a held fact that merged into it.
 */
export type Restatement = {
  /**
   * Episode whose note restated it.
   */
  episode: number,
  /**
   * The restating sentence.
   */
  sentence: string,
  /**
   * When it was noted.
   */
  at: number, };

/**
 * Why a fact no longer holds.
 */
export type Retirement = {
  /**
   * The newer fact that contradicts it.
   */
  by: number,
  /**
   * When it was retired.
   */
  at: number, };

/**
 * A fact of the knowledge graph: a triple with its sentence.
 */
export type Fact = {
  /**
   * Fact id (1, 2, ...).
   */
  id: number,
  /**
   * Subject entity id.
   */
  subject: number,
  /**
   * The relation.
   */
  predicate: string,
  /**
   * Object entity id.
   */
  object: number,
  /**
   * The sentence.
   */
  sentence: string,
  /**
   * Plain fact or milestone.
   */
  kind: FactKind,
  /**
   * The episode whose note wrote it.
   */
  episode: number,
  /**
   * When it was said: the time of the source episode's last message.
   */
  said_at: number,
  /**
   * When it was noted.
   */
  noted_at: number,
  /**
   * Embedding of the sentence.
   */
  embedding: string,
  /**
   * The messages it came from (ids), when the note named them: a
   * budgeted search never spends its room on both a fact and the message
   * it came from.
   */
  sources?: Array<number>,
  /**
   * Later mentions merged into it.
   */
  restated?: Array<Restatement>,
  /**
   * Set when a newer fact contradicted it (it is kept).
   */
  retired?: Retirement,
  /**
   * Whether it was erased on request (`crate::erase`): its sentence,
   * predicate, restatements and embedding are gone; it is never shown,
   * searched or recalled.
   */
  erased?: boolean, };

/**
 * What became of a fact the host stated.
 */
export type Remembered = {
  /**
   * The fact it is now: a new one, or the held fact it restated.
   */
  fact: number,
  /**
   * Whether it restated (merged into) a held fact rather than adding one.
   */
  merged: boolean,
  /**
   * Held facts it retired (for `revise`, the revised fact among them).
   */
  retired: Array<number>, };

/**
 * One step of a fact's history, oldest first.
 */
export type HistoryEntry = { "kind": "added",
  /**
   * The episode whose note wrote it, or `HOST`.
   */
  episode: number,
  /**
   * Its sentence (empty when erased).
   */
  sentence: string,
  /**
   * When.
   */
  at: number, } | { "kind": "merged",
  /**
   * The episode whose note restated it, or `HOST`.
   */
  episode: number,
  /**
   * The restating sentence.
   */
  sentence: string,
  /**
   * When.
   */
  at: number, } | { "kind": "retired",
  /**
   * The older fact.
   */
  fact: number,
  /**
   * When.
   */
  at: number, } | { "kind": "retired_by",
  /**
   * The newer fact.
   */
  fact: number,
  /**
   * When.
   */
  at: number, } | { "kind": "erased" };

/**
 * What happened to one fact: its steps, oldest first.
 */
export type FactHistory = {
  /**
   * The fact.
   */
  fact: number,
  /**
   * Whether it still holds.
   */
  live: boolean,
  /**
   * Its steps, oldest first (an erasure last).
   */
  entries: Array<HistoryEntry>, };

/**
 * One page of a listing.
 */
export type Page<T> = {
  /**
   * The items, in id order.
   */
  items: Array<T>,
  /**
   * The cursor of the next page, or none when no item the filter keeps
   * comes after this page (now: a later item added makes a new page).
   */
  next: string | null, };

/**
 * How a name was tied to its entity.
 */
export type Resolution = { "how": "new" } | { "how": "exact" } | { "how": "similar",
  /**
   * The cosine.
   */
  cosine: number, } | { "how": "judged" };

/**
 * One name of an entity.
 */
export type Alias = {
  /**
   * The name as written.
   */
  name: string,
  /**
   * Its normal form (see `crate::base::text::normalise_name`).
   */
  normal: string,
  /**
   * How it was tied to the entity.
   */
  resolution: Resolution,
  /**
   * When.
   */
  at: number, };

/**
 * A node of the knowledge graph: one thing, under all its names.
 */
export type Entity = {
  /**
   * Entity id (1, 2, ...).
   */
  id: number,
  /**
   * The first name it was known by.
   */
  name: string,
  /**
   * Every name (the first included).
   */
  aliases: Array<Alias>,
  /**
   * Embedding of the canonical name.
   */
  embedding: string,
  /**
   * Whether it was erased on request (`crate::erase`): its names and
   * embedding are gone, and so is every fact that named it.
   */
  erased?: boolean, };

/**
 * What an erase removed: ids only (also what `Event::Erased` keeps).
 */
export type Erased = {
  /**
   * Messages erased.
   */
  messages: Array<number>,
  /**
   * Facts erased.
   */
  facts: Array<number>,
  /**
   * Entities erased.
   */
  entities: Array<number>, };

/**
 * Why a trace was written.
 */
export type TraceCause = { "kind": "encoding" } | { "kind": "fact", "fact": number } | { "kind": "recall", "fact": number };

/**
 * One judgment "does this matter to that episode?", with its time.
 * Traces are never changed after they are written.
 */
export type Trace = {
  /**
   * Trace id (1, 2, ...).
   */
  id: number,
  /**
   * The episode judged.
   */
  episode: number,
  /**
   * Why it was written.
   */
  cause: TraceCause,
  /**
   * The answer: only a yes counts toward activation and significance.
   */
  yes: boolean,
  /**
   * Strength of a yes (1.0 for every trace engram writes today).
   */
  strength: number,
  /**
   * When (host clock, ms).
   */
  at: number, };

/**
 * Why a fade started.
 */
export type FadeReason = "ceiling" | "sleep" | "ahead" | "idle";

/**
 * One fade, as recorded.
 */
export type Fade = {
  /**
   * Fade id (1, 2, ...).
   */
  id: number,
  /**
   * Why it started.
   */
  reason: FadeReason,
  /**
   * When it started.
   */
  at: number,
  /**
   * View size when it started.
   */
  view_tokens: number,
  /**
   * The ceiling then.
   */
  ceiling: number,
  /**
   * The size it fades down to.
   */
  landing: number,
  /**
   * The recent turn size used for the landing.
   */
  turn_tokens: number,
  /**
   * When it finished.
   */
  finished_at?: number,
  /**
   * View size when it finished.
   */
  view_after?: number,
  /**
   * The thread whose view it fades (its live episodes leave; sealed
   * episodes of any thread may be forgotten).
   */
  thread?: string, };

/**
 * A recallable thing: a fact, a passage, or (found by an on-demand
 * `search` only) a message in view.
 */
export type RecallItem = { "kind": "fact", "id": number } | { "kind": "passage", "id": number } | { "kind": "message", "id": number };

/**
 * The searches recall runs for each query.
 */
export type SearchList = "fact_words" | "fact_meaning" | "passage_words" | "passage_meaning" | "view_words" | "view_meaning";

/**
 * One search that found an item.
 */
export type Hit = {
  /**
   * Which search.
   */
  list: SearchList,
  /**
   * Which query: 0 for the whole message, n for part n; one past the
   * last part for the message expanded by its best hits' shared words
   * (a search that reaches deep).
   */
  query: number,
  /**
   * Rank in that search (1 = best).
   */
  rank: number, };

/**
 * Why an item survived.
 */
export type RecallJudgment = "relevant" | "fallback" | "ranked";

/**
 * One item of a recall block and how it got there.
 */
export type Recalled = {
  /**
   * The item.
   */
  item: RecallItem,
  /**
   * Searches that found it (empty for items the walk reached).
   */
  hits: Array<Hit>,
  /**
   * Its place in the fused ranking (1 = best), if a search found it.
   */
  fused_rank: number | null,
  /**
   * Walk step that kept it: 0 for a search result, n after n hops.
   */
  hop: number,
  /**
   * The entity the walk followed to reach it.
   */
  via?: number,
  /**
   * Why it survived.
   */
  judgment: RecallJudgment, };

/**
 * What distill decided after the turn.
 */
export type Distillation = {
  /**
   * When.
   */
  at: number,
  /**
   * Items kept (all of them when distill failed).
   */
  kept: Array<RecallItem>,
  /**
   * Whether the model failed (the block was kept whole).
   */
  failed: boolean, };

/**
 * Facts and passages recalled for one user message.
 */
export type RecallBlock = {
  /**
   * Block id (1, 2, ...).
   */
  id: number,
  /**
   * The user message it was recalled for (placed just before it).
   */
  message: number,
  /**
   * When.
   */
  at: number,
  /**
   * The parts the message was split into.
   */
  parts: Array<string>,
  /**
   * Whether split failed (the whole message was searched alone).
   */
  split_failed: boolean,
  /**
   * Whether the relevance walk failed (the fused ranking decided).
   */
  walk_failed: boolean,
  /**
   * The survivors, in block order.
   */
  items: Array<Recalled>,
  /**
   * Distill's decision, once the turn is over.
   */
  distilled?: Distillation,
  /**
   * When it gave way to keep recall blocks within their share of the view
   * (it is no longer shown; its items stay recallable).
   */
  gave_way?: number, };

/**
 * A run of whole messages of one episode.
 */
export type Passage = {
  /**
   * Passage id (1, 2, ...).
   */
  id: number,
  /**
   * Its episode.
   */
  episode: number,
  /**
   * First message id.
   */
  first: number,
  /**
   * Last message id.
   */
  last: number,
  /**
   * Time of its last message.
   */
  at: number,
  /**
   * Embedding of its text (empty when the embedder failed: the passage
   * is then found by words only).
   */
  embedding: string, };

/**
 * One result of an on-demand search.
 */
export type SearchHit = {
  /**
   * The item.
   */
  item: RecallItem,
  /**
   * Its text (a fact's sentence, a passage's messages).
   */
  text: string,
  /**
   * When it was said.
   */
  said_at: number,
  /**
   * Its fused score (0 for items only the walk reached).
   */
  score: number,
  /**
   * Searches that found it.
   */
  hits: Array<Hit>,
  /**
   * Walk step that kept it (0 without walk).
   */
  hop: number,
  /**
   * Whether it is a retired fact (shown with the fact that retired it).
   */
  retired: boolean,
  /**
   * The messages it came from (ids): a fact's, when its note named them;
   * a passage's messages; a message itself. Their metadata and threads
   * are the item's provenance (`crate::memory::handle::Memory::messages`).
   */
  sources?: Array<number>, };

/**
 * The typed tasks the core asks a model to do. The core owns the prompts.
 */
export type TaskName = "segment" | "note" | "trace" | "resolve" | "reconcile" | "split" | "relevance" | "distill";

/**
 * A step that went on without the model: its task failed every attempt.
 */
export type Degraded = {
  /**
   * The task that failed.
   */
  task: TaskName,
  /**
   * The last error.
   */
  error: string,
  /**
   * Attempts made.
   */
  attempts: number,
  /**
   * When (host clock, ms).
   */
  at: number,
  /**
   * What the step did instead (`no cut judged here`, `kept the block whole`, ...).
   */
  effect: string, };

/**
 * The last failed model request.
 */
export type LastModelError = {
  /**
   * The task (`embed` for embeddings).
   */
  task: ModelRequestName,
  /**
   * What went wrong.
   */
  error: string,
  /**
   * When (host clock, ms).
   */
  at: number, };

/**
 * Model requests counted since this handle opened (not stored: each handle
 * reports what it saw).
 */
export type ModelHealth = {
  /**
   * Requests per task (`complete` attempts, and `embed` calls).
   */
  calls: Partial<Record<ModelRequestName, number>>,
  /**
   * Failed requests per task (an error, or an answer that did not fit).
   */
  failed: Partial<Record<ModelRequestName, number>>,
  /**
   * Failed requests since the last one that succeeded.
   */
  consecutive_failures: number,
  /**
   * The last failure.
   */
  last_error: LastModelError | null,
  /**
   * Steps that degraded (a task that failed every attempt).
   */
  degraded_steps: number,
  /**
   * Answers taken after a repair, per repair: `reasoning` (a leading
   * `<think>` block skipped), `fence` (a code fence), `prose` (text
   * around the JSON), `one_fact_as_list` (`note`: one fact for a list),
   * `clamped` (`segment`: a boundary outside 0..=1 read as its nearest end).
   */
  repairs: Partial<Record<"reasoning" | "fence" | "prose" | "one_fact_as_list" | "clamped", number>>,
  /**
   * Answers cut off at the model's length limit (each a failed request;
   * a batched task retries in smaller batches).
   */
  truncated: number, };

/**
 * What `add_message` did.
 */
export type Added = {
  /**
   * The new message's id.
   */
  message: number,
  /**
   * Episodes formed by cuts this message caused.
   */
  formed: Array<number>,
  /**
   * Whether a sleep fade started in this call (a sleep due while an older
   * fade is stuck waits for it, and is reported by the call that runs it).
   */
  slept: boolean,
  /**
   * The fade that ran (started or resumed), if any.
   */
  fade: number | null,
  /**
   * The recall block placed before this user message, if any.
   */
  recall: number | null,
  /**
   * The recall block this message closed, and distill's decision: for a
   * reply, when it ran `maintain`; for a user message, the block of a
   * previous turn that ended without a reply distilling it.
   */
  distilled: [number, Distillation] | null,
  /**
   * Steps of this call that went on without the model.
   */
  degraded: Array<Degraded>,
  /**
   * What the `maintain` run after a reply that ended the turn did
   * (`maintain_after_reply`).
   */
  maintained: Maintained | null,
  /**
   * Why that `maintain` failed, if it did: the message itself is
   * committed; the work stays pending for the next call.
   */
  maintain_error: string | null,
  /**
   * The message's client id was already in the memory: nothing was
   * written, and `message` (with the recall block placed before it) is
   * the first add's.
   */
  duplicate: boolean, };

/**
 * What `maintain` did: the work that waits after a reply.
 */
export type Maintained = {
  /**
   * Messages given their boundary judgment.
   */
  judged: Array<number>,
  /**
   * Episodes formed by the cuts those judgments placed.
   */
  formed: Array<number>,
  /**
   * Recall blocks distilled, with the decisions.
   */
  distilled: Array<[number, Distillation]>,
  /**
   * The fade that ran (a sleep settled, a fade ahead, or one the ceiling
   * needed), if any.
   */
  fade: number | null,
  /**
   * Episodes noted and sealed.
   */
  sealed: Array<number>,
  /**
   * Episodes that left the view without facts (their note failed; retried
   * by later calls).
   */
  deferred: Array<number>,
  /**
   * Episodes whose deferred note was written now.
   */
  noted_late: Array<number>,
  /**
   * Episodes whose note was given up after `note_retries` failures.
   */
  abandoned: Array<number>,
  /**
   * Recall blocks that gave way to keep recall within its share.
   */
  gave_way: Array<number>,
  /**
   * The thread idle for `sleep_after_hours` put to sleep, with its fade
   * (its episodes left its view and were noted): one a call, the call's
   * own thread first, else the longest idle; `idle_threads` of
   * `Pending` drives the rest.
   */
  slept?: Array<[string, number]>,
  /**
   * Steps that went on without the model.
   */
  degraded: Array<Degraded>, };

/**
 * Work waiting for `maintain`.
 */
export type Pending = {
  /**
   * Messages whose boundary judgment waits.
   */
  unjudged: Array<number>,
  /**
   * Recall blocks whose turn is over, waiting for distill.
   */
  undistilled: Array<number>,
  /**
   * Episodes leaving (in view, their facts not written yet).
   */
  leaving: Array<number>,
  /**
   * Episodes out of view whose deferred note waits for a retry.
   */
  awaiting_note: Array<number>,
  /**
   * Whether the next turn would not fit: a fade ahead is due.
   */
  fade_ahead: boolean,
  /**
   * Threads idle for `sleep_after_hours` that `maintain` will put to
   * sleep.
   */
  idle_threads?: Array<string>, };

/**
 * What a `note` call wrote.
 */
export type NoteOutcome = {
  /**
   * The episode the facts were written for.
   */
  episode: number,
  /**
   * New facts.
   */
  added: Array<number>,
  /**
   * Held facts restated (merged).
   */
  merged: Array<number>,
  /**
   * Held facts retired by the new ones. (A new fact that arrives already
   * contradicted by a newer held fact is in `added`, marked retired.)
   */
  retired: Array<number>,
  /**
   * Whether the episode was leaving and is now sealed.
   */
  sealed: boolean, };

/**
 * What a writing call returns, told the call's degraded steps (the
 * outcomes that report them keep them).
 * What `add_messages` did.
 */
export type Batch = {
  /**
   * The new messages' ids, in order.
   */
  messages: Array<number>,
  /**
   * Messages skipped because the memory holds their client id (a retried
   * batch): the ids they were stored under.
   */
  duplicates: Array<number>, };

/**
 * One thread, as `Memory::threads` lists it.
 */
export type ThreadInfo = {
  /**
   * Its name.
   */
  thread: string,
  /**
   * Its first user message (or first message), made one line and clipped
   * to 80 characters; empty when that message was erased.
   */
  title: string,
  /**
   * Its first message's id.
   */
  first_message: number,
  /**
   * Its last message's id.
   */
  last_message: number,
  /**
   * When its first message was added.
   */
  first_at: number,
  /**
   * When its last message was added.
   */
  last_at: number,
  /**
   * Its messages.
   */
  messages: number,
  /**
   * Its user messages.
   */
  user_messages: number,
  /**
   * Its episodes (of every state).
   */
  episodes: number,
  /**
   * Its episodes in its view now (live and leaving).
   */
  episodes_in_view: number, };

/**
 * Counts of a memory.
 */
export type Stats = {
  /**
   * Messages (erased ones included: their ids stay, as tombstones).
   */
  messages: number,
  /**
   * Episodes by state: live, leaving, sealed, forgotten.
   */
  episodes: [number, number, number, number],
  /**
   * Messages in the open stretch.
   */
  open_messages: number,
  /**
   * Facts (live, retired); erased ones are neither.
   */
  facts: [number, number],
  /**
   * Entities (erased ones not counted).
   */
  entities: number,
  /**
   * Traces (all answers, yes answers).
   */
  traces: [number, number],
  /**
   * Fades.
   */
  fades: number,
  /**
   * Committed log entries.
   */
  log_entries: number,
  /**
   * View size now.
   */
  view_tokens: number,
  /**
   * The ceiling.
   */
  ceiling: number,
  /**
   * Work waiting for `maintain`.
   */
  pending: Pending,
  /**
   * The model's health as this handle saw it: requests and failures per
   * task, consecutive failures, the last error and when.
   */
  model: ModelHealth,
  /**
   * Why stored data was not used as is since this handle opened (a
   * damaged or disagreeing snapshot, ignored: the state was rebuilt from
   * the log), and, last, whether the host clock went back (a line
   * starting `clock:`, see `Memory::clock_warning`). Empty when
   * everything read clean and the clock never went back.
   */
  storage_warnings: Array<string>, };

/**
 * One state change of an episode, with the fade that caused it.
 */
export type Move = {
  /**
   * State entered.
   */
  state: EpisodeState,
  /**
   * When.
   */
  at: number,
  /**
   * The fade, if one moved it.
   */
  fade?: Fade, };

/**
 * Why an episode is where it is.
 */
export type EpisodeExplanation = {
  /**
   * The episode.
   */
  episode: number,
  /**
   * Its thread.
   */
  thread: string,
  /**
   * Its state.
   */
  state: EpisodeState,
  /**
   * Whether its messages are in the view.
   */
  in_view: boolean,
  /**
   * Activation now.
   */
  activation: number,
  /**
   * Significance.
   */
  significance: number,
  /**
   * Its traces, oldest first: the encoding trace and every yes (a no
   * is counted per fact, `FactExplanation::declined`; memories written
   * before format 3 list their no answers here too).
   */
  traces: Array<Trace>,
  /**
   * Its moves, oldest first.
   */
  moves: Array<Move>,
  /**
   * The answer in one paragraph.
   */
  summary: string, };

/**
 * Why a fact is where it is.
 */
export type FactExplanation = {
  /**
   * The fact.
   */
  fact: number,
  /**
   * The thread it was said in (its episode's).
   */
  thread: string,
  /**
   * Its sentence.
   */
  sentence: string,
  /**
   * Subject and object names.
   */
  subject: string,
  /**
   * Object name.
   */
  object: string,
  /**
   * Whether it is in the facts block now.
   */
  in_facts_block: boolean,
  /**
   * Episodes that wrote or restated it, with their states.
   */
  episodes: Array<[number, EpisodeState]>,
  /**
   * The fact that retired it, and when.
   */
  retired_by?: [number, number],
  /**
   * Traces it wrote: the episodes that judged it mattered to them.
   */
  traces: Array<Trace>,
  /**
   * How many episodes judged it did not matter to them.
   */
  declined: number,
  /**
   * The answer in one paragraph.
   */
  summary: string, };

/**
 * Why a message is shown or not: its episode, and the answers a
 * regeneration swapped (see `crate::types::message::NewMessage::replaces`).
 */
export type MessageExplanation = {
  /**
   * The message.
   */
  message: number,
  /**
   * Its thread.
   */
  thread: string,
  /**
   * Whether the view shows it now.
   */
  in_view: boolean,
  /**
   * The episode holding it (none while it is in the open stretch).
   */
  episode?: number,
  /**
   * For a regenerated answer: the user message it answers again.
   */
  replaces?: number,
  /**
   * The regenerated answer that replaced it, when one did.
   */
  replaced_by?: number,
  /**
   * Its alternatives, oldest first: for a regenerated answer, the
   * messages it replaced; for a replaced one, the others replaced by the
   * same answer.
   */
  alternatives?: Array<number>,
  /**
   * The answer in one paragraph.
   */
  summary: string, };

/**
 * Why one item of a recall block is there.
 */
export type RecalledItemExplanation = {
  /**
   * The item.
   */
  item: RecallItem,
  /**
   * Every search that found it, with its rank in that list.
   */
  hits: Array<Hit>,
  /**
   * Its place in the fused ranking.
   */
  fused_rank: number | null,
  /**
   * Graph hops that reached it (0: a search found it).
   */
  hop: number,
  /**
   * Entity followed to it.
   */
  via: number | null,
  /**
   * Why it survived.
   */
  judgment: RecallJudgment,
  /**
   * The answer in one sentence: the lists and ranks.
   */
  summary: string, };

/**
 * Why a fact was recalled into one block.
 */
export type RecallExplanation = {
  /**
   * The recall block.
   */
  block: number,
  /**
   * The user message it was recalled for.
   */
  message: number,
  /**
   * When.
   */
  at: number,
  /**
   * Searches that hit it, with ranks.
   */
  hits: Array<Hit>,
  /**
   * Its place in the fused ranking.
   */
  fused_rank: number | null,
  /**
   * Walk step that kept it (0: a search found it).
   */
  hop: number,
  /**
   * Entity the walk followed to it.
   */
  via: number | null,
  /**
   * Relevant, or kept by fallback when the walk failed.
   */
  judgment: RecallJudgment,
  /**
   * Whether distill kept it (`None` until the turn ends or when distill failed).
   */
  distill_kept: boolean | null,
  /**
   * The answer in one sentence.
   */
  summary: string, };
