//! Store faults: over a scripted 1,000-message conversation, a store write
//! fails at many different points. Every failed call returns
//! `Error::Store`, writes nothing, and leaves the memory exactly as it was
//! after the last call that succeeded (a fresh handle over the same store, and
//! the failed handle itself, see that state); once the store heals, the same
//! handle retries the call and the run ends exactly where a fault-free run
//! ends.
//!
//! The test runs two memories in lockstep over one clock and one script: a
//! reference over a store that never fails, and a faulty one. Before a call
//! that gets a fault, the faulty memory's store holds exactly what the
//! reference's does (checked byte for byte), so the reference is the state
//! "after the last successful call".

use std::collections::BTreeMap;

use engram::testing::{block_on, new_message, ManualClock, MemoryStore, ScriptedModel};
use engram::text::words;
use engram::{
    Config, EpisodeState, Error, FactKind, Memory, NewFact, NewMessage, NoteArgs, Store, Task,
    TaskRequest, ToolCall,
};
use serde_json::json;

type Mem = Memory<MemoryStore, ScriptedModel, ManualClock>;

const NS: &str = "faults";
const START: i64 = 1_764_000_000_000;

// ---------------------------------------------------------------------------
// The scripted conversation and model (same shape in model_faults.rs and
// conflict.rs; copied so each behaviour file stands alone).

/// Topic keyword and the entity the notes name for it.
const TOPICS: [(&str, &str); 6] = [
    ("lisbon", "Lisbon trip"),
    ("migration", "Postgres migration"),
    ("garden", "vegetable garden"),
    ("taxes", "Tax return"),
    ("birthday", "Maya's birthday party"),
    ("piano", "Piano lessons"),
];

/// The topic a text is about: the first topic keyword among its words.
fn topic_of(text: &str) -> Option<usize> {
    let w = words(text);
    TOPICS.iter().position(|(k, _)| w.iter().any(|x| x == k))
}

struct Step {
    advance_ms: i64,
    message: NewMessage,
}

/// A deterministic conversation of `len` messages: runs of 1 to 4 turns on
/// one topic, some turns calling a tool, mostly a minute apart, sometimes
/// 45 minutes, now and then a night of more than 24 hours (sleep).
fn conversation(len: usize, seed: u64) -> Vec<Step> {
    let mut rng = seed;
    let mut next = move |n: u64| {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (rng >> 33) % n
    };
    let mut out: Vec<Step> = Vec::new();
    let mut topic = 0usize;
    let mut n = 0u64;
    let mut runs = 0u64;
    let fillers = [
        "and please keep it short",
        "since the last plan changed a little, check the details again",
        "with the budget we agreed on earlier in mind",
        "because the deadline moved to next Friday and everybody is busy",
    ];
    while out.len() < len {
        topic = (topic + 1 + next(TOPICS.len() as u64 - 1) as usize) % TOPICS.len();
        let (k, _) = TOPICS[topic];
        runs += 1;
        let gap = match (runs % 37, next(8)) {
            (0, _) => 25 * 3_600_000,
            (_, 0) => 45 * 60_000,
            _ => 60_000,
        };
        for turn in 0..1 + next(4) {
            n += 1;
            let filler = fillers[next(fillers.len() as u64) as usize];
            let advance_ms = if turn == 0 { gap } else { 60_000 };
            out.push(Step {
                advance_ms,
                message: NewMessage::user(format!(
                    "Message {n} on the {k} topic: what next, {filler}?"
                )),
            });
            if next(4) == 0 {
                let id = format!("call-{n}");
                let args = json!({ "query": k }).to_string();
                let call = ToolCall {
                    id: id.clone(),
                    name: "search".into(),
                    arguments: args,
                };
                out.push(Step {
                    advance_ms: 20_000,
                    message: NewMessage::tool_calls("", vec![call]),
                });
                out.push(Step {
                    advance_ms: 5_000,
                    message: NewMessage::tool_result(
                        id,
                        format!("Search results for {k}: three notes found."),
                    ),
                });
            }
            out.push(Step {
                advance_ms: 30_000,
                message: NewMessage::assistant(format!(
                    "Reply {n} on the {k} topic: here is the next step, {filler}."
                )),
            });
        }
    }
    out.truncate(len);
    out
}

