//! The `types` layer: the plain data a memory is made of (messages,
//! episodes, facts, traces, entities, fades, erasures, recall's items and
//! results, events, embeddings), with no operation on it: the operations
//! are the modules at the root of `src/`, named after each concept.

pub mod embedding;
pub mod entity;
pub mod episode;
pub mod erase;
#[doc(hidden)]
pub mod event;
pub mod fact;
pub mod fade;
pub mod message;
pub mod page;
pub mod recall;
pub mod trace;
