//! One API, checked in every host (STYLE.md item 13): every function of
//! `resource memory` in `wit/engram.wit` has its method in each host that
//! is written by hand:
//!
//! | host | read from | names |
//! |---|---|---|
//! | the JS wrapper | `class Memory` of `js/src/memory.js` | camelCase |
//! | the JS types | the declared `Memory` of `js/index.d.ts` | camelCase |
//! | the Python host | `class Memory` (and its bases) in any `.py` under `hosts/python/engram_host/` | snake_case |
//! | the Rust host | `pub fn`s of `impl Engram` in any `.rs` under `hosts/rust/src/` | snake_case |
//!
//! A WIT name goes to a host's name in three steps:
//!
//! 1. **Options.** Where a host takes the thread or the time as an option
//!    of one method, a function `X-in` whose last parameter is `thread`,
//!    and `X-at` with a parameter `at`, are checked as `X` (`view-at-in`
//!    is `view({ at, thread })` in JS, `view_at(at, thread=...)` in
//!    Python). JS folds both, Python `-in` only, Rust neither (a typed
//!    method per export).
//! 2. **Exceptions.** [`EXCEPTIONS`]: one row per name that differs by
//!    more than case, with why. A row must stay needed: it fails when its
//!    function left the WIT or the host took the plain name.
//! 3. **Case.** kebab-case to camelCase (JS) or snake_case (Python, Rust),
//!    `%` dropped (`%export` is `export`).
//!
//! The check reads names only: that the method passes the option on, or
//! calls the export, is for each host's own tests. A function a host
//! genuinely lacks is not an exception: add the method (a thin call
//! through to the export, like its neighbours). Where that cannot be done
//! at once it goes in [`KNOWN_GAPS`], which the test prints and which must
//! shrink.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A host written by hand over the WIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Host {
    JsWrapper,
    JsTypes,
    Python,
    Rust,
}

const ALL: &[Host] = &[Host::JsWrapper, Host::JsTypes, Host::Python, Host::Rust];
const JS: &[Host] = &[Host::JsWrapper, Host::JsTypes];
const PYTHON: &[Host] = &[Host::Python];
const RUST: &[Host] = &[Host::Rust];

impl Host {
    /// What the host is and where its names are read.
    fn label(self) -> &'static str {
        match self {
            Host::JsWrapper => "the JS wrapper (class Memory, js/src/memory.js)",
            Host::JsTypes => "the JS types (declare class Memory, js/index.d.ts)",
            Host::Python => "the Python host (class Memory, hosts/python/engram_host/)",
            Host::Rust => "the Rust host (impl Engram, hosts/rust/src/)",
        }
    }

    /// The folder (or file) of the host's sources, from the repository
    /// root, and the extension of its files.
    fn sources(self) -> (&'static str, &'static str) {
        match self {
            Host::JsWrapper => ("js/src/memory.js", "js"),
            Host::JsTypes => ("js/index.d.ts", "ts"),
            Host::Python => ("hosts/python/engram_host", "py"),
            Host::Rust => ("hosts/rust/src", "rs"),
        }
    }

    /// The suffixes the host folds into options of one method: (suffix,
    /// the parameter that makes a function such a variant).
    fn options(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Host::JsWrapper | Host::JsTypes => &[("-in", "thread"), ("-at", "at")],
            Host::Python => &[("-in", "thread")],
            Host::Rust => &[],
        }
    }

    /// A kebab-case WIT name in the host's case.
    fn case(self, kebab: &str) -> String {
        match self {
            Host::JsWrapper | Host::JsTypes => camel(kebab),
            Host::Python | Host::Rust => snake(kebab),
        }
    }
}

/// The name a WIT function has in a host that differs by more than case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum There {
    /// The same function under another name.
    Named(&'static str),
    /// One method of the host does this function and others.
    Folded(&'static str),
}

impl There {
    fn name(self) -> &'static str {
        match self {
            There::Named(n) | There::Folded(n) => n,
        }
    }
}

