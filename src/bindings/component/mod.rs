//! The WASI Preview 2 component binding (`wit/engram.wit`, world `engram`).
//!
//! The host's `clock`, `store` and `model` imports become the engine's
//! [`Clock`], [`Store`] and [`Model`]; the exported `memory` resource holds
//! one [`engram::Memory`](crate::memory::handle::Memory) behind a `RefCell`. Its model is
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

use crate::base::config::Config;

mod convert;
mod host;
mod knowledge;

use crate::bindings::component::convert::{distilled, list, n32};
use crate::bindings::component::host::{GuestModel, HostClock, HostStore};
use crate::bindings::component::knowledge::page_options;

/// The code wit-bindgen generates from `wit/`, kept apart from ours.
mod wit;

use wit::engram::memory::model as wmodel;
use wit::exports::engram::memory::{diagnostics as wdiagnostics, engine as w, offline as woffline};

use crate::base::host::TaskRequest;

/// The component's export implementation.
struct Component;

wit::export!(Component with_types_in wit);

impl w::Guest for Component {
    type Memory = MemoryResource;
}

impl wdiagnostics::Guest for Component {
    fn graph_checksum(rows: u32, dim: u32) -> u64 {
        crate::index::vector::graph_checksum(rows as usize, dim as usize)
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
            task: crate::bindings::component::convert::task_from(task),
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
        n32(crate::offline::embed::DIMENSION)
    }
}

// ---- The exported resource ---------------------------------------------------

type Engine = crate::memory::handle::Memory<HostStore, GuestModel, HostClock>;

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
fn done<T, U: Into<T>>(r: crate::base::error::Result<U>) -> Res<T> {
    r.map(Into::into).map_err(Into::into)
}

/// Converts an engine call's list.
fn done_list<T, U: From<T>>(r: crate::base::error::Result<Vec<T>>) -> Res<Vec<U>> {
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
        let message = crate::types::message::NewMessage::try_from(message)?;
        done(run(self.engine().add_message(message)))
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

    fn add_messages(&self, messages: Vec<w::NewMessage>) -> Res<w::Batch> {
        let messages = messages
            .into_iter()
            .map(crate::types::message::NewMessage::try_from)
            .collect::<Result<Vec<_>, _>>()?;
        done(run(self.engine().add_messages(&messages)))
    }

    fn threads(&self) -> Res<Vec<w::ThreadInfo>> {
        done_list(run(self.engine().threads()))
    }

    fn view_in(&self, thread: String) -> Res<w::View> {
        done(run(self.engine().view_in(&thread)))
    }

    fn render_openai_in(&self, thread: String) -> Res<String> {
        Ok(openai(&run(self.engine().view_in(&thread))?))
    }

    fn render_responses_in(&self, thread: String) -> Res<String> {
        Ok(responses(&run(self.engine().view_in(&thread))?))
    }

    fn render_responses_at_in(&self, at: i64, thread: String) -> Res<String> {
        Ok(responses(&run(self.engine().view_at_in(at, &thread))?))
    }

    fn view_tokens_in(&self, thread: String) -> Res<u32> {
        Ok(n32(run(self.engine().view_tokens_in(&thread))?))
    }

    fn view_at_in(&self, at: i64, thread: String) -> Res<w::View> {
        done(run(self.engine().view_at_in(at, &thread)))
    }

    fn render_openai_at_in(&self, at: i64, thread: String) -> Res<String> {
        Ok(openai(&run(self.engine().view_at_in(at, &thread))?))
    }

    fn end_turn_in(&self, thread: String) -> Res<Option<w::DistilledBlock>> {
        Ok(run(self.engine().end_turn_in(&thread))?.map(distilled))
    }

    fn maintain_in(&self, thread: String) -> Res<w::Maintained> {
        done(run(self.engine().maintain_in(&thread)))
    }

    fn pending_in(&self, thread: String) -> Res<w::Pending> {
        done(run(self.engine().pending_in(&thread)))
    }

    fn take_degraded(&self) -> Vec<w::Degraded> {
        list(self.engine().take_degraded())
    }

    fn search(&self, query: String, options: Option<w::SearchOptions>) -> Res<Vec<w::SearchHit>> {
        let options = options
            .map(crate::types::recall::SearchOptions::try_from)
            .transpose()?
            .unwrap_or_default();
        done_list(run(self.engine().search(&query, options)))
    }

    fn hit_text(&self, item: w::RecallItem) -> Res<String> {
        let item = match item {
            w::RecallItem::Fact(id) => crate::types::recall::Item::Fact(id),
            w::RecallItem::Passage(id) => crate::types::recall::Item::Passage(id),
            w::RecallItem::Message(id) => crate::types::recall::Item::Message(id),
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

    fn facts_page(&self, page: w::PageRequest, filter: w::FactFilter) -> Res<w::FactPage> {
        done(run(self.engine().facts_page(page_options(page, filter))))
    }

    fn messages_page(&self, page: w::PageRequest, thread: Option<String>) -> Res<w::MessagePage> {
        done(run(self.engine().messages_page(page_options(page, thread))))
    }

    fn episodes_page(&self, page: w::PageRequest, filter: w::EpisodeFilter) -> Res<w::EpisodePage> {
        done(run(self.engine().episodes_page(page_options(page, filter))))
    }

    fn remember(&self, statement: w::Statement) -> Res<w::Remembered> {
        let statement: crate::types::fact::Statement = statement.into();
        done(run(self.engine().remember(statement)))
    }

    fn revise(&self, id: u64, statement: w::Statement) -> Res<w::Remembered> {
        let statement: crate::types::fact::Statement = statement.into();
        done(run(self.engine().revise(id, statement)))
    }

    fn fact(&self, id: u64) -> Res<Option<w::Fact>> {
        run(self.engine().fact(id))
            .map(|f| f.map(Into::into))
            .map_err(Into::into)
    }

    fn history(&self, id: u64) -> Res<w::FactHistory> {
        done(run(self.engine().history(id)))
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

    fn explain_message(&self, id: u64) -> Res<w::MessageExplanation> {
        done(run(self.engine().explain_message(id)))
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
fn openai(view: &crate::view::View) -> String {
    serde_json::Value::Array(view.to_openai()).to_string()
}

/// A view as JSON text of OpenAI Responses API input items.
fn responses(view: &crate::view::View) -> String {
    serde_json::Value::Array(view.to_responses()).to_string()
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
    let engine = run(crate::memory::handle::Memory::open_as(
        &namespace, HostStore, model, HostClock, config, salvage,
    ))?;
    Ok(w::Memory::new(MemoryResource(RefCell::new(engine))))
}
