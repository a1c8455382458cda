//! The core's layers, checked from its sources: a module may use modules of
//! its own layer and of the layers below, never of a layer above, and
//! `ops` and `store` (and `index` and `llm`) never use each other.
//!
//! The layers, bottom up (ARCHITECTURE.md draws them):
//!
//! | rank | layer | holds |
//! |---|---|---|
//! | 0 | `base` | errors, config, host traits, health, join, text, sort, the value encoding |
//! | 1 | `types` | plain data: messages, episodes, facts, events, embeddings |
//! | 2 | `index`, `llm` | word and meaning indexes, fusion; the LLM tasks |
//! | 3 | `state` | the fold of the events, activation |
//! | 4 | `view` | the view, rendering, explain |
//! | 5 | `ops`, `store` | the operations on a memory; the stored log |
//! | 6 | `memory` | the facade |
//! | 7 | `top` | the offline model, the test doubles, the bindings |
//!
//! The test fails on any use that points the wrong way, naming the file and
//! line: move the code to its layer instead (a type used by a lower layer
//! goes down to `types`, a helper to `base`).

use std::fs;
use std::path::{Path, PathBuf};

/// Each module (by path inside the crate, longest match first) and its
/// layer.
const MODULES: &[(&str, &str)] = &[
    ("error", "base"),
    ("config", "base"),
    ("host", "base"),
    ("health", "base"),
    ("join", "base"),
    ("text", "base"),
    ("sort", "base"),
    ("codec", "base"),
    ("types", "types"),
    ("bytes", "base"),
    ("message", "types"),
    ("episode", "types"),
    ("event", "types"),
    ("embedding", "types"),
    ("fact", "types"),
    ("recall::bm25", "index"),
    ("recall::vector", "index"),
    ("recall::hnsw", "index"),
    ("recall::topk", "index"),
    ("recall::fuse", "index"),
    ("llm", "llm"),
    ("state", "state"),
    ("activation", "state"),
    ("sizes", "state"),
    ("scrub", "state"),
    ("view", "view"),
    ("explain", "view"),
    ("recall::block", "view"),
    ("step", "ops"),
    ("segment", "ops"),
    ("trace", "ops"),
    ("note", "ops"),
    ("recall", "ops"),
    ("distill", "ops"),
    ("fade", "ops"),
    ("sleep", "ops"),
    ("erase", "ops"),
    ("resolve", "ops"),
    ("store", "store"),
    ("salvage", "store"),
    ("memory", "memory"),
    ("offline", "top"),
    ("testing", "top"),
    ("bindings", "top"),
    ("lib", "top"),
];

/// Layers and their ranks.
const RANKS: &[(&str, u8)] = &[
    ("base", 0),
    ("types", 1),
    ("index", 2),
    ("llm", 2),
    ("state", 3),
    ("view", 4),
    ("ops", 5),
    ("store", 5),
    ("memory", 6),
    ("top", 7),
];

/// The entry of [`MODULES`] a module path falls under.
fn entry_of(module: &str) -> Option<(&'static str, &'static str)> {
    MODULES
        .iter()
        .filter(|(m, _)| module == *m || module.starts_with(&format!("{m}::")))
        .max_by_key(|(m, _)| m.len())
        .copied()
}

fn layer_of(module: &str) -> Option<&'static str> {
    entry_of(module).map(|(_, l)| l)
}

fn rank(layer: &str) -> u8 {
    RANKS
        .iter()
        .find(|(l, _)| *l == layer)
        .map(|(_, r)| *r)
        .unwrap_or_else(|| panic!("unknown layer {layer}"))
}

/// Whether `from` may use `to`.
fn allowed(from: &str, to: &str) -> bool {
    if from == to {
        return true;
    }
    let sideways = |a: &str, b: &str| (from == a && to == b) || (from == b && to == a);
    rank(to) < rank(from)
        || (rank(to) == rank(from) && !sideways("ops", "store") && !sideways("index", "llm"))
}

/// The module path of a source file (`src/store/log.rs` -> `store::log`,
/// `src/recall/mod.rs` -> `recall`, `src/lib.rs` -> `lib`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") && parts.len() > 1 {
        parts.pop();
    }
    parts.join("::")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The modules a line of code names through `crate::` or `super::`
/// (`use` declarations and paths in code; comments are skipped).
fn named_modules(module: &str, is_mod_file: bool, line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut found = Vec::new();
    // The module `super` names from this file.
    let mut here: Vec<&str> = module.split("::").collect();
    if !is_mod_file {
        here.pop();
    }
    let parent = match here.len() {
        0 | 1 => String::new(),
        _ => here[..here.len() - 1].join("::"),
    };
    let own = here.join("::");
    for (prefix, base) in [
        ("crate::", String::new()),
        (
            "super::",
            if is_mod_file {
                parent.clone()
            } else {
                own.clone()
            },
        ),
    ] {
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let paths: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                // `crate::{a, b::c, d::{e, f}}`: the first segment of each item.
                let mut depth = 0;
                let mut items = vec![String::new()];
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => items.push(String::new()),
                        _ if depth == 0 => items.last_mut().expect("item").push(c),
                        _ => {}
                    }
                }
                items
                    .iter()
                    .map(|i| path_of(i.trim()))
                    .filter(|p| !p.is_empty() && p != "self")
                    .collect()
            } else {
                vec![path_of(rest)]
            };
            for p in paths {
                if p.is_empty() || p == "*" {
                    continue;
                }
                let full = match base.is_empty() {
                    true => p,
                    false => format!("{base}::{p}"),
                };
                found.push(full);
            }
        }
    }
    found
}

