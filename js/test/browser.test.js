// The package in a real headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core): the shared scenarios (one chat, and two
// threads) over IndexedDB give the fixtures' views, and a memory over
// IndexedDB survives a page reload.
// Pages are served from js/ by a static server on 127.0.0.1.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const JS_ROOT = fileURLToPath(new URL("..", import.meta.url));
const FIXTURE = fileURLToPath(new URL("../../tests/fixtures/scenario.json", import.meta.url));
const THREADS_FIXTURE = fileURLToPath(new URL("../../tests/fixtures/scenario-threads.json", import.meta.url));
const TYPES = { ".js": "text/javascript", ".html": "text/html", ".json": "application/json", ".wasm": "application/wasm" };
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

let server;
let browser;
let origin;

before(async () => {
  server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    const fixtures = { "/fixture.json": FIXTURE, "/fixture-threads.json": THREADS_FIXTURE };
    const file = fixtures[path] ?? join(JS_ROOT, normalize(path));
    if (!file.startsWith(JS_ROOT) && !Object.values(fixtures).includes(file)) return res.writeHead(403).end();
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});

after(async () => {
  await browser?.close();
  server?.closeAllConnections();
  server?.close();
});

async function newPage() {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(`${origin}/test/browser/index.html`);
  return { page, errors };
}

// Replays the fixture at `url` (served) in a fresh page over the IndexedDB
// database `name`, and checks every recorded call was made and every view
// is the fixture's. Returns what the page saw.
async function replayInPage(url, file, name) {
  const { page, errors } = await newPage();
  const result = await page.evaluate(
    async ([url, name]) => {
      const engram = await import("/browser.js");
      const { replayScenario } = await import("/test/scenario.js");
      const fixture = await (await fetch(url)).json();
      const store = engram.indexedDBStore(name);
      const { memory, views, mismatches, position } = await replayScenario(engram, fixture, store);
      const threads = (await memory.threads()).map((t) => t.thread);
      await memory.close();
      await store.close();
      return { views, mismatches, position, threads, inIndexedDB: (await indexedDB.databases()).map((d) => d.name) };
    },
    [url, name],
  );
  const fixture = JSON.parse(await readFile(file, "utf8"));
  assert.deepEqual(result.mismatches, []);
  assert.equal(result.position, fixture.transcript.length);
  assert.ok(result.inIndexedDB.includes(name), `databases: ${result.inIndexedDB}`);
  assert.equal(result.views.length, fixture.views.length);
  for (let i = 0; i < fixture.views.length; i++) assert.deepEqual(result.views[i], fixture.views[i], `view after step ${i + 1}`);
  assert.deepEqual(errors, []);
  await page.close();
  return result;
}

test("the shared scenario over IndexedDB gives the fixture's view after every step", async () => {
  const result = await replayInPage("/fixture.json", FIXTURE, "scenario");
  assert.deepEqual(result.inIndexedDB, ["scenario"]);
  assert.deepEqual(result.threads, ["main"]);
});

test("the multi-thread scenario over IndexedDB gives the fixture's view of each step's thread", async () => {
  const result = await replayInPage("/fixture-threads.json", THREADS_FIXTURE, "scenario-threads");
  assert.equal(result.threads.length, 2, `threads: ${result.threads}`);
});

test("a memory over IndexedDB gives the same view after the page reloads", async () => {
  const { page, errors } = await newPage();
  // Runs in the page: opens the memory "chat" in the database "reload".
  const open = async () => {
    const { Memory, functionModel, indexedDBStore } = await import("/browser.js");
    const model = functionModel((req) => {
      if (req.task === "segment") return { boundary: /New message[^\n]*\n[^\n]*: Next topic/.test(req.content) ? 0.9 : 0.1 };
      if (req.task === "split") return { parts: ["message"] };
      if (req.task === "note") return { facts: [] };
      if (req.task === "relevance") return { relevant: [] };
      if (req.task === "distill") return { kept: [] };
      return { facts: [] };
    });
    let now = 1_772_445_600_000;
    const clock = { now: () => (now += 60_000) };
    const memory = await Memory.open({
      namespace: "chat",
      model,
      store: indexedDBStore("reload"),
      clock,
      config: { min_episode_tokens: 1 },
    });
    globalThis.memory = memory;
  };
  await page.evaluate(open);
  const before = await page.evaluate(async () => {
    const m = globalThis.memory;
    await m.addMessage({ role: "user", content: "Let's name the cat. Ideas?" });
    await m.addMessage({ role: "assistant", content: "Miso, Pixel or Biscuit." });
    await m.addMessage({ role: "user", content: "Next topic: the vet appointment is on Friday." });
    await m.addMessage({ role: "assistant", content: "Noted: vet on Friday." });
    return { view: await m.view(), episodes: await m.episodes(), stats: await m.stats() };
  });
  assert.equal(before.stats.messages, 4);
  assert.equal(before.episodes.length, 1, "the topic change formed an episode");
  assert.equal(before.view.items.length, 4);

  await page.reload();
  assert.equal(await page.evaluate(() => typeof globalThis.memory), "undefined", "the page really reloaded");
  await page.evaluate(open);
  const after = await page.evaluate(async () => {
    const m = globalThis.memory;
    return { view: await m.view(), episodes: await m.episodes(), stats: await m.stats() };
  });
  assert.deepEqual(after.view, before.view);
  assert.deepEqual(
    after.episodes.map(({ activation, ...e }) => e),
    before.episodes.map(({ activation, ...e }) => e),
  );
  assert.equal(after.stats.log_entries, before.stats.log_entries);
  assert.deepEqual(errors, []);
  await page.close();
});

test("IndexedDB keeps Uint8Array values, compares writeIf's expected bytes by content, and reads old string values as UTF-8", async () => {
  const { page, errors } = await newPage();
  const result = await page.evaluate(async () => {
    const { Memory, indexedDBStore } = await import("/browser.js");
    const store = indexedDBStore("bytes");
    const odd = new Uint8Array([0, 255, 128, 0]);
    await store.put("k", odd.subarray(1, 3));
    const got = await store.get("k");
    const mismatch = await store.writeIf("k", new Uint8Array([255]), [["k", null]]);
    const match = await store.writeIf("k", new Uint8Array([255, 128]), [["k", new Uint8Array(0)]]);
    const empty = await store.get("k");
    // A value written as a string (before values were bytes), straight into the object store.
    const db = await new Promise((resolve, reject) => {
      const r = indexedDB.open("bytes", 1);
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    await new Promise((resolve, reject) => {
      const tx = db.transaction("engram", "readwrite");
      tx.objectStore("engram").put('{"é":1}', "old");
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
    });
    db.close();
    const old = await store.get("old");
    const oldMatch = await store.writeIf("old", new TextEncoder().encode('{"é":1}'), [["old", null]]);
    const memory = await Memory.open({ namespace: "b", store });
    await memory.addMessage({ role: "user", content: "Hello there." });
    const head = new TextDecoder().decode(await store.get("engram/b/head"));
    await memory.close();
    await store.close();
    return {
      got: got instanceof Uint8Array ? [...got] : String(got),
      mismatch,
      match,
      empty: empty instanceof Uint8Array ? empty.length : String(empty),
      old: old instanceof Uint8Array ? new TextDecoder().decode(old) : String(old),
      oldMatch,
      head: JSON.parse(head) !== null,
    };
  });
  assert.deepEqual(result, { got: [255, 128], mismatch: false, match: true, empty: 0, old: '{"é":1}', oldMatch: true, head: true });
  assert.deepEqual(errors, []);
  await page.close();
});
