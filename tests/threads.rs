//! Threads: one memory, many chats. Each thread has its own view under the
//! ceiling; the facts block, the knowledge graph and recall are shared, and
//! what is recalled from another thread says which and when; an idle thread
//! sleeps in `maintain` and its facts reach the others; a whole thread can
//! be erased; calls on two threads from two handles keep every message
//! once; history loads in a batch with its own dates.

mod common;

use common::*;
use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::types::erase::Target;
use engram::view::ItemKind;
use engram::Config;
use engram::Error;
use engram::NewMessage;
use engram::Task;
use serde_json::json;

/// A user message of `tokens` in `thread` that starts a new concept.
fn user_in(thread: &str, topic: &str, tokens: usize) -> NewMessage {
    NewMessage::user(sized(&format!("{NEW} {topic}"), tokens)).in_thread(thread)
}

fn assistant_in(thread: &str, topic: &str, tokens: usize) -> NewMessage {
    NewMessage::assistant(sized(topic, tokens)).in_thread(thread)
}

/// A turn in `thread`, one minute per message.
fn turn_in(fx: &mut Fx, thread: &str, topic: &str) {
    fx.add(user_in(thread, topic, 50));
    fx.minutes(1);
    fx.add(assistant_in(thread, topic, 50));
    fx.minutes(1);
}

/// Every thread's view is within the ceiling, unless it says why not.
fn ceilings_hold(fx: &mut Fx, threads: &[&str]) {
    for t in threads {
        let v = block_on(fx.memory.view_in(t)).unwrap();
        assert!(
            v.tokens <= v.ceiling || v.over_ceiling.is_some(),
            "thread {t}: {} of {}",
            v.tokens,
            v.ceiling
        );
        assert!(v.tokens <= v.ceiling, "thread {t}: {:?}", v.over_ceiling);
    }
}

