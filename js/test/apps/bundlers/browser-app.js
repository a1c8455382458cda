// A browser app as users write it: `import ... from "engram"`, bundled by
// Vite's production build. It opens a memory over IndexedDB, adds a
// question and its answer, and shows the view (or the error) in #result.

import { InvalidInputError, Memory, indexedDBStore } from "engram";

async function run() {
  const memory = await Memory.open({ namespace: "vite-app", store: indexedDBStore("engram-vite-app") });
  try {
    const a = await memory.addMessage({ role: "user", content: "My cat is called Miso.", client_id: "q1" });
    const b = await memory.addMessage({ role: "assistant", content: "Miso is a fine name for a cat." });
    // Error names survive the minifier (it renames classes).
    const errorName = new InvalidInputError("x").name;
    return { ok: true, added: [a.message, b.message], view: await memory.render("openai"), errorName };
  } finally {
    await memory.close();
  }
}

run().then(
  (result) => (document.querySelector("#result").textContent = JSON.stringify(result)),
  (e) => (document.querySelector("#result").textContent = JSON.stringify({ ok: false, code: e?.code, error: String(e) })),
);
