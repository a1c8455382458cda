// engram-mcp (src/mcp/) driven by the official MCP SDK's own client, over
// stdio (the server spawned as a process by StdioClientTransport) and over
// Streamable HTTP on 127.0.0.1, on a SQLite file and the offline model:
// the tools listed; 50 dated messages remembered in two threads; a fact of
// the first thread recalled with a thread filter (dated, attributed), not
// found with the other thread's; the context block (facts block + recall
// block); a fact remembered, read in the facts resource and explained;
// forget erases a message for good; engram's errors come back as tool
// errors (isError) carrying engram's code and write nothing (messages
// stored before a refused fact: said in the error, a retry skips them); HTTP refuses
// a missing or wrong bearer token (and a foreign Host: DNS rebinding), and
// off loopback the server will not start without one; two servers (two
// processes) on one SQLite file store every message once; the model from
// ENGRAM_MODEL* reaches a local OpenAI-compatible endpoint. Run by
// scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer, request } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { Memory, sqliteStore } from "engram";

const CLI = fileURLToPath(new URL("../src/mcp/cli.js", import.meta.url));
const CONFIG = JSON.stringify({ ceiling_tokens: 400, target_episode_tokens: 40, max_episode_tokens: 80, min_episode_tokens: 12 });
const DAY = 86_400_000;
const T0 = Date.parse("2026-01-05T09:00:00Z");
const FACT = "My sister Zorblax lives in Utrecht and keeps bees.";
const TOOLS = ["context", "explain", "forget", "recall", "remember", "threads"];

const GARDEN = [
  FACT,
  "The tomatoes need water every second day.",
  "The roses by the fence have black spots.",
  "I planted three rows of carrots near the shed.",
  "The compost heap should be turned every week.",
  "Slugs ate half of the lettuce last night.",
  "The apple tree was pruned in late winter.",
  "We put a new bird feeder by the kitchen window.",
  "The hedge needs trimming before the summer party.",
  "Basil grows best on the sunny windowsill.",
  "The rain barrel overflowed during the storm.",
  "I ordered tulip bulbs for the autumn planting.",
  "The lawn mower needs a new blade.",
];
const TRIP = [
  "Let's plan the Lisbon offsite for the sales team in March.",
  "We agreed the budget is 12000 euros for the whole offsite.",
  "The hotel near Alfama has twenty rooms free.",
  "Flights from Amsterdam leave at seven in the morning.",
  "Maria will book the dinner at the fish restaurant.",
  "The team wants a day trip to Sintra.",
  "Bring the projector for the quarterly review session.",
  "The offsite starts on a Tuesday and ends on Friday.",
  "Two people need vegetarian meals every evening.",
  "The tram pass covers all of central Lisbon.",
  "We should print the agenda before we fly.",
  "The return flight lands at nine in the evening.",
];

/** A thread's history: each line a user message, then the assistant's reply, one day per exchange. */
function history(lines, start, prefix) {
  return lines.flatMap((line, i) => [
    { role: "user", content: line, at: new Date(start + i * DAY).toISOString(), client_id: `${prefix}-${i}-u` },
    { role: "assistant", content: `Noted about that: ${line.toLowerCase()}`, at: new Date(start + i * DAY + 60_000).toISOString(), client_id: `${prefix}-${i}-a` },
  ]);
}

function env(extra = {}) {
  return { ...process.env, ENGRAM_CONFIG: CONFIG, ENGRAM_NAMESPACE: "alice", ENGRAM_MODEL: "", ENGRAM_MCP_TOKEN: "", ...extra };
}

