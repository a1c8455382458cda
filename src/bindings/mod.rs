//! Host bindings. Each converts types and maps errors, nothing else: every
//! decision stays in the core.

#[cfg(target_os = "wasi")]
mod component;

#[cfg(all(target_arch = "wasm32", target_os = "unknown", feature = "web"))]
mod web;

#[cfg(all(target_arch = "wasm32", target_os = "unknown", feature = "web-offline"))]
mod web_offline;