/// Section `heading` of a request: the lines after it up to a blank line.
fn section<'a>(content: &'a str, heading: &str) -> Vec<&'a str> {
    content
        .split_once(heading)
        .map(|(_, rest)| {
            rest.lines()
                .skip(1)
                .take_while(|l| !l.trim().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Numbered items (`3. text`) of a list, with the lines under each.
fn numbered(lines: &[&str]) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    for l in lines {
        let digits: String = l.chars().take_while(|c| c.is_ascii_digit()).collect();
        if !digits.is_empty() && l[digits.len()..].starts_with(". ") {
            items.push(l.to_string());
        } else if let Some(last) = items.last_mut() {
            last.push('\n');
            last.push_str(l);
        }
    }
    items
}

/// The facts a note writes for episode `id` about topic `t`: one restated
/// every time (it merges), one milestone that retires the previous one.
fn topic_facts(t: usize, id: u64) -> Vec<NewFact> {
    let name = TOPICS[t].1;
    vec![
        NewFact {
            subject: "Alice".into(),
            predicate: "works on".into(),
            object: name.into(),
            sentence: format!("Alice works on the {name}."),
            kind: FactKind::Fact,
        },
        NewFact {
            subject: name.into(),
            predicate: "is at stage".into(),
            object: format!("stage {id}"),
            sentence: format!("The {name} is at stage {id}."),
            kind: FactKind::Next,
        },
    ]
}

fn note_answer(req: &TaskRequest, stubborn: &[usize]) -> Option<String> {
    let id: u64 = req
        .content
        .strip_prefix("Episode ")?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    let mut counts = [0usize; TOPICS.len()];
    for l in req.content.lines().skip(1) {
        if let Some(t) = topic_of(l) {
            counts[t] += 1;
        }
    }
    let (t, &c) = counts
        .iter()
        .enumerate()
        .max_by_key(|(i, c)| (**c, usize::MAX - i))?;
    if c == 0 {
        return None;
    }
    if stubborn.contains(&t) {
        return Some("Sorry, I would rather not summarise that.".into());
    }
    Some(json!({ "facts": topic_facts(t, id) }).to_string())
}

/// The scripted model: a cut where the topic changes, facts per topic,
/// traces where an episode mentions a fact's topic, a newer stage
/// contradicting an older one. Notes of the `stubborn` topics always fail
/// (their episodes stay leaving until the host notes them).
fn scripted_model(stubborn: &'static [usize]) -> ScriptedModel {
    let model = ScriptedModel::new();
    model.on(Task::Segment, |req| {
        let current = section(&req.content, "Current episode");
        let before = current.last().and_then(|l| topic_of(l));
        let now = topic_of(new_message(req));
        let p = if now.is_some() && before.is_some() && now != before {
            0.9
        } else {
            0.1
        };
        Some(json!({ "boundary": p }).to_string())
    });
    model.on(Task::Note, move |req| note_answer(req, stubborn));
    model.on(Task::Trace, |req| {
        let facts = numbered(&section(&req.content, "Facts:"));
        let episodes = numbered(&section(&req.content, "Episodes:"));
        let answer: Vec<_> = facts
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let t = TOPICS.iter().position(|(_, name)| f.contains(name));
                let about: Vec<usize> = episodes
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| t.is_some() && e.lines().skip(1).any(|l| topic_of(l) == t))
                    .map(|(j, _)| j + 1)
                    .collect();
                json!({ "fact": i + 1, "episodes": about })
            })
            .collect();
        Some(json!({ "facts": answer }).to_string())
    });
    // Recall keeps at most two live facts on the topic of the latest message,
    // so recall blocks stay small beside the small ceiling.
    model.on(Task::Relevance, |req| {
        let recent = section(&req.content, "Recent conversation:");
        let t = recent.last().and_then(|l| topic_of(l));
        let keep: Vec<usize> = numbered(&section(&req.content, "Candidates:"))
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                t.is_some_and(|t| c.contains(TOPICS[t].1))
                    && c.contains("fact (")
                    && !c.contains("no longer true")
            })
            .map(|(i, _)| i + 1)
            .take(2)
            .collect();
        Some(json!({ "relevant": keep }).to_string())
    });
    model.on(Task::Reconcile, |req| {
        let new = req.content.lines().next()?.strip_prefix("New fact: ")?;
        let (subject, _) = new.split_once(" is at stage ")?;
        let held = numbered(&section(&req.content, "Held facts:"));
        let judgments: Vec<_> = held
            .iter()
            .enumerate()
            .filter(|(_, h)| {
                h.split_once(". ")
                    .is_some_and(|(_, s)| s.starts_with(&format!("{subject} is at stage ")))
            })
            .map(|(i, _)| json!({ "fact": i + 1, "relation": "contradicts" }))
            .collect();
        Some(json!({ "judgments": judgments }).to_string())
    });
    model
}

