// The web demo (web-demo/) in a real headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core), served by its own server on
// 127.0.0.1 over the built package, with the offline model: the replay of the
// bundled sample, a week's jump, a question about an early topic, a reload,
// a second chat (a thread of the same memory) and the switch between them.
// Every check reads the page. Any console error or page error fails it. Its
// screenshot goes to target/demo/inspector.png and docs/demo-inspector.png
// (the README's). Run by scripts/test ("demo" step) after scripts/demo --build.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFile, mkdir } from "node:fs/promises";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { offlineModel } from "engram";

import { serve } from "../../web-demo/server.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SHOT = `${ROOT}target/demo/inspector.png`;
const README_SHOT = `${ROOT}docs/demo-inspector.png`;

let server;
let url;
let browser;

before(async () => {
  ({ server, url } = await serve({ port: 0 }));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  server?.closeAllConnections();
  server?.close();
});

/** Every console error and page error of `page`, and failed requests. */
function watch(page) {
  const problems = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return problems;
}

const idle = (page) => page.waitForSelector('body[data-busy="false"]', { timeout: 60_000 });
const count = (page, selector) => page.locator(selector).count();
const texts = (page, selector) => page.locator(selector).allInnerTexts();

/** What the page shows: the counts the acceptance checks read. */
async function shown(page) {
  return page.evaluate(() => {
    const all = (s) => [...document.querySelectorAll(s)];
    const states = {};
    for (const e of all('[data-testid="episode"]')) states[e.dataset.state] = (states[e.dataset.state] ?? 0) + 1;
    return {
      episodes: all('[data-testid="episode"]').map((e) => ({ id: e.dataset.id, state: e.dataset.state, activation: Number(e.dataset.activation), curveEnd: Number(e.dataset.curveEnd) })),
      states,
      tokens: Number(document.querySelector('[data-testid="view-tokens"]').textContent),
      ceiling: Number(document.querySelector('[data-testid="view-ceiling"]').textContent),
      facts: all('[data-testid="fact"]').map((f) => ({ id: f.dataset.id, kind: f.dataset.kind, retired: f.dataset.retired === "true", text: f.innerText })),
      messages: all('[data-testid="message"]').map((m) => m.dataset.id),
      view: all('[data-testid="view-item"]').map((i) => `${i.dataset.kind}:${i.innerText}`),
      clock: document.querySelector('[data-testid="clock"]').dateTime,
      recallItems: all('[data-testid="recall-item"]').length,
      degraded: Number(document.querySelector('[data-testid="degraded-count"]').dataset.count),
    };
  });
}

