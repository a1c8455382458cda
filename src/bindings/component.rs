//! The WASI Preview 2 component binding (`wit/engram.wit`, world `engram`).
//!
//! The host's `clock`, `store` and `model` imports become the engine's
//! [`Clock`], [`Store`] and [`Model`]; the exported `memory` resource holds
//! one [`engram::Memory`](crate::Memory) behind a `RefCell`. Its model is
//! [`GuestModel`], which routes completions and embeddings each to the host's
//! import or to the built-in [`crate::offline`] model (`open-with`); the
//! exported `offline` interface gives the offline answers directly.
//! Everything here converts types and maps errors: every decision stays in
//! the core.
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
use wit::exports::engram::memory::offline as woffline;

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
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        wstore::get(key).map_err(store_error)
    }

    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
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
        expected: Option<&[u8]>,
        writes: &[Write],
    ) -> Result<(), StoreError> {
        wstore::write_if(guard, expected, writes).map_err(store_error)
    }
}

/// Where one half of the model calls go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The host's `model` import.
    Host,
    /// The built-in offline model.
    Offline,
}

impl From<w::ModelSource> for Source {
    fn from(s: w::ModelSource) -> Self {
        match s {
            w::ModelSource::Host => Source::Host,
            w::ModelSource::Offline => Source::Offline,
        }
    }
}

/// The memory's model: completions and embeddings each from the host's
/// `model` import or from [`crate::offline`]. An offline half never calls
/// the import; token counts are the host's only when completions are.
#[derive(Debug, Clone, Copy)]
struct GuestModel {
    complete: Source,
    embed: Source,
}

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

fn task_from(t: wmodel::Task) -> Task {
    match t {
        wmodel::Task::Segment => Task::Segment,
        wmodel::Task::Note => Task::Note,
        wmodel::Task::Trace => Task::Trace,
        wmodel::Task::Resolve => Task::Resolve,
        wmodel::Task::Reconcile => Task::Reconcile,
        wmodel::Task::Split => Task::Split,
        wmodel::Task::Relevance => Task::Relevance,
        wmodel::Task::Distill => Task::Distill,
    }
}

impl Model for GuestModel {
    async fn complete(&self, r: &TaskRequest) -> Result<String, ModelError> {
        match self.complete {
            Source::Offline => crate::offline::complete(r),
            Source::Host => {
                let request = wmodel::TaskRequest {
                    task: task(r.task),
                    system: r.system.clone(),
                    content: r.content.clone(),
                    schema: r.schema.clone(),
                    attempt: r.attempt,
                };
                wmodel::complete(&request).map_err(ModelError::Unavailable)
            }
        }
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        match self.embed {
            Source::Offline => Ok(crate::offline::embed(texts)),
            Source::Host => wmodel::embed(texts).map_err(ModelError::Unavailable),
        }
    }

    fn count_tokens(&self, text: &str) -> usize {
        let host = match self.complete {
            Source::Host => wmodel::count_tokens(text),
            Source::Offline => None,
        };
        match host {
            Some(n) => n as usize,
            None => crate::text::estimate_tokens(text),
        }
    }
}

impl woffline::Guest for Component {
    fn complete(r: wmodel::TaskRequest) -> Result<String, String> {
        let wmodel::TaskRequest {
            task,
            system,
            content,
            schema,
            attempt,
        } = r;
        let request = TaskRequest {
            task: task_from(task),
            system,
            content,
            schema,
            attempt,
        };
        crate::offline::complete(&request).map_err(|e| e.to_string())
    }

    fn embed(texts: Vec<String>) -> Vec<Vec<f32>> {
        crate::offline::embed(&texts)
    }

    fn dimension() -> u32 {
        n32(crate::offline::DIMENSION)
    }
}

// ---- The exported resource ---------------------------------------------------

