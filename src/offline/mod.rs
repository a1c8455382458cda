//! The offline model: every task answered without an LLM, and a hashing
//! embedder, so engram runs with no network and no key.
//!
//! It is for demos and tests; plug in a real LLM for real use. It reads the
//! requests the core builds (the formats of `segment.rs`, `note.rs`, ...) and
//! answers by rules:
//!
//! * `segment`: lexical cohesion between the new message and the messages
//!   before it (TextTiling-style), with cue phrases and the time gap;
//! * `note`: subject-predicate-object facts from sentences by rules, the
//!   speakers' pronouns resolved to their names, dates and numbers kept;
//! * `trace`, `relevance`, `resolve`, `reconcile`: shared entities and term
//!   overlap;
//! * `split`: sentence and clause boundaries;
//! * `distill`: overlap with the reply.
//!
//! Deterministic: the same request always gets the same answer.

mod cohesion;
pub mod embed;
mod facts;
mod judge;
mod request;
pub mod words;

use crate::base::host::{Model, ModelError, Task, TaskRequest};

/// The offline model (see the module docs). Stateless and cheap to make.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineModel;

impl OfflineModel {
    /// The offline model.
    pub fn new() -> Self {
        OfflineModel
    }
}

/// Answers one request as the offline model does: the answer's JSON text.
/// Fails with [`ModelError::BadAnswer`] only for a request it cannot read.
pub fn complete(request: &TaskRequest) -> Result<String, ModelError> {
    let content = request.content.as_str();
    let unreadable = || {
        ModelError::BadAnswer(format!(
            "offline model: cannot read this {} request",
            request.task.name()
        ))
    };
    let answer = match request.task {
        Task::Segment => {
            let req = request::segment(content).ok_or_else(unreadable)?;
            serde_json::json!({ "boundary": cohesion::judge(&req) })
        }
        Task::Note => {
            let req = request::note(content).ok_or_else(unreadable)?;
            serde_json::json!({ "facts": facts::note(&req) })
        }
        Task::Trace => judge::trace(content),
        Task::Resolve => judge::resolve(content),
        Task::Reconcile => judge::reconcile(content),
        Task::Split => judge::split(content),
        Task::Relevance => judge::relevance(content),
        Task::Distill => judge::distill(content),
    };
    Ok(answer.to_string())
}

/// The built-in hashing embedder (character n-grams and words): one unit
/// vector of [`DIMENSION`] per text.
pub fn embed(texts: &[String]) -> Vec<Vec<f32>> {
    texts.iter().map(|t| embed::vector(t)).collect()
}

impl Model for OfflineModel {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        complete(request)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        Ok(embed(texts))
    }
}