test("the demo replays the sample, fades a week later, recalls an early topic, survives a reload and keeps two chats apart", { timeout: 180_000 }, async () => {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  const page = await context.newPage();
  const problems = watch(page);

  // Load: the page opens an empty memory over IndexedDB with the offline model.
  const loadStart = Date.now();
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  const loadMs = Date.now() - loadStart;
  assert.match(await page.locator('[data-testid="model-badge"]').innerText(), /offline model/);
  assert.equal(await count(page, '[data-testid="message"]'), 0, "a fresh browser starts empty");

  // Replay the sample: the clock follows its messages.
  const replayStart = Date.now();
  await page.click('[data-testid="replay"]');
  await page.waitForSelector('[data-testid="replay"][data-state="done"]', { timeout: 90_000 });
  await idle(page);
  const replayMs = Date.now() - replayStart;
  const replayed = await shown(page);
  const inPageMs = await page.evaluate(() => document.body.dataset.replayMs);
  assert.equal(replayed.messages.length, 68, "every message of the sample is in the chat");
  assert.ok(replayed.episodes.length > 1, `more than one episode: ${replayed.episodes.length}`);
  assert.ok(replayed.tokens > 0 && replayed.tokens <= replayed.ceiling, `view ${replayed.tokens} <= ceiling ${replayed.ceiling}`);
  assert.equal(replayed.degraded, 0, "no step degraded during the replay");
  // The curves are computed from the traces as the core computes activation.
  for (const e of replayed.episodes) {
    assert.ok(Math.abs(e.curveEnd - e.activation) <= 1e-6 * Math.max(1, e.activation), `episode ${e.id}: curve ends at ${e.curveEnd}, engine says ${e.activation}`);
  }
  // The price contradiction retired the $39 price: struck through on the page.
  const retired = page.locator('[data-testid="fact"][data-retired="true"] s');
  assert.ok((await retired.count()) > 0, `a retired fact: ${JSON.stringify(replayed.facts.slice(0, 40))}`);
  const decoration = await retired.first().evaluate((el) => getComputedStyle(el).textDecorationLine);
  assert.match(decoration, /line-through/);
  // A milestone (agreed, decided, done, blocked, next) is marked.
  const milestones = await texts(page, '[data-testid="milestone"]');
  assert.ok(milestones.length > 0, "a milestone is shown");
  assert.ok(milestones.every((m) => /◆ (agreed|decided|done|blocked|next)/i.test(m)), milestones.join(", "));

  // A week later, a question about an early topic: the turn sleeps first,
  // and recall brings the landing page back.
  const clockBefore = Date.parse(replayed.clock);
  await page.click('[data-testid="jump-week"]');
  await idle(page);
  const clockAfter = Date.parse(await page.locator('[data-testid="clock"]').getAttribute("datetime"));
  assert.ok(clockAfter - clockBefore >= 7 * 24 * 3600_000, "the clock moved a week ahead");
  await page.fill('[data-testid="input"]', "What did we decide for the landing page, and who takes the hero photos?");
  await page.click('[data-testid="send"]');
  await page.waitForSelector('[data-testid="message"][data-role="assistant"].by-offline', { timeout: 30_000 });
  await idle(page);
  const later = await shown(page);
  assert.ok((later.states.sealed ?? 0) >= 1, `a sealed episode after the week: ${JSON.stringify(later.states)}`);
  assert.ok((later.states.forgotten ?? 0) >= 1, `a forgotten episode after the week: ${JSON.stringify(later.states)}`);
  assert.ok(later.recallItems > 0, "the question's recall block is not empty");
  const block = await page.locator('[data-testid="recall-block"]').innerText();
  assert.match(block, /landing page/i, "the block is the question's");
  assert.ok(later.tokens <= later.ceiling, `view ${later.tokens} <= ceiling ${later.ceiling}`);
  const reply = await page.locator('[data-testid="message"].by-offline .text').last().innerText();
  assert.match(reply, /offline responder/);
  assert.ok(later.view.some((v) => v.startsWith("recall:")), "the recall block is in the view");
  assert.equal(later.degraded, 0, "no step degraded");

  // The inspector as the README shows it.
  await mkdir(`${ROOT}target/demo`, { recursive: true });
  await page.screenshot({ path: SHOT });
  await copyFile(SHOT, README_SHOT);

  // Reload: IndexedDB keeps the memory, localStorage the clock offset.
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  const reloaded = await shown(page);
  assert.deepEqual(reloaded.messages, later.messages, "the same conversation");
  assert.deepEqual(
    reloaded.episodes.map(({ id, state }) => ({ id, state })),
    later.episodes.map(({ id, state }) => ({ id, state })),
    "the same episodes in the same states",
  );
  assert.deepEqual(reloaded.facts, later.facts, "the same facts");
  assert.deepEqual(reloaded.view, later.view, "the same view");
  assert.ok(Math.abs(Date.parse(reloaded.clock) - Date.parse(later.clock)) < 5 * 60_000, "the clock kept its offset");
  assert.equal(reloaded.recallItems, later.recallItems);

  // A second chat: a thread of the same memory. Its view starts with the
  // shared facts block and none of the first chat's messages; what it
  // recalls from the first chat says so.
  const factsBlock = (view) => view.filter((v) => v.startsWith("facts:"));
  assert.equal(factsBlock(reloaded.view).length, 1, "the first chat's view has a facts block");
  assert.equal(await count(page, '[data-testid="thread"]'), 1);
  await page.click('[data-testid="new-chat"]');
  await idle(page);
  assert.equal(await page.locator('[data-testid="thread"][data-current="true"]').getAttribute("data-thread"), "chat-2");
  const fresh = await shown(page);
  assert.deepEqual(fresh.messages, [], "a new chat shows none of the first chat's messages");
  assert.deepEqual(factsBlock(fresh.view), factsBlock(reloaded.view), "the facts block is shared");
  await page.fill('[data-testid="input"]', "Who takes the hero photos for the landing page?");
  await page.click('[data-testid="send"]');
  await page.waitForSelector('[data-testid="message"][data-role="assistant"].by-offline', { timeout: 30_000 });
  await idle(page);
  const second = await shown(page);
  assert.equal(second.messages.length, 2, "the second chat holds its own turn");
  assert.ok(second.messages.every((id) => !reloaded.messages.includes(id)));
  assert.ok(!second.view.some((v) => v.startsWith("message:") && reloaded.view.includes(v)), "no message of the first chat in the second's view");
  const sources = await page.locator('[data-testid="recall-source"][data-other="true"]').allInnerTexts();
  assert.ok(sources.length > 0, "the second chat recalls from the first");
  assert.ok(sources.every((t) => /from another chat: main chat · said/.test(t)), sources.join(" | "));
  // Switch back: the first chat's messages and view, not the second's.
  assert.equal(await count(page, '[data-testid="thread"]'), 2);
  await page.click('[data-testid="thread"][data-thread="main"]');
  await idle(page);
  const back = await shown(page);
  assert.deepEqual(back.messages, reloaded.messages, "the first chat again");
  assert.ok(!back.view.some((v) => v.includes("hero photos for the landing page?")), "the second chat's question is not in the first's view");
  assert.deepEqual(factsBlock(back.view), factsBlock(second.view), "one facts block for both chats");
  // And forth: the second chat is still there after a reload.
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]', { timeout: 30_000 });
  await page.click('[data-testid="thread"][data-thread="chat-2"]');
  await idle(page);
  assert.deepEqual((await shown(page)).messages, second.messages);

  assert.deepEqual(problems, [], "no console error, page error or failed request");
  console.log(`demo: page load ${loadMs} ms, replay ${replayMs} ms (68 messages; ${inPageMs} ms of it adding them to the memory)`);
  await context.close();
});

