//! The `base` layer: what every other layer stands on. The errors, the
//! configuration, the host traits (clock, store, model), the health report,
//! running futures together, the crate's one sort, bytes (f16, base64,
//! checksums), text helpers and the value codec. Nothing here knows what a
//! message, an episode or a fact is.

#[doc(hidden)]
pub mod bytes;
#[doc(hidden)]
pub mod codec;
pub mod config;
pub mod error;
pub mod health;
pub mod host;
#[doc(hidden)]
pub mod join;
pub(crate) mod sort;
#[doc(hidden)]
pub mod text;
