// The memory's own cost with a real model (run by scripts/bench-llm): a
// LoCoMo development conversation through openAIModel against an
// OpenAI-compatible endpoint, speaker A as the user, speaker B as the
// assistant, each session at its own date. Per task: requests, prompt and
// answer tokens (the server's `usage`), latency p50/p95, steps valid on the
// first try, retried, degraded; facts written; the wall time of each user
// turn until its view is ready (addMessage, then render).
//
//   node bench/llm.mjs --url URL --model NAME [--key KEY] [--conversation conv-26]
//                      [--turns 24 | --all] [--json FILE]

import { readFileSync, writeFileSync } from "node:fs";
import { loadavg, cpus } from "node:os";
import { fileURLToPath } from "node:url";

import { Memory, memoryStore, offlineModel, openAIModel } from "../js/node.js";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const url = arg("url", process.env.ENGRAM_LLM_URL);
const model = arg("model", process.env.ENGRAM_LLM_MODEL ?? "gemma-3-270m");
const apiKey = arg("key", process.env.ENGRAM_LLM_KEY);
const convId = arg("conversation", "conv-26");
const all = process.argv.includes("--all");
const turns = all ? Infinity : Number(arg("turns", "24"));
const jsonOut = arg("json");
if (!url) throw new Error("bench-llm: give --url (or ENGRAM_LLM_URL)");

const data = JSON.parse(
  readFileSync(fileURLToPath(new URL("../../shared/data/locomo-dev/locomo-dev.json", import.meta.url)), "utf8"),
);
const sample = data.find((s) => s.sample_id === convId);
if (!sample) throw new Error(`bench-llm: no conversation ${convId} in locomo-dev`);
const conv = sample.conversation;

/** "1:56 pm on 8 May, 2023" -> ms (UTC). */
function sessionTime(text) {
  const m = /(\d+):(\d+)\s*(am|pm) on (\d+) (\w+),? (\d{4})/i.exec(text);
  if (!m) throw new Error(`bench-llm: unreadable date ${text}`);
  let h = Number(m[1]) % 12;
  if (m[3].toLowerCase() === "pm") h += 12;
  const month = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"].indexOf(m[5].slice(0, 3).toLowerCase());
  return Date.UTC(Number(m[6]), month, Number(m[4]), h, Number(m[2]));
}

const messages = [];
for (let n = 1; conv[`session_${n}`]; n++) {
  const start = sessionTime(conv[`session_${n}_date_time`]);
  conv[`session_${n}`].forEach((t, i) => {
    const text = t.blip_caption ? `${t.text} [shares a photo: ${t.blip_caption}]` : t.text;
    messages.push({ role: t.speaker === conv.speaker_a ? "user" : "assistant", content: text, at: start + i * 30_000 });
  });
}
const run = messages.slice(0, turns);

// Per request: the task, latency, usage, from a fetch that reads the answers.
const requests = [];
const pending = new Map(); // request content -> task
const chat = openAIModel({
  baseURL: url,
  apiKey,
  model,
  retries: 1,
  fetch: async (resource, init) => {
    const body = init?.body ? JSON.parse(init.body) : null;
    const t0 = performance.now();
    const res = await fetch(resource, init);
    if (!body?.messages) return res;
    const text = await res.text();
    let usage = {};
    try {
      usage = JSON.parse(text).usage ?? {};
    } catch {}
    requests.push({
      task: pending.get(body.messages[1].content) ?? "?",
      ms: performance.now() - t0,
      status: res.status,
      prompt: usage.prompt_tokens ?? 0,
      answer: usage.completion_tokens ?? 0,
      format: body.response_format?.type ?? "none",
    });
    return new Response(text, { status: res.status, headers: res.headers });
  },
});
let clock = run[0]?.at ?? Date.now();
const formats = [];
chat.on("format", (e) => formats.push(e));
const attempts = [];
const memory = await Memory.open({
  namespace: "bench-llm",
  model: {
    complete: (request, options) => {
      pending.set(request.content, request.task);
      attempts.push({ task: request.task, attempt: request.attempt });
      return chat.complete(request, options);
    },
    embed: offlineModel().embed,
  },
  store: memoryStore(),
  clock: { now: () => clock },
  deadlines: { model: 120_000 },
});
const degraded = [];
memory.on("degraded", (d) => degraded.push(d));

