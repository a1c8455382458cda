//! The core's layers, checked from its sources. The source tree is the
//! layer map: a file's layer is its first folder under `src/` (a file at the
//! root of `src/` is an operation, as is `recall/`, the one operation with
//! a folder; `lib.rs` is the facade over all). A file
//! may use files of its own layer and of the layers below, never one above,
//! and `ops` and `store` (and `index` and `llm`) never use each other. No
//! two files use each other, directly or round a longer circle.
//!
//! The layers, bottom up (ARCHITECTURE.md has a section for each):
//!
//! | rank | layer | holds |
//! |---|---|---|
//! | 0 | `base` | errors, config, host traits, health, join, sort, bytes, text, the value codec |
//! | 1 | `types` | plain data: messages, episodes, facts, traces, events, embeddings, recall's items |
//! | 2 | `index`, `llm` | word and meaning indexes, fusion; the LLM tasks |
//! | 3 | `state` | the fold of the events, activation, the kept sizes, erasure's scrub |
//! | 4 | `view` | the view, the recall block's rendering, explain |
//! | 5 | `ops`, `store` | the operations (the root files, `recall/`); the stored log |
//! | 6 | `memory` | the facade |
//! | 7 | `offline`, `testing`, `bindings` | the offline model, the test doubles, the bindings |
//!
//! An edge is a path through `crate::` or `super::` in code (comments and
//! test modules are skipped), resolved to the file that defines the module
//! it names. Besides the direction and the circles, the check refuses what
//! hides an edge or gives an item two names: a `use super::*` glob, a
//! `crate::Item` path through the crate root's re-exports, and a
//! `pub use crate::...` re-export outside `lib.rs`. The test fails naming
//! the file and line: move the code to its layer instead (a type a lower
//! layer needs goes down to `types`, a helper to `base`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The layers and their ranks: the only table of the check. A folder of
/// `src/` not listed here fails the test.
const LAYERS: &[(&str, u8)] = &[
    ("base", 0),
    ("types", 1),
    ("index", 2),
    ("llm", 2),
    ("state", 3),
    ("view", 4),
    ("ops", 5),
    ("store", 5),
    ("memory", 6),
    ("offline", 7),
    ("testing", 7),
    ("bindings", 7),
];

/// Operations big enough for a folder of their own (a folder of `src/` in
/// layer `ops`, beside the root files).
const OPERATION_FOLDERS: &[&str] = &["recall"];

/// Pairs of layers of one rank that never use each other.
const APART: &[(&str, &str)] = &[("ops", "store"), ("index", "llm")];

/// The layer of the file at `rel` (a path under `src/`, `/`-separated):
/// its first folder; a root file (or one in [`OPERATION_FOLDERS`]) is an
/// operation; `lib.rs` is the facade.
fn layer_of(rel: &str) -> &str {
    match rel.split_once('/') {
        Some((folder, _)) if OPERATION_FOLDERS.contains(&folder) => "ops",
        Some((folder, _)) => folder,
        None if rel == "lib.rs" => "lib",
        None => "ops",
    }
}

fn rank(layer: &str) -> Option<u8> {
    if layer == "lib" {
        return Some(u8::MAX);
    }
    LAYERS.iter().find(|(l, _)| *l == layer).map(|(_, r)| *r)
}

/// Whether a file of layer `from` may use one of layer `to`.
fn allowed(from: &str, to: &str) -> bool {
    if from == to {
        return true;
    }
    let (Some(rf), Some(rt)) = (rank(from), rank(to)) else {
        return false;
    };
    let apart = APART
        .iter()
        .any(|&(a, b)| (from, to) == (a, b) || (from, to) == (b, a));
    rt < rf || (rt == rf && !apart)
}