test("export, reset and import give back the same memory", { timeout: 60_000 }, async () => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  const problems = watch(page);
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  for (const text of ["Let's plan the garden: tomatoes on the balcony.", "Next topic: the budget is 200 euros."]) {
    const n = await count(page, '[data-testid="message"]');
    await page.fill('[data-testid="input"]', text);
    await page.click('[data-testid="send"]');
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="message"]').length === n, n + 2);
    await idle(page);
  }
  const before = await shown(page);
  assert.equal(before.messages.length, 4);

  const [download] = await Promise.all([page.waitForEvent("download"), page.click('[data-testid="export"]')]);
  const file = await download.path();
  await idle(page);

  // Reset asks first: declined, nothing changes; accepted, the memory is empty.
  page.once("dialog", (d) => d.dismiss());
  await page.click('[data-testid="reset"]');
  await idle(page);
  assert.equal(await count(page, '[data-testid="message"]'), 4, "a declined reset keeps the memory");
  page.once("dialog", (d) => d.accept());
  await page.click('[data-testid="reset"]');
  await idle(page);
  assert.equal(await count(page, '[data-testid="message"]'), 0, "reset empties the memory");

  await page.setInputFiles('[data-testid="import"]', file);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="message"]').length === 4);
  await idle(page);
  const after = await shown(page);
  assert.deepEqual(after.messages, before.messages);
  assert.deepEqual(after.view, before.view);
  assert.deepEqual(problems, []);
  await context.close();
});

/**
 * An OpenAI-compatible endpoint on 127.0.0.1 (CORS open, as a local server
 * for a web page must be): engram's tasks (requests with a json_schema
 * response format) are answered by the offline model, embeddings by its
 * embedder, and chat requests with a fixed reply naming how many messages
 * the view had.
 */