/// One name that differs by convention: (WIT name, after the options of
/// step 1; the hosts; the name there; why).
type Exception = (&'static str, &'static [Host], There, &'static str);

/// The names that differ by convention, host by host.
const EXCEPTIONS: &[Exception] = &[
    // The JS wrapper and its types.
    (
        "open-with",
        JS,
        There::Folded("open"),
        "`Memory.open({ model })` picks the sources: the model given, or `offlineModel()` (the default), whose halves are the offline ones",
    ),
    (
        "render-openai",
        JS,
        There::Folded("render"),
        "`render(\"openai\", { at, thread })`: the format is an argument",
    ),
    (
        "render-responses",
        JS,
        There::Folded("render"),
        "`render(\"responses\", { at, thread })`: the format is an argument",
    ),
    (
        "take-degraded",
        JS,
        There::Folded("on"),
        "the wrapper takes the steps after every call and emits each as a `degraded` event (`on(\"degraded\", f)`)",
    ),
    (
        "explain-episode",
        JS,
        There::Folded("explain"),
        "`explain({ episode: id })`: one method keyed by what is explained",
    ),
    (
        "explain-fact",
        JS,
        There::Folded("explain"),
        "`explain({ fact: id })`",
    ),
    (
        "explain-recall",
        JS,
        There::Folded("explain"),
        "`explain({ recall: factId })`",
    ),
    (
        "explain-message",
        JS,
        There::Folded("explain"),
        "`explain({ message: id })`",
    ),
    (
        "export-part",
        JS,
        There::Folded("exportParts"),
        "an async iterator of the parts, the cursor kept inside",
    ),
    (
        "import-piece",
        JS,
        There::Folded("importParts"),
        "`importParts(source)` reads a string, bytes, a Blob, a stream or an iterable and feeds the pieces",
    ),
    (
        "import-finish",
        JS,
        There::Folded("importParts"),
        "called by `importParts` after the last piece",
    ),
    (
        "import-discard",
        JS,
        There::Folded("importParts"),
        "called by `importParts` when its source fails",
    ),
    (
        "facts-page",
        JS,
        There::Folded("facts"),
        "`facts({ limit, cursor, filter })`: a page when given options, every fact without",
    ),
    (
        "messages-page",
        JS,
        There::Folded("messages"),
        "`messages({ limit, cursor, filter })`: a page when given options",
    ),
    (
        "episodes-page",
        JS,
        There::Folded("episodes"),
        "`episodes({ limit, cursor, filter })`: a page when given options",
    ),
    // The Python host.
    (
        "open",
        PYTHON,
        There::Folded("__init__"),
        "a memory is opened by constructing it: `Memory(namespace, store, model, ...)`",
    ),
    (
        "open-with",
        PYTHON,
        There::Folded("__init__"),
        "`Memory(..., model=None or \"offline\", embedder=\"offline\")` picks the sources",
    ),
    (
        "import",
        PYTHON,
        There::Named("import_"),
        "`import` is a Python keyword: PEP 8's trailing underscore",
    ),
    (
        "export-part",
        PYTHON,
        There::Folded("export_parts"),
        "an iterator of the parts, the cursor kept inside",
    ),
    (
        "import-piece",
        PYTHON,
        There::Folded("import_from"),
        "`import_from(source)` reads a file or an iterable of pieces and feeds them",
    ),
    (
        "import-finish",
        PYTHON,
        There::Folded("import_from"),
        "called by `import_from` after the last piece",
    ),
    (
        "import-discard",
        PYTHON,
        There::Folded("import_from"),
        "called by `import_from` when its source fails",
    ),
    // The Rust host.
    (
        "open-with",
        RUST,
        There::Folded("open"),
        "`Engram::open` calls `open-with` with the sources of the `Host`'s `ModelChoice`",
    ),
];

/// A function a host lacks today, left out of the check until it is
/// added: (WIT name, host, the method to add). The test prints them; a row
/// whose method the host now has fails the test, so the list only shrinks.
type Gap = (&'static str, Host, &'static str);

/// The functions hosts lack today (none: keep it so).
const KNOWN_GAPS: &[Gap] = &[];

/// A function of `resource memory`: its name (`%` dropped) and the names
/// of its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
struct WitFunc {
    name: String,
    params: Vec<String>,
}

/// The functions of `resource memory` in the WIT `text`: each `name: func(`
/// and `name: static func(` (a `constructor(` too) up to the resource's
/// closing brace, comments skipped.
fn wit_functions(text: &str) -> Vec<WitFunc> {
    let mut lines = text.lines().map(|l| l.split("//").next().unwrap_or(""));
    lines
        .by_ref()
        .find(|l| l.trim() == "resource memory {")
        .expect("wit/engram.wit declares `resource memory {`");
    let mut out = Vec::new();
    let mut item = String::new();
    for line in lines {
        if line.trim() == "}" {
            break;
        }
        item.push_str(line.trim());
        item.push(' ');
        if !line.trim_end().ends_with(';') {
            continue;
        }
        let whole = std::mem::take(&mut item);
        let whole = whole.trim();
        let (name, rest) = match whole.split_once(':') {
            Some((name, rest))
                if !name.contains('(')
                    && (rest.trim_start().starts_with("func(")
                        || rest.trim_start().starts_with("static func(")) =>
            {
                (name.trim(), rest)
            }
            _ if whole.starts_with("constructor(") => ("constructor", whole),
            _ => panic!("resource memory: an item that is no function: {whole}"),
        };
        let open = rest.find('(').expect("a parameter list");
        let close = open + rest[open..].find(')').expect("the parameter list closes");
        let mut params = Vec::new();
        let mut depth = 0;
        let mut param = String::new();
        for c in rest[open + 1..close].chars().chain([',']) {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                ',' if depth == 0 => {
                    let p = std::mem::take(&mut param);
                    if let Some((p, _)) = p.split_once(':') {
                        params.push(p.trim().trim_start_matches('%').to_string());
                    }
                    continue;
                }
                _ => {}
            }
            param.push(c);
        }
        out.push(WitFunc {
            name: name.trim_start_matches('%').to_string(),
            params,
        });
    }
    out
}

