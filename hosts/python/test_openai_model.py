"""OpenAIModel against real local servers' ways, on a fake server on
127.0.0.1: the fall back from json_schema on a rejection naming
response_format (400, 422 or 500), remembered per endpoint and said once;
max_tokens from the task; concurrency from /props or given, queueing the
rest; an abandoned call cancelled on the wire.

Run: ``.venv/bin/python -m unittest hosts/python/test_openai_model.py``
(no component needed but for the last test, which drives a Memory).
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
import unittest
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from engram_host.models import (  # noqa: E402
    DEFAULT_CONCURRENCY,
    MAX_TOKENS,
    ModelUnavailable,
    OpenAIModel,
    TaskRequest,
)

REJECTION = "1 validation error for CreateChatCompletionRequest: response_format: Input should be 'text' or 'json_object'"


class Handler(http.server.BaseHTTPRequestHandler):
    server: Server

    def log_message(self, *_: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        srv = self.server
        if self.path != "/props" or srv.slots is None:
            self.reply(404, {"error": "not found"})
            return
        srv.props_asked += 1
        self.reply(200, {"total_slots": srv.slots})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        srv = self.server
        with srv.lock:
            srv.requests.append(body)
            srv.in_flight += 1
            srv.peak = max(srv.peak, srv.in_flight)
        counted = True
        try:
            if srv.hang:
                # Until released, or until the client closes the connection.
                self.connection.settimeout(0.05)
                while not srv.release.is_set():
                    try:
                        if self.connection.recv(1) == b"":
                            srv.closed += 1
                            return
                    except TimeoutError:
                        continue
                    except OSError:
                        srv.closed += 1
                        return
                return
            time.sleep(srv.delay)
            with srv.lock:  # done before the answer goes out: the client may send the next at once
                srv.in_flight -= 1
                counted = False
            fmt = body.get("response_format", {}).get("type")
            if fmt == "json_schema" and srv.reject is not None:
                self.reply(srv.reject, {"error": {"message": REJECTION}})
                return
            if "schema" in body.get("response_format", {}) and srv.reject_schema is not None:
                self.reply(srv.reject_schema, {"error": {"message": "response_format: extra field schema"}})
                return
            if srv.statuses:
                self.reply(srv.statuses.pop(0), {"error": {"message": "kv cache full"}})
                return
            choice = {"index": 0, "finish_reason": srv.finish, "message": {"role": "assistant", "content": srv.answer}}
            self.reply(200, {"choices": [choice]})
        finally:
            if counted:
                with srv.lock:
                    srv.in_flight -= 1

    def reply(self, status: int, out: Any) -> None:
        raw = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock = threading.Lock()
        self.requests: list[Any] = []
        self.statuses: list[int] = []
        self.reject: int | None = None
        self.reject_schema: int | None = None
        self.slots: int | None = None
        self.props_asked = 0
        self.answer = '{"boundary": 0.2}'
        self.finish = "stop"
        self.delay = 0.0
        self.in_flight = 0
        self.peak = 0
        self.hang = False
        self.closed = 0
        self.release = threading.Event()


def request(task: str = "segment") -> TaskRequest:
    return TaskRequest(task=task, system="Judge.", content="New message: hi", schema='{"type": "object"}', attempt=1)


class OpenAIModelOnLocalServers(unittest.TestCase):
    def setUp(self) -> None:
        self.server = Server()
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def tearDown(self) -> None:
        self.server.release.set()
        self.server.shutdown()
        self.server.server_close()

    def model(self, name: str, **kw: Any) -> OpenAIModel:
        return OpenAIModel(self.url, model=name, sleep=lambda _: None, **kw)

    def test_a_rejection_naming_response_format_falls_back_once_and_is_remembered(self) -> None:
        for status in (400, 422, 500):
            with self.subTest(status=status):
                self.server.requests.clear()
                self.server.reject = status
                heard: list[dict[str, Any]] = []
                model = self.model(f"fallback-{status}", on_event=heard.append)
                self.assertEqual(model.complete(request()), '{"boundary": 0.2}')
                self.assertEqual(model.complete(request()), '{"boundary": 0.2}')
                formats = [r["response_format"]["type"] for r in self.server.requests]
                self.assertEqual(formats, ["json_schema", "json_object", "json_object"], "no retry of the rejection")
                self.assertEqual(len(heard), 1)
                self.assertEqual((heard[0]["event"], heard[0]["status"], heard[0]["to"]), ("format", status, "json_object"))
                self.assertTrue(heard[0]["schema"])
                # JSON mode carries the task's schema (llama.cpp's servers make it a grammar).
                self.assertEqual(self.server.requests[1]["response_format"], {"type": "json_object", "schema": {"type": "object"}})
                self.assertIn("response_format", heard[0]["reason"])
                self.assertEqual(model.events, heard)
                # A new model for the same endpoint starts in JSON mode, silently.
                self.server.requests.clear()
                again = self.model(f"fallback-{status}", on_event=heard.append)
                again.complete(request())
                self.assertEqual([r["response_format"]["type"] for r in self.server.requests], ["json_object"])
                self.assertEqual(len(heard), 1)

    def test_a_server_rejecting_the_schema_in_json_mode_too_gets_plain_json_mode(self) -> None:
        self.server.reject = 400
        self.server.reject_schema = 400
        heard: list[dict[str, Any]] = []
        model = self.model("plain-json", on_event=heard.append)
        self.assertEqual(model.complete(request()), '{"boundary": 0.2}')
        self.assertEqual(model.complete(request()), '{"boundary": 0.2}')
        sent = [(r["response_format"]["type"], "schema" in r["response_format"]) for r in self.server.requests]
        self.assertEqual(sent, [("json_schema", False), ("json_object", True), ("json_object", False), ("json_object", False)])
        self.assertEqual([(e["from"], e["schema"]) for e in heard], [("json_schema", True), ("json_object+schema", False)])
        self.server.requests.clear()
        self.model("plain-json").complete(request())
        self.assertEqual([r["response_format"] for r in self.server.requests], [{"type": "json_object"}])

    def test_a_500_not_naming_response_format_is_retried_without_fallback(self) -> None:
        self.server.statuses = [500, 500]
        model = self.model("no-fallback")
        self.assertEqual(model.complete(request()), '{"boundary": 0.2}')
        self.assertEqual([r["response_format"]["type"] for r in self.server.requests], ["json_schema"] * 3)
        self.assertEqual(model.events, [])

    def test_every_request_carries_max_tokens_from_its_task(self) -> None:
        model = self.model("bounds")
        for task in MAX_TOKENS:
            model.complete(request(task))
        self.assertEqual([r["max_tokens"] for r in self.server.requests], list(MAX_TOKENS.values()))
        self.assertLess(MAX_TOKENS["segment"], MAX_TOKENS["note"])
        self.server.requests.clear()
        self.model("bounds", max_tokens=77).complete(request("note"))
        self.model("bounds", max_tokens={"note": 900}).complete(request("note"))
        self.model("bounds", max_tokens={"note": 900}).complete(request("segment"))
        self.assertEqual([r["max_tokens"] for r in self.server.requests], [77, 900, MAX_TOKENS["segment"]])
        for bad in (0, -3, True, "64", {"note": 0}):
            with self.assertRaises(ValueError):
                self.model("bounds", max_tokens=bad)
        self.server.finish = "length"
        with self.assertRaisesRegex(ModelUnavailable, r"^truncated: .*max_tokens \(1536\)"):
            model.complete(request("note"))

    def peak(self, model: OpenAIModel, n: int) -> int:
        self.server.peak = 0
        self.server.delay = 0.05
        answers: list[str] = []
        threads = [threading.Thread(target=lambda: answers.append(model.complete(request()))) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        self.assertEqual(answers, ['{"boundary": 0.2}'] * n, "queued, none lost")
        return self.server.peak

    def test_concurrency_follows_the_servers_slots_else_the_default_or_as_given(self) -> None:
        self.server.slots = 1
        one = self.model("slots")
        self.assertEqual(self.peak(one, 5), 1)
        self.assertEqual(self.peak(one, 3), 1)
        self.assertEqual(self.server.props_asked, 1)
        self.assertEqual(one.concurrency, 1)
        self.server.slots = None
        self.assertEqual(self.peak(self.model("slots"), 6), DEFAULT_CONCURRENCY)
        self.server.slots = 1
        self.server.props_asked = 0
        self.assertEqual(self.peak(self.model("slots", concurrency=3), 6), 3)
        self.assertEqual(self.server.props_asked, 0, "a given concurrency asks nothing")
        for bad in (0, True, 1.5):
            with self.assertRaises(ValueError):
                self.model("slots", concurrency=bad)

    def test_abandon_closes_the_running_call_and_unqueues_the_waiting_one(self) -> None:
        self.server.hang = True
        model = self.model("abandon", concurrency=1, retries=3, timeout=30)
        errors: dict[str, str] = {}
        idents: dict[str, int] = {}

        def call(name: str) -> None:
            idents[name] = threading.get_ident()
            try:
                model.complete(request())
            except ModelUnavailable as e:
                errors[name] = str(e)

        running = threading.Thread(target=call, args=("running",))
        running.start()
        time.sleep(0.2)
        waiting = threading.Thread(target=call, args=("waiting",))
        waiting.start()
        time.sleep(0.2)
        self.assertEqual(len(self.server.requests), 1, "the second waits for the one slot")
        started = time.monotonic()
        model.abandon(idents["waiting"])
        waiting.join(5)
        self.assertIn("abandoned by the caller while queued", errors["waiting"])
        model.abandon(idents["running"])
        running.join(5)
        self.assertLess(time.monotonic() - started, 3)
        self.assertIn("abandoned by the caller", errors["running"])
        time.sleep(0.2)
        self.assertEqual(self.server.closed, 1, "the running request's connection was closed")
        self.assertEqual(len(self.server.requests), 1, "no retry after the abandon, the waiter never sent")
        # The slot is free again.
        self.server.hang = False
        self.assertEqual(model.complete(request()), '{"boundary": 0.2}')

    def test_the_whole_request_is_bounded_by_timeout(self) -> None:
        self.server.hang = True
        model = self.model("deadline", timeout=0.3, retries=0)
        started = time.monotonic()
        with self.assertRaisesRegex(ModelUnavailable, "no answer within 0.3 s"):
            model.complete(request())
        self.assertLess(time.monotonic() - started, 2)
        time.sleep(0.2)
        self.assertEqual(self.server.closed, 1)


if __name__ == "__main__":
    unittest.main()
