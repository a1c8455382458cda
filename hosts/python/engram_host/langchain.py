"""engram as a LangChain 1.x agent middleware (needs ``langchain``).

:class:`EngramMiddleware` keeps one thread of a :class:`~engram_host.Memory`
as the agent's conversation::

    from langchain.agents import create_agent
    from engram_host import Memory
    from engram_host.langchain import EngramMiddleware

    memory = Memory.open("chat.db")
    agent = create_agent(model, tools=[...], middleware=[EngramMiddleware(memory, thread="support-42")])
    agent.invoke({"messages": [{"role": "user", "content": "Where do I live?"}]})

Before each model call (``before_model``) it adds the state's messages
engram has not seen (each once: a client id from the LangChain message id)
and replaces the state's messages with engram's view of the thread: the
facts block, the live episodes and the recall block for the new user
message, as LangChain messages whose ids name engram's messages. After the
model call (``after_model``) it adds the model's message, so the final
answer is stored when the agent stops. The messages engram let fade are
gone from the state too: engram is the conversation's memory, the graph's
state its current view.

LangGraph's ``BaseStore`` (keyed documents in namespaces) does not fit
engram, which keeps conversations, not documents: use this middleware
(or ``Memory.search`` as a tool) instead; see docs/langchain.md.
"""

from __future__ import annotations

import json
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from engram_host.agents import engram_message_of
from engram_host.content import text_of
from engram_host.errors import InvalidInput
from engram_host.memory import Memory

__all__ = ["EngramMiddleware", "view_messages"]


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except json.JSONDecodeError:
        return {"arguments": text}
    return value if isinstance(value, dict) else {"arguments": value}


def view_messages(memory: Memory, thread: str) -> list[BaseMessage]:
    """engram's view of ``thread`` as LangChain messages: system items as
    ``SystemMessage``, an assistant message with its tool calls as one
    ``AIMessage``, tool outputs as ``ToolMessage``. A stored message's id
    is ``engram-<message>``; the facts and recall blocks' ``engram-view-<n>``."""
    out: list[BaseMessage] = []
    last_ai: AIMessage | None = None
    for n, item in enumerate(memory.render_responses(thread=thread)):
        message = engram_message_of(item)
        mid = f"engram-{message}" if message is not None else f"engram-view-{n}"
        if item["type"] == "function_call":
            call = {
                "name": item["name"],
                "args": _arguments(item["arguments"]),
                "id": item["call_id"],
                "type": "tool_call",
            }
            if last_ai is not None and last_ai.id == mid:
                last_ai.tool_calls.append(call)  # type: ignore[arg-type]
            else:
                last_ai = AIMessage(content="", tool_calls=[call], id=mid)
                out.append(last_ai)
            continue
        last_ai = None
        if item["type"] == "function_call_output":
            out.append(ToolMessage(content=item["output"], tool_call_id=item["call_id"], id=mid))
            continue
        role = item["role"]
        content = item["content"]
        text = "".join(p["text"] for p in content) if isinstance(content, list) else content
        if role == "assistant":
            last_ai = AIMessage(content=text, id=mid)
            out.append(last_ai)
        elif role == "user":
            out.append(HumanMessage(content=text, id=mid))
        else:
            out.append(SystemMessage(content=text, id=mid))
    return out


def _text(message: BaseMessage) -> str:
    return text_of(message.content, f"message {message.id}")


class EngramMiddleware(AgentMiddleware):
    """Keeps thread ``thread`` of ``memory`` as the agent's messages."""

    def __init__(self, memory: Memory, thread: str = "main"):
        super().__init__()
        self.memory = memory
        self.thread = thread

    def _store(self, messages: list[BaseMessage]) -> None:
        """Adds the messages engram has not seen: system messages and those
        with engram's ids are skipped; each other one is added once, by a
        client id from its LangChain id."""
        new: list[dict[str, Any]] = []
        for m in messages:
            mid = str(m.id or "")
            if mid.startswith("engram-") or isinstance(m, SystemMessage):
                continue
            if not mid:
                raise InvalidInput("a message without an id cannot be stored exactly once")
            if isinstance(m, HumanMessage):
                new.append({"role": "user", "content": _text(m), "id": mid})
            elif isinstance(m, AIMessage):
                calls = [{"id": c["id"], "name": c["name"], "arguments": json.dumps(c["args"])} for c in m.tool_calls]
                new.append({"role": "assistant", "content": _text(m), "tool_calls": calls, "id": mid})
            elif isinstance(m, ToolMessage):
                new.append({"role": "tool", "content": _text(m), "tool_call_id": m.tool_call_id, "id": mid})
            else:
                raise InvalidInput(f"a {type(m).__name__} cannot be kept")
        for n in new:
            self.memory.add_message(
                n["role"],
                n["content"],
                tool_calls=n.get("tool_calls") or None,
                tool_call_id=n.get("tool_call_id"),
                client_id=f"langchain:{self.thread}:{n['id']}",
                thread=self.thread,
            )

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Stores the new messages, then makes engram's view the messages."""
        self._store(list(state["messages"]))
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *view_messages(self.memory, self.thread)]}

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Stores the model's message."""
        self._store(list(state["messages"]))
        return None
