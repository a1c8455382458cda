//! What an erase targets and what it took (ids); the erase itself is
//! `crate::erase`.

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};

/// What to erase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum Target {
    /// A message (with its tool exchange and its episode's facts).
    Message(u64),
    /// An episode: all its messages.
    Episode(u64),
    /// A fact.
    Fact(u64),
    /// An entity with every fact that names it.
    Entity(u64),
    /// A thread: every message of it (the thread's name stays, as the
    /// erased messages' ids, roles and times do).
    Thread(String),
}

impl Target {
    /// A target from a kind (`message`, `episode`, `fact` or `entity`) and
    /// an id, as hosts pass it.
    pub fn parse(kind: &str, id: u64) -> Result<Target> {
        match kind {
            "message" => Ok(Target::Message(id)),
            "episode" => Ok(Target::Episode(id)),
            "fact" => Ok(Target::Fact(id)),
            "entity" => Ok(Target::Entity(id)),
            other => Err(Error::invalid(format!(
                "cannot erase a {other:?}: erase a message, episode, fact or entity"
            ))),
        }
    }
}

/// What an erase removed: ids only (also what `Event::Erased` keeps).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Erased {
    /// Messages erased.
    pub messages: Vec<u64>,
    /// Facts erased.
    pub facts: Vec<u64>,
    /// Entities erased.
    pub entities: Vec<u64>,
}

impl Erased {
    /// Whether nothing was (left to be) erased.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.facts.is_empty() && self.entities.is_empty()
    }
}