fn view_text(fx: &mut Fx, thread: &str) -> String {
    block_on(fx.memory.view_in(thread))
        .unwrap()
        .items
        .iter()
        .map(|i| i.text.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

fn facts_block(fx: &mut Fx, thread: &str) -> String {
    block_on(fx.memory.view_in(thread))
        .unwrap()
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Facts)
        .map(|i| i.text.clone())
        .collect()
}

/// A memory of three threads whose notes write a fact per topic.
fn three_threads() -> Fx {
    let fx = Fx::new(config(400));
    rules(&fx);
    fx
}

/// The segment and note rules of [`three_threads`].
fn rules(fx: &Fx) {
    standard_segment(&fx.model);
    notes_for(
        &fx.model,
        vec![
            (
                "lisbon",
                vec![fact(
                    "Alice",
                    "lives in",
                    "Lisbon",
                    "Alice lives in Lisbon.",
                )],
            ),
            (
                "garden",
                vec![fact("Alice", "grows", "tomatoes", "Alice grows tomatoes.")],
            ),
            (
                "cello",
                vec![fact("Alice", "plays", "cello", "Alice plays the cello.")],
            ),
        ],
    );
}

/// A memory whose relevance judge finds every candidate relevant, with
/// ceiling `ceiling`.
fn recalling(ceiling: usize) -> Fx {
    let model = ScriptedModel::new();
    relevant_all(&model);
    Fx::with(
        "test",
        MemoryStore::new(),
        model,
        ManualClock::at(T0),
        config(ceiling),
    )
}

/// A relevance rule that finds every candidate relevant.
fn relevant_all(model: &ScriptedModel) {
    model.on(Task::Relevance, |req| {
        let n = req
            .content
            .split("\n\nCandidates:\n")
            .nth(1)
            .map_or(0, |c| c.lines().count());
        Some(json!({ "relevant": (1..=n).collect::<Vec<_>>() }).to_string())
    });
}

/// The text of the recall block in `thread`'s view (there must be one).
fn recall_block(fx: &mut Fx, thread: &str) -> String {
    let view = block_on(fx.memory.view_in(thread)).unwrap();
    let block = view.items.iter().find(|i| i.kind == ItemKind::Recall);
    block.expect("a recall block").text.clone()
}

#[test]
fn a_fact_noted_in_one_thread_reaches_the_others_in_their_facts_block_or_recall() {
    let mut fx = recalling(600);
    rules(&fx);
    let all = ["a", "b", "c"];
    // Week 1: thread a talks of Lisbon, then of other things until a fade
    // seals Lisbon; b talks in between, hours apart.
    turn_in(&mut fx, "a", "lisbon");
    turn_in(&mut fx, "b", "groceries");
    ceilings_hold(&mut fx, &all);
    let mut topics = ["taxes", "weather", "movies", "trains", "boats", "hills"].into_iter();
    while !facts_block(&mut fx, "b").contains("Alice lives in Lisbon.") {
        let topic = topics.next().expect("a fade seals Lisbon");
        fx.clock.advance_minutes(60 * 2);
        turn_in(&mut fx, "a", topic);
        ceilings_hold(&mut fx, &all);
    }
    for t in all {
        assert!(
            facts_block(&mut fx, t).contains("Alice lives in Lisbon."),
            "thread {t}"
        );
    }
    assert!(!view_text(&mut fx, "a").contains("NEWTOPIC lisbon"));
    // b's view holds b's messages only; the fade ran in a's view.
    let b = view_text(&mut fx, "b");
    assert!(b.contains("groceries") && !b.contains("taxes"), "{b}");
    let fades = block_on(fx.memory.fades()).unwrap();
    assert!(fades.iter().all(|f| f.thread == "a"), "{fades:?}");
    // Weeks 2 and 3: thread c talks a lot; its fades forget the sealed
    // Lisbon episode (the least activated), and its fact leaves the block.
    let mut n = 0;
    while facts_block(&mut fx, "b").contains("Alice lives in Lisbon.") {
        fx.clock.advance_minutes(60 * 20);
        turn_in(&mut fx, "c", &format!("chores {n}"));
        ceilings_hold(&mut fx, &all);
        n += 1;
        assert!(n < 40, "c's fades forget Lisbon");
    }
    // Asked in b, the fact comes back, naming thread a and its date.
    fx.add(NewMessage::user("Does Alice still live in Lisbon?").in_thread("b"));
    ceilings_hold(&mut fx, &all);
    let recall = recall_block(&mut fx, "b");
    assert!(
        recall.contains("- Alice lives in Lisbon. (2025-11-24) [in thread \u{201c}a\u{201d}]"),
        "{recall}"
    );
}

#[test]
fn an_idle_thread_sleeps_in_maintain_and_its_facts_reach_the_others() {
    let mut fx = three_threads();
    turn_in(&mut fx, "c", "garden");
    turn_in(&mut fx, "a", "cello");
    assert!(!facts_block(&mut fx, "a").contains("tomatoes"));
    fx.clock.advance_minutes(60 * 25);
    let pending = block_on(fx.memory.pending_in("a")).unwrap();
    // The longest idle first (c spoke first).
    assert_eq!(pending.idle_threads, vec!["c".to_string(), "a".into()]);
    // One idle thread a call, the call's own first (then the longest
    // idle): the pending list drives the rest.
    let mut slept = Vec::new();
    for _ in 0..2 {
        let m = block_on(fx.memory.maintain_in("a")).unwrap();
        assert_eq!(m.slept.len(), 1, "{m:?}");
        slept.extend(m.slept.into_iter().map(|(t, _)| t));
    }
    assert_eq!(slept, ["a", "c"]);
    // Every episode of both left its view and was noted.
    for e in fx.episodes() {
        assert_eq!(e.episode.state, engram::EpisodeState::Sealed, "{e:?}");
        assert!(e.episode.noted.is_some());
    }
    let block = facts_block(&mut fx, "b");
    assert!(block.contains("Alice grows tomatoes."), "{block}");
    assert!(block.contains("Alice plays the cello."), "{block}");
    let c = block_on(fx.memory.view_in("c")).unwrap();
    assert!(c.items.iter().all(|i| i.kind != ItemKind::Message), "{c:?}");
    // Explain names the thread and why it left.
    let c_episode = fx
        .episodes()
        .iter()
        .find(|e| e.episode.thread == "c")
        .map(|e| e.episode.id)
        .unwrap();
    let x = fx.explain_episode(c_episode);
    assert_eq!(x.thread, "c");
    assert!(x.summary.contains("of thread \"c\""), "{}", x.summary);
    assert!(x.summary.contains("idle"), "{}", x.summary);
    let f = fx.facts();
    let tomatoes = f.iter().find(|f| f.sentence.contains("tomatoes")).unwrap();
    assert_eq!(fx.explain_fact(tomatoes.id).thread, "c");
    let fades = block_on(fx.memory.fades()).unwrap();
    assert!(fades
        .iter()
        .all(|f| f.reason == engram::types::fade::FadeReason::Idle));
    // Each sleep ran as of the time its thread fell asleep (a day after its
    // last message), not at the maintain an hour later: the fade, the
    // episodes' sealing and the traces of what they taught carry that time.
    let messages = block_on(fx.memory.messages()).unwrap();
    let last_of = |t: &str| {
        let at = messages.iter().filter(|m| m.thread == t).map(|m| m.at);
        at.max().unwrap()
    };
    for f in &fades {
        let asleep = last_of(&f.thread) + 24 * 60 * MIN;
        assert_eq!((f.at, f.finished_at), (asleep, Some(asleep)), "{f:?}");
    }
    let now = engram::Clock::now_ms(&fx.clock);
    let traces = block_on(fx.memory.traces()).unwrap();
    assert!(traces.iter().all(|t| t.at < now), "{traces:?}");
    // Nothing is left to do, and a second maintain sleeps nobody.
    assert!(block_on(fx.memory.pending_in("a")).unwrap().is_empty());
    assert!(block_on(fx.memory.maintain_in("a"))
        .unwrap()
        .slept
        .is_empty());
    // Back in c a day later, the conversation goes on.
    fx.add(user_in("c", "garden again", 30));
    assert!(view_text(&mut fx, "c").contains("garden again"));
}

#[test]
fn a_passage_recalled_from_another_thread_names_it_and_its_date() {
    // Every candidate is relevant; notes write nothing, so the Lisbon
    // episode is recalled as a passage. (A ceiling with room for a recall
    // block of a whole passage.)
    let mut fx = recalling(1_000);
    standard_segment(&fx.model);
    fx.add(NewMessage::user(sized("NEWTOPIC we moved to Lisbon in May", 40)).in_thread("trip"));
    fx.add(NewMessage::assistant(sized("Lisbon in May, noted", 40)).in_thread("trip"));
    fx.clock.advance_minutes(60 * 25);
    block_on(fx.memory.maintain_in("trip")).unwrap();
    fx.add(NewMessage::user("Where do we live now, Lisbon or Porto?").in_thread("home"));
    let recall = recall_block(&mut fx, "home");
    assert!(
        recall.contains("[in thread \u{201c}trip\u{201d}] [2025-11-24"),
        "{recall}"
    );
    assert!(recall.contains("we moved to Lisbon in May"));
    // In its own thread, a passage needs no label.
    fx.add(NewMessage::user("And Lisbon in May again?").in_thread("trip"));
    let own = recall_block(&mut fx, "trip");
    assert!(!own.contains("in thread"), "{own}");
}

#[test]
fn a_message_still_in_another_threads_view_is_recalled_with_its_thread_and_date() {
    // Nothing has faded and nothing is noted: the Lisbon message is only in
    // the trip thread's own view, in no passage and no fact. Recall in home
    // still finds it (DESIGN: recall searches the other threads' messages
    // still in their own views), labelled and dated.
    let mut fx = recalling(1_000);
    standard_segment(&fx.model);
    fx.add(NewMessage::user("NEWTOPIC we moved to Lisbon in May").in_thread("trip"));
    fx.add(NewMessage::assistant("Lisbon in May, noted").in_thread("trip"));
    fx.add(NewMessage::user("Also book the dentist for Friday").in_thread("trip"));
    fx.add(NewMessage::assistant("The dentist is booked").in_thread("trip"));
    assert!(fx.facts().is_empty());
    fx.minutes(5);
    fx.add(NewMessage::user("Since we moved, which city is home?").in_thread("home"));
    let recall = recall_block(&mut fx, "home");
    assert!(
        recall.contains(
            "- [in thread \u{201c}trip\u{201d}] [2025-11-24 16:00 UTC] user: \u{201c}NEWTOPIC we moved to Lisbon in May\u{201d}"
        ),
        "{recall}"
    );
    let view = block_on(fx.memory.view_in("home")).unwrap();
    // The block is stored: a reopened memory shows the same view.
    let mut again = fx.reopen();
    assert_eq!(block_on(again.memory.view_in("home")).unwrap(), view);
    // Erasing the message takes it out of the block.
    block_on(fx.memory.erase(Target::Message(1))).unwrap();
    let view = block_on(fx.memory.view_in("home")).unwrap();
    assert!(!format!("{view:?}").contains("moved to Lisbon"), "{view:?}");
}

#[test]
fn erase_of_a_thread_removes_its_text_everywhere_and_keeps_the_others() {
    let mut fx = three_threads();
    turn_in(&mut fx, "a", "lisbon");
    fx.add(NewMessage::user("Secret Zanzibar plans for the party").in_thread("b"));
    fx.add(NewMessage::assistant("Zanzibar it is, quietly.").in_thread("b"));
    turn_in(&mut fx, "c", "garden");
    let a_before = view_text(&mut fx, "a");
    let erased = block_on(fx.memory.erase(Target::Thread("b".into()))).unwrap();
    assert_eq!(erased.messages, vec![3, 4]);
    let prefix = format!("engram/{}/", fx.namespace);
    for (k, v) in fx.store.dump() {
        if k.starts_with(&prefix) {
            assert!(
                !String::from_utf8_lossy(&v).contains("Zanzibar"),
                "{k} still holds it"
            );
        }
    }
    assert!(!fx.export().contains("Zanzibar"));
    assert_eq!(view_text(&mut fx, "a"), a_before);
    assert!(!view_text(&mut fx, "b").contains("Zanzibar"));
    let e = block_on(fx.memory.erase(Target::Thread("nope".into()))).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    // The same state after a reopen.
    let mut again = fx.reopen();
    assert_eq!(view_text(&mut again, "c"), view_text(&mut fx, "c"));
}

#[test]
fn threads_lists_each_chat_with_its_title_and_counts() {
    let mut fx = three_threads();
    fx.add(NewMessage::system("You are terse.").in_thread("work"));
    fx.minutes(1);
    fx.add(NewMessage::user("Plan the Q3 roadmap\nwith the team").in_thread("work"));
    fx.minutes(1);
    fx.add(NewMessage::user("Hello there"));
    fx.minutes(1);
    fx.add(NewMessage::assistant("Hi!").in_thread("work"));
    let threads = block_on(fx.memory.threads()).unwrap();
    let names: Vec<&str> = threads.iter().map(|t| t.thread.as_str()).collect();
    assert_eq!(names, ["main", "work"]);
    let work = &threads[1];
    assert_eq!(work.title, "Plan the Q3 roadmap with the team");
    assert_eq!((work.first_message, work.last_message), (1, 4));
    assert_eq!((work.messages, work.user_messages), (3, 1));
    assert_eq!(work.first_at, T0);
    assert_eq!(work.last_at, T0 + 3 * MIN);
    assert_eq!(threads[0].messages, 1);
}

#[test]
fn a_thread_erased_whole_is_gone_from_threads() {
    let mut fx = three_threads();
    fx.add(NewMessage::user("Secret plans for the party.").in_thread("gone"));
    fx.add(NewMessage::assistant("Noted.").in_thread("gone"));
    fx.add(NewMessage::user("Hello there"));
    let names = |fx: &mut Fx| -> Vec<String> {
        let threads = block_on(fx.memory.threads()).unwrap();
        threads.into_iter().map(|t| t.thread).collect()
    };
    assert_eq!(names(&mut fx), ["gone", "main"]);
    block_on(fx.memory.erase(Target::Thread("gone".into()))).unwrap();
    assert_eq!(names(&mut fx), ["main"], "an erased thread is not listed");
    // Erasing each message of a thread does the same.
    fx.add(NewMessage::user("One more.").in_thread("each"));
    let id = block_on(fx.memory.messages()).unwrap().last().unwrap().id;
    assert_eq!(names(&mut fx), ["each", "main"]);
    block_on(fx.memory.erase(Target::Message(id))).unwrap();
    assert_eq!(names(&mut fx), ["main"]);
    // A new message in it lists it again.
    fx.add(NewMessage::user("Back again.").in_thread("gone"));
    assert_eq!(names(&mut fx), ["gone", "main"]);
}

#[test]
fn a_thread_with_no_message_has_the_facts_block_alone() {
    let mut fx = three_threads();
    let v = block_on(fx.memory.view_in("new-chat")).unwrap();
    assert!(v.items.is_empty());
    assert_eq!(block_on(fx.memory.view_tokens_in("new-chat")).unwrap(), 0);
    block_on(fx.memory.set_instructions("Be kind.")).unwrap();
    let v = block_on(fx.memory.view_in("new-chat")).unwrap();
    assert_eq!(v.items.len(), 1);
    assert!(block_on(fx.memory.threads()).unwrap().is_empty());
}

#[test]
fn bad_thread_names_and_dates_are_refused_and_write_nothing() {
    let mut fx = three_threads();
    fx.add(NewMessage::user("First.").in_thread("a"));
    let before = fx.store.dump();
    let long = "x".repeat(129);
    let bad = [
        NewMessage::user("hi").in_thread(""),
        NewMessage::user("hi").in_thread(long.as_str()),
        NewMessage::user("hi").in_thread("tab\there"),
        NewMessage::user("hi").in_thread("new chat"),
        NewMessage::user("hi").in_thread("a").said_at(T0 + DAY),
        NewMessage::user("hi").in_thread("a").said_at(T0 - MIN),
        NewMessage::user("hi").said_at(-5),
    ];
    for m in bad {
        let e = fx.try_add(m.clone()).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{m:?}: {e}");
    }
    for t in ["", long.as_str()] {
        assert!(matches!(
            block_on(fx.memory.view_in(t)).unwrap_err(),
            Error::InvalidInput(_)
        ));
    }
    // In a batch, the bad message is named and nothing of the batch lands.
    let batch = vec![
        NewMessage::user("ok").in_thread("b").said_at(T0 - DAY),
        NewMessage::user("bad").in_thread("b").said_at(T0 - 2 * DAY),
    ];
    let e = block_on(fx.memory.add_messages(&batch)).unwrap_err();
    assert!(e.to_string().contains("message 1 of the batch"), "{e}");
    let too_many = vec![NewMessage::user("x"); engram::memory::limits::MAX_BATCH + 1];
    assert!(block_on(fx.memory.add_messages(&too_many)).is_err());
    assert_eq!(fx.store.dump(), before);
    assert_eq!(fx.messages().len(), 1);
}

#[test]
fn two_handles_writing_two_threads_keep_every_message_once_in_order() {
    let mut one = three_threads();
    let mut two = one.reopen();
    for i in 0..12 {
        // Each handle is one call behind the other: every add conflicts,
        // reloads and retries.
        one.add(NewMessage::user(format!("{NEW} a {i}")).in_thread("a"));
        two.add(NewMessage::user(format!("{NEW} b {i}")).in_thread("b"));
        one.minutes(1);
        one.add(assistant_in("a", "reply a", 60));
        two.add(assistant_in("b", "reply b", 60));
        one.minutes(1);
        for fx in [&mut one, &mut two] {
            ceilings_hold(fx, &["a", "b"]);
        }
    }
    let messages = one.messages();
    assert_eq!(messages, two.messages());
    assert_eq!(messages.len(), 48);
    for t in ["a", "b"] {
        let users: Vec<String> = messages
            .iter()
            .filter(|m| m.thread == t && m.role == engram::Role::User)
            .map(|m| m.content.clone())
            .collect();
        let want: Vec<String> = (0..12).map(|i| format!("{NEW} {t} {i}")).collect();
        assert_eq!(users, want);
    }
    assert_eq!(
        block_on(one.memory.view_in("a")).unwrap(),
        block_on(two.memory.view_in("a")).unwrap()
    );
}

/// Messages of a small history a year ago, two minutes apart.
fn history() -> Vec<NewMessage> {
    let start = T0 - 365 * DAY;
    ["lisbon", "lisbon", "garden", "garden", "cello", "cello"]
        .iter()
        .enumerate()
        .map(|(i, topic)| {
            let m = match i % 2 {
                0 => user_in("old", topic, 40),
                _ => assistant_in("old", topic, 40),
            };
            m.said_at(start + 2 * MIN * i as i64)
        })
        .collect()
}

#[test]
fn a_batch_of_dated_history_is_stamped_with_its_own_dates() {
    let mut batched = three_threads();
    let out = block_on(batched.memory.add_messages(&history())).unwrap();
    assert_eq!(out.messages, (1..=6).collect::<Vec<_>>());
    // No model call yet: the judgments wait for maintain.
    let pending = block_on(batched.memory.pending_in("old")).unwrap();
    // (Every message after the first may start an episode.)
    assert_eq!(pending.unjudged.len(), 5);
    let mut rounds = 0;
    while !block_on(batched.memory.pending_in("old"))
        .unwrap()
        .is_empty()
    {
        block_on(batched.memory.maintain_in("old")).unwrap();
        rounds += 1;
        assert!(rounds < 5, "maintain settles");
    }
    // The same messages added one by one at their times.
    let mut single = three_threads();
    for m in history() {
        single.clock.set(m.at.unwrap());
        single.add(m);
    }
    single.clock.set(T0);
    block_on(single.memory.maintain_in("old")).unwrap();
    let (a, b) = (batched.episodes(), single.episodes());
    assert_eq!(a.len(), 3);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            (x.episode.first, x.episode.last, x.episode.formed_at),
            (y.episode.first, y.episode.last, y.episode.formed_at)
        );
        assert_eq!(x.activation, y.activation, "episode {}", x.episode.id);
        assert_eq!(
            x.episode.formed_at,
            T0 - 365 * DAY + 2 * MIN * (2 * x.episode.id as i64 - 1)
        );
    }
    // A year-old episode is not fresh: its activation is far below a new one's.
    assert!(a[0].activation < 0.01, "{}", a[0].activation);
    // Retrying the batch (client ids) stores nothing twice.
    let ids: Vec<NewMessage> = history()
        .into_iter()
        .enumerate()
        .map(|(i, m)| m.with_client_id(format!("h{i}")).in_thread("again"))
        .collect();
    let first = block_on(batched.memory.add_messages(&ids)).unwrap();
    let second = block_on(batched.memory.add_messages(&ids)).unwrap();
    assert_eq!(second.messages, Vec::<u64>::new());
    assert_eq!(second.duplicates, first.messages);
}