/// The module path of a file (`store/log.rs` -> `store::log`,
/// `recall/mod.rs` -> `recall`, `lib.rs` -> ``).
fn module_of(rel: &str) -> String {
    let rel = rel.trim_end_matches(".rs");
    let mut parts: Vec<&str> = rel.split('/').collect();
    if matches!(parts.last(), Some(&"mod") | Some(&"lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// `text` with the bodies of its inline test modules blanked (their lines
/// kept empty, so line numbers stay right): a `#[cfg(test)]` `mod NAME {`
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
        let opens_module = line
            .strip_prefix("mod ")
            .and_then(|rest| rest.strip_suffix(" {"))
            .is_some_and(|name| name.chars().all(|c| c.is_alphanumeric() || c == '_'));
        if after_cfg && opens_module {
            in_tests = true;
            out.push("");
        } else {
            out.push(line);
        }
        after_cfg = line == "#[cfg(test)]";
    }
    out.join("\n")
}

/// The code of a line: without a `//` comment (doc comments included).
fn code_of(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// The paths a line of code names through `crate::` or `super::`, as
/// module paths from the crate root (`crate::{a::B, c::{d, e}}` gives `a::B`,
/// `c::d`, `c::e`), with whether each went through `super::` and ended in a
/// glob. `module` is the line's file's module, `is_mod_file` whether the
/// file is a `mod.rs` (or `lib.rs`), which `super` counts from.
fn named_paths(
    module: &str,
    is_mod_file: bool,
    children: &[String],
    line: &str,
) -> Vec<(String, bool)> {
    let code = code_of(line);
    let mut found = Vec::new();
    let mut here: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
    if !is_mod_file {
        here.pop();
    }
    let parent = here[..here.len().saturating_sub(1)].join("::");
    let own = here.join("::");
    let mut prefixes = vec![
        ("crate::".to_string(), String::new()),
        (
            "super::".to_string(),
            if is_mod_file { parent } else { own },
        ),
    ];
    // A module's own submodules, named without a prefix (`use rank::*`,
    // `walk::walk(..)`): an edge too.
    for child in children {
        prefixes.push((format!("{child}::"), format!("{module}::{child}")));
    }
    for (prefix, base) in &prefixes {
        let prefix = prefix.as_str();
        let mut rest = code;
        while let Some(at) = rest.find(prefix) {
            let before = rest[..at].chars().last();
            rest = &rest[at + prefix.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            for p in leaves(rest) {
                let full = match (base.is_empty(), p.is_empty()) {
                    (true, _) => p,
                    (false, true) => base.clone(),
                    (false, false) => format!("{base}::{p}"),
                };
                found.push((full, prefix == "super::"));
            }
        }
    }
    found
}

/// The submodules a file declares (`mod x;`, `pub(crate) mod y;`).
fn submodules(code: &str) -> Vec<String> {
    code.lines()
        .filter_map(|l| {
            let l = code_of(l).trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            let l = match l.strip_prefix("pub(") {
                Some(r) => r.split_once(") ").map_or(l, |(_, r)| r),
                None => l,
            };
            l.strip_prefix("mod ")?
                .strip_suffix(';')
                .map(str::to_string)
        })
        .collect()
}

/// The paths of the `a::b::{c, d::E}` that `text` starts with, each up to
/// its end (`*` for a glob).
fn leaves(text: &str) -> Vec<String> {
    let mut head = Vec::new();
    let mut rest = text;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut items = vec![String::new()];
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => items.push(String::new()),
                    _ => {}
                }
                if !(c == ',' && depth == 0) {
                    items.last_mut().expect("item").push(c);
                }
            }
            let prefix = head.join("::");
            return items
                .iter()
                .map(|i| i.trim())
                .filter(|i| !i.is_empty())
                .flat_map(leaves)
                .map(|l| match (prefix.is_empty(), l.as_str()) {
                    (true, _) => l,
                    (false, "self") => prefix.clone(),
                    (false, _) => format!("{prefix}::{l}"),
                })
                .collect();
        }
        if rest.starts_with('*') {
            head.push("*".to_string());
            return vec![head.join("::")];
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            return vec![head.join("::")];
        }
        rest = &rest[name.len()..];
        head.push(name);
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => return vec![head.join("::")],
        }
    }
}

/// What the check found, each with where it is (`src/a/b.rs:12`).
#[derive(Debug, Default)]
struct Report {
    /// `from (layer) -> to (layer)` uses that point up, or across a pair
    /// kept apart.
    upward: Vec<(String, String)>,
    /// Circles of files, each as `a -> b -> ... -> a`.
    cycles: Vec<String>,
    /// `use super::*` outside a test module.
    globs: Vec<String>,
    /// `crate::Item` paths through the crate root's re-exports.
    through_root: Vec<(String, String)>,
    /// `pub use crate::...` outside `lib.rs`.
    reexports: Vec<String>,
    /// Folders of `src/` that are in no layer.
    unknown_folders: Vec<String>,
}

