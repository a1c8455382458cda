// A Node server's code as users write it: `import ... from "engram"`,
// bundled by esbuild (platform node). It opens a memory, adds a question
// and its answer, and prints the view as JSON (or the error, exit 1).

import { Memory, memoryStore } from "engram";

try {
  const memory = await Memory.open({ namespace: "esbuild-app", store: memoryStore() });
  const a = await memory.addMessage({ role: "user", content: "My cat is called Miso.", client_id: "q1" });
  const b = await memory.addMessage({ role: "assistant", content: "Miso is a fine name for a cat." });
  console.log(JSON.stringify({ ok: true, added: [a.message, b.message], view: await memory.render("openai") }));
  await memory.close();
} catch (e) {
  console.log(JSON.stringify({ ok: false, code: e?.code, name: e?.name, error: String(e?.message ?? e) }));
  process.exitCode = 1;
}
