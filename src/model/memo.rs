//! Answers remembered for the length of one public call, so that a call
//! re-run after losing the log head to another writer does not pay for the
//! model again: the same request gets the same answer.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::host::{Model, ModelError, Task, TaskRequest};

/// A model wrapper that caches successful answers by request.
pub(crate) struct Memo<'a, M> {
    inner: &'a M,
    answers: RefCell<BTreeMap<(Task, u32, String), String>>,
    vectors: RefCell<BTreeMap<Vec<String>, Vec<Vec<f32>>>>,
}

impl<'a, M: Model> Memo<'a, M> {
    pub(crate) fn new(inner: &'a M) -> Self {
        Memo {
            inner,
            answers: RefCell::default(),
            vectors: RefCell::default(),
        }
    }
}

impl<M: Model> Model for Memo<'_, M> {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        let key = (request.task, request.attempt, request.content.clone());
        if let Some(a) = self.answers.borrow().get(&key) {
            return Ok(a.clone());
        }
        let a = self.inner.complete(request).await?;
        self.answers.borrow_mut().insert(key, a.clone());
        Ok(a)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        if let Some(v) = self.vectors.borrow().get(texts) {
            return Ok(v.clone());
        }
        let v = self.inner.embed(texts).await?;
        self.vectors.borrow_mut().insert(texts.to_vec(), v.clone());
        Ok(v)
    }

    fn count_tokens(&self, text: &str) -> usize {
        self.inner.count_tokens(text)
    }
}
