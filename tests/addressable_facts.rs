//! Facts the host can address: `remember` (a fact the host states, at any
//! time, as a triple or a sentence the note model reads), `fact(id)`, the
//! paged listings with their cursors, `history(id)` and `revise(id, ..)`
//! (a new fact that retires the old one); bad input changes nothing.

mod common;

use common::*;
use engram::testing::block_on;
use engram::types::fact::HOST;
use engram::{
    Config, EpisodeFilter, EpisodeState, Error, FactFilter, FactKind, HistoryEntry, MessageFilter,
    PageOptions, Remembered, Statement, Task,
};
use serde_json::{json, Value};

fn remember(fx: &mut Fx, s: impl Into<Statement>) -> engram::Result<Remembered> {
    block_on(fx.memory.remember(s))
}

fn ana_lisbon() -> engram::NewFact {
    fact("Ana", "lives in", "Lisbon", "Ana lives in Lisbon.")
}

fn ana_porto() -> engram::NewFact {
    fact("Ana", "lives in", "Porto", "Ana lives in Porto.")
}

/// Reconcile rule: a new fact naming `new` contradicts every held fact
/// listed whose line names `old`.
fn contradicts(fx: &Fx, new: &'static str, old: &'static str) {
    fx.model.on(Task::Reconcile, move |req| {
        let (head, held) = req.content.split_once("Held facts:")?;
        if !head.contains(new) {
            return None;
        }
        let judgments: Vec<Value> = held
            .lines()
            .filter_map(|l| l.split_once(". ").filter(|(_, rest)| rest.contains(old)))
            .map(|(n, _)| json!({"fact": n.trim().parse::<usize>().unwrap(), "relation": "contradicts"}))
            .collect();
        Some(json!({ "judgments": judgments }).to_string())
    });
}

fn invalid<T: std::fmt::Debug>(r: engram::Result<T>, says: &str) {
    match r {
        Err(Error::InvalidInput(m)) => assert!(m.contains(says), "{m:?} should say {says:?}"),
        other => panic!("expected InvalidInput ({says}), got {other:?}"),
    }
}

#[test]
fn a_new_memory_remembers_a_stated_fact_whose_source_is_the_host() {
    let mut fx = Fx::new(Config::default());
    // note() has no episode to write into yet, and says what to use.
    invalid(fx.note(note_args(None, vec![ana_lisbon()])), "remember");
    let done = remember(&mut fx, ana_lisbon()).expect("remember");
    assert_eq!(
        done,
        Remembered {
            fact: 1,
            merged: false,
            retired: vec![]
        }
    );
    let f = block_on(fx.memory.fact(1)).unwrap().expect("fact 1");
    assert_eq!(f.sentence, "Ana lives in Lisbon.");
    assert_eq!((f.episode, f.said_at, f.noted_at), (HOST, T0, T0));
    assert!(f.is_stated() && f.is_live());
    assert_eq!(fx.entity_named("Ana").id, f.subject);
    assert_eq!(fx.entity_named("Lisbon").id, f.object);
    // It is in the log: another handle reads it back.
    let mut other = fx.reopen();
    assert_eq!(other.facts(), vec![f.clone()]);
    // And it is found like any fact.
    let hits = block_on(
        other
            .memory
            .search("Where does Ana live?", Default::default()),
    )
    .unwrap();
    assert!(
        hits.iter().any(|h| h.item == engram::Item::Fact(1)),
        "{hits:?}"
    );
    let why = other.explain_fact(1);
    assert!(
        why.summary.contains("stated by the host"),
        "{}",
        why.summary
    );
}

#[test]
fn a_stated_sentence_becomes_the_triple_the_note_model_reads_in_it() {
    let mut fx = Fx::new(Config::default());
    fx.model.on(Task::Note, |req| {
        req.content
            .contains("user: Ana moved to Porto.")
            .then(|| note_json(&[ana_porto()]))
    });
    let done = remember(&mut fx, "Ana moved to Porto.").expect("remember");
    assert_eq!(done.fact, 1);
    let f = fx.facts().remove(0);
    assert_eq!(
        (f.predicate.as_str(), f.sentence.as_str()),
        ("lives in", "Ana lives in Porto.")
    );
    assert_eq!(fx.model.calls_of(Task::Note).len(), 1);
    // A sentence the model reads no fact in is refused, and writes nothing.
    let writes = fx.store.writes();
    invalid(remember(&mut fx, "Hello there."), "no fact");
    assert_eq!((fx.store.writes(), fx.facts().len()), (writes, 1));
}

