//! The guest code wit-bindgen generates from `wit/engram.wit`: the imported
//! interfaces (`clock`, `store`, `model`) and the exported `memory`
//! resource, `offline` and `diagnostics`. A module of its own, so the
//! conversion files use it without using the exports in `mod.rs`.

wit_bindgen::generate!({
    path: "wit",
    world: "engram",
});
