// Threads through the npm package (Node), on the offline model: three chats
// of one memory over simulated days (each its own view, the facts block
// shared, an idle chat put to sleep so what it taught reaches the others),
// a dated history in one addMessages call with progress, then maintain
// until nothing is pending; erase of a whole thread; bad input (a thread
// name over 128 characters, a future date, a date before the thread's last
// message, a thread that is not a string) rejects with InvalidInputError and
// writes nothing. Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";

import { InvalidInputError, Memory, memoryStore } from "engram";

const T0 = 1_764_000_000_000;
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const CONFIG = { ceiling_tokens: 400, target_episode_tokens: 40, max_episode_tokens: 80, min_episode_tokens: 12 };

async function open(store = memoryStore(), namespace = "alice") {
  const clock = { t: T0, now: () => clock.t };
  const memory = await Memory.open({ namespace, store, clock, config: CONFIG });
  return { memory, clock, store };
}

const CHATS = {
  trip: [
    "Zorblax Petrov bought a red locker in Utrecht last summer.",
    "Let's plan the Lisbon offsite for the sales team in March.",
    "We agreed the budget is 12000 euros for the whole offsite.",
  ],
  work: [
    "The quarterly report is due on Friday at noon.",
    "Carol prefers green tea over coffee every morning.",
  ],
  garden: ["The tomatoes need water every second day.", "The roses by the fence have black spots."],
};

async function say(memory, clock, thread, lines) {
  for (const [i, content] of lines.entries()) {
    clock.t += 2 * MIN;
    await memory.addMessage({ role: "user", content, thread });
    clock.t += MIN;
    await memory.addMessage({ role: "assistant", content: `Noted, point ${i}.`, thread });
  }
}

const texts = (view) => view.items.filter((i) => i.kind === "message").map((i) => i.text);
const factsText = (view) =>
  view.items
    .filter((i) => i.kind === "facts")
    .map((i) => i.text)
    .join("\n");
const withinCeiling = (view) => assert.ok(view.tokens <= view.ceiling || view.over_ceiling, JSON.stringify(view));

test("three threads over days: each has its own view, an idle one sleeps and its facts reach the others", async () => {
  const { memory, clock } = await open();
  await say(memory, clock, "trip", CHATS.trip);
  clock.t = T0 + 8 * HOUR;
  await say(memory, clock, "work", CHATS.work);
  clock.t = T0 + 16 * HOUR;
  await say(memory, clock, "garden", CHATS.garden);

  for (const thread of Object.keys(CHATS)) {
    const view = await memory.view({ thread });
    withinCeiling(view);
    const own = texts(view).join("\n");
    for (const [other, lines] of Object.entries(CHATS)) {
      for (const line of lines) assert.equal(own.includes(line), other === thread, `${line} in ${thread}'s view`);
    }
    assert.equal(await memory.viewTokens({ thread }), view.tokens);
  }
  // The old calls are the main thread's, which has nothing yet.
  assert.deepEqual(texts(await memory.view()), []);

  const listed = await memory.threads();
  assert.deepEqual(
    listed.map((t) => [t.thread, t.title, t.messages, t.user_messages]),
    [
      ["garden", CHATS.garden[0], 4, 2],
      ["trip", CHATS.trip[0], 6, 3],
      ["work", CHATS.work[0], 4, 2],
    ],
  );
  const messages = await memory.messages();
  assert.deepEqual(
    messages.filter((m) => m.thread === "trip").map((m) => m.id),
    [1, 2, 3, 4, 5, 6],
  );

  // The next day the trip chat has been idle for over 24 h (the others
  // not): maintain (in any thread) puts it to sleep, and what it said is
  // noted for every thread.
  clock.t = T0 + 25 * HOUR;
  assert.deepEqual((await memory.pending({ thread: "work" })).idle_threads, ["trip"]);
  const slept = [];
  memory.on("fade", (f) => f.thread && slept.push(f.thread));
  for (let i = 0; i < 10; i++) {
    await memory.maintain({ thread: "work" });
    if ((await memory.pending({ thread: "work" })).idle_threads === undefined) break;
  }
  assert.ok(slept.includes("trip"), `fade events: ${slept}`);
  const idle = (await memory.fades()).find((f) => f.reason === "idle" && f.thread === "trip");
  assert.ok(idle, "an idle fade of the trip thread");
  const trip = await memory.view({ thread: "trip" });
  assert.deepEqual(texts(trip), [], "the sleeping thread's episodes left its view");
  const work = await memory.view({ thread: "work" });
  withinCeiling(work);
  assert.match(factsText(work), /Zorblax/, "the trip's fact is in the work thread's facts block");
  assert.match(factsText(await memory.view()), /Zorblax/, "and in every thread's, main's included");
  // The work thread's own chat is still there, the trip's is not.
  assert.ok(texts(work).some((t) => t.includes("quarterly report")));
  assert.ok(!texts(work).some((t) => t.includes("Zorblax")));
  // Search is the whole memory's: the trip's words come back (as a passage:
  // its fact is in view already), dated when the trip said them.
  const hits = await memory.search("Zorblax locker Utrecht", { include_in_view: false });
  const hit = hits.find((h) => h.text.includes("Zorblax"));
  assert.ok(hit, JSON.stringify(hits));
  const said = messages.find((m) => m.content === CHATS.trip[0]);
  const tripInfo = listed.find((t) => t.thread === "trip");
  assert.ok(hit.said_at >= said.at && hit.said_at <= tripInfo.last_at, `said ${hit.said_at}`);
  assert.equal(said.thread, "trip");
  const rendered = await memory.render("openai", { thread: "work" });
  assert.ok(rendered.some((m) => typeof m.content === "string" && m.content.includes("quarterly report")));
  memory.free();
});