/// `add-message` -> `addMessage`.
fn camel(kebab: &str) -> String {
    let mut out = String::new();
    for (i, word) in kebab.trim_start_matches('%').split('-').enumerate() {
        let mut chars = word.chars();
        match (i, chars.next()) {
            (0, Some(c)) => out.push(c),
            (_, Some(c)) => out.extend(c.to_uppercase()),
            (_, None) => {}
        }
        out.push_str(chars.as_str());
    }
    out
}

/// `add-message` -> `add_message`.
fn snake(kebab: &str) -> String {
    kebab.trim_start_matches('%').replace('-', "_")
}

/// The name `f` is checked under in `host` after the options of step 1
/// (`view-at-in` -> `view` in JS, `view-at` in Python).
fn base_name(host: Host, f: &WitFunc) -> String {
    let mut name = f.name.clone();
    loop {
        let folded = host.options().iter().find_map(|(suffix, param)| {
            let stem = name.strip_suffix(suffix)?;
            let takes = match *suffix {
                "-in" => f.params.last().is_some_and(|p| p == param),
                _ => f.params.iter().any(|p| p == param),
            };
            (takes && !stem.is_empty()).then(|| stem.to_string())
        });
        match folded {
            Some(stem) => name = stem,
            None => return name,
        }
    }
}

/// The identifier at the start of `text`.
fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The lines of each block that opens at a line `starts` accepts, up to
/// the `}` at the start of a line that closes it (as prettier, black and
/// rustfmt write them).
fn blocks(text: &str, starts: impl Fn(&str) -> bool) -> Vec<Vec<&str>> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if starts(line) {
            out.push(lines.by_ref().take_while(|l| *l != "}").collect());
        }
    }
    out
}

/// Whether `rest` (after a class name) ends the name: `Memory {`, not
/// `MemoryStore {`.
fn name_ends(rest: &str) -> bool {
    rest.starts_with([' ', '{', '<', '('])
}

/// Methods, static methods and getters of `class Memory` in JS (private
/// `#` members and computed `[Symbol...]` ones left out).
fn js_class_members(text: &str, out: &mut BTreeSet<String>) {
    let starts = |l: &str| {
        l.strip_prefix("export class Memory")
            .or_else(|| l.strip_prefix("class Memory"))
            .is_some_and(name_ends)
    };
    for block in blocks(text, starts) {
        for line in block {
            let Some(member) = line.strip_prefix("  ") else {
                continue;
            };
            let mut member = member;
            for word in ["static ", "async ", "get ", "set ", "*"] {
                member = member.strip_prefix(word).unwrap_or(member);
            }
            let name = ident(member);
            if !name.is_empty() && member[name.len()..].starts_with('(') {
                out.insert(name.to_string());
            }
        }
    }
}

