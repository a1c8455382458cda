//! Retrieval quality on LongMemEval (Wu et al., 2024; the development slice
//! of 30 questions of the S split, MIT licence, read from
//! `../shared/data/longmemeval-dev/`, not bundled): `scripts/bench-quality`,
//! or `cargo run --release --example longmemeval -- [PATH] [--minilm CMD]`.
//!
//! Each question is its own memory: its haystack sessions are replayed in
//! date order (user and assistant turns as they are, the sessions' dates as
//! the clock, one turn every 30 seconds within a session), with the offline
//! model for every task (its own boundaries and facts: the dataset has no
//! observations), then the question is asked at its `question_date`.
//! Evidence: the turns marked `has_answer` (turn level) and the
//! `answer_session_ids` (session level).
//!
//! Measures, per question type, for engram (walk off and on) and, in the
//! same run on the same embeddings, plain baselines over single turns (BM25,
//! MiniLM cosine, and the two fused by reciprocal rank, k = 60):
//!
//! * turn recall@5 and @10 of `search` (a passage counts its turns, a fact
//!   the turn it was written from) and session recall_any@5/@10 (any
//!   evidence session among the sessions of the top k items);
//! * recall within 200, 500 and 1,000 tokens: each method's items in rank
//!   order, an item that does not fit is skipped, two tokens of framing per
//!   item (engram: `search` with `budget_tokens`);
//! * evidence in context (engram): the question added as a user message,
//!   the view rendered at ceilings 8,000 and 4,000, with the view's size.
//!
//! `ENGRAM_LME_QUESTIONS=N` measures the first N questions of each type;
//! `ENGRAM_QUALITY_FAST=1` search and budgets only, walk off only.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Instant;

use engram::index::bm25::Bm25;
use engram::offline::words::term_set;
use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::view::ItemKind;
use engram::Clock;
use engram::Config;
use engram::Memory;
use engram::Model;
use engram::ModelError;
use engram::NewMessage;
use engram::OfflineModel;
use engram::TaskRequest;
use engram::{types::recall::Item, types::recall::SearchOptions};
use serde_json::Value;

#[path = "quality/mod.rs"]
mod quality;
use quality::{baseline_rankings, passage_turns, Served};

/// The offline model for every task, embedding with the served sentence
/// model when there is one.
#[derive(Clone)]
struct Bench {
    inner: OfflineModel,
    embedder: Option<Rc<RefCell<Served>>>,
}

impl Bench {
    fn embed_now(&self, texts: &[String]) -> Vec<Vec<f32>> {
        match &self.embedder {
            Some(e) if !texts.is_empty() => e.borrow_mut().embed(texts),
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

/// Milliseconds since 1970 of a LongMemEval date, `2023/05/20 (Sat) 02:21`.
fn parse_date(s: &str) -> Option<i64> {
    let mut it = s.split_whitespace();
    let ymd: Vec<i64> = it
        .next()?
        .split('/')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let _weekday = it.next()?;
    let hm: Vec<i64> = it
        .next()?
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let (y, m, d) = (ymd[0], ymd[1], ymd[2]);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hm[0]) * 60 + hm[1]) * 60_000)
}

/// One turn as replayed.
struct Turn {
    text: String,
    user: bool,
    at: i64,
    session: usize,
    evidence: bool,
}

/// A question with its haystack in date order.
struct Question {
    id: String,
    kind: String,
    question: String,
    asked_at: i64,
    turns: Vec<Turn>,
    /// Session index -> whether it is an answer session.
    answer_sessions: BTreeSet<usize>,
}

