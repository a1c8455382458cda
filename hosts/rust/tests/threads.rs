//! Threads through the component (the offline model, a memory store):
//! three chats in one memory, what an idle one taught reaching the others'
//! facts block; dated history added in batches (split at 1,000, with
//! progress, retried by client id); a thread erased; bad thread names and
//! dates refused with `invalid-input`, writing nothing.

mod common;

use common::{open_offline, text};
use engram_wasmtime_host::{
    EraseTarget, FadeReason, ItemKind, MemStore, MemoryError, NewMessage, Pending, Role, MAX_BATCH,
};

const HOUR: i64 = 3_600_000;

/// The `invalid-input` message inside `err`; panics on anything else.
fn invalid(err: &wasmtime::Error) -> String {
    match MemoryError::from_wasmtime(err) {
        Some(MemoryError::InvalidInput(m)) => m.clone(),
        other => panic!("expected invalid-input, got {other:?} ({err:#})"),
    }
}

fn nothing_pending(p: &Pending) -> bool {
    p.unjudged.is_empty()
        && p.undistilled.is_empty()
        && p.leaving.is_empty()
        && p.awaiting_note.is_empty()
        && !p.fade_ahead
        && p.idle_threads.is_empty()
}

fn in_thread(role: Role, content: &str, thread: &str) -> NewMessage {
    text(role, content).in_thread(thread)
}

#[test]
fn what_an_idle_thread_taught_reaches_the_other_threads() {
    let store = MemStore::new();
    let mut memory = open_offline(&store, "threads");
    let t0 = memory.host().now_ms;
    for (role, content) in [
        (Role::User, "The Lisbon offsite budget is 12000 euros."),
        (
            Role::Assistant,
            "Noted: the Lisbon offsite has 12000 euros.",
        ),
        (Role::User, "The offsite hotel is the Baixa House."),
        (Role::Assistant, "Good: the Baixa House it is."),
    ] {
        memory
            .add_message(&in_thread(role, content, "trip"))
            .expect("trip");
    }
    // A day and more later, two other chats.
    memory.host().now_ms = t0 + 25 * HOUR;
    memory
        .add_message(&text(Role::User, "Review the quarterly report draft."))
        .expect("main");
    memory
        .add_message(&in_thread(
            Role::User,
            "What should I cook tonight?",
            "home",
        ))
        .expect("home");
    let pending = memory.pending_in("home").expect("pending");
    assert_eq!(pending.idle_threads, vec!["trip".to_string()]);
    assert_eq!(memory.pending().expect("pending").idle_threads, ["trip"]);

    let maintained = memory.maintain_in("home").expect("maintain");
    assert_eq!(maintained.slept.len(), 1, "{maintained:?}");
    let (slept, fade) = maintained.slept[0].clone();
    assert_eq!(slept, "trip");
    let fades = memory.fades().expect("fades");
    let idle = fades.iter().find(|f| f.id == fade).expect("the fade");
    assert_eq!(idle.reason, FadeReason::Idle);
    assert_eq!(idle.thread, "trip");
    assert!(memory
        .pending_in("home")
        .expect("pending")
        .idle_threads
        .is_empty());

    // The trip's episodes left its view, noted: their facts are in every
    // thread's facts block.
    let episodes = memory.episodes().expect("episodes");
    assert!(!episodes.is_empty() && episodes.iter().all(|e| e.thread == "trip"));
    let facts = memory.facts().expect("facts");
    let budget = facts
        .iter()
        .find(|f| f.sentence.contains("12000"))
        .unwrap_or_else(|| panic!("the budget was noted: {facts:?}"));
    for thread in ["home", "main", "trip"] {
        let view = memory.view_in(thread).expect("view");
        let block = view
            .items
            .iter()
            .find(|i| i.kind == ItemKind::Facts)
            .unwrap_or_else(|| panic!("{thread} has a facts block"));
        assert!(block.facts.contains(&budget.id), "{thread}: {block:?}");
    }
    let trip = memory.view_in("trip").expect("view");
    assert!(
        trip.items.iter().all(|i| i.kind != ItemKind::Message),
        "the trip slept: {trip:?}"
    );
    let home = memory.render_openai_in("home").expect("render");
    assert!(home.to_string().contains("cook tonight"));
    assert!(!home.to_string().contains("quarterly report"));
    assert_eq!(
        memory.view_tokens_in("home").expect("tokens"),
        memory.view_in("home").expect("view").tokens
    );
    // The main thread's view is `view()`.
    assert_eq!(
        format!("{:?}", memory.view().expect("view")),
        format!("{:?}", memory.view_in("main").expect("view"))
    );

    let threads = memory.threads().expect("threads");
    let names: Vec<&str> = threads.iter().map(|t| t.thread.as_str()).collect();
    assert_eq!(names, ["home", "main", "trip"]);
    let trip = &threads[2];
    assert_eq!(trip.title, "The Lisbon offsite budget is 12000 euros.");
    assert_eq!((trip.messages, trip.user_messages), (4, 2));
    assert_eq!((trip.first_message, trip.last_message), (1, 4));
    assert_eq!(trip.first_at, t0);
    assert_eq!(trip.episodes_in_view, 0);
    let messages = memory.messages().expect("messages");
    let threads_of: Vec<&str> = messages.iter().map(|m| m.thread.as_str()).collect();
    assert_eq!(threads_of, ["trip", "trip", "trip", "trip", "main", "home"]);

    // A past view of a thread, and a turn ended in one.
    let past = memory.view_at_in(t0, "trip").expect("past");
    assert!(past.items.iter().any(|i| i.kind == ItemKind::Message));
    let rendered = memory.render_openai_at_in(t0, "trip").expect("past");
    assert!(rendered.to_string().contains("12000 euros"));
    memory
        .add_message(&in_thread(Role::Assistant, "Pasta, then.", "home"))
        .expect("reply");
    memory.end_turn_in("home").expect("end turn");
}

