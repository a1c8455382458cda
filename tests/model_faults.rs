//! Model faults: a share of the model's answers are errors, prose, JSON of
//! the wrong shape, NaN vectors or vectors of the wrong dimension. The
//! conversation goes on regardless: no call fails because of the model,
//! every message is kept, a failed boundary judgment makes no cut at its
//! message, the view stays within the ceiling, an episode whose note fails
//! leaves the view without facts (deferred: its note is retried by later
//! calls, or given up) and never holds a fade up, a leaving episode (a
//! sleep's, until the reply) stays in view and warned, and no fact or vector
//! from a bad answer gets in; once the model answers again, every deferred
//! note still waiting is written.

use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::view::ItemKind;
use engram::EpisodeState;
use engram::Error;
use engram::Memory;
use engram::NoteArgs;
use engram::Role;
use engram::Store;

mod scripted_conversation;
use scripted_conversation::*;

const NS: &str = "faulty-model";

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

fn head(store: &MemoryStore) -> Option<Vec<u8>> {
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
/// `turn_over`: the call added a reply that ended the turn (its maintain ran).
fn check_invariants(m: &mut Mem, before: &[engram::EpisodeInfo], at: usize, turn_over: bool) {
    let episodes = block_on(m.episodes()).unwrap();
    let view = block_on(m.view()).unwrap();
    // The view is within the ceiling whenever the model reads it.
    assert!(
        view.tokens <= config().ceiling_tokens,
        "step {at}: view of {} tokens over the ceiling",
        view.tokens
    );
    for e in &episodes {
        let e = &e.episode;
        // States only move forward.
        for w in e.history.windows(2) {
            assert!(
                w[0].state < w[1].state,
                "step {at}: episode {} moved back",
                e.id
            );
        }
        if let Some(old) = before.iter().find(|o| o.episode.id == e.id) {
            assert!(
                old.episode.state <= e.state,
                "step {at}: episode {} moved back",
                e.id
            );
        }
        if e.state == EpisodeState::Leaving {
            // Still in view, and warned; only while a turn is open.
            assert!(
                !turn_over,
                "step {at}: episode {} leaving after the turn",
                e.id
            );
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
        // A failed note deferred its episode: sealed (or later forgotten)
        // without that note, at the time of its first failure; failures
        // after that are retries, none after the note was written or given
        // up.
        if let Some(first) = e.note_failures.first() {
            assert_eq!(
                e.deferred,
                Some(first.at),
                "step {at}: episode {} failed a note but was not deferred",
                e.id
            );
            assert!(
                e.history
                    .iter()
                    .any(|c| c.state == EpisodeState::Sealed && c.at == first.at),
                "step {at}: episode {} was not sealed when its note failed",
                e.id
            );
            let last = e.note_failures.last().unwrap().at;
            for end in [e.noted, e.abandoned].into_iter().flatten() {
                assert!(
                    last <= end,
                    "step {at}: episode {} retried after its note was settled",
                    e.id
                );
            }
        } else {
            assert_eq!(e.deferred, None, "step {at}: episode {}", e.id);
        }
        assert!(
            !(e.noted.is_some() && e.abandoned.is_some())
                || e.noted.unwrap() > e.abandoned.unwrap(),
            "step {at}: episode {} noted by the model after its note was given up",
            e.id
        );
    }
}

#[test]
fn model_faults_lose_nothing_and_deferred_notes_are_written_once_the_model_answers() {
    let steps = conversation(640, 11);
    let model = scripted_model(&[]);
    // A seed under which every kind of fault lands, a judgment fails at a
    // topic change, and a host note both succeeds and is refused.
    model.set_faults(0.3, 12);
    let store = MemoryStore::new();
    let clock = ManualClock::at(START);
    let mut memory = open(&store, model.clone(), &clock);

    let mut before: Vec<engram::EpisodeInfo> = Vec::new();
    let mut leaving_seen = 0usize; // (episode, step) pairs observed leaving
    let mut sleeps = 0usize;
    let mut host_notes = (0usize, 0usize); // (written, refused with Error::Model)
    let mut recovery = 0; // where the model recovers
    for (at, step) in steps.iter().enumerate() {
        // Faults for 500 messages at least, and until a deferred note waits
        // for its retry.
        if at >= 500 && before.iter().any(|e| e.episode.awaits_note()) {
            recovery = at;
            break;
        }
        assert!(
            at < steps.len() - 20,
            "no deferred note was waiting after {at} messages"
        );
        clock.advance(step.advance_ms);
        // The model never makes a call fail.
        let added = block_on(memory.add_message(step.message.clone()))
            .unwrap_or_else(|e| panic!("step {at}: add_message failed under model faults: {e}"));
        assert_eq!(added.message, at as u64 + 1);
        assert_eq!(added.maintain_error, None, "step {at}");
        let turn_over = added.maintained.is_some();
        check_invariants(&mut memory, &before, at, turn_over);
        before = block_on(memory.episodes()).unwrap();
        sleeps += usize::from(added.slept);
        let leaving: Vec<_> = before
            .iter()
            .filter(|e| e.episode.state == EpisodeState::Leaving)
            .collect();
        leaving_seen += leaving.len();
        // Now and then the host's chat model notes an episode still without
        // its facts (leaving, or deferred): under faults that call either
        // writes them or fails with a model error and writes nothing.
        let unnoted = leaving.first().copied().or_else(|| {
            before
                .iter()
                .find(|e| e.episode.awaits_note() && e.episode.state == EpisodeState::Sealed)
        });
        if let Some(e) = unnoted.filter(|_| at % 50 == 25) {
            let t = topic_of(
                &block_on(memory.messages()).unwrap()[e.episode.first as usize - 1].content,
            )
            .unwrap_or(0);
            let was_leaving = e.episode.state == EpisodeState::Leaving;
            let args = NoteArgs {
                episode: Some(e.episode.id),
                facts: topic_facts(t, e.episode.id),
            };
            let head_before = head(&store);
            match block_on(memory.note(args)) {
                Ok(n) => {
                    assert_eq!(n.sealed, was_leaving);
                    host_notes.0 += 1;
                }
                Err(Error::Model(_)) => {
                    assert_eq!(head(&store), head_before, "a failed note wrote something");
                    host_notes.1 += 1;
                }
                Err(e) => panic!("host note: {e}"),
            }
            check_invariants(&mut memory, &before, at, false);
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
    // Notes failed, their episodes left without facts, and bad vectors were
    // refused.
    let failures: Vec<String> = episodes
        .iter()
        .flat_map(|e| e.episode.note_failures.iter().map(|f| f.error.clone()))
        .collect();
    let deferred = episodes
        .iter()
        .filter(|e| e.episode.deferred.is_some())
        .count();
    let noted_late = episodes
        .iter()
        .filter(|e| e.episode.deferred.is_some() && e.episode.noted.is_some())
        .count();
    let abandoned = episodes
        .iter()
        .filter(|e| e.episode.abandoned.is_some())
        .count();
    let stats = block_on(memory.stats()).unwrap();
    eprintln!(
        "{} faults injected, {} failed judgments, {} note failures, {deferred} deferred, {noted_late} noted late, {abandoned} abandoned, {sleeps} sleeps, {leaving_seen} leaving sightings, host notes {host_notes:?}, {stats:?}",
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
    assert!(deferred >= 5, "{deferred} episodes left without facts");
    assert!(noted_late > 0, "no deferred note was written by a retry");
    assert!(sleeps > 0, "no sleep");
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

    // The model answers again: the next maintain writes every deferred
    // note still waiting.
    let waiting: Vec<u64> = episodes
        .iter()
        .filter(|e| e.episode.awaits_note())
        .map(|e| e.episode.id)
        .collect();
    assert!(!waiting.is_empty());
    model.set_faults(0.0, 0);
    let mut turns_over = 0;
    for (at, step) in healed.iter().take(12).enumerate() {
        clock.advance(step.advance_ms);
        let added = block_on(memory.add_message(step.message.clone())).unwrap();
        let turn_over = added.maintained.is_some();
        check_invariants(&mut memory, &before, faulty.len() + at, turn_over);
        before = block_on(memory.episodes()).unwrap();
        if turn_over {
            turns_over += 1;
            assert!(
                before.iter().all(|e| !e.episode.awaits_note()),
                "a deferred note still waits after a maintain with the model back"
            );
        }
    }
    assert!(turns_over > 0);
    let stats = block_on(memory.stats()).unwrap();
    assert_eq!(stats.episodes[1], 0);
    assert!(stats.pending.awaiting_note.is_empty());
    assert_eq!(stats.messages, recovery + 12);
    eprintln!(
        "{} notes were waiting when the model recovered; {stats:?}",
        waiting.len()
    );
    // Every note that was waiting was written at last, with facts.
    for id in waiting {
        let e = &before[id as usize - 1].episode;
        assert!(e.noted.is_some(), "episode {id} was never noted");
        assert!(!e.facts.is_empty(), "episode {id} was noted without facts");
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