async function stdioClient(dbPath, extra) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "--store", dbPath], env: env(extra), stderr: "pipe" });
  const client = new Client({ name: "engram-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/** Spawns `engram-mcp --http` on a free port; resolves once it listens, with its URL. */
function startHttp(args, extra) {
  const child = spawn(process.execPath, [CLI, "--http", "--port", "0", ...args], { env: env(extra), stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const exited = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  const listening = new Promise((resolve, reject) => {
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      const m = /listening on (http:\/\/\S+\/mcp)/.exec(stderr);
      if (m) resolve(m[1]);
    });
    exited.then((code) => reject(new Error(`engram-mcp exited ${code}: ${stderr}`)));
  });
  return { child, listening, exited, stderr: () => stderr };
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

/** The tool's structured result; fails the test on a tool error. */
async function data(client, name, args) {
  const r = await call(client, name, args);
  assert.ok(!r.isError, `${name} failed: ${r.content?.[0]?.text}`);
  return r.structuredContent;
}

function scratch(t) {
  const dir = mkdtempSync(join(tmpdir(), "engram-mcp-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "memory.db");
}

/** The whole scenario over one connected client (stdio or HTTP). */
async function scenario(client) {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), TOOLS);
  for (const tool of tools) assert.ok(tool.description.length > 80, `${tool.name} has a description a model can use`);
  const { resources } = await client.listResources();
  assert.deepEqual(resources.map((r) => r.uri), ["engram://facts"]);

  // 50 dated messages in two threads (26 + 24).
  const garden = history(GARDEN, T0, "g");
  const trip = history(TRIP, T0 + 2 * DAY, "t");
  assert.equal(garden.length + trip.length, 50);
  const g = await data(client, "remember", { thread: "garden", messages: garden });
  const tr = await data(client, "remember", { thread: "trip", messages: trip });
  assert.equal(g.messages.length + tr.messages.length, 50);
  const { threads } = await data(client, "threads", {});
  assert.deepEqual(
    threads.map((t) => [t.thread, t.messages, t.first_at]),
    [
      ["garden", 26, new Date(T0).toISOString()],
      ["trip", 24, new Date(T0 + 2 * DAY).toISOString()],
    ],
  );

  // Recall with a filter: the first thread's fact, dated and attributed.
  const found = await data(client, "recall", { query: "Where does Zorblax live?", thread: "garden", budget_tokens: 300 });
  const hit = found.items.find((i) => i.text.includes("Utrecht"));
  assert.ok(hit, `recall found the fact: ${JSON.stringify(found.items)}`);
  assert.deepEqual(hit.threads, ["garden"]);
  const said = Date.parse(hit.said_at);
  assert.ok(said >= T0 && said <= T0 + 60_000, `dated the day it was said (the first exchange), got ${hit.said_at}`);
  assert.ok(found.items.every((i) => i.threads.every((t) => t === "garden")), "the filter keeps other threads out");
  const other = await data(client, "recall", { query: "Where does Zorblax live?", thread: "trip" });
  assert.ok(!other.items.some((i) => i.text.includes("Utrecht")), "filtered to the other thread, the fact is not there");
  const dated = await data(client, "recall", { query: "Where does Zorblax live?", to: new Date(T0 - DAY).toISOString() });
  assert.deepEqual(dated.items, [], "nothing was said before the first day");

  // A fact the user stated, remembered as a fact: in the facts resource, explained.
  const noted = await data(client, "remember", {
    thread: "trip",
    facts: [{ subject: "Maria", predicate: "is allergic to", object: "shellfish", sentence: "Maria is allergic to shellfish." }],
  });
  assert.equal(noted.facts.length, 1);
  const factId = noted.facts[0];
  const resource = await client.readResource({ uri: "engram://facts" });
  assert.match(resource.contents[0].text, /Maria is allergic to shellfish\./);
  const { explanation } = await data(client, "explain", { fact: factId });
  assert.equal(explanation.fact, factId);
  assert.equal(explanation.sentence, "Maria is allergic to shellfish.");
  assert.equal(explanation.in_facts_block, true);

  // The context block: the facts block, then a recall block for the request.
  const ctx = await call(client, "context", { request: "Book dinner for Maria at the fish restaurant", thread: "trip" });
  assert.ok(!ctx.isError, ctx.content[0].text);
  const text = ctx.content[0].text;
  assert.ok(text.startsWith(ctx.structuredContent.facts_block), "the facts block comes first");
  assert.match(ctx.structuredContent.facts_block, /Maria is allergic to shellfish\./);
  assert.match(ctx.structuredContent.recall_block, /^Recalled from long-term memory for the next message/);
  assert.match(ctx.structuredContent.recall_block, /fish restaurant/);
  assert.ok(text.endsWith(ctx.structuredContent.recall_block));

  // engram's errors: tool errors carrying its code, nothing written.
  const before = (await data(client, "threads", {})).threads;
  const future = await call(client, "remember", { thread: "garden", messages: [{ role: "user", content: "From the future.", at: "2999-01-01T00:00:00Z" }] });
  assert.equal(future.isError, true);
  assert.match(future.content[0].text, /^invalid-input: /);
  assert.equal(future.structuredContent.error.code, "invalid-input");
  const missing = await call(client, "explain", { fact: 99_999 });
  assert.equal(missing.isError, true);
  assert.match(missing.content[0].text, /^invalid-input: .*99999/);
  const two = await call(client, "forget", { fact: factId, thread: "trip" });
  assert.equal(two.isError, true);
  assert.match(two.content[0].text, /^invalid-input: forget takes exactly one/);
  const badDate = await call(client, "recall", { query: "bees", from: "last tuesday" });
  assert.equal(badDate.isError, true);
  assert.match(badDate.content[0].text, /^invalid-input: from: not a date/);
  assert.deepEqual((await data(client, "threads", {})).threads, before, "a rejected call wrote nothing");
  assert.match((await client.readResource({ uri: "engram://facts" })).contents[0].text, /shellfish/);

  // Messages stored, then facts refused: the error says what was written.
  const late = new Date(T0 + 30 * DAY).toISOString();
  const half = await call(client, "remember", {
    thread: "garden",
    messages: [{ role: "user", content: "The pond pump was replaced.", at: late, client_id: "late-1" }],
    facts: [{ subject: "", predicate: "is", object: "new", sentence: "" }],
  });
  assert.equal(half.isError, true);
  assert.match(half.content[0].text, /^invalid-input: .*\(the 1 message\(s\) were stored, the facts were not\)$/s);
  assert.equal(half.structuredContent.done.messages.length, 1);
  const again = await data(client, "remember", { thread: "garden", messages: [{ role: "user", content: "The pond pump was replaced.", at: late, client_id: "late-1" }] });
  assert.deepEqual([again.messages.length, again.duplicates.length], [0, 1], "a retry with the client id stores nothing twice");

  // Forget: the message is erased for good, recall no longer finds it.
  const forgotten = await data(client, "forget", { message: g.messages[0] });
  assert.ok(forgotten.erased.messages.includes(g.messages[0]));
  const after = await data(client, "recall", { query: "Where does Zorblax live? Utrecht bees", thread: "garden" });
  assert.ok(!after.items.some((i) => i.text.includes("Utrecht")), `erased: ${JSON.stringify(after.items)}`);
}

test("over stdio: tools, 50 dated messages in two threads, filtered recall, context, explain, forget, errors", async (t) => {
  const client = await stdioClient(scratch(t));
  t.after(() => client.close());
  await scenario(client);
});

test("over Streamable HTTP with a bearer token: the same, and a wrong or missing token is refused", async (t) => {
  const db = scratch(t);
  const server = startHttp(["--store", db], { ENGRAM_MCP_TOKEN: "s3cret-token" });
  t.after(() => server.child.kill("SIGKILL"));
  const url = new URL(await server.listening);
  assert.equal(url.hostname, "127.0.0.1");

  for (const headers of [{ authorization: "Bearer wrong-token" }, {}]) {
    const refused = new Client({ name: "intruder", version: "1.0.0" });
    t.after(() => refused.close());
    await assert.rejects(refused.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } })), /401|unauthorized/i);
    const raw = await fetch(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    assert.equal(raw.status, 401);
    assert.match(raw.headers.get("www-authenticate") ?? "", /^Bearer/);
  }

  // The right token from a page of another origin (DNS rebinding): refused by its Host.
  const rebound = await new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: "/mcp", method: "POST", headers: { host: `evil.example:${url.port}`, authorization: "Bearer s3cret-token", "content-type": "application/json", accept: "application/json, text/event-stream" } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
  });
  assert.equal(rebound, 403);

  const client = new Client({ name: "engram-test", version: "1.0.0" });
  t.after(() => client.close());
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: "Bearer s3cret-token" } } }));
  await scenario(client);
});

