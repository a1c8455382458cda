//! The `index` layer: searching by words and by meaning, and fusing ranked
//! lists. BM25 over documents ([`bm25`]), the i8-quantised meaning scan
//! ([`vector`]) with its HNSW graphs ([`hnsw`]) and their dot products
//! ([`dot`]), the one ranking rule and the bounded top-k ([`topk`]),
//! reciprocal rank fusion ([`fuse`]). An index sees ids, words and vectors,
//! never a message or a fact.

pub mod bm25;
pub mod dot;
pub mod fuse;
pub mod hnsw;
pub mod topk;
pub mod vector;
