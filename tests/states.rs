//! Episode states: live -> leaving -> sealed -> forgotten, never backwards,
//! with SPEC's table (where the messages are, where the facts are), the
//! warning for a leaving episode, and nothing deleted when forgotten.

mod common;

use common::*;
use engram::view::ItemKind;
use engram::EpisodeState;
use engram::Error;
use engram::Task;

use EpisodeState::{Forgotten, Leaving, Live, Sealed};

const TOPICS: [&str; 10] = [
    "garden", "taxes", "bikes", "dinner", "car", "music", "novel", "piano", "roof", "boat",
];

/// Ceiling 400, one fact per topic noted when its episode leaves, judged
/// about the episodes that talk about its topic.
fn fx() -> Fx {
    let fx = Fx::new(config(400));
    standard_segment(&fx.model);
    traces_by(&fx.model, |fact, _, text| {
        let topic = fact.split_whitespace().nth(1).unwrap();
        text.contains(topic)
    });
    let rules = TOPICS
        .iter()
        .map(|t| {
            let f = fact(
                t,
                "was discussed on",
                "Monday",
                &format!("The {t} was discussed on Monday."),
            );
            (*t, vec![f])
        })
        .collect();
    notes_for(&fx.model, rules);
    fx
}

/// Runs turns until some episodes are forgotten and two sealed (fade 3),
/// two small turns, then a small user message a day later sleeps: the two
/// least activated live episodes leave (the sealed ones, noted later, are
/// more activated), and stay leaving (in view, warned, their notes not asked
/// yet) until the reply. Every state at once.
fn every_state() -> Fx {
    let mut fx = fx();
    for t in &TOPICS[..8] {
        fx.turn(t, 50, 50);
    }
    assert!(fx.states().contains(&Forgotten), "{:?}", fx.states());
    for t in &TOPICS[8..] {
        fx.turn(t, 10, 10);
    }
    fx.minutes(25 * 60);
    let added = fx.user(&sized(&format!("{NEW} kite"), 10));
    assert!(added.slept);
    assert_eq!(
        fx.states(),
        vec![
            Forgotten, Forgotten, Forgotten, Forgotten, Sealed, Sealed, Leaving, Leaving, Live,
            Live
        ]
    );
    let states = fx.states();
    for s in [Live, Leaving, Sealed, Forgotten] {
        assert!(states.contains(&s), "{s:?} missing from {states:?}");
    }
    fx
}

fn of(fx: &mut Fx, state: EpisodeState) -> Vec<u64> {
    fx.episodes()
        .iter()
        .filter(|e| e.episode.state == state)
        .map(|e| e.episode.id)
        .collect()
}

#[test]
fn states_only_move_forward_through_all_four() {
    let mut fx = every_state();
    let mut full_path = 0;
    for e in fx.episodes() {
        let path: Vec<EpisodeState> = e.episode.history.iter().map(|c| c.state).collect();
        assert_eq!(path[0], Live);
        for w in path.windows(2) {
            assert!(w[0] < w[1], "episode {} moved {path:?}", e.episode.id);
        }
        if path == [Live, Leaving, Sealed, Forgotten] {
            full_path += 1;
        }
        assert_eq!(*path.last().unwrap(), e.episode.state);
    }
    assert!(full_path >= 1);
}

#[test]
fn the_state_table_holds_messages_and_facts_where_spec_says() {
    let mut fx = every_state();
    let view = fx.view();
    let in_view = |id: u64| {
        view.items
            .iter()
            .any(|i| i.kind == ItemKind::Message && i.episode == Some(id))
    };
    let block: Vec<u64> = view
        .items
        .iter()
        .find(|i| i.kind == ItemKind::Facts)
        .map(|i| i.facts.clone())
        .unwrap_or_default();
    let facts = fx.facts();
    let facts_of = |id: u64| {
        facts
            .iter()
            .filter(|f| f.episode == id)
            .map(|f| f.id)
            .collect::<Vec<_>>()
    };
    let notes = fx.model.calls_of(Task::Note);
    let asked = |id: u64| {
        notes
            .iter()
            .any(|r| r.content.starts_with(&format!("Episode {id} (")))
    };

    for id in of(&mut fx, Live) {
        assert!(in_view(id), "live {id}: messages in view");
        assert!(facts_of(id).is_empty(), "live {id}: facts not written yet");
        assert!(!asked(id));
    }
    for id in of(&mut fx, Leaving) {
        assert!(in_view(id), "leaving {id}: messages in view");
        assert!(
            !asked(id),
            "leaving {id}: its note is written after the reply"
        );
        assert!(
            facts_of(id).is_empty(),
            "leaving {id}: facts still to be written"
        );
    }
    for id in of(&mut fx, Sealed) {
        assert!(!in_view(id), "sealed {id}: out of view");
        let fs = facts_of(id);
        assert_eq!(fs.len(), 1);
        assert!(
            fs.iter().all(|f| block.contains(f)),
            "sealed {id}: facts in the block"
        );
    }
    for id in of(&mut fx, Forgotten) {
        assert!(!in_view(id), "forgotten {id}: out of view");
        let fs = facts_of(id);
        assert_eq!(fs.len(), 1);
        assert!(
            fs.iter().all(|f| !block.contains(f)),
            "forgotten {id}: out of the block"
        );
    }

    // After the reply the leaving episodes' notes are asked (together) and
    // they are sealed, their facts in the block.
    let leaving = of(&mut fx, Leaving);
    fx.minutes(1);
    fx.assistant(&sized("kite", 20));
    let notes = fx.model.calls_of(Task::Note);
    let block: Vec<u64> = fx
        .view()
        .items
        .iter()
        .find(|i| i.kind == ItemKind::Facts)
        .map(|i| i.facts.clone())
        .unwrap_or_default();
    let facts = fx.facts();
    for id in leaving {
        assert_eq!(fx.episode(id).episode.state, Sealed);
        assert!(notes
            .iter()
            .any(|r| r.content.starts_with(&format!("Episode {id} ("))));
        let fs: Vec<u64> = facts
            .iter()
            .filter(|f| f.episode == id)
            .map(|f| f.id)
            .collect();
        assert_eq!(fs.len(), 1);
        assert!(fs.iter().all(|f| block.contains(f)), "sealed {id}");
    }
}