#[test]
fn dated_history_goes_in_batches_with_progress_and_retries_by_client_id() {
    let store = MemStore::new();
    let mut memory = open_offline(&store, "batch");
    let now = memory.host().now_ms;
    let start = now - 90 * 24 * HOUR;
    let history: Vec<NewMessage> = (0..1_500)
        .map(|i| {
            let (role, thread) = match i % 2 {
                0 => (Role::User, ["a", "b", "c"][(i / 2) % 3]),
                _ => (Role::Assistant, ["a", "b", "c"][(i / 2) % 3]),
            };
            text(role, &format!("Message {i} of the old chats."))
                .in_thread(thread)
                .said_at(start + i as i64 * 60_000)
                .with_client_id(format!("old-{i}"))
        })
        .collect();
    let mut seen = Vec::new();
    let batch = memory
        .add_messages_with_progress(&history, |done, total| seen.push((done, total)))
        .expect("batch");
    assert_eq!(seen, [(MAX_BATCH, 1_500), (1_500, 1_500)]);
    assert_eq!(batch.messages, (1..=1_500).collect::<Vec<u64>>());
    assert!(batch.duplicates.is_empty());
    let messages = memory.messages().expect("messages");
    assert_eq!(messages[0].at, start);
    assert_eq!(messages[1_499].at, start + 1_499 * 60_000);
    assert_eq!(messages[2].thread, "b");

    // Retried whole: every message is a duplicate, nothing is written.
    let before = store.snapshot();
    let again = memory.add_messages(&history).expect("retry");
    assert!(again.messages.is_empty());
    assert_eq!(again.duplicates, batch.messages);
    assert_eq!(store.snapshot(), before);

    // The judgments waited; maintain each thread until nothing is pending.
    assert!(!memory.pending_in("a").expect("pending").unjudged.is_empty());
    for thread in ["a", "b", "c"] {
        for _ in 0..20 {
            if nothing_pending(&memory.pending_in(thread).expect("pending")) {
                break;
            }
            memory.maintain_in(thread).expect("maintain");
        }
        let pending = memory.pending_in(thread).expect("pending");
        assert!(pending.unjudged.is_empty(), "{thread}: {pending:?}");
    }
    let episodes = memory.episodes().expect("episodes");
    assert!(episodes.iter().all(|e| e.formed_at < now), "{episodes:?}");
}

#[test]
fn erasing_a_thread_erases_its_messages_only() {
    let store = MemStore::new();
    let mut memory = open_offline(&store, "erase");
    memory
        .add_message(&in_thread(
            Role::User,
            "My passport number is X123.",
            "secret",
        ))
        .expect("secret");
    memory
        .add_message(&text(Role::User, "Plan the Lisbon offsite."))
        .expect("main");
    memory
        .add_message(&in_thread(Role::Assistant, "Stored.", "secret"))
        .expect("secret");
    let erased = memory
        .erase(EraseTarget::Thread("secret".into()))
        .expect("erase");
    assert_eq!(erased.messages, [1, 3]);
    let messages = memory.messages().expect("messages");
    assert!(messages[0].erased && messages[2].erased && !messages[1].erased);
    assert_eq!(messages[0].thread, "secret", "the name stays");
    let view = memory.render_openai_in("secret").expect("view");
    assert!(!view.to_string().contains("X123"), "{view}");
    assert!(store
        .snapshot()
        .values()
        .all(|v| !String::from_utf8_lossy(v).contains("X123")));
    assert!(memory
        .render_openai()
        .expect("view")
        .to_string()
        .contains("Lisbon"));
    let err = memory
        .erase(EraseTarget::Thread("nowhere".into()))
        .unwrap_err();
    assert!(invalid(&err).contains("nowhere"));
}