#[test]
fn a_stated_fact_merges_into_and_retires_held_facts_like_a_noted_one() {
    let mut fx = Fx::new(Config::default());
    remember(&mut fx, ana_lisbon()).unwrap();
    fx.clock.advance(MIN);
    // The same triple again merges into fact 1.
    let again = fact("ana", "Lives In", "lisbon", "Ana is living in Lisbon.");
    let merged = remember(&mut fx, again).unwrap();
    assert_eq!(
        merged,
        Remembered {
            fact: 1,
            merged: true,
            retired: vec![]
        }
    );
    assert_eq!(fx.facts().len(), 1);
    fx.clock.advance(MIN);
    contradicts(&fx, "Porto", "Lisbon");
    let moved = remember(&mut fx, ana_porto()).unwrap();
    assert_eq!(
        moved,
        Remembered {
            fact: 2,
            merged: false,
            retired: vec![1]
        }
    );
    let old = block_on(fx.memory.history(1)).unwrap();
    assert!(!old.live);
    assert_eq!(
        old.entries,
        vec![
            HistoryEntry::Added {
                episode: HOST,
                sentence: "Ana lives in Lisbon.".into(),
                at: T0
            },
            HistoryEntry::Merged {
                episode: HOST,
                sentence: "Ana is living in Lisbon.".into(),
                at: T0 + MIN
            },
            HistoryEntry::RetiredBy {
                fact: 2,
                at: T0 + 2 * MIN
            },
        ]
    );
    let new = block_on(fx.memory.history(2)).unwrap();
    assert!(new.live);
    assert_eq!(
        new.entries[1..],
        [HistoryEntry::Retired {
            fact: 1,
            at: T0 + 2 * MIN
        }]
    );
}

#[test]
fn a_noted_fact_contradicting_a_stated_one_retires_it_and_history_names_the_episode() {
    let mut fx = Fx::new(config(10_000));
    standard_segment(&fx.model);
    remember(&mut fx, ana_lisbon()).unwrap();
    fx.minutes(5);
    fx.turn("moving", 30, 30);
    fx.user(&format!("{NEW} next"));
    contradicts(&fx, "Porto", "Lisbon");
    let noted = fx
        .note(note_args(Some(1), vec![ana_porto()]))
        .expect("note");
    assert_eq!(
        (noted.added.clone(), noted.retired.clone()),
        (vec![2], vec![1])
    );
    let h = block_on(fx.memory.history(2)).unwrap();
    match &h.entries[0] {
        HistoryEntry::Added { episode, .. } => assert_eq!(*episode, 1),
        e => panic!("{e:?}"),
    }
    assert!(matches!(
        h.entries[1],
        HistoryEntry::Retired { fact: 1, .. }
    ));
}

#[test]
fn revise_writes_a_new_fact_that_retires_the_old_one() {
    let mut fx = Fx::new(Config::default());
    remember(&mut fx, ana_lisbon()).unwrap();
    fx.clock.advance(MIN);
    // No reconcile rule: the model sees no contradiction, revise retires
    // fact 1 all the same.
    let done = block_on(fx.memory.revise(1, ana_porto())).expect("revise");
    assert_eq!(
        done,
        Remembered {
            fact: 2,
            merged: false,
            retired: vec![1]
        }
    );
    let facts = fx.facts();
    assert_eq!(
        facts[0].retired.as_ref().map(|r| (r.by, r.at)),
        Some((2, T0 + MIN))
    );
    assert!(facts[1].is_live() && facts[1].is_stated());
    assert_eq!(
        block_on(fx.memory.history(1)).unwrap().entries.last(),
        Some(&HistoryEntry::RetiredBy {
            fact: 2,
            at: T0 + MIN
        })
    );
    // A retired fact is revised through the one that retired it.
    invalid(
        block_on(fx.memory.revise(1, "Ana lives in Faro.")),
        "already retired",
    );
    // A revision that says the same changes nothing.
    let (writes, before) = (fx.store.writes(), fx.facts());
    invalid(block_on(fx.memory.revise(2, ana_porto())), "already says");
    assert_eq!((fx.store.writes(), fx.facts()), (writes, before.clone()));
    assert_eq!(fx.reopen().facts(), before);
}

