"""The :class:`AsyncMemory` class: a :class:`~engram_host.Memory` for
asyncio code, each call run in a thread, one at a time in call order.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from engram_host.memory import Memory
from engram_host.records import (
    Added,
    Batch,
    Degraded,
    DistilledBlock,
    Entity,
    EpisodeExplanation,
    EpisodeInfo,
    EpisodePage,
    Erased,
    Fact,
    FactExplanation,
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
    OpenAIMessage,
    Pending,
    RecallBlock,
    RecallExplanation,
    RecallItem,
    Remembered,
    ResponsesItem,
    SearchHit,
    Stats,
    ThreadInfo,
    Trace,
    View,
)

if TYPE_CHECKING:  # Python 3.10 has no typing.Self; annotations are not evaluated
    from typing_extensions import Self

_P = ParamSpec("_P")
_T = TypeVar("_T")


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
        self._order: asyncio.Lock | None = None

    @classmethod
    async def open(cls, namespace: str, *args: Any, **kwargs: Any) -> AsyncMemory:
        """Opens a :class:`Memory` (loading the component and the store) in
        a thread; the arguments are :class:`Memory`'s."""
        return cls(await asyncio.to_thread(Memory, namespace, *args, **kwargs))

    @classmethod
    async def open_salvage(cls, namespace: str, *args: Any, **kwargs: Any) -> AsyncMemory:
        """:meth:`Memory.open_salvage` in a thread: read-only, with whatever
        of a damaged log can be read."""
        return cls(await asyncio.to_thread(Memory.open_salvage, namespace, *args, **kwargs))

    async def _run(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        if self._order is None:
            self._order = asyncio.Lock()
        async with self._order:
            return await asyncio.to_thread(fn, *args, **kwargs)

    async def add_message(self, role: str, content: str = "", **kwargs: Any) -> Added:
        return await self._run(self.sync.add_message, role, content, **kwargs)

    async def add_openai_message(self, message: OpenAIMessage | dict[str, Any], **kwargs: Any) -> Added:
        return await self._run(self.sync.add_openai_message, message, **kwargs)

    async def abandon_tool_call(self, call_id: str) -> Added:
        return await self._run(self.sync.abandon_tool_call, call_id)

    async def add_messages(self, messages: Iterable[OpenAIMessage | dict[str, Any]], **kwargs: Any) -> Batch:
        """:meth:`Memory.add_messages` in a thread (``progress`` is called
        from that thread)."""
        return await self._run(self.sync.add_messages, messages, **kwargs)

    async def threads(self) -> list[ThreadInfo]:
        return await self._run(self.sync.threads)

    async def view(self, **kwargs: Any) -> View:
        return await self._run(self.sync.view, **kwargs)

    async def view_at(self, at: int, **kwargs: Any) -> View:
        return await self._run(self.sync.view_at, at, **kwargs)

    async def view_tokens(self, **kwargs: Any) -> int:
        return await self._run(self.sync.view_tokens, **kwargs)

    async def render_openai(self, **kwargs: Any) -> list[OpenAIMessage]:
        return await self._run(self.sync.render_openai, **kwargs)

    async def render_openai_at(self, at: int, **kwargs: Any) -> list[OpenAIMessage]:
        return await self._run(self.sync.render_openai_at, at, **kwargs)

    async def render_responses(self, **kwargs: Any) -> list[ResponsesItem]:
        return await self._run(self.sync.render_responses, **kwargs)

    async def render_responses_at(self, at: int, **kwargs: Any) -> list[ResponsesItem]:
        return await self._run(self.sync.render_responses_at, at, **kwargs)

    async def maintain(self, **kwargs: Any) -> Maintained:
        return await self._run(self.sync.maintain, **kwargs)

    async def pending(self, **kwargs: Any) -> Pending:
        return await self._run(self.sync.pending, **kwargs)

    async def end_turn(self, **kwargs: Any) -> DistilledBlock | None:
        return await self._run(self.sync.end_turn, **kwargs)

    async def take_degraded(self) -> list[Degraded]:
        return await self._run(self.sync.take_degraded)

    async def search(self, query: str, **kwargs: Any) -> list[SearchHit]:
        return await self._run(self.sync.search, query, **kwargs)

    async def hit_text(self, item: RecallItem) -> str:
        return await self._run(self.sync.hit_text, item)

    async def recalls(self) -> list[RecallBlock]:
        return await self._run(self.sync.recalls)

    async def explain_recall(self, fact: int) -> list[RecallExplanation]:
        return await self._run(self.sync.explain_recall, fact)

    async def set_instructions(self, text: str) -> bool:
        return await self._run(self.sync.set_instructions, text)

    async def instructions(self) -> str | None:
        return await self._run(self.sync.instructions)

    async def note(self, facts: Iterable[NewFact | dict[str, Any]], episode: int | None = None) -> NoteOutcome:
        return await self._run(self.sync.note, facts, episode)

    async def note_tool_call(self, arguments: str | NoteArgs | dict[str, Any]) -> NoteOutcome:
        return await self._run(self.sync.note_tool_call, arguments)

    async def episodes(self) -> list[EpisodeInfo]:
        return await self._run(self.sync.episodes)

    async def messages(self) -> list[Message]:
        return await self._run(self.sync.messages)

    async def facts(self) -> list[Fact]:
        return await self._run(self.sync.facts)

    async def facts_page(self, *args: Any, **kwargs: Any) -> FactPage:
        return await self._run(self.sync.facts_page, *args, **kwargs)

    async def messages_page(self, *args: Any, **kwargs: Any) -> MessagePage:
        return await self._run(self.sync.messages_page, *args, **kwargs)

    async def episodes_page(self, *args: Any, **kwargs: Any) -> EpisodePage:
        return await self._run(self.sync.episodes_page, *args, **kwargs)

    async def remember(self, statement: str | NewFact | dict[str, Any]) -> Remembered:
        return await self._run(self.sync.remember, statement)

    async def revise(self, fact: int, statement: str | NewFact | dict[str, Any]) -> Remembered:
        return await self._run(self.sync.revise, fact, statement)

    async def fact(self, fact: int) -> Fact | None:
        return await self._run(self.sync.fact, fact)

    async def history(self, fact: int) -> FactHistory:
        return await self._run(self.sync.history, fact)

    async def entities(self) -> list[Entity]:
        return await self._run(self.sync.entities)

    async def traces(self) -> list[Trace]:
        return await self._run(self.sync.traces)

    async def fades(self) -> list[Fade]:
        return await self._run(self.sync.fades)

    async def explain_episode(self, episode: int) -> EpisodeExplanation:
        return await self._run(self.sync.explain_episode, episode)

    async def explain_fact(self, fact: int) -> FactExplanation:
        return await self._run(self.sync.explain_fact, fact)

    async def explain_message(self, message: int) -> MessageExplanation:
        return await self._run(self.sync.explain_message, message)

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

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Any other method of :class:`Memory` (``note_tool``,
        ``offline_complete``, ...), as a coroutine function."""
        fn = getattr(self.sync, name)
        if not callable(fn) or name.startswith("_"):
            raise AttributeError(name)

        @functools.wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._run(fn, *args, **kwargs)

        return call
