"""The records engram's calls take and return, as ``TypedDict``s.

Plain dicts with the same snake_case fields as the npm package's records
(js/types/records.d.ts, of the same names, generated from the Rust types)
and the engine's JSON: ``scripts/check-types`` fails when a record here
lacks a field of its Rust type or has one it does not
(scripts/check_py_records.py lists the differences allowed, with why). Where Python
differs from the d.ts, it is the component's WIT shape: an absent value is
``None`` (the key is always there), an absent list is empty, embeddings are
lists of floats (JS: base64 text), a thread is always named (``"main"``),
and a pair is a two-item list (``[block, distillation]``, ``[thread,
fade]``). Counts by kind are lists in the order given; tagged unions are
dicts with a ``kind`` (or ``how``) naming the case.

Only :mod:`engram_host.convert` builds these; :class:`~engram_host.Memory`
returns them.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

# ---- Names ---------------------------------------------------------------------

Role = Literal["system", "user", "assistant", "tool"]
"""Who said a message."""

TaskName = Literal["segment", "note", "trace", "resolve", "reconcile", "split", "relevance", "distill"]
"""A model task engram asks for."""

ModelRequestName = Literal["segment", "note", "trace", "resolve", "reconcile", "split", "relevance", "distill", "embed"]
"""A task name, or ``"embed"`` for embeddings (as the model's health counts them)."""

ItemKind = Literal["instructions", "facts", "message", "warning", "recall"]
"""What a view item is."""

EpisodeState = Literal["live", "leaving", "sealed", "forgotten"]
"""Where an episode is: in view (live, leaving) or out of it (sealed, forgotten)."""

FadeReason = Literal["ceiling", "sleep", "ahead", "idle"]
"""Why a fade started."""

FactKind = Literal["fact", "agreed", "decided", "done", "blocked", "next", "preference"]
"""A plain fact, a milestone (agreed ... next), or a preference."""

SearchList = Literal["fact_words", "fact_meaning", "passage_words", "passage_meaning", "view_words", "view_meaning"]
"""The ranked list a search hit was found in."""

RecallJudgment = Literal["relevant", "fallback", "ranked"]
"""Why a recalled item survived: judged relevant; kept for its rank when the
walk failed; or kept for its rank with no judgment."""

RecallKind = Literal["fact", "passage", "message"]
"""The kinds of recallable items (``message``: one in view, in search results only)."""


# ---- Messages and the view -------------------------------------------------------


class ToolCall(TypedDict):
    """A tool call as the engine keeps it."""

    id: str
    name: str
    #: Arguments as the model wrote them (usually JSON text).
    arguments: str


class Message(TypedDict):
    """A message as the memory keeps it, forever (:meth:`Memory.messages`)."""

    id: int
    role: Role
    content: str
    tool_calls: list[ToolCall]
    tool_call_id: str | None
    #: When it was said (ms since the Unix epoch).
    at: int
    tokens: int
    #: Probability that it starts a new concept (None where no cut is allowed
    #: or the judgment failed).
    boundary: float | None
    #: False only while its boundary judgment waits.
    judged: bool
    client_id: str | None
    #: True once erased on request (content and tool calls gone, 0 tokens).
    erased: bool
    #: Your data about it (``add_message(metadata=...)``), or None.
    metadata: dict[str, Any] | None
    thread: str
    #: For a regenerated answer: the user message it answers again.
    replaces: int | None
    #: The regenerated answer that replaced it (an alternative, not shown), or None.
    replaced_by: int | None


class ViewItem(TypedDict):
    """One entry of the view (absent ids are None, absent lists empty)."""

    kind: ItemKind
    role: Role
    text: str
    tokens: int
    message: int | None
    episode: int | None
    facts: list[int]
    tool_calls: list[ToolCall]
    tool_call_id: str | None


class View(TypedDict):
    """What the model should see, with its size against the ceiling."""

    items: list[ViewItem]
    tokens: int
    ceiling: int
    #: Why the view is over the ceiling, when it is; else None.
    over_ceiling: str | None


class OpenAIFunction(TypedDict):
    """The function of a rendered tool call."""

    name: str
    arguments: str


class OpenAIFunctionToolCall(TypedDict):
    """A tool call of the rendered view."""

    id: str
    type: Literal["function"]
    function: OpenAIFunction


class OpenAISystemMessage(TypedDict):
    """A system message of the rendered view (facts, warnings, recall
    blocks and your instructions are system messages too)."""

    role: Literal["system"]
    content: str


class OpenAIUserMessage(TypedDict):
    role: Literal["user"]
    content: str


class _OpenAIAssistantBase(TypedDict):
    role: Literal["assistant"]
    content: str


class OpenAIAssistantMessage(_OpenAIAssistantBase, total=False):
    """An assistant message; ``tool_calls`` only when it made some."""

    tool_calls: list[OpenAIFunctionToolCall]


class OpenAIToolMessage(TypedDict):
    role: Literal["tool"]
    content: str
    tool_call_id: str


OpenAIMessage = OpenAISystemMessage | OpenAIUserMessage | OpenAIAssistantMessage | OpenAIToolMessage
"""One message of :meth:`Memory.render_openai`, as OpenAI-compatible chat
APIs take it (narrow on ``role``)."""


class _ResponsesTextMessage(TypedDict):
    type: Literal["message"]
    role: Literal["system", "user"]
    content: str


class ResponsesTextMessage(_ResponsesTextMessage, total=False):
    """A system or user message item of :meth:`Memory.render_responses`;
    ``id`` (``msg_engram_<message>``) on a stored message's item."""

    id: str


class ResponsesOutputText(TypedDict):
    """An assistant's text as one ``output_text`` part."""

    type: Literal["output_text"]
    text: str
    annotations: list[Any]


class _ResponsesAssistantMessage(TypedDict):
    type: Literal["message"]
    role: Literal["assistant"]
    status: Literal["completed"]
    content: list[ResponsesOutputText]


class ResponsesAssistantMessage(_ResponsesAssistantMessage, total=False):
    """An assistant message item; ``id`` on a stored message's item."""

    id: str


class _ResponsesFunctionCall(TypedDict):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str


class ResponsesFunctionCall(_ResponsesFunctionCall, total=False):
    """One tool call of an assistant message (``id``:
    ``fc_engram_<message>_<k>``)."""

    id: str


class _ResponsesFunctionCallOutput(TypedDict):
    type: Literal["function_call_output"]
    call_id: str
    output: str


class ResponsesFunctionCallOutput(_ResponsesFunctionCallOutput, total=False):
    """A tool message (``id``: ``fco_engram_<message>``)."""

    id: str


ResponsesItem = ResponsesTextMessage | ResponsesAssistantMessage | ResponsesFunctionCall | ResponsesFunctionCallOutput
"""One input item of :meth:`Memory.render_responses`, as the OpenAI
Responses API takes it (narrow on ``type``, then ``role``)."""


# ---- Episodes, facts, entities, traces, fades --------------------------------------


class StateChange(TypedDict):
    state: EpisodeState
    at: int
    #: The fade that moved it, if one did.
    fade: int | None


class NoteFailure(TypedDict):
    at: int
    error: str


class EpisodeInfo(TypedDict):
    """An episode with its activation now and its significance."""

    id: int
    #: First and last message ids.
    first: int
    last: int
    formed_at: int
    tokens: int
    state: EpisodeState
    history: list[StateChange]
    traces: list[int]
    facts: list[int]
    note_failures: list[NoteFailure]
    #: When its facts were last written.
    noted: int | None
    #: When it left the view without facts (its note failed; maintain retries it).
    deferred: int | None
    #: When its note was given up after ``note_retries`` more failures.
    abandoned: int | None
    activation: float
    significance: float
    thread: str


class Fade(TypedDict):
    """One fade, as recorded."""

    id: int
    reason: FadeReason
    #: When it started.
    at: int
    #: View size when it started.
    view_tokens: int
    #: The ceiling then.
    ceiling: int
    #: The size it fades down to.
    landing: int
    #: The recent turn size used for the landing.
    turn_tokens: int
    finished_at: int | None
    #: View size when it finished.
    view_after: int | None
    #: The thread whose view it faded.
    thread: str


class _NewFactBase(TypedDict):
    subject: str
    predicate: str
    object: str
    sentence: str


class NewFact(_NewFactBase, total=False):
    """A fact as the chat model writes it with the note tool (``kind``: ``"fact"`` when left out)."""

    kind: FactKind


class _NoteArgsBase(TypedDict):
    facts: list[NewFact]


class NoteArgs(_NoteArgsBase, total=False):
    """Arguments of the note tool (``episode``: the oldest leaving one when left out)."""

    episode: int


class NoteOutcome(TypedDict):
    """What :meth:`Memory.note` wrote."""

    episode: int
    added: list[int]
    merged: list[int]
    retired: list[int]
    sealed: bool


class Restatement(TypedDict):
    """A later episode that said a fact again."""

    episode: int
    sentence: str
    at: int


class Retirement(TypedDict):
    """The fact that retired another (contradicted it), and when."""

    by: int
    at: int


class Fact(TypedDict):
    """A fact of the knowledge graph."""

    id: int
    #: Entity ids.
    subject: int
    predicate: str
    object: int
    sentence: str
    kind: FactKind
    episode: int
    said_at: int
    noted_at: int
    embedding: list[float]
    #: The messages it was noted from (ids), when its note named them.
    sources: list[int]
    restated: list[Restatement]
    retired: Retirement | None
    #: True once erased on request: sentence, predicate and embedding are gone.
    erased: bool


class Remembered(TypedDict):
    """What became of a fact you stated (:meth:`Memory.remember`,
    :meth:`Memory.revise`)."""

    #: The fact it is now: a new one, or the held fact it restated.
    fact: int
    #: Whether it restated (merged into) a held fact.
    merged: bool
    #: Held facts it retired (for ``revise``, the revised fact among them).
    retired: list[int]


class HistoryMention(TypedDict):
    """A fact's ``added`` or ``merged`` step: ``episode`` 0 is the host."""

    kind: Literal["added", "merged"]
    episode: int
    sentence: str
    at: int


class HistoryLink(TypedDict):
    """A fact's ``retired`` (it retired ``fact``) or ``retired_by`` step."""

    kind: Literal["retired", "retired_by"]
    fact: int
    at: int


class HistoryErased(TypedDict):
    """A fact's last step when it was erased on request."""

    kind: Literal["erased"]


HistoryEntry = HistoryMention | HistoryLink | HistoryErased


class FactHistory(TypedDict):
    """What happened to one fact (:meth:`Memory.history`), oldest first."""

    fact: int
    live: bool
    entries: list[HistoryEntry]


class FactFilter(TypedDict, total=False):
    """Which facts a page keeps (:meth:`Memory.facts_page`): every key given must hold."""

    #: Only facts that hold (True) or only retired and erased ones (False).
    live: bool
    kinds: list[FactKind]
    #: Only facts whose subject or object is this entity.
    entity: int
    #: Only facts you stated (True) or only noted ones (False).
    stated: bool


class FactPage(TypedDict):
    """A page of facts in id order (:meth:`Memory.facts_page`)."""

    items: list[Fact]
    #: The next page's ``cursor``; None when nothing the filter keeps follows.
    next: str | None


class MessagePage(TypedDict):
    """A page of messages in id order (:meth:`Memory.messages_page`)."""

    items: list[Message]
    next: str | None


class EpisodePage(TypedDict):
    """A page of episodes in id order (:meth:`Memory.episodes_page`)."""

    items: list[EpisodeInfo]
    next: str | None


class ResolutionPlain(TypedDict):
    how: Literal["new", "exact", "judged"]


class ResolutionSimilar(TypedDict):
    how: Literal["similar"]
    cosine: float


Resolution = ResolutionPlain | ResolutionSimilar
"""How an alias was resolved to its entity: ``{"how": "new" | "exact" |
"judged"}`` or ``{"how": "similar", "cosine": c}``."""


class Alias(TypedDict):
    name: str
    normal: str
    resolution: Resolution
    at: int


class Entity(TypedDict):
    """An entity of the knowledge graph with its aliases."""

    id: int
    name: str
    aliases: list[Alias]
    embedding: list[float]
    #: True once erased on request: names and embedding are gone.
    erased: bool


class Erased(TypedDict):
    """What :meth:`Memory.erase` removed: ids only."""

    messages: list[int]
    facts: list[int]
    entities: list[int]


class TraceCauseEncoding(TypedDict):
    kind: Literal["encoding"]


class TraceCauseFact(TypedDict):
    kind: Literal["fact", "recall"]
    fact: int


TraceCause = TraceCauseEncoding | TraceCauseFact
"""Why a trace was written: ``{"kind": "encoding"}`` or ``{"kind": "fact" |
"recall", "fact": id}``."""


class Trace(TypedDict):
    """One time a fact mattered to an episode (or its encoding)."""

    id: int
    episode: int
    cause: TraceCause
    yes: bool
    strength: float
    at: int


# ---- Recall and search ----------------------------------------------------------


class RecallItem(TypedDict):
    """A recalled item: ``{"kind": "fact" | "passage" | "message", "id": n}``
    (``message``, a message in view now, only in search results)."""

    kind: RecallKind
    id: int


class Distillation(TypedDict):
    """Distill's decision on a recall block."""

    at: int
    kept: list[RecallItem]
    failed: bool


DistilledBlock = list[Any]
"""A distilled recall block as the pair ``[block id, Distillation]``."""

SleptThread = list[Any]
"""A thread put to sleep as the pair ``[thread name, fade id]``."""


class Hit(TypedDict):
    """Where a search found an item: ``{"list": "fact_words", "query", "rank"}``."""

    list: SearchList
    #: 0 for the whole message, n for part n; one past the last part for the
    #: message expanded by its best hits' shared words.
    query: int
    rank: int


class Recalled(TypedDict):
    """One item of a recall block."""

    item: RecallItem
    hits: list[Hit]
    fused_rank: int | None
    hop: int
    via: int | None
    judgment: RecallJudgment


class RecallBlock(TypedDict):
    """A recall block placed before a user message."""

    id: int
    message: int
    at: int
    parts: list[str]
    split_failed: bool
    walk_failed: bool
    items: list[Recalled]
    distilled: Distillation | None
    #: When it gave way to keep recall within its share of the view.
    gave_way: int | None


SearchFilter = TypedDict(
    "SearchFilter",
    {
        "thread": str,
        "from": int,
        "to": int,
        "kinds": list[RecallKind],
        "entity": int,
        "metadata": dict[str, Any],
    },
    total=False,
)
"""Which items a search may return (every key given must hold): ``thread``,
``from`` and ``to`` (ms, inclusive), ``kinds``, ``entity`` (an entity id),
``metadata`` (top-level keys equal to a source message's)."""


class SearchHit(TypedDict):
    """One result of :meth:`Memory.search`."""

    item: RecallItem
    #: Cut at about 1,000 tokens: :meth:`Memory.hit_text` gives it whole.
    text: str
    said_at: int
    score: float
    hits: list[Hit]
    hop: int
    retired: bool
    #: The messages it came from (ids).
    sources: list[int]


# ---- Explanations ----------------------------------------------------------------


class EpisodeMove(TypedDict):
    state: EpisodeState
    at: int
    fade: Fade | None


class EpisodeExplanation(TypedDict):
    """Why an episode is in or out of view (``summary`` says it in words)."""

    episode: int
    state: EpisodeState
    in_view: bool
    activation: float
    significance: float
    traces: list[Trace]
    moves: list[EpisodeMove]
    summary: str


class FactSource(TypedDict):
    """An episode that wrote a fact, and its state now."""

    episode: int
    state: EpisodeState


class FactExplanation(TypedDict):
    """Why a fact is in the facts block, out of it, or retired."""

    fact: int
    sentence: str
    #: The entities' names.
    subject: str
    object: str
    in_facts_block: bool
    episodes: list[FactSource]
    retired_by: Retirement | None
    traces: list[Trace]
    #: How many episodes judged it did not matter to them.
    declined: int
    summary: str


class MessageExplanation(TypedDict):
    """Why a message is shown or not (:meth:`Memory.explain_message`)."""

    message: int
    thread: str
    in_view: bool
    #: The episode holding it (None while it is in the open stretch).
    episode: int | None
    replaces: int | None
    replaced_by: int | None
    #: A regenerated answer's replaced messages; a replaced one's fellow alternatives.
    alternatives: list[int]
    summary: str


class RecallExplanation(TypedDict):
    """Why a fact was recalled in one block."""

    block: int
    message: int
    at: int
    hits: list[Hit]
    fused_rank: int | None
    hop: int
    via: int | None
    judgment: RecallJudgment
    distill_kept: bool | None
    summary: str


class NoteToolFunction(TypedDict):
    name: Literal["note"]
    description: str
    #: The JSON schema of the arguments (:class:`NoteArgs`).
    parameters: dict[str, Any]


class NoteTool(TypedDict):
    """The ``note`` tool in OpenAI ``tools`` format."""

    type: Literal["function"]
    function: NoteToolFunction


# ---- Calls' results ---------------------------------------------------------------


class Degraded(TypedDict):
    """A step that went on without the model: its task failed every attempt."""

    task: TaskName
    error: str
    attempts: int
    at: int
    #: What the step did instead ("no cut judged here", ...).
    effect: str


class Maintained(TypedDict):
    """What :meth:`Memory.maintain` did (``distilled``: ``[block, distillation]`` pairs)."""

    judged: list[int]
    formed: list[int]
    distilled: list[DistilledBlock]
    fade: int | None
    sealed: list[int]
    deferred: list[int]
    noted_late: list[int]
    abandoned: list[int]
    gave_way: list[int]
    #: The thread idle for ``sleep_after_hours`` put to sleep (one a call, the
    #: call's own first, else the longest idle): ``[thread, fade]`` pairs.
    slept: list[SleptThread]
    degraded: list[Degraded]


class Added(TypedDict):
    """What :meth:`Memory.add_message` did (``distilled``: ``[block, distillation]`` or None)."""

    message: int
    formed: list[int]
    slept: bool
    fade: int | None
    recall: int | None
    distilled: DistilledBlock | None
    degraded: list[Degraded]
    maintained: Maintained | None
    maintain_error: str | None
    duplicate: bool


class Pending(TypedDict):
    """Work waiting for :meth:`Memory.maintain`."""

    unjudged: list[int]
    undistilled: list[int]
    leaving: list[int]
    awaiting_note: list[int]
    fade_ahead: bool
    #: Threads idle for ``sleep_after_hours`` that maintain will put to sleep,
    #: one a call, in this order.
    idle_threads: list[str]


class Batch(TypedDict):
    """What :meth:`Memory.add_messages` did: the new messages' ids in order,
    and the ids of those skipped because the memory held their client id."""

    messages: list[int]
    duplicates: list[int]


class ThreadInfo(TypedDict):
    """One thread, as :meth:`Memory.threads` lists it."""

    thread: str
    #: Its first user message (or first message), one line, at most 80 characters.
    title: str
    first_message: int
    last_message: int
    first_at: int
    last_at: int
    messages: int
    user_messages: int
    episodes: int
    #: Its episodes in its view now (live and leaving).
    episodes_in_view: int


class LastModelError(TypedDict):
    """The last failed model request."""

    task: ModelRequestName
    error: str
    at: int


class ModelHealth(TypedDict):
    """Model requests counted since the memory was opened (per task name, ``embed`` for embeddings)."""

    calls: dict[str, int]
    failed: dict[str, int]
    consecutive_failures: int
    last_error: LastModelError | None
    degraded_steps: int
    #: Answers taken after a repair, per repair (``reasoning``, ``fence``, ...).
    repairs: dict[str, int]
    truncated: int


class RoundTrips(TypedDict):
    """Store calls a handle made since it opened, by kind, and their sum."""

    get: int
    #: Batched reads (a store's ``get_many``): one each, however many keys.
    get_many: int
    put: int
    delete: int
    list: int
    write_if: int
    total: int


class Stats(TypedDict):
    """Counts, the view's size, pending work and the model's health.
    ``episodes``: ``[live, leaving, sealed, forgotten]``; ``facts``:
    ``[live, retired]``; ``traces``: ``[all, yes]``."""

    messages: int
    episodes: list[int]
    open_messages: int
    facts: list[int]
    entities: int
    traces: list[int]
    fades: int
    log_entries: int
    view_tokens: int
    ceiling: int
    pending: Pending
    model: ModelHealth
    storage_warnings: list[str]
    round_trips: RoundTrips