/// The leading `a::b::c` of `text`, up to the first item that is not a
/// module name (a type, a call, a `*`).
fn path_of(text: &str) -> String {
    let mut segs = Vec::new();
    for seg in text.split("::") {
        let name: String = seg
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || name.starts_with(|c: char| c.is_uppercase()) {
            break;
        }
        let whole = name.len() == seg.len();
        segs.push(name);
        if !whole {
            break;
        }
    }
    segs.join("::")
}

/// `text` with the bodies of its inline test modules blanked (their lines
/// kept empty, so line numbers stay right): a `#[cfg(test)]` `mod tests {`
/// up to its closing `}` at the start of a line, as rustfmt writes it.
/// What comes after a test module is still checked.
fn without_test_modules(text: &str) -> String {
    let mut out = Vec::new();
    let mut in_tests = false;
    let mut after_cfg = false;
    for line in text.lines() {
        if in_tests {
            in_tests = line != "}";
            out.push("");
            continue;
        }
        if after_cfg && line.starts_with("mod tests {") {
            in_tests = true;
            out.push("");
        } else {
            out.push(line);
        }
        after_cfg = line == "#[cfg(test)]";
    }
    out.join("\n")
}

/// Every use that points the wrong way: `from-module -> to-module` with
/// where it is.
fn violations() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let module = module_of(&src, &file);
        // A module's tests (`mod tests;` in a file of its own) may use
        // anything, as inline ones may.
        if module == "tests" || module.ends_with("::tests") {
            continue;
        }
        let from = layer_of(&module)
            .unwrap_or_else(|| panic!("{module}: in no layer (add it to MODULES)"));
        let is_mod_file = file
            .file_name()
            .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
        let text = fs::read_to_string(&file).expect("read");
        // Tests inside a file may use anything.
        let code = without_test_modules(&text);
        for (n, line) in code.lines().enumerate() {
            for target in named_modules(&module, is_mod_file, line) {
                let Some((target, to)) = entry_of(&target) else {
                    continue;
                };
                if !allowed(from, to) {
                    let rel = file.strip_prefix(root).expect("under root").display();
                    out.push((
                        format!("{module} ({from}) -> {target} ({to})"),
                        format!("{rel}:{}", n + 1),
                    ));
                }
            }
        }
    }
    out
}

#[test]
fn no_module_uses_a_layer_above_it() {
    let mut found: Vec<String> = violations()
        .iter()
        .map(|(v, at)| format!("  {v}   at {at}"))
        .collect();
    found.dedup();
    assert!(
        found.is_empty(),
        "uses that point up a layer (or between ops and store, index and llm):\n{}\n\
         move the code to its layer instead (ARCHITECTURE.md)",
        found.join("\n")
    );
}

#[test]
fn the_check_reads_past_a_tests_module() {
    let text = "use crate::text::words;\n#[cfg(test)]\nmod tests {\n    use crate::memory::Memory;\n    fn f() {\n    }\n}\nuse crate::memory::Memory;\n";
    let code = without_test_modules(text);
    let lines: Vec<&str> = code.lines().collect();
    assert_eq!(lines.len(), 8);
    assert_eq!(lines[0], "use crate::text::words;");
    assert!(lines[2..7].iter().all(|l| l.is_empty()), "{lines:?}");
    assert_eq!(lines[7], "use crate::memory::Memory;");
    assert_eq!(
        named_modules("message", false, lines[7]),
        named_modules("message", false, "use crate::memory::Memory;")
    );
}

#[test]
fn the_check_sees_an_upward_use() {
    // A `types` module naming the memory facade, and an `ops` module naming
    // the store: both are caught, grouped or not.
    let up = named_modules("message", false, "use crate::memory::Memory;");
    assert_eq!(up, ["memory"]);
    assert!(!allowed("types", layer_of("memory").unwrap()));
    let grouped = named_modules("note", false, "use crate::{store::Keys, text::clip};");
    assert_eq!(grouped, ["store", "text::clip"]);
    assert!(!allowed("ops", layer_of("store").unwrap()));
    assert!(allowed("ops", layer_of("text").unwrap()));
    let sup = named_modules("recall::walk", false, "use super::bm25::Bm25;");
    assert_eq!(sup, ["recall::bm25"]);
    assert_eq!(layer_of("recall::bm25"), Some("index"));
    assert!(allowed("ops", "index"));
    assert!(!allowed("index", "ops"));
    let from_mod = named_modules("recall", true, "use super::state::State;");
    assert_eq!(from_mod, ["state"]);
}