#[test]
fn stores_of_one_chat_are_one_main_thread() {
    let mut fx = Fx::new(Config::default());
    fx.user("Hello");
    fx.assistant("Hi");
    let threads = block_on(fx.memory.threads()).unwrap();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0].thread, "main");
    assert_eq!(fx.view(), block_on(fx.memory.view_in("main")).unwrap());
    // A memory of one chat is stored as before threads: no thread named.
    assert!(!fx.export().contains("\"thread\""));
}

#[test]
fn a_passage_hit_of_interleaved_threads_cites_its_own_threads_messages() {
    let mut fx = three_threads();
    // a and b take turns message by message, so a's passage spans ids of b.
    for (t, text) in [
        ("a", "NEWTOPIC we moved to Lisbon in May"),
        ("b", "NEWTOPIC groceries for the week"),
        ("a", "Lisbon has good trams"),
        ("b", "milk and eggs"),
    ] {
        fx.add(NewMessage::user(text).in_thread(t));
        fx.minutes(1);
    }
    fx.clock.advance_minutes(60 * 25);
    block_on(fx.memory.maintain_in("a")).unwrap();
    let hits = block_on(fx.memory.search("Lisbon trams", Default::default())).unwrap();
    let passage = hits
        .iter()
        .find(|h| matches!(h.item, engram::types::recall::Item::Passage(_)))
        .expect("a's passage is found");
    assert_eq!(passage.sources, vec![1, 3]);
    assert!(!passage.text.contains("groceries"), "{}", passage.text);
}