test("off loopback the HTTP server will not start without a token", async (t) => {
  const server = startHttp(["--host", "0.0.0.0", "--store", ":memory:"]);
  t.after(() => server.child.kill("SIGKILL"));
  await assert.rejects(server.listening, /exited 2: .*not a loopback address: set ENGRAM_MCP_TOKEN/s);
  assert.equal(await server.exited, 2);
});

test("the model from the environment: an OpenAI-compatible endpoint gets engram's calls with its model and key", async (t) => {
  // A local endpoint: embeddings of 16 numbers from the text, chat answers
  // that are not JSON (engram degrades and goes on: the calls are what count).
  const seen = [];
  const endpoint = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      // Only the OpenAI endpoints: anything else (the adapter asks GET /props
      // for the server's slots) is a 404, as on most servers.
      if (req.method !== "POST") return res.writeHead(404).end();
      const json = JSON.parse(body);
      seen.push({ path: req.url, model: json.model, auth: req.headers.authorization });
      const reply = req.url.endsWith("/embeddings")
        ? { data: json.input.map((text, index) => ({ index, embedding: Array.from({ length: 16 }, (_, i) => Math.sin(text.length + i * (text.charCodeAt(i % text.length) || 1))) })) }
        : { choices: [{ message: { role: "assistant", content: "not json" } }] };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(reply));
    });
  });
  await new Promise((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  t.after(() => endpoint.close());
  const client = await stdioClient(scratch(t), {
    ENGRAM_MODEL: "test-chat",
    ENGRAM_EMBEDDING_MODEL: "test-embed",
    ENGRAM_MODEL_BASE_URL: `http://127.0.0.1:${endpoint.address().port}/v1`,
    ENGRAM_MODEL_API_KEY: "k-123",
  });
  t.after(() => client.close());
  const stored = await data(client, "remember", { thread: "garden", messages: history(GARDEN.slice(0, 4), T0, "m") });
  assert.equal(stored.messages.length, 8);
  const found = await data(client, "recall", { query: "Where does Zorblax live?" });
  assert.ok(found.items.some((i) => i.text.includes("Utrecht")), "recall works over the endpoint's embeddings");
  const paths = new Set(seen.map((s) => `${s.path} ${s.model} ${s.auth}`));
  assert.ok(paths.has("/v1/embeddings test-embed Bearer k-123"), [...paths].join("; "));
  assert.ok(paths.has("/v1/chat/completions test-chat Bearer k-123"), [...paths].join("; "));
});

