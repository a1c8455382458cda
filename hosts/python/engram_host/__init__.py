"""engram from Python: long-term memory for LLM chat agents.

This module runs the engram WASI component (``engram.wasm``, built from the
engram crate with ``scripts/build-component``) in wasmtime (PyPI
``wasmtime==50.0.1``) and gives it what it imports from its host:

* a **store**: :class:`SQLiteStore` (a real file, one transaction per
  commit), :class:`MemoryStore`, or any object with the same five methods
  (``get``, ``put``, ``delete``, ``list_prefix``, ``write_if``; keys are
  ``str``, values ``bytes``, kept exactly as given);
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
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import io
import json
import math
import os
import queue
import random
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, TypedDict

import wasmtime
from wasmtime.component import Component, Linker, Record, Variant

__all__ = [
    "Memory",
    "TaskRequest",
    "SQLiteStore",
    "MemoryStore",
    "OpenAIModel",
    "CallableModel",
    "EngramError",
    "InvalidInput",
    "StoreError",
    "ModelError",
    "CorruptData",
    "UnsupportedVersion",
    "Busy",
    "ClosedError",
    "StoreConflict",
    "CallbackTimeout",
    "default_component_path",
    "AsyncMemory",
    "Added",
    "Maintained",
    "Pending",
    "Stats",
    "ModelHealth",
    "Degraded",
    "Distillation",
    "RecallItem",
    "View",
    "ViewItem",
    "Erased",
    "Batch",
    "ThreadInfo",
    "MAX_BATCH",
]

_WIT_VERSION = "0.1.0"
_ENGINE_EXPORT = f"engram:memory/engine@{_WIT_VERSION}"
_OFFLINE_EXPORT = f"engram:memory/offline@{_WIT_VERSION}"


# ---- Records ----------------------------------------------------------------
# The shapes of what the calls return: plain dicts with the same snake_case
# fields as the npm package's records (js/index.d.ts) and the engine's JSON.
# Pairs are lists (``[block, distillation]``), counts by kind are lists in
# the order given, tagged unions are dicts with a ``kind`` (or ``how``).


class RecallItem(TypedDict):
    """A recalled item: ``{"kind": "fact" | "passage" | "message", "id": n}``
    (``message``, a message in view now, only in search results)."""

    kind: str
    id: int


class Distillation(TypedDict):
    """Distill's decision on a recall block."""

    at: int
    kept: List[RecallItem]
    failed: bool


class Degraded(TypedDict):
    """A step that went on without the model: its task failed every attempt."""

    task: str
    error: str
    attempts: int
    at: int
    effect: str


class Maintained(TypedDict):
    """What :meth:`Memory.maintain` did (``distilled``: ``[block, distillation]`` pairs)."""

    judged: List[int]
    formed: List[int]
    distilled: List[List[Any]]
    fade: Optional[int]
    sealed: List[int]
    deferred: List[int]
    noted_late: List[int]
    abandoned: List[int]
    gave_way: List[int]
    #: The thread idle for ``sleep_after_hours`` put to sleep (one a call, the
    #: call's own first, else the longest idle): ``[thread, fade]`` pairs.
    slept: List[List[Any]]
    degraded: List[Degraded]


class Added(TypedDict):
    """What :meth:`Memory.add_message` did (``distilled``: ``[block, distillation]`` or None)."""

    message: int
    formed: List[int]
    slept: bool
    fade: Optional[int]
    recall: Optional[int]
    distilled: Optional[List[Any]]
    degraded: List[Degraded]
    maintained: Optional[Maintained]
    maintain_error: Optional[str]
    duplicate: bool


class Pending(TypedDict):
    """Work waiting for :meth:`Memory.maintain`."""

    unjudged: List[int]
    undistilled: List[int]
    leaving: List[int]
    awaiting_note: List[int]
    fade_ahead: bool
    #: Threads idle for ``sleep_after_hours`` that maintain will put to sleep,
    #: one a call, in this order.
    idle_threads: List[str]


class Batch(TypedDict):
    """What :meth:`Memory.add_messages` did: the new messages' ids in order,
    and the ids of those skipped because the memory held their client id."""

    messages: List[int]
    duplicates: List[int]


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
    task: str
    error: str
    at: int


class ModelHealth(TypedDict):
    """Model requests counted since the memory was opened (per task name, ``embed`` for embeddings)."""

    calls: Dict[str, int]
    failed: Dict[str, int]
    consecutive_failures: int
    last_error: Optional[LastModelError]
    degraded_steps: int
    repairs: Dict[str, int]
    truncated: int


class Erased(TypedDict):
    """What :meth:`Memory.erase` removed: ids only."""

    messages: List[int]
    facts: List[int]
    entities: List[int]


class Stats(TypedDict):
    """Counts, the view's size, pending work and the model's health.
    ``episodes``: ``[live, leaving, sealed, forgotten]``; ``facts``:
    ``[live, retired]``; ``traces``: ``[all, yes]``."""

    messages: int
    episodes: List[int]
    open_messages: int
    facts: List[int]
    entities: int
    traces: List[int]
    fades: int
    log_entries: int
    view_tokens: int
    ceiling: int
    pending: Pending
    model: ModelHealth
    storage_warnings: List[str]


class ViewItem(TypedDict):
    """One entry of the view (absent ids are None, absent lists empty)."""

    kind: str
    role: str
    text: str
    tokens: int
    message: Optional[int]
    episode: Optional[int]
    facts: List[int]
    tool_calls: List[Dict[str, str]]
    tool_call_id: Optional[str]


class View(TypedDict):
    """What the model should see, with its size against the ceiling."""

    items: List[ViewItem]
    tokens: int
    ceiling: int
    #: Why the view is over the ceiling, when it is; else None.
    over_ceiling: Optional[str]


# ---- Errors ---------------------------------------------------------------


class EngramError(Exception):
    """An engram call failed. The memory is as it was before the call.

    ``code`` is the WIT ``memory-error`` case (``invalid-input``, ``store``,
    ``model``, ``corrupt``, ``unsupported-version``, ``busy``). When a host
    callback (store or model) raised during the call, that exception is the
    ``__cause__``.
    """

    code = "engram"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidInput(EngramError):
    """The input cannot be accepted (empty message, bad role order, unknown id,
    bad namespace or config). Fix the input and call again."""

    code = "invalid-input"


class StoreError(EngramError):
    """The store failed; nothing was written. Retry when the store is back."""

    code = "store"


class ModelError(EngramError):
    """The model failed on a step that cannot degrade (or on any step, with
    ``"strict": true`` in the config); nothing was written. When the model
    raised, its exception is the ``__cause__``."""

    code = "model"


class CorruptData(EngramError):
    """The stored data cannot be read; restore from an export."""

    code = "corrupt"


class UnsupportedVersion(EngramError):
    """The data was written by a format version this build cannot read."""

    code = "unsupported-version"

    def __init__(self, message: str, found: int, supported: int):
        super().__init__(message)
        self.found = found
        self.supported = supported


class Busy(EngramError):
    """Other writers kept winning the log head; nothing was written. Retry later."""

    code = "busy"


class ClosedError(EngramError):
    """A call on a :class:`Memory` after :meth:`Memory.close`. Nothing was
    read or written; open a new one (the store keeps everything)."""

    code = "closed"


class CallbackTimeout(TimeoutError):
    """A host callback (clock, store or model) did not answer within its
    timeout. The ``__cause__`` of the :class:`StoreError` or
    :class:`ModelError` it caused (or of the degraded step's error); a clock
    that times out raises it out of the call."""


class StoreConflict(Exception):
    """Raise from a custom store's ``write_if`` (or return ``False``) when the
    guard key does not hold the expected value."""


_ERRORS = {cls.code: cls for cls in (InvalidInput, StoreError, ModelError, CorruptData, Busy)}


def _error(v: Variant) -> EngramError:
    if v.tag == "unsupported-version":
        found, supported = v.payload.found, v.payload.supported
        return UnsupportedVersion(
            f"unsupported format version {found} (this build reads version {supported})", found, supported
        )
    cls = _ERRORS.get(v.tag, EngramError)
    return cls(str(v.payload))


# ---- Stores ---------------------------------------------------------------


