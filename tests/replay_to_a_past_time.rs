//! A memory can be replayed to any past time: the view as it was then.

use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::Clock;
use engram::Config;
use engram::Memory;
use engram::NewMessage;

#[test]
fn view_at_a_past_time_equals_the_view_seen_then() {
    block_on(async {
        let clock = ManualClock::at(1_772_445_600_000);
        let config = Config {
            ceiling_tokens: 120,
            min_episode_tokens: 1,
            ..Config::default()
        };
        let model = ScriptedModel::new();
        model.on(engram::Task::Segment, |_| {
            Some(r#"{"boundary": 0.9}"#.into())
        });
        let mut memory = Memory::open("past", MemoryStore::new(), model, clock.clone(), config)
            .await
            .unwrap();
        let mut seen = Vec::new();
        for i in 0..12 {
            clock.advance_minutes(5);
            let text = format!(
                "Message {i}: a few words about topic number {i}, enough to fill the view."
            );
            let m = if i % 2 == 0 {
                NewMessage::user(text)
            } else {
                NewMessage::assistant(text)
            };
            memory.add_message(m).await.unwrap();
            seen.push((clock.now_ms(), memory.view().await.unwrap()));
        }
        assert!(memory.stats().await.unwrap().fades > 0, "the run faded");
        for (at, view) in &seen {
            assert_eq!(&memory.view_at(*at).await.unwrap(), view);
        }
        assert!(memory.view_at(0).await.unwrap().items.is_empty());
    });
}
