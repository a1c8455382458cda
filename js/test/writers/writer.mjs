// One writer of the many-writers test (many-writers.test.js): adds COUNT
// messages to one memory in PostgreSQL, printing `ack W I` once each add has
// resolved (acknowledged: committed), then `done`; on a line `view` on stdin
// prints the memory's rendered view as one JSON line and exits.
// With ENGRAM_HANG_COMMIT=N it stops inside its Nth commit and waits to be
// killed: a commit is one statement (postgresStore's guarded writeIf), so it
// sends that statement, which lands on the server, prints `in-commit` and
// never reads the answer (the write landed, the add is not acknowledged; a
// COMMIT of the first commit's transaction is held back instead).
//
//   node writer.mjs URL TABLE NAMESPACE WRITER COUNT

import pg from "pg";
import { createInterface } from "node:readline";
import { Memory, BusyError } from "engram";
import { postgresStore } from "engram/postgres";

const [url, table, namespace, writer, count] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: 2 });
const store = postgresStore(pool, { table });

const hangAt = Number(process.env.ENGRAM_HANG_COMMIT ?? 0);
let commits = 0;
if (hangAt > 0) {
  // Each new connection's query is wrapped once (pooled clients are reused).
  pool.on("connect", (client) => {
    const realQuery = client.query.bind(client);
    client.query = (...args) => {
      const text = typeof args[0] === "string" ? args[0] : args[0]?.text;
      const guarded = typeof text === "string" && text.startsWith("WITH g AS");
      if ((text === "COMMIT" || guarded) && ++commits === hangAt) {
        // Sent in promise form: pool.query's callback never hears back.
        if (guarded) realQuery(...args.filter((a) => typeof a !== "function")).catch(() => {});
        process.stdout.write("in-commit\n");
        return new Promise(() => {});
      }
      return realQuery(...args);
    };
  });
}


// A call that lost the race for the log head `conflict_attempts` times in a
// row (BusyError) changed nothing: a host retries it after a pause; the
// same client id makes the retry exactly-once.
async function withRetry(call) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (e) {
      if (!(e instanceof BusyError) || attempt >= 20) throw e;
      busy++;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
    }
  }
}
let busy = 0;

const memory = await withRetry(() => Memory.open({ namespace, store }));
for (let i = 0; i < Number(count); i++) {
  const role = i % 2 === 0 ? "user" : "assistant";
  const content = `Writer ${writer} says number ${i} about topic ${writer}-${i % 5}.`;
  await withRetry(() => memory.addMessage({ role, content, clientId: `${writer}-${i}` }));
  process.stdout.write(`ack ${writer} ${i}\n`);
}
process.stderr.write(`writer ${writer}: ${busy} busy retries\n`);
process.stdout.write("done\n");
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === "view") {
    process.stdout.write(JSON.stringify(await memory.render("openai")) + "\n");
    break;
  }
}
await memory.close();
await pool.end();
// An open stdin would keep the process alive.
process.stdin.destroy();
