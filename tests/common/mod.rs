//! Shared helpers of the behaviour tests: a memory over the test doubles with
//! synchronous wrappers, scripted rules for each model task, JSON answer
//! builders, and messages of an exact token size.
//!
//! Every helper is deterministic: the clock moves only when a test moves it,
//! and every model answer comes from a rule, a queue or the scripted default.

#![allow(dead_code)]

use std::cell::Cell;
use std::rc::Rc;

use engram::testing::{block_on, new_message, ManualClock, MemoryStore, ScriptedModel};
use engram::view::explain::{EpisodeExplanation, FactExplanation};
use engram::Added;
use engram::Config;
use engram::Entity;
use engram::EpisodeInfo;
use engram::EpisodeState;
use engram::Fact;
use engram::FactKind;
use engram::Memory;
use engram::Message;
use engram::Model;
use engram::ModelError;
use engram::NewFact;
use engram::NewMessage;
use engram::NoteArgs;
use engram::NoteOutcome;
use engram::Stats;
use engram::Task;
use engram::TaskRequest;
use engram::Trace;
use engram::View;
use serde_json::json;

/// 2025-11-24 16:00 UTC.
pub const T0: i64 = 1_764_000_000_000;
/// One minute in ms.
pub const MIN: i64 = 60_000;
/// One hour in ms.
pub const HOUR: i64 = 60 * MIN;
/// One day in ms.
pub const DAY: i64 = 24 * HOUR;

/// The marker that the standard segment rule judges as a new concept.
pub const NEW: &str = "NEWTOPIC";

/// The memory type every test uses.
pub type Mem = Memory<MemoryStore, ScriptedModel, ManualClock>;

/// A memory with its doubles, and synchronous wrappers for its calls.
pub struct Fx {
    /// The memory.
    pub memory: Mem,
    /// Its store (shared with clones).
    pub store: MemoryStore,
    /// Its model (shared with clones, for rules and inspection).
    pub model: ScriptedModel,
    /// Its clock.
    pub clock: ManualClock,
    /// Its namespace.
    pub namespace: String,
    /// Its config.
    pub config: Config,
}

impl Fx {
    /// A fresh memory in namespace `test` at [`T0`], whose model finds
    /// nothing relevant to recall (see [`no_recall`]).
    pub fn new(config: Config) -> Fx {
        let model = ScriptedModel::new();
        no_recall(&model);
        Fx::with(
            "test",
            MemoryStore::new(),
            model,
            ManualClock::at(T0),
            config,
        )
    }

    /// A memory over the given doubles.
    pub fn with(
        namespace: &str,
        store: MemoryStore,
        model: ScriptedModel,
        clock: ManualClock,
        config: Config,
    ) -> Fx {
        let memory = block_on(Memory::open(
            namespace,
            store.clone(),
            model.clone(),
            clock.clone(),
            config.clone(),
        ))
        .expect("open");
        Fx {
            memory,
            store,
            model,
            clock,
            namespace: namespace.into(),
            config,
        }
    }

    /// A second handle over the same store, model and clock, or why it
    /// cannot open.
    #[allow(dead_code)]
    pub fn try_reopen(&self) -> engram::Result<Fx> {
        let memory = block_on(Memory::open(
            &self.namespace,
            self.store.clone(),
            self.model.clone(),
            self.clock.clone(),
            self.config.clone(),
        ))?;
        Ok(Fx {
            memory,
            store: self.store.clone(),
            model: self.model.clone(),
            clock: self.clock.clone(),
            namespace: self.namespace.clone(),
            config: self.config.clone(),
        })
    }

    /// A second handle over the same store, model and clock.
    pub fn reopen(&self) -> Fx {
        Fx::with(
            &self.namespace,
            self.store.clone(),
            self.model.clone(),
            self.clock.clone(),
            self.config.clone(),
        )
    }

    /// Now, in ms.
    pub fn now(&self) -> i64 {
        engram::Clock::now_ms(&self.clock)
    }

