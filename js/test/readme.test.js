// The README's JavaScript snippet ("Use from JavaScript"), run as written on
// Node: extracted from README.md at test time, its import of "engram"
// pointed at a shim that is the package (js/node.js) with the browser's
// IndexedDB store replaced by memoryStore, and `fetch` answering like an
// OpenAI-compatible server (engram's tasks by the offline model, embeddings
// by the offline embedder, the chat reply canned). Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { offlineModel } from "engram";

/** The first ```js block after the "## Use from JavaScript" heading. */
function readmeSnippet() {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("## Use from JavaScript"));
  const m = /```js\n([\s\S]*?)```/.exec(section);
  assert.ok(m, "README.md has a js block under Use from JavaScript");
  return m[1];
}

/** A fetch that answers like an OpenAI-compatible server. */
function fakeServer() {
  const offline = offlineModel();
  const seen = { tasks: 0, embeddings: 0, chats: 0 };
  const json = (body) => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
  const fetch = async (url, init) => {
    const body = JSON.parse(init.body);
    if (String(url).endsWith("/embeddings")) {
      seen.embeddings++;
      const vectors = await offline.embed(body.input);
      return json({ data: vectors.map((embedding, index) => ({ embedding, index })) });
    }
    const schema = body.response_format?.json_schema;
    if (schema) {
      seen.tasks++;
      const task = schema.name.replace(/^engram_/, "");
      const [system, user] = body.messages;
      const content = await offline.complete({ task, system: system.content, content: user.content, schema: JSON.stringify(schema.schema) });
      return json({ choices: [{ message: { role: "assistant", content } }] });
    }
    seen.chats++;
    return json({ choices: [{ message: { role: "assistant", content: `Reply ${seen.chats}: noted.` } }] });
  };
  return { fetch, seen };
}

test("the README's JavaScript snippet runs: a chat loop whose prompts engram builds", async () => {
  const dir = mkdtempSync(join(tmpdir(), "engram-readme-"));
  const realFetch = globalThis.fetch;
  try {
    const node = pathToFileURL(new URL("../node.js", import.meta.url).pathname).href;
    writeFileSync(
      join(dir, "shim.mjs"),
      `export * from ${JSON.stringify(node)};\n` +
        `import { memoryStore } from ${JSON.stringify(node)};\n` +
        `export const indexedDBStore = () => memoryStore();\n`,
    );
    const snippet = readmeSnippet().replaceAll(`from "engram"`, `from "./shim.mjs"`);
    assert.ok(snippet.includes("./shim.mjs"), "the snippet imports from engram");
    writeFileSync(join(dir, "snippet.mjs"), snippet);
    const server = fakeServer();
    globalThis.fetch = server.fetch;
    globalThis.OPENAI_API_KEY = "sk-test";
    const { chat } = await import(pathToFileURL(join(dir, "snippet.mjs")).href);
    for (const text of [
      "I'm Ana. Let's plan the Lisbon offsite for fifteen people.",
      "The budget is about 20,000 euros and we fly on May 12.",
      "Where did we say the offsite is?",
    ]) {
      assert.match(await chat(text), /^Reply \d+: noted\.$/);
    }
    assert.equal(server.seen.chats, 3, "one chat completion per turn");
    assert.ok(server.seen.tasks > 0, `engram asked its tasks: ${JSON.stringify(server.seen)}`);
  } finally {
    globalThis.fetch = realFetch;
    delete globalThis.OPENAI_API_KEY;
    rmSync(dir, { recursive: true, force: true });
  }
});
