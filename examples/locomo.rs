//! Retrieval quality on LoCoMo (Maharana et al., 2024; two development
//! conversations, CC BY-NC 4.0, read from `../shared/data/locomo-dev/`, not
//! bundled): `scripts/bench-quality`, or
//! `cargo run --release --example locomo -- [PATH] [--minilm CMD]`.
//!
//! Each conversation is replayed through a memory (speaker A as the user,
//! speaker B as the assistant, the sessions' dates as the clock), then every
//! question of categories 1-4 is measured three ways:
//!
//! * **search**: evidence recall@5 and @10 of `search` (items in view
//!   included): the share of the question's evidence turns among the turns
//!   of the top k items (a passage counts its turns, a fact the turn it was
//!   written from), with the memory replayed at a 2,000-token ceiling (nearly
//!   everything out of view, so search has to find it);
//! * **in context**: the question is added as a user message to a copy of
//!   the memory and the view is rendered; the share of evidence turns the
//!   model would read (messages in view, facts of the facts block, the recall
//!   block's facts and passages), at the default ceiling (8,000) and at
//!   4,000, with the recall block's size;
//! * **budget**: the share of evidence turns in the best-ranked search items
//!   whose texts fit 200, 500 and 1,000 tokens.
//!
//! Note sources: `observations` (a scripted note model returns the dataset's
//! observations of a leaving episode's turns as its facts), `offline` (the
//! built-in offline model for every task: its own boundaries and facts),
//! `passages` (a scripted model, no facts). The scripted models cut an
//! episode wherever an hour or more passed. Walk `off`: the fused ranking;
//! walk `on`: the relevance walk, judged by the offline model's relevance
//! judge. The replay itself runs with the walk off and the rule splitter.
//!
//! Embeddings: all-MiniLM-L6-v2 served by `scripts/minilm.py` (`--minilm`
//! gives the command; `scripts/bench-quality` installs it); without it, the
//! hashing embedders (labelled `hashing` in the tables).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Instant;

use engram::offline::words::term_set;
use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::view::ItemKind;
use engram::Clock;
use engram::Config;
use engram::Memory;
use engram::Model;
use engram::ModelError;
use engram::NewMessage;
use engram::OfflineModel;
use engram::Task;
use engram::TaskRequest;
use engram::{types::recall::Item, types::recall::SearchHit, types::recall::SearchOptions};
use serde_json::{json, Value};

#[path = "../tests/locomo_time/mod.rs"]
mod locomo_time;
use locomo_time::parse_locomo_time as parse_time;

#[path = "quality/mod.rs"]
mod quality;
use quality::{baseline_rankings, passage_turns, Served};

/// A model answering tasks with `inner` and embedding with the served
/// sentence model when there is one.
#[derive(Clone)]
struct Bench {
    inner: Rc<dyn DynModel>,
    embedder: Option<Rc<RefCell<Served>>>,
}

impl Model for Bench {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        self.inner.complete_now(request)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        match &self.embedder {
            Some(e) if !texts.is_empty() => Ok(e.borrow_mut().embed(texts)),
            _ => self.inner.embed_now(texts),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Source {
    Observations,
    Offline,
    Passages,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Passages => "passages",
            Source::Observations => "observations",
            Source::Offline => "offline",
        }
    }
}

/// One turn of a conversation as added.
struct Turn {
    dia: String,
    text: String,
    user: bool,
    at: i64,
}

fn turns(c: &Value) -> Vec<Turn> {
    let a = c["speaker_a"].as_str().unwrap().to_string();
    let mut out = Vec::new();
    let mut clock = 0i64;
    for s in 1.. {
        let Some(session) = c.get(format!("session_{s}")).and_then(|v| v.as_array()) else {
            break;
        };
        let start = parse_time(c[format!("session_{s}_date_time")].as_str().unwrap()).unwrap();
        clock = start.max(clock);
        for t in session {
            let mut text = format!(
                "{}: {}",
                t["speaker"].as_str().unwrap(),
                t["text"].as_str().unwrap()
            );
            if let Some(cap) = t.get("blip_caption").and_then(|v| v.as_str()) {
                text.push_str(&format!(" [shares a photo: {cap}]"));
            }
            clock += 30_000;
            out.push(Turn {
                dia: t["dia_id"].as_str().unwrap().to_string(),
                text,
                user: t["speaker"].as_str() == Some(&a),
                at: clock,
            });
        }
    }
    out
}