    /// Moves the clock forward by `minutes`.
    pub fn minutes(&self, minutes: i64) {
        self.clock.advance_minutes(minutes);
    }

    /// Adds a message; panics on error.
    pub fn add(&mut self, m: NewMessage) -> Added {
        block_on(self.memory.add_message(m)).expect("add_message")
    }

    /// Adds a message, returning the result.
    pub fn try_add(&mut self, m: NewMessage) -> engram::Result<Added> {
        block_on(self.memory.add_message(m))
    }

    /// Adds a user message.
    pub fn user(&mut self, text: &str) -> Added {
        self.add(NewMessage::user(text))
    }

    /// Adds an assistant message.
    pub fn assistant(&mut self, text: &str) -> Added {
        self.add(NewMessage::assistant(text))
    }

    /// Calls `note`.
    pub fn note(&mut self, args: NoteArgs) -> engram::Result<NoteOutcome> {
        block_on(self.memory.note(args))
    }

    /// The view.
    pub fn view(&mut self) -> View {
        block_on(self.memory.view()).expect("view")
    }

    /// Every episode with activation and significance now.
    pub fn episodes(&mut self) -> Vec<EpisodeInfo> {
        block_on(self.memory.episodes()).expect("episodes")
    }

    /// One episode.
    pub fn episode(&mut self, id: u64) -> EpisodeInfo {
        self.episodes()
            .into_iter()
            .find(|e| e.episode.id == id)
            .expect("episode exists")
    }

    /// States of every episode, in order.
    pub fn states(&mut self) -> Vec<EpisodeState> {
        self.episodes().iter().map(|e| e.episode.state).collect()
    }

    /// Message ranges of every episode, in order.
    pub fn ranges(&mut self) -> Vec<(u64, u64)> {
        self.episodes()
            .iter()
            .map(|e| (e.episode.first, e.episode.last))
            .collect()
    }

    /// Every message.
    pub fn messages(&mut self) -> Vec<Message> {
        block_on(self.memory.messages()).expect("messages")
    }

    /// Every fact.
    pub fn facts(&mut self) -> Vec<Fact> {
        block_on(self.memory.facts()).expect("facts")
    }

    /// Every entity.
    pub fn entities(&mut self) -> Vec<Entity> {
        block_on(self.memory.entities()).expect("entities")
    }

    /// Every trace.
    pub fn traces(&mut self) -> Vec<Trace> {
        block_on(self.memory.traces()).expect("traces")
    }

    /// Runs the work waiting after a reply.
    #[allow(dead_code)]
    pub fn maintain(&mut self) -> engram::Maintained {
        block_on(self.memory.maintain()).expect("maintain")
    }

    /// The work waiting for `maintain`.
    #[allow(dead_code)]
    pub fn pending(&mut self) -> engram::Pending {
        block_on(self.memory.pending()).expect("pending")
    }

    /// Counts.
    pub fn stats(&mut self) -> Stats {
        block_on(self.memory.stats()).expect("stats")
    }

    /// The export.
    pub fn export(&mut self) -> String {
        block_on(self.memory.export()).expect("export")
    }

    /// Explains an episode.
    pub fn explain_episode(&mut self, id: u64) -> EpisodeExplanation {
        block_on(self.memory.explain_episode(id)).expect("explain_episode")
    }

    /// Explains a fact.
    pub fn explain_fact(&mut self, id: u64) -> FactExplanation {
        block_on(self.memory.explain_fact(id)).expect("explain_fact")
    }

    /// The entity of a name (any alias, compared normalised).
    pub fn entity_named(&mut self, name: &str) -> Entity {
        let normal = engram::base::text::normalise_name(name);
        self.entities()
            .into_iter()
            .find(|e| e.aliases.iter().any(|a| a.normal == normal))
            .unwrap_or_else(|| panic!("no entity named {name:?}"))
    }

