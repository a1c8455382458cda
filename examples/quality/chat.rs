//! Replaying one long chat and measuring what reaches the model (issue 44:
//! `beam.rs` and `locomo_plus.rs`): the offline model for every task, the
//! chat's own dates as the clock; evidence in the rendered context when a
//! message is the next user message, recall within token budgets of
//! search, and the plain baselines of the same run (BM25, the embedder and
//! their fusion over single messages, the plain chat window). Included by
//! path beside `quality/mod.rs` and `quality/datasets.rs`; each bench uses
//! part of it.

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Instant;

use engram::base::text::estimate_tokens;
use engram::index::bm25::Bm25;
use engram::offline::words::term_set;
use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::view::ItemKind;
use engram::{types::recall::Item, types::recall::SearchOptions};
use engram::{Clock, Config, Memory, Model, ModelError, NewMessage, OfflineModel, TaskRequest};
use serde_json::Value;

use crate::datasets::Turn;
use crate::quality::{baseline_rankings, passage_turns, Served};

pub const BUDGETS: [usize; 3] = [200, 500, 1_000];
pub const CEILINGS: [usize; 2] = [8_000, 4_000];
/// The ceiling of the replay that search is measured on (as LongMemEval's).
pub const SEARCH_CEILING: usize = 2_000;
/// The `limit` of a budgeted search (as the other quality benches).
pub const BUDGET_ITEMS: usize = 40;

/// The offline model for every task, embedding with the served sentence
/// model when there is one.
#[derive(Clone)]
pub struct Bench {
    pub inner: OfflineModel,
    pub embedder: Option<Rc<RefCell<Served>>>,
}

impl Bench {
    pub fn new(minilm: Option<&str>) -> Bench {
        Bench {
            inner: OfflineModel::new(),
            embedder: minilm.map(|c| Rc::new(RefCell::new(Served::start(c)))),
        }
    }

    pub fn embedder_name(&self) -> &'static str {
        match self.embedder {
            Some(_) => "all-MiniLM-L6-v2",
            None => "hashing",
        }
    }

    pub fn embed_now(&self, texts: &[String]) -> Vec<Vec<f32>> {
        match &self.embedder {
            Some(e) if !texts.is_empty() => {
                // In slices: one line of JSON per call to the child.
                let mut out = Vec::with_capacity(texts.len());
                for chunk in texts.chunks(256) {
                    out.extend(e.borrow_mut().embed(chunk));
                }
                out
            }
            _ => block_on(self.inner.embed(texts)).unwrap(),
        }
    }
}

impl Model for Bench {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        self.inner.complete(request).await
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        Ok(self.embed_now(texts))
    }
}

/// A replayed chat and where each item's turns are.
pub struct Replayed {
    store: MemoryStore,
    model: Bench,
    config: Config,
    dia: BTreeMap<u64, usize>,
    fact_turn: BTreeMap<u64, usize>,
    passage_turns: BTreeMap<u64, Vec<usize>>,
    pub facts: usize,
    pub passages: usize,
    pub replay_s: f64,
}

/// Replays `turns` at `ceiling` (a turn ends at each assistant message),
/// then `maintain`.
pub fn replay(turns: &[Turn], model: Bench, ceiling: usize) -> Replayed {
    let clock = ManualClock::at(turns[0].at);
    let config = Config {
        ceiling_tokens: ceiling,
        split_with_model: false,
        walk_with_model: false,
        ..Config::default()
    };
    let store = MemoryStore::new();
    let mut memory = block_on(Memory::open(
        "chat",
        store.clone(),
        model.clone(),
        clock.clone(),
        config.clone(),
    ))
    .unwrap();
    let started = Instant::now();
    let mut dia = BTreeMap::new();
    for (i, t) in turns.iter().enumerate() {
        clock.set(t.at.max(clock.now_ms()));
        let m = match t.user {
            true => NewMessage::user(&t.text),
            false => NewMessage::assistant(&t.text),
        };
        let added = block_on(memory.add_message(m)).unwrap();
        dia.insert(added.message, i);
        if !t.user {
            block_on(memory.end_turn()).unwrap();
        }
    }
    block_on(memory.maintain()).unwrap();
    let replay_s = started.elapsed().as_secs_f64();
    let episodes = block_on(memory.episodes()).unwrap();
    let episode_turns: BTreeMap<u64, Vec<usize>> = episodes
        .iter()
        .map(|e| {
            let ids = (e.episode.first..=e.episode.last).filter_map(|m| dia.get(&m).copied());
            (e.episode.id, ids.collect())
        })
        .collect();
    let facts = block_on(memory.facts()).unwrap();
    let fact_turn: BTreeMap<u64, usize> = facts
        .iter()
        .filter_map(|f| {
            // The message the fact came from, when its note named it; else
            // the turn of its episode sharing the most words with it.
            if let Some(turn) = f.sources.first().and_then(|m| dia.get(m)) {
                return Some((f.id, *turn));
            }
            let words = term_set(&f.sentence);
            let turn = episode_turns
                .get(&f.episode)?
                .iter()
                .copied()
                .max_by_key(|&i| {
                    (
                        term_set(&turns[i].text).intersection(&words).count(),
                        usize::MAX - i,
                    )
                })?;
            Some((f.id, turn))
        })
        .collect();
    let export: Value = serde_json::from_str(&block_on(memory.export()).unwrap()).unwrap();
    let passage_turns = passage_turns(&export, &dia);
    Replayed {
        store,
        model,
        config,
        dia,
        fact_turn,
        passages: passage_turns.len(),
        passage_turns,
        facts: facts.len(),
        replay_s,
    }
}

