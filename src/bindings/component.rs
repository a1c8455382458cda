//! The WASI Preview 2 component binding (`wit/engram.wit`, world `engram`).
//!
//! The host's `clock`, `store` and `model` imports become the engine's
//! [`Clock`], [`Store`] and [`Model`]; the exported `memory` resource holds
//! one [`engram::Memory`](crate::Memory) behind a `RefCell`. Everything here
//! converts types and maps errors: every decision stays in the core.
//!
//! The imports are synchronous, so every engine future is ready when first
//! polled; [`run`] polls it once and treats pending as a broken invariant.

use std::cell::{RefCell, RefMut};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use crate::host::{Clock, Model, ModelError, Store, StoreError, Task, TaskRequest, Write};
use crate::{Config, Error};

/// The code wit-bindgen generates from `wit/`, kept apart from ours.
mod wit {
    wit_bindgen::generate!({
        path: "wit",
        world: "engram",
    });
}

use wit::engram::memory::{clock as wclock, model as wmodel, store as wstore};
use wit::exports::engram::memory::engine as w;

/// The component's export implementation.
struct Component;

wit::export!(Component with_types_in wit);

impl w::Guest for Component {
    type Memory = MemoryResource;
}

// ---- Host adapters: the imports as the engine's traits ---------------------

/// The host's `clock` import.
struct HostClock;

impl Clock for HostClock {
    fn now_ms(&self) -> i64 {
        wclock::now_ms()
    }
}

/// The host's `store` import.
struct HostStore;

fn store_error(e: wstore::StoreError) -> StoreError {
    match e {
        wstore::StoreError::Conflict => StoreError::Conflict,
        wstore::StoreError::Failed(m) => StoreError::Failed(m),
    }
}

impl Store for HostStore {
    async fn get(&self, key: &str) -> Result<Option<String>, StoreError> {
        wstore::get(key).map_err(store_error)
    }

    async fn put(&self, key: &str, value: &str) -> Result<(), StoreError> {
        wstore::put(key, value).map_err(store_error)
    }

    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        wstore::delete(key).map_err(store_error)
    }

    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        wstore::list_prefix(prefix).map_err(store_error)
    }

    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&str>,
        writes: &[Write],
    ) -> Result<(), StoreError> {
        wstore::write_if(guard, expected, writes).map_err(store_error)
    }
}

/// The host's `model` import.
struct HostModel;

fn task(t: Task) -> wmodel::Task {
    match t {
        Task::Segment => wmodel::Task::Segment,
        Task::Note => wmodel::Task::Note,
        Task::Trace => wmodel::Task::Trace,
        Task::Resolve => wmodel::Task::Resolve,
        Task::Reconcile => wmodel::Task::Reconcile,
        Task::Split => wmodel::Task::Split,
        Task::Relevance => wmodel::Task::Relevance,
        Task::Distill => wmodel::Task::Distill,
    }
}

impl Model for HostModel {
    async fn complete(&self, r: &TaskRequest) -> Result<String, ModelError> {
        let request = wmodel::TaskRequest {
            task: task(r.task),
            system: r.system.clone(),
            content: r.content.clone(),
            schema: r.schema.clone(),
            attempt: r.attempt,
        };
        wmodel::complete(&request).map_err(ModelError::Unavailable)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        wmodel::embed(texts).map_err(ModelError::Unavailable)
    }

    fn count_tokens(&self, text: &str) -> usize {
        match wmodel::count_tokens(text) {
            Some(n) => n as usize,
            None => crate::text::estimate_tokens(text),
        }
    }
}

// ---- The exported resource ---------------------------------------------------

type Engine = crate::Memory<HostStore, HostModel, HostClock>;

/// The `memory` resource: one engine. The component model forbids reentering
/// a component from its own imports, so the borrow is never contended.
struct MemoryResource(RefCell<Engine>);

/// Runs an engine future to completion. Every future of the engine only
/// awaits the synchronous imports above, so it is ready on its first poll.
fn run<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("engine futures over synchronous imports are always ready"),
    }
}

type Res<T> = Result<T, w::MemoryError>;

impl MemoryResource {
    /// The engine, for one call.
    fn engine(&self) -> RefMut<'_, Engine> {
        self.0.borrow_mut()
    }
}

/// Converts an engine call's outcome.
fn done<T, U: Into<T>>(r: crate::Result<U>) -> Res<T> {
    r.map(Into::into).map_err(Into::into)
}

/// Converts an engine call's list.
fn done_list<T, U: From<T>>(r: crate::Result<Vec<T>>) -> Res<Vec<U>> {
    r.map(list).map_err(Into::into)
}

