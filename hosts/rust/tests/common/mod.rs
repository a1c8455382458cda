//! What the host tests share: the repository and the compiled component.
//!
//! The component is `target/wasm32-wasip2/release/engram.wasm` of the engram
//! crate (`scripts/build-component`), or the file `ENGRAM_COMPONENT` names.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use engram_wasmtime_host::{NewMessage, Role};
use wasmtime::component::Component;
use wasmtime::Engine;

/// The engram repository.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Opens `namespace` of `store` on the offline model with a 400-token
/// ceiling, the clock at 2025-11-24.
pub fn open_offline(
    store: &engram_wasmtime_host::MemStore,
    namespace: &str,
) -> engram_wasmtime_host::Engram {
    let (engine, component) = component();
    let host = engram_wasmtime_host::Host::with_choice(
        1_764_000_000_000,
        store.clone(),
        engram_wasmtime_host::ModelChoice::Offline,
    );
    engram_wasmtime_host::Engram::open(
        engine,
        component,
        host,
        namespace,
        r#"{"ceiling_tokens": 400}"#,
    )
    .expect("opens")
}

/// The component's file: `ENGRAM_COMPONENT`, else the repository's
/// release build.
pub fn component_path() -> PathBuf {
    let path = std::env::var_os("ENGRAM_COMPONENT")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/wasm32-wasip2/release/engram.wasm"));
    assert!(
        path.exists(),
        "no component at {}: run scripts/build-component first",
        path.display()
    );
    path
}

/// One engine and the compiled component, shared by a test binary's tests.
pub fn component() -> &'static (Engine, Component) {
    static LOADED: OnceLock<(Engine, Component)> = OnceLock::new();
    LOADED.get_or_init(|| {
        let path = component_path();
        // Compile for speed, not for run time: a debug-built Cranelift is slow.
        let mut config = wasmtime::Config::new();
        config.cranelift_opt_level(wasmtime::OptLevel::None);
        let engine = Engine::new(&config).expect("engine");
        let component = compiled(&engine, &path);
        (engine, component)
    })
}

/// The component compiled once for every test binary of a run, by the
/// crate's own cache ([`engram_wasmtime_host::load_file`]) in a directory
/// beside the test binaries (a debug-built Cranelift takes tens of seconds
/// for each compile).
pub fn compiled(engine: &Engine, path: &Path) -> Component {
    engram_wasmtime_host::load_file(engine, path, Some(&cache_dir()))
        .expect("the component compiles")
        .0
}

/// The compiled-component cache of the test binaries.
pub fn cache_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("engram-component-cache")))
        .unwrap_or_else(|| std::env::temp_dir().join("engram-component-cache"))
}

/// A message with text only.
pub fn text(role: Role, content: &str) -> NewMessage {
    NewMessage {
        role,
        content: content.into(),
        tool_calls: vec![],
        tool_call_id: None,
        client_id: None,
        metadata: None,
        thread: None,
        at: None,
        replaces: None,
    }
}

/// A message with text and the host's own id for it.
pub fn with_id(role: Role, content: &str, client_id: &str) -> NewMessage {
    NewMessage {
        client_id: Some(client_id.into()),
        ..text(role, content)
    }
}
