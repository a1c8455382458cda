"""engram from Python: long-term memory for LLM chat agents.

This module runs the engram WASI component (``engram.wasm``, built from the
engram crate with ``scripts/build-component``) in wasmtime (PyPI
``wasmtime==50.0.1``) and gives it what it imports from its host:

* a **store**: :class:`SQLiteStore` (a real file, one transaction per
  commit), :class:`MemoryStore`, or any object with the same five methods;
* a **model**: :class:`OpenAIModel` for any OpenAI-compatible endpoint
  (urllib only), :class:`CallableModel` around your own functions, or any
  object with ``complete(request)`` and ``embed(texts)``;
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

Every method maps to one call of the component's ``memory`` resource.
Results are plain Python values: records become dicts with snake_case keys,
enums become strings, and variants with a payload become
``{"kind": case, "value": payload}``. Errors raise :class:`EngramError`
subclasses; a call that raises has changed nothing in the store.

A model task that fails every attempt does not fail the call: the step
degrades (no cut judged here, a recall block kept whole, a note deferred...)
and is reported: in the call's result (``added["degraded"]``), to the
``on_degraded`` callback (once per step, after every call), and counted in
``stats()["model"]``. With ``config={"strict": True}`` such a step raises
:class:`ModelError` instead, and nothing is written.

A :class:`Memory` runs one call at a time (calls from several threads are
serialised by a lock). Several :class:`Memory` objects, even in several
processes, may share one store and namespace: each commit is a
compare-and-set on the log head, and the loser reloads and retries.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

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
    "StoreConflict",
    "default_component_path",
]

_WIT_VERSION = "0.1.0"
_ENGINE_EXPORT = f"engram:memory/engine@{_WIT_VERSION}"


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


class MemoryStore:
    """A store in a dict: fast, and gone with the process. Good for tests."""

    def __init__(self) -> None:
        self.data: Dict[str, str] = {}

    def get(self, key: str) -> Optional[str]:
        return self.data.get(key)

    def put(self, key: str, value: str) -> None:
        self.data[key] = value

    def delete(self, key: str) -> None:
        self.data.pop(key, None)

    def list_prefix(self, prefix: str) -> List[str]:
        return sorted((k for k in self.data if k.startswith(prefix)), key=lambda k: k.encode())

    def write_if(self, guard: str, expected: Optional[str], writes: Sequence[Tuple[str, Optional[str]]]) -> bool:
        if self.data.get(guard) != expected:
            return False
        for key, value in writes:
            if value is None:
                self.data.pop(key, None)
            else:
                self.data[key] = value
        return True


class SQLiteStore:
    """A store in one SQLite file (Python's sqlite3).

    One table ``engram_kv(key, value)``; many memories (namespaces) can share
    a file. ``write_if`` checks the guard and applies every write inside one
    ``BEGIN IMMEDIATE`` transaction, so it is atomic and safe against other
    connections and processes writing the same file.
    """

    def __init__(self, path: str | os.PathLike, *, timeout: float = 30.0):
        self.path = str(path)
        self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS engram_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"
            )

    def get(self, key: str) -> Optional[str]:
        with self._lock:
            row = self._db.execute("SELECT value FROM engram_kv WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?, ?)", (key, value))

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

    def write_if(self, guard: str, expected: Optional[str], writes: Sequence[Tuple[str, Optional[str]]]) -> bool:
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT value FROM engram_kv WHERE key = ?", (guard,)).fetchone()
                if (None if row is None else row[0]) != expected:
                    db.execute("ROLLBACK")
                    return False
                for key, value in writes:
                    if value is None:
                        db.execute("DELETE FROM engram_kv WHERE key = ?", (key,))
                    else:
                        db.execute("INSERT OR REPLACE INTO engram_kv (key, value) VALUES (?, ?)", (key, value))
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
    """Where the component is looked for: ``$ENGRAM_COMPONENT``, else the
    release build of the repository this file is in."""
    env = os.environ.get("ENGRAM_COMPONENT")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "target" / "wasm32-wasip2" / "release" / "engram.wasm"


_loaded: Dict[str, Tuple[wasmtime.Engine, Component]] = {}
_loaded_lock = threading.Lock()


def _load(path: Path) -> Tuple[wasmtime.Engine, Component]:
    """One engine and compiled component per path and process. Compiled code
    is cached on disk by wasmtime, so later processes start faster."""
    key = str(path.resolve())
    with _loaded_lock:
        if key not in _loaded:
            if not path.exists():
                raise FileNotFoundError(f"no engram component at {path}: run scripts/build-component")
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


# The shapes wasmtime-py expects from host functions: it passes a `result`
# untagged (the bare ok value, or the bare error value) when its two sides
# hold different Python types, and as `Variant("ok"|"err", ...)` otherwise.
# `store-error` is itself untagged: None is `conflict`, a str is `failed`.
_OK = Variant("ok")


def _tool_call(c: Any) -> Record:
    if isinstance(c, dict):
        if "function" in c:  # the OpenAI shape
            return _record(id=c["id"], name=c["function"]["name"], arguments=c["function"].get("arguments", ""))
        return _record(id=c["id"], name=c["name"], arguments=c.get("arguments", ""))
    return _record(id=c.id, name=c.name, arguments=c.arguments)


class Memory:
    """One engram memory: a conversation, its episodes and its knowledge
    graph, kept in ``store`` under ``namespace``.

    ``namespace``: 1 to 128 letters, digits or ``._-:@``. ``store``: where the
    memory lives (default: a new :class:`MemoryStore`). ``model``: the LLM
    and embedder (:class:`OpenAIModel`, :class:`CallableModel`, or an object
    with ``complete`` and ``embed``). ``clock``: returns ms since the Unix
    epoch (default: the wall clock). ``config``: a dict (or JSON text) of the
    tuning fields to change, e.g. ``{"ceiling_tokens": 8000}``.
    ``component``: the ``engram.wasm`` to run (default:
    :func:`default_component_path`). ``on_degraded``: called with each step
    that went on without the model (a dict: task, error, attempts, at,
    effect), once per step, after every call that degraded one (failed calls
    included); also settable later as ``memory.on_degraded``. An exception it
    raises comes out of the call (whose work is committed all the same).

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
        component: str | os.PathLike | None = None,
        on_degraded: Optional[Callable[[Dict[str, Any]], Any]] = None,
    ):
        if model is None:
            raise TypeError("Memory needs a model: OpenAIModel(...), CallableModel(...) or your own")
        self.namespace = namespace
        self.store = MemoryStore() if store is None else store
        self.model = model
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.on_degraded = on_degraded
        if config is None:
            self._config = "{}"
        elif isinstance(config, str):
            self._config = config
        else:
            self._config = json.dumps(config)
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
                i.add_func("now-ms", lambda _s: int(self.clock()))
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
        self._handle = self._call("[static]memory.open", self.namespace, self._config, method=False)

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
                raise RuntimeError("this Memory is closed; open a new one (the store keeps everything)")
            if self._wasm is None and method:
                # The last call trapped: start a fresh instance. The store
                # holds everything, so nothing is lost.
                self._start()
            f = self._funcs.get(name)
            if f is None:
                f = self._funcs[name] = self._func(name)
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

    def _guard(self, fn: Callable[[], Any], err: Callable[[str], Any]) -> Any:
        try:
            return fn()
        except Exception as e:  # becomes an error value; kept as the __cause__
            self._raised = e
            return err(f"{type(e).__name__}: {e}")

    def _host_get(self, _s: Any, key: str) -> Any:
        return self._guard(lambda: Variant("ok", self.store.get(key)), lambda m: Variant("err", m))

    def _host_put(self, _s: Any, key: str, value: str) -> Any:
        return self._guard(lambda: (self.store.put(key, value), _OK)[1], lambda m: Variant("err", m))

    def _host_delete(self, _s: Any, key: str) -> Any:
        return self._guard(lambda: (self.store.delete(key), _OK)[1], lambda m: Variant("err", m))

    def _host_list(self, _s: Any, prefix: str) -> Any:
        return self._guard(lambda: [str(k) for k in self.store.list_prefix(prefix)], lambda m: m)

    def _host_write_if(self, _s: Any, guard: str, expected: Optional[str], writes: List[Tuple[str, Optional[str]]]) -> Any:
        def run() -> Any:
            try:
                applied = self.store.write_if(guard, expected, list(writes))
            except StoreConflict:
                applied = False
            return _OK if applied is not False else Variant("err", None)

        return self._guard(run, lambda m: Variant("err", m))

    def _host_complete(self, _s: Any, request: Record) -> Any:
        r = TaskRequest(
            task=request.task,
            system=request.system,
            content=request.content,
            schema=request.schema,
            attempt=request.attempt,
        )
        return self._guard(lambda: Variant("ok", str(self.model.complete(r))), lambda m: Variant("err", m))

    def _host_embed(self, _s: Any, texts: List[str]) -> Any:
        return self._guard(lambda: [[float(x) for x in v] for v in self.model.embed(list(texts))], lambda m: m)

    def _host_count(self, _s: Any, text: str) -> Optional[int]:
        count = getattr(self.model, "count_tokens", None)
        if count is None:
            return None
        n = count(text)
        return None if n is None else int(n)

    # -- the engine --

    @staticmethod
    def note_tool(component: str | os.PathLike | None = None) -> Dict[str, Any]:
        """The ``note`` tool definition (OpenAI tools format) to offer your
        chat model; pass its calls to :meth:`note_tool_call`."""
        engine, comp = _load(Path(component) if component else default_component_path())
        linker = Linker(engine)
        linker.add_wasip2()
        linker.define_unknown_imports_as_traps(comp)
        wasm = wasmtime.Store(engine)
        wasm.set_wasi(wasmtime.WasiConfig())
        instance = linker.instantiate(wasm, comp)
        index = instance.get_export_index(wasm, "[static]memory.note-tool", instance.get_export_index(wasm, _ENGINE_EXPORT))
        return json.loads(instance.get_func(wasm, index)(wasm))

    def add_message(
        self,
        role: str,
        content: str = "",
        *,
        tool_calls: Optional[Iterable[Any]] = None,
        tool_call_id: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Adds a message (``role``: system, user, assistant or tool). Tool
        calls are dicts ``{"id", "name", "arguments"}`` or in the OpenAI shape.

        A user message costs one round of model calls (its boundary judgment
        and the replies' waiting ones, recall's split and relevance walk,
        distill of earlier turns, together); any other message makes none. A
        reply that ends the turn then runs :meth:`maintain` in the same call
        (config ``maintain_after_reply``, default on).

        Returns ``{"message", "formed", "slept", "fade", "recall",
        "distilled", "degraded", "maintained", "maintain_error"}``:
        ``degraded`` lists the steps that went on without the model,
        ``maintained`` what the maintain after a reply did (as
        :meth:`maintain` returns it) and ``maintain_error`` why it failed, if
        it did (the message itself is committed)."""
        m = _record(
            role=role,
            content=content or "",
            tool_calls=[_tool_call(c) for c in (tool_calls or [])],
            tool_call_id=tool_call_id,
        )
        return _py(self._call("[method]memory.add-message", m))

    def add_openai_message(self, message: Dict[str, Any]) -> Dict[str, Any]:
        """Adds a message given as an OpenAI chat message dict."""
        return self.add_message(
            message["role"],
            message.get("content") or "",
            tool_calls=message.get("tool_calls"),
            tool_call_id=message.get("tool_call_id"),
        )

    def view(self) -> Dict[str, Any]:
        """The view, structured: ``{"items": [...], "tokens", "ceiling",
        "over_ceiling"}`` (``over_ceiling``: why the view is over the
        ceiling, when it is, else ``None``); each item has kind, role, text,
        tokens, message, episode, facts, tool_calls, tool_call_id."""
        return _py(self._call("[method]memory.view"))

    def render_openai(self) -> List[Dict[str, Any]]:
        """The view as an OpenAI ``messages`` list, ready to send."""
        return json.loads(self._call("[method]memory.render-openai"))

    def view_at(self, at: int) -> Dict[str, Any]:
        """The view as it was at ``at`` (ms since the Unix epoch), rebuilt
        from the log. Writes nothing."""
        return _py(self._call("[method]memory.view-at", int(at)))

    def render_openai_at(self, at: int) -> List[Dict[str, Any]]:
        """:meth:`view_at` as an OpenAI ``messages`` list."""
        return json.loads(self._call("[method]memory.render-openai-at", int(at)))

    def end_turn(self) -> Optional[Dict[str, Any]]:
        """Ends the turn explicitly (after a reply with tool calls, say):
        :meth:`maintain` with the latest turn counted as over. Returns
        ``{"block", "distillation"}`` for the latest user message's recall
        block if it was distilled now, else ``None``."""
        return _py(self._call("[method]memory.end-turn"))

    def maintain(self) -> Dict[str, Any]:
        """Runs the work that waits after a reply, when you choose (after
        the reply, on idle): boundary judgments of messages waiting for one,
        distill of every recall block whose turn is over, the notes of
        leaving episodes, a fade ahead when the next turn would not fit,
        retries of deferred notes. Committed before it returns. Returns
        ``{"judged", "formed", "distilled", "fade", "sealed", "deferred",
        "noted_late", "abandoned", "gave_way", "degraded"}`` (``distilled``:
        a list of ``{"block", "distillation"}``)."""
        return _py(self._call("[method]memory.maintain"))

    def pending(self) -> Dict[str, Any]:
        """Work waiting for :meth:`maintain`: ``{"unjudged", "undistilled",
        "leaving", "awaiting_note", "fade_ahead"}``. Calls no model, writes
        nothing."""
        return _py(self._call("[method]memory.pending"))

    def take_degraded(self) -> List[Dict[str, Any]]:
        """Degraded steps not taken yet, oldest first (each a dict: task,
        error, attempts, at, effect); taking empties the list. With an
        ``on_degraded`` callback the callback has taken them already."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this Memory is closed; open a new one (the store keeps everything)")
            if self._wasm is None:
                return []  # a fresh instance has none
            return self._take_degraded()

    def search(
        self, query: str, *, limit: int = 10, walk: bool = False, include_in_view: bool = True
    ) -> List[Dict[str, Any]]:
        """Searches the memory on demand (facts and passages, by words and by
        meaning, fused; ``walk=True`` also runs the relevance walk, which
        calls the model). Changes nothing. Each hit: item
        (``{"kind": "fact"|"passage", "value": id}``), text, said_at, score,
        hits, hop, retired."""
        options = _record(limit=int(limit), walk=bool(walk), include_in_view=bool(include_in_view))
        return _py(self._call("[method]memory.search", query, options))

    def recalls(self) -> List[Dict[str, Any]]:
        """Every recall block: its parts, what each search and the walk
        found, and distill's decision."""
        return _py(self._call("[method]memory.recalls"))

    def explain_recall(self, fact: int) -> List[Dict[str, Any]]:
        """Why a fact was recalled, one explanation per block that holds it."""
        return _py(self._call("[method]memory.explain-recall", fact))

    def note(self, facts: Iterable[Dict[str, Any]], episode: Optional[int] = None) -> Dict[str, Any]:
        """Writes facts from the ``note`` tool: each a dict with subject,
        predicate, object, sentence and optional kind (fact, agreed, decided,
        done, blocked, next)."""
        records = [
            _record(
                subject=f["subject"],
                predicate=f["predicate"],
                object=f["object"],
                sentence=f["sentence"],
                kind=f.get("kind", "fact"),
            )
            for f in facts
        ]
        return _py(self._call("[method]memory.note", _record(episode=episode, facts=records)))

    def note_tool_call(self, arguments: str | Dict[str, Any]) -> Dict[str, Any]:
        """Runs a ``note`` tool call of your chat model (its arguments, as
        JSON text or a dict)."""
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
        if not isinstance(args, dict) or not isinstance(args.get("facts"), list):
            raise InvalidInput("note arguments need a facts list")
        return self.note(args["facts"], args.get("episode"))

    def episodes(self) -> List[Dict[str, Any]]:
        """Every episode with its state, history, activation now and significance."""
        return _py(self._call("[method]memory.episodes"))

    def messages(self) -> List[Dict[str, Any]]:
        """Every message, in order (forgotten episodes' included)."""
        return _py(self._call("[method]memory.messages"))

    def facts(self) -> List[Dict[str, Any]]:
        """Every fact (retired ones included, with ``retired`` set)."""
        return _py(self._call("[method]memory.facts"))

    def entities(self) -> List[Dict[str, Any]]:
        """Every entity of the knowledge graph with its aliases."""
        return _py(self._call("[method]memory.entities"))

    def traces(self) -> List[Dict[str, Any]]:
        """Every trace (yes and no answers)."""
        return _py(self._call("[method]memory.traces"))

    def fades(self) -> List[Dict[str, Any]]:
        """Every fade, oldest first: reason (``ceiling``, ``sleep`` or
        ``ahead``), at, view_tokens, ceiling, landing, turn_tokens,
        finished_at, view_after."""
        return _py(self._call("[method]memory.fades"))

    def explain_episode(self, episode: int) -> Dict[str, Any]:
        """Why an episode is in or out of view (``summary`` says it in words)."""
        return _py(self._call("[method]memory.explain-episode", episode))

    def explain_fact(self, fact: int) -> Dict[str, Any]:
        """Why a fact is in the facts block, out of it, or retired."""
        return _py(self._call("[method]memory.explain-fact", fact))

    def export(self) -> str:
        """The whole memory as JSON text, for backup or moving."""
        return self._call("[method]memory.export")

    def import_(self, export: str) -> None:
        """Loads an export into this memory, which must be empty."""
        self._call("[method]memory.import", export)

    def stats(self) -> Dict[str, Any]:
        """Counts, the view's size against the ceiling, the work waiting for
        :meth:`maintain` (``pending``, as :meth:`pending` returns it) and the
        model's health as this handle saw it (``model``: ``calls`` and
        ``failed`` as dicts of task name (``embed`` for embeddings) to count,
        ``consecutive_failures``, ``last_error`` (``{"task", "error", "at"}``
        or ``None``) and ``degraded_steps``)."""
        stats = _py(self._call("[method]memory.stats"))
        model = stats["model"]
        model["calls"] = dict(model["calls"])
        model["failed"] = dict(model["failed"])
        return stats