impl w::GuestMemory for MemoryResource {
    fn open(namespace: String, config: String) -> Res<w::Memory> {
        let config = if config.trim().is_empty() {
            Config::default()
        } else {
            Config::from_json(&config)?
        };
        let engine = run(crate::Memory::open(
            &namespace, HostStore, HostModel, HostClock, config,
        ))?;
        Ok(w::Memory::new(MemoryResource(RefCell::new(engine))))
    }

    fn note_tool() -> String {
        Engine::note_tool().to_string()
    }

    fn add_message(&self, message: w::NewMessage) -> Res<w::Added> {
        done(run(self.engine().add_message(message.into())))
    }

    fn view(&self) -> Res<w::View> {
        done(run(self.engine().view()))
    }

    fn render_openai(&self) -> Res<String> {
        let view = run(self.engine().view())?;
        Ok(serde_json::Value::Array(view.to_openai()).to_string())
    }

    fn note(&self, args: w::NoteArgs) -> Res<w::NoteOutcome> {
        done(run(self.engine().note(args.into())))
    }

    fn episodes(&self) -> Res<Vec<w::Episode>> {
        done_list(run(self.engine().episodes()))
    }

    fn messages(&self) -> Res<Vec<w::Message>> {
        done_list(run(self.engine().messages()))
    }

    fn facts(&self) -> Res<Vec<w::Fact>> {
        done_list(run(self.engine().facts()))
    }

    fn entities(&self) -> Res<Vec<w::Entity>> {
        done_list(run(self.engine().entities()))
    }

    fn traces(&self) -> Res<Vec<w::Trace>> {
        done_list(run(self.engine().traces()))
    }

    fn explain_episode(&self, id: u64) -> Res<w::EpisodeExplanation> {
        done(run(self.engine().explain_episode(id)))
    }

    fn explain_fact(&self, id: u64) -> Res<w::FactExplanation> {
        done(run(self.engine().explain_fact(id)))
    }

    fn export(&self) -> Res<String> {
        done(run(self.engine().export()))
    }

    fn import(&self, json: String) -> Res<()> {
        done(run(self.engine().import(&json)))
    }

    fn stats(&self) -> Res<w::Stats> {
        done(run(self.engine().stats()))
    }
}

// ---- Conversions ------------------------------------------------------------

/// A size as WIT's `u32`: `usize` is 32 bits on wasm32, so this is exact.
fn n32(n: usize) -> u32 {
    n as u32
}

fn list<T, U: From<T>>(items: Vec<T>) -> Vec<U> {
    items.into_iter().map(U::from).collect()
}

impl From<Error> for w::MemoryError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidInput(m) => w::MemoryError::InvalidInput(m),
            Error::Store(m) => w::MemoryError::Store(m),
            Error::Model(m) => w::MemoryError::Model(m),
            Error::Corrupt(m) => w::MemoryError::Corrupt(m),
            Error::UnsupportedVersion { found, supported } => {
                w::MemoryError::UnsupportedVersion(w::VersionMismatch { found, supported })
            }
            Error::Busy(m) => w::MemoryError::Busy(m),
        }
    }
}

impl From<crate::Role> for w::Role {
    fn from(r: crate::Role) -> Self {
        match r {
            crate::Role::System => w::Role::System,
            crate::Role::User => w::Role::User,
            crate::Role::Assistant => w::Role::Assistant,
            crate::Role::Tool => w::Role::Tool,
        }
    }
}

impl From<w::Role> for crate::Role {
    fn from(r: w::Role) -> Self {
        match r {
            w::Role::System => crate::Role::System,
            w::Role::User => crate::Role::User,
            w::Role::Assistant => crate::Role::Assistant,
            w::Role::Tool => crate::Role::Tool,
        }
    }
}

impl From<crate::ToolCall> for w::ToolCall {
    fn from(c: crate::ToolCall) -> Self {
        w::ToolCall {
            id: c.id,
            name: c.name,
            arguments: c.arguments,
        }
    }
}

impl From<w::ToolCall> for crate::ToolCall {
    fn from(c: w::ToolCall) -> Self {
        crate::ToolCall {
            id: c.id,
            name: c.name,
            arguments: c.arguments,
        }
    }
}

impl From<w::NewMessage> for crate::NewMessage {
    fn from(m: w::NewMessage) -> Self {
        crate::NewMessage {
            role: m.role.into(),
            content: m.content,
            tool_calls: list(m.tool_calls),
            tool_call_id: m.tool_call_id,
        }
    }
}

impl From<crate::Message> for w::Message {
    fn from(m: crate::Message) -> Self {
        w::Message {
            id: m.id,
            role: m.role.into(),
            content: m.content,
            tool_calls: list(m.tool_calls),
            tool_call_id: m.tool_call_id,
            at: m.at,
            tokens: n32(m.tokens),
            boundary: m.boundary,
        }
    }
}

impl From<crate::Added> for w::Added {
    fn from(a: crate::Added) -> Self {
        w::Added {
            message: a.message,
            formed: a.formed,
            slept: a.slept,
            fade: a.fade,
        }
    }
}