type Mem = Memory<MemoryStore, Bench, ManualClock>;

impl Replayed {
    /// A memory over a copy of the replayed store, its clock at `at`.
    fn fork(&self, at: i64) -> Mem {
        let store = MemoryStore::new();
        for (k, v) in self.store.dump() {
            store.poke(&k, Some(&v));
        }
        block_on(Memory::open(
            "chat",
            store,
            self.model.clone(),
            ManualClock::at(at),
            self.config.clone(),
        ))
        .unwrap()
    }

    fn turns_of(&self, item: Item) -> Vec<usize> {
        match item {
            Item::Fact(f) => self.fact_turn.get(&f).copied().into_iter().collect(),
            Item::Passage(p) => self.passage_turns.get(&p).cloned().unwrap_or_default(),
            Item::Message(m) => self.dia.get(&m).copied().into_iter().collect(),
        }
    }

    /// The turns of `search(query)` at `at` within each of [`BUDGETS`]
    /// (walk off, items in the view counted).
    pub fn within_budgets(&self, query: &str, at: i64) -> [BTreeSet<usize>; 3] {
        let mut memory = self.fork(at);
        BUDGETS.map(|b| {
            let hits = block_on(memory.search(
                query,
                SearchOptions {
                    limit: BUDGET_ITEMS,
                    walk: false,
                    include_in_view: true,
                    budget_tokens: Some(b),
                    ..SearchOptions::default()
                },
            ))
            .unwrap();
            let used: usize = hits
                .iter()
                .map(|h| estimate_tokens(&h.text) + engram::recall::HIT_FRAMING)
                .sum();
            assert!(used <= b, "search kept {used} tokens for a budget of {b}");
            hits.iter().flat_map(|h| self.turns_of(h.item)).collect()
        })
    }

    /// The turns that reach the model when `message` is the next user
    /// message at `at`: messages in the view, the facts block's facts, the
    /// recall block placed before it; with the view's tokens.
    pub fn in_context(&self, message: &str, at: i64) -> (BTreeSet<usize>, usize) {
        let mut memory = self.fork(at);
        let added = block_on(memory.add_message(NewMessage::user(message))).unwrap();
        let view = block_on(memory.view()).unwrap();
        let mut seen = BTreeSet::new();
        for it in &view.items {
            match it.kind {
                ItemKind::Message => {
                    seen.extend(it.message.and_then(|id| self.dia.get(&id).copied()))
                }
                ItemKind::Facts => {
                    seen.extend(it.facts.iter().flat_map(|&f| self.turns_of(Item::Fact(f))))
                }
                _ => {}
            }
        }
        for b in block_on(memory.recalls())
            .unwrap()
            .iter()
            .filter(|b| b.message == added.message && b.gave_way.is_none())
        {
            seen.extend(b.shown().into_iter().flat_map(|i| self.turns_of(i)));
        }
        (seen, view.tokens)
    }
}

/// A message as the baselines read it.
pub fn turn_text(t: &Turn) -> String {
    t.text.clone()
}

/// The plain baselines over single messages of one chat: BM25, the
/// embedder, their fusion; indexed once, asked many times.
pub struct Plain {
    texts: Vec<String>,
    tokens: Vec<usize>,
    index: Bm25,
    vectors: Vec<Vec<f32>>,
}

impl Plain {
    pub fn new(turns: &[Turn], model: &Bench) -> Plain {
        let texts: Vec<String> = turns.iter().map(turn_text).collect();
        let mut index = Bm25::default();
        for (i, t) in texts.iter().enumerate() {
            index.insert(i as u64, t);
        }
        Plain {
            tokens: texts.iter().map(|t| estimate_tokens(t)).collect(),
            vectors: model.embed_now(&texts),
            texts,
            index,
        }
    }