#[test]
fn revise_by_a_sentence_restating_another_held_fact_retires_through_that_fact() {
    let mut fx = Fx::new(Config::default());
    remember(&mut fx, ana_lisbon()).unwrap();
    remember(
        &mut fx,
        fact("Ana", "works at", "Acme", "Ana works at Acme."),
    )
    .unwrap();
    let done = block_on(
        fx.memory
            .revise(1, fact("Ana", "works at", "Acme", "Ana works at Acme.")),
    )
    .unwrap();
    assert_eq!(
        done,
        Remembered {
            fact: 2,
            merged: true,
            retired: vec![1]
        }
    );
    assert_eq!(fx.facts()[0].retired.as_ref().map(|r| r.by), Some(2));
}

#[test]
fn fact_by_id_is_the_fact_or_none() {
    let mut fx = Fx::new(Config::default());
    assert_eq!(block_on(fx.memory.fact(1)).unwrap(), None);
    remember(&mut fx, ana_lisbon()).unwrap();
    assert_eq!(block_on(fx.memory.fact(1)).unwrap().map(|f| f.id), Some(1));
    assert_eq!(block_on(fx.memory.fact(2)).unwrap(), None);
    invalid(block_on(fx.memory.fact(0)), "start at 1");
    // An erased fact is returned, marked.
    block_on(fx.memory.erase(engram::Target::Fact(1))).unwrap();
    let f = block_on(fx.memory.fact(1)).unwrap().unwrap();
    assert!(f.erased && f.sentence.is_empty());
    assert_eq!(
        block_on(fx.memory.history(1)).unwrap().entries.last(),
        Some(&HistoryEntry::Erased)
    );
}

#[test]
fn bad_input_is_refused_before_any_work_and_changes_nothing() {
    let mut fx = Fx::new(Config::default());
    remember(&mut fx, ana_lisbon()).unwrap();
    let (writes, calls, facts) = (fx.store.writes(), fx.model.calls().len(), fx.facts());
    invalid(remember(&mut fx, "   "), "empty sentence");
    invalid(remember(&mut fx, "x".repeat(2_001)), "at most 2000");
    invalid(
        remember(&mut fx, fact("Ana", "likes", " ", "Ana likes.")),
        "empty object",
    );
    let mut sourced = ana_porto();
    sourced.sources = vec![1];
    invalid(remember(&mut fx, sourced), "no source messages");
    invalid(
        block_on(fx.memory.revise(7, ana_porto())),
        "no fact 7: ids run 1..=1",
    );
    invalid(block_on(fx.memory.revise(1, "")), "empty sentence");
    invalid(block_on(fx.memory.history(9)), "no fact 9");
    let page = |limit: Option<usize>, cursor: Option<&str>| PageOptions {
        limit,
        cursor: cursor.map(str::to_string),
        filter: FactFilter::default(),
    };
    invalid(
        block_on(fx.memory.facts_page(page(Some(0), None))),
        "limit 0",
    );
    invalid(
        block_on(fx.memory.facts_page(page(Some(1_001), None))),
        "at most 1000",
    );
    invalid(
        block_on(fx.memory.facts_page(page(None, Some("nonsense")))),
        "bad cursor",
    );
    invalid(
        block_on(fx.memory.facts_page(page(None, Some("message:1")))),
        "bad cursor",
    );
    invalid(
        block_on(fx.memory.facts_page(page(None, Some("fact:0")))),
        "bad cursor",
    );
    invalid(
        block_on(fx.memory.facts_page(page(None, Some("fact:2")))),
        "no fact 2",
    );
    let filter = FactFilter {
        entity: Some(0),
        ..Default::default()
    };
    invalid(
        block_on(fx.memory.facts_page(PageOptions {
            filter,
            ..Default::default()
        })),
        "entity ids start at 1",
    );
    let thread = MessageFilter {
        thread: Some("bad thread!".into()),
    };
    assert!(block_on(fx.memory.messages_page(PageOptions {
        filter: thread,
        ..Default::default()
    }))
    .is_err());
    assert_eq!(
        (fx.store.writes(), fx.model.calls().len(), fx.facts()),
        (writes, calls, facts)
    );
}

