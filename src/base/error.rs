//! Errors of the engine, one enum for the public API.

use crate::base::host::{ModelError, StoreError};

/// Result alias used by every public call of the engine.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Everything a public call of [`crate::memory::handle::Memory`] can fail with.
///
/// A call that returns an error has changed nothing: the memory is as it was
/// after the last call that succeeded (the store is the truth; the engine
/// reloads from it when a call fails half-way).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller passed something the engine cannot accept (empty or oversize
    /// message, unknown role, tool output with no matching call, unknown id,
    /// bad namespace). Fix the input; the memory is unchanged.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The store failed. Nothing of the call was written; retry the call when
    /// the store is back.
    #[error("store failed: {0}")]
    Store(String),
    /// The model failed on a step that cannot degrade (for example a host's
    /// `note` call whose facts cannot be embedded). Nothing was written; retry.
    #[error("model failed: {0}")]
    Model(String),
    /// The stored data cannot be read: a record does not parse or the log has
    /// a gap. The memory refuses to guess; `Memory::open_salvage` opens what
    /// can be read, read-only, to export it into a new store (or restore
    /// from an export).
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The data was written by a format version this build does not know.
    /// Upgrade engram to read it.
    #[error("unsupported format version {found} (this build reads version {supported})")]
    UnsupportedVersion {
        /// Version found in the data.
        found: u32,
        /// Version this build reads and writes.
        supported: u32,
    },
    /// Other hosts kept writing this memory while the call retried; nothing of
    /// the call was written. Retry the call later.
    #[error("memory busy: {0}")]
    Busy(String),
}

impl Error {
    /// A short stable code for bindings (`invalid-input`, `store`, `model`,
    /// `corrupt`, `unsupported-version`, `busy`).
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput(_) => "invalid-input",
            Error::Store(_) => "store",
            Error::Model(_) => "model",
            Error::Corrupt(_) => "corrupt",
            Error::UnsupportedVersion { .. } => "unsupported-version",
            Error::Busy(_) => "busy",
        }
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidInput(msg.into())
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict => Error::Busy("the log head moved under this call".into()),
            StoreError::Failed(m) => Error::Store(m),
        }
    }
}

impl From<ModelError> for Error {
    fn from(e: ModelError) -> Self {
        Error::Model(e.to_string())
    }
}