test("a dated history in one addMessages call reports progress, then maintain empties pending", async () => {
  const { memory, clock, store } = await open();
  clock.t = T0 + 400 * DAY;
  const threads = ["a", "b", "c"];
  const history = [];
  for (let i = 0; i < 2_400; i++) {
    const thread = threads[i % 3];
    history.push({
      role: i % 2 ? "assistant" : "user",
      content: i % 2 ? `Reply ${i}.` : `Message ${i} of ${thread}: ${i % 40 === 0 ? "NEWTOPIC " : ""}the weather on day ${Math.floor(i / 12)}.`,
      thread,
      at: i % 5 ? T0 + i * HOUR : new Date(T0 + i * HOUR),
      client_id: `h${i}`,
    });
  }
  const progress = [];
  const batch = await memory.addMessages(history, { onProgress: (p) => progress.push(p) });
  assert.deepEqual(progress, [
    { done: 1000, total: 2400 },
    { done: 2000, total: 2400 },
    { done: 2400, total: 2400 },
  ]);
  assert.equal(batch.messages.length, 2_400);
  assert.deepEqual(batch.duplicates, []);
  const stored = await memory.messages();
  assert.deepEqual(
    stored.map((m) => [m.thread, m.at]),
    history.map((m, i) => [m.thread, T0 + i * HOUR]),
  );
  // A retry of the whole list adds nothing.
  const again = await memory.addMessages(history.slice(0, 1_200));
  assert.deepEqual(again.messages, []);
  assert.deepEqual(again.duplicates, batch.messages.slice(0, 1_200));

  const size = store.data.size;
  assert.ok(size > 0);
  for (const thread of threads) {
    let rounds = 0;
    for (;;) {
      const pending = await memory.pending({ thread });
      const left = { ...pending, idle_threads: undefined };
      if (!left.unjudged.length && !left.undistilled.length && !left.leaving.length && !left.awaiting_note.length && !left.fade_ahead) break;
      assert.ok(++rounds < 50, `pending in ${thread} after ${rounds} rounds: ${JSON.stringify(pending)}`);
      await memory.maintain({ thread });
    }
    const view = await memory.view({ thread });
    withinCeiling(view);
    assert.ok(texts(view).every((t) => t.includes(`of ${thread}:`) || t.startsWith("Reply")));
  }
  // The threads idle for a year sleep in the end too.
  for (let i = 0; i < 10 && (await memory.pending({ thread: "a" })).idle_threads; i++) await memory.maintain({ thread: "a" });
  assert.equal((await memory.pending({ thread: "a" })).idle_threads, undefined);
  const episodes = await memory.episodes();
  assert.ok(episodes.length > 10);
  assert.deepEqual([...new Set(episodes.map((e) => e.thread))].sort(), threads);
  memory.free();
});

