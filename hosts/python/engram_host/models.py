"""Models: the LLM and embedder engram asks for its tasks (the WIT
interface ``model``). :class:`Model` is the protocol; :class:`OpenAIModel`
speaks to any OpenAI-compatible endpoint (urllib only),
:class:`CallableModel` wraps your functions, and :func:`choose_sources`
decides which calls go to the host's model and which to the built-in
offline model inside the component.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

ModelSource = Literal["host", "offline"]
"""Where the tasks are answered, or texts embedded (the WIT ``model-source``)."""


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


class TaskModel(Protocol):
    """A model that answers engram's tasks: enough with
    ``embedder="offline"``, which never asks it to embed. It may also have
    ``count_tokens(text) -> int | None`` (None: engram estimates)."""

    def complete(self, request: TaskRequest) -> str:
        """The answer to ``request``, JSON text following its schema."""
        ...


class Model(TaskModel, Protocol):
    """A model that answers engram's tasks and embeds texts. Exceptions
    its calls raise are model failures that engram retries or degrades."""

    def embed(self, texts: list[str]) -> Iterable[Iterable[float]]:
        """One vector per text, all of one dimension."""
        ...


class ModelUnavailable(Exception):
    """An OpenAI-compatible endpoint gave no usable answer after its retries."""

    status: int | None = None
    """The HTTP status of a rejection, when there was one."""


def choose_sources(
    model: TaskModel | str | None, embedder: str | None
) -> tuple[TaskModel | None, ModelSource, ModelSource]:
    """The host's model (None for the offline one) and where tasks are
    answered and texts embedded, from ``Memory``'s ``model`` and
    ``embedder``: no model (or ``"offline"``) is the offline model for
    both; ``embedder="offline"`` keeps the model for the tasks and embeds
    with the offline hashing embedder. Raises ValueError for anything else."""
    if isinstance(model, str) and model != "offline":
        raise ValueError(f"model={model!r}: give a model object, or None / 'offline' for the offline model")
    if embedder not in (None, "offline"):
        raise ValueError(f"embedder={embedder!r}: None (the model's) or 'offline'")
    host = None if isinstance(model, str) else model
    complete: ModelSource = "offline" if host is None else "host"
    embed: ModelSource = "offline" if host is None or embedder == "offline" else "host"
    return host, complete, embed


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
        embed: Callable[[list[str]], list[list[float]]],
        count_tokens: Callable[[str], int | None] | None = None,
    ):
        self._complete = complete
        self._embed = embed
        self._count = count_tokens

    def complete(self, request: TaskRequest) -> str:
        return self._complete(request)

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._embed(texts)

    def count_tokens(self, text: str) -> int | None:
        return None if self._count is None else self._count(text)


MAX_TOKENS: dict[str, int] = {
    "segment": 48,
    "resolve": 48,
    "reconcile": 256,
    "relevance": 256,
    "distill": 512,
    "split": 256,
    "trace": 512,
    "note": 1536,
}
"""The ``max_tokens`` each task's request carries by default: its schema's
largest useful answer with room to spare (segment and resolve answer one
number; reconcile a relation for each of up to 8 facts; relevance the
numbers of up to ~40 candidates; distill the numbers of up to ~60 recalled
items, where 192 cut Gemma 3 270M's answers off; split a few phrases; trace
the episodes of up to 16 facts; note an episode's facts)."""

DEFAULT_CONCURRENCY = 2
"""Requests in flight when neither ``concurrency`` nor the server's
``GET /props`` (``total_slots``, as llama.cpp's server answers) says."""

# The response format that worked, per endpoint (base URL, model): a server
# that rejected json_schema is asked in JSON mode by every OpenAIModel made
# for it afterwards, without a rejected request first.
_FORMATS: dict[tuple[str, str], str] = {}
_FORMATS_LOCK = threading.Lock()


def _rejects_format(status: int, detail: str) -> bool:
    """A rejection of the request's ``response_format`` (400, or 422 or 500
    from some servers, llama.cpp's Python server among them)."""
    low = detail.lower()
    return status in (400, 422, 500) and ("response_format" in low or "schema" in low)


class _HTTPStatus(Exception):
    def __init__(self, status: int, detail: str, retry_after: str | None):
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail, self.retry_after = status, detail, retry_after


class _Cancelled(Exception):
    """The request's connection was closed by :meth:`OpenAIModel.abandon` or
    by its deadline."""


class OpenAIModel:
    """Any OpenAI-compatible endpoint (OpenAI, Azure-style proxies, vLLM,
    llama.cpp, Ollama...), with the standard library only.

    ``complete`` posts to ``{base_url}/chat/completions`` with the task's
    system prompt and content, temperature 0, ``max_tokens`` from the task
    (:data:`MAX_TOKENS`; ``max_tokens`` changes it: one int, or a dict per
    task; an answer cut there fails as truncated), and the task's JSON
    schema as ``response_format`` (``"json_schema"``, the default;
    ``"json_object"`` for servers with JSON mode only; ``None`` to send
    none). A server that rejects json_schema with a 400, 422 or 500 naming
    ``response_format`` gets JSON mode from then on, with the task's schema
    beside it (``{"type": "json_object", "schema": ...}``, which llama.cpp's
    servers enforce as a grammar), and plain JSON mode if it rejects that
    too: remembered for the endpoint (base URL and model), and said once a
    step, by ``on_event({"event": "format", "endpoint", "model", "from",
    "to", "schema", "status", "reason"})`` (also kept in ``events``). ``embed`` posts to ``{base_url}/embeddings``.

    Timeouts, HTTP 408/409/429/5xx and network errors are retried
    ``retries`` times with exponential backoff (honouring ``Retry-After``);
    other HTTP errors fail at once. ``timeout`` bounds each request as a
    whole: at it the connection is closed. ``concurrency`` caps requests in
    flight at once, the others wait their turn (default: the server's
    ``total_slots`` from ``GET /props``, else :data:`DEFAULT_CONCURRENCY`).
    A call the :class:`~engram_host.Memory` abandons at its deadline is
    cancelled on the wire: :meth:`abandon` closes its connection (a server
    that notices stops generating) or takes it out of the queue.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        model: str = "gpt-4o-mini",
        embedding_model: str = "text-embedding-3-small",
        *,
        response_format: str | None = "json_schema",
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        headers: dict[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_tokens: int | dict[str, int] | None = None,
        concurrency: int | None = None,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ):
        if response_format not in ("json_schema", "json_object", None):
            raise ValueError("response_format: use 'json_schema', 'json_object' or None")
        if concurrency is not None and (
            isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
        ):
            raise ValueError("concurrency: an int >= 1")
        bounds = dict(MAX_TOKENS)
        if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
            bounds = {k: max_tokens for k in bounds}
        elif isinstance(max_tokens, dict):
            bounds.update(max_tokens)
        elif max_tokens is not None:
            raise ValueError("max_tokens: an int, or a dict of ints per task")
        for k, v in bounds.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"max_tokens[{k!r}]: an int >= 1")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.embedding_model = embedding_model
        self.response_format = response_format
        # After a fallback from json_schema, JSON mode carries the schema
        # unless the endpoint rejected that too.
        self.schema_in_json_mode = False
        learnt = _FORMATS.get((self.base_url, model))
        if response_format == "json_schema" and learnt is not None:
            self.response_format = "json_object"
            self.schema_in_json_mode = learnt == "json_object+schema"
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.headers = dict(headers or {})
        self.max_tokens = bounds
        self.concurrency = concurrency
        self.on_event = on_event
        self.events: list[dict[str, Any]] = []
        self._sleep = sleep
        self._lock = threading.Condition()
        self._probe = threading.Lock()
        self._running = 0
        self._abandoned: set[int] = set()
        self._active: set[int] = set()
        self._inflight: dict[int, http.client.HTTPConnection] = {}

    def complete(self, request: TaskRequest) -> str:
        limit = self.max_tokens.get(request.task, max(self.max_tokens.values()))
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.content},
            ],
            "temperature": 0,
            "max_tokens": limit,
        }
        while True:
            sent = (self.response_format, self.schema_in_json_mode)
            if sent[0] == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": f"engram_{request.task}", "schema": json.loads(request.schema)},
                }
            elif sent == ("json_object", True):
                body["response_format"] = {"type": "json_object", "schema": json.loads(request.schema)}
            elif sent[0] == "json_object":
                body["response_format"] = {"type": "json_object"}
            try:
                answer = self._post("/chat/completions", body)
                break
            except ModelUnavailable as e:
                status = e.status
                if sent[0] == "json_schema" and status is not None and _rejects_format(status, str(e)):
                    self._fall_back(status, str(e), "json_schema")
                    continue
                if sent == ("json_object", True) and status is not None and _rejects_format(status, str(e)):
                    self._fall_back(status, str(e), "json_object+schema")
                    continue
                if sent != (self.response_format, self.schema_in_json_mode):
                    continue  # another call fell back meanwhile
                raise
        try:
            choice = answer["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as e:
            raise ModelUnavailable(f"chat completion without choices[0].message.content: {e!r}") from e
        if choice.get("finish_reason") == "length":
            raise ModelUnavailable(f"truncated: the {request.task} answer reached max_tokens ({limit})")
        if not isinstance(content, str):
            raise ModelUnavailable("chat completion content is not text")
        return content

    def _fall_back(self, status: int, reason: str, rejected: str) -> None:
        """JSON mode with the schema after json_schema was rejected; plain
        JSON mode after that was rejected too (``rejected``)."""
        key = (self.base_url, self.model)
        with _FORMATS_LOCK:
            known = _FORMATS.get(key)
            if rejected == "json_schema":
                first = known is None
                if first:
                    _FORMATS[key] = "json_object+schema"
            else:
                first = known != "json_object"
                _FORMATS[key] = "json_object"
            self.response_format = "json_object"
            self.schema_in_json_mode = _FORMATS[key] == "json_object+schema"
        if first:
            event = {
                "event": "format",
                "endpoint": self.base_url,
                "model": self.model,
                "from": rejected,
                "to": "json_object",
                "schema": self.schema_in_json_mode,
                "status": status,
                "reason": reason,
            }
            self.events.append(event)
            if self.on_event is not None:
                self.on_event(event)

    def embed(self, texts: list[str]) -> list[list[float]]:
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

    def count_tokens(self, text: str) -> int | None:
        return None

    def abandon(self, thread: int | None = None) -> None:
        """Cancels the call running on ``thread`` (an ident; default: every
        call in flight): its connection is closed, or, if it waits for a
        slot, it leaves the queue; it raises :class:`ModelUnavailable`.
        The Memory calls it for a call it abandons at its deadline."""
        with self._lock:
            idents = list(self._active) if thread is None else [thread] if thread in self._active else []
            self._abandoned.update(idents)
            conns = [self._inflight[i] for i in idents if i in self._inflight]
            self._lock.notify_all()
        for conn in conns:
            _cut(conn)

    # -- the wire --

    def _limit(self) -> int:
        with self._probe:  # asked once, by the first call
            if self.concurrency is None:
                self.concurrency = self._slots()
            return self.concurrency

    def _slots(self) -> int:
        root = self.base_url.removesuffix("/v1")
        try:
            status, _, raw = self._send("GET", root + "/props", None, {}, min(2.0, self.timeout))
            n = json.loads(raw).get("total_slots") if status == 200 else None
        except Exception:  # noqa: BLE001 (any failure: the default)
            n = None
        return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else DEFAULT_CONCURRENCY

    def _send(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str], timeout: float
    ) -> tuple[int, http.client.HTTPResponse, bytes]:
        """One request on its own connection, closed at ``timeout`` (the
        whole exchange) or by :meth:`abandon`."""
        u = urllib.parse.urlsplit(url)
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        conn = cls(u.hostname or "localhost", u.port, timeout=timeout)
        me = threading.get_ident()
        with self._lock:
            if me in self._abandoned:
                raise _Cancelled("abandoned by the caller")
            self._inflight[me] = conn
        fired = threading.Event()

        def deadline() -> None:
            fired.set()
            _cut(conn)

        timer = threading.Timer(timeout, deadline)
        timer.daemon = True
        timer.start()
        try:
            target = (u.path or "/") + (f"?{u.query}" if u.query else "")
            conn.request(method, target, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp, resp.read()
        except (OSError, http.client.HTTPException) as e:
            with self._lock:
                if me in self._abandoned:
                    raise _Cancelled("abandoned by the caller: the connection was closed") from e
            if fired.is_set() or isinstance(e, TimeoutError):
                raise TimeoutError(f"no answer within {timeout:g} s: the connection was closed") from e
            raise
        finally:
            timer.cancel()
            with self._lock:
                self._inflight.pop(me, None)
            conn.close()

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        limit = self._limit()
        me = threading.get_ident()
        with self._lock:
            self._active.add(me)
            while self._running >= limit and me not in self._abandoned:
                self._lock.wait()
            if me in self._abandoned:
                self._abandoned.discard(me)
                self._active.discard(me)
                raise ModelUnavailable(f"POST {path}: abandoned by the caller while queued")
            self._running += 1
        try:
            return self._attempts(path, data, headers)
        except _Cancelled as e:
            raise ModelUnavailable(f"POST {path}: {e}") from e
        finally:
            with self._lock:
                self._running -= 1
                self._abandoned.discard(me)
                self._active.discard(me)
                self._lock.notify_all()

    def _attempts(self, path: str, data: bytes, headers: dict[str, str]) -> Any:
        last: BaseException | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(self._delay(attempt, last))
            try:
                status, resp, raw = self._send("POST", self.base_url + path, data, headers, self.timeout)
            except (TimeoutError, ConnectionError, OSError, http.client.HTTPException) as e:
                last = e
                continue
            if 200 <= status < 300:
                try:
                    return json.loads(raw.decode("utf-8"))
                except (json.JSONDecodeError, UnicodeDecodeError) as e:
                    raise ModelUnavailable(f"POST {path}: the answer is not JSON: {e}") from e
            detail = raw.decode("utf-8", "replace")[:500]
            last = _HTTPStatus(status, detail, resp.getheader("Retry-After"))
            if (status not in (408, 409, 429) and status < 500) or (
                path == "/chat/completions" and _rejects_format(status, detail)
            ):
                err = ModelUnavailable(f"POST {path}: HTTP {status}: {detail}")
                err.status = status
                raise err from last
        raise ModelUnavailable(f"POST {path}: no answer after {self.retries + 1} attempts: {last!r}") from last

    def _delay(self, attempt: int, last: BaseException | None) -> float:
        if isinstance(last, _HTTPStatus) and last.retry_after:
            try:
                return min(self.max_backoff, max(0.0, float(last.retry_after)))
            except ValueError:
                pass
        base: float = self.backoff * (2 ** (attempt - 1))
        return min(self.max_backoff, base * (0.5 + random.random() / 2))


def _cut(conn: http.client.HTTPConnection) -> None:
    """Closes ``conn``'s socket under a thread blocked reading it."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
