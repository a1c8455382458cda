"""engram_host.langchain with the real ``langchain`` 1.x from PyPI (run by
scripts/test-component in a venv of its own: ``python -m unittest
it_langchain``). A scripted chat model records every input: an agent run
with a tool call whose model input is engram's view of the thread (the
recall of an earlier thread's fact in it), each exchange stored once, a
second invoke on the same graph state storing nothing twice."""

from __future__ import annotations

import json
import sys
import unittest
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from engram_host import Memory, MemoryStore  # noqa: E402
from engram_host.langchain import EngramMiddleware, view_messages  # noqa: E402
from test_engram_host import ManualClock  # noqa: E402

HOUR = 3_600_000
T0 = 1_764_000_000_000


class ScriptedChat(BaseChatModel):
    """Answers from a script; records the messages of every call."""

    script: list[AIMessage]
    inputs: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.inputs.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.script.pop(0))])


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny and 24 C in {city}."


def stored(memory: Memory, thread: str) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in memory.messages() if m["thread"] == thread and not m["erased"]]


class LangChainMiddlewareTest(unittest.TestCase):
    def test_the_model_sees_engrams_view_and_each_exchange_is_stored_once(self) -> None:
        clock = ManualClock(T0)
        memory = Memory("lc", store=MemoryStore(), clock=clock)
        for role, content in [
            ("user", "My sister Ana lives in Porto and works as a marine biologist."),
            ("assistant", "Noted: Ana, your sister, lives in Porto."),
        ]:
            memory.add_message(role, content, thread="earlier")
            clock.ms += 60_000
        clock.ms += 48 * HOUR
        memory.maintain(thread="earlier")

        model = ScriptedChat(
            script=[
                AIMessage(content="", tool_calls=[{"name": "weather", "args": {"city": "Porto"}, "id": "call_1"}]),
                AIMessage(content="Ana lives in Porto, where it is sunny today."),
                AIMessage(content="You are welcome."),
            ],
            inputs=[],
        )
        agent = create_agent(model, tools=[weather], middleware=[EngramMiddleware(memory, thread="chat")])
        question = "Where does my sister Ana live, and what is the weather there?"
        state = agent.invoke({"messages": [{"role": "user", "content": question}]})
        self.assertEqual(state["messages"][-1].content, "Ana lives in Porto, where it is sunny today.")

        # Each model call's input is engram's view at that point.
        self.assertEqual(len(model.inputs), 2)
        first = model.inputs[0]
        # engram's view, not the graph's messages: every id names engram's item.
        self.assertTrue(all(str(m.id).startswith("engram-") for m in first), [m.id for m in first])
        self.assertIn("Porto", "\n".join(str(m.content) for m in first if m.type == "system"))
        self.assertEqual([m.content for m in first if m.type == "human"], [question])
        second = model.inputs[1]
        self.assertIn("Sunny and 24 C in Porto.", [m.content for m in second if m.type == "tool"])

        # Stored once each: the question, the call, its output, the answer.
        self.assertEqual(
            stored(memory, "chat"),
            [
                ("user", question),
                ("assistant", ""),
                ("tool", "Sunny and 24 C in Porto."),
                ("assistant", "Ana lives in Porto, where it is sunny today."),
            ],
        )
        # The state ends as engram's view plus nothing engram lacks.
        self.assertEqual(
            [m.content for m in state["messages"]],
            [m.content for m in view_messages(memory, "chat")],
        )

        # A next turn from the returned state stores only the new exchange.
        state = agent.invoke({"messages": [*state["messages"], {"role": "user", "content": "Thanks!"}]})
        kept = stored(memory, "chat")
        self.assertEqual(kept[-2:], [("user", "Thanks!"), ("assistant", "You are welcome.")])
        self.assertEqual(len(kept), 6)
        self.assertEqual(json.dumps(kept).count(question), 1)


if __name__ == "__main__":
    unittest.main()