test("erase of a thread removes its text from every stored value; the others stay", async () => {
  const { memory, clock, store } = await open();
  await say(memory, clock, "trip", CHATS.trip);
  await say(memory, clock, "work", CHATS.work);
  const erased = await memory.erase({ thread: "trip" });
  assert.deepEqual(erased.messages, [1, 2, 3, 4, 5, 6]);
  for (const [key, value] of store.data) {
    assert.ok(!Buffer.from(value).includes(Buffer.from("Zorblax")), `${key} still holds the erased thread's text`);
  }
  assert.ok(!(await memory.export()).includes("Zorblax"));
  assert.deepEqual(texts(await memory.view({ thread: "trip" })), []);
  assert.ok(texts(await memory.view({ thread: "work" })).some((t) => t.includes("quarterly report")));
  const listed = await memory.threads();
  assert.equal(listed.find((t) => t.thread === "trip"), undefined, "a thread erased whole is not listed");
  // Erasing it again erases nothing more; an unknown thread is refused.
  assert.deepEqual((await memory.erase({ thread: "trip" })).messages.length >= 0, true);
  await assert.rejects(memory.erase({ thread: "nope" }), InvalidInputError);
  await assert.rejects(memory.erase({ thread: 3 }), InvalidInputError);
  memory.free();
});

test("bad threads and dates reject with InvalidInputError and write nothing", async () => {
  const { memory, clock, store } = await open();
  await say(memory, clock, "trip", CHATS.trip.slice(0, 1));
  const before = new Map(store.data);
  const last = clock.t;
  const bad = [
    { role: "user", content: "Too long a name.", thread: "x".repeat(129) },
    { role: "user", content: "No name.", thread: "" },
    { role: "user", content: "A control character.", thread: "a\nb" },
    { role: "user", content: "Not a string.", thread: 7 },
    { role: "user", content: "From the future.", thread: "trip", at: clock.t + HOUR },
    { role: "user", content: "Before the last one.", thread: "trip", at: last - DAY },
    { role: "user", content: "Not a date.", at: "yesterday" },
  ];
  for (const message of bad) {
    await assert.rejects(memory.addMessage(message), InvalidInputError, JSON.stringify(message));
    const ok = { role: "user", content: "Fine.", thread: "work", at: last - 1 };
    await assert.rejects(
      memory.addMessages([ok, message]),
      (e) => {
        assert.ok(e instanceof InvalidInputError, String(e));
        assert.deepEqual(e.added, { messages: [], duplicates: [] });
        return true;
      },
      JSON.stringify(message),
    );
  }
  // 128 characters are fine; a date before another thread's last message is too.
  assert.deepEqual(store.data, before, "nothing written");
  for (const options of [{ thread: "x".repeat(129) }, { thread: "" }, { thread: 5 }]) {
    await assert.rejects(memory.view(options), InvalidInputError);
    await assert.rejects(memory.pending(options), InvalidInputError);
    await assert.rejects(memory.maintain(options), InvalidInputError);
    await assert.rejects(memory.endTurn(options), InvalidInputError);
  }
  await assert.rejects(memory.addMessages("not a list"), InvalidInputError);
  await assert.rejects(memory.addMessages([], { onProgress: 3 }), InvalidInputError);
  assert.deepEqual(store.data, before, "nothing written");
  await memory.addMessage({ role: "user", content: "A long name is fine.", thread: "y".repeat(128) });
  await memory.addMessage({ role: "user", content: "Earlier than trip's last.", thread: "work", at: last - DAY });
  assert.equal((await memory.threads()).length, 3);
  memory.free();
});