/// The dataset's observations: speaker, sentence and the turn it cites.
fn observations(conv: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    if let Some(obs) = conv["observation"].as_object() {
        for session in obs.values() {
            for (speaker, list) in session.as_object().into_iter().flatten() {
                for o in list.as_array().into_iter().flatten() {
                    // The turn it cites (one id, or a list: the first).
                    let dia = o[1].as_str().or_else(|| o[1][0].as_str());
                    if let (Some(text), Some(dia)) = (o[0].as_str(), dia) {
                        out.push((speaker.clone(), text.to_string(), dia.to_string()));
                    }
                }
            }
        }
    }
    out
}

/// The object of an observation as a note model would write it: the first
/// name in the sentence other than its speaker, else its last word.
fn object_of(speaker: &str, sentence: &str) -> String {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let clean = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .trim_end_matches("'s")
            .to_string()
    };
    for w in words.iter().skip(1) {
        let w = clean(w);
        if w.chars().next().is_some_and(|c| c.is_uppercase()) && w != speaker && w.len() > 1 {
            return w;
        }
    }
    words
        .last()
        .map(|w| clean(w).to_lowercase())
        .unwrap_or_default()
}

/// The predicate of an observation as a note model would write it: the
/// words between its subject (the first word) and its object, at most five
/// (two observations of one speaker about one object are two facts, as a
/// model's own predicates would make them, not a restatement).
fn predicate_of(sentence: &str, object: &str) -> String {
    sentence
        .split_whitespace()
        .skip(1)
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .take_while(|w| !w.eq_ignore_ascii_case(object))
        .filter(|w| !w.is_empty())
        .take(5)
        .collect::<Vec<_>>()
        .join(" ")
}

fn scripted(conv: &Value, turns: &[Turn], source: Source) -> ScriptedModel {
    let model = ScriptedModel::new();
    model.on(Task::Segment, |req| {
        let gap = req.content.contains("hours after") || req.content.contains("days after");
        Some(json!({"boundary": if gap { 0.9 } else { 0.1 }}).to_string())
    });
    // The walk's judge (used only with the walk on): the offline model's.
    model.on(Task::Relevance, |req| engram::offline::complete(req).ok());
    if source == Source::Observations {
        let by_text: BTreeMap<String, String> = turns
            .iter()
            .map(|t| (engram::base::text::clip(&t.text, 1_000), t.dia.clone()))
            .collect();
        let mut by_dia: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (speaker, text, dia) in observations(conv) {
            by_dia.entry(dia).or_default().push((speaker, text));
        }
        model.on(Task::Note, move |req| {
            let mut facts = Vec::new();
            let mut number = 0;
            for line in req.content.lines() {
                let Some((_, rest)) = line.split_once("] ") else {
                    continue;
                };
                let Some((_, text)) = rest.split_once(": ") else {
                    continue;
                };
                number += 1;
                let Some(dia) = by_text.get(text) else {
                    continue;
                };
                for (speaker, sentence) in by_dia.get(dia).into_iter().flatten() {
                    let object = object_of(speaker, sentence);
                    facts.push(json!({
                        "subject": speaker,
                        "predicate": predicate_of(sentence, &object),
                        "object": object,
                        "sentence": sentence, "kind": "fact", "sources": [number]
                    }));
                }
            }
            facts.truncate(40);
            Some(json!({ "facts": facts }).to_string())
        });
    }
    model
}

/// A replayed conversation and where each item's turns are.
struct Replayed<M: Model + Clone> {
    store: MemoryStore,
    model: M,
    config: Config,
    end: i64,
    /// Message id -> turn index.
    dia: BTreeMap<u64, usize>,
    fact_turn: BTreeMap<u64, usize>,
    passage_turns: BTreeMap<u64, Vec<usize>>,
    facts: usize,
    replay_ms: f64,
}