    /// Adds a turn: a user message that starts a new concept (carrying
    /// [`NEW`]) of `user_tokens` and an assistant answer of
    /// `assistant_tokens`, one minute apart, the clock then one more minute
    /// on. Needs [`standard_segment`]. Returns both results.
    pub fn turn(
        &mut self,
        topic: &str,
        user_tokens: usize,
        assistant_tokens: usize,
    ) -> (Added, Added) {
        let u = self.add(NewMessage::user(sized(
            &format!("{NEW} {topic}"),
            user_tokens,
        )));
        self.minutes(1);
        let a = self.add(NewMessage::assistant(sized(topic, assistant_tokens)));
        self.minutes(1);
        (u, a)
    }
}

/// A config for small, exact scenarios: every size given, and fades only
/// at the ceiling (no fade ahead), so a scenario's fades come where its
/// sizes say.
/// An export of a memory holding one noted fact ("Alice likes tea."), with
/// `dimension`-d hashing vectors: the seed the index-store tests grow into
/// memories of many facts.
pub fn one_fact_export(dimension: usize) -> String {
    let mut fx = Fx::new(Config::default());
    fx.model
        .set_embedder(engram::testing::HashEmbedder { dimension });
    standard_segment(&fx.model);
    fx.turn("tea", 30, 30);
    fx.user(&format!("{NEW} next"));
    fx.note(NoteArgs {
        episode: None,
        facts: vec![fact("Alice", "likes", "tea", "Alice likes tea.")],
    })
    .expect("note");
    fx.export()
}

/// The time of the first log entry of an export that adds a fact, and that
/// `fact_added` event: a template for importing memories of many facts.
pub fn first_fact_event(log: &[serde_json::Value]) -> (serde_json::Value, serde_json::Value) {
    log.iter()
        .find_map(|entry| {
            let e = entry["events"]
                .as_array()?
                .iter()
                .find(|e| e["type"] == "fact_added")?;
            Some((entry["at"].clone(), e.clone()))
        })
        .expect("a fact event")
}

pub fn config(ceiling: usize) -> Config {
    Config {
        ceiling_tokens: ceiling,
        fade_ahead: false,
        ..Config::default()
    }
}

/// Text of exactly `tokens` tokens in the engine's estimate, framing
/// included (so the kept message has `tokens` tokens): `marker` followed by
/// filler words.
pub fn sized(marker: &str, tokens: usize) -> String {
    let framing = engram::types::message::FRAMING_TOKENS;
    assert!(tokens > framing, "a message holds more than its framing");
    let words = tokens - framing;
    let mut s = marker.to_string();
    let mut n = marker.split_whitespace().count();
    while n < words {
        s.push_str(" w");
        n += 1;
    }
    let got = engram::base::text::estimate_tokens(&s) + framing;
    assert_eq!(
        got, tokens,
        "marker {marker:?} is too long for {tokens} tokens"
    );
    s
}

// ---------------------------------------------------------------- answers

/// A `segment` answer.
pub fn boundary_json(p: f32) -> String {
    json!({ "boundary": p }).to_string()
}

/// A plain fact.
pub fn fact(subject: &str, predicate: &str, object: &str, sentence: &str) -> NewFact {
    NewFact {
        subject: subject.into(),
        predicate: predicate.into(),
        object: object.into(),
        sentence: sentence.into(),
        kind: FactKind::Fact,
        sources: Vec::new(),
    }
}

/// A fact of a kind (milestones).
pub fn kind_fact(
    kind: FactKind,
    subject: &str,
    predicate: &str,
    object: &str,
    sentence: &str,
) -> NewFact {
    NewFact {
        kind,
        ..fact(subject, predicate, object, sentence)
    }
}

/// A `note` answer.
pub fn note_json(facts: &[NewFact]) -> String {
    json!({ "facts": facts }).to_string()
}

/// Host `note` arguments.
pub fn note_args(episode: Option<u64>, facts: Vec<NewFact>) -> NoteArgs {
    NoteArgs { episode, facts }
}

// ---------------------------------------------------------------- rules

