//! Model faults: a share of the model's answers are errors, prose, JSON of
//! the wrong shape, NaN vectors or vectors of the wrong dimension. The
//! conversation goes on regardless: no call fails because of the model,
//! every message is kept, a failed boundary judgment makes no cut at its
//! message, an episode whose notes fail stays leaving (in view, warned) and
//! no fact or vector from a bad answer gets in; once the model answers
//! again, every leaving episode is sealed with its facts.

use engram::testing::{block_on, new_message, ManualClock, MemoryStore, ScriptedModel};
use engram::text::words;
use engram::view::ItemKind;
use engram::{
    Config, EpisodeState, Error, FactKind, Memory, NewFact, NewMessage, NoteArgs, Role, Store,
    Task, TaskRequest, ToolCall,
};
use serde_json::json;

type Mem = Memory<MemoryStore, ScriptedModel, ManualClock>;

const NS: &str = "faulty-model";
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

fn open(store: &MemoryStore, model: ScriptedModel, clock: &ManualClock) -> Mem {
    block_on(Memory::open(
        NS,
        store.clone(),
        model,
        clock.clone(),
        config(),
    ))
    .expect("opens")
}

fn head(store: &MemoryStore) -> Option<String> {
    block_on(store.get(&format!("engram/{NS}/head"))).unwrap()
}

/// Whether a cut may go before message `i` (0-based) of `messages`: never
/// before the first, a tool output, or while a tool call waits for output.
fn cut_allowed(messages: &[engram::Message], i: usize) -> bool {
    if i == 0 || messages[i].role == Role::Tool {
        return false;
    }
    let mut pending: Vec<&str> = Vec::new();
    for m in &messages[..i] {
        pending.extend(m.tool_calls.iter().map(|c| c.id.as_str()));
        if let Some(id) = &m.tool_call_id {
            pending.retain(|p| p != id);
        }
    }
    pending.is_empty()
}

/// Checks, after each call, what must hold however the model behaves.
fn check_invariants(m: &mut Mem, before: &[engram::EpisodeInfo], at: usize) {
    let episodes = block_on(m.episodes()).unwrap();
    let view = block_on(m.view()).unwrap();
    for e in &episodes {
        let e = &e.episode;
        // A leaving episode stays leaving until its notes succeed: it never
        // skips to forgotten nor goes back. (Sealed, a later fade of the same
        // call may forget it: it went through sealed.)
        if let Some(old) = before.iter().find(|o| o.episode.id == e.id) {
            if old.episode.state == EpisodeState::Leaving {
                let through_sealed = e.history.iter().any(|c| c.state == EpisodeState::Sealed);
                assert!(
                    matches!(e.state, EpisodeState::Leaving | EpisodeState::Sealed)
                        || (e.state == EpisodeState::Forgotten && through_sealed),
                    "step {at}: leaving episode {} moved to {:?}",
                    e.id,
                    e.state
                );
            }
        }
        if e.state == EpisodeState::Leaving {
            // Still in view, and warned.
            for id in e.first..=e.last {
                assert!(
                    view.items.iter().any(|it| it.message == Some(id)),
                    "step {at}: message {id} of leaving episode {} is out of view",
                    e.id
                );
            }
            assert!(
                view.items
                    .iter()
                    .any(|it| it.kind == ItemKind::Warning && it.episode == Some(e.id)),
                "step {at}: leaving episode {} is not warned",
                e.id
            );
        }
        // Sealed only after its last failed note.
        if let Some(sealed) = e.history.iter().find(|c| c.state == EpisodeState::Sealed) {
            assert!(
                e.note_failures.iter().all(|f| f.at <= sealed.at),
                "step {at}: episode {} failed a note after it was sealed",
                e.id
            );
        }
    }
}

