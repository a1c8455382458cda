//! The scale bench, native side (issue 12): memories of 1k to 1M facts built
//! by import (384-d vectors, a long-tailed vocabulary of pseudo-words, 10
//! traces per fact), then the costs that grow with the memory. Run by
//! `scripts/bench`, one process per size and step:
//!
//!     cargo run --release --example scale -- build   N DIR   # export + import + store dump
//!     cargo run --release --example scale -- measure N DIR   # open, search, adds, note, export
//!     cargo run --release --example scale -- report  DIR OUT # Markdown table + JSON
//!
//! `build` writes `DIR/export-N.json` (a valid export of the current format,
//! written directly as JSON text), imports it into an in-memory store and
//! dumps the store to `DIR/store-N.kv`. `measure` loads that dump into a
//! fresh process (so its peak RSS is the memory in use with its store in
//! memory, not the import), and writes `DIR/native-N.json`. The wasm side,
//! `hosts/rust/examples/scale.rs`, measures the same dump in the component
//! and writes `DIR/wasm-N.json`. `report` joins them. The model and the data
//! shared by both sides are in `bench/scale_model.rs`.

#[path = "../bench/scale_model.rs"]
mod scale_model;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use engram::base::host::Write;
use engram::testing::{block_on, ManualClock};
use engram::types::recall::SearchOptions;
use engram::Config;
use engram::FactKind;
use engram::Memory;
use engram::Model;
use engram::ModelError;
use engram::NewFact;
use engram::NewMessage;
use engram::NoteArgs;
use engram::Store;
use engram::StoreError;
use engram::TaskRequest;
use scale_model::{Rng, DIMENSION};
use serde_json::{json, Value};

/// Facts noted per sealed episode.
const FACTS_PER_EPISODE: usize = 20;
/// Traces per fact (one from its source episode, the rest from others).
const TRACES_PER_FACT: usize = 10;
/// Share of the other episodes' traces that say yes.
const OTHER_YES: f64 = 0.1;
/// Sealed episodes whose facts are in the facts block; older ones are
/// forgotten (out of view, kept for recall).
const SEALED_IN_VIEW: usize = 3;
/// One new entity per this many facts.
const FACTS_PER_ENTITY: usize = 5;
/// The memory's config (the defaults) and namespace.
pub const CONFIG: &str = "{}";
const NS: &str = "scale";

/// The bytes asked for in each part of the export (8 MiB, as the JS
/// package's `exportParts` asks by default).
const EXPORT_PART_BYTES: usize = 8 << 20;

/// The end of the generated history (2026-12-01T00:00:00Z) and the clock's
/// reading when the measures start (a minute later, so no sleep is due).
const T_END: i64 = 1_796_083_200_000;
const YEAR_MS: i64 = 365 * 24 * 3_600_000;

/// A store that counts the bytes each commit writes. Built by `build` in
/// memory; opened by `measure` and `profile` over the store dump on disk
/// ([`KvStore::on_disk`]): values stay in the file and are read when asked
/// for, as a host's SQLite or IndexedDB keeps them, so peak RSS is the
/// engine's and not a second copy of the store.
#[derive(Clone, Default)]
struct KvStore {
    data: Rc<RefCell<BTreeMap<String, Stored>>>,
    file: Option<Rc<std::fs::File>>,
    written: Rc<Cell<u64>>,
}

/// A value held in memory, or where it lies in the dump file.
#[derive(Clone)]
enum Stored {
    Mem(Vec<u8>),
    File { at: u64, len: usize },
}

impl KvStore {
    /// The dump at `path`, its values left in the file.
    fn on_disk(path: &Path) -> KvStore {
        let mut data = BTreeMap::new();
        scale_model::index_kv(path, |k, at, len| {
            data.insert(k, Stored::File { at, len });
        })
        .expect("index the store dump");
        KvStore {
            data: Rc::new(RefCell::new(data)),
            file: Some(Rc::new(
                std::fs::File::open(path).expect("open the store dump"),
            )),
            written: Rc::default(),
        }
    }

    fn read(&self, v: &Stored) -> Vec<u8> {
        match v {
            Stored::Mem(v) => v.clone(),
            Stored::File { at, len } => {
                use std::os::unix::fs::FileExt as _;
                let mut buf = vec![0u8; *len];
                let file = self.file.as_ref().expect("a file-backed value has a file");
                file.read_exact_at(&mut buf, *at)
                    .expect("read the store dump");
                buf
            }
        }
    }

    fn bytes(&self) -> u64 {
        self.data
            .borrow()
            .iter()
            .map(|(k, v)| {
                let len = match v {
                    Stored::Mem(v) => v.len(),
                    Stored::File { len, .. } => *len,
                };
                (k.len() + len) as u64
            })
            .sum()
    }

    /// Every key with its value, read.
    fn pairs(&self) -> Vec<(String, Vec<u8>)> {
        let data = self.data.borrow();
        data.iter()
            .map(|(k, v)| (k.clone(), self.read(v)))
            .collect()
    }
}

