"""engram from Python: long-term memory for LLM chat agents.

This package runs the engram WASI component (``engram.wasm``, built from the
engram crate with ``scripts/build-component``) in wasmtime (PyPI
``wasmtime==50.0.1``) and gives it what it imports from its host:

* a **store**: :class:`SQLiteStore` (a real file, one transaction per
  commit), :class:`MemoryStore`, or any object with the same five methods
  (``get``, ``put``, ``delete``, ``list_prefix``, ``write_if``, and
  optionally ``get_many``; keys are ``str``, values ``bytes``, kept
  exactly as given);
* a **model**: :class:`OpenAIModel` for any OpenAI-compatible endpoint
  (urllib only), :class:`CallableModel` around your own functions, or any
  object with ``complete(request)`` and ``embed(texts)``; or none, for the
  **built-in offline model** inside the component (rules and a hashing
  embedder: no LLM, no network, no key; for demos and tests, plug in a real
  LLM for real use). ``embedder="offline"`` keeps your model for the tasks
  and embeds with the offline embedder (for an LLM with no embeddings);
* a **clock**: a function returning milliseconds since the Unix epoch
  (default: the wall clock).

::

    from engram_host import Memory, SQLiteStore, OpenAIModel

    memory = Memory(
        "alice",
        store=SQLiteStore("memory.db"),
        model=OpenAIModel("https://api.openai.com/v1", api_key="sk-...",
                          model="gpt-4o-mini", embedding_model="text-embedding-3-small"),
    )
    memory.add_message("user", "Let's plan the Lisbon offsite.")
    messages = memory.render_openai()   # what to send to the chat model

    demo = Memory("demo")               # the offline model: nothing to set up

Install with ``pip install ./hosts/python`` (the wheel bundles the
component as ``engram_host/engram.wasm``, found next to this file; see
:func:`default_component_path`). From asyncio, :class:`AsyncMemory` runs each
call in a thread.

Every method maps to one call of the component's ``memory`` resource.
Results are plain Python values: records are dicts with the same snake_case
fields as the npm package's records (``Added``, ``Stats``, ... typed here as
``TypedDict``s; ``stats()["episodes"]`` is ``[live, leaving, sealed,
forgotten]``, a distilled block ``[block, distillation]``, a recalled item
``{"kind": "fact", "id": n}``), enums are strings, and other variants with a
payload become ``{"kind": case, "value": payload}``. Errors raise :class:`EngramError`
subclasses; a call that raises has changed nothing in the store.

A model task that fails every attempt does not fail the call: the step
degrades (no cut judged here, a recall block kept whole, a note deferred...)
and is reported: in the call's result (``added["degraded"]``), to the
``on_degraded`` callback (once per step, after every call), and counted in
``stats()["model"]``. With ``config={"strict": True}`` such a step raises
:class:`ModelError` instead, and nothing is written.

**Deadlines.** No callback can block a memory forever: every clock, store
and model callback runs on a worker thread of the :class:`Memory` and is
waited for at most its timeout (``model_timeout=60``, ``store_timeout=10``,
``clock_timeout=10`` seconds, set on the constructor). A model call that
does not answer in time is a failed model call (the step degrades; with
``strict`` the call raises :class:`ModelError`), a store call a failed store
call (the call raises :class:`StoreError`), both with a
:class:`CallbackTimeout` as ``__cause__``; a clock raises
:class:`CallbackTimeout` out of the call. The hung thread is abandoned and
its late answer ignored; the next call proceeds. (A ``write_if`` that timed
out may still land later: the memory reloads from the store on its next
call, and an add retried with the same ``client_id`` is not stored twice.)

**Client ids.** ``add_message(..., client_id="...")`` gives a message your
own id: an add whose outcome was lost can be retried with the same id, and
the retry writes nothing and returns the first add's message id with
``"duplicate": True``.

**Threads.** One memory can hold many chats: ``add_message(...,
thread="trip")`` (1 to 128 characters; none is ``"main"``). Each thread has
its own view, turns and episodes (``view(thread=...)``,
``render_openai(thread=...)``, ``pending``, ``maintain``, ``end_turn``
take ``thread=`` too; without it they are the main thread's); facts are
shared, so what one chat taught is in every thread's facts block.
:meth:`Memory.threads` lists them; ``erase("thread", name)`` erases one.
History is loaded with :meth:`Memory.add_messages` (each message with its
own ``at``), then ``maintain(thread=...)`` until ``pending(thread=...)`` is
empty.

Input engram cannot take (a role that is not one of the four, text that is
not valid Unicode such as a lone surrogate, a ``note`` call whose arguments
are not JSON, a clock reading that is not a finite number, a token count
that is not 0..2**32-1) raises :class:`InvalidInput` and changes nothing.

**The clock** returns milliseconds since the Unix epoch (the default is
``int(time.time() * 1000)``). A reading before 2000 (``int(time.time())``,
seconds, dates every message in January 1970) or after 3000 raises
:class:`InvalidInput` naming the likely mistake ("did you pass seconds?") and
writes nothing. A reading earlier than the memory's last stamp (a clock
stepped back) is clamped to that stamp, so stamps never go back, and
reported as the last line of ``stats()["storage_warnings"]`` (starting
``clock:``).

A :class:`Memory` runs one call at a time (calls from several threads are
serialised by a lock). Several :class:`Memory` objects, even in several
processes, may share one store and namespace: each commit is a
compare-and-set on the log head, and the loser reloads and retries.

This file is the package's public map: every public name is imported from
the module that defines it and listed in ``__all__``. The modules, one
concept each: :mod:`~engram_host.memory` (:class:`Memory`),
:mod:`~engram_host.async_memory` (:class:`AsyncMemory`),
:mod:`~engram_host.records` (the ``TypedDict`` records),
:mod:`~engram_host.errors` (:class:`EngramError` and the WIT errors),
:mod:`~engram_host.stores` (the store protocol, :class:`MemoryStore`,
:class:`SQLiteStore`), :mod:`~engram_host.postgres` (``PostgresStore``),
:mod:`~engram_host.models` (the model protocol, :class:`OpenAIModel`,
:class:`CallableModel`, the offline model choice),
:mod:`~engram_host.runtime` (the component in wasmtime: finding, compiling,
linking the host imports, their worker thread) and
:mod:`~engram_host.convert` (values across the WIT boundary, both ways).
"""