#[test]
fn a_leaving_episode_is_warned_in_the_view() {
    let mut fx = every_state();
    let leaving = of(&mut fx, Leaving);
    assert_eq!(leaving, vec![7, 8]);
    let view = fx.view();
    let rendered = view.to_openai();
    for id in leaving {
        let e = fx.episode(id).episode;
        let pos = view
            .items
            .iter()
            .position(|i| i.kind == ItemKind::Warning && i.episode == Some(id))
            .expect("a warning");
        let w = &view.items[pos];
        assert_eq!(w.role, engram::Role::System);
        assert!(
            w.text.contains(&format!("Episode {id}")) && w.text.contains("note"),
            "{}",
            w.text
        );
        // Right after the episode's last message.
        assert_eq!(view.items[pos - 1].message, Some(e.last));
        // Rendered for a chat API as a system message.
        assert_eq!(rendered[pos]["role"], "system");
        assert_eq!(rendered[pos]["content"], w.text.as_str());
    }
    // One warning per leaving episode, none for the others.
    assert_eq!(
        view.items
            .iter()
            .filter(|i| i.kind == ItemKind::Warning)
            .count(),
        2
    );
}

#[test]
fn facts_written_for_a_leaving_episode_seal_it() {
    let mut fx = every_state();
    let id = of(&mut fx, Leaving)[0];
    let running = fx
        .explain_episode(id)
        .moves
        .last()
        .unwrap()
        .fade
        .clone()
        .unwrap();
    // The host's chat model answers the warning with the note tool.
    let f = fact(
        "boat",
        "needs",
        "paint",
        "The boat needs new paint before summer.",
    );
    let out = fx.note(note_args(Some(id), vec![f])).unwrap();
    assert!(out.sealed);
    assert_eq!(out.episode, id);
    let e = fx.explain_episode(id);
    assert_eq!(e.state, Sealed);
    assert_eq!(
        e.moves.last().unwrap().fade.as_ref().map(|f| f.id),
        Some(running.id)
    );
    // Only the other leaving episode is still warned; the fade runs on.
    let warned: Vec<Option<u64>> = fx
        .view()
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Warning)
        .map(|i| i.episode)
        .collect();
    let other = of(&mut fx, Leaving);
    assert_eq!(other.len(), 1);
    assert_eq!(warned, vec![Some(other[0])]);
    // After the reply the model notes the other one; the host's note
    // stands: the model is never asked about its episode.
    fx.minutes(1);
    fx.assistant(&sized("kite", 20));
    assert!(of(&mut fx, Leaving).is_empty());
    assert!(!fx.view().items.iter().any(|i| i.kind == ItemKind::Warning));
    let notes = fx.model.calls_of(Task::Note);
    assert!(!notes
        .iter()
        .any(|r| r.content.starts_with(&format!("Episode {id} ("))));
    assert!(notes
        .iter()
        .any(|r| r.content.starts_with(&format!("Episode {} (", other[0]))));
    let f = fx
        .explain_episode(other[0])
        .moves
        .last()
        .unwrap()
        .fade
        .clone();
    assert_eq!(
        f.map(|f| (f.id, f.finished_at.is_some())),
        Some((running.id, true))
    );
}

#[test]
fn nothing_is_deleted_when_an_episode_is_forgotten() {
    let mut fx = every_state();
    let forgotten = of(&mut fx, Forgotten);
    let msgs = fx.messages();
    let facts = fx.facts();
    for id in forgotten {
        let e = fx.episode(id).episode;
        // Its messages, whole.
        let mine: Vec<_> = msgs.iter().filter(|m| e.holds(m)).collect();
        assert_eq!(mine.len() as u64, e.last - e.first + 1);
        let topic = mine[0]
            .content
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_string();
        assert!(mine.iter().all(|m| m.content.contains(&topic)));
        // Its facts, live, explained as kept.
        let f = facts.iter().find(|f| f.episode == id).expect("its fact");
        assert!(f.is_live());
        assert_eq!(f.sentence, format!("The {topic} was discussed on Monday."));
        let x = fx.explain_fact(f.id);
        assert!(!x.in_facts_block);
        assert_eq!(x.episodes, vec![(id, Forgotten)]);
        assert!(x.summary.contains("forgotten"), "{}", x.summary);
        // And its traces.
        assert!(!fx.explain_episode(id).traces.is_empty());
    }
    assert_eq!(fx.stats().messages, msgs.len());
}

#[test]
fn a_forgotten_episode_is_never_brought_back() {
    let mut fx = every_state();
    let id = of(&mut fx, Forgotten)[0];
    let before = fx.export();
    let f = fact("garden", "needs", "water", "The garden needs water.");
    assert!(matches!(
        fx.note(note_args(Some(id), vec![f])),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(fx.export(), before);
    // Later fades never move it again.
    for t in ["alpha", "beta", "gamma", "delta"] {
        fx.turn(t, 50, 50);
    }
    assert_eq!(fx.episode(id).episode.state, Forgotten);
    assert_eq!(fx.episode(id).episode.history.len(), 4);
}