impl Store for KvStore {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.data.borrow().get(key).map(|v| self.read(v)))
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.written
            .set(self.written.get() + (key.len() + value.len()) as u64);
        self.data
            .borrow_mut()
            .insert(key.into(), Stored::Mem(value.into()));
        Ok(())
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.data.borrow_mut().remove(key);
        Ok(())
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .data
            .borrow()
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }
    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[Write],
    ) -> Result<(), StoreError> {
        let mut data = self.data.borrow_mut();
        if data.get(guard).map(|v| self.read(v)).as_deref() != expected {
            return Err(StoreError::Conflict);
        }
        let mut n = 0;
        for (k, v) in writes {
            n += k.len() + v.as_ref().map_or(0, Vec::len);
            match v {
                Some(v) => data.insert(k.clone(), Stored::Mem(v.clone())),
                None => data.remove(k),
            };
        }
        self.written.set(self.written.get() + n as u64);
        Ok(())
    }
}

/// The bench model (`bench/scale_model.rs`).
struct BenchModel;

impl Model for BenchModel {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        Ok(scale_model::answer(request.task.name(), &request.content))
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        Ok(texts.iter().map(|t| scale_model::embed(t)).collect())
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Writes the export of a memory of `facts` facts to `path` (JSON text of
/// the current format: one log entry per sealed episode, then the live
/// episode, then the open stretch). Returns (episodes, entities, traces,
/// passages, messages).
fn write_export(facts: usize, path: &Path) -> std::io::Result<[usize; 5]> {
    let q = scale_model::quote;
    let enc = |v: &[f32]| engram::base::bytes::encode(v);
    let vocab = scale_model::vocabulary(20_000);
    let mut rng = Rng(42);
    let episodes = facts.div_ceil(FACTS_PER_EPISODE);
    let spacing = YEAR_MS / (episodes as i64 + 1);
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    write!(
        f,
        "{{\"format\":\"engram\",\"version\":{},\"log\":[",
        engram::store::EXPORT_VERSION
    )?;
    let (mut msg, mut trace, mut entity, mut fact, mut passage, mut seq) =
        (0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
    // One episode's messages: returns (first, last, tokens, texts).
    let mut messages = |f: &mut std::io::BufWriter<std::fs::File>,
                        rng: &mut Rng,
                        names: &[String],
                        start: i64,
                        count: usize,
                        first_event: &mut bool|
     -> std::io::Result<(usize, usize, usize, Vec<String>)> {
        let first = msg + 1;
        let mut tokens = 0;
        let mut texts = Vec::new();
        for j in 0..count {
            msg += 1;
            let w = scale_model::words(rng, &vocab, 24);
            let name = &names[j % names.len().max(1)];
            let text = if j % 2 == 0 {
                format!(
                    "About {name}: {} {}, and what of {}?",
                    w[..8].join(" "),
                    w[8..16].join(" "),
                    w[16..].join(" ")
                )
            } else {
                format!(
                    "{name} {} because {}; {}.",
                    w[..8].join(" "),
                    w[8..16].join(" "),
                    w[16..].join(" ")
                )
            };
            let t = engram::base::text::estimate_tokens(&text) + 4;
            tokens += t;
            let role = if j % 2 == 0 { "user" } else { "assistant" };
            if !*first_event {
                write!(f, ",")?;
            }
            *first_event = false;
            write!(
                f,
                "{{\"type\":\"message\",\"id\":{msg},\"role\":\"{role}\",\"content\":{},\"at\":{},\"tokens\":{t},\"boundary\":{}}}",
                q(&text),
                start + j as i64 * 30_000,
                if j == 0 { "0.9" } else { "0.1" }
            )?;
            texts.push(text);
        }
        Ok((first, msg, tokens, texts))
    };
    let mut sealed = Vec::new();
    for e in 1..=episodes + 2 {
        let live = e == episodes + 1;
        let open = e == episodes + 2;
        let start = if live {
            T_END - 30 * 60_000
        } else if open {
            T_END - 10 * 60_000
        } else {
            T_END - YEAR_MS + e as i64 * spacing
        };
        let sealed_at = start + 5 * 60_000;
        seq += 1;
        write!(
            f,
            "{}{{\"seq\":{seq},\"at\":{},\"events\":[",
            if seq > 1 { "," } else { "" },
            if live || open {
                start + 3 * 60_000
            } else {
                sealed_at
            }
        )?;
        let mut first_event = true;
        let n_facts = if live || open {
            0
        } else {
            FACTS_PER_EPISODE.min(facts - fact)
        };
        // The entities this episode's facts name: new ones first.
        let mut new_entities = Vec::new();
        let mut triples = Vec::new();
        for k in 0..n_facts {
            let subject = if (fact + k) % FACTS_PER_ENTITY == 0 || entity + new_entities.len() < 2 {
                new_entities.push(entity + new_entities.len() + 1);
                entity + new_entities.len()
            } else {
                1 + rng.below(entity + new_entities.len())
            };
            let object = 1 + rng.below(entity + new_entities.len());
            triples.push((subject, object));
        }
        let names: Vec<String> = if triples.is_empty() {
            vec![scale_model::entity_name(e, &vocab)]
        } else {
            triples
                .iter()
                .take(4)
                .map(|&(s, _)| scale_model::entity_name(s, &vocab))
                .collect()
        };
        let count = if open { 2 } else { 4 };
        let (first, last, tokens, texts) =
            messages(&mut f, &mut rng, &names, start, count, &mut first_event)?;
        if open {
            write!(f, "]}}")?;
            break;
        }
        let formed = start + (count as i64 - 1) * 30_000;
        trace += 1;
        write!(
            f,
            ",{{\"type\":\"episode_formed\",\"episode\":{e},\"first\":{first},\"last\":{last},\"at\":{formed},\"tokens\":{tokens}}}\
             ,{{\"type\":\"trace\",\"id\":{trace},\"episode\":{e},\"cause\":{{\"kind\":\"encoding\"}},\"yes\":true,\"strength\":1.0,\"at\":{formed}}}"
        )?;
        if live {
            // A memory that lived a year: every episode but the newest
            // sealed ones has faded out of the facts block (forgotten).
            let keep = sealed.len().saturating_sub(SEALED_IN_VIEW);
            for &old in &sealed[..keep] {
                write!(
                    f,
                    ",{{\"type\":\"state_changed\",\"episode\":{old},\"change\":{{\"state\":\"forgotten\",\"at\":{formed}}}}}"
                )?;
            }
            write!(f, "]}}")?;
            continue;
        }
        write!(
            f,
            ",{{\"type\":\"state_changed\",\"episode\":{e},\"change\":{{\"state\":\"leaving\",\"at\":{}}}}}",
            start + 4 * 60_000
        )?;
        for id in new_entities {
            let name = scale_model::entity_name(id, &vocab);
            write!(
                f,
                ",{{\"type\":\"entity_added\",\"id\":{id},\"name\":{},\"aliases\":[{{\"name\":{},\"normal\":{},\"resolution\":{{\"how\":\"new\"}},\"at\":{sealed_at}}}],\"embedding\":\"{}\"}}",
                q(&name),
                q(&name),
                q(&engram::base::text::normalise_name(&name)),
                enc(&scale_model::embed(&name))
            )?;
            entity = id;
        }
        let first_fact = fact + 1;
        for (subject, object) in triples {
            fact += 1;
            let predicate = scale_model::PREDICATES[rng.below(scale_model::PREDICATES.len())];
            let n = 6 + rng.below(5);
            let w = scale_model::words(&mut rng, &vocab, n);
            let sentence = format!(
                "{} {predicate} {} {}.",
                scale_model::entity_name(subject, &vocab),
                scale_model::entity_name(object, &vocab),
                w.join(" ")
            );
            write!(
                f,
                ",{{\"type\":\"fact_added\",\"id\":{fact},\"subject\":{subject},\"predicate\":{},\"object\":{object},\"sentence\":{},\"kind\":\"fact\",\"episode\":{e},\"said_at\":{start},\"noted_at\":{sealed_at},\"embedding\":\"{}\"}}",
                q(predicate),
                q(&sentence),
                enc(&scale_model::embed(&sentence))
            )?;
        }
        // As the engine writes them: a trace per yes, the no answers
        // counted per fact.
        for id in first_fact..=fact {
            let mut declined = 0;
            for t in 0..TRACES_PER_FACT {
                let (episode, yes) = if t == 0 {
                    (e, true)
                } else {
                    (1 + rng.below(e), rng.unit() < OTHER_YES)
                };
                if !yes {
                    declined += 1;
                    continue;
                }
                trace += 1;
                write!(
                    f,
                    ",{{\"type\":\"trace\",\"id\":{trace},\"episode\":{episode},\"cause\":{{\"kind\":\"fact\",\"fact\":{id}}},\"yes\":true,\"strength\":1.0,\"at\":{sealed_at}}}"
                )?;
            }
            if declined > 0 {
                write!(
                    f,
                    ",{{\"type\":\"declined\",\"fact\":{id},\"episodes\":{declined},\"at\":{sealed_at}}}"
                )?;
            }
        }
        write!(
            f,
            ",{{\"type\":\"noted\",\"episode\":{e},\"at\":{sealed_at}}}\
             ,{{\"type\":\"state_changed\",\"episode\":{e},\"change\":{{\"state\":\"sealed\",\"at\":{sealed_at}}}}}\
             ,{{\"type\":\"passages_indexed\",\"passages\":["
        )?;
        sealed.push(e);
        for (half, (a, b)) in [(first, first + 1), (first + 2, last)]
            .into_iter()
            .enumerate()
        {
            passage += 1;
            let text = texts[half * 2..]
                .iter()
                .take(2)
                .cloned()
                .collect::<Vec<_>>();
            write!(
                f,
                "{}{{\"id\":{passage},\"episode\":{e},\"first\":{a},\"last\":{b},\"at\":{formed},\"embedding\":\"{}\"}}",
                if half > 0 { "," } else { "" },
                enc(&scale_model::embed(&text.join("\n")))
            )?;
        }
        write!(f, "]}}]}}")?;
    }
    write!(f, "]}}")?;
    f.flush()?;
    Ok([episodes + 1, entity, trace, passage, msg])
}

fn open(store: KvStore, clock: &ManualClock) -> Memory<KvStore, BenchModel, ManualClock> {
    block_on(Memory::open(
        NS,
        store,
        BenchModel,
        clock.clone(),
        Config::from_json(CONFIG).expect("config"),
    ))
    .expect("open")
}

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).expect("write JSON");
}

fn build(facts: usize, dir: &Path) {
    std::fs::create_dir_all(dir).expect("dir");
    let export = dir.join(format!("export-{facts}.json"));
    let t = Instant::now();
    let [episodes, entities, traces, passages, messages] =
        write_export(facts, &export).expect("write the export");
    let generate_ms = ms(t);
    let json = std::fs::read_to_string(&export).expect("read the export");
    let store = KvStore::default();
    // One maintain links every row into the meaning graphs (a host would
    // spread it over many, 2,048 rows each by default) and saves them.
    let mut memory = block_on(Memory::open(
        NS,
        store.clone(),
        BenchModel,
        ManualClock::at(T_END + 60_000),
        Config::from_json(r#"{"graph_rows_per_maintain": 10000000}"#).expect("config"),
    ))
    .expect("open");
    let t = Instant::now();
    block_on(memory.import(&json)).expect("import");
    let import_ms = ms(t);
    let t = Instant::now();
    block_on(memory.maintain()).expect("maintain");
    let link_ms = ms(t);
    assert!(
        memory.storage_warnings().is_empty(),
        "{:?}",
        memory.storage_warnings()
    );
    let stats = block_on(memory.stats()).expect("stats");
    assert_eq!(stats.facts[0] + stats.facts[1], facts, "facts imported");
    let pairs = store.pairs();
    scale_model::write_kv(
        &dir.join(format!("store-{facts}.kv")),
        pairs.iter().map(|(k, v)| (k, v)),
    )
    .expect("dump the store");
    drop(pairs);
    let store_bytes = store.bytes();
    write_json(
        &dir.join(format!("build-{facts}.json")),
        &json!({
            "facts": facts, "episodes": episodes, "entities": entities, "traces": traces,
            "passages": passages, "messages": messages, "dimension": DIMENSION,
            "export_bytes": json.len(), "generate_ms": generate_ms, "import_ms": import_ms,
            "link_ms": link_ms,
            "store_bytes": store_bytes, "store_bytes_per_fact": store_bytes as f64 / facts as f64,
            "peak_rss_build": scale_model::peak_rss(),
        }),
    );
    std::fs::remove_file(&export).ok();
    eprintln!(
        "built {facts} facts: export {} MB generated in {:.1} s, imported in {:.1} s, graphs linked in {:.1} s, store {} MB",
        json.len() >> 20,
        generate_ms / 1e3,
        import_ms / 1e3,
        link_ms / 1e3,
        store_bytes >> 20
    );
}

/// How many of each measure to take at a size: fewer at 100k and up.
fn repeats(facts: usize) -> (usize, usize, usize, usize) {
    // (opens and exports, searches, turns, notes)
    match facts {
        0..=20_000 => (3, 300, 100, 5),
        20_001..=200_000 => (1, 500, 100, 3),
        _ => (1, 500, 5, 1),
    }
}

/// Nanoseconds this thread has run on a CPU (Linux's schedstat; 0
/// elsewhere): a figure that other processes' load inflates less than the
/// wall clock.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// One phase alone, for a profiler (`perf record ... scale profile N DIR
/// search`): `open` opens the memory 5 times, `search` opens it once and
/// runs 2,000 searches, `recall` compares 200 searches with the exact ones,
/// `adds` adds 300 turns (a user message and a reply). Prints the phase's time per run.
/// The system allocator, counting the bytes live and their peak (for
/// `profile heap`: what the engine holds, apart from the allocator's
/// slack and the pages the process touched).
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to `System` with the caller's layout unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: as `System::alloc`, with the same layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Both blocks are live while the old one is copied.
        let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: as `System::realloc`, with the caller's arguments.
        let out = unsafe { System.realloc(ptr, layout, new_size) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        out
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes the allocator holds for the program now, and at most so far.
fn heap() -> (usize, usize) {
    (LIVE.load(Ordering::Relaxed), PEAK.load(Ordering::Relaxed))
}

fn profile(facts: usize, dir: &Path, phase: &str) {
    let store = KvStore::on_disk(&dir.join(format!("store-{facts}.kv")));
    let clock = ManualClock::at(T_END + 60_000);
    let runs = if phase == "open" { 5 } else { 1 };
    let t = Instant::now();
    let mut memory = None;
    for _ in 0..runs {
        drop(memory.take());
        memory = Some(open(store.clone(), &clock));
    }
    eprintln!("open: {:.1} ms per run", ms(t) / runs as f64);
    let (live, peak) = heap();
    eprintln!(
        "heap: {} MB live after open, {} MB at most",
        live >> 20,
        peak >> 20
    );
    let mut memory = memory.unwrap();
    if phase == "recall" {
        graph_recall(&store, &clock, &mut memory);
        return;
    }
    for w in memory.storage_warnings() {
        eprintln!("storage warning: {w}");
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    for l in status
        .lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM"))
    {
        eprintln!("{l}");
    }
    if phase == "adds" {
        let vocab = scale_model::vocabulary(20_000);
        let mut now = T_END + 60_000;
        let (mut user, mut reply) = (Vec::new(), Vec::new());
        let mut user_cpu = 0u64;
        // `ENGRAM_PERF_CTL=CTL,ACK` (perf record's --control fifo:CTL,ACK
        // with --delay=-1): samples only the replies.
        let perf = std::env::var("ENGRAM_PERF_CTL").ok().map(|v| {
            let (ctl, ack) = v.split_once(',').expect("CTL,ACK");
            let ctl = std::fs::OpenOptions::new()
                .write(true)
                .open(ctl)
                .expect("ctl fifo");
            let ack = std::fs::File::open(ack).expect("ack fifo");
            RefCell::new((ctl, std::io::BufReader::new(ack)))
        });
        let perf_say = |what: &str| {
            if let Some(p) = &perf {
                use std::io::BufRead as _;
                let mut p = p.borrow_mut();
                writeln!(p.0, "{what}").expect("perf ctl");
                let mut line = String::new();
                p.1.read_line(&mut line).expect("perf ack");
            }
        };
        for i in 0..300 {
            for is_user in [true, false] {
                now += 30_000;
                clock.set(now);
                let message = if is_user {
                    NewMessage::user(scale_model::user_message(i, &vocab))
                } else {
                    NewMessage::assistant(scale_model::assistant_message(i, &vocab))
                };
                // `ENGRAM_PERF_ONLY=I,J,..`: samples only these replies (the
                // run is deterministic, so a first run's fast ones).
                let sampled = !is_user
                    && std::env::var("ENGRAM_PERF_ONLY")
                        .map_or(true, |v| v.split(',').any(|s| s == i.to_string()));
                if sampled {
                    perf_say("enable");
                }
                let (t, before, cpu) = (Instant::now(), store.written.get(), cpu_ns());
                let added = block_on(memory.add_message(message)).expect("add");
                let took = ms(t);
                if is_user {
                    user_cpu += cpu_ns() - cpu;
                }
                if sampled {
                    perf_say("disable");
                }
                if !is_user && std::env::var_os("ENGRAM_ADDS_DUMP").is_some() {
                    eprintln!("reply {i}: {:.0} us", took * 1e3);
                }
                if took > 2.0 * scale_model::pct(if is_user { &user } else { &reply }, 0.5).max(1.0)
                {
                    let m = added.maintained.as_ref();
                    eprintln!(
                        "slow add {i} ({}): {took:.2} ms, {} B written, formed {}, fade {}, maintained: {}",
                        if is_user { "user" } else { "assistant" },
                        store.written.get() - before,
                        added.formed.len(),
                        added.fade.is_some(),
                        m.map_or("-".to_string(), |m| format!("{m:?}").chars().take(300).collect())
                    );
                }
                (if is_user { &mut user } else { &mut reply }).push(took);
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
        eprintln!(
            "adds: user {:.3} ms, assistant {:.3} ms on average; p50 user {:.3} ms, assistant {:.3} ms; slowest user {:.3} ms, assistant {:.3} ms",
            mean(&user),
            mean(&reply),
            scale_model::pct(&user, 0.5),
            scale_model::pct(&reply, 0.5),
            max(&user),
            max(&reply)
        );
        eprintln!(
            "adds: user {:.3} ms on the CPU on average",
            user_cpu as f64 / 1e6 / user.len().max(1) as f64
        );
    }
    if phase == "search" {
        let vocab = scale_model::vocabulary(20_000);
        let options = SearchOptions {
            limit: 10,
            walk: false,
            include_in_view: true,
            budget_tokens: None,
            ..SearchOptions::default()
        };
        let (t, cpu) = (Instant::now(), cpu_ns());
        for i in 0..2_000 {
            block_on(memory.search(&scale_model::query(i, &vocab), options.clone()))
                .expect("search");
        }
        eprintln!(
            "search: {:.3} ms per query ({:.3} ms on the CPU)",
            ms(t) / 2_000.0,
            (cpu_ns() - cpu) as f64 / 1e6 / 2_000.0
        );
    }
}

/// How much of the exact result the meaning graphs return: `search`'s top
/// 10 with the stored graphs against a handle over the same store without
/// them (every search an exact scan), for 200 queries.
fn graph_recall(
    store: &KvStore,
    clock: &ManualClock,
    memory: &mut Memory<KvStore, BenchModel, ManualClock>,
) {
    let exact_store = KvStore::default();
    for (k, v) in store.pairs() {
        if !k.contains("/ix/") {
            exact_store.data.borrow_mut().insert(k, Stored::Mem(v));
        }
    }
    let mut exact = block_on(Memory::open(
        NS,
        exact_store,
        BenchModel,
        clock.clone(),
        Config::from_json(r#"{"graph_rows_per_maintain": 0}"#).expect("config"),
    ))
    .expect("open");
    let vocab = scale_model::vocabulary(20_000);
    let options = SearchOptions {
        limit: 10,
        walk: false,
        include_in_view: true,
        budget_tokens: None,
        ..SearchOptions::default()
    };
    let (mut found, mut wanted) = (0usize, 0usize);
    for i in 0..200 {
        let query = scale_model::query(i, &vocab);
        let items = |m: &mut Memory<KvStore, BenchModel, ManualClock>| {
            block_on(m.search(&query, options.clone()))
                .expect("search")
                .into_iter()
                .map(|h| h.item)
                .collect::<Vec<_>>()
        };
        let (got, want) = (items(memory), items(&mut exact));
        wanted += want.len();
        found += want.iter().filter(|i| got.contains(i)).count();
    }
    eprintln!(
        "graph recall@10 of search against the exact scan: {:.3} ({found} of {wanted})",
        found as f64 / wanted.max(1) as f64
    );
}

fn measure(facts: usize, dir: &Path) {
    let built: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("build-{facts}.json"))).expect("run build first"),
    )
    .expect("build JSON");
    let entities = built["entities"].as_u64().unwrap() as usize;
    let store = KvStore::on_disk(&dir.join(format!("store-{facts}.kv")));
    let store_bytes = store.bytes();
    let (reps, searches, turns, notes) = repeats(facts);
    let mut now = T_END + 60_000;
    let clock = ManualClock::at(now);

    let mut open_ms = Vec::new();
    let mut memory = None;
    for _ in 0..reps {
        drop(memory.take());
        let t = Instant::now();
        memory = Some(open(store.clone(), &clock));
        open_ms.push(ms(t));
    }
    let mut memory = memory.unwrap();

    let vocab = scale_model::vocabulary(20_000);
    let options = SearchOptions {
        limit: 10,
        walk: false,
        include_in_view: true,
        budget_tokens: None,
        ..SearchOptions::default()
    };
    for i in 0..5 {
        block_on(memory.search(&scale_model::query(100_000 + i, &vocab), options.clone()))
            .expect("search");
    }
    let mut search_ms = Vec::new();
    let mut hits = 0;
    for i in 0..searches {
        let query = scale_model::query(i, &vocab);
        let t = Instant::now();
        hits += block_on(memory.search(&query, options.clone()))
            .expect("search")
            .len();
        search_ms.push(ms(t));
        if std::env::var_os("ENGRAM_SEARCH_DUMP").is_some() {
            eprintln!("search {i}: {:.3} ms", search_ms[i]);
        }
    }

    // The four index searches each of those searches runs (issue 47: a
    // search within 2x of its lists), each query's vector made before the
    // clock starts.
    let mut lists_ms = Vec::new();
    for i in 0..searches {
        let query = scale_model::query(i, &vocab);
        let vector = scale_model::embed(&query);
        let t = Instant::now();
        std::hint::black_box(memory.index_lists(&query, &vector, 10));
        lists_ms.push(ms(t));
    }

    let view_before = block_on(memory.stats()).expect("stats").view_tokens;
    let (mut user_ms, mut assistant_ms, mut user_bytes, mut assistant_bytes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut fades, mut formed) = (0, 0);
    for i in 0..turns {
        for (user, times, bytes) in [
            (true, &mut user_ms, &mut user_bytes),
            (false, &mut assistant_ms, &mut assistant_bytes),
        ] {
            now += 30_000;
            clock.set(now);
            let message = if user {
                NewMessage::user(scale_model::user_message(i, &vocab))
            } else {
                NewMessage::assistant(scale_model::assistant_message(i, &vocab))
            };
            let before = store.written.get();
            let t = Instant::now();
            let added = block_on(memory.add_message(message)).expect("add");
            let took = ms(t);
            let wrote = store.written.get() - before;
            formed += added.formed.len();
            if added.fade.is_some() || added.maintained.as_ref().is_some_and(|m| m.fade.is_some()) {
                fades += 1;
                continue;
            }
            times.push(took);
            bytes.push(wrote as f64);
        }
    }

    let view_after = block_on(memory.stats()).expect("stats").view_tokens;
    let mut note_ms = Vec::new();
    for call in 0..notes {
        now += 30_000;
        clock.set(now);
        let facts = scale_model::note_facts(call, entities, &vocab)
            .into_iter()
            .map(|(subject, predicate, object, sentence)| NewFact {
                subject,
                predicate,
                object,
                sentence,
                kind: FactKind::Fact,
                sources: Vec::new(),
            })
            .collect();
        let t = Instant::now();
        block_on(memory.note(NoteArgs {
            episode: None,
            facts,
        }))
        .expect("note");
        note_ms.push(ms(t));
    }
    // Peak RSS of everything but the export (a 100k-fact export is a
    // 340 MB string), then the export last.
    let peak_rss_working = scale_model::peak_rss();
    // The export in parts of 8 MiB (what a large memory's host writes out
    // part by part), then once as one string.
    let mut export_ms = Vec::new();
    let mut export_bytes = 0;
    let mut export_parts = 0;
    for _ in 0..reps {
        let t = Instant::now();
        let (mut bytes, mut parts, mut cursor) = (0, 0, None);
        loop {
            let part =
                block_on(memory.export_part(cursor, EXPORT_PART_BYTES)).expect("export part");
            bytes += part.text.len();
            parts += 1;
            cursor = part.next;
            if cursor.is_none() {
                break;
            }
        }
        export_ms.push(ms(t));
        (export_bytes, export_parts) = (bytes, parts);
    }
    let t = Instant::now();
    let whole = block_on(memory.export()).expect("export").len();
    let export_whole_ms = ms(t);
    assert_eq!(whole, export_bytes, "the parts add up to the export");
    let p = scale_model::pct;
    let out = json!({
        "side": "native", "facts": facts, "store_bytes": store_bytes,
        "store_bytes_per_fact": store_bytes as f64 / facts as f64,
        "open_ms": p(&open_ms, 0.5), "open_runs": open_ms,
        "search_p50_ms": p(&search_ms, 0.5), "search_p95_ms": p(&search_ms, 0.95),
        "searches": searches, "search_hits_mean": hits as f64 / searches as f64,
        "lists_p50_ms": p(&lists_ms, 0.5), "lists_p95_ms": p(&lists_ms, 0.95),
        "export_ms": p(&export_ms, 0.5), "export_bytes": export_bytes,
        "export_parts": export_parts, "export_whole_ms": export_whole_ms,
        "user_add_p50_ms": p(&user_ms, 0.5), "user_adds": user_ms.len(),
        "assistant_add_p50_ms": p(&assistant_ms, 0.5), "assistant_adds": assistant_ms.len(),
        "user_add_max_ms": user_ms.iter().cloned().fold(0.0, f64::max),
        "assistant_add_max_ms": assistant_ms.iter().cloned().fold(0.0, f64::max),
        "adds_with_fade": fades, "view_tokens_before_adds": view_before,
        "view_tokens_after_adds": view_after, "episodes_formed_by_adds": formed,
        "commit_bytes_user_p50": p(&user_bytes, 0.5),
        "commit_bytes_assistant_p50": p(&assistant_bytes, 0.5),
        "commit_bytes_max": user_bytes.iter().chain(&assistant_bytes).cloned().fold(0.0, f64::max),
        "note40_p50_ms": p(&note_ms, 0.5), "notes": note_ms.len(),
        "peak_rss": scale_model::peak_rss(),
        "peak_rss_working": peak_rss_working,
        "loadavg": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    });
    write_json(&dir.join(format!("native-{facts}.json")), &out);
    eprintln!("native {facts}: {out}");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    match arg(0).as_str() {
        "build" => build(arg(1).parse().expect("N"), &PathBuf::from(arg(2))),
        "measure" => measure(arg(1).parse().expect("N"), &PathBuf::from(arg(2))),
        "report" => report(&PathBuf::from(arg(1)), &PathBuf::from(arg(2))),
        "profile" => profile(arg(1).parse().expect("N"), &PathBuf::from(arg(2)), &arg(3)),
        _ => {
            eprintln!(
                "usage: scale build|measure N DIR | scale report DIR OUT.json | scale profile N DIR open|search|recall|adds"
            );
            std::process::exit(2);
        }
    }
}

fn fmt_ms(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v < 1.0 {
        format!("{:.0} us", v * 1e3)
    } else if v < 1_000.0 {
        format!("{v:.2} ms")
    } else {
        format!("{:.2} s", v / 1e3)
    }
}

fn fmt_bytes(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v < 10_000.0 {
        format!("{v:.0} B")
    } else if v < 10_000_000.0 {
        format!("{:.1} KB", v / 1e3)
    } else {
        format!("{:.0} MB", v / 1e6)
    }
}

fn size_label(n: u64) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// Joins `DIR/{build,native,wasm}-N.json` into one table (printed, Markdown)
/// and one JSON document (`out`).
fn report(dir: &Path, out: &Path) {
    let read = |name: String| -> Option<Value> {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).ok()?).ok()
    };
    let mut sizes: Vec<u64> = std::fs::read_dir(dir)
        .expect("results dir")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_prefix("native-")?
                .strip_suffix(".json")?
                .parse()
                .ok()
        })
        .collect();
    sizes.sort();
    let runs: Vec<(u64, Value, Value, Option<Value>)> = sizes
        .iter()
        .map(|&n| {
            (
                n,
                read(format!("build-{n}.json")).unwrap_or(Value::Null),
                read(format!("native-{n}.json")).unwrap_or(Value::Null),
                read(format!("wasm-{n}.json")),
            )
        })
        .collect();
    // (label, key, is time, goal text, goal check on the native figure at
    // 100k, goal check on the wasm figure at 100k)
    type Check = Option<fn(f64) -> bool>;
    let rows: [(&str, &str, bool, &str, Check, Check); 18] = [
        ("search p50", "search_p50_ms", true, "", None, None),
        (
            "search p95",
            "search_p95_ms",
            true,
            "< 1 ms native, < 2 ms wasm",
            Some(|v| v < 1.0),
            Some(|v| v < 2.0),
        ),
        (
            "its four index lists p50",
            "lists_p50_ms",
            true,
            "",
            None,
            None,
        ),
        (
            "its four index lists p95",
            "lists_p95_ms",
            true,
            "",
            None,
            None,
        ),
        (
            "user add (no fade) p50",
            "user_add_p50_ms",
            true,
            "< 2.5 ms native",
            Some(|v| v < 2.5),
            None,
        ),
        (
            "assistant add p50",
            "assistant_add_p50_ms",
            true,
            "< 50 us native",
            Some(|v| v < 0.05),
            None,
        ),
        (
            "user add (no fade), slowest",
            "user_add_max_ms",
            true,
            "",
            None,
            None,
        ),
        (
            "assistant add, slowest",
            "assistant_add_max_ms",
            true,
            "",
            None,
            None,
        ),
        (
            "note of 40 facts p50",
            "note40_p50_ms",
            true,
            "",
            None,
            None,
        ),
        (
            "open",
            "open_ms",
            true,
            "< 1 s",
            Some(|v| v < 1_000.0),
            None,
        ),
        ("export, parts of 8 MiB", "export_ms", true, "", None, None),
        (
            "export, one string",
            "export_whole_ms",
            true,
            "",
            None,
            None,
        ),
        (
            "commit bytes, user message p50",
            "commit_bytes_user_p50",
            false,
            "",
            None,
            None,
        ),
        (
            "commit bytes, assistant message p50",
            "commit_bytes_assistant_p50",
            false,
            "",
            None,
            None,
        ),
        (
            "largest commit of an add",
            "commit_bytes_max",
            false,
            "",
            None,
            None,
        ),
        (
            "store bytes per fact",
            "store_bytes_per_fact",
            false,
            "< 1.5 KB",
            Some(|v| v < 1_500.0),
            None,
        ),
        (
            "peak RSS before the export (store on disk)",
            "peak_rss_working",
            false,
            "< 400 MB native",
            Some(|v| v < 400e6),
            None,
        ),
        (
            "peak RSS with the export",
            "peak_rss",
            false,
            "",
            None,
            None,
        ),
    ];
    let mut header = "| measure |".to_string();
    let mut rule = "|---|".to_string();
    for (n, ..) in &runs {
        let l = size_label(*n);
        header += &format!(" {l} native | {l} wasm | {l} wasm/native |");
        rule += "---|---|---|";
    }
    header += " goal at 100k | met at 100k |";
    rule += "---|---|";
    println!("{header}\n{rule}");
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
    for (label, key, time, goal, native_ok, wasm_ok) in rows {
        let mut line = format!("| {label} |");
        let fmt = |v: f64| if time { fmt_ms(v) } else { fmt_bytes(v) };
        for (_, _, native, wasm) in &runs {
            let a = num(native, key);
            let b = wasm.as_ref().map_or(f64::NAN, |w| num(w, key));
            let ratio = if a.is_finite() && b.is_finite() && a > 0.0 && time {
                format!("{:.1}x", b / a)
            } else {
                "-".into()
            };
            line += &format!(" {} | {} | {ratio} |", fmt(a), fmt(b));
        }
        let at = runs.iter().find(|r| r.0 == 100_000);
        let mut met = Vec::new();
        if let (Some(check), Some(r)) = (native_ok, at) {
            met.push(format!(
                "native {}",
                if check(num(&r.2, key)) { "yes" } else { "no" }
            ));
        }
        if let (Some(check), Some(r)) = (wasm_ok, at) {
            let v = r.3.as_ref().map_or(f64::NAN, |w| num(w, key));
            met.push(format!(
                "wasm {}",
                if v.is_nan() {
                    "not run"
                } else if check(v) {
                    "yes"
                } else {
                    "no"
                }
            ));
        }
        line += &format!(" {goal} | {} |", met.join(", "));
        println!("{line}");
    }
    // A search within 2x of the four index lists it runs (issue 47).
    if let Some((n, _, native, _)) = runs
        .iter()
        .rev()
        .find(|r| r.2.get("lists_p95_ms").is_some())
    {
        println!(
            "\nsearch p95 / its four lists' p95 at {} (goal <= 2x): {:.1}x",
            size_label(*n),
            num(native, "search_p95_ms") / num(native, "lists_p95_ms")
        );
    }
    // wasm <= 2x native, over the timed rows at the largest size with both.
    if let Some((n, _, native, Some(wasm))) = runs.iter().rev().find(|r| r.3.is_some()) {
        let worst = [
            "search_p50_ms",
            "search_p95_ms",
            "user_add_p50_ms",
            "assistant_add_p50_ms",
            "open_ms",
            "export_ms",
            "export_whole_ms",
        ]
        .iter()
        .map(|k| num(wasm, k) / num(native, k))
        .filter(|r| r.is_finite())
        .fold(0.0, f64::max);
        println!(
            "\nwasm/native, worst timed figure at {} (goal <= 2x): {worst:.1}x",
            size_label(*n)
        );
    }
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let doc = json!({
        "bench": "scale", "commit": commit,
        "date_unix": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "sizes": runs.iter().map(|(n, b, nat, w)| json!({"facts": n, "build": b, "native": nat, "wasm": w})).collect::<Vec<_>>(),
    });
    write_json(out, &doc);
}