/// An export holding `n` facts the host stated, each about its own pair of
/// entities (built from a memory of one stated fact).
fn stated_export(n: u64) -> String {
    let mut fx = Fx::new(Config::default());
    fx.model
        .set_embedder(engram::testing::HashEmbedder { dimension: 16 });
    remember(&mut fx, fact("Alice", "likes", "tea", "Alice likes tea.")).unwrap();
    let mut export: Value = serde_json::from_str(&fx.export()).unwrap();
    let log = export["log"].as_array_mut().unwrap();
    let (at, template) = first_fact_event(log);
    let embedder = engram::testing::HashEmbedder { dimension: 16 };
    let mut seq = log.last().unwrap()["seq"].as_u64().unwrap();
    let mut id = 1;
    while id < n {
        let events: Vec<Value> = (0..500.min(n - id))
            .map(|_| {
                id += 1;
                let mut f = template.clone();
                let text = format!("Alice likes tea number {id}.");
                f["id"] = json!(id);
                f["embedding"] = json!(engram::base::bytes::encode(&embedder.embed(&text)));
                f["sentence"] = json!(text);
                f
            })
            .collect();
        seq += 1;
        log.push(json!({"seq": seq, "id": format!("{seq:016x}"), "at": at, "events": events}));
    }
    export.to_string()
}

