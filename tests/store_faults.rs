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

use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::EpisodeState;
use engram::Error;
use engram::Memory;
use engram::NewMessage;
use engram::NoteArgs;
use engram::Store;

mod scripted_conversation;
use scripted_conversation::*;

const NS: &str = "faults";

// ---------------------------------------------------------------------------

/// The piano topic's notes always fail, so its episodes leave the view
/// without facts (deferred) until the host's chat model notes them through
/// `note`.
const STUBBORN: &[usize] = &[5];

#[derive(Debug, Clone)]
enum Call {
    Add(NewMessage),
    Note(NoteArgs),
}

/// Whether the call reads the head before it commits whatever the handle
/// last saw: a user message (its round asks the model) or a note.
fn reads_first(c: &Call) -> bool {
    match c {
        Call::Add(m) => m.role == engram::Role::User,
        Call::Note(_) => true,
    }
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Added(Box<engram::Added>),
    Noted(engram::NoteOutcome),
}

fn call(m: &mut Mem, c: &Call) -> engram::Result<Outcome> {
    block_on(async {
        match c {
            Call::Add(msg) => m
                .add_message(msg.clone())
                .await
                .map(|a| Outcome::Added(Box::new(a))),
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

fn head(store: &MemoryStore) -> Option<Vec<u8>> {
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
        // The model's health is what each handle saw of the model (the
        // failed handle asked again for calls it retried): not compared.
        let (mut got_stats, mut want_stats) =
            (got.stats().await.unwrap(), want.stats().await.unwrap());
        got_stats.model = Default::default();
        want_stats.model = Default::default();
        assert_eq!(got_stats, want_stats, "{what}: stats");
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
            // (A reply reads nothing before its commit on a handle whose last
            // read found nobody else writing: failed reads are a user
            // message's or a note's.)
            _ if i % 127 == 0 && reads_first(&c) => Some(Fault::Reads),
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
        // The host's chat model notes an episode whose note keeps failing
        // (it left the view without facts, retried or given up).
        let stuck = block_on(reference.episodes())
            .unwrap()
            .into_iter()
            // A forgotten one stays without facts (its passages are
            // recalled): only a sealed one can still be noted.
            .find(|e| {
                e.episode.deferred.is_some()
                    && e.episode.noted.is_none()
                    && e.episode.state == EpisodeState::Sealed
            });
        if let Some(e) = stuck {
            assert_eq!(e.episode.state, EpisodeState::Sealed);
            assert!(e.episode.facts.is_empty());
            let texts = block_on(reference.messages()).unwrap();
            let t = (e.episode.first..=e.episode.last)
                .find_map(|id| topic_of(&texts[id as usize - 1].content))
                .expect("a deferred episode has a topic");
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
                Outcome::Noted(n) => {
                    // Already sealed (without facts): the note adds them.
                    assert!(!n.sealed);
                    assert_eq!(n.episode, e.episode.id);
                    assert!(!n.added.is_empty() || !n.merged.is_empty());
                    let now = block_on(reference.episodes()).unwrap();
                    let noted = &now[e.episode.id as usize - 1].episode;
                    assert!(noted.noted.is_some() && !noted.awaits_note());
                }
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
    // Episodes were sealed and forgotten (fades ahead keep the view lean,
    // so by the end the sealed ones may all be forgotten: count the moves).
    let episodes = block_on(reference.episodes()).unwrap();
    let went = |state: EpisodeState| {
        episodes
            .iter()
            .filter(|e| e.episode.history.iter().any(|c| c.state == state))
            .count()
    };
    assert!(
        went(EpisodeState::Sealed) > 0 && stats.episodes[3] > 0,
        "episodes by state {:?}",
        stats.episodes
    );
    assert_eq!(
        went(EpisodeState::Sealed),
        stats.episodes[2] + stats.episodes[3],
        "every episode out of view went through sealed"
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