#[test]
fn a_sleep_as_of_the_past_never_dates_a_trace_before_its_episode_formed() {
    // b talks at T0 and falls asleep at T0 + 24 h; a talks at T0 + 30 h.
    // The maintain at T0 + 31 h sleeps b as of T0 + 24 h: b's garden fact
    // is judged against a's episodes too (every remembered episode), and a
    // yes on one of them is dated when that episode formed, not before.
    // (Work after replies waits for the maintain: a's episodes form in it.)
    let mut fx = Fx::new(Config {
        maintain_after_reply: false,
        ..config(400)
    });
    rules(&fx);
    traces_by(&fx.model, |_, _, _| true);
    turn_in(&mut fx, "b", "garden");
    fx.clock.advance_minutes(30 * 60);
    turn_in(&mut fx, "a", "cello");
    turn_in(&mut fx, "a", "lisbon");
    fx.clock.advance_minutes(60);
    let m = block_on(fx.memory.maintain_in("a")).unwrap();
    assert_eq!(m.slept.len(), 1, "{m:?}");
    assert_eq!(m.slept[0].0, "b");
    let episodes = fx.episodes();
    let formed = |id: u64| {
        let e = episodes.iter().find(|e| e.episode.id == id).unwrap();
        (e.episode.thread.clone(), e.episode.formed_at)
    };
    let traces = fx.traces();
    let on_a: Vec<_> = traces
        .iter()
        .filter(|t| t.cause != engram::types::trace::TraceCause::Encoding)
        .filter(|t| formed(t.episode).0 == "a")
        .collect();
    assert!(!on_a.is_empty(), "b's fact is judged against a's episodes");
    for t in traces {
        let (_, at) = formed(t.episode);
        assert!(t.at >= at, "trace {t:?} before its episode formed at {at}");
    }
}

