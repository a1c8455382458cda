// The installed package's AI SDK entry from a fresh project: `engram/ai-sdk`
// with `ai` (its optional peer dependency) installed beside it, the
// middleware wrapped around the SDK's own mock model. Run by check.sh.
import assert from "node:assert/strict";
import { generateText, wrapLanguageModel } from "ai";
import { MockLanguageModelV2 } from "ai/test";
import { Memory, memoryStore } from "engram";
import { engramMiddleware } from "engram/ai-sdk";

const memory = await Memory.open({ namespace: "alice", store: memoryStore() });
try {
  let prompt;
  const mock = new MockLanguageModelV2({
    doGenerate: async (options) => {
      prompt = options.prompt;
      return {
        content: [{ type: "text", text: "Lisbon, for fifteen people." }],
        finishReason: "stop",
        usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
        warnings: [],
      };
    },
  });
  const model = wrapLanguageModel({ model: mock, middleware: engramMiddleware({ memory }) });
  const { text } = await generateText({ model, prompt: "I'm Ana. Let's plan the Lisbon offsite for fifteen people." });
  assert.equal(text, "Lisbon, for fifteen people.");
  assert.ok(JSON.stringify(prompt).includes("Lisbon offsite"), "the model saw engram's view");
  const stats = await memory.stats();
  assert.equal(stats.messages, 2, "the turn and the reply are in the memory");
  console.log(`ai.mjs: engram/ai-sdk over ai's MockLanguageModelV2, ${stats.messages} messages`);
} finally {
  await memory.close();
}
