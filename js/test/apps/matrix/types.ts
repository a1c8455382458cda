// Type-checked (tsc --strict, no skipLibCheck) in each cell of the install
// matrix: engram's entries against the installed `ai` major's own types.
// Only names every ai major exports: no mocks (their names change).
import { generateText, streamText, wrapLanguageModel, type LanguageModel, type embedMany } from "ai";
import { Memory, memoryStore, PackagingError } from "engram";
import { aiSdkModel, engramMiddleware, toAiSdkPrompt, type AiSdkPrompt, type AiSdkEmbeddingModel } from "engram/ai-sdk";
import { sqliteStore } from "engram/sqlite";

// A provider's model object, of the specification version this ai wraps.
declare const chat: Parameters<typeof wrapLanguageModel>[0]["model"];
const asked: LanguageModel = chat;
declare const embedder: Parameters<typeof embedMany>[0]["model"];

export async function run(): Promise<string> {
  const embeddingModel: AiSdkEmbeddingModel = embedder;
  const engramModel = aiSdkModel({ model: asked, embeddingModel, output: "object" });
  const memory = await Memory.open({ namespace: "n", store: memoryStore(), model: engramModel });
  const stored = sqliteStore("memory.db");
  stored.close();
  const model = wrapLanguageModel({ model: chat, middleware: engramMiddleware({ memory, system: "keep", clientId: "ui-1" }) });
  streamText({ model, messages: [{ role: "user", content: "hi" }] });
  const prompt: AiSdkPrompt = toAiSdkPrompt(await memory.render("openai"));
  // @ts-expect-error system is "instructions", "keep" or "ignore"
  engramMiddleware({ memory, system: "replace" });
  // @ts-expect-error clientId is a string
  engramMiddleware({ memory, clientId: 7 });
  const e: unknown = null;
  if (e instanceof PackagingError) return e.code;
  return (await generateText({ model, prompt: String(prompt.length) })).text;
}