fn replay<M: Model + Clone>(
    conv: &Value,
    turns: &[Turn],
    model: M,
    source: Source,
    ceiling: usize,
) -> Replayed<M> {
    let clock = ManualClock::at(turns[0].at);
    let config = Config {
        passage_tokens: std::env::var("ENGRAM_QUALITY_PASSAGE_TOKENS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(Config::default().passage_tokens),
        ceiling_tokens: ceiling,
        split_with_model: false,
        walk_with_model: false,
        ..Config::default()
    };
    let store = MemoryStore::new();
    let mut memory = block_on(Memory::open(
        "locomo",
        store.clone(),
        model.clone(),
        clock.clone(),
        config.clone(),
    ))
    .unwrap();
    let mut dia: BTreeMap<u64, usize> = BTreeMap::new();
    let started = Instant::now();
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
    let replay_ms = started.elapsed().as_secs_f64() * 1e3;
    let episodes = block_on(memory.episodes()).unwrap();
    let episode_turns: BTreeMap<u64, Vec<usize>> = episodes
        .iter()
        .map(|e| {
            let ids = (e.episode.first..=e.episode.last).filter_map(|m| dia.get(&m).copied());
            (e.episode.id, ids.collect())
        })
        .collect();
    let obs_dia: BTreeMap<String, String> = observations(conv)
        .into_iter()
        .map(|(_, text, d)| (text, d))
        .collect();
    let index_of: BTreeMap<&str, usize> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| (t.dia.as_str(), i))
        .collect();
    let facts = block_on(memory.facts()).unwrap();
    let fact_turn: BTreeMap<u64, usize> = facts
        .iter()
        .filter_map(|f| {
            let turn = match source {
                Source::Observations => obs_dia
                    .get(&f.sentence)
                    .and_then(|d| index_of.get(d.as_str()).copied()),
                // The message the fact came from, when its note named it.
                _ if !f.sources.is_empty() => dia.get(&f.sources[0]).copied(),
                _ => {
                    let words = term_set(&f.sentence);
                    episode_turns
                        .get(&f.episode)?
                        .iter()
                        .copied()
                        .max_by_key(|&i| {
                            (
                                term_set(&turns[i].text).intersection(&words).count(),
                                usize::MAX - i,
                            )
                        })
                }
            }?;
            Some((f.id, turn))
        })
        .collect();
    let export: Value = serde_json::from_str(&block_on(memory.export()).unwrap()).unwrap();
    let passage_turns = passage_turns(&export, &dia);
    Replayed {
        store,
        model,
        config,
        end: clock.now_ms(),
        dia,
        fact_turn,
        passage_turns,
        facts: facts.len(),
        replay_ms,
    }
}

impl<M: Model + Clone> Replayed<M> {
    /// A memory over a copy of the replayed store.
    fn fork(&self, walk: bool) -> (Memory<MemoryStore, M, ManualClock>, ManualClock) {
        let store = MemoryStore::new();
        for (k, v) in self.store.dump() {
            store.poke(&k, Some(&v));
        }
        let clock = ManualClock::at(self.end + 60_000);
        let config = Config {
            walk_with_model: walk,
            ..self.config.clone()
        };
        let memory = block_on(Memory::open(
            "locomo",
            store,
            self.model.clone(),
            clock.clone(),
            config,
        ))
        .unwrap();
        (memory, clock)
    }

    fn turns_of(&self, item: Item) -> Vec<usize> {
        match item {
            Item::Fact(f) => self.fact_turn.get(&f).copied().into_iter().collect(),
            Item::Passage(p) => self.passage_turns.get(&p).cloned().unwrap_or_default(),
            Item::Message(m) => self.dia.get(&m).copied().into_iter().collect(),
        }
    }
}

/// Share of `evidence` in `seen`.
fn share(evidence: &BTreeSet<usize>, seen: &BTreeSet<usize>) -> f64 {
    evidence.intersection(seen).count() as f64 / evidence.len() as f64
}

/// Sums of one measure per category.
#[derive(Default, Clone)]
struct Sums(BTreeMap<i64, (usize, f64)>);

impl Sums {
    fn add(&mut self, category: i64, v: f64) {
        let s = self.0.entry(category).or_default();
        s.0 += 1;
        s.1 += v;
    }
    fn mean(&self, category: Option<i64>) -> (usize, f64) {
        let (n, s) = self
            .0
            .iter()
            .filter(|(c, _)| category.is_none_or(|x| x == **c))
            .fold((0, 0.0), |a, (_, v)| (a.0 + v.0, a.1 + v.1));
        (n, s / n.max(1) as f64)
    }
}