/// Members of the declared `Memory` class (or interface) of a `.d.ts`.
fn dts_class_members(text: &str, out: &mut BTreeSet<String>) {
    let starts = |l: &str| {
        [
            "export declare class ",
            "declare class ",
            "export interface ",
            "interface ",
        ]
        .iter()
        .any(|p| {
            l.strip_prefix(p)
                .and_then(|r| r.strip_prefix("Memory"))
                .is_some_and(name_ends)
        })
    };
    for block in blocks(text, starts) {
        for line in block {
            let Some(member) = line.strip_prefix("  ") else {
                continue;
            };
            if member.starts_with("private ") {
                continue;
            }
            let mut member = member;
            for word in ["static ", "readonly ", "get "] {
                member = member.strip_prefix(word).unwrap_or(member);
            }
            let name = ident(member);
            if !name.is_empty() && member[name.len()..].starts_with(['(', '<', '?', ':']) {
                out.insert(name.to_string());
            }
        }
    }
}

/// The `def` names of a Python class body: `class NAME` or `class
/// NAME(bases)` at the start of a line, up to the next line at the left
/// margin.
fn python_class_defs(text: &str, class: &str, out: &mut BTreeSet<String>) -> Vec<String> {
    let mut bases = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line
            .strip_prefix("class ")
            .and_then(|r| r.strip_prefix(class))
        else {
            continue;
        };
        if !rest.starts_with([':', '(']) {
            continue;
        }
        if let Some(list) = rest.strip_prefix('(').and_then(|r| r.split(')').next()) {
            bases.extend(list.split(',').map(|b| ident(b.trim()).to_string()));
        }
        while let Some(body) = lines.next_if(|l| {
            l.trim().is_empty() || l.starts_with(' ') || l.starts_with('\t') || l.starts_with('#')
        }) {
            let def = body
                .strip_prefix("    ")
                .map(|b| b.strip_prefix("async ").unwrap_or(b));
            if let Some(name) = def.and_then(|d| d.strip_prefix("def ")) {
                out.insert(ident(name).to_string());
            }
        }
    }
    bases.retain(|b| !b.is_empty() && b != "object");
    bases
}

/// The `def` names of `class Memory` in Python source files, with those
/// of its bases defined in them (a class split into mixins keeps its
/// methods).
fn python_members_of(files: &[String], out: &mut BTreeSet<String>) {
    let mut todo = vec!["Memory".to_string()];
    let mut seen = BTreeSet::new();
    while let Some(class) = todo.pop() {
        if !seen.insert(class.clone()) {
            continue;
        }
        for text in files {
            todo.extend(python_class_defs(text, &class, out));
        }
    }
}

/// The `pub fn` names of `impl Engram` blocks.
fn rust_impl_members(text: &str, out: &mut BTreeSet<String>) {
    let starts = |l: &str| l.strip_prefix("impl Engram").is_some_and(name_ends);
    for block in blocks(text, starts) {
        for line in block {
            let Some(member) = line.strip_prefix("    pub ") else {
                continue;
            };
            let mut member = member;
            for word in ["const ", "async ", "unsafe "] {
                member = member.strip_prefix(word).unwrap_or(member);
            }
            if let Some(name) = member.strip_prefix("fn ") {
                out.insert(ident(name).to_string());
            }
        }
    }
}

/// The repository root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Files under `dir` (or `dir` itself) ending in `.ext`, sorted.
fn files(path: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        out.push(path.to_path_buf());
        return;
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            files(&entry, ext, out);
        } else if entry.extension().is_some_and(|e| e == ext) {
            out.push(entry);
        }
    }
}

/// The text of each source file of `host`.
fn host_texts(host: Host) -> Vec<String> {
    let (path, ext) = host.sources();
    let mut found = Vec::new();
    files(&root().join(path), ext, &mut found);
    found
        .iter()
        .map(|f| fs::read_to_string(f).unwrap_or_else(|e| panic!("read {}: {e}", f.display())))
        .collect()
}

