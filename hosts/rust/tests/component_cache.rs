//! The compiled-component cache: a second start reads the component back
//! instead of compiling it, and a damaged, foreign or missing entry is
//! compiled again, never loaded.

mod common;

use std::time::Instant;

use engram_wasmtime_host::{load, load_file, Origin};
use wasmtime::Engine;

/// The smallest component there is: the preamble, no sections. Compiles in
/// milliseconds, so the cache's rules are tested without the real one.
const EMPTY: &[u8] = b"\0asm\x0d\x00\x01\x00";

fn engine(opt: wasmtime::OptLevel) -> Engine {
    let mut config = wasmtime::Config::new();
    config.cranelift_opt_level(opt);
    Engine::new(&config).expect("engine")
}

fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("engram-cache-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn the_second_start_of_the_real_component_reads_it_from_the_cache() {
    // The first start may compile (or find what another test binary of
    // this run wrote); the second must not compile. Its time is printed,
    // not asserted (docs/BENCH.md has the figures).
    let engine = engine(wasmtime::OptLevel::None);
    let path = common::component_path();
    let dir = common::cache_dir();
    let t = Instant::now();
    let (_, first) = load_file(&engine, &path, Some(&dir)).expect("first start");
    let first_ms = t.elapsed().as_millis();
    let t = Instant::now();
    let (component, second) = load_file(&engine, &path, Some(&dir)).expect("second start");
    let second_ms = t.elapsed().as_millis();
    eprintln!("component load: first {first:?} {first_ms} ms, second {second:?} {second_ms} ms");
    assert_eq!(second, Origin::Cached);
    // What came back is the engram component: a memory opens on it and answers.
    let host = engram_wasmtime_host::Host::offline(1_764_000_000_000);
    let mut engram = engram_wasmtime_host::Engram::open(&engine, &component, host, "cache", "{}")
        .expect("opens");
    engram
        .add_message(&common::text(
            engram_wasmtime_host::Role::User,
            "hello from the cache",
        ))
        .expect("adds");
    assert!(engram
        .render_openai()
        .expect("renders")
        .to_string()
        .contains("hello from the cache"));
}

#[test]
fn without_a_cache_every_start_compiles() {
    let engine = engine(wasmtime::OptLevel::None);
    assert_eq!(load(&engine, EMPTY, None).unwrap().1, Origin::Compiled);
    assert_eq!(load(&engine, EMPTY, None).unwrap().1, Origin::Compiled);
}

#[test]
fn an_entry_is_written_once_and_read_back() {
    let dir = scratch("once");
    let engine = engine(wasmtime::OptLevel::None);
    assert_eq!(
        load(&engine, EMPTY, Some(&dir)).unwrap().1,
        Origin::Compiled
    );
    assert_eq!(entries(&dir).len(), 1, "one entry written");
    assert_eq!(load(&engine, EMPTY, Some(&dir)).unwrap().1, Origin::Cached);
    assert_eq!(entries(&dir).len(), 1, "nothing more written on a hit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_entry_is_compiled_again_and_replaced() {
    let dir = scratch("damaged");
    let engine = engine(wasmtime::OptLevel::None);
    load(&engine, EMPTY, Some(&dir)).unwrap();
    let entry = entries(&dir).pop().expect("an entry");
    let mut bytes = std::fs::read(&entry).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    assert_eq!(
        load(&engine, EMPTY, Some(&dir)).unwrap().1,
        Origin::Compiled,
        "a damaged entry is not loaded"
    );
    assert_eq!(
        load(&engine, EMPTY, Some(&dir)).unwrap().1,
        Origin::Cached,
        "the replacement is"
    );
    assert_eq!(entries(&dir).len(), 1, "the damaged entry is gone");
    // A truncated one as well.
    let entry = entries(&dir).pop().unwrap();
    std::fs::write(&entry, &std::fs::read(&entry).unwrap()[..16]).unwrap();
    assert_eq!(
        load(&engine, EMPTY, Some(&dir)).unwrap().1,
        Origin::Compiled
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn another_engine_configuration_or_component_is_another_entry() {
    let dir = scratch("keys");
    load(&engine(wasmtime::OptLevel::None), EMPTY, Some(&dir)).unwrap();
    let (_, origin) = load(&engine(wasmtime::OptLevel::Speed), EMPTY, Some(&dir)).unwrap();
    assert_eq!(
        origin,
        Origin::Compiled,
        "an entry of other compiler settings is not reused"
    );
    assert_eq!(entries(&dir).len(), 2);
    // Another component (a custom section changes the bytes, not the meaning).
    let mut other = EMPTY.to_vec();
    other.extend_from_slice(&[0x00, 0x04, 0x03, b'a', b'b', b'c']);
    let (_, origin) = load(&engine(wasmtime::OptLevel::None), &other, Some(&dir)).unwrap();
    assert_eq!(
        origin,
        Origin::Compiled,
        "another component's entry is not reused"
    );
    assert_eq!(entries(&dir).len(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_cache_is_no_cache() {
    // A file where the directory should be: nothing can be written there,
    // and the component still loads.
    let dir = scratch("unwritable");
    std::fs::write(&dir, b"not a directory").unwrap();
    let engine = engine(wasmtime::OptLevel::None);
    assert_eq!(
        load(&engine, EMPTY, Some(&dir)).unwrap().1,
        Origin::Compiled
    );
    assert_eq!(
        load(&engine, EMPTY, Some(&dir)).unwrap().1,
        Origin::Compiled
    );
    let _ = std::fs::remove_file(&dir);
}

#[test]
fn bytes_that_are_not_a_component_are_an_error() {
    let engine = engine(wasmtime::OptLevel::None);
    let dir = scratch("bad");
    assert!(load(&engine, b"not wasm", Some(&dir)).is_err());
    assert!(
        entries(&dir).is_empty(),
        "nothing cached for a failed compile"
    );
}