/// Relevance rule: no recalled candidate is relevant, so no recall block
/// enters the view. Recall has its own tests; these keep the view to the
/// facts block, the messages and the warnings, so sizes stay exact.
pub fn no_recall(model: &ScriptedModel) {
    model.on(Task::Relevance, |_| {
        Some(json!({ "relevant": [] }).to_string())
    });
}

/// Segment rule: a new message containing [`NEW`] starts a new concept
/// (0.95); others continue (0.1).
pub fn standard_segment(model: &ScriptedModel) {
    segment_by(model, |text| if text.contains(NEW) { 0.95 } else { 0.1 });
}

/// Segment rule: the boundary of a new message is `f(its text)`.
pub fn segment_by(model: &ScriptedModel, f: impl Fn(&str) -> f32 + 'static) {
    model.on(Task::Segment, move |req| {
        Some(boundary_json(f(new_message(req))))
    });
}

/// Segment rule: the first marker contained in the new message gives its
/// boundary; other messages get the default.
pub fn segment_markers(model: &ScriptedModel, markers: &[(&str, f32)]) {
    let markers: Vec<(String, f32)> = markers.iter().map(|(m, p)| (m.to_string(), *p)).collect();
    model.on(Task::Segment, move |req| {
        let text = new_message(req);
        markers
            .iter()
            .find(|(m, _)| text.contains(m.as_str()))
            .map(|(_, p)| boundary_json(*p))
    });
}

/// Note rule: an episode whose text contains a marker gets its facts.
pub fn notes_for(model: &ScriptedModel, rules: Vec<(&str, Vec<NewFact>)>) {
    let rules: Vec<(String, Vec<NewFact>)> =
        rules.into_iter().map(|(m, f)| (m.to_string(), f)).collect();
    model.on(Task::Note, move |req| {
        rules
            .iter()
            .find(|(m, _)| req.content.contains(m.as_str()))
            .map(|(_, f)| note_json(f))
    });
}

/// A `trace` request, parsed: the facts and the episodes (label line and
/// text) it lists.
#[derive(Debug, Clone)]
pub struct TraceRequest {
    /// Fact sentences, in order (number = index + 1).
    pub facts: Vec<String>,
    /// Episodes: (first message id, text with the label line), in order.
    pub episodes: Vec<(u64, String)>,
}

/// Parses a `trace` request's content.
pub fn parse_trace(content: &str) -> TraceRequest {
    let (facts, episodes) = content
        .split_once("\nEpisodes:\n")
        .expect("trace request layout");
    let facts = facts
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(". ").map(|(_, s)| s.to_string()))
        .collect();
    let mut out: Vec<(u64, String)> = Vec::new();
    for line in episodes.lines() {
        let label = line
            .split_once(". (")
            .filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
        match label {
            Some((_, rest)) => {
                let first = rest
                    .trim_start_matches("messages ")
                    .trim_start_matches("message ")
                    .split(['-', ')'])
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("episode label");
                out.push((first, format!("{line}\n")));
            }
            None => {
                if let Some(last) = out.last_mut() {
                    last.1.push_str(line);
                    last.1.push('\n');
                }
            }
        }
    }
    TraceRequest {
        facts,
        episodes: out,
    }
}

/// Trace rule: fact `f` is about an episode (first message id, text) when
/// `yes(f, first, text)`.
pub fn traces_by(model: &ScriptedModel, yes: impl Fn(&str, u64, &str) -> bool + 'static) {
    model.on(Task::Trace, move |req| {
        let t = parse_trace(&req.content);
        let facts: Vec<_> = t
            .facts
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let eps: Vec<usize> = t
                    .episodes
                    .iter()
                    .enumerate()
                    .filter(|(_, (first, text))| yes(f, *first, text))
                    .map(|(j, _)| j + 1)
                    .collect();
                json!({"fact": i + 1, "episodes": eps})
            })
            .collect();
        Some(json!({ "facts": facts }).to_string())
    });
}