type Engine = crate::Memory<HostStore, GuestModel, HostClock>;

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
        Self::open_with(
            namespace,
            config,
            w::ModelSource::Host,
            w::ModelSource::Host,
        )
    }

    fn open_with(
        namespace: String,
        config: String,
        complete: w::ModelSource,
        embed: w::ModelSource,
    ) -> Res<w::Memory> {
        open_engine(namespace, config, complete, embed, false)
    }

    fn open_salvage(
        namespace: String,
        config: String,
        complete: w::ModelSource,
        embed: w::ModelSource,
    ) -> Res<w::Memory> {
        open_engine(namespace, config, complete, embed, true)
    }

    fn note_tool() -> String {
        Engine::note_tool().to_string()
    }

    fn add_message(&self, message: w::NewMessage) -> Res<w::Added> {
        done(run(self.engine().add_message(message.into())))
    }

    fn abandon_tool_call(&self, call_id: String) -> Res<w::Added> {
        done(run(self.engine().abandon_tool_call(&call_id)))
    }

    fn view(&self) -> Res<w::View> {
        done(run(self.engine().view()))
    }

    fn render_openai(&self) -> Res<String> {
        Ok(openai(&run(self.engine().view())?))
    }

    fn view_at(&self, at: i64) -> Res<w::View> {
        done(run(self.engine().view_at(at)))
    }

    fn render_openai_at(&self, at: i64) -> Res<String> {
        Ok(openai(&run(self.engine().view_at(at))?))
    }

    fn end_turn(&self) -> Res<Option<w::DistilledBlock>> {
        Ok(run(self.engine().end_turn())?.map(distilled))
    }

    fn maintain(&self) -> Res<w::Maintained> {
        done(run(self.engine().maintain()))
    }

    fn pending(&self) -> Res<w::Pending> {
        done(run(self.engine().pending()))
    }

    fn take_degraded(&self) -> Vec<w::Degraded> {
        list(self.engine().take_degraded())
    }

    fn search(&self, query: String, options: Option<w::SearchOptions>) -> Res<Vec<w::SearchHit>> {
        let options = options.map(Into::into).unwrap_or_default();
        done_list(run(self.engine().search(&query, options)))
    }

    fn hit_text(&self, item: w::RecallItem) -> Res<String> {
        let item = match item {
            w::RecallItem::Fact(id) => crate::recall::Item::Fact(id),
            w::RecallItem::Passage(id) => crate::recall::Item::Passage(id),
            w::RecallItem::Message(id) => crate::recall::Item::Message(id),
        };
        done(run(self.engine().hit_text(item)))
    }

    fn recalls(&self) -> Res<Vec<w::RecallBlock>> {
        done_list(run(self.engine().recalls()))
    }

    fn explain_recall(&self, fact: u64) -> Res<Vec<w::RecallExplanation>> {
        done_list(run(self.engine().explain_recall(fact)))
    }

    fn set_instructions(&self, text: String) -> Res<bool> {
        done(run(self.engine().set_instructions(&text)))
    }

    fn instructions(&self) -> Res<Option<String>> {
        done(run(self.engine().instructions()))
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

    fn fades(&self) -> Res<Vec<w::Fade>> {
        done_list(run(self.engine().fades()))
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

    fn export_part(&self, cursor: Option<w::ExportCursor>, max_bytes: u32) -> Res<w::ExportPart> {
        done(run(self
            .engine()
            .export_part(cursor.map(Into::into), max_bytes as usize)))
    }

    fn import(&self, json: String) -> Res<()> {
        done(run(self.engine().import(&json)))
    }

    fn import_piece(&self, text: String) -> Res<()> {
        done(self.engine().import_piece(&text))
    }

    fn import_finish(&self) -> Res<()> {
        done(run(self.engine().import_finish()))
    }

    fn import_discard(&self) -> u64 {
        self.engine().import_discard() as u64
    }

    fn stats(&self) -> Res<w::Stats> {
        done(run(self.engine().stats()))
    }

    fn erase(&self, target: w::EraseTarget) -> Res<w::Erased> {
        done(run(self.engine().erase(target.into())))
    }

    fn destroy(&self) -> Res<()> {
        done(run(self.engine().destroy()))
    }
}

/// A view as JSON text of the OpenAI `messages` array.
fn openai(view: &crate::View) -> String {
    serde_json::Value::Array(view.to_openai()).to_string()
}

// ---- Conversions ------------------------------------------------------------
//
// Core structs are destructured field by field, so a field added to the core
// fails this build until the WIT world carries it too.

/// A size or count as WIT's `u32`: `usize` is 32 bits on wasm32, so this is
/// exact.
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
        let crate::ToolCall {
            id,
            name,
            arguments,
        } = c;
        w::ToolCall {
            id,
            name,
            arguments,
        }
    }
}

