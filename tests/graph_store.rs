//! The meaning graphs as a memory keeps them: linked by `maintain` off the
//! user's path, saved beside the log, read back by a fresh handle, and when
//! damaged or missing, not used (search exact, a storage warning) and linked
//! again.
//!
//! The memory is made by import: one real note gives a fact event, which is
//! copied into 4,500 facts with their own 16-dimension vectors (above the
//! 4,096 rows from which an index keeps a graph).

mod common;

use common::{Fx, DAY};
use engram::testing::block_on;
use engram::types::recall::SearchOptions;
use engram::Config;
use serde_json::{json, Value};

const FACTS: usize = 4_500;
const DIM: usize = 16;

fn lcg(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

/// A unit vector near one of 60 centres.
fn vector(seed: &mut u64, centres: &[Vec<f32>], i: usize) -> Vec<f32> {
    let c = &centres[i % centres.len()];
    let v: Vec<f32> = c.iter().map(|x| x + 0.3 * lcg(seed)).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

/// An export of `FACTS` facts about one pair of entities, each with its own
/// vector.
fn big_export() -> String {
    let mut export: Value = serde_json::from_str(&common::one_fact_export(DIM)).unwrap();
    let log = export["log"].as_array_mut().unwrap();
    let (at, fact) = common::first_fact_event(log);
    let mut seed = 11;
    let centres: Vec<Vec<f32>> = (0..60)
        .map(|_| (0..DIM).map(|_| lcg(&mut seed)).collect())
        .collect();
    let mut seq = log.last().unwrap()["seq"].as_u64().unwrap();
    let mut id = fact["id"].as_u64().unwrap();
    for chunk in 0..FACTS / 100 {
        let events: Vec<Value> = (0..100)
            .map(|k| {
                id += 1;
                let mut f = fact.clone();
                f["id"] = json!(id);
                f["sentence"] = json!(format!("Alice likes tea number {id}."));
                let v = vector(&mut seed, &centres, chunk * 100 + k);
                f["embedding"] = json!(engram::base::bytes::encode(&v));
                f
            })
            .collect();
        seq += 1;
        log.push(json!({"seq": seq, "id": format!("{seq:016x}"), "at": at, "events": events}));
    }
    export.to_string()
}

fn options() -> SearchOptions {
    SearchOptions {
        limit: 10,
        walk: false,
        include_in_view: true,
        budget_tokens: None,
        ..SearchOptions::default()
    }
}

/// Fact ids found for the vector of fact `id` (searched by its sentence's
/// embedding: the scripted embedder gives each text its own vector, so the
/// query is the sentence itself).
fn found(fx: &mut Fx, query: &str) -> Vec<u64> {
    block_on(fx.memory.search(query, options()))
        .expect("search")
        .into_iter()
        .filter_map(|h| match h.item {
            engram::types::recall::Item::Fact(id) => Some(id),
            _ => None,
        })
        .collect()
}

fn graph_key(fx: &Fx) -> String {
    format!("engram/{}/ix/facts", fx.namespace)
}

/// A memory of `big_export`, with `graph_rows_per_maintain` at `budget`.
fn imported(budget: usize) -> Fx {
    let config = Config {
        graph_rows_per_maintain: budget,
        ..Config::default()
    };
    let mut fx = Fx::new(config);
    fx.model
        .set_embedder(engram::testing::HashEmbedder { dimension: DIM });
    block_on(fx.memory.import(&big_export())).expect("import");
    fx
}

#[test]
fn maintain_links_the_graph_saves_it_and_a_fresh_handle_reads_it() {
    let mut fx = imported(100_000);
    assert!(
        fx.store.peek(&graph_key(&fx)).is_none(),
        "no graph before maintain"
    );
    let before = found(&mut fx, "Alice likes tea number 77.");

    fx.clock.advance(DAY / 24);
    fx.maintain();
    let saved = fx.store.peek(&graph_key(&fx)).expect("the graph is saved");
    assert!(saved.len() > FACTS * 8, "{} bytes", saved.len());
    let linked = found(&mut fx, "Alice likes tea number 77.");
    assert!(!linked.is_empty());
    // The graph finds what the exact scan found, at this size.
    assert_eq!(linked, before);

    let mut fresh = fx.reopen();
    assert!(fresh.memory.storage_warnings().is_empty());
    assert_eq!(found(&mut fresh, "Alice likes tea number 77."), linked);
    // Nothing is linked again: the graph read back was complete.
    fresh.maintain();
    assert_eq!(fresh.store.peek(&graph_key(&fresh)), Some(saved));
}

#[test]
fn a_damaged_graph_is_not_used_and_is_linked_again() {
    let mut fx = imported(100_000);
    fx.maintain();
    let want = found(&mut fx, "Alice likes tea number 1234.");
    let key = graph_key(&fx);
    let mut bytes = fx.store.peek(&key).unwrap();
    for damage in 0..3 {
        let value: Option<Vec<u8>> = match damage {
            0 => Some(bytes[..bytes.len() / 2].to_vec()),
            1 => {
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0x5a;
                Some(bytes.clone())
            }
            _ => None,
        };
        fx.store.poke(&key, value.as_deref());
        let mut fresh = fx.reopen();
        let warnings = fresh.memory.storage_warnings().to_vec();
        if damage < 2 {
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(
                warnings[0].contains("meaning graph of facts"),
                "{warnings:?}"
            );
        } else {
            assert!(warnings.is_empty(), "a missing graph is no damage");
        }
        // Searched exactly meanwhile: the same facts.
        assert_eq!(found(&mut fresh, "Alice likes tea number 1234."), want);
        fresh.maintain();
        assert!(fresh.memory.storage_warnings().len() == warnings.len());
        let again = fresh.store.peek(&key).expect("linked and saved again");
        let mut third = fresh.reopen();
        assert!(third.memory.storage_warnings().is_empty());
        assert_eq!(found(&mut third, "Alice likes tea number 1234."), want);
        bytes = again;
    }
}

#[test]
fn no_graph_is_built_when_maintain_may_link_none() {
    let mut fx = imported(0);
    fx.maintain();
    assert!(fx.store.peek(&graph_key(&fx)).is_none());
    assert!(!found(&mut fx, "Alice likes tea number 9.").is_empty());
}

#[test]
fn erasing_a_fact_drops_the_stored_graph_linked_over_it() {
    let mut fx = imported(100_000);
    fx.clock.advance(DAY / 24);
    fx.maintain();
    let saved = fx.store.peek(&graph_key(&fx)).expect("the graph is saved");
    block_on(fx.memory.erase(engram::Target::Fact(77))).expect("erased");
    assert_ne!(
        fx.store.peek(&graph_key(&fx)),
        Some(saved),
        "the graph linked over the erased vector is gone with it"
    );
    assert!(!found(&mut fx, "Alice likes tea number 77.").contains(&77));
    fx.maintain();
    let mut fresh = fx.reopen();
    assert!(
        fresh.memory.storage_warnings().is_empty(),
        "{:?}",
        fresh.memory.storage_warnings()
    );
    assert!(!found(&mut fresh, "Alice likes tea number 77.").contains(&77));
}
