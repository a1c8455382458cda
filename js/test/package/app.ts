// The package as a user installs it (npm i engram-<version>.tgz in a fresh
// project): type-checked with `tsc --strict` against the installed types,
// then compiled (target ES2022) and run on Node. Run by check.sh.

import { Memory, memoryStore, offlineModel, StoreError, type Added, type Stats, type View } from "engram";
import { openAIModel, type OpenAIModelOptions } from "engram/openai";
import { functionModel, hashEmbed } from "engram/function";
import { memoryStore as justMemoryStore } from "engram/memory-store";
import { indexedDBStore } from "engram/indexeddb";
import { sqliteStore } from "engram/sqlite";
import { durableObjectStore } from "engram/durable-object";
import { EngramError, InvalidInputError } from "engram/errors";
import { EngramSession } from "engram/agents";
import { engramMiddleware as langchainMiddleware } from "engram/langchain";

declare const console: { log(...values: unknown[]): void };
declare const process: { exitCode?: number };

// Types only: these subpaths need a browser, better-sqlite3 or a worker.
export const adapters = [openAIModel, functionModel, hashEmbed, indexedDBStore, sqliteStore, durableObjectStore, offlineModel, langchainMiddleware];
export const options: OpenAIModelOptions = { model: "gpt-4.1-mini" };

async function main(): Promise<void> {
  // `await using` compiles down (tsc, target ES2022) and runs on Node 20:
  // the memory is closed at the end of the block.
  let closed: Memory;
  {
    await using memory = await Memory.open({ namespace: "alice", store: justMemoryStore() });
    closed = memory;
    const added: Added = await memory.addMessage({ role: "user", content: "I'm Ana. Let's plan the Lisbon offsite for fifteen people." });
    await memory.addMessage({ role: "assistant", content: "Gladly. What is the budget?" });
    const view: View = await memory.view();
    const stats: Stats = await memory.stats();
    const live: number = stats.episodes[0];
    console.log(`ts: message ${added.message}, ${view.items.length} items, ${stats.view_tokens} tokens, ${live} live episodes`);
    if (view.items.length !== 2) throw new Error("the view should hold both messages");
    // engram/agents needs no SDK installed: its items are the view's.
    const items = await new EngramSession(memory).getItems();
    if (items.length !== 2) throw new Error(`the session should give 2 items, not ${items.length}`);
  }
  if (!closed.closed) throw new Error("await using did not close the memory");
  const err = await Memory.open({ namespace: "", store: memoryStore() }).then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof InvalidInputError) || !(err instanceof EngramError) || err instanceof StoreError) {
    throw new Error(`a bad namespace should be an InvalidInputError, got ${String(err)}`);
  }
  console.log("ts: ok");
}

main().catch((e: unknown) => {
  console.log("ts: FAILED", e);
  process.exitCode = 1;
});
