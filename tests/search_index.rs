//! Search indexes: the meaning index ranks exactly as a brute-force cosine
//! scan (ties included), finds what was added after a search, and a memory
//! reopened from its store searches the same.

mod common;

use common::*;
use engram::index::vector::{search, VectorIndex};
use engram::testing::block_on;
use engram::types::recall::SearchOptions;

struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn vector(&mut self, dim: usize) -> Vec<f32> {
        let v: Vec<f32> = (0..dim).map(|_| self.unit()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }
}

#[test]
fn the_meaning_index_agrees_with_a_brute_force_scan_ties_included() {
    let mut rng = Rng(42);
    let dim = 384;
    let mut vs: Vec<Vec<f32>> = Vec::new();
    for i in 0..3_000 {
        vs.push(match i % 50 {
            // Exact duplicates of an earlier vector: ties broken by id.
            7 if i > 50 => vs[i - 50].clone(),
            // Not unit length: the index must still rank by cosine.
            9 => rng.vector(dim).iter().map(|x| x * 3.5).collect(),
            _ => rng.vector(dim),
        });
    }
    let mut ix = VectorIndex::default();
    for (i, v) in vs.iter().enumerate() {
        ix.push(i as u64 + 1, v);
    }
    let get = |id: u64| vs.get(id as usize - 1).map(|v| v.as_slice());
    for t in 0..40 {
        // Some queries are stored vectors, so their duplicates tie at the top.
        let q = if t % 3 == 0 {
            vs[(t * 97) % vs.len()].clone()
        } else {
            rng.vector(dim)
        };
        let (limit, min) = [(20, 0.25), (10, -1.0), (1, 0.0), (200, 0.05)][t % 4];
        let keep = |id: u64| id % 11 != 4;
        let items = vs
            .iter()
            .enumerate()
            .map(|(i, v)| (i as u64 + 1, v.as_slice()));
        assert_eq!(
            ix.search(&q, limit, min, keep, get),
            search(&q, items, limit, min, keep),
            "query {t}"
        );
    }
}

#[test]
fn a_vector_added_after_a_search_is_found_by_the_next_search() {
    let mut rng = Rng(5);
    let mut vs: Vec<Vec<f32>> = (0..500).map(|_| rng.vector(64)).collect();
    let mut ix = VectorIndex::default();
    for (i, v) in vs.iter().enumerate() {
        ix.push(i as u64 + 1, v);
    }
    let q = rng.vector(64);
    let before = ix.search(
        &q,
        5,
        -1.0,
        |_| true,
        |id| vs.get(id as usize - 1).map(|v| v.as_slice()),
    );
    assert_eq!(before.len(), 5);
    vs.push(q.clone());
    ix.push(vs.len() as u64, &q);
    let after = ix.search(
        &q,
        5,
        -1.0,
        |_| true,
        |id| vs.get(id as usize - 1).map(|v| v.as_slice()),
    );
    assert_eq!(after[0].0, vs.len() as u64);
    assert_eq!(&after[1..], &before[..4]);
}

fn hits(fx: &mut Fx, query: &str) -> Vec<engram::types::recall::SearchHit> {
    block_on(fx.memory.search(query, SearchOptions::default())).unwrap()
}

#[test]
fn a_fact_noted_after_a_search_is_found_and_a_reopened_memory_searches_the_same() {
    let mut fx = Fx::new(engram::Config::default());
    standard_segment(&fx.model);
    for t in ["garden", "taxes", "bikes"] {
        fx.turn(t, 40, 40);
    }
    fx.note(note_args(
        Some(1),
        vec![
            fact("Ana", "lives in", "Lisbon", "Ana lives in Lisbon."),
            fact("Rui", "works at", "Acme", "Rui works at Acme."),
        ],
    ))
    .unwrap();
    let first = hits(&mut fx, "Who plays the cello?");
    assert!(!first.iter().any(|h| h.text.contains("cello")));
    fx.note(note_args(
        Some(1),
        vec![fact("Ana", "plays", "cello", "Ana plays the cello.")],
    ))
    .unwrap();
    let second = hits(&mut fx, "Who plays the cello?");
    assert!(second[0].text.contains("cello"), "{second:?}");
    let mut reopened = fx.reopen();
    for q in [
        "Who plays the cello?",
        "Lisbon",
        "where does Rui work",
        "friends",
    ] {
        assert_eq!(hits(&mut reopened, q), hits(&mut fx, q), "{q}");
    }
}
