// openAIModel against a real model: the llama.cpp server with Gemma 3 270M
// that scripts/llm-server starts (ENGRAM_LLM_URL, ENGRAM_LLM_MODEL; run by
// scripts/test-js). 40 messages in two threads. The model is weak: what is
// asserted is the memory's guarantees, not the quality of its facts:
// nothing lost, every view within its ceiling and a valid chat, no call
// failing for a format reason, every degraded step reported with its cause.

import { test } from "node:test";
import assert from "node:assert/strict";

import { Memory, memoryStore, offlineModel, openAIModel } from "engram";

const baseURL = process.env.ENGRAM_LLM_URL;
const model = process.env.ENGRAM_LLM_MODEL ?? "gemma-3-270m";

/** Two threads of 10 exchanges each, interleaved: 40 messages. */
export function conversation() {
  const garden = [
    ["I want to plant tomatoes on my balcony this spring.", "Cherry tomatoes do well in pots; give them full sun."],
    ["The balcony faces south and gets sun all afternoon.", "South is ideal; water them in the morning."],
    ["I also want basil next to the tomatoes.", "Basil is a good companion; pinch the flowers off."],
    ["How big should the pots be?", "At least 20 litres for each tomato plant."],
    ["My neighbour Ana gave me compost from her garden.", "Mix it into the potting soil, about a third."],
    ["Last year aphids ate my peppers.", "Soapy water or ladybirds keep aphids down."],
    ["I will sow the seeds indoors on March 10.", "Start them on a warm windowsill."],
    ["Should I use a drip system while I travel?", "A simple drip kit on a timer works well."],
    ["I am allergic to wasps, so no sweet fruit near the door.", "Keep the tomatoes away from the door then."],
    ["Remind me what I planned for the basil.", "Basil next to the tomatoes, flowers pinched off."],
  ];
  const trip = [
    ["We are going to Lisbon in May with my sister Clara.", "May is a lovely time for Lisbon."],
    ["Clara is vegetarian and hates seafood.", "Lisbon has good vegetarian places in Príncipe Real."],
    ["We land on May 14 and leave on May 21.", "A week gives time for Sintra too."],
    ["Our budget is 1200 euros each, flights included.", "That is comfortable outside the peak weeks."],
    ["I booked a flat in Alfama for the whole week.", "Alfama is hilly; pack good shoes."],
    ["Clara wants to see the Gulbenkian museum.", "It is closed on Tuesdays; plan around that."],
    ["I prefer trams to taxis.", "Tram 28 crosses Alfama; go early to avoid queues."],
    ["We might take a day trip to Sintra on May 17.", "Take the train from Rossio station."],
    ["My passport expires in June 2027.", "It is valid for the trip."],
    ["What did I say about Clara's food?", "She is vegetarian and does not eat seafood."],
  ];
  const out = [];
  for (let i = 0; i < 10; i++) {
    for (const [thread, turns] of [["garden", garden], ["trip", trip]]) {
      out.push({ role: "user", content: turns[i][0], thread });
      out.push({ role: "assistant", content: turns[i][1], thread });
    }
  }
  return out;
}

const ROLES = new Set(["system", "user", "assistant", "tool"]);

/** A chat request's messages: known roles, text content, tool results after their calls. */
function assertValidChat(messages) {
  assert.ok(Array.isArray(messages) && messages.length > 0);
  const open = new Set();
  for (const m of messages) {
    assert.ok(ROLES.has(m.role), `role ${m.role}`);
    assert.equal(typeof m.content, "string");
    for (const call of m.tool_calls ?? []) open.add(call.id);
    if (m.role === "tool") assert.ok(open.has(m.tool_call_id), "a tool result follows its call");
  }
}

test("40 messages in two threads through openAIModel on a real local model", { skip: !baseURL && "ENGRAM_LLM_URL is not set (scripts/test-js starts scripts/llm-server)" }, async () => {
  const started = Date.now();
  const formats = [];
  const failures = [];
  const chat = openAIModel({ baseURL, model, retries: 1, onEvent: (e) => formats.push(e) });
  const watched = {
    complete: async (request, options) => {
      try {
        return await chat.complete(request, options);
      } catch (e) {
        failures.push({ task: request.task, status: e.status, message: e.message });
        throw e;
      }
    },
    embed: offlineModel().embed,
  };
  const ceiling = 700;
  const memory = await Memory.open({
    namespace: "real-model",
    model: watched,
    store: memoryStore(),
    // Split and the relevance walk by rule: a 270M model on 2 shared cores
    // takes 3-10 s a request; segment, note, trace, resolve and reconcile
    // still go to it.
    config: { ceiling_tokens: ceiling, target_episode_tokens: 120, max_episode_tokens: 300, model_attempts: 2, split_with_model: false, walk_with_model: false },
    deadlines: { model: 90_000 },
  });
  const degradedEvents = [];
  memory.on("degraded", (d) => degradedEvents.push(d));
  const messages = conversation();
  const degraded = [];
  for (const m of messages) {
    const added = await memory.addMessage(m);
    degraded.push(...added.degraded);
    const view = await memory.view({ thread: m.thread });
    assert.ok(view.tokens <= view.ceiling || view.over_ceiling, `view of ${m.thread} at ${view.tokens} tokens over ${view.ceiling}`);
    assert.equal(view.ceiling, ceiling);
    const rendered = await memory.render("openai", { thread: m.thread });
    assertValidChat(rendered);
    assert.equal(rendered.at(-1).content.includes(m.content), true, "the view ends with the message just added");
  }
  await memory.maintain();

  // Nothing lost: every message kept, in order, in its thread.
  const kept = await memory.messages();
  assert.equal(kept.length, messages.length);
  for (const thread of ["garden", "trip"]) {
    assert.deepEqual(
      kept.filter((k) => k.thread === thread).map((k) => k.content),
      messages.filter((m) => m.thread === thread).map((m) => m.content),
    );
  }

  // No call failed for a format reason (json_schema fell back at most once, announced).
  for (const f of failures) assert.doesNotMatch(f.message, /response_format|json_schema/i, `${f.task}: ${f.message}`);
  assert.ok(formats.length <= 1);
  for (const f of formats) assert.equal(f.to, "json_object");

  // Every degraded step is reported with its cause.
  const stats = await memory.stats();
  assert.ok(degradedEvents.length >= degraded.length);
  assert.equal(degradedEvents.length, stats.model.degraded_steps);
  for (const d of degradedEvents) {
    assert.ok(d.task && d.error && d.effect && d.attempts >= 1, JSON.stringify(d));
  }
  const calls = Object.values(stats.model.calls).reduce((a, b) => a + b, 0);
  assert.ok((stats.model.calls.segment ?? 0) > 0, "the model was asked");
  const facts = await memory.facts();
  console.log(
    `real model: ${messages.length} messages, ${calls} model requests, ${Object.values(stats.model.failed).reduce((a, b) => a + b, 0)} failed, ` +
      `${degradedEvents.length} degraded steps, ${facts.length} facts, format fallback: ${formats.length ? `${formats[0].status} -> json_object` : "none"}, ` +
      `${((Date.now() - started) / 1000).toFixed(0)} s`,
  );
  // What the weak model got wrong, by task (for the next person tuning prompts).
  const causes = new Map();
  for (const d of degradedEvents) {
    const key = `${d.task}: ${String(d.error).slice(0, 100)}`;
    causes.set(key, (causes.get(key) ?? 0) + 1);
  }
  for (const [cause, n] of causes) console.log(`real model: degraded ${n}x ${cause}`);
  memory.free();
});
