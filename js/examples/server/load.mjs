// The load bench of the chat backend (scripts/bench-server runs it): N
// simulated users, each taking T chat turns with think time between them,
// every turn sent to a random instance (no sticky routing), against
// addresses on this machine only. Bounded in count (USERS x TURNS) and in
// time (DEADLINE_S: users still talking then stop). At the end every user's
// memory must hold exactly the messages sent: each question and its reply
// once, in order.
//
//   URLS=http://127.0.0.1:A,http://127.0.0.1:B TOKEN=... node load.mjs
//
// Environment: USERS (200), TURNS (5), GAP_MS (think time, "500-3000"),
// DEADLINE_S (600), SEED (1), OUT (a file for the JSON result).

import { writeFileSync } from "node:fs";

const env = process.env;
const urls = (env.URLS ?? "").split(",").filter(Boolean);
for (const u of urls) {
  const host = new URL(u).hostname;
  if (!/^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(host)) throw new Error(`load.mjs drives local addresses only, not ${host}`);
}
if (urls.length === 0) throw new Error("set URLS to the instances (comma-separated)");
const USERS = Math.min(Number(env.USERS ?? 200), 2000);
const TURNS = Math.min(Number(env.TURNS ?? 5), 100);
const [gapLo, gapHi] = (env.GAP_MS ?? "500-3000").split("-").map(Number);
const DEADLINE = Date.now() + Number(env.DEADLINE_S ?? 600) * 1000;
const auth = { authorization: `Bearer ${env.TOKEN ?? ""}` };

// A seeded generator (mulberry32): the same run each time for one SEED.
let seed = Number(env.SEED ?? 1) >>> 0;
function random() {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (xs) => xs[Math.floor(random() * xs.length)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const names = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Fatima", "Gus", "Hana"];
const places = ["Lisbon", "Osaka", "Denver", "Nairobi", "Oslo", "Lima"];
const things = ["the garden", "my bike", "the launch plan", "our budget", "the kitchen", "my running"];
const lines = [
  () => `My sister ${pick(names)} is moving to ${pick(places)} next month.`,
  () => `I decided to spend the weekend fixing ${pick(things)}.`,
  () => `Remind me what I told you about ${pick(things)}?`,
  () => `We agreed the trip to ${pick(places)} starts on Friday.`,
  () => `I'm vegetarian, so keep restaurant ideas meat-free.`,
  () => `What do you remember about ${pick(names)}?`,
  () => `The meeting with ${pick(names)} about ${pick(things)} went well.`,
];

const quantile = (xs, q) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

async function call(method, url, body) {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...auth },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

const engramMs = [];
const latencyMs = [];
const storeMs = [];
const engineMs = [];
const roundTrips = [];
const sent = new Map(); // user -> turns sent (acknowledged)
let retries = 0;
let failures = 0;
let cutByDeadline = 0;

async function user(u) {
  const id = `load-${u}`;
  // Users arrive spread over the first gap.
  await sleep(random() * gapHi);
  let t = 0;
  for (; t < TURNS; t++) {
    if (Date.now() > DEADLINE) {
      cutByDeadline++;
      break;
    }
    const content = pick(lines)();
    let ok = false;
    for (let attempt = 0; attempt < 3 && !ok; attempt++) {
      const started = performance.now();
      try {
        const r = await call("POST", `${pick(urls)}/users/${id}/chat`, { content, clientId: `t${t}` });
        latencyMs.push(performance.now() - started);
        engramMs.push(r.timing.engram_ms);
        if (r.timing.store_ms !== undefined) {
          storeMs.push(r.timing.store_ms);
          engineMs.push(r.timing.engram_ms - r.timing.store_ms);
          roundTrips.push(r.timing.round_trips);
        }
        ok = true;
      } catch (e) {
        if (attempt === 2) {
          failures++;
          console.error(`user ${id} turn ${t}: ${e.message}`);
        } else retries++;
      }
    }
    if (!ok) break;
    sent.set(id, t + 1);
    await sleep(gapLo + random() * (gapHi - gapLo));
  }
}

const started = Date.now();
await Promise.all(Array.from({ length: USERS }, (_, u) => user(u)));
const seconds = (Date.now() - started) / 1000;

// Every memory exact: each question and its reply once, in order.
let exact = 0;
const wrong = [];
for (const [id, turns] of sent) {
  const messages = await call("GET", `${pick(urls)}/users/${id}/messages`);
  const got = messages.map((m) => m.client_id);
  const want = Array.from({ length: turns }, (_, t) => [`t${t}:q`, `t${t}:a`]).flat();
  if (JSON.stringify(got) === JSON.stringify(want)) exact++;
  else wrong.push({ id, got: got.length, want: want.length });
}
const stats = await Promise.all(urls.map((u) => call("GET", `${u}/stats`)));
const turns = engramMs.length;
const result = {
  users: USERS,
  turns_per_user: TURNS,
  instances: urls.length,
  turns,
  seconds: Number(seconds.toFixed(1)),
  turns_per_second: Number((turns / seconds).toFixed(1)),
  engram_ms: { p50: quantile(engramMs, 0.5), p95: quantile(engramMs, 0.95), p99: quantile(engramMs, 0.99) },
  // engram_ms split: the store's calls (pool wait and the database's round
  // trips) and the rest (the engine in wasm, the offline model, GC).
  store_ms: { p50: quantile(storeMs, 0.5), p95: quantile(storeMs, 0.95), p99: quantile(storeMs, 0.99) },
  engine_ms: { p50: quantile(engineMs, 0.5), p95: quantile(engineMs, 0.95), p99: quantile(engineMs, 0.99) },
  round_trips_per_turn: {
    mean: roundTrips.length ? roundTrips.reduce((a, b) => a + b, 0) / roundTrips.length : null,
    p50: quantile(roundTrips, 0.5),
    p95: quantile(roundTrips, 0.95),
    max: roundTrips.length ? Math.max(...roundTrips) : null,
  },
  latency_ms: { p50: quantile(latencyMs, 0.5), p95: quantile(latencyMs, 0.95), p99: quantile(latencyMs, 0.99) },
  conflicts_retried: stats.reduce((n, s) => n + s.conflicts, 0),
  commits: stats.reduce((n, s) => n + s.writes, 0),
  request_retries: retries,
  failed_turns: failures,
  users_cut_by_deadline: cutByDeadline,
  memories_exact: `${exact}/${sent.size}`,
  wrong: wrong.slice(0, 10),
};
for (const k of ["engram_ms", "store_ms", "engine_ms", "latency_ms"]) for (const q of ["p50", "p95", "p99"]) result[k][q] = Number(result[k][q]?.toFixed(1));
result.round_trips_per_turn.mean = Number(result.round_trips_per_turn.mean?.toFixed(2));
console.log(JSON.stringify(result, null, 2));
if (env.OUT) writeFileSync(env.OUT, JSON.stringify(result, null, 2) + "\n");
if (exact !== sent.size || failures > 0) process.exit(1);
