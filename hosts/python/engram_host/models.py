"""Models: the LLM and embedder engram asks for its tasks (the WIT
interface ``model``). :class:`Model` is the protocol; :class:`OpenAIModel`
speaks to any OpenAI-compatible endpoint (urllib only),
:class:`CallableModel` wraps your functions, and :func:`choose_sources`
decides which calls go to the host's model and which to the built-in
offline model inside the component.
"""

from __future__ import annotations

import json
import random
import time
import urllib.error
import urllib.request
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
        body: dict[str, Any] = {
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

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last: BaseException | None = None
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

    def _delay(self, attempt: int, last: BaseException | None) -> float:
        if isinstance(last, urllib.error.HTTPError):
            after = last.headers.get("Retry-After") if last.headers else None
            if after:
                try:
                    return min(self.max_backoff, max(0.0, float(after)))
                except ValueError:
                    pass
        base: float = self.backoff * (2 ** (attempt - 1))
        return min(self.max_backoff, base * (0.5 + random.random() / 2))