/// The names `host` defines in its source texts.
fn names_of(host: Host, texts: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let each: fn(&str, &mut BTreeSet<String>) = match host {
        Host::JsWrapper => js_class_members,
        Host::JsTypes => dts_class_members,
        Host::Rust => rust_impl_members,
        // A class may take methods from bases in other files.
        Host::Python => {
            python_members_of(texts, &mut out);
            return out;
        }
    };
    texts.iter().for_each(|t| each(t, &mut out));
    out
}

/// What a host lacks: the WIT function, the name it was looked for under,
/// and the exception that gave that name, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Missing {
    wit: String,
    expected: String,
    why: Option<&'static str>,
}

/// What the check found.
#[derive(Debug, Default)]
struct Report {
    /// Per host, the functions it lacks.
    missing: BTreeMap<Host, Vec<Missing>>,
    /// Rows of the exception table or of the known gaps that are no longer
    /// needed, each with what to do.
    stale: Vec<String>,
    /// The known gaps that still are, for the log.
    gaps: Vec<String>,
}

/// Checks every host's names against the WIT's functions.
fn check(
    wit: &[WitFunc],
    defined: &BTreeMap<Host, BTreeSet<String>>,
    exceptions: &[Exception],
    gaps: &[Gap],
) -> Report {
    let mut report = Report::default();
    let mut used = vec![false; exceptions.len()];
    for (&host, names) in defined {
        for f in wit {
            let base = base_name(host, f);
            let row = exceptions
                .iter()
                .position(|(w, hosts, _, _)| *w == base && hosts.contains(&host));
            let expected = match row {
                Some(i) => {
                    used[i] = true;
                    exceptions[i].2.name().to_string()
                }
                None => host.case(&base),
            };
            if names.contains(&expected) {
                continue;
            }
            if let Some((_, _, add)) = gaps.iter().find(|(w, h, _)| *w == f.name && *h == host) {
                report.gaps.push(format!(
                    "{}: {} lacks `{expected}`: {add}",
                    f.name,
                    host.label()
                ));
                continue;
            }
            report.missing.entry(host).or_default().push(Missing {
                wit: f.name.clone(),
                expected,
                why: row.map(|i| exceptions[i].3),
            });
        }
    }
    for (i, (w, hosts, there, _)) in exceptions.iter().enumerate() {
        let checked: Vec<&Host> = hosts.iter().filter(|h| defined.contains_key(h)).collect();
        if checked.is_empty() {
            continue;
        }
        if !used[i] {
            report.stale.push(format!(
                "EXCEPTIONS: `{w}` is no function of resource memory (after the options of step 1): drop its row"
            ));
            continue;
        }
        for &host in checked {
            let plain = host.case(w);
            if plain != there.name() && defined[&host].contains(&plain) {
                report.stale.push(format!(
                    "EXCEPTIONS: {} now has `{plain}` for `{w}`: drop the row that sends it to `{}`",
                    host.label(),
                    there.name()
                ));
            }
        }
    }
    for (w, host, _) in gaps {
        let Some(names) = defined.get(host) else {
            continue;
        };
        match wit.iter().find(|f| f.name == *w) {
            None => report.stale.push(format!(
                "KNOWN_GAPS: `{w}` is no function of resource memory: drop its row"
            )),
            Some(f) => {
                let base = base_name(*host, f);
                let expected = exceptions
                    .iter()
                    .find(|(e, hosts, _, _)| *e == base && hosts.contains(host))
                    .map_or_else(|| host.case(&base), |(_, _, t, _)| t.name().to_string());
                if names.contains(&expected) {
                    report.stale.push(format!(
                        "KNOWN_GAPS: {} has `{expected}` for `{w}` now: drop its row",
                        host.label()
                    ));
                }
            }
        }
    }
    report
}

/// The missing functions, per host, with what to add.
fn describe(missing: &BTreeMap<Host, Vec<Missing>>) -> String {
    let mut out = String::new();
    for (host, list) in missing {
        out.push_str(&format!("  {}:\n", host.label()));
        for m in list {
            match m.why {
                None => out.push_str(&format!(
                    "    {}: add `{}`, a thin call through to the export like its neighbours\n",
                    m.wit, m.expected
                )),
                Some(why) => out.push_str(&format!(
                    "    {}: folded into `{}`, which is not there ({why}): add it, or fix the row in EXCEPTIONS\n",
                    m.wit, m.expected
                )),
            }
        }
    }
    out
}

