//! The long-chat quality benches' loaders (`examples/quality/datasets.rs`)
//! on tiny fixtures written here, not the real data: BEAM's batches get
//! their dates and evidence ids, LoCoMo-Plus's cue lands `time_gap` before
//! a trigger a week after the conversation. And their measures
//! (`examples/quality/chat.rs`): the plain window and budgets, and a replay
//! whose evidence reaches the view.

use serde_json::json;

#[path = "../examples/quality/datasets.rs"]
mod datasets;

#[path = "../examples/quality/mod.rs"]
#[allow(dead_code)]
mod quality;

#[path = "../examples/quality/chat.rs"]
mod chat;

#[path = "locomo_time/mod.rs"]
mod locomo_time;

use datasets::{beam_chat, beam_date, gap_days, locomo_turns, stitch};

const DAY: i64 = 86_400_000;

fn beam_fixture() -> (serde_json::Value, serde_json::Value) {
    let m = |id: u64, role: &str, text: &str| json!({"role": role, "id": id, "content": text});
    let mut first = m(
        0,
        "user",
        "I'm Ana and I water the plants on Sundays ->-> 1,1",
    );
    first["time_anchor"] = json!("March-01-2024");
    let mut third = m(
        4,
        "user",
        "Actually I moved the watering to Mondays ->-> 2,1",
    );
    third["time_anchor"] = json!("March-15-2024");
    let chat = json!([
        {"batch_number": 1, "turns": [
            [first, m(1, "assistant", "Noted, Ana.")],
            [m(2, "user", "Also, always answer in bullet points."), m(3, "assistant", "- Will do.")]
        ]},
        {"batch_number": 2, "turns": [[third, m(5, "assistant", "Mondays it is.")]]},
        {"batch_number": 3, "turns": [[m(6, "user", "What changed?"), m(7, "assistant", "The day.")]]}
    ]);
    let probing = json!({
        "knowledge_update": [{"question": "Which day do I water?",
            "source_chat_ids": {"original_info": [0], "updated_info": [4]}}],
        "instruction_following": [{"question": "List my tasks.", "source_chat_ids": [2]}],
        "multi_session_reasoning": [{"question": "How many days?",
            "source_chat_ids": [], "conversation_references": ["chat_id: 6", "Session 2: prose"]}],
        "summarization": [{"question": "Summarise.", "source_chat_ids": [],
            "conversation_references": ["the whole chat"]}],
        "abstention": [{"question": "What is my cat's name?"}]
    });
    (chat, probing)
}

#[test]
fn beam_batches_are_dated_by_their_anchors_and_spread_to_the_next() {
    let (chat, probing) = beam_fixture();
    let c = beam_chat(&chat, &probing);
    let march1 = beam_date("March-01-2024").unwrap();
    let march15 = beam_date("March-15-2024").unwrap();
    assert_eq!(c.turns.len(), 8);
    assert_eq!(c.turns[0].at, march1);
    // Four messages spread over the two weeks to the next anchor.
    assert_eq!(c.turns[2].at, march1 + 7 * DAY);
    assert_eq!(c.turns[4].at, march15);
    // The last batch has no anchor: two weeks after the one before.
    assert_eq!(c.turns[6].at, march15 + 14 * DAY);
    assert_eq!(c.asked_at, c.turns[7].at + DAY);
    assert!(c.turns.windows(2).all(|w| w[0].at < w[1].at));
    assert_eq!(c.turns[0].text, "I'm Ana and I water the plants on Sundays");
    assert!(c.turns[0].user && !c.turns[1].user);
}

#[test]
fn beam_evidence_comes_from_source_ids_then_chat_id_references() {
    let (chat, probing) = beam_fixture();
    let c = beam_chat(&chat, &probing);
    let of = |ability: &str| {
        let q = c.questions.iter().find(|q| q.ability == ability).unwrap();
        q.evidence.iter().copied().collect::<Vec<_>>()
    };
    assert_eq!(of("knowledge_update"), vec![0, 4]);
    assert_eq!(of("instruction_following"), vec![2]);
    assert_eq!(of("multi_session_reasoning"), vec![6]);
    // Evidence in prose only, and abstention: none, so left out.
    assert!(of("summarization").is_empty());
    assert!(of("abstention").is_empty());
}

#[test]
fn time_gaps_read_as_days() {
    assert_eq!(gap_days("two weeks later"), Some(14));
    assert_eq!(gap_days("about one month later"), Some(30));
    assert_eq!(gap_days("around six months later"), Some(180));
    assert_eq!(gap_days("a few weeks later"), Some(21));
    assert_eq!(gap_days("one year later"), Some(365));
    assert_eq!(gap_days("soon"), None);
}