impl From<w::ToolCall> for crate::ToolCall {
    fn from(c: w::ToolCall) -> Self {
        let w::ToolCall {
            id,
            name,
            arguments,
        } = c;
        crate::ToolCall {
            id,
            name,
            arguments,
        }
    }
}

impl From<w::NewMessage> for crate::NewMessage {
    fn from(m: w::NewMessage) -> Self {
        let w::NewMessage {
            role,
            content,
            tool_calls,
            tool_call_id,
            client_id,
        } = m;
        crate::NewMessage {
            role: role.into(),
            content,
            tool_calls: list(tool_calls),
            tool_call_id,
            client_id,
        }
    }
}

impl From<crate::Message> for w::Message {
    fn from(m: crate::Message) -> Self {
        let crate::Message {
            id,
            role,
            content,
            tool_calls,
            tool_call_id,
            at,
            tokens,
            boundary,
            judged,
            client_id,
            erased,
        } = m;
        w::Message {
            id,
            role: role.into(),
            content,
            tool_calls: list(tool_calls),
            tool_call_id,
            at,
            tokens: n32(tokens),
            boundary,
            judged,
            client_id,
            erased,
        }
    }
}

impl From<crate::Added> for w::Added {
    fn from(a: crate::Added) -> Self {
        let crate::Added {
            message,
            formed,
            slept,
            fade,
            recall,
            distilled: d,
            degraded,
            maintained,
            maintain_error,
            duplicate,
        } = a;
        w::Added {
            message,
            formed,
            slept,
            fade,
            recall,
            distilled: d.map(distilled),
            degraded: list(degraded),
            maintained: maintained.map(Into::into),
            maintain_error,
            duplicate,
        }
    }
}

impl From<crate::Degraded> for w::Degraded {
    fn from(d: crate::Degraded) -> Self {
        let crate::Degraded {
            task: t,
            error,
            attempts,
            at,
            effect,
        } = d;
        w::Degraded {
            task: task(t),
            error,
            attempts,
            at,
            effect,
        }
    }
}

impl From<crate::Maintained> for w::Maintained {
    fn from(m: crate::Maintained) -> Self {
        let crate::Maintained {
            judged,
            formed,
            distilled: d,
            fade,
            sealed,
            deferred,
            noted_late,
            abandoned,
            gave_way,
            degraded,
        } = m;
        w::Maintained {
            judged,
            formed,
            distilled: d.into_iter().map(distilled).collect(),
            fade,
            sealed,
            deferred,
            noted_late,
            abandoned,
            gave_way,
            degraded: list(degraded),
        }
    }
}

impl From<crate::Pending> for w::Pending {
    fn from(p: crate::Pending) -> Self {
        let crate::Pending {
            unjudged,
            undistilled,
            leaving,
            awaiting_note,
            fade_ahead,
        } = p;
        w::Pending {
            unjudged,
            undistilled,
            leaving,
            awaiting_note,
            fade_ahead,
        }
    }
}

impl From<crate::health::LastError> for w::LastError {
    fn from(e: crate::health::LastError) -> Self {
        let crate::health::LastError { task, error, at } = e;
        w::LastError { task, error, at }
    }
}