fn question(q: &Value) -> Question {
    let sessions = q["haystack_sessions"].as_array().unwrap();
    let dates = q["haystack_dates"].as_array().unwrap();
    let ids = q["haystack_session_ids"].as_array().unwrap();
    let answer: BTreeSet<&str> = q["answer_session_ids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let mut order: Vec<usize> = (0..sessions.len()).collect();
    let at = |i: usize| parse_date(dates[i].as_str().unwrap()).unwrap();
    order.sort_by_key(|&i| (at(i), i));
    let mut turns = Vec::new();
    let mut clock = 0i64;
    let mut answer_sessions = BTreeSet::new();
    for &s in &order {
        if answer.contains(ids[s].as_str().unwrap_or_default()) {
            answer_sessions.insert(s);
        }
        clock = clock.max(at(s));
        for t in sessions[s].as_array().unwrap() {
            let text = t["content"].as_str().unwrap_or_default().trim().to_string();
            if text.is_empty() {
                continue;
            }
            clock += 30_000;
            turns.push(Turn {
                text,
                user: t["role"].as_str() == Some("user"),
                at: clock,
                session: s,
                evidence: t["has_answer"].as_bool() == Some(true),
            });
        }
    }
    Question {
        id: q["question_id"].as_str().unwrap().to_string(),
        kind: q["question_type"].as_str().unwrap().to_string(),
        question: q["question"].as_str().unwrap().to_string(),
        asked_at: parse_date(q["question_date"].as_str().unwrap())
            .unwrap()
            .max(clock + 60_000),
        turns,
        answer_sessions,
    }
}

/// A replayed question and where each item's turns are.
struct Replayed {
    store: MemoryStore,
    model: Bench,
    config: Config,
    dia: BTreeMap<u64, usize>,
    fact_turn: BTreeMap<u64, usize>,
    passage_turns: BTreeMap<u64, Vec<usize>>,
    facts: usize,
    replay_ms: f64,
}

fn replay(q: &Question, model: Bench, ceiling: usize) -> Replayed {
    let clock = ManualClock::at(q.turns[0].at);
    let config = Config {
        ceiling_tokens: ceiling,
        split_with_model: false,
        walk_with_model: false,
        ..Config::default()
    };
    let store = MemoryStore::new();
    let mut memory = block_on(Memory::open(
        "lme",
        store.clone(),
        model.clone(),
        clock.clone(),
        config.clone(),
    ))
    .unwrap();
    let started = Instant::now();
    let mut dia = BTreeMap::new();
    for (i, t) in q.turns.iter().enumerate() {
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
    let facts = block_on(memory.facts()).unwrap();
    let fact_turn: BTreeMap<u64, usize> = facts
        .iter()
        .filter_map(|f| {
            // The message the fact came from, when its note named it.
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
                        term_set(&q.turns[i].text).intersection(&words).count(),
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
        passage_turns,
        facts: facts.len(),
        replay_ms,
    }
}

impl Replayed {
    fn fork(&self, walk: bool, at: i64) -> Memory<MemoryStore, Bench, ManualClock> {
        let store = MemoryStore::new();
        for (k, v) in self.store.dump() {
            store.poke(&k, Some(&v));
        }
        let config = Config {
            walk_with_model: walk,
            ..self.config.clone()
        };
        block_on(Memory::open(
            "lme",
            store,
            self.model.clone(),
            ManualClock::at(at),
            config,
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
}

/// Sums of one measure per question type.
#[derive(Default, Clone)]
struct Sums(BTreeMap<String, (usize, f64)>);

impl Sums {
    fn add(&mut self, kind: &str, v: f64) {
        let s = self.0.entry(kind.to_string()).or_default();
        s.0 += 1;
        s.1 += v;
    }
    fn mean(&self, kind: Option<&str>) -> (usize, f64) {
        let (n, s) = self
            .0
            .iter()
            .filter(|(c, _)| kind.is_none_or(|x| x == c.as_str()))
            .fold((0, 0.0), |a, (_, v)| (a.0 + v.0, a.1 + v.1));
        (n, s / n.max(1) as f64)
    }
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
const SEARCH_CEILING: usize = 2_000;
const CEILINGS: [usize; 2] = [8_000, 4_000];
const TYPES: [&str; 6] = [
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
];

/// One method's measures.
#[derive(Default)]
struct Measures {
    at5: Sums,
    at10: Sums,
    any5: Sums,
    any10: Sums,
    budget: [Sums; 3],
    /// Per ceiling: in context, view tokens (sum).
    context: BTreeMap<usize, (Sums, usize)>,
}

impl Measures {
    /// Adds the measures of one ranked list of items (each with its turns
    /// and its text's tokens).
    fn ranked(&mut self, q: &Question, items: &[(Vec<usize>, usize)]) {
        let evidence: BTreeSet<usize> = (0..q.turns.len())
            .filter(|&i| q.turns[i].evidence)
            .collect();
        let within = |k: usize| -> BTreeSet<usize> {
            items
                .iter()
                .take(k)
                .flat_map(|(t, _)| t.iter().copied())
                .collect()
        };
        let share = |seen: &BTreeSet<usize>| {
            evidence.intersection(seen).count() as f64 / evidence.len().max(1) as f64
        };
        let any = |seen: &BTreeSet<usize>| {
            let sessions: BTreeSet<usize> = seen.iter().map(|&i| q.turns[i].session).collect();
            f64::from(u8::from(
                sessions.intersection(&q.answer_sessions).next().is_some(),
            ))
        };
        if !evidence.is_empty() {
            self.at5.add(&q.kind, share(&within(5)));
            self.at10.add(&q.kind, share(&within(10)));
        }
        self.any5.add(&q.kind, any(&within(5)));
        self.any10.add(&q.kind, any(&within(10)));
    }

    fn budgets(&mut self, q: &Question, fitted: [BTreeSet<usize>; 3]) {
        let evidence: BTreeSet<usize> = (0..q.turns.len())
            .filter(|&i| q.turns[i].evidence)
            .collect();
        if evidence.is_empty() {
            return;
        }
        for (i, seen) in fitted.iter().enumerate() {
            let v = evidence.intersection(seen).count() as f64 / evidence.len() as f64;
            self.budget[i].add(&q.kind, v);
        }
    }
}

/// Fills `budget` tokens with `items` in rank order (an item that does not
/// fit is skipped), two tokens of framing each: the turns read.
fn fill(items: &[(Vec<usize>, usize)], budget: usize) -> BTreeSet<usize> {
    let mut room = budget;
    let mut seen = BTreeSet::new();
    for (turns, tokens) in items {
        let cost = tokens + engram::recall::HIT_FRAMING;
        if cost <= room {
            room -= cost;
            seen.extend(turns.iter().copied());
        }
    }
    seen
}

fn turn_text(t: &Turn) -> String {
    format!("{}: {}", if t.user { "user" } else { "assistant" }, t.text)
}

/// The plain baselines over single turns: BM25, MiniLM and their fusion.
fn baselines(q: &Question, model: &Bench, out: &mut [Measures; 3]) {
    let texts: Vec<String> = q.turns.iter().map(turn_text).collect();
    let mut index = Bm25::default();
    for (i, t) in texts.iter().enumerate() {
        index.insert(i as u64, t);
    }
    let words: Vec<usize> = index
        .search(&q.question, texts.len(), |_| true)
        .into_iter()
        .map(|(i, _)| i as usize)
        .collect();
    let vectors = model.embed_now(&texts);
    let qv = model.embed_now(std::slice::from_ref(&q.question)).remove(0);
    let [words, meaning, fused] = baseline_rankings(words, &vectors, &qv);
    for (m, list) in out.iter_mut().zip([&words, &meaning, &fused]) {
        let items: Vec<(Vec<usize>, usize)> = list
            .iter()
            .map(|&i| (vec![i], engram::base::text::estimate_tokens(&texts[i])))
            .collect();
        m.ranked(q, &items);
        m.budgets(q, BUDGETS.map(|b| fill(&items, b)));
    }
}

fn search_measures(q: &Question, r: &Replayed, walk: bool, m: &mut Measures) {
    let mut memory = r.fork(false, q.asked_at);
    let search = |memory: &mut Memory<MemoryStore, Bench, ManualClock>, limit, budget| {
        block_on(memory.search(
            &q.question,
            SearchOptions {
                limit,
                walk,
                include_in_view: true,
                budget_tokens: budget,
                ..SearchOptions::default()
            },
        ))
        .unwrap()
    };
    let hits = search(&mut memory, 10, None);
    let items: Vec<(Vec<usize>, usize)> = hits
        .iter()
        .map(|h| {
            (
                r.turns_of(h.item),
                engram::base::text::estimate_tokens(&h.text),
            )
        })
        .collect();
    m.ranked(q, &items);
    let fitted = BUDGETS.map(|b| {
        let hits = search(&mut memory, budget_items(), Some(b));
        let used: usize = hits
            .iter()
            .map(|h| engram::base::text::estimate_tokens(&h.text) + engram::recall::HIT_FRAMING)
            .sum();
        assert!(used <= b, "search kept {used} tokens for a budget of {b}");
        if std::env::var("ENGRAM_LME_TRACE").is_ok_and(|id| id == q.id) {
            println!("{} within {b} tokens:", q.id);
            for h in &hits {
                let turns = r.turns_of(h.item);
                let evidence = turns.iter().filter(|&&t| q.turns[t].evidence).count();
                let text: String = h.text.chars().take(110).collect();
                println!(
                    "  {:?} {} tok, turns {turns:?}, evidence {evidence}, {:?}: {}",
                    h.item,
                    engram::base::text::estimate_tokens(&h.text),
                    h.hits
                        .iter()
                        .map(|x| format!("{:?}{}#{}", x.list, x.query, x.rank))
                        .collect::<Vec<_>>(),
                    text.replace('\n', " / ")
                );
            }
        }
        hits.iter().flat_map(|h| r.turns_of(h.item)).collect()
    });
    if std::env::var_os("ENGRAM_LME_PER_QUESTION").is_some() {
        let evidence: BTreeSet<usize> = (0..q.turns.len())
            .filter(|&i| q.turns[i].evidence)
            .collect();
        let share = |s: &BTreeSet<usize>| {
            evidence.intersection(s).count() as f64 / evidence.len().max(1) as f64
        };
        eprintln!(
            "perq {} {} {:.2} {:.2} {:.2}",
            q.id,
            q.kind,
            share(&fitted[0]),
            share(&fitted[1]),
            share(&fitted[2])
        );
    }
    m.budgets(q, fitted);
}

fn context_measures(q: &Question, r: &Replayed, walk: bool, ceiling: usize, m: &mut Measures) {
    let evidence: BTreeSet<usize> = (0..q.turns.len())
        .filter(|&i| q.turns[i].evidence)
        .collect();
    if evidence.is_empty() {
        return;
    }
    let mut memory = r.fork(walk, q.asked_at);
    let added = block_on(memory.add_message(NewMessage::user(&q.question))).unwrap();
    let view = block_on(memory.view()).unwrap();
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    for it in &view.items {
        match it.kind {
            ItemKind::Message => seen.extend(it.message.and_then(|id| r.dia.get(&id).copied())),
            ItemKind::Facts => {
                seen.extend(it.facts.iter().flat_map(|&f| r.turns_of(Item::Fact(f))))
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
    let slot = m.context.entry(ceiling).or_default();
    slot.1 += view.tokens;
    let v = evidence.intersection(&seen).count() as f64 / evidence.len() as f64;
    slot.0.add(&q.kind, v);
}

fn main() {
    let args = quality::Args::parse(false);
    let path = args.path(0, "../shared/data/longmemeval-dev/longmemeval-s-dev.json");
    let minilm = args.minilm;
    let fast = std::env::var("ENGRAM_QUALITY_FAST").is_ok_and(|v| v == "1");
    let per_type: usize = std::env::var("ENGRAM_LME_QUESTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    let data: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("LongMemEval file")).unwrap();
    let embedder = minilm.map(|c| Rc::new(RefCell::new(Served::start(&c))));
    let embedder_name = match embedder {
        Some(_) => "all-MiniLM-L6-v2",
        None => "hashing (fallback)",
    };
    let model = Bench {
        inner: OfflineModel::new(),
        embedder,
    };
    let started = Instant::now();
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    // engram walk off, walk on; BM25, MiniLM, fused.
    let mut engram = [Measures::default(), Measures::default()];
    let mut plain = [
        Measures::default(),
        Measures::default(),
        Measures::default(),
    ];
    let (mut facts, mut passages, mut turns, mut replay_ms, mut questions) = (0, 0, 0, 0.0, 0);
    for q in &data {
        let q = question(q);
        if std::env::var("ENGRAM_LME_TRACE").is_ok_and(|id| id != q.id) {
            continue;
        }
        let n = taken.entry(q.kind.clone()).or_default();
        if *n >= per_type {
            continue;
        }
        *n += 1;
        questions += 1;
        turns += q.turns.len();
        baselines(&q, &model, &mut plain);
        let ceilings = match fast {
            true => &CEILINGS[..0],
            false => &CEILINGS[..],
        };
        for ceiling in [SEARCH_CEILING].into_iter().chain(ceilings.iter().copied()) {
            let r = replay(&q, model.clone(), ceiling);
            for (w, m) in engram.iter_mut().enumerate() {
                let walk = w == 1;
                if fast && walk {
                    continue;
                }
                if ceiling == SEARCH_CEILING {
                    search_measures(&q, &r, walk, m);
                } else {
                    context_measures(&q, &r, walk, ceiling, m);
                }
            }
            if ceiling == SEARCH_CEILING {
                facts += r.facts;
                passages += r.passage_turns.len();
                replay_ms += r.replay_ms;
            }
        }
        eprintln!(
            "{} ({}): done at {:.0} s",
            q.id,
            q.kind,
            started.elapsed().as_secs_f64()
        );
    }
    let mut rows: Vec<(String, &Measures)> = vec![
        ("engram, offline facts, walk off".into(), &engram[0]),
        ("BM25 over turns".into(), &plain[0]),
        ("MiniLM over turns".into(), &plain[1]),
        ("BM25 + MiniLM over turns, RRF".into(), &plain[2]),
    ];
    if !fast {
        rows.insert(1, ("engram, offline facts, walk on".into(), &engram[1]));
    }
    println!(
        "LongMemEval dev: {questions} questions, {turns} turns, embeddings {embedder_name}; \
         engram: {facts} offline facts, {passages} passages, replay {:.0} s (ceiling {SEARCH_CEILING}).",
        replay_ms / 1e3
    );
    println!();
    println!("| method | recall@5 | recall@10 | any@5 | any@10 | 200 tokens | 500 tokens | 1000 tokens |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, m) in &rows {
        print!(
            "| {name} | {:.3} | {:.3} | {:.3} | {:.3} |",
            m.at5.mean(None).1,
            m.at10.mean(None).1,
            m.any5.mean(None).1,
            m.any10.mean(None).1
        );
        for s in &m.budget {
            print!(" {:.3} |", s.mean(None).1);
        }
        println!();
    }
    for (label, pick) in [
        ("turn recall within 200 tokens", 0usize),
        ("turn recall within 500 tokens", 1),
        ("turn recall within 1000 tokens", 2),
        ("session recall_any@5", 3),
    ] {
        println!();
        println!("Per question type, {label}:");
        println!();
        print!("| method |");
        for t in TYPES {
            print!(" {t} |");
        }
        println!();
        println!("|---|---|---|---|---|---|---|");
        for (name, m) in &rows {
            let s = if pick < 3 { &m.budget[pick] } else { &m.any5 };
            print!("| {name} |");
            for t in TYPES {
                let (n, v) = s.mean(Some(t));
                print!(" {v:.3} ({n}) |");
            }
            println!();
        }
    }
    if !fast {
        println!();
        println!("Evidence in context (engram; the question added as a user message at its date, the view rendered):");
        println!();
        print!("| walk | ceiling | in context |");
        for t in TYPES {
            print!(" {t} |");
        }
        println!(" view (tokens, mean) |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for (w, m) in engram.iter().enumerate() {
            for (ceiling, (s, view)) in m.context.iter().rev() {
                let (n, v) = s.mean(None);
                print!(
                    "| {} | {ceiling} | {v:.3} |",
                    if w == 1 { "on" } else { "off" }
                );
                for t in TYPES {
                    let (n, v) = s.mean(Some(t));
                    print!(" {v:.3} ({n}) |");
                }
                println!(" {:.0} |", *view as f64 / n.max(1) as f64);
            }
        }
    }
    eprintln!("total {:.0} s", started.elapsed().as_secs_f64());
}