#[test]
fn model_faults_lose_nothing_and_leaving_episodes_seal_once_the_model_answers() {
    let steps = conversation(640, 11);
    let model = scripted_model(&[]);
    model.set_faults(0.3, 2024);
    let store = MemoryStore::new();
    let clock = ManualClock::at(START);
    let mut memory = open(&store, model.clone(), &clock);

    let mut before: Vec<engram::EpisodeInfo> = Vec::new();
    let mut leaving_seen = 0usize; // (episode, step) pairs observed leaving
    let mut host_notes = (0usize, 0usize); // (sealed, refused with Error::Model)
    let mut recovery = 0; // where the model recovers
    for (at, step) in steps.iter().enumerate() {
        // Faults for 500 messages at least, and until an episode is leaving.
        if at >= 500
            && before
                .iter()
                .any(|e| e.episode.state == EpisodeState::Leaving)
        {
            recovery = at;
            break;
        }
        assert!(
            at < steps.len() - 20,
            "no episode was leaving after {at} messages"
        );
        clock.advance(step.advance_ms);
        // The model never makes a call fail.
        let added = block_on(memory.add_message(step.message.clone()))
            .unwrap_or_else(|e| panic!("step {at}: add_message failed under model faults: {e}"));
        assert_eq!(added.message, at as u64 + 1);
        check_invariants(&mut memory, &before, at);
        before = block_on(memory.episodes()).unwrap();
        let leaving: Vec<_> = before
            .iter()
            .filter(|e| e.episode.state == EpisodeState::Leaving)
            .collect();
        leaving_seen += leaving.len();
        // Now and then the host's chat model notes a leaving episode itself:
        // under faults that call either seals it or fails with a model error
        // and writes nothing.
        if let Some(e) = leaving.first().filter(|_| at % 50 == 25) {
            let t = topic_of(
                &block_on(memory.messages()).unwrap()[e.episode.first as usize - 1].content,
            )
            .unwrap_or(0);
            let args = NoteArgs {
                episode: Some(e.episode.id),
                facts: topic_facts(t, e.episode.id),
            };
            let head_before = head(&store);
            match block_on(memory.note(args)) {
                Ok(n) => {
                    assert!(n.sealed);
                    host_notes.0 += 1;
                }
                Err(Error::Model(_)) => {
                    assert_eq!(head(&store), head_before, "a failed note wrote something");
                    host_notes.1 += 1;
                }
                Err(e) => panic!("host note: {e}"),
            }
            check_invariants(&mut memory, &before, at);
            before = block_on(memory.episodes()).unwrap();
        }
    }

    // Every message is kept, in order.
    let messages = block_on(memory.messages()).unwrap();
    let (faulty, healed) = steps.split_at(recovery);
    assert_eq!(messages.len(), faulty.len());
    for (m, s) in messages.iter().zip(faulty) {
        assert_eq!((m.role, &m.content), (s.message.role, &s.message.content));
    }
    // A failed boundary judgment made no cut at its message; a cut only
    // falls before a message with a judgment.
    let judged_failed: Vec<u64> = (0..messages.len())
        .filter(|&i| cut_allowed(&messages, i) && messages[i].boundary.is_none())
        .map(|i| messages[i].id)
        .collect();
    let episodes = block_on(memory.episodes()).unwrap();
    for e in episodes.iter().skip(1) {
        let first = &messages[e.episode.first as usize - 1];
        assert!(
            first.boundary.is_some(),
            "episode {} starts at message {} whose judgment failed",
            e.episode.id,
            first.id
        );
    }
    // Notes failed, episodes stayed leaving, and bad vectors were refused.
    let failures: Vec<String> = episodes
        .iter()
        .flat_map(|e| e.episode.note_failures.iter().map(|f| f.error.clone()))
        .collect();
    let stats = block_on(memory.stats()).unwrap();
    eprintln!(
        "{} faults injected, {} failed judgments, {} note failures, {leaving_seen} leaving sightings, host notes {host_notes:?}, {stats:?}",
        model.faults_seen(),
        judged_failed.len(),
        failures.len()
    );
    assert!(model.faults_seen() > 300, "{} faults", model.faults_seen());
    assert!(!judged_failed.is_empty(), "no boundary judgment failed");
    // Among them, topic changes: a judgment would have cut there.
    let missed_switches = judged_failed
        .iter()
        .filter(|&&id| {
            let (prev, this) = (&messages[id as usize - 2], &messages[id as usize - 1]);
            topic_of(&this.content).is_some() && topic_of(&prev.content) != topic_of(&this.content)
        })
        .count();
    eprintln!("{missed_switches} topic changes went unjudged");
    assert!(
        missed_switches > 0,
        "no failed judgment fell on a topic change"
    );
    assert!(failures.len() >= 10, "{} note failures", failures.len());
    assert!(
        leaving_seen > failures.len() / 2,
        "episodes did not stay leaving"
    );
    assert!(
        failures.iter().any(|f| f.contains("NaN")),
        "no NaN vector was met: {failures:?}"
    );
    assert!(
        failures.iter().any(|f| f.contains("dimension")),
        "no wrong dimension was met"
    );
    assert!(
        failures.iter().any(|f| f.contains("unavailable")),
        "no model outage was met"
    );
    assert!(host_notes.0 + host_notes.1 > 0);
    for f in block_on(memory.facts()).unwrap() {
        assert_eq!(f.embedding.len(), 64);
        assert!(f.embedding.iter().all(|x| x.is_finite()));
    }
    for n in block_on(memory.entities()).unwrap() {
        assert_eq!(n.embedding.len(), 64);
        assert!(n.embedding.iter().all(|x| x.is_finite()));
    }

    // The model answers again: the next calls seal every leaving episode.
    let was_leaving: Vec<u64> = episodes
        .iter()
        .filter(|e| e.episode.state == EpisodeState::Leaving)
        .map(|e| e.episode.id)
        .collect();
    let failed_then: Vec<u64> = episodes
        .iter()
        .filter(|e| !e.episode.note_failures.is_empty())
        .map(|e| e.episode.id)
        .collect();
    assert!(!was_leaving.is_empty());
    model.set_faults(0.0, 0);
    for (at, step) in healed.iter().take(12).enumerate() {
        clock.advance(step.advance_ms);
        block_on(memory.add_message(step.message.clone())).unwrap();
        check_invariants(&mut memory, &before, faulty.len() + at);
        before = block_on(memory.episodes()).unwrap();
        assert!(
            before
                .iter()
                .all(|e| e.episode.state != EpisodeState::Leaving),
            "an episode is still leaving {} calls after the model recovered",
            at + 1
        );
    }
    let stats = block_on(memory.stats()).unwrap();
    assert_eq!(stats.episodes[1], 0);
    assert_eq!(stats.messages, recovery + 12);
    eprintln!(
        "{} were leaving when the model recovered; {stats:?}",
        was_leaving.len()
    );
    // Every episode whose notes ever failed was sealed at last, with facts.
    for id in failed_then {
        let e = &before[id as usize - 1].episode;
        assert!(
            e.history.iter().any(|c| c.state == EpisodeState::Sealed),
            "episode {id} was never sealed"
        );
        assert!(
            !e.facts.is_empty(),
            "episode {id} was sealed without its facts"
        );
    }
    // What was committed reopens identically.
    let mut reopened = open(&store, scripted_model(&[]), &clock);
    assert_eq!(
        block_on(reopened.view()).unwrap(),
        block_on(memory.view()).unwrap()
    );
    assert_eq!(
        block_on(reopened.episodes()).unwrap(),
        block_on(memory.episodes()).unwrap()
    );
}