/// Checks `files`: each file's path under `src/` (`/`-separated) and its
/// text.
fn check(files: &BTreeMap<String, String>) -> Report {
    let mut report = Report::default();
    // Module path -> file.
    let modules: BTreeMap<String, &str> = files
        .keys()
        .map(|rel| (module_of(rel), rel.as_str()))
        .collect();
    // The file defining the longest module prefix of `path`.
    let file_of = |path: &str| -> Option<&str> {
        let segs: Vec<&str> = path.split("::").collect();
        (1..=segs.len())
            .rev()
            .find_map(|n| modules.get(&segs[..n].join("::")).copied())
    };
    // Edges between files, with the first line that makes each.
    let mut edges: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for (rel, text) in files {
        let module = module_of(rel);
        // A module's tests (`mod tests;` in a file of its own) may use
        // anything, as inline ones may.
        if module == "tests" || module.ends_with("::tests") {
            continue;
        }
        let from = layer_of(rel);
        if rank(from).is_none() && !report.unknown_folders.contains(&from.to_string()) {
            report.unknown_folders.push(from.to_string());
        }
        let is_mod_file = rel.ends_with("mod.rs") || rel == "lib.rs";
        let code = without_test_modules(text);
        let children = submodules(&code);
        for (n, line) in code.lines().enumerate() {
            let at = format!("src/{rel}:{}", n + 1);
            let code = code_of(line).trim_start();
            if rel != "lib.rs" && code.starts_with("pub use crate::") {
                report.reexports.push(at.clone());
            }
            for (path, via_super) in named_paths(&module, is_mod_file, &children, line) {
                if via_super && path.ends_with('*') {
                    report.globs.push(at.clone());
                }
                let first = path.split("::").next().unwrap_or("");
                if rel != "lib.rs" && !via_super && first.starts_with(|c: char| c.is_uppercase()) {
                    report
                        .through_root
                        .push((format!("crate::{path}"), at.clone()));
                }
                let Some(target) = file_of(&path) else {
                    continue;
                };
                if target == rel {
                    continue;
                }
                let to = layer_of(target);
                if !allowed(from, to) {
                    report.upward.push((
                        format!(
                            "{} ({from}) -> {} ({to})",
                            module_of(rel),
                            module_of(target)
                        ),
                        at.clone(),
                    ));
                }
                edges
                    .entry(rel.as_str())
                    .or_default()
                    .entry(target)
                    .or_insert(n + 1);
            }
        }
    }
    report.cycles = cycles(&edges);
    report
}

/// Every circle of files: one per strongly connected component of more
/// than one file (Tarjan's algorithm), printed as its shortest circle
/// through the component's first file, each step with the line that
/// makes it.
fn cycles(edges: &BTreeMap<&str, BTreeMap<&str, usize>>) -> Vec<String> {
    let nodes: BTreeSet<&str> = edges
        .iter()
        .flat_map(|(a, bs)| std::iter::once(*a).chain(bs.keys().copied()))
        .collect();
    let index: BTreeMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let names: Vec<&str> = nodes.iter().copied().collect();
    let succ: Vec<Vec<usize>> = names
        .iter()
        .map(|n| {
            edges
                .get(n)
                .map(|bs| bs.keys().map(|b| index[b]).collect())
                .unwrap_or_default()
        })
        .collect();
    let comps = tarjan(&succ);
    let mut out = Vec::new();
    for comp in comps.iter().filter(|c| c.len() > 1) {
        let inside: BTreeSet<usize> = comp.iter().copied().collect();
        let start = *comp.iter().min().expect("non-empty");
        // Breadth first from `start` back to it, inside the component.
        let mut prev: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut closing = None;
        while let Some(v) = queue.pop_front() {
            for &w in &succ[v] {
                if w == start {
                    closing = Some(v);
                    break;
                }
                if inside.contains(&w) && !prev.contains_key(&w) {
                    prev.insert(w, v);
                    queue.push_back(w);
                }
            }
            if closing.is_some() {
                break;
            }
        }
        let mut path = vec![start];
        let mut v = closing.expect("a component of two or more files has a circle");
        while v != start {
            path.push(v);
            v = prev[&v];
        }
        path[1..].reverse();
        path.push(start);
        let steps: Vec<String> = path
            .windows(2)
            .map(|w| {
                let line = edges[names[w[0]]][names[w[1]]];
                format!("src/{}:{line}", names[w[0]])
            })
            .collect();
        let files: Vec<String> = path.iter().map(|&i| format!("src/{}", names[i])).collect();
        out.push(format!(
            "{}   (the uses at {})",
            files.join(" -> "),
            steps.join(", ")
        ));
    }
    out
}

