//! Answers remembered for the length of one public call, so that a call
//! re-run after losing the log head to another writer does not pay for the
//! model again: the same request gets the same answer. Its maps sit behind
//! `Mutex`es (never contended: a call runs on one task) so that a call's
//! future is `Send` when the host's store and model are.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use crate::host::{Model, ModelError, Task, TaskRequest};

/// A model wrapper that caches successful answers by request.
pub(crate) struct Memo<'a, M> {
    inner: &'a M,
    answers: Mutex<BTreeMap<(Task, u32, String), String>>,
    vectors: Mutex<BTreeMap<Vec<String>, Vec<Vec<f32>>>>,
}

impl<'a, M: Model> Memo<'a, M> {
    pub(crate) fn new(inner: &'a M) -> Self {
        Memo {
            inner,
            answers: Mutex::default(),
            vectors: Mutex::default(),
        }
    }
}

/// A lock that a panic elsewhere does not poison (the memo holds plain
/// maps: whatever state a panic left is still a valid cache).
trait LockClean<T> {
    fn lock_clean(&self) -> MutexGuard<'_, T>;
}

impl<T> LockClean<T> for Mutex<T> {
    fn lock_clean(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<M: Model> Model for Memo<'_, M> {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        let key = (request.task, request.attempt, request.content.clone());
        if let Some(a) = self.answers.lock_clean().get(&key) {
            return Ok(a.clone());
        }
        let a = self.inner.complete(request).await?;
        self.answers.lock_clean().insert(key, a.clone());
        Ok(a)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        if let Some(v) = self.vectors.lock_clean().get(texts) {
            return Ok(v.clone());
        }
        let v = self.inner.embed(texts).await?;
        self.vectors.lock_clean().insert(texts.to_vec(), v.clone());
        Ok(v)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.inner.count_tokens(text)
    }
}