/// The bytes a memory's namespace holds in the store.
fn stored_bytes(fx: &Fx) -> usize {
    let prefix = format!("engram/{}/", fx.namespace);
    fx.store
        .dump()
        .iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .map(|(_, v)| v.len())
        .sum()
}

#[test]
fn a_thread_whose_open_messages_were_all_erased_is_not_idle_for_ever() {
    // Erasing a whole thread, or each message of an open stretch, leaves
    // the erased ids in its line: they are not a conversation to sleep.
    let mut fx = three_threads();
    turn_in(&mut fx, "a", "lisbon");
    fx.add(user_in("b", "garden", 50));
    fx.add(user_in("c", "cello", 50));
    fx.add(assistant_in("c", "cello", 50));
    block_on(fx.memory.erase(Target::Thread("a".into()))).unwrap();
    for id in [4, 5] {
        block_on(fx.memory.erase(Target::Message(id))).unwrap();
    }
    fx.clock.advance_minutes(60 * 25);
    let pending = block_on(fx.memory.pending_in("b")).unwrap();
    assert_eq!(pending.idle_threads, vec!["b".to_string()], "{pending:?}");
    // Maintain until nothing is pending: one sleep, then nothing to do, and
    // the stored bytes stop growing.
    let m = block_on(fx.memory.maintain_in("b")).unwrap();
    assert_eq!(m.slept.len(), 1, "{m:?}");
    for t in ["a", "b", "c"] {
        let mut calls = 0;
        while !block_on(fx.memory.pending_in(t)).unwrap().is_empty() {
            let m = block_on(fx.memory.maintain_in(t)).unwrap();
            assert!(m.slept.is_empty(), "{t}: {m:?}");
            calls += 1;
            assert!(calls <= 2, "{t}: still pending after {calls} maintains");
        }
    }
    let before = stored_bytes(&fx);
    for t in ["a", "b", "c"] {
        let m = block_on(fx.memory.maintain_in(t)).unwrap();
        assert!(m.slept.is_empty(), "{t}: {m:?}");
        assert!(block_on(fx.memory.pending_in(t)).unwrap().is_empty());
    }
    assert_eq!(stored_bytes(&fx), before);
}

#[test]
fn thread_names_that_look_alike_are_refused_as_namespaces_are() {
    // Zero-width, BOM, tag characters, right-to-left override, a trailing
    // space, a leading dot: each would render as "main" (or another name)
    // in a recall label. Only the namespaces' characters are taken.
    let mut fx = three_threads();
    fx.add(NewMessage::user("First."));
    let before = fx.store.dump();
    let alike = [
        "main\u{200b}",
        "\u{feff}main",
        "main\u{e0041}",
        "\u{202e}niam",
        "main ",
        "m\u{0430}in",
        ".main",
        "a/b",
    ];
    for t in alike {
        let e = fx.try_add(NewMessage::user("hi").in_thread(t)).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{t:?}: {e}");
        assert!(e.to_string().contains("letters, digits or ._-:@"), "{e}");
        assert!(block_on(fx.memory.view_in(t)).is_err(), "{t:?}");
    }
    assert_eq!(fx.store.dump(), before);
    for t in ["work", "chat-2", "u:ana@example.com", "a.b_c"] {
        fx.add(NewMessage::user("hi").in_thread(t));
    }
    assert_eq!(block_on(fx.memory.threads()).unwrap().len(), 5);
}