impl From<crate::Health> for w::Health {
    fn from(h: crate::Health) -> Self {
        let crate::Health {
            calls,
            failed,
            consecutive_failures,
            last_error,
            degraded_steps,
            repairs,
            truncated,
        } = h;
        w::Health {
            calls: calls.into_iter().collect(),
            failed: failed.into_iter().collect(),
            consecutive_failures,
            last_error: last_error.map(Into::into),
            degraded_steps,
            repairs: repairs.into_iter().collect(),
            truncated,
        }
    }
}

impl From<crate::recall::Item> for w::RecallItem {
    fn from(i: crate::recall::Item) -> Self {
        match i {
            crate::recall::Item::Fact(id) => w::RecallItem::Fact(id),
            crate::recall::Item::Passage(id) => w::RecallItem::Passage(id),
            crate::recall::Item::Message(id) => w::RecallItem::Message(id),
        }
    }
}

impl From<crate::recall::List> for w::SearchList {
    fn from(l: crate::recall::List) -> Self {
        use crate::recall::List as L;
        match l {
            L::FactWords => w::SearchList::FactWords,
            L::FactMeaning => w::SearchList::FactMeaning,
            L::PassageWords => w::SearchList::PassageWords,
            L::PassageMeaning => w::SearchList::PassageMeaning,
            L::ViewWords => w::SearchList::ViewWords,
        }
    }
}

impl From<crate::recall::Hit> for w::Hit {
    fn from(h: crate::recall::Hit) -> Self {
        let crate::recall::Hit { list, query, rank } = h;
        w::Hit {
            search: list.into(),
            query: n32(query),
            rank: n32(rank),
        }
    }
}

impl From<crate::recall::Judgment> for w::Judgment {
    fn from(j: crate::recall::Judgment) -> Self {
        match j {
            crate::recall::Judgment::Relevant => w::Judgment::Relevant,
            crate::recall::Judgment::Fallback => w::Judgment::Fallback,
            crate::recall::Judgment::Ranked => w::Judgment::Ranked,
        }
    }
}

impl From<crate::recall::Recalled> for w::Recalled {
    fn from(r: crate::recall::Recalled) -> Self {
        let crate::recall::Recalled {
            item,
            hits,
            fused_rank,
            hop,
            via,
            judgment,
        } = r;
        w::Recalled {
            item: item.into(),
            hits: list(hits),
            fused_rank: fused_rank.map(n32),
            hop,
            via,
            judgment: judgment.into(),
        }
    }
}

impl From<crate::recall::Distillation> for w::Distillation {
    fn from(d: crate::recall::Distillation) -> Self {
        let crate::recall::Distillation { at, kept, failed } = d;
        w::Distillation {
            at,
            kept: list(kept),
            failed,
        }
    }
}

fn distilled((block, d): (u64, crate::recall::Distillation)) -> w::DistilledBlock {
    w::DistilledBlock {
        block,
        distillation: d.into(),
    }
}

impl From<crate::recall::RecallBlock> for w::RecallBlock {
    fn from(b: crate::recall::RecallBlock) -> Self {
        let crate::recall::RecallBlock {
            id,
            message,
            at,
            parts,
            split_failed,
            walk_failed,
            items,
            distilled,
            gave_way,
        } = b;
        w::RecallBlock {
            id,
            message,
            at,
            parts,
            split_failed,
            walk_failed,
            items: list(items),
            distilled: distilled.map(Into::into),
            gave_way,
        }
    }
}

impl From<w::SearchOptions> for crate::recall::SearchOptions {
    fn from(o: w::SearchOptions) -> Self {
        let w::SearchOptions {
            limit,
            walk,
            include_in_view,
            budget_tokens,
        } = o;
        crate::recall::SearchOptions {
            limit: limit as usize,
            walk,
            include_in_view,
            budget_tokens: budget_tokens.map(|b| b as usize),
        }
    }
}

impl From<crate::recall::SearchHit> for w::SearchHit {
    fn from(h: crate::recall::SearchHit) -> Self {
        let crate::recall::SearchHit {
            item,
            text,
            said_at,
            score,
            hits,
            hop,
            retired,
            sources,
        } = h;
        w::SearchHit {
            item: item.into(),
            text,
            said_at,
            score,
            hits: list(hits),
            hop,
            retired,
            sources,
        }
    }
}