/// Tarjan's strongly connected components of the graph `succ`.
fn tarjan(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        succ: &'a [Vec<usize>],
        next: usize,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        comps: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk<'_>, v: usize) {
        w.index[v] = Some(w.next);
        w.low[v] = w.next;
        w.next += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for i in 0..w.succ[v].len() {
            let u = w.succ[v][i];
            match w.index[u] {
                None => {
                    visit(w, u);
                    w.low[v] = w.low[v].min(w.low[u]);
                }
                Some(iu) if w.on_stack[u] => w.low[v] = w.low[v].min(iu),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.index[v] {
            let mut comp = Vec::new();
            loop {
                let u = w.stack.pop().expect("on the stack");
                w.on_stack[u] = false;
                comp.push(u);
                if u == v {
                    break;
                }
            }
            w.comps.push(comp);
        }
    }
    let n = succ.len();
    let mut w = Walk {
        succ,
        next: 0,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        comps: Vec::new(),
    };
    for v in 0..n {
        if w.index[v].is_none() {
            visit(&mut w, v);
        }
    }
    w.comps
}

/// Every `.rs` file under `dir`, by its path under `src/`.
fn sources(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("under src");
            let rel = rel
                .iter()
                .map(|p| p.to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.insert(rel, fs::read_to_string(&path).expect("read"));
        }
    }
}

fn the_crate() -> Report {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    sources(&src, &src, &mut files);
    check(&files)
}

