//! The word indexes (BM25 over facts and passages) as a memory keeps them:
//! saved beside the log once they hold 4,096 documents, read back by a fresh
//! handle instead of being built from every fact, and bound to the log entry
//! they were saved after. A missing, damaged or stale copy is not used: the
//! handle builds them from the log and reports it; whichever way a handle
//! got them, it ranks bit for bit as a handle that built them itself. An
//! erasure deletes the copy (it holds words) in the same write as the
//! rewritten log, and the copy saved after holds none of the erased words.
//!
//! The memory is made by import: one real note gives a fact event, copied
//! into 4,500 facts of varied words (above the 4,096 documents from which
//! the word indexes are stored).

mod common;

use common::{Fx, DAY, NEW};
use engram::testing::{block_on, MemoryStore};
use engram::types::recall::SearchOptions;
use engram::Config;
use engram::NoteArgs;
use serde_json::{json, Value};

const FACTS: usize = 4_500;
const DIM: usize = 16;
const SYLLABLES: [&str; 16] = [
    "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "bre", "dun", "fal", "gor", "hin", "jus",
    "pel", "wex",
];

/// A pseudo-word for `n` (two or three syllables).
fn word(n: usize) -> String {
    let mut w = String::new();
    let mut k = n;
    for _ in 0..2 + n % 2 {
        w.push_str(SYLLABLES[k % SYLLABLES.len()]);
        k /= SYLLABLES.len();
    }
    w
}

/// The one fact of the big export with a word no other has.
const RARE: u64 = 77;

/// The sentence of fact `id` of the big export.
fn sentence(id: u64) -> String {
    let i = id as usize;
    if id == RARE {
        return "Alice likes zanzibarish tea.".into();
    }
    format!(
        "Alice likes {} {} with {} tea number {id}.",
        word(i * 7 % 997),
        word(i * 13 % 211),
        word(i % 53)
    )
}