    /// Per baseline (BM25, embedder, fused), the turns within each budget:
    /// items in rank order, one that does not fit skipped, two tokens of
    /// framing each (as engram's budgeted search counts).
    pub fn within_budgets(&self, query: &str, model: &Bench) -> [[BTreeSet<usize>; 3]; 3] {
        let words: Vec<usize> = self
            .index
            .search(query, self.texts.len(), |_| true)
            .into_iter()
            .map(|(i, _)| i as usize)
            .collect();
        let qv = model.embed_now(&[query.to_string()]).remove(0);
        baseline_rankings(words, &self.vectors, &qv).map(|list| {
            BUDGETS.map(|b| {
                let mut room = b;
                let mut seen = BTreeSet::new();
                for &i in &list {
                    let cost = self.tokens[i] + engram::recall::HIT_FRAMING;
                    if cost <= room {
                        room -= cost;
                        seen.insert(i);
                    }
                    if room <= engram::recall::HIT_FRAMING {
                        break;
                    }
                }
                seen
            })
        })
    }

    /// The plain chat window: the last messages before turn `before` that
    /// fit in `ceiling` tokens less the next message's.
    pub fn window(&self, before: usize, ceiling: usize, next: &str) -> BTreeSet<usize> {
        let mut room = ceiling.saturating_sub(estimate_tokens(next));
        let mut seen = BTreeSet::new();
        for i in (0..before).rev() {
            if self.tokens[i] > room {
                break;
            }
            room -= self.tokens[i];
            seen.insert(i);
        }
        seen
    }
}

/// Share of `evidence` in `seen`.
pub fn share(evidence: &BTreeSet<usize>, seen: &BTreeSet<usize>) -> f64 {
    evidence.intersection(seen).count() as f64 / evidence.len().max(1) as f64
}

/// Sums of one measure per group (size, ability, relation type).
#[derive(Default, Clone)]
pub struct Sums(BTreeMap<String, (usize, f64)>);

impl Sums {
    pub fn add(&mut self, group: &str, v: f64) {
        let s = self.0.entry(group.to_string()).or_default();
        s.0 += 1;
        s.1 += v;
    }

    /// Count and mean of the groups `keep` accepts.
    pub fn mean(&self, keep: impl Fn(&str) -> bool) -> (usize, f64) {
        let (n, s) = self
            .0
            .iter()
            .filter(|(g, _)| keep(g))
            .fold((0, 0.0), |a, (_, v)| (a.0 + v.0, a.1 + v.1));
        (n, s / n.max(1) as f64)
    }
}

/// The methods measured, in the tables' order.
pub const METHODS: [&str; 5] = [
    "engram, offline facts",
    "BM25 over messages",
    "embedder over messages",
    "BM25 + embedder, RRF",
    "plain chat window",
];

/// One measure per method: in context at the two ceilings (engram, the
/// window), within the three budgets (engram, the three retrievals).
#[derive(Default)]
pub struct Table {
    /// [method][0..2 ceilings, 2..5 budgets]
    pub cells: [[Sums; 5]; 5],
    /// Mean view tokens per ceiling (engram): sum, count.
    pub view: [(usize, usize); 2],
}

impl Table {
    /// A column's header.
    pub fn column(c: usize) -> String {
        match c {
            0 | 1 => format!("context {}", CEILINGS[c]),
            _ => format!("{} tokens", BUDGETS[c - 2]),
        }
    }

    /// Whether `method` has column `c`.
    pub fn has(method: usize, c: usize) -> bool {
        match method {
            0 => true,
            4 => c < 2,
            _ => c >= 2,
        }
    }

    /// The rows of the groups `keep` accepts, one per method, columns
    /// `cols`, each cell `mean` (and `(n)` when `counts`).
    pub fn print(&self, keep: impl Fn(&str) -> bool + Copy, cols: &[usize]) {
        print!("| method |");
        for &c in cols {
            print!(" {} |", Table::column(c));
        }
        println!();
        println!("|---|{}", "---|".repeat(cols.len()));
        for (m, name) in METHODS.iter().enumerate() {
            print!("| {name} |");
            for &c in cols {
                if Table::has(m, c) {
                    let (n, v) = self.cells[m][c].mean(keep);
                    print!(" {v:.3} ({n}) |");
                } else {
                    print!(" - |");
                }
            }
            println!();
        }
    }

    /// One column over groups: methods as rows, `groups` as columns.
    pub fn print_by(&self, c: usize, groups: &[&str], key: impl Fn(&str, &str) -> bool) {
        print!("| method |");
        for g in groups {
            print!(" {g} |");
        }
        println!();
        println!("|---|{}", "---|".repeat(groups.len()));
        for (m, name) in METHODS.iter().enumerate() {
            if !Table::has(m, c) {
                continue;
            }
            print!("| {name} |");
            for g in groups {
                let (n, v) = self.cells[m][c].mean(|k| key(k, g));
                print!(" {v:.3} ({n}) |");
            }
            println!();
        }
    }
}

/// The process's peak resident memory in MiB since the last
/// [`reset_peak`] (Linux `VmHWM`), or `None` where it cannot be read.
pub fn peak_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Starts a new peak (`/proc/self/clear_refs` 5); whether it could.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}