fn listed<T: std::fmt::Debug>(items: &[T]) -> String {
    items
        .iter()
        .map(|i| format!("  {i:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_folder_of_src_is_a_layer() {
    let r = the_crate();
    assert!(
        r.unknown_folders.is_empty(),
        "folders of src/ in no layer (add each to LAYERS, with its rank, and to ARCHITECTURE.md):\n{}",
        listed(&r.unknown_folders)
    );
}

#[test]
fn no_file_uses_a_layer_above_it() {
    let r = the_crate();
    assert!(
        r.upward.is_empty(),
        "uses that point up a layer (or between ops and store, index and llm):\n{}\n\
         move the code to its layer instead (ARCHITECTURE.md)",
        listed(&r.upward)
    );
}

#[test]
fn no_two_files_use_each_other() {
    let r = the_crate();
    assert!(
        r.cycles.is_empty(),
        "files that use each other, directly or round a circle:\n{}\n\
         move what both need into one of them, or below both",
        r.cycles.join("\n")
    );
}

#[test]
fn imports_name_where_items_are_defined() {
    let r = the_crate();
    assert!(
        r.globs.is_empty(),
        "`use super::*` outside a test module (name what is used, from where it is defined):\n{}",
        listed(&r.globs)
    );
    assert!(
        r.through_root.is_empty(),
        "paths through the crate root's re-exports (name the defining module: \
         `crate::base::config::Config`, not `crate::Config`):\n{}",
        listed(&r.through_root)
    );
    assert!(
        r.reexports.is_empty(),
        "`pub use crate::...` outside lib.rs gives an item a second name \
         (lib.rs's facade is the one public map):\n{}",
        listed(&r.reexports)
    );
}

// ---- Probes: the check catches what it is for -------------------------------

fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

#[test]
fn the_check_catches_an_injected_cycle() {
    // Three files of one layer in a circle, and two that use each other.
    let r = check(&tree(&[
        ("lib.rs", "pub mod state;\n"),
        ("state/mod.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("state/a.rs", "use crate::state::b::B;\n"),
        ("state/b.rs", "use crate::state::c::C;\n"),
        (
            "state/c.rs",
            "// a comment naming crate::state::b\nfn f() { crate::state::a::g(); }\n",
        ),
        (
            "view/mod.rs",
            "pub mod block;\nfn f() { block::render(); }\n",
        ),
        ("view/block.rs", "use crate::view::fact_line;\n"),
        ("segment.rs", "use crate::trace::Trace;\n"),
        (
            "trace.rs",
            "use crate::{base::text::clip, segment::episode_text};\n",
        ),
    ]));
    assert!(r.upward.is_empty(), "{:?}", r.upward);
    assert_eq!(r.cycles.len(), 3, "{:?}", r.cycles);
    assert!(
        r.cycles[0].starts_with("src/segment.rs -> src/trace.rs -> src/segment.rs"),
        "{}",
        r.cycles[0]
    );
    assert!(
        r.cycles[1]
            .starts_with("src/state/a.rs -> src/state/b.rs -> src/state/c.rs -> src/state/a.rs"),
        "{}",
        r.cycles[1]
    );
    assert!(r.cycles[1].contains("src/state/c.rs:2"), "{}", r.cycles[1]);
    // A mod.rs naming its submodule without a prefix makes an edge too.
    assert!(
        r.cycles[2].starts_with("src/view/block.rs -> src/view/mod.rs -> src/view/block.rs"),
        "{}",
        r.cycles[2]
    );
}

#[test]
fn the_check_catches_an_injected_upward_use() {
    // A `types` file naming the facade, an operation naming the store
    // (kept apart), an index naming an operation through `super::` from a
    // mod.rs, and a view file grouped.
    let r = check(&tree(&[
        ("lib.rs", ""),
        ("types/message.rs", "use crate::memory::Memory;\n"),
        ("memory/mod.rs", ""),
        ("note.rs", "use crate::{store::Keys, base::text::clip};\n"),
        ("store/mod.rs", ""),
        ("base/text.rs", ""),
        ("index/mod.rs", "fn f() { super::recall::x(); }\n"),
        ("recall/mod.rs", "use crate::index::bm25::Bm25;\n"),
        ("index/bm25.rs", ""),
        (
            "view/block.rs",
            "use crate::{state::State, recall::{walk::Walk, Item}};\n",
        ),
        ("state/mod.rs", ""),
        ("recall/walk.rs", ""),
    ]));
    let up: Vec<&str> = r.upward.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(
        up,
        [
            "index (index) -> recall (ops)",
            "note (ops) -> store (store)",
            "types::message (types) -> memory (memory)",
            "view::block (view) -> recall::walk (ops)",
            "view::block (view) -> recall (ops)",
        ],
        "{:?}",
        r.upward
    );
    assert_eq!(r.upward[2].1, "src/types/message.rs:1");
    assert!(r.cycles.is_empty(), "{:?}", r.cycles);
}

#[test]
fn the_check_catches_globs_root_paths_and_reexports() {
    let r = check(&tree(&[
        ("lib.rs", "pub use base::config::Config;\n"),
        ("base/mod.rs", ""),
        ("base/config.rs", ""),
        ("store/mod.rs", "pub mod log;\n"),
        (
            "store/log.rs",
            "use super::*;\nfn f(c: &crate::Config) {}\n",
        ),
        (
            "fade.rs",
            "pub use crate::base::config::Config;\nuse crate::{Error, base::config};\n",
        ),
    ]));
    assert_eq!(r.globs, ["src/store/log.rs:1"]);
    assert_eq!(
        r.through_root,
        [
            ("crate::Error".to_string(), "src/fade.rs:2".to_string()),
            (
                "crate::Config".to_string(),
                "src/store/log.rs:2".to_string()
            ),
        ]
    );
    assert_eq!(r.reexports, ["src/fade.rs:1"]);
}

#[test]
fn the_check_reads_past_a_tests_module() {
    let text = "use crate::base::text::words;\n#[cfg(test)]\nmod tests {\n    use crate::memory::Memory;\n    fn f() {\n    }\n}\nuse crate::memory::Memory;\n";
    let code = without_test_modules(text);
    let lines: Vec<&str> = code.lines().collect();
    assert_eq!(lines.len(), 8);
    assert_eq!(lines[0], "use crate::base::text::words;");
    assert!(lines[2..7].iter().all(|l| l.is_empty()), "{lines:?}");
    assert_eq!(lines[7], "use crate::memory::Memory;");
    // A test module may use anything; the use after it is still caught.
    let r = check(&tree(&[
        ("types/message.rs", text),
        ("memory/mod.rs", ""),
        ("base/text.rs", ""),
    ]));
    assert_eq!(r.upward.len(), 1, "{:?}", r.upward);
    assert_eq!(r.upward[0].1, "src/types/message.rs:8");
}

#[test]
fn a_files_layer_is_its_first_folder() {
    assert_eq!(layer_of("index/bm25/mod.rs"), "index");
    assert_eq!(layer_of("segment.rs"), "ops");
    assert_eq!(layer_of("recall/walk.rs"), "ops");
    assert_eq!(layer_of("lib.rs"), "lib");
    assert_eq!(module_of("index/bm25/mod.rs"), "index::bm25");
    assert_eq!(module_of("lib.rs"), "");
    assert_eq!(
        leaves("{a::B, c::{self, d}, e::*};"),
        ["a::B", "c", "c::d", "e::*"]
    );
}
