//! The knowledge graph's entities as stored: names, aliases and how each
//! was resolved (the resolution itself is `crate::resolve`).

use serde::{Deserialize, Serialize};

/// How a name was tied to its entity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case", tag = "how")]
pub enum Resolution {
    /// The name created the entity.
    New,
    /// Same normal form as a known name.
    Exact,
    /// Name embeddings this similar (at or above the auto-merge cosine).
    Similar {
        /// The cosine.
        cosine: f32,
    },
    /// The model judged them the same.
    Judged,
}

/// One name of an entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Alias {
    /// The name as written.
    pub name: String,
    /// Its normal form (see [`crate::base::text::normalise_name`]).
    pub normal: String,
    /// How it was tied to the entity.
    pub resolution: Resolution,
    /// When.
    pub at: i64,
}

/// A node of the knowledge graph: one thing, under all its names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Entity {
    /// Entity id (1, 2, ...).
    pub id: u64,
    /// The first name it was known by.
    pub name: String,
    /// Every name (the first included).
    pub aliases: Vec<Alias>,
    /// Embedding of the canonical name.
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub embedding: crate::types::embedding::Embedding,
    /// Whether it was erased on request ([`crate::erase`]): its names and
    /// embedding are gone, and so is every fact that named it.
    #[serde(default, skip_serializing_if = "crate::base::codec::is_false")]
    pub erased: bool,
}