fn locomo_fixture() -> serde_json::Value {
    json!({
        "speaker_a": "Caroline", "speaker_b": "Melanie",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hi Mel!"},
            {"speaker": "Melanie", "dia_id": "D1:2", "text": "Hey Caroline."}
        ],
        "session_2_date_time": "1:14 pm on 25 May, 2023",
        "session_2": [
            {"speaker": "Caroline", "dia_id": "D2:1", "text": "I went hiking.", "blip_caption": "a trail"},
            {"speaker": "Melanie", "dia_id": "D2:2", "text": "Nice!"}
        ]
    })
}

#[test]
fn a_cue_goes_in_as_its_own_session_before_the_trigger() {
    let conv = locomo_fixture();
    let base = locomo_turns(&conv, locomo_time::parse_locomo_time);
    assert_eq!(base.len(), 4);
    assert_eq!(
        base[2].text,
        "Caroline: I went hiking. [shares a photo: a trail]"
    );
    assert!(base[0].user && !base[1].user);
    let pair = json!({
        "id": 0, "relation_type": "causal",
        "cue_dialogue": "A: After learning to say 'no', I feel less stressed.\nB: Protecting your time matters.",
        "trigger_query": "A: I volunteered for that project and now I'm overwhelmed.",
        "time_gap": "two weeks later"
    });
    let st = stitch(&conv, &base, &pair).unwrap();
    let may25 = locomo_time::parse_locomo_time("12:00 am on 25 May, 2023").unwrap();
    assert_eq!(st.trigger_at, may25 + 7 * DAY + 12 * 3_600_000);
    // Two weeks before the trigger: between the two sessions.
    assert_eq!(st.cue, 2);
    assert_eq!(
        st.turns[2].text,
        "Caroline: After learning to say 'no', I feel less stressed."
    );
    assert_eq!(st.turns[2].at, st.trigger_at - 14 * DAY);
    assert!(st.turns[2].user && !st.turns[3].user);
    assert_eq!(st.turns[3].text, "Melanie: Protecting your time matters.");
    assert_eq!(st.turns[4], base[2]);
    assert_eq!(st.turns.len(), 6);
    assert_eq!(
        st.trigger,
        "Caroline: I volunteered for that project and now I'm overwhelmed."
    );
    assert_eq!(st.relation, "causal");
    // A year before: ahead of the whole conversation.
    let mut far = pair.clone();
    far["time_gap"] = json!("one year later");
    let st = stitch(&conv, &base, &far).unwrap();
    assert_eq!(st.cue, 0);
    assert_eq!(&st.turns[2..], &base[..]);
}

fn turn(text: &str, user: bool, at: i64) -> datasets::Turn {
    datasets::Turn {
        text: text.to_string(),
        user,
        at,
    }
}

#[test]
fn the_plain_window_keeps_the_last_messages_that_fit() {
    let turns: Vec<datasets::Turn> = (0..10)
        .map(|i| turn(&"word ".repeat(100), i % 2 == 0, i * 1_000))
        .collect();
    let model = chat::Bench::new(None);
    let plain = chat::Plain::new(&turns, &model);
    // 100 words are 125 tokens (500 bytes / 4); 400 tokens less the next
    // message's hold three.
    let seen = plain.window(10, 400, "next");
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![7, 8, 9]);
    assert_eq!(plain.window(4, 400, "next").len(), 3);
    assert!(plain.window(10, 100, "next").is_empty());
}

#[test]
fn plain_budgets_take_items_in_rank_order_that_fit() {
    let turns = vec![
        turn("We talked about the weather in Lisbon today.", true, 0),
        turn(
            &format!("The violin recital is on Friday. {}", "filler ".repeat(300)),
            false,
            1_000,
        ),
        turn(
            "My violin teacher moved the recital to Friday.",
            true,
            2_000,
        ),
    ];
    let model = chat::Bench::new(None);
    let plain = chat::Plain::new(&turns, &model);
    let [words, _, _] = plain.within_budgets("When is the violin recital?", &model);
    // The long message does not fit in 200 tokens: the short one does.
    assert!(words[0].contains(&2) && !words[0].contains(&1));
    assert!(words[2].contains(&1) && words[2].contains(&2));
}

#[test]
fn a_replayed_chat_brings_its_evidence_into_the_view() {
    let day = DAY;
    let start = beam_date("March-01-2024").unwrap();
    let turns = vec![
        turn(
            "I'm Ana and I water the ficus every Sunday.",
            true,
            start + day,
        ),
        turn("Noted: the ficus on Sundays.", false, start + day + 30_000),
        turn(
            "The cactus needs less, once a month.",
            true,
            start + 2 * day,
        ),
        turn(
            "Once a month for the cactus then.",
            false,
            start + 2 * day + 30_000,
        ),
    ];
    let model = chat::Bench::new(None);
    let r = chat::replay(&turns, model, 8_000);
    let (seen, tokens) = r.in_context("When do I water the ficus?", start + 3 * day);
    // A short chat is all in the view.
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    assert!(tokens > 0 && tokens <= 8_000);
    let fitted = r.within_budgets("When do I water the ficus?", start + 3 * day);
    assert!(fitted[2].contains(&0), "{fitted:?}");
}