/// Small sizes so that episodes form every few messages and fades are
/// frequent; a snapshot every 16 commits so faults also hit snapshot writes.
fn config() -> Config {
    Config {
        ceiling_tokens: 480,
        target_episode_tokens: 90,
        max_episode_tokens: 220,
        min_episode_tokens: 8,
        trace_batch: 8,
        snapshot_every: 16,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------

/// The piano topic's notes always fail, so its episodes stay leaving until
/// the host's chat model notes them through `note`.
const STUBBORN: &[usize] = &[5];

#[derive(Debug, Clone)]
enum Call {
    Add(NewMessage),
    Note(NoteArgs),
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Added(engram::Added),
    Noted(engram::NoteOutcome),
}

fn call(m: &mut Mem, c: &Call) -> engram::Result<Outcome> {
    block_on(async {
        match c {
            Call::Add(msg) => m.add_message(msg.clone()).await.map(Outcome::Added),
            Call::Note(args) => m.note(args.clone()).await.map(Outcome::Noted),
        }
    })
}

fn open(store: &MemoryStore, clock: &ManualClock) -> Mem {
    block_on(Memory::open(
        NS,
        store.clone(),
        scripted_model(STUBBORN),
        clock.clone(),
        config(),
    ))
    .expect("opens")
}

fn head(store: &MemoryStore) -> Option<String> {
    block_on(store.get(&format!("engram/{NS}/head"))).unwrap()
}

/// Everything a host can read of a memory, compared piece by piece.
fn assert_same_state(got: &mut Mem, want: &mut Mem, what: &str) {
    block_on(async {
        assert_eq!(
            got.messages().await.unwrap(),
            want.messages().await.unwrap(),
            "{what}: messages"
        );
        assert_eq!(
            got.episodes().await.unwrap(),
            want.episodes().await.unwrap(),
            "{what}: episodes"
        );
        assert_eq!(
            got.facts().await.unwrap(),
            want.facts().await.unwrap(),
            "{what}: facts"
        );
        assert_eq!(
            got.entities().await.unwrap(),
            want.entities().await.unwrap(),
            "{what}: entities"
        );
        assert_eq!(
            got.traces().await.unwrap(),
            want.traces().await.unwrap(),
            "{what}: traces"
        );
        assert_eq!(
            got.stats().await.unwrap(),
            want.stats().await.unwrap(),
            "{what}: stats"
        );
        assert_eq!(
            got.view().await.unwrap(),
            want.view().await.unwrap(),
            "{what}: view"
        );
    });
}

/// How a fault is injected before a call.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// The call's write fails once.
    Write,
    /// The store is down for this many attempts of the call.
    Outage(u32),
    /// Reads fail (the call cannot even sync).
    Reads,
}

/// What kind of call a fault hit, by what the reference's call did.
#[derive(Debug, Default)]
struct Hits(BTreeMap<&'static str, usize>);

impl Hits {
    fn count(&mut self, kind: &'static str) {
        *self.0.entry(kind).or_default() += 1;
    }
}

#[test]
fn failed_writes_change_nothing_and_retries_end_where_a_fault_free_run_ends() {
    let steps = conversation(1_000, 7);
    let clock = ManualClock::at(START);
    let (ref_store, bad_store) = (MemoryStore::new(), MemoryStore::new());
    let mut reference = open(&ref_store, &clock);
    let mut faulty = open(&bad_store, &clock);

    let mut calls = 0u64; // calls made so far (adds and notes)
    let mut faults = 0usize;
    let mut failed_attempts = 0usize;
    let mut hits = Hits::default();
    let mut host_notes = 0usize;
    let mut notes = 0usize; // host notes seen by `run`

    let mut run = |c: Call,
                   sleeps: bool,
                   calls: &mut u64,
                   reference: &mut Mem,
                   faulty: &mut Mem,
                   hits: &mut Hits| {
        *calls += 1;
        let i = *calls;
        let seq = block_on(reference.stats()).unwrap().log_entries;
        let is_note = matches!(c, Call::Note(_));
        // Every call of the first 120 (cheap: the memory is small), then a
        // spread, plus some of each rarer kind of write: snapshot commits,
        // host notes, sleeps.
        let snapshot_fault = (seq + 1) % (4 * config().snapshot_every) == 0;
        let note_fault = is_note && {
            notes += 1;
            notes % 4 == 1
        };
        let fault = match () {
            _ if i % 131 == 0 => Some(Fault::Outage(1 + (i / 131 % 3) as u32)),
            _ if i % 127 == 0 => Some(Fault::Reads),
            _ if i <= 120 || i % 37 == 0 || snapshot_fault || note_fault || sleeps => {
                Some(Fault::Write)
            }
            _ => None,
        };
        if let Some(fault) = fault {
            faults += 1;
            let before = bad_store.dump();
            assert_eq!(
                before,
                ref_store.dump(),
                "call {i}: stores differ before the fault"
            );
            let attempts = match fault {
                Fault::Write => {
                    bad_store.fail_write(1);
                    1
                }
                Fault::Outage(n) => {
                    bad_store.fail_writes_after(0);
                    n
                }
                Fault::Reads => {
                    bad_store.fail_reads(true);
                    1
                }
            };
            for attempt in 1..=attempts {
                match call(faulty, &c) {
                    Err(Error::Store(_)) => failed_attempts += 1,
                    other => panic!("call {i} attempt {attempt} under {fault:?}: {other:?}"),
                }
                // Nothing of the failed call was written.
                assert_eq!(
                    bad_store.dump(),
                    before,
                    "call {i}: a failed call wrote something"
                );
            }
            bad_store.heal();
            // A fresh handle over the same store sees the state after the
            // last successful call, and so does the failed handle.
            let mut reopened = open(&bad_store, &clock);
            assert_same_state(
                &mut reopened,
                reference,
                &format!("reopened after the fault at call {i}"),
            );
            if faults % 5 == 0 {
                assert_same_state(faulty, reference, &format!("failed handle after call {i}"));
            }
            if faults % 30 == 0 {
                let (a, b) = (
                    block_on(reopened.export()).unwrap(),
                    block_on(reference.export()).unwrap(),
                );
                assert!(a == b, "call {i}: exports differ");
            }
        }
        let want = call(reference, &c).unwrap_or_else(|e| panic!("reference call {i}: {e}"));
        if let Some(fault) = fault {
            match &want {
                Outcome::Noted(_) => hits.count("host note"),
                Outcome::Added(a) => {
                    if a.slept {
                        hits.count("sleep");
                    }
                    if !a.formed.is_empty() {
                        hits.count("episode formed");
                    }
                    if a.fade.is_some() {
                        hits.count("fade");
                    }
                    if a.formed.is_empty() && a.fade.is_none() {
                        hits.count("message only");
                    }
                }
            }
            if (seq + 1) % config().snapshot_every == 0 {
                hits.count("snapshot");
            }
            hits.count(match fault {
                Fault::Write => "one failed write",
                Fault::Outage(_) => "outage",
                Fault::Reads => "failed reads",
            });
        }
        // The same handle, retried once the store is healed, does exactly
        // what the fault-free call did.
        let got = call(faulty, &c).unwrap_or_else(|e| panic!("retry of call {i}: {e}"));
        assert_eq!(
            got, want,
            "call {i}: retry differs from the fault-free call"
        );
        assert_eq!(
            head(&bad_store),
            head(&ref_store),
            "call {i}: log heads differ"
        );
        want
    };

    for step in &steps {
        clock.advance(step.advance_ms);
        let sleeps = step.advance_ms > 24 * 3_600_000;
        run(
            Call::Add(step.message.clone()),
            sleeps,
            &mut calls,
            &mut reference,
            &mut faulty,
            &mut hits,
        );
        // The host's chat model notes an episode whose notes keep failing.
        let stuck = block_on(reference.episodes())
            .unwrap()
            .into_iter()
            .find(|e| {
                e.episode.state == EpisodeState::Leaving && !e.episode.note_failures.is_empty()
            });
        if let Some(e) = stuck {
            let texts = block_on(reference.messages()).unwrap();
            let t = (e.episode.first..=e.episode.last)
                .find_map(|id| topic_of(&texts[id as usize - 1].content))
                .expect("a leaving episode has a topic");
            let args = NoteArgs {
                episode: Some(e.episode.id),
                facts: topic_facts(t, e.episode.id),
            };
            match run(
                Call::Note(args),
                false,
                &mut calls,
                &mut reference,
                &mut faulty,
                &mut hits,
            ) {
                Outcome::Noted(n) => assert!(n.sealed, "the host's note seals a leaving episode"),
                other => panic!("note returned {other:?}"),
            }
            host_notes += 1;
        }
    }

    // Nothing lost: every message, in order, once.
    let kept = block_on(faulty.messages()).unwrap();
    assert_eq!(kept.len(), steps.len());
    for (m, s) in kept.iter().zip(&steps) {
        assert_eq!(
            (m.role, &m.content, &m.tool_call_id),
            (s.message.role, &s.message.content, &s.message.tool_call_id)
        );
    }
    // Same final state as the fault-free run, byte for byte and reopened.
    assert_eq!(bad_store.dump(), ref_store.dump(), "final stores differ");
    let mut reopened = open(&bad_store, &clock);
    assert_same_state(&mut reopened, &mut reference, "final, reopened");
    assert_same_state(&mut faulty, &mut reference, "final, same handle");
    assert_eq!(
        block_on(reopened.export()).unwrap(),
        block_on(reference.export()).unwrap()
    );

    // The run exercised what it claims to: many faults, of every kind, on
    // every kind of call, in a conversation where episodes form, fade,
    // seal and are forgotten, and facts merge and retire.
    let stats = block_on(reference.stats()).unwrap();
    eprintln!(
        "{calls} calls, {faults} faults, {failed_attempts} failed attempts, {host_notes} host notes, hits {:?}, stats {stats:?}",
        hits.0
    );
    assert!(faults >= 180, "{faults} faults");
    for kind in [
        "message only",
        "episode formed",
        "fade",
        "sleep",
        "snapshot",
        "host note",
        "one failed write",
        "outage",
        "failed reads",
    ] {
        assert!(
            hits.0.get(kind).is_some_and(|&n| n > 0),
            "no fault hit a call of kind {kind:?}: {:?}",
            hits.0
        );
    }
    assert!(stats.fades >= 20, "{} fades", stats.fades);
    assert!(
        stats.episodes[2] > 0 && stats.episodes[3] > 0,
        "episodes by state {:?}",
        stats.episodes
    );
    assert!(stats.facts[1] > 0, "no fact was retired");
    assert!(
        block_on(reference.facts())
            .unwrap()
            .iter()
            .any(|f| !f.restated.is_empty()),
        "no fact was restated"
    );
    assert!(host_notes > 0);
}