/// An export of `FACTS` facts about one pair of entities, each with its own
/// sentence and vector.
fn big_export() -> String {
    let mut export: Value = serde_json::from_str(&common::one_fact_export(DIM)).unwrap();
    let log = export["log"].as_array_mut().unwrap();
    let (at, fact) = common::first_fact_event(log);
    let embedder = engram::testing::HashEmbedder { dimension: DIM };
    let mut seq = log.last().unwrap()["seq"].as_u64().unwrap();
    let mut id = fact["id"].as_u64().unwrap();
    for _ in 0..FACTS / 100 {
        let events: Vec<Value> = (0..100)
            .map(|_| {
                id += 1;
                let mut f = fact.clone();
                f["id"] = json!(id);
                let text = sentence(id);
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

fn words_key(fx: &Fx) -> String {
    format!("engram/{}/ix/words", fx.namespace)
}

/// A memory of `big_export`, its word indexes saved by the import, then a
/// turn and a note after it (entries the stored copy does not hold).
fn imported() -> Fx {
    let config = Config {
        graph_rows_per_maintain: 0,
        ..Config::default()
    };
    let mut fx = Fx::new(config);
    fx.model
        .set_embedder(engram::testing::HashEmbedder { dimension: DIM });
    common::standard_segment(&fx.model);
    block_on(fx.memory.import(&big_export())).expect("import");
    assert!(
        fx.store.peek(&words_key(&fx)).is_some(),
        "saved by the import"
    );
    fx.clock.advance(DAY / 24);
    fx.turn("coffee", 30, 30);
    fx.user(&format!("{NEW} later"));
    fx.note(NoteArgs {
        episode: None,
        facts: vec![
            common::fact("Bob", "drinks", "coffee", "Bob drinks dunvi coffee daily."),
            common::fact(
                "Alice",
                "visits",
                "Lisbon",
                "Alice visits Lisbon with kalo.",
            ),
        ],
    })
    .expect("note");
    fx
}

/// A handle over a copy of `fx`'s store without its stored word indexes:
/// one that builds them from the log.
fn built_itself(fx: &Fx) -> Fx {
    let store = MemoryStore::new();
    for (k, v) in fx.store.dump() {
        if k != words_key(fx) {
            store.poke(&k, Some(&v));
        }
    }
    Fx::with(
        &fx.namespace,
        store,
        fx.model.clone(),
        fx.clock.clone(),
        fx.config.clone(),
    )
}

/// Queries over the facts' words, passages' words and words in no document.
fn queries() -> Vec<String> {
    let mut q: Vec<String> = (0..40)
        .map(|i| format!("{} {} tea", word(i * 31 % 997), word(i % 53)))
        .collect();
    q.extend(
        [
            "Alice likes tea",
            "dunvi coffee",
            "Lisbon kalo",
            "next later",
            "nothing here matches",
        ]
        .map(String::from),
    );
    q
}

/// Every query's results, scores spelled out to the last bit.
fn results(fx: &mut Fx) -> Vec<String> {
    let options = SearchOptions {
        limit: 20,
        walk: false,
        include_in_view: true,
        budget_tokens: None,
        ..SearchOptions::default()
    };
    queries()
        .iter()
        .map(|q| {
            format!(
                "{:?}",
                block_on(fx.memory.search(q, options.clone())).unwrap()
            )
        })
        .collect()
}

#[test]
fn a_fresh_handle_reads_the_stored_word_index_and_ranks_as_one_that_built_it() {
    let mut fx = imported();
    let mut fresh = fx.reopen();
    assert!(
        fresh.memory.storage_warnings().is_empty(),
        "{:?}",
        fresh.memory.storage_warnings()
    );
    let mut own = built_itself(&fx);
    let warnings = own.memory.storage_warnings().to_vec();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("not stored"), "{warnings:?}");

    let want = results(&mut fx);
    assert!(want.iter().filter(|r| r.len() > 2).count() > 40);
    assert_eq!(results(&mut fresh), want);
    assert_eq!(results(&mut own), want);

    // And after the same message to each (over their own stores), with
    // the relevance walk on.
    for h in [&mut fresh, &mut own] {
        h.user("what about dunvi coffee and kalo tea?");
    }
    let walk = SearchOptions {
        limit: 20,
        walk: true,
        include_in_view: true,
        budget_tokens: None,
        ..SearchOptions::default()
    };
    let walked = |h: &mut Fx| {
        queries()
            .iter()
            .map(|q| format!("{:?}", block_on(h.memory.search(q, walk.clone())).unwrap()))
            .collect::<Vec<_>>()
    };
    assert_eq!(walked(&mut fresh), walked(&mut own));
    assert_eq!(results(&mut fresh), results(&mut own));
}

#[test]
fn a_damaged_or_stale_word_index_is_built_again_and_reported() {
    let fx = imported();
    let key = words_key(&fx);
    let good = fx.store.peek(&key).unwrap();
    let mut reference = built_itself(&fx);
    let want = results(&mut reference);
    // The header: magic, version, the entry it was saved after and the
    // erasures so far (LEB128), then that entry's checksum and the body's.
    let head: Value = serde_json::from_slice(
        &fx.store
            .peek(&format!("engram/{}/head", fx.namespace))
            .unwrap(),
    )
    .unwrap();
    let seq = head["seq"].as_u64().unwrap();
    let mut at = 5;
    engram::base::codec::wire::get_varint(&good, &mut at).unwrap();
    let seq_end = at;
    engram::base::codec::wire::get_varint(&good, &mut at).unwrap();
    let sum_at = at;
    let with_seq = |s: u64| {
        let mut b = good[..5].to_vec();
        engram::base::codec::wire::put_varint(&mut b, s);
        b.extend_from_slice(&good[seq_end..]);
        b
    };
    let past_end = with_seq(seq + 1);
    let other_entry = with_seq(seq);
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x24;
    let mut fingerprint = good.clone();
    fingerprint[sum_at] ^= 1;
    // A copy of the previous layout (version 2: postings not delta-coded).
    let mut older = good.clone();
    older[4] = 2;
    let cases: Vec<(&str, Option<Vec<u8>>, &str)> = vec![
        (
            "truncated",
            Some(good[..good.len() / 2].to_vec()),
            "checksum",
        ),
        ("flipped", Some(flipped), "checksum"),
        ("not ours", Some(b"EWIX\x09".to_vec()), "version"),
        ("an older layout", Some(older), "version"),
        ("past the end", Some(past_end), "past the log's end"),
        ("another entry", Some(other_entry), "another entry"),
        ("fingerprint", Some(fingerprint), "another entry"),
        ("missing", None, "not stored"),
    ];
    for (case, value, why) in cases {
        fx.store.poke(&key, value.as_deref());
        let mut h = fx.reopen();
        let warnings = h.memory.storage_warnings().to_vec();
        assert_eq!(warnings.len(), 1, "{case}: {warnings:?}");
        assert!(warnings[0].contains("word index"), "{case}: {warnings:?}");
        assert!(warnings[0].contains(why), "{case}: {warnings:?}");
        assert_eq!(results(&mut h), want, "{case}");
    }
    // The next change saves it again; a third handle reads it cleanly.
    fx.store.poke(&key, None);
    let mut h = fx.reopen();
    h.user("and one more thing about tea");
    let saved = fx.store.peek(&key).expect("saved again");
    assert_ne!(saved, good);
    let mut third = fx.reopen();
    assert!(third.memory.storage_warnings().is_empty());
    let mut own = built_itself(&third);
    assert_eq!(results(&mut third), results(&mut own));
}

#[test]
fn an_erase_deletes_the_stored_word_index_and_keeps_the_erased_words_out_of_the_next() {
    let mut fx = imported();
    let key = words_key(&fx);
    let rare = fx
        .facts()
        .into_iter()
        .find(|f| f.sentence.contains("zanzibarish"))
        .expect("the fact with the rare word");
    assert!(contains(&fx.store.peek(&key).unwrap(), b"zanzibarish"));
    block_on(fx.memory.erase(engram::types::erase::Target::Fact(rare.id))).expect("erase");
    let saved = fx.store.peek(&key).expect("saved again after the erase");
    assert!(
        !contains(&saved, b"zanzibarish"),
        "the erased word is in the copy"
    );
    let mut fresh = fx.reopen();
    assert!(
        fresh.memory.storage_warnings().is_empty(),
        "{:?}",
        fresh.memory.storage_warnings()
    );
    let mut own = built_itself(&fx);
    let want = results(&mut own);
    assert_eq!(results(&mut fresh), want);
    assert_eq!(results(&mut fx), want);
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
