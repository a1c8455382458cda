// Type test against the official `openai` SDK (a pinned devDependency),
// compiled with tsc --strict and no skipLibCheck by openai.test.js:
// the rendered view is the SDK's ChatCompletionMessageParam[]; the SDK's
// replies (function and custom tool calls) and its message params (the
// `developer` role included) go into addMessage, and a whole
// ChatCompletionMessageParam[] (every role, content parts, tool calls of
// both kinds, the SDK's legacy `function` role) into addMessages, as they
// come.
import OpenAI from "openai";
import type {
  ChatCompletion,
  ChatCompletionDeveloperMessageParam,
  ChatCompletionMessage,
  ChatCompletionMessageCustomToolCall,
  ChatCompletionMessageParam,
  ChatCompletionToolMessageParam,
  ChatCompletionUserMessageParam,
} from "openai/resources/chat/completions";
import { Memory, memoryStore, toNewMessage } from "engram";

export async function turn(client: OpenAI, memory: Memory, text: string): Promise<ChatCompletionMessage> {
  const developer: ChatCompletionDeveloperMessageParam = { role: "developer", content: "Answer briefly." };
  await memory.addMessage(developer);
  const user: ChatCompletionUserMessageParam = { role: "user", content: [{ type: "text", text }] };
  await memory.addMessage(user);
  const messages: ChatCompletionMessageParam[] = await memory.render("openai");
  const completion: ChatCompletion = await client.chat.completions.create({ model: "gpt-4.1-mini", messages });
  const reply = completion.choices[0].message;
  await memory.addMessage(reply); // tool calls (function or custom) included
  for (const call of reply.tool_calls ?? []) {
    const result: ChatCompletionToolMessageParam = { role: "tool", tool_call_id: call.id, content: "done" };
    await memory.addMessage(result);
  }
  return reply;
}

export function shapes(): void {
  const custom: ChatCompletionMessageCustomToolCall = { id: "c1", type: "custom", custom: { name: "sql", input: "SELECT 1" } };
  const reply: ChatCompletionMessage = { role: "assistant", content: null, refusal: null, tool_calls: [custom] };
  toNewMessage(reply);
}

export async function view(): Promise<ChatCompletionMessageParam[]> {
  const memory = await Memory.open({ namespace: "n", store: memoryStore() });
  const rendered = await memory.render("openai");
  for (const m of rendered) if (m.tool_calls) m.tool_calls.map((c) => c.function.name);
  return rendered;
}

export async function history(memory: Memory, params: ChatCompletionMessageParam[]): Promise<number[]> {
  const batch = await memory.addMessages(params);
  for (const p of params) await memory.addMessage(p);
  return batch.messages;
}
