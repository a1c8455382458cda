"""One Python writer of the many-writers test (js/test/many-writers.test.js),
the same protocol as writer.mjs: adds COUNT messages to one memory in
PostgreSQL, prints ``ack W I`` after each acknowledged add, then ``done``; on
a line ``view`` on stdin prints the rendered view as one JSON line.

    python writer.py URL TABLE NAMESPACE WRITER COUNT
"""

import json
import sys

from psycopg_pool import ConnectionPool

from engram_host import Memory
from engram_host.postgres import PostgresStore

url, table, namespace, writer, count = sys.argv[1:6]
pool = ConnectionPool(url, min_size=1, max_size=2, open=True)
memory = Memory(namespace, store=PostgresStore(pool, table=table))
for i in range(int(count)):
    role = "user" if i % 2 == 0 else "assistant"
    memory.add_message(role, f"Writer {writer} says number {i} about topic {writer}-{i % 5}.", client_id=f"{writer}-{i}")
    print(f"ack {writer} {i}", flush=True)
print("done", flush=True)
for line in sys.stdin:
    if line.strip() == "view":
        print(json.dumps(memory.render_openai()), flush=True)
        break
memory.close()
pool.close()