def _stored(value: Any) -> Optional[bytes]:
    """A value read back from a built-in store as bytes. Rows written as
    text by engram before store values became bytes are their UTF-8."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


class MemoryStore:
    """A store in a dict of ``bytes`` values: fast, and gone with the
    process. Good for tests."""

    def __init__(self) -> None:
        self.data: Dict[str, bytes] = {}
        # Callbacks run on worker threads, and an abandoned (timed-out) one
        # may still run while the next call goes on.
        self._lock = threading.Lock()

    def get(self, key: str) -> Optional[bytes]:
        with self._lock:
            return self.data.get(key)

    def put(self, key: str, value: bytes) -> None:
        with self._lock:
            self.data[key] = bytes(value)

    def delete(self, key: str) -> None:
        with self._lock:
            self.data.pop(key, None)

    def list_prefix(self, prefix: str) -> List[str]:
        with self._lock:
            keys = [k for k in self.data if k.startswith(prefix)]
        return sorted(keys, key=lambda k: k.encode())

    def write_if(
        self, guard: str, expected: Optional[bytes], writes: Sequence[Tuple[str, Optional[bytes]]]
    ) -> bool:
        with self._lock:
            if self.data.get(guard) != expected:
                return False
            for key, value in writes:
                if value is None:
                    self.data.pop(key, None)
                else:
                    self.data[key] = bytes(value)
            return True


class SQLiteStore:
    """A store in one SQLite file (Python's sqlite3).

    One table ``engram_kv(key TEXT, value BLOB)``; many memories
    (namespaces) can share a file. ``write_if`` checks the guard and applies
    every write inside one ``BEGIN IMMEDIATE`` transaction, so it is atomic
    and safe against other connections and processes writing the same file.

    A file made before values became bytes has a ``value TEXT`` column: it
    needs no migration (a TEXT column holds BLOBs as they are, and rows
    still holding text read back as their UTF-8 bytes).
    """

    def __init__(self, path: str | os.PathLike, *, timeout: float = 30.0):
        self.path = str(path)
        self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS engram_kv (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
            )

    def get(self, key: str) -> Optional[bytes]:
        with self._lock:
            row = self._db.execute("SELECT value FROM engram_kv WHERE key = ?", (key,)).fetchone()
        return None if row is None else _stored(row[0])

    def put(self, key: str, value: bytes) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?, ?)", (key, bytes(value)))

    def delete(self, key: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM engram_kv WHERE key = ?", (key,))

    def list_prefix(self, prefix: str) -> List[str]:
        # Keys compare as UTF-8 bytes (BINARY collation): scan from the prefix
        # and stop at the first key without it.
        out = []
        with self._lock:
            for (key,) in self._db.execute("SELECT key FROM engram_kv WHERE key >= ? ORDER BY key", (prefix,)):
                if not key.startswith(prefix):
                    break
                out.append(key)
        return out

    def write_if(
        self, guard: str, expected: Optional[bytes], writes: Sequence[Tuple[str, Optional[bytes]]]
    ) -> bool:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT value FROM engram_kv WHERE key = ?", (guard,)).fetchone()
                if (None if row is None else _stored(row[0])) != expected:
                    db.execute("ROLLBACK")
                    return False
                for key, value in writes:
                    if value is None:
                        db.execute("DELETE FROM engram_kv WHERE key = ?", (key,))
                    else:
                        db.execute(
                            "INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?, ?)", (key, bytes(value))
                        )
                db.execute("COMMIT")
                return True
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Closes the connection."""
        with self._lock:
            self._db.close()


# ---- Models ---------------------------------------------------------------


@dataclass(frozen=True)
class TaskRequest:
    """One model call engram makes. engram owns the prompts: send ``system``
    and ``content`` to the LLM and ask for JSON following ``schema``."""

    task: str
    """``segment``, ``note``, ``trace``, ``resolve``, ``reconcile``, ``split``,
    ``relevance`` or ``distill``."""
    system: str
    """The system prompt."""
    content: str
    """The material to judge (the user message of the chat call)."""
    schema: str
    """JSON schema of the answer, as JSON text."""
    attempt: int
    """1 for the first try; retries after an unusable answer count up."""


class CallableModel:
    """A model made of your functions.

    ``complete(request: TaskRequest) -> str`` answers a task with JSON text;
    ``embed(texts: list[str]) -> list[list[float]]`` gives one vector per
    text; ``count_tokens(text) -> int | None`` is optional (``None``: engram
    estimates). Exceptions they raise become model failures that engram
    retries or degrades.
    """

    def __init__(
        self,
        complete: Callable[[TaskRequest], str],
        embed: Callable[[List[str]], List[List[float]]],
        count_tokens: Optional[Callable[[str], Optional[int]]] = None,
    ):
        self._complete = complete
        self._embed = embed
        self._count = count_tokens

    def complete(self, request: TaskRequest) -> str:
        return self._complete(request)

    def embed(self, texts: List[str]) -> List[List[float]]:
        return self._embed(texts)

    def count_tokens(self, text: str) -> Optional[int]:
        return None if self._count is None else self._count(text)


class ModelUnavailable(Exception):
    """An OpenAI-compatible endpoint gave no usable answer after its retries."""


class OpenAIModel:
    """Any OpenAI-compatible endpoint (OpenAI, Azure-style proxies, vLLM,
    llama.cpp, Ollama...), with urllib only.

    ``complete`` posts to ``{base_url}/chat/completions`` with the task's
    system prompt and content, temperature 0, and the task's JSON schema as
    ``response_format`` (``"json_schema"``, the default; ``"json_object"``
    for servers with JSON mode only; ``None`` to send none). ``embed`` posts
    to ``{base_url}/embeddings``. Timeouts, HTTP 408/409/429/5xx and network
    errors are retried ``retries`` times with exponential backoff (honouring
    ``Retry-After``); other HTTP errors fail at once.
    """

    def __init__(
        self,
        base_url: str,
        api_key: Optional[str] = None,
        model: str = "gpt-4o-mini",
        embedding_model: str = "text-embedding-3-small",
        *,
        response_format: Optional[str] = "json_schema",
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        headers: Optional[Dict[str, str]] = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if response_format not in ("json_schema", "json_object", None):
            raise ValueError("response_format: use 'json_schema', 'json_object' or None")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.embedding_model = embedding_model
        self.response_format = response_format
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.headers = dict(headers or {})
        self._sleep = sleep

    def complete(self, request: TaskRequest) -> str:
        body: Dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.content},
            ],
            "temperature": 0,
        }
        if self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": f"engram_{request.task}", "schema": json.loads(request.schema)},
            }
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        answer = self._post("/chat/completions", body)
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as e:
            raise ModelUnavailable(f"chat completion without choices[0].message.content: {e!r}") from e
        if not isinstance(content, str):
            raise ModelUnavailable("chat completion content is not text")
        return content

    def embed(self, texts: List[str]) -> List[List[float]]:
        if not texts:
            return []
        answer = self._post("/embeddings", {"model": self.embedding_model, "input": list(texts)})
        try:
            data = sorted(answer["data"], key=lambda d: d["index"])
            vectors = [[float(x) for x in d["embedding"]] for d in data]
        except (KeyError, TypeError, ValueError) as e:
            raise ModelUnavailable(f"embeddings answer without data[].embedding: {e!r}") from e
        if len(vectors) != len(texts):
            raise ModelUnavailable(f"{len(vectors)} embeddings for {len(texts)} texts")
        return vectors

    def count_tokens(self, text: str) -> Optional[int]:
        return None

    def _post(self, path: str, body: Dict[str, Any]) -> Any:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: Optional[BaseException] = None
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(self._delay(attempt, last))
            req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return json.loads(resp.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", "replace")[:500]
                last = e
                if e.code not in (408, 409, 429) and e.code < 500:
                    raise ModelUnavailable(f"POST {path}: HTTP {e.code}: {detail}") from e
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                last = e
            except json.JSONDecodeError as e:
                raise ModelUnavailable(f"POST {path}: the answer is not JSON: {e}") from e
        raise ModelUnavailable(f"POST {path}: no answer after {self.retries + 1} attempts: {last!r}") from last

    def _delay(self, attempt: int, last: Optional[BaseException]) -> float:
        if isinstance(last, urllib.error.HTTPError):
            after = last.headers.get("Retry-After") if last.headers else None
            if after:
                try:
                    return min(self.max_backoff, max(0.0, float(after)))
                except ValueError:
                    pass
        base = self.backoff * (2 ** (attempt - 1))
        return min(self.max_backoff, base * (0.5 + random.random() / 2))


# ---- The component runtime ---------------------------------------------------


def default_component_path() -> Path:
    """Where the component is looked for: ``$ENGRAM_COMPONENT`` when set;
    else ``engram.wasm`` next to this file (an installed package bundles it
    there: see ``hosts/python/setup.py``); else the release build of the
    repository this file is in (``target/wasm32-wasip2/release``)."""
    env = os.environ.get("ENGRAM_COMPONENT")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    bundled = here / "engram.wasm"
    if bundled.exists():
        return bundled
    return here.parents[2] / "target" / "wasm32-wasip2" / "release" / "engram.wasm"


_loaded: Dict[str, Tuple[wasmtime.Engine, Component]] = {}
_loaded_lock = threading.Lock()


def _bare(component: str | os.PathLike | None, interface: str) -> Tuple[wasmtime.Store, Callable[[str], Any]]:
    """A fresh instance with no host behind its imports (they trap), for the
    exports that need none; and a lookup of ``interface``'s functions."""
    engine, comp = _load(Path(component) if component else default_component_path())
    linker = Linker(engine)
    linker.add_wasip2()
    linker.define_unknown_imports_as_traps(comp)
    wasm = wasmtime.Store(engine)
    wasm.set_wasi(wasmtime.WasiConfig())
    instance = linker.instantiate(wasm, comp)
    parent = instance.get_export_index(wasm, interface)

    def func(name: str) -> Any:
        index = instance.get_export_index(wasm, name, parent) if parent is not None else None
        f = instance.get_func(wasm, index) if index is not None else None
        if f is None:
            raise RuntimeError(f"the component has no {interface} {name}: is it an engram {_WIT_VERSION} build?")
        return f

    return wasm, func


def _load(path: Path) -> Tuple[wasmtime.Engine, Component]:
    """One engine and compiled component per path and process. Compiled code
    is cached on disk by wasmtime, so later processes start faster."""
    key = str(path.resolve())
    with _loaded_lock:
        if key not in _loaded:
            if not path.exists():
                raise FileNotFoundError(
                    f"no engram component at {path}: install the package from a wheel that bundles it, "
                    "run scripts/build-component in the repository, or set ENGRAM_COMPONENT"
                )
            config = wasmtime.Config()
            try:
                config.cache = True
            except wasmtime.WasmtimeError:
                pass
            engine = wasmtime.Engine(config)
            _loaded[key] = (engine, Component.from_file(engine, key))
        return _loaded[key]


def _py(v: Any) -> Any:
    """Component values as plain Python: dicts with snake_case keys."""
    if isinstance(v, Record):
        return {k.replace("-", "_"): _py(x) for k, x in vars(v).items()}
    if isinstance(v, Variant):
        return v.tag if v.payload is None else {"kind": v.tag, "value": _py(v.payload)}
    if isinstance(v, list):
        return [_py(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_py(x) for x in v)
    return v


def _record(**fields: Any) -> Record:
    """A WIT record to pass in (field names in kebab-case)."""
    r = Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


# ---- The records' shapes, as in JS ------------------------------------------
# _py gives the component's WIT shapes; these give the engine's JSON shapes,
# which the npm package's records keep (js/index.d.ts).


def _recall_item(v: Any) -> Any:
    """``{"kind": "fact", "value": 3}`` -> ``{"kind": "fact", "id": 3}``."""
    if isinstance(v, dict) and "value" in v:
        return {"kind": v["kind"], "id": v["value"]}
    return v


def _distillation(d: Any) -> Any:
    if isinstance(d, dict):
        d["kept"] = [_recall_item(x) for x in d["kept"]]
    return d


def _distilled(b: Any) -> Any:
    """A distilled block as the pair ``[block, distillation]``."""
    return None if b is None else [b["block"], _distillation(b["distillation"])]


def _maintained(m: Any) -> Any:
    m["distilled"] = [_distilled(b) for b in m["distilled"]]
    m["slept"] = [list(p) for p in m["slept"]]
    return m


def _added(a: Any) -> Any:
    a["distilled"] = _distilled(a["distilled"])
    if a["maintained"] is not None:
        _maintained(a["maintained"])
    return a


def _trace(t: Any) -> Any:
    """A trace's cause as ``{"kind": "encoding"}`` or ``{"kind": "fact" | "recall", "fact": id}``."""
    c = t["cause"]
    t["cause"] = {"kind": c} if isinstance(c, str) else {"kind": c["kind"], "fact": c["value"]}
    return t


def _entity(e: Any) -> Any:
    """An alias's resolution as ``{"how": "new"}`` or ``{"how": "similar", "cosine": c}``."""
    for a in e["aliases"]:
        r = a["resolution"]
        a["resolution"] = {"how": r} if isinstance(r, str) else {"how": r["kind"], "cosine": r["value"]}
    return e


def _hits(hits: Any) -> Any:
    """Search hits as ``{"list": "fact_words", "query", "rank"}``."""
    return [{"list": h["search"].replace("-", "_"), "query": h["query"], "rank": h["rank"]} for h in hits]


def _recall_block(b: Any) -> Any:
    _distillation(b.get("distilled"))
    for r in b["items"]:
        r["item"] = _recall_item(r["item"])
        r["hits"] = _hits(r["hits"])
    return b


def _stats(s: Any) -> Any:
    e = s["episodes"]
    model = s["model"]
    model["calls"] = dict(model["calls"])
    model["failed"] = dict(model["failed"])
    model["repairs"] = dict(model["repairs"])
    return {
        "messages": s["messages"],
        "episodes": [e["live"], e["leaving"], e["sealed"], e["forgotten"]],
        "open_messages": s["open_messages"],
        "facts": [s["live_facts"], s["retired_facts"]],
        "entities": s["entities"],
        "traces": [s["traces"], s["yes_traces"]],
        "fades": s["fades"],
        "log_entries": s["log_entries"],
        "view_tokens": s["view_tokens"],
        "ceiling": s["ceiling"],
        "pending": s["pending"],
        "model": model,
        "storage_warnings": s["storage_warnings"],
    }


# The shapes wasmtime-py expects from host functions: it passes a `result`
# untagged (the bare ok value, or the bare error value) when its two sides
# hold different Python types, and as `Variant("ok"|"err", ...)` otherwise.
# `store-error` is itself untagged: None is `conflict`, a str is `failed`.
_OK = Variant("ok")


def _tool_call(c: Any) -> Record:
    try:
        if isinstance(c, dict):
            if "function" in c:  # the OpenAI shape
                f = c["function"]
                fields = (c["id"], f["name"], f.get("arguments", ""))
            else:
                fields = (c["id"], c["name"], c.get("arguments", ""))
        elif hasattr(c, "function"):  # an OpenAI SDK object
            fields = (c.id, c.function.name, c.function.arguments)
        else:
            fields = (c.id, c.name, c.arguments)
    except (KeyError, AttributeError, TypeError) as e:
        raise InvalidInput(f"a tool call needs an id, a name and arguments: {e!r}") from None
    id_, name, arguments = fields
    return _record(
        id=_text(id_, "a tool call's id"),
        name=_text(name, "a tool call's name"),
        arguments=_text("" if arguments is None else arguments, "a tool call's arguments"),
    )


# ---- Checks of what goes into the component ---------------------------------
# wasmtime-py would raise UnicodeEncodeError, OverflowError, ValueError or a
# WasmtimeError (some from inside a call, as a trap) for values the WIT types
# cannot hold: they are refused here first, as InvalidInput.

_ROLES = ("system", "user", "assistant", "tool")
_FACT_KINDS = ("fact", "agreed", "decided", "done", "blocked", "next", "preference")
_U32 = 2**32 - 1
_U64 = 2**64 - 1
_S64 = (-(2**63), 2**63 - 1)

#: The keys of a message dict :meth:`Memory.add_messages` reads, and those
#: of an OpenAI chat message it ignores (any other is a mistake, refused).
_BATCH_KEYS = frozenset(
    ("role", "content", "tool_calls", "tool_call_id", "client_id", "thread", "at", "metadata")
    + ("name", "refusal", "annotations", "audio", "function_call")
)

#: The most messages one call of the component's ``add-messages`` takes
#: (:meth:`Memory.add_messages` splits longer lists).
MAX_BATCH = 1000


def _thread(v: Any) -> Optional[str]:
    """A thread name to pass in (None stays None: the main thread)."""
    return None if v is None else _text(v, "the thread")


def _new_message(
    role: Any,
    content: Any,
    tool_calls: Any,
    tool_call_id: Any,
    client_id: Any,
    thread: Any,
    at: Any,
    metadata: Any = None,
) -> Record:
    """A ``new-message`` record, its fields checked."""
    if role not in _ROLES:
        raise InvalidInput(f"role {role!r} is not one of {', '.join(_ROLES)}")
    try:
        calls = [_tool_call(c) for c in (tool_calls or [])]
    except TypeError:
        raise InvalidInput("tool_calls must be a list of tool calls") from None
    return _record(
        role=role,
        content=_text(content or "", "the content"),
        tool_calls=calls,
        tool_call_id=None if tool_call_id is None else _text(tool_call_id, "tool_call_id"),
        client_id=None if client_id is None else _text(client_id, "client_id"),
        thread=_thread(thread),
        at=None if at is None else _int(at, "at", *_S64),
        metadata=None if metadata is None else _json_text(metadata, "metadata"),
    )


def _bad_text(s: str) -> Optional[str]:
    """Why ``s`` cannot be UTF-8 (a lone surrogate), or None."""
    try:
        s.encode("utf-8")
        return None
    except UnicodeEncodeError as e:
        return f"a lone surrogate {s[e.start]!r} at index {e.start}"


def _text(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise InvalidInput(f"{what} must be text, not {type(v).__name__}")
    bad = _bad_text(v)
    if bad:
        raise InvalidInput(f"{what} is not valid Unicode text: {bad}")
    return v


def _json_text(v: Any, what: str) -> str:
    """``v`` as compact JSON text (engram checks it is an object within
    bounds)."""
    try:
        return json.dumps(v, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidInput(f"{what} is not JSON: {e}") from None


_FILTER_KEYS = ("thread", "from", "to", "kinds", "entity", "metadata")
_ITEM_KINDS = ("fact", "passage", "message")


def _search_filter(f: Any) -> Record:
    """A search filter dict as the WIT record."""
    if not isinstance(f, dict):
        raise InvalidInput("filter must be a dict")
    unknown = [k for k in f if k not in _FILTER_KEYS]
    if unknown:
        raise InvalidInput(f"unknown filter key {unknown[0]!r}: use {', '.join(_FILTER_KEYS)}")
    kinds = f.get("kinds") or []
    if isinstance(kinds, str) or not isinstance(kinds, (list, tuple)):
        raise InvalidInput("filter kinds must be a list of fact, passage, message")
    for k in kinds:
        if k not in _ITEM_KINDS:
            raise InvalidInput(f"filter kind {k!r} is not one of {', '.join(_ITEM_KINDS)}")

    def opt(key: str, conv: Callable[[Any], Any]) -> Any:
        return None if f.get(key) is None else conv(f[key])

    r = Record()  # "from" is a Python keyword: set by name
    setattr(r, "thread", opt("thread", lambda v: _text(v, "filter thread")))
    setattr(r, "from", opt("from", lambda v: _int(v, "filter from", *_S64)))
    setattr(r, "to", opt("to", lambda v: _int(v, "filter to", *_S64)))
    setattr(r, "kinds", list(kinds))
    setattr(r, "entity", opt("entity", lambda v: _int(v, "filter entity", 0, _U64)))
    setattr(r, "metadata", opt("metadata", lambda v: _json_text(v, "filter metadata")))
    return r


def _message(m: Dict[str, Any]) -> Dict[str, Any]:
    """A message with its metadata as a dict."""
    if m.get("metadata") is not None:
        m["metadata"] = json.loads(m["metadata"])
    return m


def _int(v: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidInput(f"{what} must be an integer, not {v!r}")
    if not lo <= v <= hi:
        raise InvalidInput(f"{what} is {v}, outside {lo}..{hi}")
    return v


def _check_texts(v: Any, where: str = "an argument") -> None:
    """Raises InvalidInput for any string in ``v`` (records, lists, tuples,
    variants included) that is not valid Unicode."""
    if isinstance(v, str):
        bad = _bad_text(v)
        if bad:
            raise InvalidInput(f"{where} is not valid Unicode text: {bad}")
    elif isinstance(v, Record):
        for k, x in vars(v).items():
            _check_texts(x, k)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _check_texts(x, where)
    elif isinstance(v, Variant):
        _check_texts(v.payload, where)


def _clock_reading(v: Any) -> int:
    """The clock's reading as s64 ms; InvalidInput when it is no such number.
    (Readings outside 2000..3000 are refused by engram itself, with the
    likely mistake named.)"""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidInput(f"the clock returned {v!r}, not a number of ms since the Unix epoch")
    if isinstance(v, float):
        if not math.isfinite(v):
            raise InvalidInput(f"the clock returned {v!r}, not a finite number of ms: fix the clock")
        v = int(v)
    if not _S64[0] <= v <= _S64[1]:
        raise InvalidInput(f"the clock returned {v}, outside the 64-bit range: fix the clock")
    return v


def _token_count(v: Any) -> Optional[int]:
    """The model's token count as u32 (or None); InvalidInput otherwise."""
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= _U32:
        raise InvalidInput(f"the model's count_tokens returned {v!r}, not None or a count in 0..{_U32}")
    return v


class _Worker:
    """Runs host callbacks on a daemon thread and waits for each at most its
    timeout. A thread that misses one is abandoned: it finishes (or hangs)
    on its own, its answer unread, and the next callback gets a new thread."""

    def __init__(self) -> None:
        self._jobs: Optional["queue.SimpleQueue[Any]"] = None

    @staticmethod
    def _serve(jobs: "queue.SimpleQueue[Any]") -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            fn, box, done = job
            try:
                box.append((True, fn()))
            except BaseException as e:  # handed to the caller
                box.append((False, e))
            done.set()

    def run(self, fn: Callable[[], Any], timeout: Optional[float], what: str) -> Any:
        if timeout is None:
            return fn()
        jobs = self._jobs
        if jobs is None:
            jobs = self._jobs = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(jobs,), name="engram-host-callback", daemon=True).start()
        box: List[Tuple[bool, Any]] = []
        done = threading.Event()
        jobs.put((fn, box, done))
        if not done.wait(timeout):
            jobs.put(None)  # the abandoned thread exits after its callback, if ever
            self._jobs = None
            raise CallbackTimeout(f"{what} did not answer within {timeout:g} s")
        ok, value = box[0]
        if ok:
            return value
        raise value


class Memory:
    """One engram memory: a conversation, its episodes and its knowledge
    graph, kept in ``store`` under ``namespace``.

    ``namespace``: 1 to 128 letters, digits or ``._-:@``. ``store``: where the
    memory lives (default: a new :class:`MemoryStore`). ``model``: the LLM
    and embedder (:class:`OpenAIModel`, :class:`CallableModel`, or an object
    with ``complete`` and ``embed``); ``None`` (or ``"offline"``) runs the
    memory on the built-in offline model inside the component, and no model
    callback is ever made (for demos and tests; plug in a real LLM for real
    use). ``embedder``: ``None`` embeds with ``model`` (offline when
    ``model`` is); ``"offline"`` embeds with the offline hashing embedder
    while ``model`` does the tasks (and counts tokens): its ``embed`` is
    never called, and it need not have one. Keep the same choice for a
    namespace: stored facts keep the embeddings they were made with.
    ``complete_source`` and ``embed_source`` say what was chosen
    (``"host"`` or ``"offline"``). ``clock``: returns ms since the Unix
    epoch (default: the wall clock). ``config``: a dict (or JSON text) of the
    tuning fields to change, e.g. ``{"ceiling_tokens": 8000}``.
    ``component``: the ``engram.wasm`` to run (default:
    :func:`default_component_path`). ``on_degraded``: called with each step
    that went on without the model (a dict: task, error, attempts, at,
    effect), once per step, after every call that degraded one (failed calls
    included); also settable later as ``memory.on_degraded``. An exception it
    raises comes out of the call (whose work is committed all the same).

    ``model_timeout`` (60 s), ``store_timeout`` (10 s) and ``clock_timeout``
    (10 s): the most each callback may take (see the module's Deadlines);
    callbacks run on a worker thread of this Memory. ``None`` runs that kind
    of callback on the calling thread with no deadline (for a store whose
    connection must stay on the thread that made it).

    Config fields of the turn (all optional): ``strict`` (False: a model
    step that fails degrades; True: it raises :class:`ModelError` and writes
    nothing), ``maintain_after_reply`` (True: a reply that ends the turn runs
    :meth:`maintain` in the same call), ``fade_ahead`` (True),
    ``split_with_model`` (True), ``walk_with_model`` (True), ``note_retries``
    (3), ``recall_share`` (0.25), ``strong_boundary`` (0.9); see
    ``wit/engram.wit`` (``open``) for what each does.
    """

    def __init__(
        self,
        namespace: str,
        store: Any = None,
        model: Any = None,
        clock: Optional[Callable[[], int]] = None,
        config: Any = None,
        *,
        embedder: Optional[str] = None,
        component: str | os.PathLike | None = None,
        on_degraded: Optional[Callable[[Dict[str, Any]], Any]] = None,
        model_timeout: Optional[float] = 60.0,
        store_timeout: Optional[float] = 10.0,
        clock_timeout: Optional[float] = 10.0,
        salvage: bool = False,
    ):
        if isinstance(model, str) and model != "offline":
            raise ValueError(f"model={model!r}: give a model object, or None / 'offline' for the offline model")
        if embedder not in (None, "offline"):
            raise ValueError(f"embedder={embedder!r}: None (the model's) or 'offline'")
        if model == "offline":
            model = None
        # Where the tasks are answered and where texts are embedded.
        self.complete_source = "offline" if model is None else "host"
        self.embed_source = "offline" if model is None or embedder == "offline" else "host"
        for name, t in (("model_timeout", model_timeout), ("store_timeout", store_timeout),
                        ("clock_timeout", clock_timeout)):
            if t is not None and not (isinstance(t, (int, float)) and t > 0 and math.isfinite(t)):
                raise ValueError(f"{name} must be a positive number of seconds or None, not {t!r}")
        self.model_timeout = model_timeout
        self.store_timeout = store_timeout
        self.clock_timeout = clock_timeout
        self._worker = _Worker()
        self.namespace = _text(namespace, "the namespace")
        self.store = MemoryStore() if store is None else store
        self.model = model
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.on_degraded = on_degraded
        self.salvage = bool(salvage)
        if config is None:
            self._config = "{}"
        elif isinstance(config, str):
            self._config = config
        else:
            try:
                self._config = json.dumps(config, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise InvalidInput(f"the config cannot be JSON: {e}") from None
        self._engine, self._component = _load(Path(component) if component else default_component_path())
        self._lock = threading.RLock()
        self._raised: Optional[BaseException] = None
        self._wasm: Optional[wasmtime.Store] = None
        self._handle: Any = None
        self._funcs: Dict[str, Any] = {}
        self._closed = False
        with self._lock:
            self._start()

    # -- lifecycle --

    def _start(self) -> None:
        """Instantiates the component and opens the memory."""
        linker = Linker(self._engine)
        linker.add_wasip2()
        with linker.root() as root:
            with root.add_instance(f"engram:memory/clock@{_WIT_VERSION}") as i:
                i.add_func("now-ms", self._host_now)
            with root.add_instance(f"engram:memory/store@{_WIT_VERSION}") as i:
                i.add_func("get", self._host_get)
                i.add_func("put", self._host_put)
                i.add_func("delete", self._host_delete)
                i.add_func("list-prefix", self._host_list)
                i.add_func("write-if", self._host_write_if)
            with root.add_instance(f"engram:memory/model@{_WIT_VERSION}") as i:
                i.add_func("complete", self._host_complete)
                i.add_func("embed", self._host_embed)
                i.add_func("count-tokens", self._host_count)
        wasm = wasmtime.Store(self._engine)
        wasm.set_wasi(wasmtime.WasiConfig())
        instance = linker.instantiate(wasm, self._component)
        engine_index = instance.get_export_index(wasm, _ENGINE_EXPORT)
        self._funcs = {}

        def func(name: str) -> Any:
            index = instance.get_export_index(wasm, name, engine_index)
            f = instance.get_func(wasm, index) if index is not None else None
            if f is None:
                raise RuntimeError(f"the component has no {name}: is it an engram {_WIT_VERSION} build?")
            return f

        self._wasm = wasm
        self._func = func
        self._handle = None
        self._handle = self._call(
            "[static]memory.open-salvage" if self.salvage else "[static]memory.open-with",
            self.namespace,
            self._config,
            self.complete_source,
            self.embed_source,
            method=False,
        )

    @classmethod
    def open_salvage(cls, namespace: str, store: Any = None, model: Any = None, *args: Any, **kwargs: Any) -> "Memory":
        """Opens the memory read-only with whatever of a damaged log can be
        read: the way back when opening raises ``CorruptData``. Log entries that
        cannot be read are skipped, later ones still applied (events that no
        longer apply are dropped); each loss is in
        ``stats()["storage_warnings"]``. Reads work; every write raises
        ``InvalidInput`` ("opened for salvage: read-only") and the store is
        never written: ``export()`` it and ``import_()`` the export into a
        new store or namespace. Same arguments as ``Memory(...)``."""
        return cls(namespace, store, model, *args, salvage=True, **kwargs)

    def close(self) -> None:
        """Releases the component instance. The memory stays in the store."""
        with self._lock:
            if self._handle is not None and self._wasm is not None:
                try:
                    self._handle.drop(self._wasm)
                except wasmtime.WasmtimeError:
                    pass
            self._handle = None
            self._wasm = None
            self._closed = True

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, name: str, *args: Any, method: bool = True) -> Any:
        with self._lock:
            if self._closed:
                raise ClosedError("this Memory is closed; open a new one (the store keeps everything)")
            if self._wasm is None and method:
                # The last call trapped: start a fresh instance. The store
                # holds everything, so nothing is lost.
                self._start()
            f = self._funcs.get(name)
            if f is None:
                f = self._funcs[name] = self._func(name)
            _check_texts(list(args))
            self._raised = None
            try:
                out = f(self._wasm, self._handle, *args) if method else f(self._wasm, *args)
            except wasmtime.WasmtimeError:
                # A trap (a host callback raised something that cannot be an
                # error value, or the guest panicked): this instance is done.
                self._wasm, self._handle = None, None
                if self._raised is not None:
                    raise self._raised
                raise
            except BaseException:
                self._wasm, self._handle = None, None
                raise
            raised, self._raised = self._raised, None
            degraded = self._take_degraded() if method and self.on_degraded is not None else []
        # The callback runs outside the call, once per degraded step, before
        # the call's result (or error) is handed back.
        for d in degraded:
            self.on_degraded(d)  # type: ignore[misc]
        if isinstance(out, Variant) and out.tag == "ok":
            return out.payload
        if isinstance(out, Variant) and out.tag == "err":
            out = out.payload
        if isinstance(out, Variant):  # a memory-error
            raise _error(out) from raised
        return out

    def _take_degraded(self) -> List[Dict[str, Any]]:
        """The component's queue of degraded steps, taken (emptied). Called
        with the lock held, on a live instance."""
        name = "[method]memory.take-degraded"
        f = self._funcs.get(name)
        if f is None:
            f = self._funcs[name] = self._func(name)
        try:
            return _py(f(self._wasm, self._handle))
        except BaseException:
            self._wasm, self._handle = None, None
            raise

    # -- host callbacks (called by the component) --
    # Each runs on the worker thread with its deadline. Store and model
    # failures become the component's error values (the exception is kept as
    # the __cause__); answers that the WIT types cannot hold are failures too.

    def _guard(self, fn: Callable[[], Any], err: Callable[[str], Any], timeout: Optional[float], what: str) -> Any:
        try:
            return self._worker.run(fn, timeout, what)
        except Exception as e:  # becomes an error value; kept as the __cause__
            self._raised = e
            return err(f"{type(e).__name__}: {e}")

    def _store(self, fn: Callable[[], Any], err: Callable[[str], Any], what: str) -> Any:
        return self._guard(fn, err, self.store_timeout, f"the store's {what}")

    def _model(self, fn: Callable[[], Any], err: Callable[[str], Any], what: str) -> Any:
        return self._guard(fn, err, self.model_timeout, f"the model's {what}")

    def _fail(self, e: BaseException) -> Any:
        """Fails the running call with ``e`` (a trap: the instance is
        restarted on the next call; nothing was committed by this one)."""
        self._raised = e
        raise e

    def _host_now(self, _s: Any) -> int:
        try:
            reading = self._worker.run(self.clock, self.clock_timeout, "the clock")
            return _clock_reading(reading)
        except BaseException as e:
            return self._fail(e)

    def _host_get(self, _s: Any, key: str) -> Any:
        def run() -> Any:
            value = self.store.get(key)
            if value is not None:
                if not isinstance(value, (bytes, bytearray, memoryview)):
                    raise TypeError(
                        f"the store's value at {key!r} is a {type(value).__name__}, not bytes"
                        " (store values are bytes: keep them as given)"
                    )
                value = bytes(value)
            return Variant("ok", value)

        return self._store(run, lambda m: Variant("err", m), "get")

    def _host_put(self, _s: Any, key: str, value: bytes) -> Any:
        return self._store(lambda: (self.store.put(key, value), _OK)[1], lambda m: Variant("err", m), "put")

    def _host_delete(self, _s: Any, key: str) -> Any:
        return self._store(lambda: (self.store.delete(key), _OK)[1], lambda m: Variant("err", m), "delete")

    def _host_list(self, _s: Any, prefix: str) -> Any:
        def run() -> Any:
            keys = [str(k) for k in self.store.list_prefix(prefix)]
            if any(_bad_text(k) for k in keys):
                raise ValueError("the store listed a key that is not valid Unicode text")
            return keys

        return self._store(run, lambda m: m, "list_prefix")

    def _host_write_if(
        self, _s: Any, guard: str, expected: Optional[bytes], writes: List[Tuple[str, Optional[bytes]]]
    ) -> Any:
        def run() -> Any:
            try:
                applied = self.store.write_if(guard, expected, list(writes))
            except StoreConflict:
                applied = False
            return _OK if applied is not False else Variant("err", None)

        return self._store(run, lambda m: Variant("err", m), "write_if")

    def _host_complete(self, _s: Any, request: Record) -> Any:
        r = TaskRequest(
            task=request.task,
            system=request.system,
            content=request.content,
            schema=request.schema,
            attempt=request.attempt,
        )

        def run() -> Any:
            if self.model is None:  # the component does not ask: a bug if it did
                raise RuntimeError("this memory has no host model (it runs on the offline model)")
            answer = str(self.model.complete(r))
            bad = _bad_text(answer)
            if bad:
                raise ValueError(f"the answer is not valid Unicode text: {bad}")
            return Variant("ok", answer)

        return self._model(run, lambda m: Variant("err", m), f"complete ({r.task})")

    def _host_embed(self, _s: Any, texts: List[str]) -> Any:
        def run() -> Any:
            if self.model is None or self.embed_source == "offline":  # the component does not ask
                raise RuntimeError("this memory embeds with the offline embedder, not the host's model")
            return [[float(x) for x in v] for v in self.model.embed(list(texts))]

        return self._model(run, lambda m: m, "embed")

    def _host_count(self, _s: Any, text: str) -> Optional[int]:
        count = getattr(self.model, "count_tokens", None)
        if count is None:
            return None
        try:
            n = self._worker.run(lambda: count(text), self.model_timeout, "the model's count_tokens")
        except CallbackTimeout:
            return None  # no count in time: engram estimates
        except BaseException as e:
            return self._fail(e)
        try:
            return _token_count(n)
        except InvalidInput as e:
            return self._fail(e)

    # -- the engine --

    @staticmethod
    def note_tool(component: str | os.PathLike | None = None) -> Dict[str, Any]:
        """The ``note`` tool definition (OpenAI tools format) to offer your
        chat model; pass its calls to :meth:`note_tool_call`."""
        wasm, func = _bare(component, _ENGINE_EXPORT)
        return json.loads(func("[static]memory.note-tool")(wasm))

    @staticmethod
    def offline_complete(request: TaskRequest, component: str | os.PathLike | None = None) -> str:
        """The built-in offline model's answer to ``request`` (JSON text),
        computed by the component with no memory open. Raises
        :class:`ModelUnavailable` when it cannot read the request."""
        wasm, func = _bare(component, _OFFLINE_EXPORT)
        r = _record(task=request.task, system=request.system, content=request.content,
                    schema=request.schema, attempt=request.attempt)
        out = func("complete")(wasm, r)
        if isinstance(out, Variant):
            if out.tag == "ok":
                return out.payload
            raise ModelUnavailable(out.payload)
        return out

    @staticmethod
    def offline_embed(texts: List[str], component: str | os.PathLike | None = None) -> List[List[float]]:
        """The offline hashing embedder's vectors for ``texts`` (unit
        vectors, all of one dimension), computed by the component."""
        wasm, func = _bare(component, _OFFLINE_EXPORT)
        texts = [_text(t, "a text") for t in texts]
        return [list(v) for v in func("embed")(wasm, texts)]

    def add_message(
        self,
        role: str,
        content: str = "",
        *,
        tool_calls: Optional[Iterable[Any]] = None,
        tool_call_id: Optional[str] = None,
        client_id: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        thread: Optional[str] = None,
        at: Optional[int] = None,
    ) -> Added:
        """Adds a message (``role``: system, user, assistant or tool). Tool
        calls are dicts ``{"id", "name", "arguments"}`` or in the OpenAI shape.

        ``metadata``: your own data about the message, a dict that is JSON
        (at most 4,096 bytes as compact JSON, 8 levels deep): kept, exported,
        returned by :meth:`messages`, erased with the message, and matched
        by a search's ``filter={"metadata": {...}}``.

        ``thread``: the chat it belongs to (1 to 128 characters, no control
        characters; None is ``"main"``). ``at``: when it was said (ms since
        the Unix epoch; None is now), for history: not in the future, not
        before the last message of its thread (:class:`InvalidInput`).

        ``client_id``: your own id for the message (1 to 256 characters).
        Adding a message whose client id is already in the memory writes
        nothing and returns the first add's id with ``"duplicate": True``, so
        an add whose outcome was lost (a timeout, a dropped connection) can
        be retried safely.

        A user message costs one round of model calls (its boundary judgment
        and the replies' waiting ones, recall's split and relevance walk,
        distill of earlier turns, together); any other message makes none. A
        reply that ends the turn then runs :meth:`maintain` in the same call
        (config ``maintain_after_reply``, default on).

        Returns ``{"message", "formed", "slept", "fade", "recall",
        "distilled", "degraded", "maintained", "maintain_error",
        "duplicate"}``:
        ``degraded`` lists the steps that went on without the model,
        ``maintained`` what the maintain after a reply did (as
        :meth:`maintain` returns it) and ``maintain_error`` why it failed, if
        it did (the message itself is committed)."""
        m = _new_message(role, content, tool_calls, tool_call_id, client_id, thread, at, metadata)
        return _added(_py(self._call("[method]memory.add-message", m)))

    def add_openai_message(
        self,
        message: Dict[str, Any],
        *,
        client_id: Optional[str] = None,
        metadata: Optional[Dict[str, Any]] = None,
        thread: Optional[str] = None,
        at: Optional[int] = None,
    ) -> Added:
        """Adds a message given as an OpenAI chat message dict (``client_id``,
        ``metadata``, ``thread`` and ``at`` as for :meth:`add_message`)."""
        if not isinstance(message, dict) or "role" not in message:
            raise InvalidInput("an OpenAI message is a dict with a role")
        return self.add_message(
            message["role"],
            message.get("content") or "",
            tool_calls=message.get("tool_calls"),
            tool_call_id=message.get("tool_call_id"),
            client_id=client_id,
            metadata=metadata,
            thread=thread,
            at=at,
        )

    def add_messages(
        self,
        messages: Iterable[Dict[str, Any]],
        *,
        progress: Optional[Callable[[int, int], Any]] = None,
    ) -> Batch:
        """Adds history with no model call: ``messages`` in order, each a
        dict with ``role`` and the keyword arguments of :meth:`add_message`
        (``content``, ``tool_calls``, ``tool_call_id``, ``client_id``,
        ``thread``, ``at``; an OpenAI chat message dict is one). A long list
        goes in calls of at most :data:`MAX_BATCH` (1,000) messages, one
        commit each; ``progress(done, total)`` is called after each.

        Each call is all or nothing: one bad message in it (a thread name of
        200 characters, a date in the future or before its thread's last
        message...) raises :class:`InvalidInput` naming it (``message i of
        the batch``, counted in ``messages``), and nothing of that call is
        written; the calls before it stay committed: the error's ``added``
        is their Batch (as ``progress`` said). Messages whose ``client_id``
        the memory holds are skipped, so a batch with client ids can be
        retried whole. The keys of an OpenAI chat message that engram does
        not keep (``name``, ``refusal``, ...) are ignored; any other key
        raises :class:`InvalidInput`.

        Boundary judgments, cuts, fades and notes wait: run
        ``maintain(thread=...)`` for each thread until ``pending(thread=...)``
        is empty. Returns ``{"messages": [ids], "duplicates": [ids of the
        skipped]}``."""
        if isinstance(messages, (str, bytes, dict)):
            raise InvalidInput("add_messages takes a list of message dicts")
        records = []
        try:
            items = list(messages)
        except TypeError:
            raise InvalidInput("add_messages takes a list of message dicts") from None
        for i, m in enumerate(items):
            if not isinstance(m, dict) or "role" not in m:
                raise InvalidInput(f"message {i} of the batch is not a dict with a role")
            unknown = set(m) - _BATCH_KEYS
            if unknown:
                raise InvalidInput(f"message {i} of the batch has unknown fields: {', '.join(sorted(unknown))}")
            try:
                records.append(
                    _new_message(
                        m["role"],
                        m.get("content"),
                        m.get("tool_calls"),
                        m.get("tool_call_id"),
                        m.get("client_id"),
                        m.get("thread"),
                        m.get("at"),
                        m.get("metadata"),
                    )
                )
            except InvalidInput as e:
                raise InvalidInput(f"message {i} of the batch: {e.message}") from None
        out: Dict[str, List[int]] = {"messages": [], "duplicates": []}
        total = len(records)
        for start in range(0, total, MAX_BATCH):
            chunk = records[start : start + MAX_BATCH]
            try:
                b = _py(self._call("[method]memory.add-messages", chunk))
            except EngramError as e:
                e.added = out  # type: ignore[attr-defined]
                if start and isinstance(e, InvalidInput) and e.message.startswith("message "):
                    # The component counts from the start of its call.
                    i, _, rest = e.message[len("message ") :].partition(" ")
                    if i.isdigit():
                        e.message = f"message {start + int(i)} {rest}"
                        e.args = (e.message,)
                raise
            out["messages"] += b["messages"]
            out["duplicates"] += b["duplicates"]
            if progress is not None:
                progress(start + len(chunk), total)
        return out  # type: ignore[return-value]

    def threads(self) -> List[ThreadInfo]:
        """Every thread with at least one message, by name: ``{"thread",
        "title", "first_message", "last_message", "first_at", "last_at",
        "messages", "user_messages", "episodes", "episodes_in_view"}``."""
        return _py(self._call("[method]memory.threads"))

    def abandon_tool_call(self, call_id: str) -> Added:
        """Closes tool call ``call_id``, which waits for its output and will
        have none (the tool failed, the user moved on): adds its tool output
        "No output: this tool call was abandoned.", so the view stays a chat
        every model API accepts. While a call waits, a user, assistant or
        system message raises :class:`InvalidInput` (naming
        ``abandon_tool_call``); a call that is not waiting raises it too.
        Returns what :meth:`add_message` returns."""
        return _added(_py(self._call("[method]memory.abandon-tool-call", _text(call_id, "the call id"))))

    def _in(self, name: str, thread: Optional[str], *args: Any) -> Any:
        """Method ``name`` (the main thread's), or ``name-in`` of ``thread``."""
        if thread is None:
            return self._call(f"[method]memory.{name}", *args)
        return self._call(f"[method]memory.{name}-in", *args, _text(thread, "the thread"))

    def view(self, *, thread: Optional[str] = None) -> View:
        """The view, structured: ``{"items": [...], "tokens", "ceiling",
        "over_ceiling"}`` (``over_ceiling``: why the view is over the
        ceiling, when it is, else ``None``); each item has kind, role, text,
        tokens, message, episode, facts, tool_calls, tool_call_id. The view
        of ``thread`` (default ``"main"``): the memory-wide facts block, then
        that thread's episodes, open stretch and recall blocks."""
        return _py(self._in("view", thread))

    def render_openai(self, *, thread: Optional[str] = None) -> List[Dict[str, Any]]:
        """The view (of ``thread``, default ``"main"``) as an OpenAI
        ``messages`` list, ready to send."""
        return json.loads(self._in("render-openai", thread))

    def view_tokens(self, *, thread: Optional[str] = None) -> int:
        """The size of the view of ``thread`` (default ``"main"``) in
        tokens, without building it."""
        return self._call("[method]memory.view-tokens-in", _text("main" if thread is None else thread, "the thread"))

    def view_at(self, at: int, *, thread: Optional[str] = None) -> View:
        """The view (of ``thread``, default ``"main"``) as it was at ``at``
        (ms since the Unix epoch), rebuilt from the log. Writes nothing."""
        return _py(self._in("view-at", thread, _int(at, "at", *_S64)))

    def render_openai_at(self, at: int, *, thread: Optional[str] = None) -> List[Dict[str, Any]]:
        """:meth:`view_at` as an OpenAI ``messages`` list."""
        return json.loads(self._in("render-openai-at", thread, _int(at, "at", *_S64)))

    def end_turn(self, *, thread: Optional[str] = None) -> Optional[List[Any]]:
        """Ends the turn explicitly (after a reply with tool calls, say):
        :meth:`maintain` with the latest turn (of ``thread``, default
        ``"main"``) counted as over. Returns ``[block, distillation]`` for
        the latest user message's recall block if it was distilled now,
        else ``None``."""
        return _distilled(_py(self._in("end-turn", thread)))

    def maintain(self, *, thread: Optional[str] = None) -> Maintained:
        """Runs the work that waits after a reply, when you choose (after
        the reply, on idle): boundary judgments of messages waiting for one,
        distill of every recall block whose turn is over, the notes of
        leaving episodes, a fade ahead when the next turn would not fit,
        retries of deferred notes. Committed before it returns. After a turn
        of ``thread`` (default ``"main"``): its judgments, cuts and fade
        ahead; the rest is memory-wide, including the sleep of threads idle
        for ``sleep_after_hours`` (their episodes leave their views and are
        noted). Returns ``{"judged", "formed", "distilled", "fade",
        "sealed", "deferred", "noted_late", "abandoned", "gave_way",
        "slept", "degraded"}`` (``distilled``: a list of ``[block,
        distillation]`` pairs; ``slept``: ``[thread, fade]`` pairs)."""
        return _maintained(_py(self._in("maintain", thread)))

    def pending(self, *, thread: Optional[str] = None) -> Pending:
        """Work waiting for :meth:`maintain` (of ``thread``, default
        ``"main"``): ``{"unjudged", "undistilled", "leaving",
        "awaiting_note", "fade_ahead", "idle_threads"}``. Calls no model,
        writes nothing."""
        return _py(self._in("pending", thread))

    def take_degraded(self) -> List[Degraded]:
        """Degraded steps not taken yet, oldest first (each a dict: task,
        error, attempts, at, effect); taking empties the list. With an
        ``on_degraded`` callback the callback has taken them already."""
        with self._lock:
            if self._closed:
                raise ClosedError("this Memory is closed; open a new one (the store keeps everything)")
            if self._wasm is None:
                return []  # a fresh instance has none
            return self._take_degraded()

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        walk: bool = False,
        include_in_view: bool = True,
        budget_tokens: Optional[int] = None,
        filter: Optional[Dict[str, Any]] = None,
    ) -> List[Dict[str, Any]]:
        """Searches the memory on demand (facts and passages, by words and by
        meaning, fused, and the messages in view by words and by meaning,
        embedded for the search in one call; ``walk=True`` also
        runs the relevance walk, which calls the model; ``budget_tokens``
        keeps what fits that many tokens). Changes nothing. Each hit: item
        (``{"kind": "fact"|"passage"|"message", "id": id}``), text, said_at,
        score, hits, hop, retired, sources (the ids of the messages it came
        from: :meth:`messages` gives their threads and metadata).

        ``filter``: what the search may return, asked of every candidate
        before ranking (so an item it keeps is found however many better
        ones it leaves out): a dict of any of ``thread`` (a thread name),
        ``from`` and ``to`` (ms, inclusive: when the source was said),
        ``kinds`` (a list of ``"fact"``, ``"passage"``, ``"message"``),
        ``entity`` (an entity id: items about it) and ``metadata`` (a dict:
        each top-level key must equal a source message's)."""
        budget = None if budget_tokens is None else _int(budget_tokens, "budget_tokens", 0, _U32)
        options = _record(
            limit=_int(limit, "limit", 0, _U32),
            walk=bool(walk),
            include_in_view=bool(include_in_view),
            budget_tokens=budget,
            filter=None if filter is None else _search_filter(filter),
        )
        hits = _py(self._call("[method]memory.search", _text(query, "the query"), options))
        for h in hits:
            h["item"] = _recall_item(h["item"])
            h["hits"] = _hits(h["hits"])
        return hits

    def hit_text(self, item: Dict[str, Any]) -> str:
        """The whole text of a search hit's ``item`` (``{"kind": "fact" |
        "passage" | "message", "id": id}``, as :meth:`search` gives it):
        :meth:`search` cuts a hit's text at about 1,000 tokens. An item that
        is not there raises :class:`InvalidInput`."""
        if not isinstance(item, dict) or item.get("kind") not in ("fact", "passage", "message"):
            raise InvalidInput('an item is {"kind": "fact" | "passage" | "message", "id": id}')
        kind = item["kind"]
        target = Variant(kind, _int(item.get("id", item.get("value")), f"a {kind} id", 0, _U64))
        return self._call("[method]memory.hit-text", target)

    def recalls(self) -> List[Dict[str, Any]]:
        """Every recall block: its parts, what each search and the walk
        found, and distill's decision."""
        return [_recall_block(b) for b in _py(self._call("[method]memory.recalls"))]

    def explain_recall(self, fact: int) -> List[Dict[str, Any]]:
        """Why a fact was recalled, one explanation per block that holds it."""
        why = _py(self._call("[method]memory.explain-recall", _int(fact, "a fact id", 0, _U64)))
        for w in why:
            w["hits"] = _hits(w["hits"])
        return why

    def set_instructions(self, text: str) -> bool:
        """Sets your own instructions (persona, tool policy): pinned first in
        every view as a system message, counted toward the ceiling, never
        faded; setting them again changes them, ``""`` removes them. Over
        64 KiB or half the ceiling raises :class:`InvalidInput`. Returns
        whether they changed. (A ``system`` message added with
        :meth:`add_message` is conversation, and fades.)"""
        if not isinstance(text, str):
            raise InvalidInput("instructions must be a string")
        return bool(self._call("[method]memory.set-instructions", text))

    def instructions(self) -> Optional[str]:
        """Your instructions now, or ``None``."""
        return self._call("[method]memory.instructions")

    def note(self, facts: Iterable[Dict[str, Any]], episode: Optional[int] = None) -> Dict[str, Any]:
        """Writes facts from the ``note`` tool: each a dict with subject,
        predicate, object, sentence and optional kind (fact, agreed, decided,
        done, blocked, next)."""
        records = []
        try:
            facts = list(facts)
        except TypeError:
            raise InvalidInput("note needs a list of facts") from None
        for n, f in enumerate(facts, 1):
            if not isinstance(f, dict):
                raise InvalidInput(f"fact {n} is not an object")
            fields = {}
            for k in ("subject", "predicate", "object", "sentence"):
                if k not in f:
                    raise InvalidInput(f"fact {n} has no {k}")
                fields[k] = _text(f[k], f"fact {n}'s {k}")
            kind = f.get("kind", "fact")
            if kind not in _FACT_KINDS:
                raise InvalidInput(f"fact {n}'s kind {kind!r} is not one of {', '.join(_FACT_KINDS)}")
            records.append(_record(kind=kind, **fields))
        if episode is not None:
            episode = _int(episode, "the episode", 0, _U64)
        return _py(self._call("[method]memory.note", _record(episode=episode, facts=records)))

    def note_tool_call(self, arguments: str | Dict[str, Any]) -> Dict[str, Any]:
        """Runs a ``note`` tool call of your chat model (its arguments, as
        JSON text or a dict)."""
        if isinstance(arguments, str):
            try:
                args = json.loads(arguments)
            except json.JSONDecodeError as e:
                raise InvalidInput(f"the note tool call's arguments are not JSON: {e}") from None
            except RecursionError:
                raise InvalidInput("the note tool call's arguments are nested too deeply") from None
        else:
            args = arguments
        if not isinstance(args, dict) or not isinstance(args.get("facts"), list):
            raise InvalidInput("note arguments need a facts list")
        return self.note(args["facts"], args.get("episode"))

    def episodes(self) -> List[Dict[str, Any]]:
        """Every episode with its state, history, activation now and significance."""
        return _py(self._call("[method]memory.episodes"))

    def messages(self) -> List[Dict[str, Any]]:
        """Every message, in order (forgotten episodes' included), each with
        its ``metadata`` (a dict, or None)."""
        return [_message(m) for m in _py(self._call("[method]memory.messages"))]

    def facts(self) -> List[Dict[str, Any]]:
        """Every fact (retired ones included, with ``retired`` set)."""
        return _py(self._call("[method]memory.facts"))

    def entities(self) -> List[Dict[str, Any]]:
        """Every entity of the knowledge graph with its aliases."""
        return [_entity(e) for e in _py(self._call("[method]memory.entities"))]

    def traces(self) -> List[Dict[str, Any]]:
        """Every stored trace: encoding traces and yes answers (no answers are
        counted per fact, in ``explain_fact(...)["declined"]``)."""
        return [_trace(t) for t in _py(self._call("[method]memory.traces"))]

    def fades(self) -> List[Dict[str, Any]]:
        """Every fade, oldest first: reason (``ceiling``, ``sleep`` or
        ``ahead``), at, view_tokens, ceiling, landing, turn_tokens,
        finished_at, view_after."""
        return _py(self._call("[method]memory.fades"))

    def explain_episode(self, episode: int) -> Dict[str, Any]:
        """Why an episode is in or out of view (``summary`` says it in words)."""
        why = _py(self._call("[method]memory.explain-episode", _int(episode, "an episode id", 0, _U64)))
        why["traces"] = [_trace(t) for t in why["traces"]]
        return why

    def explain_fact(self, fact: int) -> Dict[str, Any]:
        """Why a fact is in the facts block, out of it, or retired."""
        why = _py(self._call("[method]memory.explain-fact", _int(fact, "a fact id", 0, _U64)))
        why["traces"] = [_trace(t) for t in why["traces"]]
        return why

    def export(self) -> str:
        """The whole memory as JSON text, for backup or moving."""
        return self._call("[method]memory.export")

    def import_(self, export: str) -> None:
        """Loads an export into this memory, which must be empty."""
        self._call("[method]memory.import", _text(export, "the export"))

    def export_parts(self, max_bytes: int = 8 << 20) -> Iterator[str]:
        """The export in parts, for a memory whose export is too large to
        hold as one string (the component's 4 GiB, beside its state, holds
        about 1.2 GB of export): JSON text pieces of whole log entries,
        about ``max_bytes`` each (at least 1024), which joined are
        :meth:`export` as it stood when the first part was asked for
        (messages added meanwhile are left for a later export). An erasure
        of this memory between two parts raises :class:`InvalidInput` at
        the next: start again."""
        max_bytes = _int(max_bytes, "max_bytes", 1, _U32)
        cursor = None
        while True:
            part = self._call("[method]memory.export-part", cursor, max_bytes)
            yield part.text
            cursor = part.next
            if cursor is None:
                return

    def export_to(self, out: Any, max_bytes: int = 8 << 20) -> int:
        """Writes the export to ``out`` (a file, or anything with ``write``,
        opened for text or bytes) part by part (:meth:`export_parts`), so
        it is never held whole. Returns the export's length in UTF-8 bytes
        (what a binary file holds)."""
        written = 0
        text = isinstance(out, io.TextIOBase) or (
            isinstance(getattr(out, "mode", None), str) and "b" not in out.mode
        )
        for part in self.export_parts(max_bytes):
            data = part.encode("utf-8")
            out.write(part if text else data)
            written += len(data)
        return written

    def import_from(self, source: Any, piece_bytes: int = 8 << 20) -> None:
        """Loads an export into this memory, which must be empty, from
        ``source``: a file (text or bytes, read ``piece_bytes`` at a time)
        or an iterable of ``str`` or UTF-8 ``bytes`` pieces (the export
        cut anywhere, e.g. :meth:`export_parts`), handed to the component
        piece by piece. Nothing is written until all of it is read and
        checked; if reading fails, what was read is forgotten and the
        memory is unchanged."""
        piece_bytes = _int(piece_bytes, "piece_bytes", 1, _U32)
        if isinstance(source, (str, bytes, bytearray)):
            pieces: Iterable[Any] = [source]
        elif hasattr(source, "read"):
            pieces = iter(lambda: source.read(piece_bytes), source.read(0))
        else:
            pieces = source
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
        try:
            for piece in pieces:
                if isinstance(piece, (bytes, bytearray)):
                    piece = decoder.decode(piece)
                elif isinstance(piece, str):
                    # Bytes cut inside a character, then text: not one export.
                    piece = decoder.decode(b"", final=True) + piece
                else:
                    raise InvalidInput(f"a piece of an export must be text or bytes, not {type(piece).__name__}")
                if piece:
                    self._call("[method]memory.import-piece", _text(piece, "a piece of the export"))
            rest = decoder.decode(b"", final=True)
            if rest:
                self._call("[method]memory.import-piece", rest)
        except BaseException as e:
            self._call("[method]memory.import-discard")
            if isinstance(e, UnicodeDecodeError):
                raise InvalidInput(f"the export is not UTF-8: {e}") from e
            raise
        self._call("[method]memory.import-finish")

    def erase(self, kind: str, id: int | str) -> Erased:
        """Erases a ``"message"``, ``"episode"``, ``"fact"`` or ``"entity"``
        (``id`` its id), or a ``"thread"`` (``id`` its name: every message
        of it) for good, with what depended on it: a message takes its tool exchange
        and the facts noted from its episode, an entity every fact naming it,
        and entities no fact names any more go too. The stored log entries
        and snapshot that held it are rewritten in one conditional write, so
        no stored value (nor the export) keeps its text or embedding; one log
        entry records the erasure (ids and time only). Returns the ids erased
        (empty lists when all of it already was). An unknown kind or id
        raises :class:`InvalidInput`; a failing store changes nothing."""
        if kind == "thread":
            return _py(self._call("[method]memory.erase", Variant("thread", _text(id, "the thread"))))
        if kind not in ("message", "episode", "fact", "entity"):
            raise InvalidInput(f"cannot erase a {kind!r}: erase a message, episode, fact, entity or thread")
        target = Variant(kind, _int(id, f"a {kind} id", 0, _U64))
        return _py(self._call("[method]memory.erase", target))

    def destroy(self) -> None:
        """Deletes the whole memory: every key of its namespace, in one
        conditional write. The memory stays open on the empty namespace."""
        self._call("[method]memory.destroy")

    def stats(self) -> Stats:
        """Counts, the view's size against the ceiling, the work waiting for
        :meth:`maintain` and the model's health, in the npm package's shape
        (``Stats`` in js/index.d.ts): ``messages``, ``episodes`` (``[live,
        leaving, sealed, forgotten]``), ``open_messages``, ``facts``
        (``[live, retired]``), ``entities``, ``traces`` (``[all, yes]``),
        ``fades``, ``log_entries``, ``view_tokens``, ``ceiling``,
        ``pending`` (as :meth:`pending` returns it), ``model`` (``calls``
        and ``failed`` as dicts of task name (``embed`` for embeddings) to
        count, ``consecutive_failures``, ``last_error`` (``{"task", "error",
        "at"}`` or ``None``) and ``degraded_steps``) and
        ``storage_warnings``: why stored data was not used as is since this
        handle opened (a damaged snapshot, ignored and rebuilt from the
        log) and, last, a line starting ``clock:`` when the clock went back
        before the memory's last stamp (the readings were clamped to it)."""
        return _stats(_py(self._call("[method]memory.stats")))


# ---- asyncio -------------------------------------------------------------------


class AsyncMemory:
    """A :class:`Memory` for asyncio code: every call runs in a thread
    (:func:`asyncio.to_thread`), so the event loop is never blocked by the
    component, the store or the model (which stay plain synchronous
    objects, called from that thread). Calls run one at a time in the order
    they were made (an :class:`asyncio.Lock`, first come first served), so
    several tasks may share one memory::

        memory = await AsyncMemory.open("alice")      # Memory's arguments
        await memory.add_message("user", "Let's plan the Lisbon offsite.")
        messages = await memory.render_openai()
        await memory.close()

    Every method of :class:`Memory` is there as a coroutine, with the same
    arguments and results; ``memory.sync`` is the wrapped :class:`Memory`
    (for its attributes, or a call from another thread)."""

    def __init__(self, memory: Memory):
        self.sync = memory
        self._order: Optional[asyncio.Lock] = None

    @classmethod
    async def open(cls, namespace: str, *args: Any, **kwargs: Any) -> "AsyncMemory":
        """Opens a :class:`Memory` (loading the component and the store) in
        a thread; the arguments are :class:`Memory`'s."""
        return cls(await asyncio.to_thread(Memory, namespace, *args, **kwargs))

    @classmethod
    async def open_salvage(cls, namespace: str, *args: Any, **kwargs: Any) -> "AsyncMemory":
        """:meth:`Memory.open_salvage` in a thread: read-only, with whatever
        of a damaged log can be read."""
        return cls(await asyncio.to_thread(Memory.open_salvage, namespace, *args, **kwargs))

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._order is None:
            self._order = asyncio.Lock()
        async with self._order:
            return await asyncio.to_thread(fn, *args, **kwargs)

    async def add_message(self, role: str, content: str = "", **kwargs: Any) -> Added:
        return await self._run(self.sync.add_message, role, content, **kwargs)

    async def add_openai_message(self, message: Dict[str, Any], **kwargs: Any) -> Added:
        return await self._run(self.sync.add_openai_message, message, **kwargs)

    async def abandon_tool_call(self, call_id: str) -> Added:
        return await self._run(self.sync.abandon_tool_call, call_id)

    async def add_messages(self, messages: Iterable[Dict[str, Any]], **kwargs: Any) -> Batch:
        """:meth:`Memory.add_messages` in a thread (``progress`` is called
        from that thread)."""
        return await self._run(self.sync.add_messages, messages, **kwargs)

    async def threads(self) -> List[ThreadInfo]:
        return await self._run(self.sync.threads)

    async def view(self, **kwargs: Any) -> View:
        return await self._run(self.sync.view, **kwargs)

    async def render_openai(self, **kwargs: Any) -> List[Dict[str, Any]]:
        return await self._run(self.sync.render_openai, **kwargs)

    async def maintain(self, **kwargs: Any) -> Maintained:
        return await self._run(self.sync.maintain, **kwargs)

    async def pending(self, **kwargs: Any) -> Pending:
        return await self._run(self.sync.pending, **kwargs)

    async def end_turn(self, **kwargs: Any) -> Optional[List[Any]]:
        return await self._run(self.sync.end_turn, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> List[Dict[str, Any]]:
        return await self._run(self.sync.search, query, **kwargs)

    async def hit_text(self, item: Dict[str, Any]) -> str:
        return await self._run(self.sync.hit_text, item)

    async def stats(self) -> Stats:
        return await self._run(self.sync.stats)

    async def erase(self, kind: str, id: int | str) -> Erased:
        return await self._run(self.sync.erase, kind, id)

    async def destroy(self) -> None:
        return await self._run(self.sync.destroy)

    async def export(self) -> str:
        return await self._run(self.sync.export)

    async def import_(self, export: str) -> None:
        return await self._run(self.sync.import_, export)

    async def export_to(self, out: Any, max_bytes: int = 8 << 20) -> int:
        """:meth:`Memory.export_to` in a thread: the export written part by
        part (the file is written from that thread)."""
        return await self._run(self.sync.export_to, out, max_bytes)

    async def import_from(self, source: Any, piece_bytes: int = 8 << 20) -> None:
        """:meth:`Memory.import_from` in a thread (a file, or a plain
        iterable of pieces; it is read from that thread)."""
        return await self._run(self.sync.import_from, source, piece_bytes)

    async def close(self) -> None:
        """Closes the memory once the calls made before have run."""
        await self._run(self.sync.close)

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Any other method of :class:`Memory` (``episodes``, ``facts``,
        ``note``, ``export``, ...), as a coroutine function."""
        fn = getattr(self.sync, name)
        if not callable(fn) or name.startswith("_"):
            raise AttributeError(name)

        @functools.wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._run(fn, *args, **kwargs)

        return call
