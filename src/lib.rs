//! # engram: long-term memory for LLM chat agents
//!
//! An agent's context window is small; a conversation is long. engram keeps
//! the whole conversation and decides what the model sees (the *view*):
//!
//! * the conversation is cut into **episodes**, one concept each, by a
//!   boundary judgment on every message ([`segment`]);
//! * each episode is **encoded** with a first trace; every new fact is judged
//!   against every remembered episode and each answer is kept as a **trace**
//!   ([`trace`]);
//! * **activation** = Σ strength ÷ √(minutes since the trace): wall-clock
//!   fading (`activation`); **significance** = Σ strength, never faded;
//! * when the view reaches the ceiling, the least activated episodes **fade**:
//!   live -> leaving (their **facts** are written by the model) -> sealed ->
//!   forgotten ([`fade`]); after 24 h of silence the next user turn **sleeps**
//!   first (`sleep`);
//! * facts form a knowledge graph with entity resolution, merging of
//!   restatements and retirement of contradicted facts (`note`, [`resolve`]).
//!
//! Nothing is deleted. The core is pure: clock, store and model come from the
//! host through three traits ([`host`]); every decision is an event in a log
//! committed atomically through the store ([`store`]), and can be explained
//! ([`explain`]).
//!
//! ```
//! use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
//! use engram::{Config, Memory, NewMessage};
//!
//! block_on(async {
//!     let clock = ManualClock::at(1_764_000_000_000);
//!     let mut memory = Memory::open(
//!         "alice",
//!         MemoryStore::new(),
//!         ScriptedModel::new(), // a real host passes its LLM here
//!         clock.clone(),
//!         Config::default(),
//!     )
//!     .await?;
//!     memory.add_message(NewMessage::user("Let's plan the trip to Lisbon.")).await?;
//!     clock.advance_minutes(1);
//!     memory.add_message(NewMessage::assistant("Gladly: when do you leave?")).await?;
//!     let view = memory.view().await?;
//!     assert_eq!(view.to_openai().len(), 2);
//!     Ok::<_, engram::Error>(())
//! })
//! .unwrap();
//! ```

// The core is pure safe Rust. Only the generated binding code (wit-bindgen,
// wasm-bindgen) needs `unsafe`; it is allowed there and nowhere else.
#![cfg_attr(
    not(any(target_os = "wasi", feature = "web", feature = "web-offline")),
    forbid(unsafe_code)
)]
#![cfg_attr(
    any(target_os = "wasi", feature = "web", feature = "web-offline"),
    deny(unsafe_code)
)]
#![warn(missing_docs)]

// The public API: what hosts and the bindings use, documented. The memory
// facade and its outcomes, the host traits, the configuration, errors, the
// conversation's data (messages, episodes, facts, traces, fades, recall
// items and search results), the view, the explanations, erasure and the
// offline model.
pub mod config;
pub mod episode;
pub mod erase;
pub mod error;
pub mod explain;
pub mod fact;
pub mod health;
pub mod host;
pub mod memory;
pub mod message;
pub mod offline;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod types;
pub mod view;

// The engine's internals. Public only so the crate's own tests, examples
// and benches can reach them (hidden from the documentation, not part of
// the API, free to change); everything else is crate-private.
pub(crate) mod activation;
#[doc(hidden)]
pub mod bytes;
#[doc(hidden)]
pub mod codec;
pub(crate) mod distill;
#[doc(hidden)]
pub mod embedding;
#[doc(hidden)]
pub mod event;
#[doc(hidden)]
pub mod fade;
#[doc(hidden)]
pub mod join;
#[doc(hidden)]
pub mod llm;
pub(crate) mod note;
#[doc(hidden)]
pub mod recall;
#[doc(hidden)]
pub mod resolve;
pub(crate) mod salvage;
pub(crate) mod scrub;
#[doc(hidden)]
pub mod segment;
pub(crate) mod sizes;
pub(crate) mod sleep;
pub(crate) mod sort;
#[doc(hidden)]
pub mod state;
pub(crate) mod step;
#[doc(hidden)]
pub mod store;
#[doc(hidden)]
pub mod text;
#[doc(hidden)]
pub mod trace;

/// Host bindings: conversion and error mapping only, no memory logic.
#[cfg(any(
    target_os = "wasi",
    all(
        target_arch = "wasm32",
        target_os = "unknown",
        any(feature = "web", feature = "web-offline")
    )
))]
#[allow(unsafe_code)]
mod bindings;

pub use config::Config;
pub use episode::{Episode, EpisodeState};
pub use erase::{Erased, Target};
pub use error::{Error, Result};
pub use fact::{Fact, FactKind, NewFact};
pub use health::{Degraded, Health};
pub use host::{Clock, Model, ModelError, Store, StoreError, Task, TaskRequest};
pub use memory::{
    Added, EpisodeInfo, Maintained, Memory, NoteArgs, NoteOutcome, Pending, Stats, MIN_CLOCK_MS,
};
pub use message::{Message, NewMessage, Role, ToolCall};
pub use offline::OfflineModel;
pub use resolve::Entity;
pub use trace::Trace;
pub use types::fade::{Fade, FadeReason};
pub use types::recall::{Distillation, Item, RecallBlock, SearchFilter, SearchHit, SearchOptions};
pub use types::trace::TraceCause;
pub use view::{View, ViewItem};

/// The README's Rust quick start, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
