"""The :class:`Memory` class: one engram memory, a ``memory`` resource of
the component, with the host's store, model and clock behind its imports.
It owns the Python concerns: one call at a time, a fresh instance after a
trap, the callbacks' deadlines and errors, ``on_degraded``; every memory
decision stays in the component.
"""

from __future__ import annotations

import codecs
import io
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, NoReturn, cast

import wasmtime
from wasmtime.component import Func, Variant

from engram_host import convert, runtime
from engram_host.errors import CallbackTimeout, ClosedError, EngramError, InvalidInput, from_wit
from engram_host.models import Model, ModelUnavailable, TaskModel, TaskRequest, choose_sources
from engram_host.records import (
    Added,
    Batch,
    Degraded,
    DistilledBlock,
    Entity,
    EpisodeExplanation,
    EpisodeInfo,
    EpisodePage,
    EpisodeState,
    Erased,
    Fact,
    FactExplanation,
    FactFilter,
    FactHistory,
    FactPage,
    Fade,
    Maintained,
    Message,
    MessageExplanation,
    MessagePage,
    NewFact,
    NoteArgs,
    NoteOutcome,
    NoteTool,
    OpenAIMessage,
    Pending,
    RecallBlock,
    RecallExplanation,
    RecallItem,
    Remembered,
    ResponsesItem,
    RoundTrips,
    SearchFilter,
    SearchHit,
    Stats,
    ThreadInfo,
    Trace,
    View,
)
from engram_host.stores import MemoryStore, Store, StoreConflict

if TYPE_CHECKING:  # Python 3.10 has no typing.Self; annotations are not evaluated
    from typing_extensions import Self