impl From<crate::view::ItemKind> for w::ItemKind {
    fn from(k: crate::view::ItemKind) -> Self {
        use crate::view::ItemKind as K;
        match k {
            K::Facts => w::ItemKind::Facts,
            K::Message => w::ItemKind::Message,
            K::Warning => w::ItemKind::Warning,
            K::Recall => w::ItemKind::Recall,
        }
    }
}

impl From<crate::ViewItem> for w::ViewItem {
    fn from(i: crate::ViewItem) -> Self {
        w::ViewItem {
            kind: i.kind.into(),
            role: i.role.into(),
            text: i.text,
            tokens: n32(i.tokens),
            message: i.message,
            episode: i.episode,
            facts: i.facts,
            tool_calls: list(i.tool_calls),
            tool_call_id: i.tool_call_id,
        }
    }
}

impl From<crate::View> for w::View {
    fn from(v: crate::View) -> Self {
        w::View {
            items: list(v.items),
            tokens: n32(v.tokens),
            ceiling: n32(v.ceiling),
        }
    }
}

impl From<crate::EpisodeState> for w::EpisodeState {
    fn from(s: crate::EpisodeState) -> Self {
        use crate::EpisodeState as S;
        match s {
            S::Live => w::EpisodeState::Live,
            S::Leaving => w::EpisodeState::Leaving,
            S::Sealed => w::EpisodeState::Sealed,
            S::Forgotten => w::EpisodeState::Forgotten,
        }
    }
}

impl From<crate::episode::StateChange> for w::StateChange {
    fn from(c: crate::episode::StateChange) -> Self {
        w::StateChange {
            state: c.state.into(),
            at: c.at,
            fade: c.fade,
        }
    }
}

impl From<crate::episode::NoteFailure> for w::NoteFailure {
    fn from(f: crate::episode::NoteFailure) -> Self {
        w::NoteFailure {
            at: f.at,
            error: f.error,
        }
    }
}

impl From<crate::EpisodeInfo> for w::Episode {
    fn from(i: crate::EpisodeInfo) -> Self {
        let e = i.episode;
        w::Episode {
            id: e.id,
            first: e.first,
            last: e.last,
            formed_at: e.formed_at,
            tokens: n32(e.tokens),
            state: e.state.into(),
            history: list(e.history),
            traces: e.traces,
            facts: e.facts,
            note_failures: list(e.note_failures),
            activation: i.activation,
            significance: i.significance,
        }
    }
}

impl From<crate::FactKind> for w::FactKind {
    fn from(k: crate::FactKind) -> Self {
        use crate::FactKind as K;
        match k {
            K::Fact => w::FactKind::Fact,
            K::Agreed => w::FactKind::Agreed,
            K::Decided => w::FactKind::Decided,
            K::Done => w::FactKind::Done,
            K::Blocked => w::FactKind::Blocked,
            K::Next => w::FactKind::Next,
        }
    }
}

impl From<w::FactKind> for crate::FactKind {
    fn from(k: w::FactKind) -> Self {
        use crate::FactKind as K;
        match k {
            w::FactKind::Fact => K::Fact,
            w::FactKind::Agreed => K::Agreed,
            w::FactKind::Decided => K::Decided,
            w::FactKind::Done => K::Done,
            w::FactKind::Blocked => K::Blocked,
            w::FactKind::Next => K::Next,
        }
    }
}

impl From<w::NewFact> for crate::NewFact {
    fn from(f: w::NewFact) -> Self {
        crate::NewFact {
            subject: f.subject,
            predicate: f.predicate,
            object: f.object,
            sentence: f.sentence,
            kind: f.kind.into(),
        }
    }
}

impl From<w::NoteArgs> for crate::NoteArgs {
    fn from(a: w::NoteArgs) -> Self {
        crate::NoteArgs {
            episode: a.episode,
            facts: list(a.facts),
        }
    }
}

impl From<crate::NoteOutcome> for w::NoteOutcome {
    fn from(o: crate::NoteOutcome) -> Self {
        w::NoteOutcome {
            episode: o.episode,
            added: o.added,
            merged: o.merged,
            retired: o.retired,
            sealed: o.sealed,
        }
    }
}

impl From<crate::fact::Restatement> for w::Restatement {
    fn from(r: crate::fact::Restatement) -> Self {
        w::Restatement {
            episode: r.episode,
            sentence: r.sentence,
            at: r.at,
        }
    }
}

impl From<crate::fact::Retirement> for w::Retirement {
    fn from(r: crate::fact::Retirement) -> Self {
        w::Retirement { by: r.by, at: r.at }
    }
}