impl From<crate::explain::RecallExplanation> for w::RecallExplanation {
    fn from(x: crate::explain::RecallExplanation) -> Self {
        let crate::explain::RecallExplanation {
            block,
            message,
            at,
            hits,
            fused_rank,
            hop,
            via,
            judgment,
            distill_kept,
            summary,
        } = x;
        w::RecallExplanation {
            block,
            message,
            at,
            hits: list(hits),
            fused_rank: fused_rank.map(n32),
            hop,
            via,
            judgment: judgment.into(),
            distill_kept,
            summary,
        }
    }
}

impl From<crate::view::ItemKind> for w::ItemKind {
    fn from(k: crate::view::ItemKind) -> Self {
        use crate::view::ItemKind as K;
        match k {
            K::Instructions => w::ItemKind::Instructions,
            K::Facts => w::ItemKind::Facts,
            K::Message => w::ItemKind::Message,
            K::Warning => w::ItemKind::Warning,
            K::Recall => w::ItemKind::Recall,
        }
    }
}

impl From<crate::ViewItem> for w::ViewItem {
    fn from(i: crate::ViewItem) -> Self {
        let crate::ViewItem {
            kind,
            role,
            text,
            tokens,
            message,
            episode,
            facts,
            tool_calls,
            tool_call_id,
        } = i;
        w::ViewItem {
            kind: kind.into(),
            role: role.into(),
            text,
            tokens: n32(tokens),
            message,
            episode,
            facts,
            tool_calls: list(tool_calls),
            tool_call_id,
        }
    }
}

