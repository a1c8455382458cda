// One cell of the install matrix, run inside a scratch app where the packed
// engram, one `ai` major and one better-sqlite3 major were installed with
// plain `npm install` (check.sh beside this file). Checks, on that ai:
//   - engramMiddleware around the SDK's newest mock language model: the
//     model sees the memory's view, a regenerate leaves one copy of the
//     question;
//   - aiSdkModel answers a task through generateText's object output, and
//     the SDK logs no deprecation (no generateObject on ai 7);
// and on that better-sqlite3: sqliteStore keeps a memory across a reopen.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateText, wrapLanguageModel } from "ai";
import * as mocks from "ai/test";
import { Memory, memoryStore, sqliteStore } from "engram";
import { aiSdkModel, engramMiddleware } from "engram/ai-sdk";

const warnings = [];
process.on("warning", (w) => warnings.push(`${w.name}: ${w.message}`));
const warn = console.warn;
console.warn = (...args) => warnings.push(args.join(" "));

// ai 5: LanguageModelV2; ai 6: V3; ai 7: V4 (and V3). Results differ from V3 on.
const version = mocks.MockLanguageModelV4 ? "V4" : mocks.MockLanguageModelV3 ? "V3" : "V2";
const Mock = mocks[`MockLanguageModel${version}`];
const usage =
  version === "V2"
    ? { inputTokens: 1, outputTokens: 1, totalTokens: 2 }
    : { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const finishReason = version === "V2" ? "stop" : { unified: "stop", raw: "stop" };
const answer = (text) => ({ content: [{ type: "text", text }], finishReason, usage, warnings: [] });

const memory = await Memory.open({ namespace: "matrix", store: memoryStore() });
let seen;
let n = 0;
const chat = new Mock({
  doGenerate: async (options) => {
    seen = options.prompt;
    return answer(`reply ${++n}`);
  },
});
const model = wrapLanguageModel({ model: chat, middleware: engramMiddleware({ memory }) });
const history = [{ role: "user", content: "I'm Ana. Let's plan the Lisbon offsite for fifteen people." }];
assert.equal((await generateText({ model, messages: history })).text, "reply 1");
assert.ok(JSON.stringify(seen).includes("Lisbon offsite"), "the model saw engram's view");
await generateText({ model, messages: history }); // regenerate
const kept = (await memory.messages()).map((m) => `${m.role}: ${m.content}`);
assert.deepEqual(kept, [`user: ${history[0].content}`, "assistant: reply 1", "assistant: reply 2"]);
await memory.close();

const structured = new Mock({ doGenerate: async () => answer('{"boundary": 0.25}') });
const adapter = aiSdkModel({ model: structured, maxRetries: 0 });
const text = await adapter.complete({
  task: "segment",
  system: "Judge the boundary.",
  content: "New message: hi",
  schema: JSON.stringify({ type: "object", required: ["boundary"], properties: { boundary: { type: "number" } } }),
  attempt: 1,
});
assert.deepEqual(JSON.parse(text), { boundary: 0.25 });
const format = structured.doGenerateCalls[0].responseFormat;
assert.equal(format.type, "json");
await new Promise((resolve) => setImmediate(resolve)); // process warnings arrive on a later tick
assert.deepEqual(warnings, [], "the SDK logged no warning (no deprecated call)");

const dir = mkdtempSync(join(tmpdir(), "engram-matrix-"));
try {
  const path = join(dir, "memory.db");
  const first = await Memory.open({ namespace: "sqlite", store: sqliteStore(path) });
  await first.addMessage({ role: "user", content: "Remember the blue door." });
  await first.close();
  const again = await Memory.open({ namespace: "sqlite", store: sqliteStore(path) });
  assert.deepEqual((await again.render("openai")).map((m) => m.content), ["Remember the blue door."]);
  await again.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.warn = warn;
console.log(`smoke: ai ${process.env.AI_VERSION ?? "?"} (mock ${version}), better-sqlite3 ${process.env.BS3_VERSION ?? "?"}, node ${process.version}: ok`);
