// The edge worker example (js/examples/worker) in the real workerd runtime
// from npm, with on-disk SQLite-backed Durable Object storage, over real
// HTTP on 127.0.0.1, through the example's authentication hook (a bearer
// token; config.capnp sets API_TOKEN): one memory per user, overlapping
// requests for one user both land, and every memory is whole again after
// workerd restarts; requests without the token get 401.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const WORKERD = join(require.resolve("@cloudflare/workerd-linux-64/package.json"), "..", "bin", "workerd");
const EXAMPLE = fileURLToPath(new URL("../examples/worker/", import.meta.url));

let storage;
let running = null;
let origin;

/** A port nobody listens on now. */
async function freePort() {
  const s = createServer();
  await new Promise((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** Starts the workerd binary itself (not through npx, which can leave it running) and waits until it answers. */
async function start() {
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  const child = spawn(
    WORKERD,
    ["serve", "config.capnp", "--directory-path", `do-storage=${storage}`, "--socket-addr", `http=127.0.0.1:${port}`],
    { cwd: EXAMPLE, stdio: ["ignore", "inherit", "inherit"] },
  );
  const exited = new Promise((resolve) => child.once("exit", resolve));
  running = { child, exited };
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`workerd exited with ${child.exitCode}`);
    try {
      await fetch(`${origin}/`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error("workerd did not start listening");
}

/** Stops the workerd this test started, by its process id. */
async function stop() {
  if (!running) return;
  const { child, exited } = running;
  running = null;
  if (child.exitCode === null) process.kill(child.pid, "SIGTERM");
  await exited;
}

before(async () => {
  storage = mkdtempSync(join(tmpdir(), "engram-worker-"));
  await start();
});

after(async () => {
  await stop();
  rmSync(storage, { recursive: true, force: true });
});

const AUTH = { authorization: "Bearer test-token" };

async function post(user, message) {
  const res = await fetch(`${origin}/users/${user}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", ...AUTH },
    body: JSON.stringify(message),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

async function get(user, what) {
  const res = await fetch(`${origin}/users/${user}/${what}`, { headers: AUTH });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

const views = {};

test("each user id has its own memory", async () => {
  const a1 = await post("alice", { role: "user", content: "I'm Alice; my flight to Lima leaves Monday." });
  assert.equal(a1.added.message, 1);
  await post("bob", { role: "user", content: "Bob here: the printer on floor 3 is jammed." });
  const a2 = await post("alice", { role: "assistant", content: "Noted, Alice: Lima on Monday." });
  assert.equal(a2.added.message, 2, "alice's count is hers alone");
  views.alice = await get("alice", "view");
  assert.deepEqual(views.alice, [
    { role: "user", content: "I'm Alice; my flight to Lima leaves Monday." },
    { role: "assistant", content: "Noted, Alice: Lima on Monday." },
  ]);
  views.bob = await get("bob", "view");
  assert.deepEqual(views.bob, [{ role: "user", content: "Bob here: the printer on floor 3 is jammed." }]);
});

test("/users/:id/threads/:thread/*: each chat of a user is a thread of one memory; the old routes are the main thread", async () => {
  const path = (thread, what) => `threads/${encodeURIComponent(thread)}/${what}`;
  await post("hana", { role: "user", content: "Hana here, in the main chat." });
  const postIn = async (thread, message) => {
    const res = await fetch(`${origin}/users/hana/${path(thread, "messages")}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...AUTH },
      body: JSON.stringify(message),
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    return body;
  };
  const trip = await postIn("trip-to-Lima", { role: "user", content: "Plan the trip to Lima in May." });
  assert.equal(trip.added.message, 2, "one memory: ids follow the main chat's");
  assert.deepEqual(trip.view, [{ role: "user", content: "Plan the trip to Lima in May." }]);
  await postIn("trip-to-Lima", { role: "assistant", content: "Lima in May: noted." });
  // The path's thread wins over one in the body.
  await postIn("work", { role: "user", content: "The report is due Friday.", thread: "trip-to-Lima" });
  assert.deepEqual(await get("hana", path("trip-to-Lima", "view")), [
    { role: "user", content: "Plan the trip to Lima in May." },
    { role: "assistant", content: "Lima in May: noted." },
  ]);
  assert.deepEqual(await get("hana", path("work", "view")), [{ role: "user", content: "The report is due Friday." }]);
  assert.deepEqual(await get("hana", "view"), [{ role: "user", content: "Hana here, in the main chat." }]);
  const threads = await get("hana", "threads");
  assert.deepEqual(
    threads.map((t) => [t.thread, t.messages]),
    [
      ["main", 1],
      ["trip-to-Lima", 2],
      ["work", 1],
    ],
  );
  const long = await fetch(`${origin}/users/hana/${path("x".repeat(129), "view")}`, { headers: AUTH });
  assert.equal(long.status, 400);
  assert.equal((await long.json()).code, "invalid-input");
  const bad = await fetch(`${origin}/users/hana/threads/%E0%A4%A/view`, { headers: AUTH });
  assert.equal(bad.status, 400);
  assert.equal((await fetch(`${origin}/users/hana/${path("work", "facts")}`, { headers: AUTH })).status, 404);
  const refused = await fetch(`${origin}/users/hana/${path("work", "view")}`);
  assert.equal(refused.status, 401);
});

test("a reply is answered before maintain runs; maintain runs after it, in waitUntil", async () => {
  await post("frank", { role: "user", content: "Frank here: the quarterly report is due Friday." });
  const reply = await post("frank", { role: "assistant", content: "Noted: the report is due Friday." });
  assert.equal(reply.added.message, 2);
  assert.equal(reply.added.maintained, null, "the response did not wait for maintain (maintain_after_reply: false)");
  // maintain() judges the reply after the response: poll until it has.
  let pending;
  for (let i = 0; i < 200; i++) {
    pending = (await get("frank", "stats")).pending;
    if (pending.unjudged.length === 0) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.deepEqual(pending, { unjudged: [], undistilled: [], leaving: [], awaiting_note: [], fade_ahead: false });
});

test("overlapping requests for one user both land, in the storage's order", async () => {
  const texts = ["First of two at once.", "Second of two at once.", "Third, also at once."];
  const results = await Promise.all(texts.map((content) => post("carol", { role: "user", content })));
  assert.deepEqual(results.map((r) => r.added.message).sort(), [1, 2, 3]);
  const view = await get("carol", "view");
  assert.deepEqual(view.map((m) => m.content).sort(), [...texts].sort());
  const stats = await get("carol", "stats");
  assert.equal(stats.messages, 3);
  views.carol = view;
});

test("a POST retried with its client_id is stored once, even when the retry overlaps the first", async () => {
  const message = { role: "user", content: "Gina here: book the room for Thursday.", client_id: "gina-1" };
  const [a, b] = await Promise.all([post("gina", message), post("gina", message)]);
  assert.deepEqual([a.added.message, b.added.message], [1, 1], "one message id");
  assert.deepEqual([a.added.duplicate, b.added.duplicate].sort(), [false, true], "the later one is the duplicate");
  const again = await post("gina", { ...message, content: "a retry whose text changed is still the same message" });
  assert.deepEqual([again.added.message, again.added.duplicate], [1, true]);
  const next = await post("gina", { role: "assistant", content: "Booked.", clientId: "gina-2" });
  assert.deepEqual([next.added.message, next.added.duplicate], [2, false]);
  assert.deepEqual(await get("gina", "view"), [
    { role: "user", content: "Gina here: book the room for Thursday." },
    { role: "assistant", content: "Booked." },
  ]);
  views.gina = await get("gina", "view");
});

test("a memory whose snapshot outgrows one storage value reads back whole", async () => {
  // CONFIG snapshots every 2 commits: two 48 000-character messages make a
  // snapshot longer than one durable value (64 KiB chunks), kept in chunks.
  const long = (word) => `${word} `.repeat(8000).trim();
  await post("dave", { role: "user", content: long("alpha") });
  await post("dave", { role: "assistant", content: long("bravo") });
  await post("dave", { role: "user", content: "Next topic: lunch." });
  views.dave = await get("dave", "view");
  assert.equal(views.dave.length, 3);
  assert.equal(views.dave[0].content.length, long("alpha").length);
});

test("after workerd restarts, every memory gives the same view", async () => {
  await stop();
  await start();
  for (const user of ["alice", "bob", "carol", "dave", "gina"]) {
    assert.deepEqual(await get(user, "view"), views[user], user);
  }
  const more = await post("alice", { role: "user", content: "Also book a taxi to the airport." });
  assert.equal(more.added.message, 3);
});

test("bad input is a 400 with the engine's code", async () => {
  const res = await fetch(`${origin}/users/erin/messages`, {
    method: "POST",
    headers: AUTH,
    body: JSON.stringify({ role: "robot", content: "x" }),
  });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).code, "invalid-input");
  assert.equal((await fetch(`${origin}/nowhere`)).status, 404);
});

test("a malformed JSON body is a 400, not a 500, and adds nothing", async () => {
  const res = await fetch(`${origin}/users/erin/messages`, { method: "POST", headers: AUTH, body: "{not json" });
  assert.equal(res.status, 400);
  assert.deepEqual(await res.json(), { error: "request body is not JSON", code: "invalid-input" });
  assert.deepEqual(await get("erin", "view"), []);
});

test("a request without the bearer token, or with a wrong one, gets 401 and changes nothing", async () => {
  const message = JSON.stringify({ role: "user", content: "Mallory was here." });
  for (const headers of [{}, { authorization: "Bearer wrong-token" }, { authorization: "test-token" }]) {
    const res = await fetch(`${origin}/users/alice/messages`, { method: "POST", headers, body: message });
    assert.equal(res.status, 401, JSON.stringify(headers));
    assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer/);
    assert.equal((await fetch(`${origin}/users/alice/view`, { headers })).status, 401);
  }
  assert.ok(!(await get("alice", "view")).some((m) => m.content.includes("Mallory")));
});

test("the auth hook fails closed: no API_TOKEN set is a 503 for every request", async () => {
  const { authorize } = await import("../examples/worker/worker.js");
  const request = (authorization) => new Request("http://x/users/alice/view", { headers: authorization ? { authorization } : {} });
  assert.equal((await authorize(request("Bearer anything"), {}, "alice")).status, 503);
  assert.equal((await authorize(request("Bearer "), { API_TOKEN: "" }, "alice")).status, 503);
  assert.equal((await authorize(request(), { API_TOKEN: "s3cret" }, "alice")).status, 401);
  assert.equal((await authorize(request("Bearer s3cre"), { API_TOKEN: "s3cret" }, "alice")).status, 401);
  assert.equal(await authorize(request("Bearer s3cret"), { API_TOKEN: "s3cret" }, "alice"), null);
});