#: The most messages one call of the component's ``add-messages`` takes
#: (:meth:`Memory.add_messages` splits longer lists).
MAX_BATCH = 1000


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
    (10 s): the most each callback may take (see Deadlines in the package's docs);
    callbacks run on a worker thread of this Memory. ``None`` runs that kind
    of callback on the calling thread with no deadline (for a store whose
    connection must stay on the thread that made it).

    Config fields of the turn (all optional): ``strict`` (False: a model
    step that fails degrades; True: it raises :class:`ModelError` and writes
    nothing), ``maintain_after_reply`` (True: a reply that ends the turn runs
    :meth:`maintain` in the same call), ``fade_ahead`` (True),
    ``split_with_model`` (True), ``walk_with_model`` (True), ``note_retries``
    (3), ``recall_share`` (0.25), ``strong_boundary`` (0.9),
    ``fresh_for_ms`` (0: every call reads the log head; a backend holding a
    handle per user: 1000, see docs/stores.md, "Round trips"); see
    ``wit/engram.wit`` (``open``) for what each does.
    """

    def __init__(
        self,
        namespace: str,
        store: Store | None = None,
        model: TaskModel | Literal["offline"] | None = None,
        clock: Callable[[], float] | None = None,
        config: str | dict[str, Any] | None = None,
        *,
        embedder: Literal["offline"] | None = None,
        component: str | os.PathLike[str] | None = None,
        on_degraded: Callable[[Degraded], object] | None = None,
        model_timeout: float | None = 60.0,
        store_timeout: float | None = 10.0,
        clock_timeout: float | None = 10.0,
        salvage: bool = False,
    ):
        # Where the tasks are answered and where texts are embedded.
        host_model, self.complete_source, self.embed_source = choose_sources(model, embedder)
        for name, t in (
            ("model_timeout", model_timeout),
            ("store_timeout", store_timeout),
            ("clock_timeout", clock_timeout),
        ):
            if t is not None and not (isinstance(t, (int, float)) and t > 0 and math.isfinite(t)):
                raise ValueError(f"{name} must be a positive number of seconds or None, not {t!r}")
        self.model_timeout = model_timeout
        self.store_timeout = store_timeout
        self.clock_timeout = clock_timeout
        self._worker = runtime.Worker()
        self.namespace = convert.text(namespace, "the namespace")
        self.store: Store = MemoryStore() if store is None else store
        self.model: TaskModel | None = host_model
        self.clock: Callable[[], float] = clock or (lambda: int(time.time() * 1000))
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
        self._engine, self._component = runtime.load(runtime.component_path(component))
        self._lock = threading.RLock()
        self._raised: BaseException | None = None
        self._wasm: wasmtime.Store | None = None
        self._handle: Any = None
        self._funcs: dict[str, Func] = {}
        self._func: runtime.Exports  # set by _start
        self._closed = False
        # The store calls this handle made since it opened, by kind
        # (``stats()["round_trips"]``).
        self._trips = {"get": 0, "get_many": 0, "put": 0, "delete": 0, "list": 0, "write_if": 0, "total": 0}
        with self._lock:
            self._start()

    # -- lifecycle --

    def _start(self) -> None:
        """Instantiates the component and opens the memory."""
        imports = runtime.Imports(
            now_ms=self._host_now,
            get=self._host_get,
            get_many=self._host_get_many,
            put=self._host_put,
            delete=self._host_delete,
            list_prefix=self._host_list,
            write_if=self._host_write_if,
            complete=self._host_complete,
            embed=self._host_embed,
            count_tokens=self._host_count,
        )
        wasm, func = runtime.instantiate(self._engine, self._component, imports)
        self._funcs = {}
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
    def open_salvage(
        cls,
        namespace: str,
        store: Store | None = None,
        model: TaskModel | Literal["offline"] | None = None,
        *args: Any,
        **kwargs: Any,
    ) -> Memory:
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
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
            convert.check_texts(list(args))
            self._raised = None
            wasm = cast(wasmtime.Store, self._wasm)  # set by _start, just above if it was not
            try:
                out = f(wasm, self._handle, *args) if method else f(wasm, *args)
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
        on_degraded = self.on_degraded
        for d in degraded:
            if on_degraded is not None:
                on_degraded(d)
        if isinstance(out, Variant) and out.tag == "ok":
            return out.payload
        if isinstance(out, Variant) and out.tag == "err":
            out = out.payload
        if isinstance(out, Variant):  # a memory-error
            raise from_wit(out) from raised
        return out

    def _take_degraded(self) -> list[Degraded]:
        """The component's queue of degraded steps, taken (emptied). Called
        with the lock held, on a live instance."""
        name = "[method]memory.take-degraded"
        f = self._funcs.get(name)
        if f is None:
            f = self._funcs[name] = self._func(name)
        wasm = cast(wasmtime.Store, self._wasm)
        try:
            return cast("list[Degraded]", convert.plain(f(wasm, self._handle)))
        except BaseException:
            self._wasm, self._handle = None, None
            raise

    # -- host callbacks (called by the component) --
    # Each runs on the worker thread with its deadline. Store and model
    # failures become the component's error values (the exception is kept as
    # the __cause__); answers that the WIT types cannot hold are failures too.

    def _guard(self, fn: Callable[[], Any], err: Callable[[str], Any], timeout: float | None, what: str) -> Any:
        try:
            return self._worker.run(fn, timeout, what)
        except Exception as e:  # noqa: BLE001 (becomes an error value; kept as the __cause__)
            self._raised = e
            return err(f"{type(e).__name__}: {e}")

    def _store(self, fn: Callable[[], Any], err: Callable[[str], Any], what: str) -> Any:
        self._trips["list" if what == "list_prefix" else what] += 1
        self._trips["total"] += 1
        return self._guard(fn, err, self.store_timeout, f"the store's {what}")

    def _model(self, fn: Callable[[], Any], err: Callable[[str], Any], what: str) -> Any:
        before = self._raised
        answer = self._guard(fn, err, self.model_timeout, f"the model's {what}")
        # A call abandoned at its deadline is cancelled on the wire when the
        # model can (OpenAIModel closes its connection).
        late = self._raised
        abandon = getattr(self.model, "abandon", None)
        if late is not before and isinstance(late, CallbackTimeout) and late.thread is not None and callable(abandon):
            abandon(late.thread)
        return answer

    def _fail(self, e: BaseException) -> NoReturn:
        """Fails the running call with ``e`` (a trap: the instance is
        restarted on the next call; nothing was committed by this one)."""
        self._raised = e
        raise e

    def _host_now(self, _s: Any) -> int:
        try:
            reading = self._worker.run(self.clock, self.clock_timeout, "the clock")
            return convert.clock_reading(reading)
        except BaseException as e:  # noqa: BLE001 (_fail raises it again, from the call)
            return self._fail(e)

    @staticmethod
    def _stored_bytes(key: str, value: Any) -> bytes | None:
        """A value the store read for ``key``: bytes, or None when absent."""
        if value is None:
            return None
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"the store's value at {key!r} is a {type(value).__name__}, not bytes"
                " (store values are bytes: keep them as given)"
            )
        return bytes(value)

    def _host_get(self, _s: Any, key: str) -> Any:
        def run() -> Any:
            return Variant("ok", self._stored_bytes(key, self.store.get(key)))

        return self._store(run, lambda m: Variant("err", m), "get")

    def _host_get_many(self, _s: Any, keys: list[str]) -> Any:
        many = getattr(self.store, "get_many", None)
        if not callable(many):
            # An optional method: a store without it is read key by key
            # (each key one call, as the engine would have made them).
            values = []
            for key in keys:
                got = self._host_get(_s, key)
                if got.tag != "ok":
                    return got.payload  # (the result is untagged: a list, or the error)
                values.append(got.payload)
            return values

        def run() -> Any:
            values = list(many(list(keys)))
            if len(values) != len(keys):
                raise ValueError(f"the store's get_many returned {len(values)} values for {len(keys)} keys")
            return [self._stored_bytes(key, value) for key, value in zip(keys, values)]

        # (The result is untagged: its sides are a list and a str.)
        return self._store(run, lambda m: m, "get_many")

    def _host_put(self, _s: Any, key: str, value: bytes) -> Any:
        def run() -> Variant:
            self.store.put(key, value)
            return convert.OK

        return self._store(run, lambda m: Variant("err", m), "put")

    def _host_delete(self, _s: Any, key: str) -> Any:
        def run() -> Variant:
            self.store.delete(key)
            return convert.OK

        return self._store(run, lambda m: Variant("err", m), "delete")

    def _host_list(self, _s: Any, prefix: str) -> Any:
        def run() -> Any:
            keys = [str(k) for k in self.store.list_prefix(prefix)]
            if any(convert.bad_text(k) for k in keys):
                raise ValueError("the store listed a key that is not valid Unicode text")
            return keys

        return self._store(run, lambda m: m, "list_prefix")

    def _host_write_if(
        self, _s: Any, guard: str, expected: bytes | None, writes: list[tuple[str, bytes | None]]
    ) -> Any:
        def run() -> Any:
            try:
                applied = self.store.write_if(guard, expected, list(writes))
            except StoreConflict:
                applied = False
            return convert.OK if applied is not False else Variant("err", None)

        return self._store(run, lambda m: Variant("err", m), "write_if")

    def _host_complete(self, _s: Any, request: Any) -> Any:
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
            bad = convert.bad_text(answer)
            if bad:
                raise ValueError(f"the answer is not valid Unicode text: {bad}")
            return Variant("ok", answer)

        return self._model(run, lambda m: Variant("err", m), f"complete ({r.task})")

    def _host_embed(self, _s: Any, texts: list[str]) -> Any:
        def run() -> Any:
            if self.model is None or self.embed_source == "offline":  # the component does not ask
                raise RuntimeError("this memory embeds with the offline embedder, not the host's model")
            # Embedding with the host means the model embeds (a Model).
            model = cast(Model, self.model)
            return [[float(x) for x in v] for v in model.embed(list(texts))]

        return self._model(run, lambda m: m, "embed")

    def _host_count(self, _s: Any, text: str) -> int | None:
        count = getattr(self.model, "count_tokens", None)
        if count is None:
            return None
        try:
            n = self._worker.run(lambda: count(text), self.model_timeout, "the model's count_tokens")
        except CallbackTimeout:
            return None  # no count in time: engram estimates
        except BaseException as e:  # noqa: BLE001 (_fail raises it again, from the call)
            return self._fail(e)
        try:
            return convert.token_count(n)
        except InvalidInput as e:
            return self._fail(e)

    # -- the engine --

    @staticmethod
    def note_tool(component: str | os.PathLike[str] | None = None) -> NoteTool:
        """The ``note`` tool definition (OpenAI tools format) to offer your
        chat model; pass its calls to :meth:`note_tool_call`."""
        wasm, func = runtime.bare(component, runtime.ENGINE_EXPORT)
        return cast(NoteTool, json.loads(func("[static]memory.note-tool")(wasm)))

    @staticmethod
    def offline_complete(request: TaskRequest, component: str | os.PathLike[str] | None = None) -> str:
        """The built-in offline model's answer to ``request`` (JSON text),
        computed by the component with no memory open. Raises
        :class:`ModelUnavailable` when it cannot read the request."""
        wasm, func = runtime.bare(component, runtime.OFFLINE_EXPORT)
        r = convert.record(
            task=request.task,
            system=request.system,
            content=request.content,
            schema=request.schema,
            attempt=request.attempt,
        )
        out = func("complete")(wasm, r)
        if isinstance(out, Variant):
            if out.tag == "ok":
                return cast(str, out.payload)
            raise ModelUnavailable(out.payload)
        return cast(str, out)

    @staticmethod
    def offline_embed(texts: list[str], component: str | os.PathLike[str] | None = None) -> list[list[float]]:
        """The offline hashing embedder's vectors for ``texts`` (unit
        vectors, all of one dimension), computed by the component."""
        wasm, func = runtime.bare(component, runtime.OFFLINE_EXPORT)
        checked = convert.texts(texts, "a text")
        return [list(v) for v in func("embed")(wasm, checked)]

    def add_message(
        self,
        role: str,
        content: str = "",
        *,
        tool_calls: Iterable[Any] | None = None,
        tool_call_id: str | None = None,
        client_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        thread: str | None = None,
        at: int | None = None,
        replaces: int | None = None,
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

        ``replaces``: for a regenerated answer (assistant only), the id of
        the user message of its thread it answers again. The messages after
        that one still shown (the earlier answer, its tool calls and outputs
        included) are replaced: kept, listed by :meth:`messages` with
        ``replaced_by``, explained by :meth:`explain_message`, left out of
        the view. Nothing after it: it replaces nothing.

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
        m = convert.new_message(role, content, tool_calls, tool_call_id, client_id, thread, at, metadata, replaces)
        return convert.added(convert.plain(self._call("[method]memory.add-message", m)))

    def add_openai_message(
        self,
        message: OpenAIMessage | dict[str, Any],
        *,
        client_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        thread: str | None = None,
        at: int | None = None,
    ) -> Added:
        """Adds a message given as an OpenAI chat message dict (``client_id``,
        ``metadata``, ``thread`` and ``at`` as for :meth:`add_message`)."""
        if not isinstance(message, dict) or "role" not in message:
            raise InvalidInput("an OpenAI message is a dict with a role")
        m: dict[str, Any] = cast("dict[str, Any]", message)
        return self.add_message(
            m["role"],
            m.get("content") or "",
            tool_calls=m.get("tool_calls"),
            tool_call_id=m.get("tool_call_id"),
            client_id=client_id,
            metadata=metadata,
            thread=thread,
            at=at,
        )

    def add_messages(
        self,
        messages: Iterable[OpenAIMessage | dict[str, Any]],
        *,
        progress: Callable[[int, int], object] | None = None,
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
            items: list[Any] = list(messages)
        except TypeError:
            raise InvalidInput("add_messages takes a list of message dicts") from None
        for i, m in enumerate(items):
            if not isinstance(m, dict) or "role" not in m:
                raise InvalidInput(f"message {i} of the batch is not a dict with a role")
            unknown = set(m) - convert.BATCH_KEYS
            if unknown:
                raise InvalidInput(f"message {i} of the batch has unknown fields: {', '.join(sorted(unknown))}")
            try:
                records.append(
                    convert.new_message(
                        m["role"],
                        m.get("content"),
                        m.get("tool_calls"),
                        m.get("tool_call_id"),
                        m.get("client_id"),
                        m.get("thread"),
                        m.get("at"),
                        m.get("metadata"),
                        m.get("replaces"),
                    )
                )
            except InvalidInput as e:
                raise InvalidInput(f"message {i} of the batch: {e.message}") from None
        out: Batch = {"messages": [], "duplicates": []}
        total = len(records)
        for start in range(0, total, MAX_BATCH):
            chunk = records[start : start + MAX_BATCH]
            try:
                b = convert.plain(self._call("[method]memory.add-messages", chunk))
            except EngramError as e:
                e.added = out  # type: ignore[attr-defined]
                if start and isinstance(e, InvalidInput) and e.message.startswith("message "):
                    # The component counts from the start of its call.
                    index, _, rest = e.message[len("message ") :].partition(" ")
                    if index.isdigit():
                        e.message = f"message {start + int(index)} {rest}"
                        e.args = (e.message,)
                raise
            out["messages"] += b["messages"]
            out["duplicates"] += b["duplicates"]
            if progress is not None:
                progress(start + len(chunk), total)
        return out

    def threads(self) -> list[ThreadInfo]:
        """Every thread with at least one message, by name: ``{"thread",
        "title", "first_message", "last_message", "first_at", "last_at",
        "messages", "user_messages", "episodes", "episodes_in_view"}``."""
        return cast("list[ThreadInfo]", convert.plain(self._call("[method]memory.threads")))

    def abandon_tool_call(self, call_id: str) -> Added:
        """Closes tool call ``call_id``, which waits for its output and will
        have none (the tool failed, the user moved on): adds its tool output
        "No output: this tool call was abandoned.", so the view stays a chat
        every model API accepts. While a call waits, a user, assistant or
        system message raises :class:`InvalidInput` (naming
        ``abandon_tool_call``); a call that is not waiting raises it too.
        Returns what :meth:`add_message` returns."""
        call = convert.text(call_id, "the call id")
        return convert.added(convert.plain(self._call("[method]memory.abandon-tool-call", call)))

    def _in(self, name: str, thread: str | None, *args: Any) -> Any:
        """Method ``name`` (the main thread's), or ``name-in`` of ``thread``."""
        if thread is None:
            return self._call(f"[method]memory.{name}", *args)
        return self._call(f"[method]memory.{name}-in", *args, convert.text(thread, "the thread"))

    def view(self, *, thread: str | None = None) -> View:
        """The view, structured: ``{"items": [...], "tokens", "ceiling",
        "over_ceiling"}`` (``over_ceiling``: why the view is over the
        ceiling, when it is, else ``None``); each item has kind, role, text,
        tokens, message, episode, facts, tool_calls, tool_call_id. The view
        of ``thread`` (default ``"main"``): the memory-wide facts block, then
        that thread's episodes, open stretch and recall blocks."""
        return cast(View, convert.plain(self._in("view", thread)))

    def render_openai(self, *, thread: str | None = None) -> list[OpenAIMessage]:
        """The view (of ``thread``, default ``"main"``) as an OpenAI
        ``messages`` list, ready to send."""
        return cast("list[OpenAIMessage]", json.loads(self._in("render-openai", thread)))

    def view_tokens(self, *, thread: str | None = None) -> int:
        """The size of the view of ``thread`` (default ``"main"``) in
        tokens, without building it."""
        name = convert.text("main" if thread is None else thread, "the thread")
        return cast(int, self._call("[method]memory.view-tokens-in", name))

    def view_at(self, at: int, *, thread: str | None = None) -> View:
        """The view (of ``thread``, default ``"main"``) as it was at ``at``
        (ms since the Unix epoch), rebuilt from the log. Writes nothing."""
        return cast(View, convert.plain(self._in("view-at", thread, convert.integer(at, "at", *convert.S64))))

    def render_openai_at(self, at: int, *, thread: str | None = None) -> list[OpenAIMessage]:
        """:meth:`view_at` as an OpenAI ``messages`` list."""
        rendered = self._in("render-openai-at", thread, convert.integer(at, "at", *convert.S64))
        return cast("list[OpenAIMessage]", json.loads(rendered))

    def render_responses(self, *, thread: str | None = None) -> list[ResponsesItem]:
        """The view (of ``thread``, default ``"main"``) as OpenAI Responses
        API input items: ``message`` items (an assistant's text as one
        ``output_text`` part), one ``function_call`` per tool call, a tool
        message as a ``function_call_output``; the items of stored messages
        carry ids ``msg_engram_<message>``, ``fc_engram_<message>_<k>``,
        ``fco_engram_<message>`` (the facts block and recall blocks none)."""
        name = convert.text("main" if thread is None else thread, "the thread")
        return cast("list[ResponsesItem]", json.loads(self._call("[method]memory.render-responses-in", name)))

    def render_responses_at(self, at: int, *, thread: str | None = None) -> list[ResponsesItem]:
        """:meth:`view_at` as Responses API input items (:meth:`render_responses`)."""
        name = convert.text("main" if thread is None else thread, "the thread")
        at_ms = convert.integer(at, "at", *convert.S64)
        return cast("list[ResponsesItem]", json.loads(self._call("[method]memory.render-responses-at-in", at_ms, name)))

    def end_turn(self, *, thread: str | None = None) -> DistilledBlock | None:
        """Ends the turn explicitly (after a reply with tool calls, say):
        :meth:`maintain` with the latest turn (of ``thread``, default
        ``"main"``) counted as over. Returns ``[block, distillation]`` for
        the latest user message's recall block if it was distilled now,
        else ``None``."""
        return convert.distilled(convert.plain(self._in("end-turn", thread)))

    def maintain(self, *, thread: str | None = None) -> Maintained:
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
        return convert.maintained(convert.plain(self._in("maintain", thread)))

    def pending(self, *, thread: str | None = None) -> Pending:
        """Work waiting for :meth:`maintain` (of ``thread``, default
        ``"main"``): ``{"unjudged", "undistilled", "leaving",
        "awaiting_note", "fade_ahead", "idle_threads"}``. Calls no model,
        writes nothing."""
        return cast(Pending, convert.plain(self._in("pending", thread)))

    def take_degraded(self) -> list[Degraded]:
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
        budget_tokens: int | None = None,
        filter: SearchFilter | None = None,
    ) -> list[SearchHit]:
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
        budget = None if budget_tokens is None else convert.integer(budget_tokens, "budget_tokens", 0, convert.U32)
        options = convert.record(
            limit=convert.integer(limit, "limit", 0, convert.U32),
            walk=bool(walk),
            include_in_view=bool(include_in_view),
            budget_tokens=budget,
            filter=None if filter is None else convert.search_filter(filter),
        )
        hits = convert.plain(self._call("[method]memory.search", convert.text(query, "the query"), options))
        return [convert.search_hit(h) for h in hits]

    def hit_text(self, item: RecallItem) -> str:
        """The whole text of a search hit's ``item`` (``{"kind": "fact" |
        "passage" | "message", "id": id}``, as :meth:`search` gives it):
        :meth:`search` cuts a hit's text at about 1,000 tokens. An item that
        is not there raises :class:`InvalidInput`."""
        given: Any = item
        if not isinstance(given, dict) or given.get("kind") not in convert.ITEM_KINDS:
            raise InvalidInput('an item is {"kind": "fact" | "passage" | "message", "id": id}')
        kind = given["kind"]
        target = Variant(kind, convert.integer(given.get("id", given.get("value")), f"a {kind} id", 0, convert.U64))
        return cast(str, self._call("[method]memory.hit-text", target))

    def recalls(self) -> list[RecallBlock]:
        """Every recall block: its parts, what each search and the walk
        found, and distill's decision."""
        return [convert.recall_block(b) for b in convert.plain(self._call("[method]memory.recalls"))]

    def explain_recall(self, fact: int) -> list[RecallExplanation]:
        """Why a fact was recalled, one explanation per block that holds it."""
        fact_id = convert.integer(fact, "a fact id", 0, convert.U64)
        return [
            convert.recall_explanation(w) for w in convert.plain(self._call("[method]memory.explain-recall", fact_id))
        ]

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

    def instructions(self) -> str | None:
        """Your instructions now, or ``None``."""
        return cast("str | None", self._call("[method]memory.instructions"))

    def note(self, facts: Iterable[NewFact | dict[str, Any]], episode: int | None = None) -> NoteOutcome:
        """Writes facts from the ``note`` tool: each a dict with subject,
        predicate, object, sentence and optional kind (fact, agreed, decided,
        done, blocked, next)."""
        try:
            given = list(facts)
        except TypeError:
            raise InvalidInput("note needs a list of facts") from None
        records = [convert.new_fact(n, f) for n, f in enumerate(given, 1)]
        if episode is not None:
            episode = convert.integer(episode, "the episode", 0, convert.U64)
        args = convert.record(episode=episode, facts=records)
        return cast(NoteOutcome, convert.plain(self._call("[method]memory.note", args)))

    def note_tool_call(self, arguments: str | NoteArgs | dict[str, Any]) -> NoteOutcome:
        """Runs a ``note`` tool call of your chat model (its arguments, as
        JSON text or a dict)."""
        args: Any
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

    def episodes(self) -> list[EpisodeInfo]:
        """Every episode with its state, history, activation now and significance."""
        return cast("list[EpisodeInfo]", convert.plain(self._call("[method]memory.episodes")))

    def messages(self) -> list[Message]:
        """Every message, in order (forgotten episodes' included), each with
        its ``metadata`` (a dict, or None)."""
        return [convert.message(m) for m in convert.plain(self._call("[method]memory.messages"))]

    def facts(self) -> list[Fact]:
        """Every fact (retired ones included, with ``retired`` set)."""
        return cast("list[Fact]", convert.plain(self._call("[method]memory.facts")))

    def facts_page(
        self,
        limit: int | None = None,
        cursor: str | None = None,
        filter: FactFilter | dict[str, Any] | None = None,
    ) -> FactPage:
        """A page of facts in id order: at most ``limit`` (1 to 1000; 100
        when None) after ``cursor`` (the ``next`` of the page before), kept
        by ``filter`` (``live``, ``kinds``, ``entity``, ``stated``). ``next``
        names the last id seen, so a walk returns each fact once, in order,
        while facts are added between pages. A bad limit, cursor or filter
        raises :class:`InvalidInput`."""
        page = convert.page_request(limit, cursor)
        out = convert.plain(self._call("[method]memory.facts-page", page, convert.fact_filter(filter)))
        return cast(FactPage, out)

    def messages_page(
        self, limit: int | None = None, cursor: str | None = None, thread: str | None = None
    ) -> MessagePage:
        """A page of messages in id order, optionally of one ``thread``;
        ``limit`` and ``cursor`` as for :meth:`facts_page`."""
        page = convert.page_request(limit, cursor)
        out = convert.plain(self._call("[method]memory.messages-page", page, convert.thread(thread)))
        return {"items": [convert.message(m) for m in out["items"]], "next": out["next"]}

    def episodes_page(
        self,
        limit: int | None = None,
        cursor: str | None = None,
        thread: str | None = None,
        states: Iterable[EpisodeState] | None = None,
    ) -> EpisodePage:
        """A page of episodes in id order, optionally of one ``thread`` and
        some ``states``; ``limit`` and ``cursor`` as for :meth:`facts_page`."""
        page = convert.page_request(limit, cursor)
        wanted = convert.episode_states(states)
        filt = convert.record(thread=convert.thread(thread), states=wanted)
        return cast(EpisodePage, convert.plain(self._call("[method]memory.episodes-page", page, filt)))

    def remember(self, statement: str | NewFact | dict[str, Any]) -> Remembered:
        """Remembers a fact you state, at any time (a new memory included):
        a sentence the note model turns into a triple, or a dict with
        subject, predicate, object, sentence and optional kind. It is merged
        and retired like any fact (entity resolution, reconcile) and its
        source is the host (``episode`` 0). An empty statement raises
        :class:`InvalidInput` and changes nothing."""
        given = convert.statement(statement)
        return cast(Remembered, convert.plain(self._call("[method]memory.remember", given)))

    def revise(self, fact: int, statement: str | NewFact | dict[str, Any]) -> Remembered:
        """Revises ``fact``: facts are never edited in place, so
        ``statement`` (as for :meth:`remember`) is remembered as a new fact
        that retires it. An unknown id, a fact retired or erased, or a
        statement that restates it raises :class:`InvalidInput`."""
        fact_id = convert.integer(fact, "a fact id", 0, convert.U64)
        given = convert.statement(statement)
        return cast(Remembered, convert.plain(self._call("[method]memory.revise", fact_id, given)))

    def fact(self, fact: int) -> Fact | None:
        """Fact ``fact``, or None when the memory has no such fact (retired
        and erased ones are returned, marked; id 0 raises
        :class:`InvalidInput`)."""
        fact_id = convert.integer(fact, "a fact id", 0, convert.U64)
        return cast("Fact | None", convert.plain(self._call("[method]memory.fact", fact_id)))

    def history(self, fact: int) -> FactHistory:
        """What happened to ``fact``, oldest first: ``added`` (from which
        episode, 0 for you), each ``merged`` mention, each fact it
        ``retired``, the fact it was ``retired_by``, ``erased``; with
        times. An unknown id raises :class:`InvalidInput`."""
        fact_id = convert.integer(fact, "a fact id", 0, convert.U64)
        return convert.fact_history(convert.plain(self._call("[method]memory.history", fact_id)))

    def entities(self) -> list[Entity]:
        """Every entity of the knowledge graph with its aliases."""
        return [convert.entity(e) for e in convert.plain(self._call("[method]memory.entities"))]

    def traces(self) -> list[Trace]:
        """Every stored trace: encoding traces and yes answers (no answers are
        counted per fact, in ``explain_fact(...)["declined"]``)."""
        return [convert.trace(t) for t in convert.plain(self._call("[method]memory.traces"))]

    def fades(self) -> list[Fade]:
        """Every fade, oldest first: reason (``ceiling``, ``sleep`` or
        ``ahead``), at, view_tokens, ceiling, landing, turn_tokens,
        finished_at, view_after."""
        return cast("list[Fade]", convert.plain(self._call("[method]memory.fades")))

    def explain_episode(self, episode: int) -> EpisodeExplanation:
        """Why an episode is in or out of view (``summary`` says it in words)."""
        episode_id = convert.integer(episode, "an episode id", 0, convert.U64)
        return convert.episode_explanation(convert.plain(self._call("[method]memory.explain-episode", episode_id)))

    def explain_fact(self, fact: int) -> FactExplanation:
        """Why a fact is in the facts block, out of it, or retired."""
        fact_id = convert.integer(fact, "a fact id", 0, convert.U64)
        return convert.fact_explanation(convert.plain(self._call("[method]memory.explain-fact", fact_id)))

    def explain_message(self, message: int) -> MessageExplanation:
        """Why a message is shown or not: a regenerated answer's
        ``alternatives`` (the messages it replaced), a replaced one's
        ``replaced_by``."""
        message_id = convert.integer(message, "a message id", 0, convert.U64)
        return cast("MessageExplanation", convert.plain(self._call("[method]memory.explain-message", message_id)))

    def export(self) -> str:
        """The whole memory as JSON text, for backup or moving."""
        return cast(str, self._call("[method]memory.export"))

    def import_(self, export: str) -> None:
        """Loads an export into this memory, which must be empty."""
        self._call("[method]memory.import", convert.text(export, "the export"))

    def export_parts(self, max_bytes: int = 8 << 20) -> Iterator[str]:
        """The export in parts, for a memory whose export is too large to
        hold as one string (the component's 4 GiB, beside its state, holds
        about 1.2 GB of export): JSON text pieces of whole log entries,
        about ``max_bytes`` each (at least 1024), which joined are
        :meth:`export` as it stood when the first part was asked for
        (messages added meanwhile are left for a later export). An erasure
        of this memory between two parts raises :class:`InvalidInput` at
        the next: start again."""
        max_bytes = convert.integer(max_bytes, "max_bytes", 1, convert.U32)
        cursor = None
        while True:
            part: Any = self._call("[method]memory.export-part", cursor, max_bytes)
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
        text = isinstance(out, io.TextIOBase) or (isinstance(getattr(out, "mode", None), str) and "b" not in out.mode)
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
        piece_bytes = convert.integer(piece_bytes, "piece_bytes", 1, convert.U32)
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
                    self._call("[method]memory.import-piece", convert.text(piece, "a piece of the export"))
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
            target = Variant("thread", convert.text(id, "the thread"))
            return cast(Erased, convert.plain(self._call("[method]memory.erase", target)))
        if kind not in ("message", "episode", "fact", "entity"):
            raise InvalidInput(f"cannot erase a {kind!r}: erase a message, episode, fact, entity or thread")
        target = Variant(kind, convert.integer(id, f"a {kind} id", 0, convert.U64))
        return cast(Erased, convert.plain(self._call("[method]memory.erase", target)))

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
        before the memory's last stamp (the readings were clamped to it),
        and ``round_trips``: the store calls this handle made since it
        opened (this call's own head read included), by kind (``get``,
        ``put``, ``delete``, ``list``, ``write_if``) and ``total``; each is
        one round trip on :class:`~engram_host.postgres.PostgresStore` (a
        memory's very first commit excepted) and one transaction on
        :class:`SQLiteStore`."""
        stats = convert.plain(self._call("[method]memory.stats"))
        return convert.stats(stats, cast(RoundTrips, dict(self._trips)))
