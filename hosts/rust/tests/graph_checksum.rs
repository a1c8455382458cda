//! The meaning graph is the same on every target: the component builds, over
//! the same fixed vectors, graph bytes of the checksum the native engine
//! gives and that `tests/fixtures/hnsw-golden.json` keeps (the npm package's
//! test checks the same value).

mod common;

use common::{open_offline, repo};
use engram_wasmtime_host::MemStore;

#[test]
fn the_component_builds_the_graph_of_the_golden_checksum() {
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("tests/fixtures/hnsw-golden.json"))
            .expect("the golden value"),
    )
    .unwrap();
    let rows = golden["rows"].as_u64().unwrap() as u32;
    let dim = golden["dim"].as_u64().unwrap() as u32;
    let mut engram = open_offline(&MemStore::new(), "graph");
    let component = format!("{:016x}", engram.graph_checksum(rows, dim).expect("runs"));
    let native = format!(
        "{:016x}",
        engram::index::vector::graph_checksum(rows as usize, dim as usize)
    );
    assert_eq!(
        component, native,
        "the component's graph differs from the native one"
    );
    assert_eq!(golden["checksum"], component.as_str());
}
