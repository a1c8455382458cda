//! Model faults: a share of the model's answers are errors, prose, JSON of
//! the wrong shape, NaN vectors or vectors of the wrong dimension. The
//! conversation goes on regardless: no call fails because of the model,
//! every message is kept, a failed boundary judgment makes no cut at its
//! message, an episode whose notes fail stays leaving (in view, warned) and
//! no fact or vector from a bad answer gets in; once the model answers
//! again, every leaving episode is sealed with its facts.

use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::view::ItemKind;
use engram::{EpisodeState, Error, Memory, NoteArgs, Role, Store};

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
