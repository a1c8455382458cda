"""One Python writer of the many-writers test (js/test/many-writers.test.js),
the same protocol as writer.mjs: adds COUNT messages to one memory in
PostgreSQL, prints ``ack W I`` after each acknowledged add, then ``done``; on
a line ``view`` on stdin prints the rendered view as one JSON line.

    python writer.py URL TABLE NAMESPACE WRITER COUNT
"""

import json
import sys

from psycopg_pool import ConnectionPool

import random
import time

from engram_host import Busy, Memory
from engram_host.postgres import PostgresStore

url, table, namespace, writer, count = sys.argv[1:6]
pool = ConnectionPool(url, min_size=1, max_size=2, open=True)
busy = 0


def with_retry(call):
    """A call that lost the log head `conflict_attempts` times in a row
    (Busy) changed nothing: retried after a pause, exactly once by its
    client id."""
    global busy
    for attempt in range(1, 21):
        try:
            return call()
        except Busy:
            if attempt == 20:
                raise
            busy += 1
            time.sleep(random.random() * 0.02 * attempt)


memory = with_retry(lambda: Memory(namespace, store=PostgresStore(pool, table=table)))
for i in range(int(count)):
    role = "user" if i % 2 == 0 else "assistant"
    content = f"Writer {writer} says number {i} about topic {writer}-{i % 5}."
    with_retry(lambda: memory.add_message(role, content, client_id=f"{writer}-{i}"))
    print(f"ack {writer} {i}", flush=True)
print(f"writer {writer}: {busy} busy retries", file=sys.stderr)
print("done", flush=True)
for line in sys.stdin:
    if line.strip() == "view":
        print(json.dumps(memory.render_openai()), flush=True)
        break
memory.close()
pool.close()