from __future__ import annotations

from engram_host.async_memory import AsyncMemory
from engram_host.errors import (
    Busy,
    CallbackTimeout,
    ClosedError,
    CorruptData,
    EngramError,
    InvalidInput,
    ModelError,
    StoreError,
    UnsupportedVersion,
)
from engram_host.memory import MAX_BATCH, Memory
from engram_host.models import CallableModel, Model, ModelUnavailable, OpenAIModel, TaskModel, TaskRequest
from engram_host.records import (
    Added,
    Alias,
    Batch,
    Degraded,
    Distillation,
    DistilledBlock,
    Entity,
    EpisodeExplanation,
    EpisodeInfo,
    EpisodeMove,
    EpisodePage,
    EpisodeState,
    Erased,
    Fact,
    FactExplanation,
    FactFilter,
    FactHistory,
    FactKind,
    FactPage,
    FactSource,
    Fade,
    FadeReason,
    HistoryEntry,
    Hit,
    ItemKind,
    LastModelError,
    Maintained,
    Message,
    MessageExplanation,
    MessagePage,
    ModelHealth,
    ModelRequestName,
    NewFact,
    NoteArgs,
    NoteFailure,
    NoteOutcome,
    NoteTool,
    OpenAIAssistantMessage,
    OpenAIFunctionToolCall,
    OpenAIMessage,
    OpenAISystemMessage,
    OpenAIToolMessage,
    OpenAIUserMessage,
    Pending,
    RecallBlock,
    Recalled,
    RecallExplanation,
    RecallItem,
    RecallJudgment,
    RecallKind,
    Remembered,
    Resolution,
    ResponsesAssistantMessage,
    ResponsesFunctionCall,
    ResponsesFunctionCallOutput,
    ResponsesItem,
    ResponsesOutputText,
    ResponsesTextMessage,
    Restatement,
    Retirement,
    Role,
    RoundTrips,
    SearchFilter,
    SearchHit,
    SearchList,
    SleptThread,
    StateChange,
    Stats,
    TaskName,
    ThreadInfo,
    ToolCall,
    Trace,
    TraceCause,
    View,
    ViewItem,
)
from engram_host.runtime import default_component_path
from engram_host.runtime import load as _load  # noqa: F401  (the engine cache, for the host tests)
from engram_host.stores import MemoryStore, SQLiteStore, Store, StoreConflict

__all__ = [  # noqa: RUF022 (grouped by concept, as above)
    # The memory
    "Memory",
    "AsyncMemory",
    "MAX_BATCH",
    "default_component_path",
    # Stores
    "Store",
    "SQLiteStore",
    "MemoryStore",
    "StoreConflict",
    # Models
    "Model",
    "TaskModel",
    "TaskRequest",
    "OpenAIModel",
    "CallableModel",
    "ModelUnavailable",
    # Errors
    "EngramError",
    "InvalidInput",
    "StoreError",
    "ModelError",
    "CorruptData",
    "UnsupportedVersion",
    "Busy",
    "ClosedError",
    "CallbackTimeout",
    # Records
    "Added",
    "Alias",
    "Batch",
    "Degraded",
    "Distillation",
    "DistilledBlock",
    "Entity",
    "EpisodeExplanation",
    "EpisodeInfo",
    "EpisodeMove",
    "EpisodeState",
    "Erased",
    "Fact",
    "FactExplanation",
    "FactFilter",
    "FactHistory",
    "FactKind",
    "FactPage",
    "FactSource",
    "Fade",
    "FadeReason",
    "Hit",
    "ItemKind",
    "LastModelError",
    "Maintained",
    "Message",
    "MessageExplanation",
    "ModelHealth",
    "ModelRequestName",
    "NewFact",
    "EpisodePage",
    "HistoryEntry",
    "MessagePage",
    "Remembered",
    "NoteArgs",
    "NoteFailure",
    "NoteOutcome",
    "NoteTool",
    "OpenAIAssistantMessage",
    "OpenAIFunctionToolCall",
    "OpenAIMessage",
    "OpenAISystemMessage",
    "OpenAIToolMessage",
    "OpenAIUserMessage",
    "Pending",
    "RecallBlock",
    "RecallExplanation",
    "RecallItem",
    "RecallJudgment",
    "RecallKind",
    "Recalled",
    "Resolution",
    "ResponsesAssistantMessage",
    "ResponsesFunctionCall",
    "ResponsesFunctionCallOutput",
    "ResponsesItem",
    "ResponsesOutputText",
    "ResponsesTextMessage",
    "Restatement",
    "Retirement",
    "Role",
    "RoundTrips",
    "SearchFilter",
    "SearchHit",
    "SearchList",
    "SleptThread",
    "StateChange",
    "Stats",
    "TaskName",
    "ThreadInfo",
    "ToolCall",
    "Trace",
    "TraceCause",
    "View",
    "ViewItem",
]
