import { Memory, memoryStore } from "engram";

// No model given: the built-in offline model (rules and a hashing embedder, no key,
// no network). For real use pass `model: openAIModel({...})` and call your LLM below.
const memory = await Memory.open({ namespace: "ana", store: memoryStore() });
const llm = async (messages) => ({ role: "assistant", content: `(your LLM's reply to ${messages.length} messages)` });

for (const text of ["I'm Ana. Let's plan the Lisbon offsite for 15 people.", "We fly out on May 12.", "When do we fly?"]) {
  await memory.addMessage({ role: "user", content: text }); // cut into episodes, recall
  const messages = await memory.render("openai"); // the view, as a chat request
  const reply = await llm(messages);
  await memory.addMessage(reply); // notes, distill, fade: after the reply
  console.log(`${(await memory.stats()).view_tokens} tokens in view; ${reply.content}`);
}
await memory.close();
