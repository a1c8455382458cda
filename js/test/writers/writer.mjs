// One writer of the many-writers test (many-writers.test.js): adds COUNT
// messages to one memory in PostgreSQL, printing `ack W I` once each add has
// resolved (acknowledged: committed), then `done`; on a line `view` on stdin
// prints the memory's rendered view as one JSON line and exits.
// With ENGRAM_HANG_COMMIT=N it stops inside its Nth commit, after the
// writes and before COMMIT, prints `in-commit`, and waits to be killed.
//
//   node writer.mjs URL TABLE NAMESPACE WRITER COUNT

import pg from "pg";
import { createInterface } from "node:readline";
import { Memory } from "engram";
import { postgresStore } from "engram/postgres";

const [url, table, namespace, writer, count] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: 2 });
const store = postgresStore(pool, { table });

const hangAt = Number(process.env.ENGRAM_HANG_COMMIT ?? 0);
let commits = 0;
if (hangAt > 0) {
  // Pause inside the transaction: the writes are made, COMMIT is not sent.
  const realConnect = pool.connect.bind(pool);
  pool.connect = async () => {
    const client = await realConnect();
    const realQuery = client.query.bind(client);
    client.query = async (text, values) => {
      if (text === "COMMIT" && ++commits === hangAt) {
        process.stdout.write("in-commit\n");
        await new Promise(() => {});
      }
      return realQuery(text, values);
    };
    return client;
  };
}

const memory = await Memory.open({ namespace, store });
for (let i = 0; i < Number(count); i++) {
  const role = i % 2 === 0 ? "user" : "assistant";
  await memory.addMessage({ role, content: `Writer ${writer} says number ${i} about topic ${writer}-${i % 5}.`, clientId: `${writer}-${i}` });
  process.stdout.write(`ack ${writer} ${i}\n`);
}
process.stdout.write("done\n");
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === "view") {
    process.stdout.write(JSON.stringify(await memory.render("openai")) + "\n");
    break;
  }
}
await memory.close();
await pool.end();