/// Questions of categories 1-4 with their evidence turns.
fn questions(conv: &Value, turns: &[Turn]) -> Vec<(String, i64, BTreeSet<usize>)> {
    let index_of: BTreeMap<&str, usize> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| (t.dia.as_str(), i))
        .collect();
    let mut out = Vec::new();
    for q in conv["qa"].as_array().unwrap() {
        let category = q["category"].as_i64().unwrap_or(5);
        if !(1..=4).contains(&category) {
            continue;
        }
        let evidence: BTreeSet<usize> = q["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e.as_str())
            .flat_map(|e| {
                e.split(';')
                    .map(|x| x.trim().to_string())
                    .collect::<Vec<_>>()
            })
            .filter_map(|e| index_of.get(e.as_str()).copied())
            .collect();
        if !evidence.is_empty() {
            out.push((
                q["question"].as_str().unwrap().to_string(),
                category,
                evidence,
            ));
        }
    }
    out
}

#[derive(Default)]
struct Measures {
    at5: Sums,
    at10: Sums,
    /// Recall@10 counting evidence the model reads in the view anyway.
    at10_view: Sums,
    budget: [Sums; 3],
    facts: usize,
    passages: usize,
    replay_ms: f64,
    /// Per ceiling: in context, recall block tokens (sum, blocks), view tokens.
    context: BTreeMap<usize, (Sums, usize, usize, usize)>,
    /// Per-question lines of `search` (ENGRAM_QUALITY_DUMP).
    dump: Option<RefCell<Vec<Value>>>,
}

