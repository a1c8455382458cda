//! The host's imports as the engine's traits: its clock, its store, and
//! the model whose halves go to the host's import or to the offline model.

use wit::engram::memory::{clock as wclock, model as wmodel, store as wstore};
use wit::exports::engram::memory::engine as w;

use crate::base::host::{Clock, Model, ModelError, Store, StoreError, TaskRequest, Write};
use crate::bindings::component::convert::task;
use crate::bindings::component::wit;

/// The host's `clock` import.
pub(super) struct HostClock;

impl Clock for HostClock {
    fn now_ms(&self) -> i64 {
        wclock::now_ms()
    }
}

/// The host's `store` import.
pub(super) struct HostStore;

pub(super) fn store_error(e: wstore::StoreError) -> StoreError {
    match e {
        wstore::StoreError::Conflict => StoreError::Conflict,
        wstore::StoreError::Failed(m) => StoreError::Failed(m),
    }
}

impl Store for HostStore {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        wstore::get(key).map_err(store_error)
    }

    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        wstore::get_many(keys).map_err(store_error)
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
pub(super) enum Source {
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
pub(super) struct GuestModel {
    pub(super) complete: Source,
    pub(super) embed: Source,
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
            None => crate::base::text::estimate_tokens(text),
        }
    }
}
