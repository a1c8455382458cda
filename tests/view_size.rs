//! The view's size is kept as the state changes (`view::Sizes`), not
//! rendered again on every question: the kept figure must equal the size
//! counted from nothing and the size of the view built, after every event
//! of a conversation that sets and changes instructions, recalls, distills,
//! fades, notes and erases, and whatever `passage_tokens` asks it.

use engram::state::State;
use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::Config;
use engram::Memory;
use engram::NewMessage;
use engram::OfflineModel;
use engram::Target;

const PEOPLE: [&str; 4] = ["Ana", "Bruno", "Chloe", "Dmitri"];
const PLACES: [&str; 4] = ["Lisbon", "Porto", "Lyon", "Tallinn"];

/// A conversation long enough to fade a few times at a small ceiling, with
/// names that come back (so recall finds them and notes write facts about
/// them), instructions set then changed, and a message and a fact erased.
fn conversation() -> (String, Config) {
    let config = Config {
        ceiling_tokens: 900,
        ..Config::default()
    };
    let clock = ManualClock::at(1_772_445_600_000);
    let export = block_on(async {
        let mut memory = Memory::open(
            "sizes",
            MemoryStore::new(),
            OfflineModel::new(),
            clock.clone(),
            config.clone(),
        )
        .await
        .unwrap();
        memory
            .set_instructions("You are a travel planner. Keep answers short.")
            .await
            .unwrap();
        for i in 0..40 {
            clock.advance_minutes(3);
            let (who, place) = (PEOPLE[i % 4], PLACES[(i / 3) % 4]);
            let user = format!(
                "{who} is flying to {place} on day {i}. {who} prefers trains to buses \
                 and wants a hotel near the station in {place}."
            );
            memory.add_message(NewMessage::user(user)).await.unwrap();
            clock.advance_minutes(1);
            let reply = format!(
                "Noted: {who} goes to {place}. I will look for a hotel by the {place} \
                 station and a train for {who}."
            );
            memory
                .add_message(NewMessage::assistant(reply))
                .await
                .unwrap();
            if i == 20 {
                memory
                    .set_instructions("You are a travel planner. Answer in one line.")
                    .await
                    .unwrap();
            }
        }
        let stats = memory.stats().await.unwrap();
        assert!(stats.fades >= 2, "the conversation faded: {stats:?}");
        assert!(stats.facts[0] > 0, "notes wrote facts: {stats:?}");
        assert!(
            !memory.recalls().await.unwrap().is_empty(),
            "recall placed blocks"
        );
        memory.erase(Target::Message(3)).await.unwrap();
        let fact = memory.facts().await.unwrap()[0].id;
        memory.erase(Target::Fact(fact)).await.unwrap();
        memory.export().await.unwrap()
    });
    (export, config)
}

#[test]
fn the_kept_view_size_equals_the_view_after_every_event() {
    let (export, config) = conversation();
    let (_, log) = engram::store::export::parse_export(&export).unwrap();
    let model = OfflineModel::new();
    // The same state asked with two `passage_tokens` in turn: the block
    // counts kept for one are not used for the other.
    let other = Config {
        passage_tokens: 40,
        ..config.clone()
    };
    let mut state = State::default();
    let mut events = 0;
    for entry in &log {
        for event in &entry.events {
            state.apply(event).unwrap();
            events += 1;
            for c in [&config, &other, &config] {
                let kept = engram::view::tokens(&state, &model, c, "main");
                let scratch = engram::view::tokens_from_scratch(&state, &model, c, "main");
                let built = engram::view::build(&state, &model, c, "main").tokens;
                assert_eq!(
                    (kept, kept),
                    (scratch, built),
                    "entry {} event {events}: {event:?}",
                    entry.seq
                );
            }
        }
    }
    assert!(events > 100, "{events} events");
}

#[test]
fn a_cloned_state_keeps_no_counts() {
    let (export, config) = conversation();
    let (state, _) = engram::store::export::parse_export(&export).unwrap();
    let model = OfflineModel::new();
    let size = engram::view::tokens(&state, &model, &config, "main");
    let copy = state.clone();
    assert_eq!(copy, state, "kept counts do not make states differ");
    assert_eq!(engram::view::tokens(&copy, &model, &config, "main"), size);
}