/// A `resolve` request, parsed: the name and the candidates' names.
pub fn parse_resolve(content: &str) -> (String, Vec<String>) {
    let name = content
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("Name: "))
        .expect("name line");
    let (_, list) = content.split_once("Known entities:\n").expect("candidates");
    let cands = list
        .lines()
        .filter_map(|l| l.split_once(". ").map(|(_, r)| r))
        .map(|r| r.split(" (also:").next().unwrap_or(r).to_string())
        .collect();
    (name.to_string(), cands)
}

/// Resolve rule: `same(name, candidate name)` says which candidate it is.
pub fn resolve_by(model: &ScriptedModel, same: impl Fn(&str, &str) -> bool + 'static) {
    model.on(Task::Resolve, move |req| {
        let (name, cands) = parse_resolve(&req.content);
        let hit = cands.iter().position(|c| same(&name, c)).map(|i| i + 1);
        Some(json!({ "same_as": hit }).to_string())
    });
}

/// A `reconcile` request, parsed: the new sentence and the held sentences.
pub fn parse_reconcile(content: &str) -> (String, Vec<String>) {
    let new = content
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("New fact: "))
        .expect("new fact");
    let (_, list) = content.split_once("Held facts:\n").expect("held facts");
    let held = list
        .lines()
        .filter_map(|l| l.split_once(". ").map(|(_, r)| r))
        .map(|r| r.rsplit_once(" (said ").map_or(r, |(s, _)| s).to_string())
        .collect();
    (new.to_string(), held)
}

/// Reconcile rule: `rel(new, held)` gives `restates`, `contradicts` or
/// `None` (unrelated).
pub fn reconcile_by(
    model: &ScriptedModel,
    rel: impl Fn(&str, &str) -> Option<&'static str> + 'static,
) {
    model.on(Task::Reconcile, move |req| {
        let (new, held) = parse_reconcile(&req.content);
        let judgments: Vec<_> = held
            .iter()
            .enumerate()
            .filter_map(|(i, h)| rel(&new, h).map(|r| json!({"fact": i + 1, "relation": r})))
            .collect();
        Some(json!({ "judgments": judgments }).to_string())
    });
}

/// Queues `n` failures of `task` (an outage each).
pub fn fail_next(model: &ScriptedModel, task: Task, n: u32) {
    for _ in 0..n {
        model.push(task, Err(ModelError::Unavailable("scripted outage".into())));
    }
}

// ---------------------------------------------------------------- a model with bad vectors

/// What [`BadEmbed`] does to the vectors of its inner model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedFault {
    /// Nothing: the inner model's vectors.
    None,
    /// The first vector's first value is NaN.
    Nan,
    /// Every vector has `n` dimensions (the inner model's, cut or padded).
    Dimension(usize),
    /// One vector fewer than texts.
    MissingVector,
}

/// A scripted model whose embeddings can be broken on demand.
#[derive(Clone)]
pub struct BadEmbed {
    /// The scripted model answering everything.
    pub inner: ScriptedModel,
    /// The fault applied to the next embed calls.
    pub fault: Rc<Cell<EmbedFault>>,
}

impl BadEmbed {
    /// Wraps `inner`, with no fault.
    pub fn new(inner: ScriptedModel) -> Self {
        BadEmbed {
            inner,
            fault: Rc::new(Cell::new(EmbedFault::None)),
        }
    }
}

impl Model for BadEmbed {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        self.inner.complete(request).await
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut v = self.inner.embed(texts).await?;
        match self.fault.get() {
            EmbedFault::None => {}
            EmbedFault::Nan => v[0][0] = f32::NAN,
            EmbedFault::Dimension(n) => v.iter_mut().for_each(|x| x.resize(n, 0.5)),
            EmbedFault::MissingVector => {
                v.pop();
            }
        }
        Ok(v)
    }
}

/// Runs a future to completion (re-exported for tests that call the engine
/// directly).
pub fn run<F: std::future::Future>(f: F) -> F::Output {
    block_on(f)
}
