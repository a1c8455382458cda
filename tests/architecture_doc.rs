//! ARCHITECTURE.md checked against the tree: every path it names exists,
//! and every file of `src/` is named there (STYLE.md, "docs checked against
//! the code").
//!
//! A path is a backticked token of path characters that holds a `/` or ends
//! in a file extension (`src/view/mod.rs`, `block.rs`, `tests/`). It
//! resolves against, in turn: the folder a bullet opens (a bullet that
//! starts with `` `x/`: `` holds paths inside `x/`, for its own text, its
//! continuation lines and its deeper bullets; its own opening path
//! resolves in the folder around it), the folder of the section
//! (the first backticked folder in its heading), then the repository root;
//! the first place where it exists is what it names. A `mod.rs` or a
//! `tests.rs` is named when its folder is.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

const EXTENSIONS: &[&str] = &[
    "rs", "js", "mjs", "ts", "py", "md", "json", "jsonc", "wit", "toml", "sh", "png", "svg", "txt",
];

/// The backticked tokens of `line` that are paths.
fn paths_in(line: &str) -> Vec<&str> {
    line.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            !t.is_empty()
                && !t.starts_with("../")
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c))
                && (t.contains('/')
                    || t.rsplit_once('.')
                        .is_some_and(|(stem, ext)| !stem.is_empty() && EXTENSIONS.contains(&ext)))
        })
        .collect()
}

/// Each path the doc names, with its line, resolved (`None`: nowhere).
fn named(doc: &str, exists: &dyn Fn(&str) -> bool) -> Vec<(usize, String, Option<String>)> {
    let mut out = Vec::new();
    let mut section = String::new();
    // (indent of the bullet, its folder) for the bullets still open.
    let mut bullets: Vec<(usize, String)> = Vec::new();
    for (n, line) in doc.lines().enumerate() {
        // The folder around a bullet that opens one: its own opening path
        // resolves there (`engram_host/` under `python/`).
        let mut parent = String::new();
        if line.starts_with('#') {
            for p in paths_in(line) {
                out.push((n + 1, p.to_string(), exists(p).then(|| p.to_string())));
            }
            section = paths_in(line)
                .into_iter()
                .find(|p| p.ends_with('/'))
                .unwrap_or("")
                .to_string();
            bullets.clear();
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let text = line.trim_start();
        if text.is_empty() {
            bullets.clear();
            continue;
        }
        if let Some(item) = text.strip_prefix("- ") {
            bullets.retain(|(i, _)| *i < indent);
            let opens = item
                .strip_prefix('`')
                .and_then(|r| r.split_once('`'))
                .filter(|(p, rest)| p.ends_with('/') && rest.starts_with([':', ' ']))
                .map(|(p, _)| p.to_string());
            let base = bullets.last().map(|(_, f)| f.clone());
            parent = base.clone().unwrap_or_default();
            let folder = match (opens, &base) {
                (Some(p), Some(b)) if exists(&format!("{b}{p}")) => Some(format!("{b}{p}")),
                (Some(p), _) if exists(&format!("{section}{p}")) => Some(format!("{section}{p}")),
                (Some(p), _) => Some(p),
                (None, _) => None,
            };
            bullets.push((indent, folder.or(base).unwrap_or_default()));
        } else if indent == 0 {
            bullets.clear();
        }
        let bullet = bullets.last().map(|(_, f)| f.as_str()).unwrap_or("");
        for p in paths_in(line) {
            let found = [bullet, parent.as_str(), section.as_str(), ""]
                .iter()
                .map(|base| format!("{base}{p}"))
                .find(|c| exists(c));
            out.push((n + 1, p.to_string(), found));
        }
    }
    out
}

/// The files under `src/` the doc does not name.
fn unnamed(files: &[String], named: &BTreeSet<String>) -> Vec<String> {
    files
        .iter()
        .filter(|f| {
            let covered_by_folder = ["mod.rs", "tests.rs"].iter().any(|leaf| {
                f.strip_suffix(leaf)
                    .is_some_and(|folder| named.contains(folder))
            });
            !named.contains(*f) && !covered_by_folder
        })
        .cloned()
        .collect()
}

fn files_under(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            files_under(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).expect("under root");
            out.push(
                rel.iter()
                    .map(|p| p.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
            );
        }
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn doc_paths() -> Vec<(usize, String, Option<String>)> {
    let doc = fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    named(&doc, &|p: &str| repo().join(p).exists())
}

#[test]
fn every_path_architecture_names_exists() {
    let missing: Vec<String> = doc_paths()
        .into_iter()
        .filter(|(_, _, found)| found.is_none())
        .map(|(n, p, _)| format!("  ARCHITECTURE.md:{n}: `{p}`"))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that are not there (moved or gone: say where they are now):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_source_file_is_named_in_architecture() {
    let named: BTreeSet<String> = doc_paths().into_iter().filter_map(|(_, _, f)| f).collect();
    let mut files = Vec::new();
    files_under(repo(), &repo().join("src"), &mut files);
    files.sort();
    let left = unnamed(&files, &named);
    assert!(
        left.is_empty(),
        "files of src/ that ARCHITECTURE.md does not name (add a line to their layer's section):\n{}",
        left.iter()
            .map(|f| format!("  {f}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

// ---- Probes ------------------------------------------------------------------

#[test]
fn a_path_resolves_in_its_bullet_its_parent_its_section_then_the_root() {
    let tree = [
        "src/",
        "src/recall/",
        "src/recall/mod.rs",
        "src/recall/walk.rs",
        "src/recall/bm25/",
        "src/recall/bm25/x.rs",
        "src/view/",
        "src/view/mod.rs",
        "src/lib.rs",
        "docs/BENCH.md",
    ];
    let exists = |p: &str| tree.contains(&p);
    let doc = "## `src/`\n\n`lib.rs`: the essay; see `docs/BENCH.md`.\n\n\
               - `recall/`: recall.\n  - `mod.rs`: shared; `walk.rs`: the walk,\n    \
               and `gone.rs`.\n  - `bm25/`: words, `x.rs`.\n- `view/mod.rs`: the view; `Memory::open` and `x y` are no paths.\n";
    let found = named(doc, &exists);
    let got: Vec<(usize, &str, Option<&str>)> = found
        .iter()
        .map(|(n, p, f)| (*n, p.as_str(), f.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            (1, "src/", Some("src/")),
            (3, "lib.rs", Some("src/lib.rs")),
            (3, "docs/BENCH.md", Some("docs/BENCH.md")),
            (5, "recall/", Some("src/recall/")),
            (6, "mod.rs", Some("src/recall/mod.rs")),
            (6, "walk.rs", Some("src/recall/walk.rs")),
            (7, "gone.rs", None),
            (8, "bm25/", Some("src/recall/bm25/")),
            (8, "x.rs", Some("src/recall/bm25/x.rs")),
            (9, "view/mod.rs", Some("src/view/mod.rs")),
        ]
    );
}

#[test]
fn a_file_left_out_of_the_doc_is_reported() {
    let files = [
        "src/lib.rs".to_string(),
        "src/index/bm25/mod.rs".to_string(),
        "src/index/bm25/tests.rs".to_string(),
        "src/index/dot.rs".to_string(),
    ];
    let named: BTreeSet<String> = ["src/lib.rs", "src/index/bm25/"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(unnamed(&files, &named), ["src/index/dot.rs"]);
}
