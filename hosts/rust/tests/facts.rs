//! Facts you can address through the component: `remember` on a new
//! memory (a triple, or a sentence the offline note model reads), `fact`,
//! the paged listings with a cursor walk while facts are added, `history`,
//! `revise` as a new fact that retires the old one, and bad input as
//! `invalid-input` that changes nothing (the semantics of the core's
//! tests/addressable_facts.rs).

mod common;

use common::text;
use engram_wasmtime_host::{
    Engram, EpisodeFilter, FactFilter, FactKind, HistoryEntry, HistoryLink, HistoryMention,
    MemStore, MemoryError, NewFact, PageRequest, Remembered, Role, Statement,
};

const T0: i64 = 1_764_000_000_000;

fn triple(subject: &str, predicate: &str, object: &str, sentence: &str) -> Statement {
    Statement::Triple(NewFact {
        subject: subject.into(),
        predicate: predicate.into(),
        object: object.into(),
        sentence: sentence.into(),
        kind: FactKind::Fact,
    })
}

fn lisbon() -> Statement {
    triple("Ana", "lives in", "Lisbon", "Ana lives in Lisbon.")
}

fn porto() -> Statement {
    triple("Ana", "lives in", "Porto", "Ana lives in Porto.")
}

fn page(limit: Option<u32>, cursor: Option<&str>) -> PageRequest {
    PageRequest {
        limit,
        cursor: cursor.map(str::to_string),
    }
}

fn all_facts() -> FactFilter {
    FactFilter {
        live: None,
        kinds: vec![],
        entity: None,
        stated: None,
    }
}

fn invalid<T: std::fmt::Debug>(r: wasmtime::Result<T>, says: &str) {
    let err = r.expect_err(says);
    match err.downcast_ref::<MemoryError>() {
        Some(MemoryError::InvalidInput(m)) => assert!(m.contains(says), "{m:?}: {says:?}"),
        other => panic!("expected invalid-input ({says}), got {other:?}: {err:#}"),
    }
}

fn open(store: &MemStore) -> Engram {
    common::open_offline(store, "facts")
}

#[test]
fn remember_fact_history_and_revise_through_the_component() {
    let store = MemStore::default();
    let mut memory = open(&store);
    let done = memory.remember(&lisbon()).expect("remember");
    let Remembered {
        fact,
        merged,
        retired,
    } = done;
    assert_eq!((fact, merged, retired), (1, false, vec![]));
    let f = memory.fact(1).expect("fact").expect("fact 1");
    assert_eq!((f.episode, f.said_at), (0, T0));
    assert!(memory.fact(2).expect("fact").is_none());
    invalid(memory.fact(0), "start at 1");
    let reopened = open(&store).facts().expect("facts");
    assert_eq!(format!("{reopened:?}"), format!("{:?}", vec![f]));
    let sentence = memory
        .remember(&Statement::Sentence(
            "Carol prefers green tea over coffee.".into(),
        ))
        .expect("a sentence");
    let carol = memory.fact(sentence.fact).unwrap().unwrap();
    assert!(carol.sentence.contains("green tea"), "{carol:?}");

    memory.host().now_ms += 60_000;
    let revised = memory.revise(1, &porto()).expect("revise");
    assert_eq!(revised.retired, vec![1]);
    let old = memory.history(1).expect("history");
    assert!(!old.live);
    match &old.entries[..] {
        [HistoryEntry::Added(HistoryMention {
            episode: 0,
            sentence,
            at: T0,
        }), HistoryEntry::RetiredBy(HistoryLink { fact, at })] => {
            assert_eq!(sentence, "Ana lives in Lisbon.");
            assert_eq!((*fact, *at), (revised.fact, T0 + 60_000));
        }
        other => panic!("{other:?}"),
    }
    invalid(memory.revise(1, &porto()), "already retired");
    invalid(memory.revise(revised.fact, &porto()), "already says");
    invalid(memory.history(99), "no fact 99");
    invalid(memory.remember(&Statement::Sentence("  ".into())), "empty");
}

#[test]
fn a_cursor_walk_returns_each_fact_once_in_order_while_facts_are_added() {
    let store = MemStore::default();
    let mut memory = open(&store);
    for i in 1..=150 {
        let s = format!("Person {i} likes thing {i}.");
        let statement = triple(&format!("Person {i}"), "likes", &format!("thing {i}"), &s);
        memory.remember(&statement).expect("remember");
    }
    let (mut seen, mut cursor, mut added) = (Vec::new(), None::<String>, 0);
    loop {
        let p = memory
            .facts_page(&page(Some(25), cursor.as_deref()), &all_facts())
            .expect("page");
        seen.extend(p.items.iter().map(|f| f.id));
        if added < 4 {
            added += 1;
            let s = format!("Late {added} likes coffee.");
            let statement = triple(&format!("Late {added}"), "likes", "coffee", &s);
            memory.remember(&statement).expect("remember");
        }
        match p.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, (1..=154).collect::<Vec<u64>>());
    let noted = FactFilter {
        stated: Some(false),
        ..all_facts()
    };
    let none = memory.facts_page(&page(None, None), &noted).expect("page");
    assert!(none.items.is_empty() && none.next.is_none());
    let writes = store.snapshot();
    invalid(
        memory.facts_page(&page(Some(0), None), &all_facts()),
        "limit 0",
    );
    invalid(
        memory.facts_page(&page(Some(1_001), None), &all_facts()),
        "at most 1000",
    );
    invalid(
        memory.facts_page(&page(None, Some("message:3")), &all_facts()),
        "bad cursor",
    );
    invalid(
        memory.facts_page(&page(None, Some("fact:999")), &all_facts()),
        "no fact 999",
    );
    assert_eq!(store.snapshot(), writes, "bad input changes nothing");
}

#[test]
fn messages_and_episodes_page_through_the_component() {
    let store = MemStore::default();
    let mut memory = open(&store);
    for i in 0..4 {
        memory.host().now_ms += 60_000;
        memory
            .add_message(&text(
                Role::User,
                &format!("Question {i} about the garden."),
            ))
            .expect("add");
        memory.host().now_ms += 60_000;
        memory
            .add_message(&text(Role::Assistant, &format!("Answer {i}.")))
            .expect("add");
    }
    let first = memory
        .messages_page(&page(Some(3), None), None)
        .expect("page");
    assert_eq!(
        first.items.iter().map(|m| m.id).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(first.next.as_deref(), Some("message:3"));
    let rest = memory
        .messages_page(&page(Some(100), first.next.as_deref()), Some("main"))
        .expect("page");
    assert_eq!(
        rest.items.iter().map(|m| m.id).collect::<Vec<_>>(),
        [4, 5, 6, 7, 8]
    );
    assert_eq!(rest.next, None);
    let filter = EpisodeFilter {
        thread: None,
        states: vec![],
    };
    let episodes = memory
        .episodes_page(&page(Some(1_000), None), &filter)
        .expect("page");
    let ids = |es: &[engram_wasmtime_host::Episode]| es.iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(
        ids(&episodes.items),
        ids(&memory.episodes().expect("episodes"))
    );
}