impl From<crate::View> for w::View {
    fn from(v: crate::View) -> Self {
        let crate::View {
            items,
            tokens,
            ceiling,
            over_ceiling,
        } = v;
        w::View {
            items: list(items),
            tokens: n32(tokens),
            ceiling: n32(ceiling),
            over_ceiling,
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
        let crate::episode::StateChange { state, at, fade } = c;
        w::StateChange {
            state: state.into(),
            at,
            fade,
        }
    }
}

impl From<crate::episode::NoteFailure> for w::NoteFailure {
    fn from(f: crate::episode::NoteFailure) -> Self {
        let crate::episode::NoteFailure { at, error } = f;
        w::NoteFailure { at, error }
    }
}

impl From<crate::EpisodeInfo> for w::Episode {
    fn from(i: crate::EpisodeInfo) -> Self {
        let crate::EpisodeInfo {
            episode,
            activation,
            significance,
        } = i;
        let crate::Episode {
            id,
            first,
            last,
            formed_at,
            tokens,
            state,
            history,
            traces,
            facts,
            note_failures,
            noted,
            deferred,
            abandoned,
        } = episode;
        w::Episode {
            id,
            first,
            last,
            formed_at,
            tokens: n32(tokens),
            state: state.into(),
            history: list(history),
            traces,
            facts,
            note_failures: list(note_failures),
            noted,
            deferred,
            abandoned,
            activation,
            significance,
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
            K::Preference => w::FactKind::Preference,
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
            w::FactKind::Preference => K::Preference,
        }
    }
}

impl From<w::NewFact> for crate::NewFact {
    fn from(f: w::NewFact) -> Self {
        let w::NewFact {
            subject,
            predicate,
            object,
            sentence,
            kind,
        } = f;
        crate::NewFact {
            subject,
            predicate,
            object,
            sentence,
            kind: kind.into(),
            sources: Vec::new(),
        }
    }
}

impl From<w::NoteArgs> for crate::NoteArgs {
    fn from(a: w::NoteArgs) -> Self {
        let w::NoteArgs { episode, facts } = a;
        crate::NoteArgs {
            episode,
            facts: list(facts),
        }
    }
}

impl From<crate::NoteOutcome> for w::NoteOutcome {
    fn from(o: crate::NoteOutcome) -> Self {
        let crate::NoteOutcome {
            episode,
            added,
            merged,
            retired,
            sealed,
        } = o;
        w::NoteOutcome {
            episode,
            added,
            merged,
            retired,
            sealed,
        }
    }
}

impl From<crate::fact::Restatement> for w::Restatement {
    fn from(r: crate::fact::Restatement) -> Self {
        let crate::fact::Restatement {
            episode,
            sentence,
            at,
        } = r;
        w::Restatement {
            episode,
            sentence,
            at,
        }
    }
}

impl From<crate::fact::Retirement> for w::Retirement {
    fn from(r: crate::fact::Retirement) -> Self {
        let crate::fact::Retirement { by, at } = r;
        w::Retirement { by, at }
    }
}

impl From<crate::Fact> for w::Fact {
    fn from(f: crate::Fact) -> Self {
        let crate::Fact {
            id,
            subject,
            predicate,
            object,
            sentence,
            kind,
            episode,
            said_at,
            noted_at,
            embedding,
            sources,
            restated,
            retired,
            erased,
        } = f;
        w::Fact {
            id,
            subject,
            predicate,
            object,
            sentence,
            kind: kind.into(),
            episode,
            said_at,
            noted_at,
            embedding: embedding.to_f32(),
            sources,
            restated: list(restated),
            retired: retired.map(Into::into),
            erased,
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
        let crate::graph::Alias {
            name,
            normal,
            resolution,
            at,
        } = a;
        w::Alias {
            name,
            normal,
            resolution: resolution.into(),
            at,
        }
    }
}

impl From<crate::Entity> for w::Entity {
    fn from(e: crate::Entity) -> Self {
        let crate::Entity {
            id,
            name,
            aliases,
            embedding,
            erased,
        } = e;
        w::Entity {
            id,
            name,
            aliases: list(aliases),
            embedding: embedding.to_f32(),
            erased,
        }
    }
}

impl From<w::EraseTarget> for crate::Target {
    fn from(t: w::EraseTarget) -> Self {
        match t {
            w::EraseTarget::Message(id) => crate::Target::Message(id),
            w::EraseTarget::Episode(id) => crate::Target::Episode(id),
            w::EraseTarget::Fact(id) => crate::Target::Fact(id),
            w::EraseTarget::Entity(id) => crate::Target::Entity(id),
        }
    }
}

impl From<crate::store::ExportCursor> for w::ExportCursor {
    fn from(c: crate::store::ExportCursor) -> Self {
        w::ExportCursor {
            next: c.next,
            end: c.end,
            rewrites: c.rewrites,
            mark: c.mark,
        }
    }
}

impl From<w::ExportCursor> for crate::store::ExportCursor {
    fn from(c: w::ExportCursor) -> Self {
        crate::store::ExportCursor {
            next: c.next,
            end: c.end,
            rewrites: c.rewrites,
            mark: c.mark,
        }
    }
}

impl From<crate::store::ExportPart> for w::ExportPart {
    fn from(p: crate::store::ExportPart) -> Self {
        w::ExportPart {
            text: p.text,
            next: p.next.map(Into::into),
        }
    }
}

impl From<crate::Erased> for w::Erased {
    fn from(e: crate::Erased) -> Self {
        let crate::Erased {
            messages,
            facts,
            entities,
        } = e;
        w::Erased {
            messages,
            facts,
            entities,
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
        let crate::Trace {
            id,
            episode,
            cause,
            yes,
            strength,
            at,
        } = t;
        w::Trace {
            id,
            episode,
            cause: cause.into(),
            yes,
            strength,
            at,
        }
    }
}

impl From<crate::fade::FadeReason> for w::FadeReason {
    fn from(r: crate::fade::FadeReason) -> Self {
        match r {
            crate::fade::FadeReason::Ceiling => w::FadeReason::Ceiling,
            crate::fade::FadeReason::Sleep => w::FadeReason::Sleep,
            crate::fade::FadeReason::Ahead => w::FadeReason::Ahead,
        }
    }
}

impl From<crate::fade::Fade> for w::Fade {
    fn from(f: crate::fade::Fade) -> Self {
        let crate::fade::Fade {
            id,
            reason,
            at,
            view_tokens,
            ceiling,
            landing,
            turn_tokens,
            finished_at,
            view_after,
        } = f;
        w::Fade {
            id,
            reason: reason.into(),
            at,
            view_tokens: n32(view_tokens),
            ceiling: n32(ceiling),
            landing: n32(landing),
            turn_tokens: n32(turn_tokens),
            finished_at,
            view_after: view_after.map(n32),
        }
    }
}

impl From<crate::explain::Move> for w::EpisodeMove {
    fn from(m: crate::explain::Move) -> Self {
        let crate::explain::Move { state, at, fade } = m;
        w::EpisodeMove {
            state: state.into(),
            at,
            fade: fade.map(Into::into),
        }
    }
}

impl From<crate::explain::EpisodeExplanation> for w::EpisodeExplanation {
    fn from(x: crate::explain::EpisodeExplanation) -> Self {
        let crate::explain::EpisodeExplanation {
            episode,
            state,
            in_view,
            activation,
            significance,
            traces,
            moves,
            summary,
        } = x;
        w::EpisodeExplanation {
            episode,
            state: state.into(),
            in_view,
            activation,
            significance,
            traces: list(traces),
            moves: list(moves),
            summary,
        }
    }
}

impl From<crate::explain::FactExplanation> for w::FactExplanation {
    fn from(x: crate::explain::FactExplanation) -> Self {
        let crate::explain::FactExplanation {
            fact,
            sentence,
            subject,
            object,
            in_facts_block,
            episodes,
            retired_by,
            traces,
            declined,
            summary,
        } = x;
        w::FactExplanation {
            fact,
            sentence,
            subject,
            object,
            in_facts_block,
            episodes: episodes
                .into_iter()
                .map(|(episode, state)| w::FactSource {
                    episode,
                    state: state.into(),
                })
                .collect(),
            retired_by: retired_by.map(|(by, at)| w::Retirement { by, at }),
            traces: list(traces),
            declined,
            summary,
        }
    }
}

impl From<crate::Stats> for w::Stats {
    fn from(s: crate::Stats) -> Self {
        let crate::Stats {
            messages,
            episodes,
            open_messages,
            facts: [live_facts, retired_facts],
            entities,
            traces: [traces, yes_traces],
            fades,
            log_entries,
            view_tokens,
            ceiling,
            pending,
            model,
            storage_warnings,
        } = s;
        let [live, leaving, sealed, forgotten] = episodes.map(n32);
        w::Stats {
            messages: n32(messages),
            episodes: w::EpisodeCounts {
                live,
                leaving,
                sealed,
                forgotten,
            },
            open_messages: n32(open_messages),
            live_facts: n32(live_facts),
            retired_facts: n32(retired_facts),
            entities: n32(entities),
            traces: n32(traces),
            yes_traces: n32(yes_traces),
            fades: n32(fades),
            log_entries,
            view_tokens: n32(view_tokens),
            ceiling: n32(ceiling),
            pending: pending.into(),
            model: model.into(),
            storage_warnings,
        }
    }
}

/// `open-with` (or, with `salvage`, `open-salvage`): the config parsed (an
/// empty string is the defaults), the model's halves routed as asked.
fn open_engine(
    namespace: String,
    config: String,
    complete: w::ModelSource,
    embed: w::ModelSource,
    salvage: bool,
) -> Res<w::Memory> {
    let config = if config.trim().is_empty() {
        Config::default()
    } else {
        Config::from_json(&config)?
    };
    let model = GuestModel {
        complete: complete.into(),
        embed: embed.into(),
    };
    let engine = match salvage {
        false => run(crate::Memory::open(
            &namespace, HostStore, model, HostClock, config,
        )),
        true => run(crate::Memory::open_salvage(
            &namespace, HostStore, model, HostClock, config,
        )),
    }?;
    Ok(w::Memory::new(MemoryResource(RefCell::new(engine))))
}