/**
 * Two server processes on `where` (a SQLite file or a postgres:// URL),
 * namespace `namespace`: both load the same history (same client ids: a
 * retried import) and each its own chat, at the same time; then `open()`
 * (the store read directly) holds every message once.
 */
async function twoServers(t, where, namespace, open) {
  const a = await stdioClient(where, { ENGRAM_NAMESPACE: namespace });
  const b = await stdioClient(where, { ENGRAM_NAMESPACE: namespace });
  t.after(() => Promise.all([a.close(), b.close()]));
  const shared = history(GARDEN, T0, "g");
  const own = (who) => history(TRIP.slice(0, 5).map((l) => `${who}: ${l}`), T0 + DAY, who);
  const [ra, rb] = await Promise.all([
    data(a, "remember", { thread: "garden", messages: shared }),
    data(b, "remember", { thread: "garden", messages: shared }),
    data(a, "remember", { thread: "chat-a", messages: own("a") }),
    data(b, "remember", { thread: "chat-b", messages: own("b") }),
  ]);
  // Each server accounts for every shared message, as stored or as a
  // duplicate. Usually one stores them and the other skips them; when both
  // commit in the same millisecond their log entries are byte-identical (an
  // entry's id is a checksum of its position, time and events), so the one
  // that lost the head finds "its" entry there and both report the same ids
  // as stored. Either way the ids agree and the memory holds each once.
  for (const r of [ra, rb]) assert.equal(r.messages.length + r.duplicates.length, shared.length, "every shared message accounted for");
  const reported = new Set([...ra.messages, ...ra.duplicates, ...rb.messages, ...rb.duplicates]);
  assert.equal(reported.size, shared.length, "both servers name the same ids for the shared messages");
  await Promise.all([a.close(), b.close()]);

  const { store, close } = await open();
  const memory = await Memory.open({ namespace, store });
  try {
    const stored = await memory.messages();
    const ids = stored.map((m) => m.client_id).sort();
    const sharedIds = new Set(shared.map((m) => m.client_id));
    assert.deepEqual(
      stored.filter((m) => sharedIds.has(m.client_id)).map((m) => m.id).sort((x, y) => x - y),
      [...reported].sort((x, y) => x - y),
      "the ids the servers reported are the stored shared messages",
    );
    const expected = [...shared, ...own("a"), ...own("b")].map((m) => m.client_id).sort();
    assert.deepEqual(ids, expected, "every message once, none lost");
    assert.deepEqual(
      (await memory.threads()).map((x) => [x.thread, x.messages]),
      [
        ["chat-a", 10],
        ["chat-b", 10],
        ["garden", 26],
      ],
    );
  } finally {
    await memory.close();
    await close();
  }
}

test("two servers (two processes) on one SQLite file store every message once", async (t) => {
  const db = scratch(t);
  await twoServers(t, db, "alice", async () => {
    const store = sqliteStore(db);
    return { store, close: () => store.close() };
  });
});

// PostgreSQL (ENGRAM_PG_URL, as scripts/test-postgres starts it; skipped
// without it unless ENGRAM_REQUIRE_PG is set): --store postgres://...
const PG_URL = process.env.ENGRAM_PG_URL;
test("two servers on one PostgreSQL database (--store postgres://) store every message once", { skip: !PG_URL && !process.env.ENGRAM_REQUIRE_PG && "no ENGRAM_PG_URL" }, async (t) => {
  assert.ok(PG_URL, "ENGRAM_REQUIRE_PG is set but ENGRAM_PG_URL is not");
  const { postgresStore } = await import("engram/postgres");
  const pg = (await import("pg")).default;
  await twoServers(t, PG_URL, `mcp-${process.pid}-${Date.now()}`, async () => {
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    return { store: postgresStore(pool), close: () => pool.end() };
  });
});
