// A chat route with memory for AI SDK apps: `POST /api/chat` as a useChat
// client calls it (a Next.js route handler, or any framework whose handlers
// take a Request and return a Response). One memory per user, one thread
// per chat (useChat sends the chat's `id`): the chat model is wrapped with
// engramMiddleware, so it sees that chat's view (the user's facts from every
// chat, this chat's own history and recall) instead of the whole history the
// client resends, and every turn is remembered.
//
// In a Next.js app, app/api/chat/route.js:
//
//   import { openai } from "@ai-sdk/openai";
//   import { sqliteStore } from "engram";
//   import { aiSdkModel } from "engram/ai-sdk";
//   import { createChatRoute } from "./ai-sdk-route.js";
//
//   export const POST = createChatRoute({
//     chatModel: openai("gpt-4.1"),
//     engramModel: aiSdkModel({
//       model: openai("gpt-4.1-mini"),
//       embeddingModel: openai.textEmbeddingModel("text-embedding-3-small"),
//     }),
//     store: sqliteStore("memory.db"),
//   });
//
// js/test/ai-sdk.test.js runs this handler against the AI SDK's mock model.

import { convertToModelMessages, streamText, wrapLanguageModel } from "ai";
import { Memory } from "engram";
import { engramMiddleware } from "engram/ai-sdk";

/**
 * The `POST /api/chat` handler. `chatModel`: the AI SDK model that answers
 * the user; `engramModel`: the model engram runs its own tasks on (an
 * `aiSdkModel(...)`, or omit it for the offline model); `store`: where
 * memories live.
 */
export function createChatRoute({ chatModel, engramModel, store, system = "You are a helpful assistant with a long memory." }) {
  return async function POST(request) {
    const { messages, userId, id: chatId, trigger } = await request.json();
    // Take the user from your session, not from the request body, in a real app.
    const memory = await Memory.open({ namespace: `user:${userId}`, store, model: engramModel });
    try {
      // The UI message's id is the memory's client id for it: a regenerate
      // or a retried request adds nothing twice; an edit adds the new text.
      // useChat's `trigger` ("regenerate-message" from regenerate()): the
      // new answer replaces the old one in the view, as on the screen.
      const last = messages.at(-1);
      const clientId = last?.role === "user" && typeof last.id === "string" && last.id ? last.id : undefined;
      const result = streamText({
        model: wrapLanguageModel({
          model: chatModel,
          // useChat's chat id names the thread; no id: the user's "main" thread.
          middleware: engramMiddleware({
            memory,
            clientId,
            trigger: trigger === "regenerate-message" || trigger === "submit-message" ? trigger : undefined,
            thread: typeof chatId === "string" && chatId ? chatId : "main",
          }),
        }),
        system, // pinned as the memory's instructions (first in every view, never faded)
        // (ai 6 and 7 return a promise here, ai 5 the messages: await takes both.)
        messages: await convertToModelMessages(messages), // only the newest user message is added
        // The reply is in the memory before the stream closes; free() waits for queued calls.
        onFinish: () => memory.free(),
        onError: ({ error }) => {
          console.error("chat:", error);
          memory.free();
        },
        onAbort: () => memory.free(),
      });
      return result.toUIMessageStreamResponse();
    } catch (e) {
      memory.free();
      throw e;
    }
  };
}