const BUDGETS: [usize; 3] = [200, 500, 1_000];
/// The `limit` of a budgeted search (`ENGRAM_QUALITY_BUDGET_ITEMS`, 40 by
/// default: as the issue measured; a deeper search also ranks differently,
/// its lists being as deep).
fn budget_items() -> usize {
    std::env::var("ENGRAM_QUALITY_BUDGET_ITEMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}
/// The ceiling of the replay that `search` is measured on: nearly
/// everything is out of view, so search has to find it.
const SEARCH_CEILING: usize = 2_000;
/// Ceilings of the in-context measure: the default and a smaller one (at
/// 2,000, a whole LoCoMo session is one live episode that cannot leave, and
/// the question's recall block gives way to keep the view within the
/// ceiling, which measures the squeeze rather than recall).
const CEILINGS: [usize; 2] = [8_000, 4_000];

fn search_measures<M: Model + Clone>(
    r: &Replayed<M>,
    qs: &[(String, i64, BTreeSet<usize>)],
    walk: bool,
    m: &mut Measures,
) {
    let (mut memory, _) = r.fork(false);
    if let Some(out) = &m.dump {
        out.borrow_mut()
            .push(json!({"passages": r.passage_turns, "questions": qs.len()}));
    }
    // What the model reads without any search: the messages in view and
    // the facts block.
    let view = block_on(memory.view()).unwrap();
    let in_view: BTreeSet<usize> = view
        .items
        .iter()
        .flat_map(|it| match it.kind {
            ItemKind::Message => it
                .message
                .and_then(|id| r.dia.get(&id).copied())
                .into_iter()
                .collect(),
            ItemKind::Facts => it
                .facts
                .iter()
                .flat_map(|&f| r.turns_of(Item::Fact(f)))
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    for (question, category, evidence) in qs {
        let search_within =
            |memory: &mut Memory<MemoryStore, M, ManualClock>, limit, budget_tokens| {
                block_on(memory.search(
                    question,
                    SearchOptions {
                        limit,
                        walk,
                        include_in_view: true,
                        budget_tokens,
                        ..SearchOptions::default()
                    },
                ))
                .unwrap()
            };
        let search = |memory: &mut Memory<MemoryStore, M, ManualClock>, limit| -> Vec<SearchHit> {
            search_within(memory, limit, None)
        };
        let hits = search(&mut memory, 10);
        let found = |k: usize| {
            let seen: BTreeSet<usize> = hits
                .iter()
                .take(k)
                .flat_map(|h| r.turns_of(h.item))
                .collect();
            share(evidence, &seen)
        };
        m.at5.add(*category, found(5));
        m.at10.add(*category, found(10));
        let mut seen: BTreeSet<usize> = hits.iter().flat_map(|h| r.turns_of(h.item)).collect();
        seen.extend(in_view.iter().copied());
        m.at10_view.add(*category, share(evidence, &seen));
        let deep = search(&mut memory, 40);
        if let Some(out) = &m.dump {
            let items: Vec<Value> = hits
                .iter()
                .map(|h| {
                    json!({"item": format!("{:?}", h.item), "turns": r.turns_of(h.item),
                        "score": h.score, "hop": h.hop, "text": engram::base::text::clip(&h.text, 300)})
                })
                .collect();
            let deep: Vec<Value> = deep
                .iter()
                .map(|h| {
                    let lists: Vec<String> = h
                        .hits
                        .iter()
                        .map(|x| format!("{:?}{}#{}", x.list, x.query, x.rank))
                        .collect();
                    json!({"item": format!("{:?}", h.item), "turns": r.turns_of(h.item),
                        "lists": lists, "hop": h.hop, "text": engram::base::text::clip(&h.text, 100)})
                })
                .collect();
            // The ranking a budgeted search packs from (a budget that
            // holds everything: its order and forms).
            let ranked: Vec<Value> = search_within(&mut memory, 40, Some(1_000_000))
                .iter()
                .map(|h| {
                    let lists: Vec<String> = h
                        .hits
                        .iter()
                        .map(|x| format!("{:?}{}#{}", x.list, x.query, x.rank))
                        .collect();
                    json!({"item": format!("{:?}", h.item), "turns": r.turns_of(h.item),
                        "lists": lists, "score": h.score,
                        "tokens": engram::base::text::estimate_tokens(&h.text),
                        "text": engram::base::text::clip(&h.text, 100)})
                })
                .collect();
            let line = json!({"q": question, "cat": category, "evidence": evidence,
                "at10": found(10), "hits": items, "deep": deep, "budget_order": ranked});
            out.borrow_mut().push(line);
        }
        for (i, budget) in BUDGETS.iter().enumerate() {
            // What fits the budget, as engram chooses it (a search with a
            // budget: facts before the passages that quote them).
            let fitted = search_within(&mut memory, budget_items(), Some(*budget));
            if walk && std::env::var("ENGRAM_QUALITY_DIFF").is_ok() {
                let off = block_on(memory.search(
                    question,
                    SearchOptions {
                        limit: budget_items(),
                        walk: false,
                        include_in_view: true,
                        budget_tokens: Some(*budget),
                        ..SearchOptions::default()
                    },
                ))
                .unwrap();
                let a: Vec<_> = off.iter().map(|h| h.item).collect();
                let b: Vec<_> = fitted.iter().map(|h| h.item).collect();
                if a != b {
                    eprintln!("DIFF {budget} {question}\n off {a:?}\n on  {b:?}");
                }
            }
            let used: usize = fitted
                .iter()
                .map(|h| engram::base::text::estimate_tokens(&h.text) + engram::recall::HIT_FRAMING)
                .sum();
            assert!(
                used <= *budget,
                "search kept {used} tokens for a budget of {budget}"
            );
            let seen: BTreeSet<usize> = fitted.iter().flat_map(|h| r.turns_of(h.item)).collect();
            m.budget[i].add(*category, share(evidence, &seen));
            if let Some(out) = &m.dump {
                let items: Vec<Value> = fitted
                    .iter()
                    .map(|h| {
                        json!({"item": format!("{:?}", h.item), "turns": r.turns_of(h.item),
                            "tokens": engram::base::text::estimate_tokens(&h.text), "text": h.text})
                    })
                    .collect();
                out.borrow_mut().push(json!({"q": question, "cat": category,
                    "evidence": evidence, "budget": budget,
                    "recall": share(evidence, &seen), "items": items}));
            }
        }
    }
}

fn context_measures<M: Model + Clone>(
    r: &Replayed<M>,
    qs: &[(String, i64, BTreeSet<usize>)],
    walk: bool,
    ceiling: usize,
    m: &mut Measures,
) {
    let slot = m.context.entry(ceiling).or_default();
    for (question, category, evidence) in qs {
        let (mut memory, _) = r.fork(walk);
        let added = block_on(memory.add_message(NewMessage::user(question))).unwrap();
        let view = block_on(memory.view()).unwrap();
        let mut seen: BTreeSet<usize> = BTreeSet::new();
        for (i, it) in view.items.iter().enumerate() {
            match it.kind {
                ItemKind::Message => seen.extend(it.message.and_then(|id| r.dia.get(&id).copied())),
                ItemKind::Facts => {
                    seen.extend(it.facts.iter().flat_map(|&f| r.turns_of(Item::Fact(f))))
                }
                // The question's own block is just before it.
                ItemKind::Recall
                    if view.items.get(i + 1).and_then(|m| m.message) == Some(added.message) =>
                {
                    slot.1 += it.tokens;
                    slot.2 += 1;
                }
                _ => {}
            }
        }
        let blocks = block_on(memory.recalls()).unwrap();
        for b in blocks
            .iter()
            .filter(|b| b.message == added.message && b.gave_way.is_none())
        {
            seen.extend(b.shown().into_iter().flat_map(|i| r.turns_of(i)));
        }
        slot.3 += view.tokens;
        slot.0.add(*category, share(evidence, &seen));
    }
}

/// Plain baselines over single turns, in the same run on the same
/// embeddings: BM25, MiniLM (cosine) and the two fused by reciprocal rank
/// (k = 60), each ranking every turn; recall@10 and recall within the
/// budgets (items in rank order, an item that does not fit is skipped, two
/// tokens of framing per item). Returns BM25, MiniLM, fused.
fn baseline_measures(
    ts: &[Turn],
    qs: &[(String, i64, BTreeSet<usize>)],
    model: &Bench,
    out: &mut [Measures; 3],
) {
    let texts: Vec<String> = ts.iter().map(|t| t.text.clone()).collect();
    let mut index = engram::index::bm25::Bm25::default();
    for (i, t) in texts.iter().enumerate() {
        index.insert(i as u64, t);
    }
    let vectors = block_on(model.embed(&texts)).unwrap();
    let tokens: Vec<usize> = texts
        .iter()
        .map(|t| engram::base::text::estimate_tokens(t))
        .collect();
    for (question, category, evidence) in qs {
        let words: Vec<usize> = index
            .search(question, texts.len(), |_| true)
            .into_iter()
            .map(|(i, _)| i as usize)
            .collect();
        let qv = block_on(model.embed(std::slice::from_ref(question)))
            .unwrap()
            .remove(0);
        let [words, meaning, fused] = baseline_rankings(words, &vectors, &qv);
        for (m, list) in out.iter_mut().zip([&words, &meaning, &fused]) {
            let top: BTreeSet<usize> = list.iter().take(5).copied().collect();
            m.at5.add(*category, share(evidence, &top));
            let top: BTreeSet<usize> = list.iter().take(10).copied().collect();
            m.at10.add(*category, share(evidence, &top));
            for (b, budget) in BUDGETS.iter().enumerate() {
                let mut room = *budget;
                let mut seen = BTreeSet::new();
                for &i in list.iter() {
                    let cost = tokens[i] + engram::recall::HIT_FRAMING;
                    if cost <= room {
                        room -= cost;
                        seen.insert(i);
                    }
                }
                m.budget[b].add(*category, share(evidence, &seen));
            }
        }
    }
}

const CATEGORIES: [(i64, &str); 4] = [
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
];

fn model_for(
    conv: &Value,
    ts: &[Turn],
    source: Source,
    embedder: &Option<Rc<RefCell<Served>>>,
) -> Bench {
    let inner: Rc<dyn DynModel> = match source {
        Source::Offline => Rc::new(OfflineModel::new()),
        _ => Rc::new(scripted(conv, ts, source)),
    };
    Bench {
        inner,
        embedder: embedder.clone(),
    }
}

/// Object-safe model calls (answers are immediate for both inner models).
trait DynModel {
    fn complete_now(&self, request: &TaskRequest) -> Result<String, ModelError>;
    fn embed_now(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError>;
}

impl<M: Model> DynModel for M {
    fn complete_now(&self, request: &TaskRequest) -> Result<String, ModelError> {
        block_on(self.complete(request))
    }
    fn embed_now(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        block_on(self.embed(texts))
    }
}

fn main() {
    let args = quality::Args::parse(true);
    let path = args.path(0, "../shared/data/locomo-dev/locomo-dev.json");
    let only: Option<String> = args.only.or(std::env::var("ENGRAM_QUALITY_ONLY").ok());
    let minilm = args.minilm;
    // ENGRAM_QUALITY_FAST=1: search measures with the walk off only (for
    // trying a change); ENGRAM_QUALITY_DUMP=PATH: per-question search
    // results (walk off) to PATH.<source>.jsonl.
    let fast = std::env::var("ENGRAM_QUALITY_FAST").is_ok_and(|v| v == "1");
    let dump: Option<String> = std::env::var("ENGRAM_QUALITY_DUMP").ok();
    let data: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("LoCoMo file")).unwrap();
    let embedder = minilm.map(|c| Rc::new(RefCell::new(Served::start(&c))));
    let embedder_name = match embedder {
        Some(_) => "all-MiniLM-L6-v2",
        None => "hashing (fallback)",
    };
    let mut results: Vec<(Source, bool, Measures)> = Vec::new();
    let started = Instant::now();
    let mut plain = [
        Measures::default(),
        Measures::default(),
        Measures::default(),
    ];
    for conv in &data {
        let ts = turns(&conv["conversation"]);
        let qs = questions(conv, &ts);
        let model = model_for(conv, &ts, Source::Offline, &embedder);
        baseline_measures(&ts, &qs, &model, &mut plain);
    }
    for source in [Source::Observations, Source::Offline, Source::Passages] {
        if only.as_deref().is_some_and(|o| o != source.name()) {
            continue;
        }
        let mut by_walk = [Measures::default(), Measures::default()];
        if dump.is_some() {
            by_walk[0].dump = Some(RefCell::new(Vec::new()));
        }
        for conv in &data {
            let ts = turns(&conv["conversation"]);
            let qs = questions(conv, &ts);
            let ceilings = match fast {
                true => &CEILINGS[..0],
                false => &CEILINGS[..],
            };
            for ceiling in [SEARCH_CEILING].into_iter().chain(ceilings.iter().copied()) {
                let model = model_for(conv, &ts, source, &embedder);
                let r = replay(conv, &ts, model, source, ceiling);
                for (w, m) in by_walk.iter_mut().enumerate() {
                    let walk = w == 1;
                    if fast && walk {
                        continue;
                    }
                    if ceiling == SEARCH_CEILING {
                        search_measures(&r, &qs, walk, m);
                        m.facts += r.facts;
                        m.passages += r.passage_turns.len();
                        m.replay_ms += r.replay_ms;
                    } else {
                        context_measures(&r, &qs, walk, ceiling, m);
                    }
                }
            }
        }
        let [off, on] = by_walk;
        if let (Some(path), Some(lines)) = (&dump, &off.dump) {
            let text: String = lines.borrow().iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(format!("{path}.{}.jsonl", source.name()), text).unwrap();
        }
        results.push((source, false, off));
        if !fast {
            results.push((source, true, on));
        }
        eprintln!(
            "{}: done at {:.0} s",
            source.name(),
            started.elapsed().as_secs_f64()
        );
    }
    let cats = |s: &Sums| {
        CATEGORIES
            .iter()
            .map(|(c, _)| {
                let (n, v) = s.mean(Some(*c));
                format!(" {v:.3} ({n}) |")
            })
            .collect::<String>()
    };
    let walk_name = |w: bool| if w { "on" } else { "off" };
    println!("Embeddings: {embedder_name}. Questions of categories 1-4 with evidence, both conversations.");
    println!();
    println!("Search, evidence recall (ceiling {SEARCH_CEILING} replay):");
    println!();
    print!("| note source | walk | facts | passages | questions | recall@5 | recall@10 |");
    for (_, name) in CATEGORIES {
        print!(" @10 {name} |");
    }
    println!(" replay (ms) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (source, walk, m) in &results {
        let (n, r5) = m.at5.mean(None);
        let (_, r10) = m.at10.mean(None);
        println!(
            "| {} | {} | {} | {} | {n} | {r5:.3} | {r10:.3} |{} {:.0} |",
            source.name(),
            walk_name(*walk),
            m.facts,
            m.passages,
            cats(&m.at10),
            m.replay_ms
        );
    }
    println!();
    println!("Search, evidence recall@10 counting the evidence the model reads in the view anyway (messages in view, the facts block):");
    println!();
    print!("| note source | walk | recall@10 + view |");
    for (_, name) in CATEGORIES {
        print!(" {name} |");
    }
    println!();
    println!("|---|---|---|---|---|---|---|");
    for (source, walk, m) in &results {
        println!(
            "| {} | {} | {:.3} |{}",
            source.name(),
            walk_name(*walk),
            m.at10_view.mean(None).1,
            cats(&m.at10_view)
        );
    }
    println!();
    println!("Search, evidence recall@5 per category:");
    println!();
    print!("| note source | walk |");
    for (_, name) in CATEGORIES {
        print!(" @5 {name} |");
    }
    println!();
    println!("|---|---|---|---|---|---|");
    for (source, walk, m) in &results {
        println!(
            "| {} | {} |{}",
            source.name(),
            walk_name(*walk),
            cats(&m.at5)
        );
    }
    println!();
    println!("Evidence in context (the question added as a user message, the view rendered):");
    println!();
    print!("| note source | walk | ceiling | in context |");
    for (_, name) in CATEGORIES {
        print!(" {name} |");
    }
    println!(" recall block (tokens, mean) | view (tokens, mean) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (source, walk, m) in &results {
        for (ceiling, (s, block, blocks, view)) in m.context.iter().rev() {
            let (n, v) = s.mean(None);
            println!(
                "| {} | {} | {ceiling} | {v:.3} |{} {:.0} ({blocks} blocks) | {:.0} |",
                source.name(),
                walk_name(*walk),
                cats(s),
                *block as f64 / (*blocks).max(1) as f64,
                *view as f64 / n.max(1) as f64
            );
        }
    }
    println!();
    println!("Evidence recall within a token budget of retrieved text (search's items in order, those that fit):");
    println!();
    print!("| note source | walk |");
    for b in BUDGETS {
        print!(" {b} tokens |");
    }
    println!(" 500: multi-hop | 500: temporal | 500: open-domain | 500: single-hop |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (source, walk, m) in &results {
        print!("| {} | {} |", source.name(), walk_name(*walk));
        for s in &m.budget {
            print!(" {:.3} |", s.mean(None).1);
        }
        println!("{}", cats(&m.budget[1]));
    }
    let plain_names = [
        "BM25 over turns",
        "MiniLM over turns",
        "BM25 + MiniLM over turns, RRF",
    ];
    for (name, m) in plain_names.iter().zip(&plain) {
        print!("| {name} | - |");
        for s in &m.budget {
            print!(" {:.3} |", s.mean(None).1);
        }
        println!("{}", cats(&m.budget[1]));
    }
    for (b, budget) in BUDGETS.iter().enumerate() {
        println!();
        println!("Evidence recall within {budget} tokens per category:");
        println!();
        print!("| method | walk | {budget} tokens |");
        for (_, name) in CATEGORIES {
            print!(" {name} |");
        }
        println!();
        println!("|---|---|---|---|---|---|---|");
        for (source, walk, m) in &results {
            println!(
                "| {} | {} | {:.3} |{}",
                source.name(),
                walk_name(*walk),
                m.budget[b].mean(None).1,
                cats(&m.budget[b])
            );
        }
        for (name, m) in plain_names.iter().zip(&plain) {
            println!(
                "| {name} | - | {:.3} |{}",
                m.budget[b].mean(None).1,
                cats(&m.budget[b])
            );
        }
    }
    println!();
    println!("Plain baselines over turns, evidence recall@5 and @10:");
    println!();
    println!("| method | recall@5 | recall@10 |");
    println!("|---|---|---|");
    for (name, m) in plain_names.iter().zip(&plain) {
        println!(
            "| {name} | {:.3} | {:.3} |",
            m.at5.mean(None).1,
            m.at10.mean(None).1
        );
    }
    eprintln!("total {:.0} s", started.elapsed().as_secs_f64());
}
