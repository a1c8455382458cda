//! Loading the engram component, compiled once per machine.
//!
//! Compiling the component takes seconds in a release build of the host
//! and tens of seconds in a debug one (Cranelift itself unoptimised), at
//! every start. [`load`] keeps the compiled form in a cache directory,
//! named by a hash of the component's bytes and of everything in the
//! [`Engine`]'s configuration that a compiled artefact depends on
//! (`Engine::precompile_compatibility_hash`: the wasmtime version, the
//! target, the compiler settings), so a second start reads it back instead
//! of compiling. A new component, another wasmtime or another
//! configuration is another name: an entry is never reused across them.
//!
//! Each entry carries a checksum of its own bytes in its name, checked
//! before wasmtime reads it: a torn or damaged file is compiled again and
//! replaced, never loaded. Entries are written under a temporary name and
//! renamed, so a reader never sees half of one, and two processes starting
//! at once both end with a valid entry. The cache is trusted as the host
//! binary is: keep it in a directory only the host's user can write.
//!
//! With the `embedded` feature the crate carries the component itself
//! ([`EMBEDDED`], the `component/engram.wasm` of the crate, put there by the
//! repository's `scripts/build-component`): no file to ship beside the
//! binary.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::component::Component;
use wasmtime::error::Context as _;
use wasmtime::Engine;

/// The component this crate was packaged with (feature `embedded`).
#[cfg(feature = "embedded")]
pub const EMBEDDED: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/component/engram.wasm"
));

/// Where a loaded component came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Compiled now (and written to the cache when one was given).
    Compiled,
    /// Read back from the cache: no compile.
    Cached,
}

/// The cache directory of [`load`] when the host names none:
/// `$ENGRAM_CACHE_DIR`, else `$XDG_CACHE_HOME/engram`, else
/// `$HOME/.cache/engram` (`%LOCALAPPDATA%\engram` on Windows); `None` when
/// none of them is set.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("ENGRAM_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("engram")))
        .or_else(|| var("LOCALAPPDATA").map(|d| d.join("engram")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("engram")))
}

/// Compiles `component` (the bytes of `engram.wasm`) for `engine`, or
/// reads its compiled form back from `cache` (a directory, created when
/// missing). Without a cache it compiles every time. A cache that cannot
/// be read or written is no cache (the component is compiled; the error is
/// not the caller's problem); a component that does not compile is an
/// error.
pub fn load(
    engine: &Engine,
    component: &[u8],
    cache: Option<&Path>,
) -> wasmtime::Result<(Component, Origin)> {
    let Some(dir) = cache else {
        return Ok((Component::new(engine, component)?, Origin::Compiled));
    };
    let key = key(engine, component);
    if let Some(found) = cached(engine, dir, &key) {
        return Ok((found, Origin::Cached));
    }
    let compiled = Component::new(engine, component)?;
    if let Ok(bytes) = compiled.serialize() {
        let _ = store(dir, &key, &bytes);
    }
    Ok((compiled, Origin::Compiled))
}

/// [`load`] from a file.
pub fn load_file(
    engine: &Engine,
    path: impl AsRef<Path>,
    cache: Option<&Path>,
) -> wasmtime::Result<(Component, Origin)> {
    let path = path.as_ref();
    let bytes =
        std::fs::read(path).with_context(|| format!("reading the component {}", path.display()))?;
    load(engine, &bytes, cache)
}

/// The cache's name for `component` compiled by `engine`.
fn key(engine: &Engine, component: &[u8]) -> String {
    let mut h = Fnv::default();
    engine.precompile_compatibility_hash().hash(&mut h);
    let config = h.finish();
    format!("engram-{:016x}-{:016x}", fnv(component), config)
}

/// The entry of `key` in `dir` whose checksum holds, deserialized.
fn cached(engine: &Engine, dir: &Path, key: &str) -> Option<Component> {
    let prefix = format!("{key}-");
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let name = entry.file_name();
        let Some(sum) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".cwasm"))
        else {
            continue;
        };
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        if format!("{:016x}", fnv(&bytes)) != sum {
            // Torn or damaged: never handed to wasmtime; replaced below.
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        // SAFETY: `Component::deserialize` trusts its bytes to be what
        // `Component::serialize` wrote. These are: the entry's checksum
        // matches the bytes `store` wrote under it, and its name binds it
        // to this component and this engine's configuration (wasmtime also
        // checks its version and settings and refuses a mismatch). The
        // directory is trusted as the host's binary is (module docs).
        if let Ok(component) = unsafe { Component::deserialize(engine, &bytes) } {
            return Some(component);
        }
    }
    None
}

/// Writes `bytes` as the entry of `key`, atomically (temporary name, then
/// rename).
fn store(dir: &Path, key: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{key}-{:016x}.cwasm", fnv(bytes)));
    let part = dir.join(format!(".{key}.{}.part", std::process::id()));
    std::fs::write(&part, bytes)?;
    std::fs::rename(&part, &path).inspect_err(|_| {
        let _ = std::fs::remove_file(&part);
    })
}

/// 64-bit FNV-1a: stable across Rust versions and machines (std's
/// `DefaultHasher` is not), and enough to tell entries apart and to catch
/// damage; not a defence against someone who can write the cache.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h = Fnv::default();
    h.write(bytes);
    h.finish()
}