#[test]
fn bad_threads_and_dates_are_invalid_input_and_write_nothing() {
    let store = MemStore::new();
    let mut memory = open_offline(&store, "bad");
    let now = memory.host().now_ms;
    memory
        .add_message(&in_thread(Role::User, "First.", "t"))
        .expect("first");
    let before = store.snapshot();
    let long = "x".repeat(200);
    let bad = [
        in_thread(Role::User, "Hello.", &long),
        in_thread(Role::User, "Hello.", ""),
        in_thread(Role::User, "Hello.", "a\nb"),
        in_thread(Role::User, "From the future.", "t").said_at(now + HOUR),
        in_thread(Role::User, "Before the last one.", "t").said_at(now - HOUR),
        text(Role::User, "In seconds.").said_at(now / 1000 - 10_000_000_000),
    ];
    for m in &bad {
        let err = memory.add_message(m).unwrap_err();
        invalid(&err);
        // In a batch after a good message: the whole call is refused.
        let good = in_thread(Role::User, "Fine.", "u");
        let err = memory.add_messages(&[good, m.clone()]).unwrap_err();
        assert!(invalid(&err).contains("message 1"), "{err:#}");
    }
    assert!(invalid(&memory.add_message(&bad[0]).unwrap_err()).contains("128"));
    assert!(invalid(&memory.add_message(&bad[3]).unwrap_err()).contains("future"));
    for err in [
        memory.view_in(&long).unwrap_err(),
        memory.pending_in("").unwrap_err(),
        memory.maintain_in(&long).unwrap_err(),
        memory.end_turn_in(&long).unwrap_err(),
        memory.view_tokens_in(&long).unwrap_err(),
        memory.view_at_in(now, &long).unwrap_err(),
        memory.erase(EraseTarget::Thread(long.clone())).unwrap_err(),
    ] {
        invalid(&err);
    }
    // Over 1,000 in one call (through the binding; `add_messages` splits).
    let many = vec![text(Role::User, "Hi."); MAX_BATCH + 1];
    let err = memory
        .call(|m, s, r| m.call_add_messages(s, r, &many))
        .unwrap_err();
    assert!(invalid(&err).contains("1000"), "{err:#}");
    assert_eq!(store.snapshot(), before, "nothing was written");
    assert_eq!(memory.messages().expect("messages").len(), 1);
}

#[test]
fn a_bad_message_in_a_later_call_keeps_the_calls_before() {
    let store = MemStore::new();
    let mut memory = open_offline(&store, "mid");
    let mut history: Vec<NewMessage> = (0..MAX_BATCH + 10)
        .map(|i| {
            let role = [Role::User, Role::Assistant][i % 2];
            text(role, &format!("Line {i}.")).with_client_id(format!("m{i}"))
        })
        .collect();
    history[MAX_BATCH + 3].thread = Some("x".repeat(200));
    let mut seen = Vec::new();
    let err = memory
        .add_messages_with_progress(&history, |done, total| seen.push((done, total)))
        .unwrap_err();
    assert!(
        invalid(&err).starts_with("message 3 of the batch"),
        "{err:#}"
    );
    assert!(
        format!("{err:#}").contains("messages 1000.. of 1010"),
        "{err:#}"
    );
    assert_eq!(seen, [(MAX_BATCH, MAX_BATCH + 10)]);
    assert_eq!(memory.messages().expect("messages").len(), MAX_BATCH);
    // Fixed and retried whole: the first call's messages are duplicates.
    history[MAX_BATCH + 3].thread = None;
    let again = memory.add_messages(&history).expect("retry");
    assert_eq!(again.duplicates.len(), MAX_BATCH);
    assert_eq!(
        again.messages,
        (MAX_BATCH as u64 + 1..=MAX_BATCH as u64 + 10).collect::<Vec<_>>()
    );
}
