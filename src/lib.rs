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

// The source tree is the layer map (ARCHITECTURE.md; `tests/layers.rs`
// checks it): each folder is a layer, bottom up `base`, `types`, `index` and
// `llm`, `state`, `view`, then the operations (the files at this level, one
// per concept of the specification) beside `store`, then `memory`, the
// facade, and on top `offline`, `testing` and `bindings`. A module uses its
// own layer and the layers below it, never one above, and no two files use
// each other. Modules marked `#[doc(hidden)]` are public only so the
// crate's own tests, examples and benches can reach them: not part of the
// API, free to change.

// Layers below the operations.
pub mod base;
#[doc(hidden)]
pub mod index;
#[doc(hidden)]
pub mod llm;
#[doc(hidden)]
pub mod state;
pub mod types;
pub mod view;

// The operations on a memory, one per concept.
pub(crate) mod distill;
pub(crate) mod encoding;
pub(crate) mod erase;
#[doc(hidden)]
pub mod fade;
pub(crate) mod note;
#[doc(hidden)]
pub mod recall;
pub(crate) mod remember;
#[doc(hidden)]
pub mod resolve;
#[doc(hidden)]
pub mod segment;
pub(crate) mod sleep;
pub(crate) mod step;
#[doc(hidden)]
pub mod trace;

// The stored log, beside the operations; the facade over both.
pub mod memory;
#[doc(hidden)]
pub mod store;

// On top: the built-in offline model and the test doubles.
pub mod offline;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

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

// The public map: the names hosts use, each defined once below.
pub use base::config::Config;
pub use base::error::{Error, Result};
pub use base::health::{Degraded, Health};
pub use base::host::{Clock, Model, ModelError, Store, StoreError, Task, TaskRequest};
pub use memory::handle::Memory;
pub use memory::limits::MIN_CLOCK_MS;
pub use memory::outcomes::{Added, EpisodeInfo, Maintained, NoteArgs, NoteOutcome, Pending, Stats};
pub use offline::OfflineModel;
pub use types::entity::Entity;
pub use types::episode::{Episode, EpisodeState};
pub use types::erase::{Erased, Target};
pub use types::fact::{Fact, FactHistory, FactKind, HistoryEntry, NewFact, Remembered, Statement};
pub use types::fade::{Fade, FadeReason};
pub use types::message::{Message, NewMessage, Role, ToolCall};
pub use types::page::{EpisodeFilter, FactFilter, MessageFilter, Page, PageOptions};
pub use types::recall::{Distillation, Item, RecallBlock, SearchFilter, SearchHit, SearchOptions};
pub use types::trace::{Trace, TraceCause};
pub use view::{View, ViewItem};

/// The README's Rust quick start, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