impl From<crate::Fact> for w::Fact {
    fn from(f: crate::Fact) -> Self {
        w::Fact {
            id: f.id,
            subject: f.subject,
            predicate: f.predicate,
            object: f.object,
            sentence: f.sentence,
            kind: f.kind.into(),
            episode: f.episode,
            said_at: f.said_at,
            noted_at: f.noted_at,
            embedding: f.embedding,
            restated: list(f.restated),
            retired: f.retired.map(Into::into),
        }
    }
}

impl From<crate::graph::Resolution> for w::Resolution {
    fn from(r: crate::graph::Resolution) -> Self {
        use crate::graph::Resolution as R;
        match r {
            R::New => w::Resolution::New,
            R::Exact => w::Resolution::Exact,
            R::Similar { cosine } => w::Resolution::Similar(cosine),
            R::Judged => w::Resolution::Judged,
        }
    }
}

impl From<crate::graph::Alias> for w::Alias {
    fn from(a: crate::graph::Alias) -> Self {
        w::Alias {
            name: a.name,
            normal: a.normal,
            resolution: a.resolution.into(),
            at: a.at,
        }
    }
}

impl From<crate::Entity> for w::Entity {
    fn from(e: crate::Entity) -> Self {
        w::Entity {
            id: e.id,
            name: e.name,
            aliases: list(e.aliases),
            embedding: e.embedding,
        }
    }
}

impl From<crate::trace::TraceCause> for w::TraceCause {
    fn from(c: crate::trace::TraceCause) -> Self {
        use crate::trace::TraceCause as C;
        match c {
            C::Encoding => w::TraceCause::Encoding,
            C::Fact(id) => w::TraceCause::Fact(id),
            C::Recall(id) => w::TraceCause::Recall(id),
        }
    }
}

impl From<crate::Trace> for w::Trace {
    fn from(t: crate::Trace) -> Self {
        w::Trace {
            id: t.id,
            episode: t.episode,
            cause: t.cause.into(),
            yes: t.yes,
            strength: t.strength,
            at: t.at,
        }
    }
}

impl From<crate::fade::FadeReason> for w::FadeReason {
    fn from(r: crate::fade::FadeReason) -> Self {
        match r {
            crate::fade::FadeReason::Ceiling => w::FadeReason::Ceiling,
            crate::fade::FadeReason::Sleep => w::FadeReason::Sleep,
        }
    }
}

impl From<crate::fade::Fade> for w::Fade {
    fn from(f: crate::fade::Fade) -> Self {
        w::Fade {
            id: f.id,
            reason: f.reason.into(),
            at: f.at,
            view_tokens: n32(f.view_tokens),
            ceiling: n32(f.ceiling),
            landing: n32(f.landing),
            turn_tokens: n32(f.turn_tokens),
            finished_at: f.finished_at,
            view_after: f.view_after.map(n32),
        }
    }
}

impl From<crate::explain::Move> for w::EpisodeMove {
    fn from(m: crate::explain::Move) -> Self {
        w::EpisodeMove {
            state: m.state.into(),
            at: m.at,
            fade: m.fade.map(Into::into),
        }
    }
}

impl From<crate::explain::EpisodeExplanation> for w::EpisodeExplanation {
    fn from(x: crate::explain::EpisodeExplanation) -> Self {
        w::EpisodeExplanation {
            episode: x.episode,
            state: x.state.into(),
            in_view: x.in_view,
            activation: x.activation,
            significance: x.significance,
            traces: list(x.traces),
            moves: list(x.moves),
            summary: x.summary,
        }
    }
}

impl From<crate::explain::FactExplanation> for w::FactExplanation {
    fn from(x: crate::explain::FactExplanation) -> Self {
        w::FactExplanation {
            fact: x.fact,
            sentence: x.sentence,
            subject: x.subject,
            object: x.object,
            in_facts_block: x.in_facts_block,
            episodes: x
                .episodes
                .into_iter()
                .map(|(episode, state)| w::FactSource {
                    episode,
                    state: state.into(),
                })
                .collect(),
            retired_by: x.retired_by.map(|(by, at)| w::Retirement { by, at }),
            traces: list(x.traces),
            summary: x.summary,
        }
    }
}

impl From<crate::Stats> for w::Stats {
    fn from(s: crate::Stats) -> Self {
        let [live, leaving, sealed, forgotten] = s.episodes.map(n32);
        w::Stats {
            messages: n32(s.messages),
            episodes: w::EpisodeCounts {
                live,
                leaving,
                sealed,
                forgotten,
            },
            open_messages: n32(s.open_messages),
            live_facts: n32(s.facts[0]),
            retired_facts: n32(s.facts[1]),
            entities: n32(s.entities),
            traces: n32(s.traces[0]),
            yes_traces: n32(s.traces[1]),
            fades: n32(s.fades),
            log_entries: s.log_entries,
            view_tokens: n32(s.view_tokens),
            ceiling: n32(s.ceiling),
        }
    }
}