/// The WIT's functions and every host's names, read from the tree.
fn the_tree() -> (Vec<WitFunc>, BTreeMap<Host, BTreeSet<String>>) {
    let wit = fs::read_to_string(root().join("wit/engram.wit")).expect("read wit/engram.wit");
    let defined = ALL
        .iter()
        .map(|&h| (h, names_of(h, &host_texts(h))))
        .collect();
    (wit_functions(&wit), defined)
}

#[test]
fn every_host_has_every_function_of_the_wit() {
    let (wit, defined) = the_tree();
    assert!(
        wit.len() > 40,
        "resource memory in wit/engram.wit: only {} functions read",
        wit.len()
    );
    for (host, names) in &defined {
        assert!(
            !names.is_empty(),
            "{}: no methods read (did the class move or change shape?)",
            host.label()
        );
    }
    let report = check(&wit, &defined, EXCEPTIONS, KNOWN_GAPS);
    for gap in &report.gaps {
        println!("known gap (KNOWN_GAPS, must shrink): {gap}");
    }
    assert!(
        report.missing.is_empty(),
        "hosts lack functions of `resource memory` (wit/engram.wit; STYLE.md item 13):\n{}\
         A name that differs only by convention goes in EXCEPTIONS in tests/host_parity.rs, \
         with why; a function the host lacks is added to the host.",
        describe(&report.missing)
    );
}

#[test]
fn every_exception_and_known_gap_is_still_needed() {
    let (wit, defined) = the_tree();
    let report = check(&wit, &defined, EXCEPTIONS, KNOWN_GAPS);
    assert!(
        report.stale.is_empty(),
        "rows of tests/host_parity.rs no longer needed:\n  {}",
        report.stale.join("\n  ")
    );
}

// Probes: the check fails where it should.

/// The tree's names, with `host`'s read from its sources changed by
/// `edit` (which must change them).
fn with_edit(host: Host, edit: impl Fn(&str) -> String) -> BTreeMap<Host, BTreeSet<String>> {
    let (_, mut defined) = the_tree();
    let texts = host_texts(host);
    let edited: Vec<String> = texts.iter().map(|t| edit(t)).collect();
    assert_ne!(
        texts,
        edited,
        "the probe's edit changed nothing in {}",
        host.label()
    );
    defined.insert(host, names_of(host, &edited));
    defined
}

