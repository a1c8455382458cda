//! Facts: one sentence that reads on its own, with its subject and object.

use serde::{Deserialize, Serialize};

/// What a fact says about the work. Milestones say where the work stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// A plain fact.
    Fact,
    /// Milestone: something agreed.
    Agreed,
    /// Milestone: something decided.
    Decided,
    /// Milestone: something done.
    Done,
    /// Milestone: something blocked.
    Blocked,
    /// Milestone: what comes next.
    Next,
    /// What the user likes, avoids or wants ("I'm vegetarian", "keep
    /// answers short"): recalled for requests it bears on.
    Preference,
}

impl FactKind {
    /// Whether this kind is a milestone.
    pub fn is_milestone(self) -> bool {
        !matches!(self, FactKind::Fact | FactKind::Preference)
    }
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Fact => "fact",
            FactKind::Agreed => "agreed",
            FactKind::Decided => "decided",
            FactKind::Done => "done",
            FactKind::Blocked => "blocked",
            FactKind::Next => "next",
            FactKind::Preference => "preference",
        }
    }
    /// Parses a kind name.
    pub fn parse(s: &str) -> Option<FactKind> {
        Some(match s {
            "fact" => FactKind::Fact,
            "agreed" => FactKind::Agreed,
            "decided" => FactKind::Decided,
            "done" => FactKind::Done,
            "blocked" => FactKind::Blocked,
            "next" => FactKind::Next,
            "preference" => FactKind::Preference,
            _ => return None,
        })
    }
}

/// A fact as the host or the model writes it (names, not entity ids).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(deny_unknown_fields)]
pub struct NewFact {
    /// Who or what the fact is about.
    pub subject: String,
    /// The relation, in a few words ("lives in", "decided to use").
    pub predicate: String,
    /// The other entity (or value) of the relation.
    pub object: String,
    /// The fact as one sentence that reads on its own.
    pub sentence: String,
    /// Plain fact or milestone.
    #[serde(default = "plain")]
    pub kind: FactKind,
    /// The messages it came from: their numbers among the episode's
    /// messages as the note request shows them (1 = the first). Optional.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<usize>,
}

fn plain() -> FactKind {
    FactKind::Fact
}

/// A later mention of a held fact that merged into it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Restatement {
    /// Episode whose note restated it.
    pub episode: u64,
    /// The restating sentence.
    pub sentence: String,
    /// When it was noted.
    pub at: i64,
}

/// Why a fact no longer holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Retirement {
    /// The newer fact that contradicts it.
    pub by: u64,
    /// When it was retired.
    pub at: i64,
}

/// A fact of the knowledge graph: a triple with its sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Fact {
    /// Fact id (1, 2, ...).
    pub id: u64,
    /// Subject entity id.
    pub subject: u64,
    /// The relation.
    pub predicate: String,
    /// Object entity id.
    pub object: u64,
    /// The sentence.
    pub sentence: String,
    /// Plain fact or milestone.
    pub kind: FactKind,
    /// The episode whose note wrote it.
    pub episode: u64,
    /// When it was said: the time of the source episode's last message.
    pub said_at: i64,
    /// When it was noted.
    pub noted_at: i64,
    /// Embedding of the sentence.
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub embedding: crate::types::embedding::Embedding,
    /// The messages it came from (ids), when the note named them: a
    /// budgeted search never spends its room on both a fact and the message
    /// it came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<u64>,
    /// Later mentions merged into it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restated: Vec<Restatement>,
    /// Set when a newer fact contradicted it (it is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired: Option<Retirement>,
    /// Whether it was erased on request ([`crate::erase`]): its sentence,
    /// predicate, restatements and embedding are gone; it is never shown,
    /// searched or recalled.
    #[serde(default, skip_serializing_if = "crate::base::codec::is_false")]
    pub erased: bool,
}

impl Fact {
    /// Whether the fact still holds.
    pub fn is_live(&self) -> bool {
        self.retired.is_none() && !self.erased
    }
}

/// The `episode` of a fact the host stated ([`Fact::is_stated`]), and of a
/// restatement the host made: no episode wrote it. Episode ids start at 1.
pub const HOST: u64 = 0;

impl Fact {
    /// Whether the host stated it (`remember`, `revise`) rather than a note
    /// of an episode: its `episode` is [`HOST`], its `said_at` the time it
    /// was stated.
    pub fn is_stated(&self) -> bool {
        self.episode == HOST
    }
}

/// A fact the host states: its triple, or a sentence the `note` model turns
/// into one. (No serde shape: each binding reads a string as a sentence
/// and an object as a triple.)
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// The triple with its sentence (and kind), as the `note` tool takes it.
    Fact(NewFact),
    /// A sentence that reads on its own ("Ana moved to Porto in May").
    Sentence(String),
}

impl From<NewFact> for Statement {
    fn from(f: NewFact) -> Self {
        Statement::Fact(f)
    }
}

impl From<&str> for Statement {
    fn from(s: &str) -> Self {
        Statement::Sentence(s.to_string())
    }
}

impl From<String> for Statement {
    fn from(s: String) -> Self {
        Statement::Sentence(s)
    }
}

/// What became of a fact the host stated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Remembered {
    /// The fact it is now: a new one, or the held fact it restated.
    pub fact: u64,
    /// Whether it restated (merged into) a held fact rather than adding one.
    pub merged: bool,
    /// Held facts it retired (for `revise`, the revised fact among them).
    pub retired: Vec<u64>,
}

/// One step of a fact's history, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HistoryEntry {
    /// It was written: by the note of `episode`, or by the host
    /// (`episode` [`HOST`]).
    Added {
        /// The episode whose note wrote it, or [`HOST`].
        episode: u64,
        /// Its sentence (empty when erased).
        sentence: String,
        /// When.
        at: i64,
    },
    /// A later mention merged into it.
    Merged {
        /// The episode whose note restated it, or [`HOST`].
        episode: u64,
        /// The restating sentence.
        sentence: String,
        /// When.
        at: i64,
    },
    /// It retired an older fact that it contradicts.
    Retired {
        /// The older fact.
        fact: u64,
        /// When.
        at: i64,
    },
    /// A newer fact retired it.
    RetiredBy {
        /// The newer fact.
        fact: u64,
        /// When.
        at: i64,
    },
    /// It was erased on request.
    Erased,
}

/// What happened to one fact: its steps, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FactHistory {
    /// The fact.
    pub fact: u64,
    /// Whether it still holds.
    pub live: bool,
    /// Its steps, oldest first (an erasure last).
    pub entries: Vec<HistoryEntry>,
}
