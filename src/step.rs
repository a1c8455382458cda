//! What one step of a public call works with, shared by every concept module:
//! the model, the config, the state, the events emitted so far, the call's
//! single clock reading, and the degraded steps reported so far. It lives
//! below the concept modules so none of them needs the `Memory` facade.

use crate::base::config::Config;
use crate::base::health::{Degraded, Report};
use crate::base::host::{Model, ModelError, Task};
use crate::state::State;
use crate::types::event::Event;

/// The context of one step.
pub(crate) struct Ctx<'a, M: Model> {
    pub model: &'a M,
    pub config: &'a Config,
    pub state: &'a mut State,
    pub events: &'a mut Vec<Event>,
    pub now: i64,
    /// The thread the call acts in (its message's, or the one named): the
    /// view it keeps under the ceiling, the open stretch it cuts.
    pub thread: &'a str,
    /// The call's model requests and degraded steps, reported to the host
    /// with its outcome and counted in `stats`.
    pub report: &'a Report,
}

impl<M: Model> Ctx<'_, M> {
    /// The same call acting in `thread` (its events and report shared).
    pub fn in_thread<'b>(&'b mut self, thread: &'b str) -> Ctx<'b, M> {
        Ctx {
            model: self.model,
            config: self.config,
            state: &mut *self.state,
            events: &mut *self.events,
            now: self.now,
            thread,
            report: self.report,
        }
    }

    /// Applies an event to the state and records it for the commit.
    pub fn emit(&mut self, e: Event) {
        self.state
            .apply(&e)
            .expect("the engine emits only events that fit its state");
        self.events.push(e);
    }

    /// The size of the call's thread's view now.
    pub fn view_tokens(&self) -> usize {
        crate::view::tokens(self.state, self.model, self.config, self.thread)
    }

    /// Reports that `task` failed after its retries and the step went on
    /// without it (`effect` says how).
    pub fn degrade(&self, task: Task, error: &ModelError, effect: &str) {
        crate::base::health::lock(&self.report.degraded).push(Degraded {
            task,
            error: error.to_string(),
            attempts: self.config.model_attempts,
            at: self.now,
            effect: effect.to_string(),
        });
    }
}

impl<M: Model> Ctx<'_, M> {
    /// Asks `task` (see [`crate::llm::ask`]), counting every attempt.
    pub async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        task: Task,
        content: String,
        check: impl Fn(&T) -> Result<(), String>,
    ) -> Result<T, ModelError> {
        crate::llm::ask(
            self.model,
            self.config.model_attempts,
            task,
            content,
            check,
            |seen| match seen {
                Ok(repairs) => {
                    self.report.attempt(task.name(), None);
                    crate::base::health::lock(&self.report.repairs)
                        .extend(repairs.iter().map(|r| r.name()));
                }
                Err(error) => self.report.attempt(task.name(), Some(error)),
            },
        )
        .await
    }

    /// Embeds `texts` (see [`crate::llm::embed`]) in the memory's
    /// dimension (or `dimension` when the memory has none yet), counted.
    pub async fn embed(
        &self,
        texts: &[String],
        dimension: Option<usize>,
    ) -> Result<Vec<Vec<f32>>, ModelError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let r = crate::llm::embed(
            self.model,
            texts,
            self.state.dimension.or(dimension),
            self.config.max_dimension,
        )
        .await;
        self.report
            .attempt("embed", r.as_ref().err().map(|e| e.to_string()));
        r
    }
}