fn missing_of(report: &Report, host: Host) -> Vec<String> {
    report
        .missing
        .get(&host)
        .map(|m| m.iter().map(|m| m.wit.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn a_host_without_a_wit_function_fails() {
    // `hit-text`'s method renamed away in each host in turn: that host,
    // and only it, is reported, for that function only.
    let removals: [(Host, &str, &str); 4] = [
        (
            Host::JsWrapper,
            "  hitText(item) {",
            "  hitTextGone(item) {",
        ),
        (Host::JsTypes, "  hitText(item: ", "  hitTextGone(item: "),
        (Host::Python, "    def hit_text(", "    def hit_text_gone("),
        (
            Host::Rust,
            "    pub fn hit_text(",
            "    pub fn hit_text_gone(",
        ),
    ];
    let (wit, _) = the_tree();
    for (host, from, to) in removals {
        let defined = with_edit(host, |t| t.replace(from, to));
        let report = check(&wit, &defined, EXCEPTIONS, KNOWN_GAPS);
        assert_eq!(report.missing.len(), 1, "{}: {report:?}", host.label());
        assert_eq!(missing_of(&report, host), ["hit-text"], "{}", host.label());
        let text = describe(&report.missing);
        assert!(text.contains(host.label()), "{text}");
        assert!(
            text.contains(&format!("add `{}`", host.case("hit-text"))),
            "{text}"
        );
    }
}

#[test]
fn a_host_without_a_folding_method_lacks_each_function_folded_into_it() {
    let (wit, _) = the_tree();
    let defined = with_edit(Host::JsWrapper, |t| {
        t.replace("  explain(what) {", "  why(what) {")
    });
    let report = check(&wit, &defined, EXCEPTIONS, KNOWN_GAPS);
    assert_eq!(
        missing_of(&report, Host::JsWrapper),
        [
            "explain-recall",
            "explain-episode",
            "explain-fact",
            "explain-message"
        ]
    );
    assert!(describe(&report.missing).contains("folded into `explain`"));
}

#[test]
fn a_method_outside_the_class_does_not_count() {
    let (wit, _) = the_tree();
    // The Python `def stats` moved out of the class to the module's
    // margin, and the Rust one to another type's impl.
    let defined = with_edit(Host::Python, |t| {
        t.replace(
            "    def stats(self)",
            "def stats_gone(self)\ndef stats(self)",
        )
    });
    let report = check(&wit, &defined, EXCEPTIONS, KNOWN_GAPS);
    assert!(
        missing_of(&report, Host::Python).contains(&"stats".to_string()),
        "{report:?}"
    );
    let text = "impl Engram {\n    pub fn view(&mut self) {}\n}\nimpl Other {\n    pub fn stats(&mut self) {}\n}\n";
    let mut names = BTreeSet::new();
    rust_impl_members(text, &mut names);
    assert_eq!(names, BTreeSet::from(["view".to_string()]));
}

#[test]
fn a_new_wit_function_fails_every_host() {
    let text = fs::read_to_string(root().join("wit/engram.wit")).expect("read the WIT");
    let anchor = "        stats: func() -> result<stats, memory-error>;\n";
    assert!(text.contains(anchor), "the probe's anchor left the WIT");
    let grown = text.replace(
        anchor,
        &format!("{anchor}        /// A probe.\n        forget-all: func() -> result<_, memory-error>;\n"),
    );
    let (_, defined) = the_tree();
    let report = check(&wit_functions(&grown), &defined, EXCEPTIONS, KNOWN_GAPS);
    for &host in ALL {
        assert_eq!(
            missing_of(&report, host),
            ["forget-all"],
            "{}",
            host.label()
        );
    }
    let text = describe(&report.missing);
    assert!(
        text.contains("add `forgetAll`") && text.contains("add `forget_all`"),
        "{text}"
    );
}

#[test]
fn names_convert_from_kebab_case() {
    assert_eq!(camel("add-message"), "addMessage");
    assert_eq!(camel("view-tokens-in"), "viewTokensIn");
    assert_eq!(camel("%export"), "export");
    assert_eq!(camel("stats"), "stats");
    assert_eq!(snake("abandon-tool-call"), "abandon_tool_call");
    assert_eq!(snake("%import"), "import");
    assert_eq!(Host::JsTypes.case("set-instructions"), "setInstructions");
    assert_eq!(
        Host::Rust.case("render-openai-at-in"),
        "render_openai_at_in"
    );
}

#[test]
fn thread_and_time_variants_fold_where_the_host_takes_options() {
    let f = |name: &str, params: &[&str]| WitFunc {
        name: name.into(),
        params: params.iter().map(|p| p.to_string()).collect(),
    };
    let at_in = f("render-openai-at-in", &["at", "thread"]);
    assert_eq!(base_name(Host::JsWrapper, &at_in), "render-openai");
    assert_eq!(base_name(Host::Python, &at_in), "render-openai-at");
    assert_eq!(base_name(Host::Rust, &at_in), "render-openai-at-in");
    // A name that merely ends so, without the parameter, stays.
    assert_eq!(
        base_name(Host::JsWrapper, &f("log-in", &["user"])),
        "log-in"
    );
    assert_eq!(
        base_name(Host::Python, &f("view-tokens-in", &["thread"])),
        "view-tokens"
    );
}

#[test]
fn the_wit_parser_reads_names_and_parameters() {
    let (wit, _) = the_tree();
    let get = |n: &str| {
        wit.iter()
            .find(|f| f.name == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    assert_eq!(get("view-at-in").params, ["at", "thread"]);
    assert_eq!(
        get("open-with").params,
        ["namespace", "config", "complete", "embed"]
    );
    assert_eq!(get("export-part").params, ["cursor", "max-bytes"]);
    assert!(get("export").params.is_empty());
    assert_eq!(get("import").params, ["json"]);
    assert!(get("note-tool").params.is_empty());
    // Up to the resource's end: the next interface's functions are not its.
    assert!(wit
        .iter()
        .all(|f| f.name != "complete" && f.name != "graph-checksum"));
    // A `{}` in a doc comment does not end it early.
    assert_eq!(wit.first().map(|f| f.name.as_str()), Some("open"));
    assert_eq!(wit.last().map(|f| f.name.as_str()), Some("stats"));
}

#[test]
fn an_exception_the_host_outgrew_is_reported() {
    let (wit, _) = the_tree();
    // Python gains a plain `export_part`: its row is no longer needed.
    let defined = with_edit(Host::Python, |t| {
        t.replace(
            "    def export_parts(",
            "    def export_part(self):\n        pass\n\n    def export_parts(",
        )
    });
    let report = check(&wit, &defined, EXCEPTIONS, KNOWN_GAPS);
    assert!(report.missing.is_empty(), "{report:?}");
    assert_eq!(report.stale.len(), 1, "{:?}", report.stale);
    assert!(
        report.stale[0].contains("`export_part` for `export-part`"),
        "{:?}",
        report.stale
    );
    // A row for a function that left the WIT.
    let gone: &[Exception] = &[("forget-all", PYTHON, There::Named("forget"), "a probe")];
    let (_, defined) = the_tree();
    let report = check(&wit, &defined, gone, KNOWN_GAPS);
    assert!(
        report.stale[0].contains("`forget-all` is no function"),
        "{:?}",
        report.stale
    );
}

#[test]
fn a_known_gap_is_left_out_until_it_closes() {
    let (wit, _) = the_tree();
    let gaps: &[Gap] = &[("hit-text", Host::Python, "def hit_text(self, item)")];
    let defined = with_edit(Host::Python, |t| {
        t.replace("    def hit_text(", "    def hit_text_gone(")
    });
    let report = check(&wit, &defined, EXCEPTIONS, gaps);
    assert!(
        report.missing.is_empty() && report.stale.is_empty(),
        "{report:?}"
    );
    assert_eq!(report.gaps.len(), 1);
    // Once the host has it, the row must go.
    let (_, defined) = the_tree();
    let report = check(&wit, &defined, EXCEPTIONS, gaps);
    assert!(report.stale[0].contains("KNOWN_GAPS"), "{:?}", report.stale);
}

#[test]
fn a_python_class_split_into_bases_keeps_its_methods() {
    let memory = "from .reads import _Reads\n\nclass Memory(_Reads, object):\n    def __init__(self):\n        pass\n";
    let reads = "class _Reads:\n    \"\"\"Reads.\"\"\"\n\n    def stats(self):\n        def inner():\n            pass\n\n    async def facts(self):\n        pass\n\n\ndef outside():\n    pass\n";
    let names = names_of(Host::Python, &[memory.to_string(), reads.to_string()]);
    let want: BTreeSet<String> = ["__init__", "stats", "facts"].map(String::from).into();
    assert_eq!(names, want);
}

#[test]
fn js_and_dts_members_are_read_with_their_keywords() {
    let js = "export class Memory {\n  #inner = null;\n  static async open(o) {\n  }\n  static async #open(o) {\n  }\n  async *exportParts(o) {\n  }\n  get closed() {\n  }\n  [DISPOSE]() {\n  }\n  /**\n   * view(x) in a comment\n   */\n}\nexport function toNewMessage(m) {\n}\n";
    let mut names = BTreeSet::new();
    js_class_members(js, &mut names);
    let want: BTreeSet<String> = ["open", "exportParts", "closed"].map(String::from).into();
    assert_eq!(names, want);
    let dts = "export interface MemoryStore extends Store {\n  readonly data: Map;\n}\nexport declare class Memory implements Disposable {\n  private constructor();\n  static open(options: OpenOptions): Promise<Memory>;\n  on<E>(event: E): void;\n  readonly closed: boolean;\n  explain(what: { episode: number }): Promise<E>;\n  explain(what: { fact: number }): Promise<F>;\n  [Symbol.dispose](): void;\n}\n";
    let mut names = BTreeSet::new();
    dts_class_members(dts, &mut names);
    let want: BTreeSet<String> = ["open", "on", "closed", "explain"].map(String::from).into();
    assert_eq!(names, want);
}