#[test]
fn a_cursor_walk_over_ten_thousand_facts_returns_each_once_in_order_while_facts_are_added() {
    let mut fx = Fx::new(Config::default());
    fx.model
        .set_embedder(engram::testing::HashEmbedder { dimension: 16 });
    block_on(fx.memory.import(&stated_export(10_000))).expect("import");
    assert_eq!(fx.facts().len(), 10_000);
    let (mut seen, mut cursor, mut pages, mut added) = (Vec::new(), None, 0, 0u64);
    loop {
        let options = PageOptions {
            limit: Some(1_000),
            cursor: cursor.take(),
            filter: FactFilter::default(),
        };
        let page = block_on(fx.memory.facts_page(options)).expect("page");
        seen.extend(page.items.iter().map(|f| f.id));
        pages += 1;
        // Two facts stated between pages, through the whole remember path.
        if pages <= 5 {
            for _ in 0..2 {
                added += 1;
                let subject = format!("Person {added}");
                let text = format!("{subject} likes coffee.");
                remember(&mut fx, fact(&subject, "likes", "coffee", &text)).expect("remember");
            }
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let total = 10_000 + added;
    assert_eq!(
        seen,
        (1..=total).collect::<Vec<u64>>(),
        "each once, in order"
    );
    assert_eq!(pages, 11, "ten full pages and the added facts'");
}

#[test]
fn a_filtered_page_says_there_is_no_next_page_exactly_at_the_end() {
    let mut fx = Fx::new(Config::default());
    for i in 0..7 {
        let kind = if i % 2 == 0 {
            FactKind::Preference
        } else {
            FactKind::Fact
        };
        let text = format!("Ana likes thing {i}.");
        remember(
            &mut fx,
            kind_fact(kind, "Ana", "likes", &format!("thing {i}"), &text),
        )
        .unwrap();
    }
    let filter = FactFilter {
        kinds: vec![FactKind::Preference],
        ..Default::default()
    };
    let first = block_on(fx.memory.facts_page(PageOptions {
        limit: Some(2),
        cursor: None,
        filter: filter.clone(),
    }))
    .unwrap();
    assert_eq!(first.items.iter().map(|f| f.id).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(first.next.as_deref(), Some("fact:3"));
    let last = block_on(fx.memory.facts_page(PageOptions {
        limit: Some(2),
        cursor: first.next,
        filter: filter.clone(),
    }))
    .unwrap();
    assert_eq!(
        (
            last.items.iter().map(|f| f.id).collect::<Vec<_>>(),
            last.next
        ),
        (vec![5, 7], None)
    );
    // Only stated, only retired.
    block_on(fx.memory.revise(7, "Ana likes thing seven.")).ok();
    let retired = FactFilter {
        live: Some(false),
        ..Default::default()
    };
    let page = block_on(fx.memory.facts_page(PageOptions {
        filter: retired,
        ..Default::default()
    }))
    .unwrap();
    assert!(page.items.iter().all(|f| !f.is_live()));
    let noted = FactFilter {
        stated: Some(false),
        ..Default::default()
    };
    assert!(block_on(fx.memory.facts_page(PageOptions {
        filter: noted,
        ..Default::default()
    }))
    .unwrap()
    .items
    .is_empty());
}

#[test]
fn messages_and_episodes_page_by_cursor_and_filter() {
    let mut fx = Fx::new(config(10_000));
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(&format!("{NEW} {t}"), 30, 30);
    }
    let walk = |fx: &mut Fx, limit, filter: MessageFilter| {
        let (mut ids, mut cursor) = (Vec::new(), None);
        loop {
            let options = PageOptions {
                limit: Some(limit),
                cursor,
                filter: filter.clone(),
            };
            let page = block_on(fx.memory.messages_page(options)).unwrap();
            ids.extend(page.items.iter().map(|m| m.id));
            cursor = page.next;
            if cursor.is_none() {
                return ids;
            }
        }
    };
    let all: Vec<u64> = fx.messages().iter().map(|m| m.id).collect();
    assert_eq!(walk(&mut fx, 4, MessageFilter::default()), all);
    fx.add(engram::NewMessage::user("in another thread").in_thread("side"));
    let side = walk(
        &mut fx,
        1,
        MessageFilter {
            thread: Some("side".into()),
        },
    );
    assert_eq!(side, vec![all.len() as u64 + 1]);
    let episodes = fx.episodes();
    assert!(episodes.len() >= 2, "{episodes:?}");
    let first = block_on(fx.memory.episodes_page(PageOptions {
        limit: Some(1),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(first.items[0], episodes[0]);
    assert_eq!(first.next.as_deref(), Some("episode:1"));
    let rest = block_on(fx.memory.episodes_page(PageOptions {
        limit: Some(1_000),
        cursor: first.next,
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(rest.items, episodes[1..]);
    let sealed = EpisodeFilter {
        states: vec![EpisodeState::Forgotten],
        ..Default::default()
    };
    let none = block_on(fx.memory.episodes_page(PageOptions {
        filter: sealed,
        ..Default::default()
    }))
    .unwrap();
    assert!(none.items.is_empty() && none.next.is_none());
}

#[test]
fn a_stated_fact_is_recalled_in_a_turn_and_distilled_without_an_episode_to_strengthen() {
    let model = engram::testing::ScriptedModel::new();
    let mut fx = Fx::with(
        "test",
        engram::testing::MemoryStore::new(),
        model,
        engram::testing::ManualClock::at(T0),
        Config::default(),
    );
    remember(&mut fx, ana_lisbon()).unwrap();
    fx.minutes(1);
    let added = fx.user("Where does Ana live these days?");
    let block = added.recall.expect("a recall block");
    let recalled = &fx.memory_recalls()[block as usize - 1];
    assert!(
        recalled
            .items
            .iter()
            .any(|r| r.item == engram::Item::Fact(1)),
        "{recalled:?}"
    );
    fx.assistant("In Lisbon.");
    let recalled = &fx.memory_recalls()[block as usize - 1];
    let kept = recalled.distilled.as_ref().expect("distilled");
    assert!(kept.kept.contains(&engram::Item::Fact(1)), "{kept:?}");
    // No trace names an episode for it: it has none.
    assert!(fx.traces().iter().all(|t| t.episode != HOST));
    assert_eq!(fx.reopen().facts(), fx.facts());
}

trait Recalls {
    fn memory_recalls(&mut self) -> Vec<engram::RecallBlock>;
}

impl Recalls for Fx {
    fn memory_recalls(&mut self) -> Vec<engram::RecallBlock> {
        block_on(self.memory.recalls()).unwrap()
    }
}

#[test]
fn the_offline_note_model_reads_a_stated_sentence_as_the_users_fact() {
    let mut memory = block_on(engram::Memory::open(
        "offline",
        engram::testing::MemoryStore::new(),
        engram::OfflineModel::new(),
        engram::testing::ManualClock::at(T0),
        Config::default(),
    ))
    .expect("open");
    let done = block_on(memory.remember("I prefer green tea over coffee.")).expect("remember");
    let f = block_on(memory.fact(done.fact)).unwrap().expect("the fact");
    assert!(f.is_stated(), "{f:?}");
    assert!(f.sentence.contains("green tea"), "{f:?}");
    assert_eq!(f.kind, FactKind::Preference, "{f:?}");
}
