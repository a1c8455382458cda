//! Answers remembered for the length of one public call, so that a call
//! re-run after losing the log head to another writer does not pay for the
//! model again: the same request gets the same answer. Its maps sit behind
//! `Mutex`es (never contended: a call runs on one task) so that a call's
//! future is `Send` when the host's store and model are.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::base::health::lock;

use crate::base::host::{Model, ModelError, Task, TaskRequest};

/// The answers one public call got, kept across its attempts.
#[derive(Default)]
pub(crate) struct Answers {
    answers: Mutex<BTreeMap<(Task, u32, String), String>>,
    vectors: Mutex<BTreeMap<Vec<String>, Vec<Vec<f32>>>>,
}

/// A model wrapper that answers a request seen before from [`Answers`].
pub(crate) struct Memo<'a, M> {
    inner: &'a M,
    seen: &'a Answers,
}

impl<'a, M: Model> Memo<'a, M> {
    pub(crate) fn new(inner: &'a M, seen: &'a Answers) -> Self {
        Memo { inner, seen }
    }
}

impl<M: Model> Model for Memo<'_, M> {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        let key = (request.task, request.attempt, request.content.clone());
        if let Some(a) = lock(&self.seen.answers).get(&key) {
            return Ok(a.clone());
        }
        let a = self.inner.complete(request).await?;
        lock(&self.seen.answers).insert(key, a.clone());
        Ok(a)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        if let Some(v) = lock(&self.seen.vectors).get(texts) {
            return Ok(v.clone());
        }
        let v = self.inner.embed(texts).await?;
        lock(&self.seen.vectors).insert(texts.to_vec(), v.clone());
        Ok(v)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.inner.count_tokens(text)
    }
}