const userTurns = [];
const wallStart = performance.now();
for (const m of run) {
  clock = m.at;
  const t0 = performance.now();
  await memory.addMessage({ role: m.role, content: m.content });
  if (m.role === "user") {
    await memory.render("openai");
    userTurns.push(performance.now() - t0);
  }
}
const stats = await memory.stats();
const facts = (await memory.facts()).length;
const wall = (performance.now() - wallStart) / 1000;

const pct = (xs, p) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const tasks = [...new Set([...requests.map((r) => r.task), ...attempts.map((a) => a.task)])].sort();
const rows = tasks.map((task) => {
  const rs = requests.filter((r) => r.task === task);
  const as = attempts.filter((a) => a.task === task);
  const steps = as.filter((a) => a.attempt === 1).length;
  const retried = as.filter((a) => a.attempt === 2).length;
  const deg = degraded.filter((d) => d.task === task).length;
  return {
    task,
    steps,
    requests: rs.length,
    prompt_tokens: rs.reduce((a, r) => a + r.prompt, 0),
    answer_tokens: rs.reduce((a, r) => a + r.answer, 0),
    p50_ms: Math.round(pct(rs.map((r) => r.ms), 50)),
    p95_ms: Math.round(pct(rs.map((r) => r.ms), 95)),
    first_try_valid: steps - retried - degraded.filter((d) => d.task === task && d.attempts === 1).length,
    retried,
    degraded: deg,
    failed: stats.model.failed[task] ?? 0,
  };
});
const repaired = Object.values(stats.model.repairs ?? {}).reduce((a, b) => a + b, 0);
const users = userTurns.length;
const result = {
  date: new Date().toISOString(),
  load: loadavg().map((x) => x.toFixed(2)).join(" "),
  cpus: cpus().length,
  endpoint: { url, model },
  conversation: convId,
  messages: run.length,
  of: messages.length,
  user_turns: users,
  wall_s: Number(wall.toFixed(1)),
  facts,
  repaired,
  truncated: stats.model.truncated,
  format_fallback: formats[0] ? `${formats[0].status} -> json_object` : "none",
  calls_per_user_turn: Number((attempts.length / Math.max(1, users)).toFixed(2)),
  prompt_tokens_per_user_turn: Math.round(rows.reduce((a, r) => a + r.prompt_tokens, 0) / Math.max(1, users)),
  user_turn_ms: { p50: Math.round(pct(userTurns, 50)), p95: Math.round(pct(userTurns, 95)), max: Math.round(Math.max(0, ...userTurns)) },
  tasks: rows,
};

const line = (cells) => `| ${cells.join(" | ")} |`;
console.log(`bench-llm: ${result.date}, load ${result.load} on ${result.cpus} cores; ${model} at ${url}`);
console.log(`${convId}: ${run.length} of ${messages.length} messages (${users} user turns) in ${result.wall_s} s; json_schema fallback: ${result.format_fallback}\n`);
console.log(line(["task", "steps", "requests", "prompt tok", "answer tok", "p50 ms", "p95 ms", "first try valid", "retried", "degraded"]));
console.log(line(Array(10).fill("---")));
for (const r of rows) {
  console.log(line([r.task, r.steps, r.requests, r.prompt_tokens, r.answer_tokens, r.p50_ms, r.p95_ms, r.first_try_valid, r.retried, r.degraded]));
}
const sum = (k) => rows.reduce((a, r) => a + r[k], 0);
console.log(line(["all", sum("steps"), sum("requests"), sum("prompt_tokens"), sum("answer_tokens"), "", "", sum("first_try_valid"), sum("retried"), sum("degraded")]));
console.log(
  `\nrepaired answers ${repaired}, truncated ${result.truncated}; facts written ${facts}; ` +
    `model calls per user turn ${result.calls_per_user_turn}, memory prompt tokens per user turn ${result.prompt_tokens_per_user_turn}; ` +
    `wall time per user turn until its view is ready: p50 ${result.user_turn_ms.p50} ms, p95 ${result.user_turn_ms.p95} ms, max ${result.user_turn_ms.max} ms`,
);
// Why steps degraded: each distinct cause (its first 160 characters), counted.
const causes = {};
for (const d of degraded) {
  const key = `${d.task}: ${d.error.slice(0, 160)}`;
  causes[key] = (causes[key] ?? 0) + 1;
}
result.degraded_causes = causes;
for (const [cause, n] of Object.entries(causes).sort((a, b) => b[1] - a[1]).slice(0, 5)) console.log(`degraded x${n}: ${cause}`);
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(result, null, 2)}\n`);
memory.free();
