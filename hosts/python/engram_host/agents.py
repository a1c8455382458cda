"""engram as a session of the OpenAI Agents SDK (``openai-agents``).

:class:`EngramSession` implements the SDK's ``Session`` protocol over one
thread of a :class:`~engram_host.Memory` (no import of the SDK: it is
duck-typed, so engram_host does not depend on it)::

    from agents import Agent, RunConfig, Runner
    from engram_host import Memory
    from engram_host.agents import EngramSession

    memory = Memory.open("chat.db")
    session = EngramSession(memory, thread="support-42")
    config = RunConfig(session_input_callback=session.input_callback)
    result = await Runner.run(agent, "Where do I live?", session=session, run_config=config)

``get_items`` is engram's view of the thread as Responses API items
(:meth:`Memory.render_responses`): the facts block, the live episodes,
the recall blocks. ``add_items`` adds each message once: a client id from
the item's id (a user item has none: from its text and the message before
it, so a retried turn's input is stored once), items that came from
``get_items`` (ids ``msg_engram_...``) skipped, reasoning and system items
dropped (the view makes its own system items; your instructions go in
``Memory.set_instructions`` or the agent's ``instructions``).

The Runner reads ``get_items`` before it adds the turn's input, so without
the callback the turn's recall would only reach the next turn. Pass
``session.input_callback`` as ``RunConfig.session_input_callback``: it adds
the new input first (engram recalls for it then) and returns the view with
the recall block in place before the new user message.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from engram_host.content import text_of
from engram_host.errors import InvalidInput

if TYPE_CHECKING:
    from engram_host.async_memory import AsyncMemory
    from engram_host.memory import Memory

__all__ = ["EngramSession", "items_to_messages"]

#: The ids :meth:`Memory.render_responses` gives the items of stored messages.
ENGRAM_ID = re.compile(r"^(?:msg|fco)_engram_([0-9]+)$|^fc_engram_([0-9]+)_[0-9]+$")

#: Message ids one page of :meth:`EngramSession._anchor`'s backward walk
#: covers (a page's most).
ANCHOR_WINDOW = 1000

#: Item types that carry no message for engram (the model's reasoning).
DROPPED = frozenset({"reasoning"})


def engram_message_of(item: Mapping[str, object]) -> int | None:
    """The stored message an item rendered by engram names, or None."""
    found = ENGRAM_ID.match(str(item.get("id") or ""))
    if found is None:
        return None
    return int(found.group(1) or found.group(2))


def _plain(item: Any) -> dict[str, Any]:
    """An item as a dict (the SDK's pydantic items have ``model_dump``)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        result = dump(exclude_unset=True)
        if isinstance(result, dict):
            return result
    raise InvalidInput(f"an item must be a dict, not {type(item).__name__}")


def items_to_messages(items: Iterable[Any]) -> list[dict[str, Any]]:
    """Responses API items as engram messages (``role``, ``content``,
    ``tool_calls``, ``tool_call_id`` and the item's ``id`` as ``item_id``,
    None where it has none): an assistant ``message`` and the
    ``function_call`` items right after it are one assistant message;
    reasoning items and system/developer messages are dropped, items
    engram rendered (ids ``msg_engram_...``) skipped. Any other item type
    raises :class:`InvalidInput`."""
    out: list[dict[str, Any]] = []
    group: dict[str, Any] | None = None
    for n, raw in enumerate(items):
        item = _plain(raw)
        what = f"item {n}"
        kind = item.get("type", "message" if "role" in item else None)
        if engram_message_of(item) is not None or kind in DROPPED:
            group = None
            continue
        if kind == "message":
            role = item.get("role")
            if role in ("system", "developer"):
                group = None
                continue
            if role not in ("user", "assistant"):
                raise InvalidInput(f"{what}: unknown role {role!r}")
            text = text_of(item.get("content"), what)
            message = {"role": role, "content": text, "tool_calls": [], "tool_call_id": None, "item_id": item.get("id")}
            out.append(message)
            group = message if role == "assistant" else None
        elif kind == "function_call":
            call = {
                "id": str(item.get("call_id") or ""),
                "name": str(item.get("name") or ""),
                "arguments": str(item.get("arguments") or ""),
            }
            if not call["id"] or not call["name"]:
                raise InvalidInput(f"{what}: a function_call needs a call_id and a name")
            if group is None:
                group = {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [],
                    "tool_call_id": None,
                    "item_id": item.get("id") or f"call-{call['id']}",
                }
                out.append(group)
            group["tool_calls"].append(call)
        elif kind == "function_call_output":
            call_id = str(item.get("call_id") or "")
            if not call_id:
                raise InvalidInput(f"{what}: a function_call_output needs a call_id")
            output = item.get("output")
            text = output if isinstance(output, str) else text_of(output, what)
            out.append(
                {
                    "role": "tool",
                    "content": text,
                    "tool_calls": [],
                    "tool_call_id": call_id,
                    "item_id": item.get("id") or f"output-{call_id}",
                }
            )
            group = None
        else:
            raise InvalidInput(f"{what}: engram cannot keep a {kind!r} item")
    return out


class EngramSession:
    """An Agents SDK ``Session`` over thread ``thread`` of ``memory`` (a
    :class:`Memory` or an :class:`AsyncMemory`). ``session_id`` is the
    thread's name."""

    session_settings: Any = None

    def __init__(self, memory: Memory | AsyncMemory, thread: str = "main"):
        self._memory: Memory = cast("Memory", getattr(memory, "sync", memory))
        self.session_id = thread
        self._order = asyncio.Lock()

    async def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        async with self._order:
            return await asyncio.to_thread(fn, *args, **kwargs)

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        """engram's view of the thread as Responses API items (the latest
        ``limit`` of them when given)."""
        items: list[dict[str, Any]] = await self._run(self._memory.render_responses, thread=self.session_id)
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items

    def _client_id(self, message: dict[str, Any], anchor: str) -> str:
        item_id = message["item_id"]
        if item_id:
            return f"agents:{self.session_id}:{item_id}"
        digest = hashlib.sha256(f"{anchor}\0{message['role']}\0{message['content']}".encode()).hexdigest()
        return f"agents:{self.session_id}:{message['role']}:{digest[:32]}"

    def _add(self, items: list[Any]) -> None:
        messages = items_to_messages(items)
        if not messages:
            return
        # A message without an item id (the user's input) is named by its
        # text and the last message before it that is not the user's: a
        # retried turn adds the same input after the same reply.
        anchor = self._anchor()
        for message in messages:
            client_id = self._client_id(message, anchor)
            self._memory.add_message(
                message["role"],
                message["content"],
                tool_calls=message["tool_calls"] or None,
                tool_call_id=message["tool_call_id"],
                client_id=client_id,
                thread=self.session_id,
            )
            if message["role"] != "user":
                anchor = client_id

    def _anchor(self) -> str:
        """The id of the thread's last message that is not the user's and
        not erased (``"start"`` when none): found from the thread's last id
        back, a page of ids at a time, not by listing every message of the
        memory at every turn."""
        thread = self.session_id
        info = next((t for t in self._memory.threads() if t["thread"] == thread), None)
        if info is None:
            return "start"
        hi = info["last_message"]
        while hi >= info["first_message"]:
            # The page holds the thread's messages with ids in (lo, hi], and later ones.
            lo = hi - ANCHOR_WINDOW
            cursor = f"message:{lo}" if lo >= 1 else None
            page = self._memory.messages_page(limit=ANCHOR_WINDOW, cursor=cursor, thread=thread)
            kept = [m for m in page["items"] if m["id"] <= hi and m["role"] != "user" and not m["erased"]]
            if kept:
                return str(kept[-1]["id"])
            hi = lo
        return "start"

    async def add_items(self, items: list[Any]) -> None:
        """Adds the items' messages, each once (see the module's notes).
        A bad item raises :class:`InvalidInput` before anything is added."""
        await self._run(self._add, list(items))

    async def input_callback(self, history: list[Any], new_items: list[Any]) -> list[dict[str, Any]]:
        """``RunConfig.session_input_callback``: adds ``new_items`` (engram
        recalls for the new user message) and returns the view, so the
        turn's recall is in the turn's prompt. ``history`` is the view read
        before; it is rendered again."""
        await self.add_items(new_items)
        return await self.get_items()

    def _pop(self) -> dict[str, Any] | None:
        for item in reversed(self._memory.render_responses(thread=self.session_id)):
            message = engram_message_of(item)
            if message is not None:
                self._memory.erase("message", message)
                return dict(item)
        return None

    async def _popped(self) -> dict[str, Any] | None:
        return cast("dict[str, Any] | None", await self._run(self._pop))

    async def pop_item(self) -> dict[str, Any] | None:
        """Removes the thread's last message and returns its last item
        (None when the thread has none). A tool output takes its call with
        it (engram erases a tool exchange whole)."""
        return await self._popped()

    async def clear_session(self) -> None:
        """Erases every message of the thread, for good."""
        await self._run(self._memory.erase, "thread", self.session_id)