async function fakeEndpoint() {
  const seen = { tasks: 0, chats: [], embeddings: 0, props: 0, auth: new Set() };
  const offline = offlineModel();
  const server = createServer(async (req, res) => {
    const cors = { "access-control-allow-origin": "*", "access-control-allow-headers": "content-type, authorization", "access-control-allow-methods": "POST, GET" };
    if (req.method === "OPTIONS") return res.writeHead(204, cors).end();
    // openAIModel asks GET /props once for the server's slots, as llama.cpp's
    // server answers it (a server without it 404s: a console error the
    // page-errors check below would count).
    if (req.method === "GET" && req.url === "/props") {
      seen.props++;
      return res.writeHead(200, { ...cors, "content-type": "application/json" }).end(JSON.stringify({ total_slots: 2 }));
    }
    if (req.method !== "POST") return res.writeHead(404, cors).end();
    let body = "";
    for await (const chunk of req) body += chunk;
    const json = JSON.parse(body);
    seen.auth.add(req.headers.authorization ?? "none");
    const reply = (data) => res.writeHead(200, { ...cors, "content-type": "application/json" }).end(JSON.stringify(data));
    if (req.url === "/v1/embeddings") {
      seen.embeddings++;
      const vectors = await offline.embed(json.input);
      return reply({ data: vectors.map((v, index) => ({ index, embedding: Array.from(v) })) });
    }
    if (req.url === "/v1/chat/completions" && json.response_format?.json_schema) {
      seen.tasks++;
      const { name, schema } = json.response_format.json_schema;
      const request = { task: name.replace(/^engram_/, ""), system: json.messages[0].content, content: json.messages[1].content, schema: JSON.stringify(schema), attempt: 1 };
      return reply({ choices: [{ message: { role: "assistant", content: await offline.complete(request) } }] });
    }
    if (req.url === "/v1/chat/completions") {
      seen.chats.push(json);
      return reply({ choices: [{ message: { role: "assistant", content: `From the endpoint: I was given ${json.messages.length} messages.` } }] });
    }
    res.writeHead(404, cors).end();
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { server, seen, baseURL: `http://127.0.0.1:${server.address().port}/v1` };
}

test("with an endpoint in Settings, the chat and the memory's own tasks go to it", { timeout: 60_000 }, async () => {
  const endpoint = await fakeEndpoint();
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const problems = watch(page);
  try {
    await page.goto(url);
    await page.waitForSelector('body[data-ready="true"]');
    await page.click('[data-testid="settings-open"]');
    const form = page.locator('[data-testid="settings"] form');
    await form.locator('[name="baseURL"]').fill(endpoint.baseURL);
    await form.locator('[name="apiKey"]').fill("sk-test");
    await form.locator('[name="model"]').fill("fake-chat");
    await form.locator('[name="embeddingModel"]').fill("fake-embed");
    // A small ceiling, so episodes leave and their notes embed facts.
    await form.locator('[name="ceiling"]').fill("200");
    await page.click('[data-testid="settings-save"]');
    await page.waitForSelector('[data-testid="model-badge"][data-mode="endpoint"]');
    await idle(page);
    assert.match(await page.locator('[data-testid="model-badge"]').innerText(), /fake-chat/);

    const turns = [
      "Let's plan the garden. We will grow tomatoes and basil on the south balcony, in six large pots, starting in April.",
      "Next topic: the budget. The garden budget is 200 euros, and Mia buys the soil and the pots at the market on Saturday.",
      "Another topic: watering. Jonas waters the plants every morning at seven while we are away in August.",
      "What did we decide about the tomatoes on the balcony?",
    ];
    for (const [i, text] of turns.entries()) {
      await page.fill('[data-testid="input"]', text);
      await page.click('[data-testid="send"]');
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="message"].by-endpoint').length === n, i + 1);
      await idle(page);
    }
    const replies = await texts(page, '[data-testid="message"].by-endpoint .text');
    assert.equal(replies.length, turns.length);
    assert.match(replies[0], /^From the endpoint: I was given 1 messages\.$/);
    assert.equal(endpoint.seen.chats.length, turns.length, "each turn asked the endpoint once for the reply");
    assert.equal(endpoint.seen.chats[1].model, "fake-chat");
    assert.ok(endpoint.seen.tasks > 0, "the memory's tasks went to the endpoint");
    assert.ok(endpoint.seen.embeddings > 0, "embeddings went to the endpoint");
    assert.ok(endpoint.seen.props >= 1, "the server was asked for its slots");
    assert.deepEqual([...endpoint.seen.auth], ["Bearer sk-test"]);
    assert.equal(await count(page, '[data-testid="message"].by-offline'), 0, "no offline responder");
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
    endpoint.server.closeAllConnections();
    endpoint.server.close();
  }
});
