//! Message metadata and search filters: a message's metadata is kept,
//! returned, exported and erased with it; a search's filter (thread, time,
//! kind, entity, metadata) is asked of every candidate before ranking, so
//! an item it keeps is found however many better items it leaves out; a
//! bad filter or bad metadata is refused and nothing is written.

mod recall_support;

use std::collections::BTreeSet;

use engram::testing::{block_on, MemoryStore};
use engram::types::erase::Target;
use engram::Memory;
use engram::NewMessage;
use engram::{
    types::recall::Item, types::recall::ItemKind, types::recall::SearchFilter,
    types::recall::SearchHit, types::recall::SearchOptions,
};
use recall_support::*;
use serde_json::{json, Value};

/// A user message and its reply in `thread`, both with `meta`.
fn said(r: &mut Rig, thread: &str, meta: Value, user: &str, reply: &str) {
    for (m, text) in [
        (NewMessage::user(user), user),
        (NewMessage::assistant(reply), reply),
    ] {
        r.clock.advance(MIN);
        let m = m.in_thread(thread).with_metadata(meta.clone());
        block_on(r.memory.add_message(m)).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

/// Ana's turn in thread `work` from Slack, Miso's in `main` by email,
/// both out of view (facts and passages); then a turn about Ana in `work`
/// still in view.
fn world() -> Rig {
    let mut r = rig(config());
    r.facts_for("sister Ana", vec![ana_fact()]);
    r.facts_for("Miso the cat", vec![miso_fact()]);
    let slack = json!({"source": "slack", "team": {"name": "core"}});
    said(
        &mut r,
        "work",
        slack,
        "My sister Ana lives in Porto now.",
        "Nice.",
    );
    said(
        &mut r,
        "main",
        json!({"source": "email"}),
        "Miso the cat is allergic to chicken.",
        "Noted.",
    );
    // Miso's turn leaves the view for good (its episode is forgotten; the
    // work thread, idle meanwhile, sleeps and is noted).
    for i in 0..20 {
        let gone = block_on(r.memory.episodes()).unwrap().iter().any(|e| {
            e.episode.thread == "main"
                && e.episode.first == 3
                && e.episode.state == engram::EpisodeState::Forgotten
        });
        if gone {
            break;
        }
        r.clock.advance(DAY + MIN);
        r.turn(&format!("Filler {i}: quiet."), "Okay.");
    }
    said(
        &mut r,
        "work",
        json!({"source": "slack"}),
        "Ana phoned from Porto about the chicken.",
        "Good.",
    );
    r
}

const QUERY: &str = "Ana Porto Miso chicken";

fn search(r: &mut Rig, filter: SearchFilter) -> Vec<SearchHit> {
    let options = SearchOptions {
        limit: 50,
        filter,
        ..SearchOptions::default()
    };
    block_on(r.memory.search(QUERY, options)).expect("search")
}

/// The texts of the hits (a fact's sentence, a passage's or message's
/// text).
fn texts(hits: &[SearchHit]) -> Vec<String> {
    hits.iter().map(|h| h.text.clone()).collect()
}

fn says(hits: &[SearchHit], words: &str) -> bool {
    hits.iter().any(|h| h.text.contains(words))
}

/// Every message a hit came from.
fn source_messages(r: &mut Rig, hits: &[SearchHit]) -> Vec<engram::Message> {
    let messages = block_on(r.memory.messages()).unwrap();
    let mut out = Vec::new();
    for h in hits {
        assert!(
            !h.sources.is_empty() || matches!(h.item, Item::Fact(_)),
            "{h:?}"
        );
        let ids: Vec<u64> = match (&h.item, h.sources.is_empty()) {
            (Item::Fact(f), true) => {
                // A fact whose note named no message: its episode's.
                let fact = block_on(r.memory.facts()).unwrap()[*f as usize - 1].clone();
                let e = block_on(r.memory.episodes()).unwrap();
                let e = &e
                    .iter()
                    .find(|e| e.episode.id == fact.episode)
                    .unwrap()
                    .episode;
                (e.first..=e.last).collect()
            }
            _ => h.sources.clone(),
        };
        out.extend(ids.iter().map(|&id| messages[id as usize - 1].clone()));
    }
    out
}

#[test]
fn the_unfiltered_search_finds_both_threads() {
    let mut r = world();
    let all = search(&mut r, SearchFilter::default());
    assert!(says(&all, "Ana, the user's sister"), "{:#?}", texts(&all));
    assert!(says(&all, "Miso the cat is allergic"), "{:#?}", texts(&all));
    assert!(all.iter().any(|h| matches!(h.item, Item::Message(_))));
    // Every hit says where it came from: a passage its messages, a message
    // itself.
    for h in &all {
        match h.item {
            Item::Passage(_) => assert!(!h.sources.is_empty()),
            Item::Message(m) => assert_eq!(h.sources, vec![m]),
            Item::Fact(_) => {}
        }
    }
}

#[test]
fn a_thread_filter_keeps_only_that_threads_items() {
    let mut r = world();
    let work = search(
        &mut r,
        SearchFilter {
            thread: Some("work".into()),
            ..SearchFilter::default()
        },
    );
    assert!(says(&work, "Ana, the user's sister"), "{:#?}", texts(&work));
    assert!(!says(&work, "Miso"), "{:#?}", texts(&work));
    let sources = source_messages(&mut r, &work);
    assert!(!sources.is_empty() && sources.iter().all(|m| m.thread == "work"));
    let main = search(
        &mut r,
        SearchFilter {
            thread: Some("main".into()),
            ..SearchFilter::default()
        },
    );
    assert!(
        says(&main, "Miso the cat is allergic"),
        "{:#?}",
        texts(&main)
    );
    assert!(!says(&main, "Ana"), "{:#?}", texts(&main));
    let none = search(
        &mut r,
        SearchFilter {
            thread: Some("nowhere".into()),
            ..SearchFilter::default()
        },
    );
    assert!(none.is_empty(), "{none:#?}");
}

#[test]
fn a_time_filter_keeps_items_said_within_it() {
    let mut r = world();
    // Ana's turn was said at T0 + 1 and 2 minutes, Miso's at 3 and 4.
    let early = search(
        &mut r,
        SearchFilter {
            from: Some(T0),
            to: Some(T0 + 2 * MIN),
            ..SearchFilter::default()
        },
    );
    assert!(
        says(&early, "Ana, the user's sister"),
        "{:#?}",
        texts(&early)
    );
    assert!(!says(&early, "Miso") && !says(&early, "phoned"));
    for h in &early {
        assert!(h.said_at <= T0 + 2 * MIN, "{h:?}");
    }
    // Inclusive at both ends: exactly Miso's reply.
    let miso = search(
        &mut r,
        SearchFilter {
            from: Some(T0 + 4 * MIN),
            to: Some(T0 + 4 * MIN),
            ..SearchFilter::default()
        },
    );
    assert!(
        says(&miso, "Miso the cat is allergic"),
        "{:#?}",
        texts(&miso)
    );
    assert!(!says(&miso, "Ana"));
    // The turn still in view, days later.
    let late = search(
        &mut r,
        SearchFilter {
            from: Some(T0 + DAY),
            ..SearchFilter::default()
        },
    );
    assert!(says(&late, "phoned") && !says(&late, "Miso the cat is"));
}

#[test]
fn a_kind_filter_keeps_only_those_kinds() {
    let mut r = world();
    for kind in [ItemKind::Fact, ItemKind::Passage, ItemKind::Message] {
        let hits = search(
            &mut r,
            SearchFilter {
                kinds: vec![kind],
                ..SearchFilter::default()
            },
        );
        assert!(!hits.is_empty(), "{kind:?}");
        assert!(hits.iter().all(|h| h.item.kind() == kind), "{hits:#?}");
    }
    let two = search(
        &mut r,
        SearchFilter {
            kinds: vec![ItemKind::Fact, ItemKind::Message],
            ..SearchFilter::default()
        },
    );
    let kinds: BTreeSet<ItemKind> = two.iter().map(|h| h.item.kind()).collect();
    assert_eq!(kinds, BTreeSet::from([ItemKind::Fact, ItemKind::Message]));
}

#[test]
fn an_entity_filter_keeps_facts_passages_and_messages_about_it() {
    let mut r = world();
    let entities = block_on(r.memory.entities()).unwrap();
    let ana = entities.iter().find(|e| e.name == "Ana").expect("Ana").id;
    let hits = search(
        &mut r,
        SearchFilter {
            entity: Some(ana),
            ..SearchFilter::default()
        },
    );
    assert!(says(&hits, "Ana, the user's sister"), "{:#?}", texts(&hits));
    // The passage of the episode that noted the fact, and the message in
    // view that names her.
    assert!(hits
        .iter()
        .any(|h| matches!(h.item, Item::Passage(_)) && h.text.contains("My sister Ana")));
    assert!(hits
        .iter()
        .any(|h| matches!(h.item, Item::Message(_)) && h.text.contains("Ana phoned")));
    assert!(!says(&hits, "Miso"), "{:#?}", texts(&hits));
    let unknown = search(
        &mut r,
        SearchFilter {
            entity: Some(9_999),
            ..SearchFilter::default()
        },
    );
    assert!(unknown.is_empty());
}

#[test]
fn a_metadata_filter_matches_top_level_keys_by_json_equality() {
    let mut r = world();
    let meta = |v: Value| SearchFilter {
        metadata: v.as_object().unwrap().clone(),
        ..SearchFilter::default()
    };
    let slack = search(&mut r, meta(json!({"source": "slack"})));
    assert!(says(&slack, "Ana, the user's sister") && says(&slack, "phoned"));
    assert!(!says(&slack, "Miso the cat is"), "{:#?}", texts(&slack));
    let sources = source_messages(&mut r, &slack);
    assert!(sources
        .iter()
        .all(|m| m.metadata.as_ref().unwrap()["source"] == "slack"));
    // A nested value is compared whole.
    let team = search(&mut r, meta(json!({"team": {"name": "core"}})));
    assert!(says(&team, "Ana, the user's sister") && !says(&team, "phoned"));
    assert!(search(&mut r, meta(json!({"team": {"name": "other"}}))).is_empty());
    // Every key must match.
    let both = search(
        &mut r,
        meta(json!({"source": "email", "team": {"name": "core"}})),
    );
    assert!(both.is_empty(), "{both:#?}");
    let email = search(&mut r, meta(json!({"source": "email"})));
    assert!(says(&email, "Miso the cat is allergic") && !says(&email, "Ana"));
}

#[test]
fn a_filter_finds_an_item_ranked_below_the_unfiltered_top_k() {
    let mut r = rig(config());
    // Sixty short facts about Porto rank above the one long fact that
    // also names it, in every list.
    for batch in 0..6 {
        let facts: Vec<Value> = (0..10)
            .map(|i| {
                let who = format!("Person{batch}x{i}");
                fact(&who, "lives in", "Porto", &format!("{who} lives in Porto."))
            })
            .collect();
        r.facts_for(&format!("batch{batch}"), facts);
        r.turn(&format!("batch{batch}: friends in Porto."), "Lovely.");
    }
    r.facts_for(
        "harbour festival",
        vec![fact(
            "Zed",
            "described",
            "harbour festival",
            "Zed described the harbour festival with lanterns, drums, pastries, dancing \
             sailors, fireworks, choirs, ferries and one evening in Porto.",
        )],
    );
    said(
        &mut r,
        "travel",
        json!({"tag": "needle"}),
        "Zed told me about the harbour festival.",
        "Sounds fun.",
    );
    r.forget(7);
    let needle = |hits: &[SearchHit]| hits.iter().any(|h| h.text.starts_with("Zed described"));
    let facts_only = SearchFilter {
        kinds: vec![ItemKind::Fact],
        ..SearchFilter::default()
    };
    let unfiltered = block_on(r.memory.search(
        "Porto",
        SearchOptions {
            limit: 40,
            filter: facts_only.clone(),
            ..SearchOptions::default()
        },
    ))
    .unwrap();
    assert_eq!(unfiltered.len(), 40);
    assert!(!needle(&unfiltered), "the needle ranks below the top 40");
    for filter in [
        SearchFilter {
            metadata: json!({"tag": "needle"}).as_object().unwrap().clone(),
            ..facts_only.clone()
        },
        SearchFilter {
            thread: Some("travel".into()),
            ..facts_only.clone()
        },
    ] {
        let hits = block_on(r.memory.search(
            "Porto",
            SearchOptions {
                limit: 1,
                filter: filter.clone(),
                ..SearchOptions::default()
            },
        ))
        .unwrap();
        assert!(needle(&hits), "{filter:?}: {hits:#?}");
        // Within a budget too, and with the walk.
        for (walk, budget) in [(false, Some(200)), (true, None)] {
            let hits = block_on(r.memory.search(
                "Porto",
                SearchOptions {
                    limit: 3,
                    walk,
                    budget_tokens: budget,
                    filter: filter.clone(),
                    ..SearchOptions::default()
                },
            ))
            .unwrap();
            assert!(needle(&hits), "{filter:?} walk {walk}: {hits:#?}");
            assert!(hits.iter().all(|h| h.text.starts_with("Zed")), "{hits:#?}");
        }
    }
}

#[test]
fn metadata_round_trips_through_messages_export_and_import() {
    let mut r = world();
    let messages = block_on(r.memory.messages()).unwrap();
    assert_eq!(
        messages[0].metadata,
        Some(json!({"source": "slack", "team": {"name": "core"}}))
    );
    assert_eq!(messages[2].metadata, Some(json!({"source": "email"})));
    let plain: Vec<&engram::Message> = messages.iter().filter(|m| m.metadata.is_none()).collect();
    assert!(!plain.is_empty(), "the fillers carry none");
    // A message without metadata is written as before: no field.
    let json = serde_json::to_value(plain[0]).unwrap();
    assert!(json.get("metadata").is_none());
    // Reopened from the store.
    let mut again = block_on(Memory::open(
        "recall",
        r.store.clone(),
        r.model.clone(),
        r.clock.clone(),
        config(),
    ))
    .unwrap();
    assert_eq!(block_on(again.messages()).unwrap(), messages);
    // Exported and imported.
    let export = block_on(r.memory.export()).unwrap();
    assert!(export.contains("\"team\""));
    let mut copy = block_on(Memory::open(
        "copy",
        MemoryStore::new(),
        r.model.clone(),
        r.clock.clone(),
        config(),
    ))
    .unwrap();
    block_on(copy.import(&export)).expect("import");
    assert_eq!(block_on(copy.messages()).unwrap(), messages);
    // Metadata filters work on the copy.
    let hits = block_on(copy.search(
        QUERY,
        SearchOptions {
            filter: SearchFilter {
                metadata: json!({"source": "email"}).as_object().unwrap().clone(),
                ..SearchFilter::default()
            },
            ..SearchOptions::default()
        },
    ))
    .unwrap();
    assert!(says(&hits, "Miso the cat is allergic"));
}

#[test]
fn erase_takes_a_messages_metadata() {
    let mut r = world();
    let marker = "Quixotic-Channel-7";
    said(
        &mut r,
        "work",
        json!({"channel": marker}),
        "Remember the lanterns.",
        "Sure.",
    );
    let messages = block_on(r.memory.messages()).unwrap();
    let m = messages
        .iter()
        .find(|m| m.content == "Remember the lanterns.")
        .unwrap()
        .id;
    block_on(r.memory.erase(Target::Message(m))).unwrap();
    block_on(r.memory.erase(Target::Message(m + 1))).unwrap();
    let after = block_on(r.memory.messages()).unwrap();
    assert!(after[m as usize - 1].erased && after[m as usize - 1].metadata.is_none());
    assert!(after[m as usize].metadata.is_none());
    for (_, value) in r.store.dump() {
        assert!(
            !value.windows(marker.len()).any(|w| w == marker.as_bytes()),
            "the metadata is still stored"
        );
    }
    assert!(!block_on(r.memory.export()).unwrap().contains(marker));
    // Other messages keep theirs.
    assert_eq!(after[0].metadata, messages[0].metadata);
    let hits = search(
        &mut r,
        SearchFilter {
            metadata: json!({"channel": marker}).as_object().unwrap().clone(),
            ..SearchFilter::default()
        },
    );
    assert!(hits.is_empty());
}

#[test]
fn bad_metadata_is_refused_and_nothing_is_written() {
    let mut r = world();
    let before = block_on(r.memory.export()).unwrap();
    let mut deep = json!("bottom");
    for _ in 0..9 {
        deep = json!({ "d": deep });
    }
    let cases = [
        (json!("a string"), "JSON object"),
        (json!([1, 2]), "JSON object"),
        (json!(null), "JSON object"),
        (json!({"big": "x".repeat(5_000)}), "bytes"),
        (deep, "levels deep"),
    ];
    for (meta, says) in cases {
        let e = block_on(
            r.memory
                .add_message(NewMessage::user("Hello there.").with_metadata(meta.clone())),
        )
        .expect_err("refused");
        assert_eq!(e.code(), "invalid-input", "{meta}");
        assert!(e.to_string().contains(says), "{meta}: {e}");
    }
    // Within the bounds: 8 levels, 4 KiB.
    let mut eight = json!(1);
    for _ in 0..8 {
        eight = json!({ "d": eight });
    }
    assert_eq!(
        block_on(r.memory.export()).unwrap(),
        before,
        "nothing written"
    );
    block_on(
        r.memory
            .add_message(NewMessage::user("Deep enough.").with_metadata(eight)),
    )
    .expect("eight levels");
    // Metadata given as JSON text reads as a message does.
    let read: NewMessage = engram::base::codec::from_json(
        r#"{"role": "user", "content": "x", "metadata": {"a": [1, {"b": null}], "n": -2.5}}"#,
    )
    .unwrap();
    assert_eq!(
        read.metadata,
        Some(json!({"a": [1, {"b": null}], "n": -2.5}))
    );
    let bytes = engram::base::codec::to_bytes(&read);
    assert_eq!(
        engram::base::codec::from_bytes::<NewMessage>(&bytes).unwrap(),
        read
    );
}

#[test]
fn a_bad_filter_is_refused_with_what_is_wrong() {
    let mut r = world();
    let before = block_on(r.memory.export()).unwrap();
    let many: serde_json::Map<String, Value> =
        (0..17).map(|i| (format!("k{i}"), json!(i))).collect();
    let cases = [
        (
            SearchFilter {
                thread: Some(String::new()),
                ..SearchFilter::default()
            },
            "thread",
        ),
        (
            SearchFilter {
                from: Some(T0 + 1),
                to: Some(T0),
                ..SearchFilter::default()
            },
            "after",
        ),
        (
            SearchFilter {
                kinds: vec![ItemKind::Fact, ItemKind::Fact],
                ..SearchFilter::default()
            },
            "twice",
        ),
        (
            SearchFilter {
                metadata: many,
                ..SearchFilter::default()
            },
            "keys",
        ),
        (
            SearchFilter {
                metadata: json!({"k": "x".repeat(5_000)}).as_object().unwrap().clone(),
                ..SearchFilter::default()
            },
            "bytes",
        ),
        (
            SearchFilter {
                entity: Some(0),
                ..SearchFilter::default()
            },
            "entity",
        ),
    ];
    for (filter, says) in cases {
        let options = SearchOptions {
            filter: filter.clone(),
            ..SearchOptions::default()
        };
        let e = block_on(r.memory.search(QUERY, options)).expect_err("refused");
        assert_eq!(e.code(), "invalid-input", "{filter:?}");
        assert!(e.to_string().contains(says), "{filter:?}: {e}");
    }
    // An unknown kind or field is refused as the options are read.
    let unknown: Result<SearchOptions, _> =
        engram::base::codec::from_json(r#"{"filter": {"kinds": ["episode"]}}"#);
    assert!(unknown.is_err());
    let unknown: Result<SearchOptions, _> =
        engram::base::codec::from_json(r#"{"filter": {"threads": ["a"]}}"#);
    assert!(unknown.is_err());
    let good: SearchOptions = engram::base::codec::from_json(
        r#"{"limit": 3, "filter": {"thread": "work", "from": 1, "to": 2, "kinds": ["fact", "message"], "entity": 1, "metadata": {"a": {"b": [1]}}}}"#,
    )
    .unwrap();
    assert_eq!(good.filter.kinds, vec![ItemKind::Fact, ItemKind::Message]);
    assert_eq!(
        block_on(r.memory.export()).unwrap(),
        before,
        "nothing written"
    );
}
