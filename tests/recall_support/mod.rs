//! Shared rig for the recall behaviour tests: a memory whose scripted model
//! starts an episode at every user message, writes facts chosen by keyword,
//! and whose history is pushed out of view by sleeps.
#![allow(dead_code)]

use std::cell::RefCell;
use std::rc::Rc;

use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::Config;
use engram::EpisodeState;
use engram::Memory;
use engram::NewMessage;
use engram::Task;
use engram::TaskRequest;
use serde_json::{json, Value};

pub const T0: i64 = 1_772_445_600_000; // 2026-03-02 10:00 UTC
pub const MIN: i64 = 60_000;
pub const DAY: i64 = 24 * 60 * MIN;

pub type Mem = Memory<MemoryStore, ScriptedModel, ManualClock>;

pub struct Rig {
    pub memory: Mem,
    pub model: ScriptedModel,
    pub clock: ManualClock,
    pub store: MemoryStore,
    facts: Rc<RefCell<Vec<(String, Value)>>>,
}

pub fn fact(subject: &str, predicate: &str, object: &str, sentence: &str) -> Value {
    json!({"subject": subject, "predicate": predicate, "object": object, "sentence": sentence, "kind": "fact"})
}

/// The fact the rigs note about the user's sister.
pub fn ana_fact() -> Value {
    fact(
        "Ana",
        "lives in",
        "Porto",
        "Ana, the user's sister, lives in Porto.",
    )
}

/// The fact the rigs note about the cat.
pub fn miso_fact() -> Value {
    fact(
        "Miso",
        "is allergic to",
        "chicken",
        "Miso the cat is allergic to chicken.",
    )
}

/// The role of the new message in a `segment` request.
pub fn new_role(req: &TaskRequest) -> &str {
    let part = req.content.split("\nNew message").nth(1).unwrap_or("");
    let line = part.lines().nth(1).unwrap_or("");
    line.split_once("] ")
        .and_then(|(_, r)| r.split_once(':'))
        .map_or("", |(r, _)| r)
}

/// A small ceiling, so a few sleeps push history out of view, with room for
/// recall: blocks may take half of it (`recall_share` 0.5, the most allowed),
/// so a block holds up to 150 tokens (a few facts and passages) and the
/// blocks in view together as much.
pub fn config() -> Config {
    Config {
        ceiling_tokens: 300,
        min_episode_tokens: 1,
        recall_share: 0.5,
        ..Config::default()
    }
}

pub fn rig(config: Config) -> Rig {
    let model = ScriptedModel::new();
    let facts: Rc<RefCell<Vec<(String, Value)>>> = Rc::default();
    model.on(Task::Segment, |req| {
        Some(json!({"boundary": if new_role(req) == "user" { 0.9 } else { 0.05 }}).to_string())
    });
    let f = facts.clone();
    model.on(Task::Note, move |req| {
        let chosen: Vec<Value> = f
            .borrow()
            .iter()
            .filter(|(k, _)| req.content.contains(k.as_str()))
            .map(|(_, v)| v.clone())
            .collect();
        Some(json!({ "facts": chosen }).to_string())
    });
    // Relevance: a candidate is relevant when it shares a word of three
    // letters or more (not a question word) with the last user message.
    model.on(Task::Relevance, |req| {
        let (convo, cands) = req.content.split_once("\n\nCandidates:\n")?;
        let last = convo
            .lines()
            .rev()
            .find(|l| l.starts_with("user: "))?
            .to_lowercase();
        const SKIP: [&str; 12] = [
            "user", "the", "and", "what", "where", "when", "does", "did", "was", "how", "who",
            "you",
        ];
        let words: Vec<&str> = last
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() >= 3 && !SKIP.contains(w))
            .collect();
        let relevant: Vec<usize> = cands
            .lines()
            .filter_map(|l| {
                let (n, rest) = l.split_once(". ")?;
                let rest = rest.to_lowercase();
                words
                    .iter()
                    .any(|w| rest.contains(w))
                    .then(|| n.parse::<usize>().ok())?
            })
            .collect();
        Some(json!({ "relevant": relevant }).to_string())
    });
    let clock = ManualClock::at(T0);
    let store = MemoryStore::new();
    let memory = block_on(Memory::open(
        "recall",
        store.clone(),
        model.clone(),
        clock.clone(),
        config,
    ))
    .unwrap();
    Rig {
        memory,
        model,
        clock,
        store,
        facts,
    }
}

impl Rig {
    /// The note task answers `facts` for an episode whose text contains `key`.
    pub fn facts_for(&self, key: &str, facts: Vec<Value>) {
        for f in facts {
            self.facts.borrow_mut().push((key.to_string(), f));
        }
    }

    /// A user message and the assistant's reply, a minute apart.
    pub fn turn(&mut self, user: &str, assistant: &str) -> engram::Added {
        self.clock.advance(MIN);
        let added = block_on(self.memory.add_message(NewMessage::user(user))).unwrap();
        self.clock.advance(MIN);
        block_on(self.memory.add_message(NewMessage::assistant(assistant))).unwrap();
        added
    }

    /// A user message alone (the turn stays open).
    pub fn ask(&mut self, user: &str) -> engram::Added {
        self.clock.advance(MIN);
        block_on(self.memory.add_message(NewMessage::user(user))).unwrap()
    }

    /// Turns a day apart until episode `id` is forgotten.
    pub fn forget(&mut self, id: u64) {
        for i in 0..20 {
            let state = block_on(self.memory.episodes())
                .unwrap()
                .iter()
                .find(|e| e.episode.id == id)
                .map(|e| e.episode.state);
            if state == Some(EpisodeState::Forgotten) {
                return;
            }
            self.clock.advance(DAY + MIN);
            self.turn(&format!("Filler {i}: quiet."), "Okay.");
        }
        panic!("episode {id} was never forgotten");
    }

    /// Every relevance judgment says yes from now on.
    pub fn all_relevant(&self) {
        self.model.on_first(Task::Relevance, |req| {
            let n = engram::testing::numbered_items(req.content.split("Candidates:").nth(1)?);
            Some(json!({ "relevant": (1..=n).collect::<Vec<_>>() }).to_string())
        });
    }

    pub fn view(&mut self) -> engram::View {
        block_on(self.memory.view()).unwrap()
    }
}
