// The shared scenarios (tests/fixtures/scenario.json and
// scenario-threads.json, whose messages name their threads, written by
// tests/scenario_fixture.rs) replayed through the JS package: the recorded
// model transcript answers the calls in order, the clock reads each step's
// time, and the OpenAI rendering of the view after each step is collected.
// Runs in Node and in the browser (no Node APIs here).

/**
 * A functionModel that answers from a recorded transcript. A call that
 * differs from the recording (task, content or texts) throws and is listed
 * in `mismatches`, so a host that builds different prompts shows up.
 */
export function transcriptModel(functionModel, transcript) {
  let next = 0;
  const mismatches = [];
  const take = (what, matches) => {
    const i = next++;
    const r = transcript[i];
    if (!r || !matches(r)) {
      const m = `call ${i}: got ${what}, recording has ${r ? (r.call === "complete" ? r.task : "embed") : "nothing"}`;
      mismatches.push(m);
      throw new Error(m);
    }
    return r;
  };
  const model = functionModel(
    (req) => {
      const r = take(`${req.task} request`, (r) => r.call === "complete" && r.task === req.task && r.content === req.content);
      if ("Err" in r.answer) throw new Error(r.answer.Err);
      return r.answer.Ok;
    },
    {
      // Answered through a Promise, to exercise the awaiting path too.
      embed: async (texts) => {
        const r = take(`embed of ${texts.length} texts`, (r) => r.call === "embed" && JSON.stringify(r.texts) === JSON.stringify(texts));
        return r.vectors;
      },
    },
  );
  return { model, mismatches, position: () => next };
}

/** Replays the fixture into a memory over `store`; resolves to the views and the model's record. */
export async function replayScenario({ Memory, functionModel }, fixture, store) {
  let now = fixture.steps[0].at;
  const replay = transcriptModel(functionModel, fixture.transcript);
  const memory = await Memory.open({
    namespace: fixture.namespace,
    model: replay.model,
    store,
    clock: { now: () => now },
    config: fixture.config,
  });
  const views = [];
  const events = { formed: 0, fade: 0, recall: 0, distill: 0, task: 0 };
  for (const e of Object.keys(events)) memory.on(e, () => events[e]++);
  for (const step of fixture.steps) {
    if (step.op !== "add") throw new Error(`unknown step ${step.op}`);
    now = step.at;
    await memory.addMessage(step.message);
    // A step's view is its message's thread's ("main" when it names none).
    views.push(await memory.render("openai", { thread: step.message.thread }));
  }
  return { memory, views, mismatches: replay.mismatches, position: replay.position(), events };
}
