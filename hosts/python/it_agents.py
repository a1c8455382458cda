"""engram_host.agents with the real ``openai-agents`` from PyPI (run by
scripts/test-component in a venv of its own: ``python -m unittest
it_agents``). A scripted Model records every input the Runner sends it:
five turns with a tool call on one thread; a fact from an earlier thread in
the model's input on the turn that asks for it; the items round-trip; a
retried turn stored once; pop_item and clear_session."""

from __future__ import annotations

import asyncio
import json
import sys
import unittest
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from engram_host import InvalidInput, Memory, MemoryStore  # noqa: E402
from engram_host.agents import EngramSession, items_to_messages  # noqa: E402
from test_engram_host import ManualClock  # noqa: E402

HOUR = 3_600_000
T0 = 1_764_000_000_000


def text_reply(n: int, text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_scripted_{n}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptedModel(Model):
    """Answers from a script, one entry per model call; records each input.
    An entry that is an exception is raised (a failed call)."""

    def __init__(self, script: list[Any]):
        self.script = list(script)
        self.inputs: list[list[dict[str, Any]]] = []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(json.loads(json.dumps(input if isinstance(input, list) else [input], default=str)))
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return ModelResponse(output=step, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny and 24 C in {city}."


def text_of(items: list[dict[str, Any]]) -> str:
    return json.dumps(items)


def stored(memory: Memory, thread: str) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in memory.messages() if m["thread"] == thread and not m["erased"]]


class AgentsSessionTest(unittest.TestCase):
    def setUp(self) -> None:
        self.clock = ManualClock(T0)
        self.memory = Memory("agents", store=MemoryStore(), clock=self.clock)
        # An earlier thread teaches a fact; it goes idle.
        for role, content in [
            ("user", "My sister Ana lives in Porto and works as a marine biologist."),
            ("assistant", "Noted: Ana, your sister, lives in Porto."),
        ]:
            self.memory.add_message(role, content, thread="earlier")
            self.clock.ms += 60_000
        # Two days pass: the fact is not in any view yet (the next user
        # message's sleep seals that thread, and recall finds it).
        self.clock.ms += 48 * HOUR

    def run_turn(self, agent: Agent[Any], session: EngramSession, text: str) -> str:
        config = RunConfig(session_input_callback=session.input_callback, tracing_disabled=True)
        result = asyncio.run(Runner.run(agent, text, session=session, run_config=config))
        self.clock.ms += 60_000
        return str(result.final_output)

    def test_five_turns_with_a_tool_call_recall_and_round_trip(self) -> None:
        model = ScriptedModel(
            [
                [text_reply(1, "Hello! How can I help with the trip?")],
                [
                    ResponseFunctionToolCall(
                        id="fc_scripted_2",
                        type="function_call",
                        call_id="call_w1",
                        name="weather",
                        arguments='{"city": "Lisbon"}',
                    )
                ],
                [text_reply(3, "It is sunny in Lisbon.")],
                [text_reply(4, "Your sister Ana lives in Porto.")],
                [text_reply(5, "A train from Lisbon to Porto takes three hours.")],
                [text_reply(6, "Have a good trip!")],
            ]
        )
        agent: Agent[Any] = Agent(name="planner", instructions="Plan trips.", model=model, tools=[weather])
        session = EngramSession(self.memory, thread="trip")
        turns = [
            "Hi, I am planning a trip to Portugal.",
            "What is the weather in Lisbon?",
            "Remind me, where does my sister Ana live?",
            "How long is the train from Lisbon there?",
            "Thanks, that is all.",
        ]
        outputs = [self.run_turn(agent, session, t) for t in turns]
        self.assertEqual(outputs[1], "It is sunny in Lisbon.")
        self.assertEqual(len(model.inputs), 6, "one model call per turn, two for the tool turn")

        # Every model input is engram's view of the thread at that point.
        for got in model.inputs:
            self.assertTrue(any(i.get("role") == "user" for i in got))
        # The tool turn's second call saw the call and its output.
        tool_call = model.inputs[2]
        self.assertIn("function_call", [i.get("type") for i in tool_call])
        self.assertIn("Sunny and 24 C in Lisbon.", text_of(tool_call))
        # The fact from the earlier thread is in the input of the turn that
        # asks for it, in the recall block right before the question, and in
        # no input before the other thread was sealed. (The Runner reads the
        # session before it adds the input: the callback puts the turn's
        # recall in.)
        self.assertNotIn("Porto", text_of(model.inputs[0]))
        asking = model.inputs[3]
        self.assertEqual(asking[-1]["content"], turns[2])
        recall = asking[-2]
        self.assertEqual(recall["role"], "system", asking)
        self.assertIn("Recalled from long-term memory", recall["content"])
        self.assertIn("Porto", recall["content"])
        self.assertIn("Porto", text_of(asking))
        self.assertNotIn("Porto", text_of([i for i in asking if i.get("role") == "user"]))

        # Stored once each, in order, with the tool exchange.
        kept = stored(self.memory, "trip")
        self.assertEqual([c for r, c in kept if r == "user"], turns)
        self.assertEqual(len(kept), 5 + 5 + 2, kept)
        tool_messages = [m for m in self.memory.messages() if m["thread"] == "trip" and m["role"] == "tool"]
        self.assertEqual(tool_messages[0]["tool_call_id"], "call_w1")

        # get_items is render_responses; adding it back changes nothing.
        items = asyncio.run(session.get_items())
        self.assertEqual(items, self.memory.render_responses(thread="trip"))
        self.assertEqual(asyncio.run(session.get_items(limit=2)), items[-2:])
        before = self.memory.messages()
        asyncio.run(session.add_items(items))
        self.assertEqual(self.memory.messages(), before)
        calls = [i for i in items if i.get("type") == "function_call"]
        self.assertEqual([(c["call_id"], c["name"]) for c in calls], [("call_w1", "weather")])

    def retried_turn(
        self, thread: str, between: Callable[[], object] = lambda: None
    ) -> tuple[ScriptedModel, Agent[Any], EngramSession]:
        """A turn "Hello.", then a turn that fails after its input is stored and is
        retried (``between`` runs after the first turn): each message
        stored once. Then the same words after another reply are a new
        message."""
        model = ScriptedModel(
            [
                [text_reply(1, "Hi!")],
                RuntimeError("the model timed out"),
                [text_reply(2, "Lisbon is lovely in May.")],
            ]
        )
        agent: Agent[Any] = Agent(name="a", model=model)
        session = EngramSession(self.memory, thread=thread)
        self.run_turn(agent, session, "Hello.")
        between()
        with self.assertRaises(RuntimeError):
            self.run_turn(agent, session, "When should I visit Lisbon?")
        self.run_turn(agent, session, "When should I visit Lisbon?")
        self.assertEqual(
            stored(self.memory, thread),
            [
                ("user", "Hello."),
                ("assistant", "Hi!"),
                ("user", "When should I visit Lisbon?"),
                ("assistant", "Lisbon is lovely in May."),
            ],
        )
        return model, agent, session

    def same_words_after_another_reply(self, model: ScriptedModel, agent: Agent[Any], session: EngramSession) -> None:
        model.script.append([text_reply(3, "Still May.")])
        self.run_turn(agent, session, "When should I visit Lisbon?")
        asked = [c for r, c in stored(self.memory, session.session_id) if r == "user"]
        self.assertEqual(asked.count("When should I visit Lisbon?"), 2)

    def test_a_retried_turn_is_stored_once(self) -> None:
        self.same_words_after_another_reply(*self.retried_turn("retry"))

    def test_a_retried_turn_is_stored_once_when_its_reply_is_pages_back(self) -> None:
        # Another chat writes 1,200 messages before the failed turn: its
        # input is named by the reply before it, more than a page of ids back.
        roles = ("user", "assistant")
        ran = self.retried_turn(
            "far",
            lambda: self.memory.add_messages(
                [{"role": roles[i % 2], "content": f"other chat, message {i}", "thread": "other"} for i in range(1200)]
            ),
        )
        ids = [m["id"] for m in self.memory.messages() if m["thread"] == "far"]
        self.assertGreater(ids[2] - ids[1], 1000)
        self.same_words_after_another_reply(*ran)

    def test_pop_item_removes_only_the_last_message(self) -> None:
        session = EngramSession(self.memory, thread="pop")
        asyncio.run(
            session.add_items(
                [
                    {"role": "user", "content": "First question."},
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": "msg_a1",
                        "content": [{"type": "output_text", "text": "First answer.", "annotations": []}],
                    },
                    {"role": "user", "content": "Second question."},
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": "msg_a2",
                        "content": [{"type": "output_text", "text": "Second answer.", "annotations": []}],
                    },
                ]
            )
        )
        popped = asyncio.run(session.pop_item())
        assert popped is not None
        self.assertEqual(popped["content"][0]["text"], "Second answer.")
        self.assertEqual(
            stored(self.memory, "pop"),
            [("user", "First question."), ("assistant", "First answer."), ("user", "Second question.")],
        )
        self.assertNotIn("Second answer.", text_of(asyncio.run(session.get_items())))

    def test_clear_session_erases_the_thread(self) -> None:
        session = EngramSession(self.memory, thread="gone")
        asyncio.run(session.add_items([{"role": "user", "content": "Secret plans for the party."}]))
        self.assertIn("gone", [t["thread"] for t in self.memory.threads()])
        asyncio.run(session.clear_session())
        self.assertEqual(stored(self.memory, "gone"), [])
        self.assertNotIn("gone", [t["thread"] for t in self.memory.threads()])
        items = asyncio.run(session.get_items())
        self.assertNotIn("Secret plans", text_of(items))
        self.assertEqual([i for i in items if i.get("role") == "user"], [])

    def test_bad_items_raise_and_add_nothing(self) -> None:
        session = EngramSession(self.memory, thread="bad")
        before = self.memory.messages()
        with self.assertRaises(InvalidInput):
            asyncio.run(
                session.add_items(
                    [
                        {"role": "user", "content": "Fine."},
                        {"type": "web_search_call", "id": "ws_1"},
                    ]
                )
            )
        with self.assertRaises(InvalidInput):
            asyncio.run(session.add_items([{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]))
        self.assertEqual(self.memory.messages(), before)

    def test_function_calls_after_a_message_are_one_assistant_message(self) -> None:
        messages = items_to_messages(
            [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {
                    "type": "message",
                    "role": "assistant",
                    "id": "msg_1",
                    "content": [{"type": "output_text", "text": "Checking both.", "annotations": []}],
                },
                {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "weather", "arguments": "{}"},
                {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "weather", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sun"},
            ]
        )
        self.assertEqual([(m["role"], len(m["tool_calls"])) for m in messages], [("assistant", 2), ("tool", 0)])
        self.assertEqual(messages[0]["content"], "Checking both.")


if __name__ == "__main__":
    unittest.main()
