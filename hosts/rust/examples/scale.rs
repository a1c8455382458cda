//! The scale bench, wasm side (issue 12): the same memories as the native
//! bench (`examples/scale.rs`), measured in the component in wasmtime.
//! `scripts/bench` runs it after the native `build` and `measure` of a size:
//!
//!     cd hosts/rust && cargo run --release --example scale -- N DIR ENGRAM_WASM
//!
//! It opens the store dump `DIR/store-N.kv` where it lies (values read
//! when asked for, writes kept in a [`MemStore`] over it, counting the bytes
//! each commit writes), opens the memory in the component with the
//! bench model of `bench/scale_model.rs` (the same answers and vectors as
//! the native side), and writes `DIR/wasm-N.json`: open, search p50/p95,
//! export, user and assistant adds, note of 40 facts, commit bytes, peak
//! RSS, and the component's linear memory after open, before the export
//! and after it (`scale N DIR ENGRAM_WASM open` only opens and prints
//! it). Callbacks run on the calling thread (no deadlines), so the figures
//! are the component's, not the host's worker threads'.

#[path = "../../../bench/scale_model.rs"]
mod scale_model;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use engram_wasmtime_host::bindings::exports::engram::memory::engine::{
    FactKind, NewFact, NoteArgs,
};
use engram_wasmtime_host::{
    Deadlines, Engram, Host, HostModel, HostStore, MemStore, NewMessage, Role, SearchOptions,
    StoreError, TaskRequest,
};
use serde_json::json;

/// As the native side (`examples/scale.rs`).
const CONFIG: &str = "{}";
const NS: &str = "scale";
/// The bytes asked for in each part of the export (as the native bench).
const EXPORT_PART_BYTES: u32 = 8 << 20;
const T_END: i64 = 1_796_083_200_000;

struct BenchModel;

impl HostModel for BenchModel {
    fn complete(&self, request: TaskRequest) -> Result<String, String> {
        let task = engram_wasmtime_host::task_name(request.task);
        Ok(scale_model::answer(task, &request.content))
    }
    fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, String> {
        Ok(texts.iter().map(|t| scale_model::embed(t)).collect())
    }
}

/// The store dump on disk, read when asked for (as a SQLite host reads
/// its rows), with what the run writes kept in a [`MemStore`] over it;
/// counts the bytes each commit writes. So peak RSS is the component's and
/// the host's, not a second copy of the store.
#[derive(Clone)]
struct CountingStore {
    /// Where each value of the dump lies in it.
    dump: Arc<BTreeMap<String, (u64, usize)>>,
    file: Arc<std::fs::File>,
    /// Values written since (over the dump).
    inner: MemStore,
    /// Dump keys deleted since.
    deleted: Arc<Mutex<BTreeSet<String>>>,
    written: Arc<AtomicU64>,
}

impl CountingStore {
    fn on_disk(path: &Path) -> std::io::Result<CountingStore> {
        let mut dump = BTreeMap::new();
        scale_model::index_kv(path, |k, at, len| {
            dump.insert(k, (at, len));
        })?;
        Ok(CountingStore {
            dump: Arc::new(dump),
            file: Arc::new(std::fs::File::open(path)?),
            inner: MemStore::default(),
            deleted: Arc::default(),
            written: Arc::default(),
        })
    }

    fn bytes(&self) -> u64 {
        self.dump
            .iter()
            .map(|(k, (_, n))| (k.len() + n) as u64)
            .sum()
    }

    fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.inner.delete(key)?;
        if self.dump.contains_key(key) {
            self.deleted.lock().unwrap().insert(key.to_string());
        }
        Ok(())
    }
}

impl HostStore for CountingStore {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        if let Some(v) = self.inner.get(key)? {
            return Ok(Some(v));
        }
        if self.deleted.lock().unwrap().contains(key) {
            return Ok(None);
        }
        Ok(self.dump.get(key).map(|&(at, len)| {
            use std::os::unix::fs::FileExt as _;
            let mut buf = vec![0u8; len];
            self.file
                .read_exact_at(&mut buf, at)
                .expect("read the store dump");
            buf
        }))
    }
    fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.written
            .fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        self.inner.put(key, value)
    }
    fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.remove(key)
    }
    fn list_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let deleted = self.deleted.lock().unwrap();
        let mut keys: BTreeSet<String> = self
            .dump
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter(|(k, _)| !deleted.contains(*k))
            .map(|(k, _)| k.clone())
            .collect();
        keys.extend(self.inner.list_prefix(prefix)?);
        Ok(keys.into_iter().collect())
    }
    fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[(String, Option<Vec<u8>>)],
    ) -> Result<(), StoreError> {
        // One caller at a time in this bench: check, then apply.
        if self.get(guard)?.as_deref() != expected {
            return Err(StoreError::Conflict);
        }
        for (k, v) in writes {
            match v {
                Some(v) => self.inner.put(k, v)?,
                None => self.remove(k)?,
            }
        }
        let n: usize = writes
            .iter()
            .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
            .sum();
        self.written.fetch_add(n as u64, Ordering::Relaxed);
        Ok(())
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn message(role: Role, content: String) -> NewMessage {
    NewMessage {
        role,
        content,
        tool_calls: Vec::new(),
        tool_call_id: None,
        client_id: None,
        metadata: None,
        thread: None,
        at: None,
        replaces: None,
    }
}

/// How many of each measure to take at a size, as the native side.
fn repeats(facts: usize) -> (usize, usize, usize, usize) {
    match facts {
        0..=20_000 => (3, 300, 100, 5),
        20_001..=200_000 => (1, 500, 100, 3),
        _ => (1, 500, 5, 1),
    }
}

fn main() -> wasmtime::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let facts: usize = args.first().expect("N").parse()?;
    let dir = PathBuf::from(args.get(1).expect("DIR"));
    let wasm = args.get(2).expect("path of engram.wasm");
    let built: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(
        dir.join(format!("build-{facts}.json")),
    )?)?;
    let entities = built["entities"].as_u64().expect("entities") as usize;

    let store = CountingStore::on_disk(&dir.join(format!("store-{facts}.kv")))?;
    let store_bytes = store.bytes();

    // `ENGRAM_WASM_PERFMAP=1`: writes /tmp/perf-PID.map so `perf report`
    // names the component's functions.
    let engine = match std::env::var_os("ENGRAM_WASM_PERFMAP") {
        Some(_) => wasmtime::Engine::new(
            wasmtime::Config::new().profiler(wasmtime::ProfilingStrategy::PerfMap),
        )?,
        None => wasmtime::Engine::default(),
    };
    let component = wasmtime::component::Component::from_file(&engine, wasm)?;
    let (reps, searches, turns, notes) = repeats(facts);
    let mut now = T_END + 60_000;
    let host = || {
        Host::with_store(now, store.clone(), BenchModel).deadlines(Deadlines {
            model: None,
            store: None,
        })
    };

    let mut open_ms = Vec::new();
    let mut memory = None;
    for _ in 0..reps {
        if let Some(m) = memory.take() {
            Engram::close(m)?;
        }
        let t = Instant::now();
        memory = Some(Engram::open(&engine, &component, host(), NS, CONFIG)?);
        open_ms.push(ms(t));
    }
    let mut memory = memory.expect("opened");
    let linear_open = memory.linear_memory_peak();
    if args.get(3).map(String::as_str) == Some("open") {
        // `scale N DIR WASM open`: the open alone (a footprint probe).
        eprintln!(
            "wasm {facts}: open {:.0} ms, linear memory {} MB",
            open_ms[0],
            linear_open >> 20
        );
        return Ok(());
    }

    let vocab = scale_model::vocabulary(20_000);
    let options = SearchOptions {
        limit: 10,
        walk: false,
        include_in_view: true,
        budget_tokens: None,
        filter: None,
    };
    for i in 0..5 {
        let q = scale_model::query(100_000 + i, &vocab);
        memory.call(|m, s, r| m.call_search(s, r, &q, Some(&options)))?;
    }
    let mut search_ms = Vec::new();
    let mut hits = 0;
    for i in 0..searches {
        let q = scale_model::query(i, &vocab);
        let t = Instant::now();
        hits += memory
            .call(|m, s, r| m.call_search(s, r, &q, Some(&options)))?
            .len();
        search_ms.push(ms(t));
        if std::env::var_os("ENGRAM_SEARCH_DUMP").is_some() {
            eprintln!("search {i}: {:.3} ms", search_ms[i]);
        }
    }

    let view_before = memory.stats()?.view_tokens;
    let (mut user_ms, mut assistant_ms, mut user_bytes, mut assistant_bytes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut fades, mut formed) = (0, 0);
    for i in 0..turns {
        for (user, times, bytes) in [
            (true, &mut user_ms, &mut user_bytes),
            (false, &mut assistant_ms, &mut assistant_bytes),
        ] {
            now += 30_000;
            memory.host().now_ms = now;
            let m = if user {
                message(Role::User, scale_model::user_message(i, &vocab))
            } else {
                message(Role::Assistant, scale_model::assistant_message(i, &vocab))
            };
            let before = store.written.load(Ordering::Relaxed);
            let t = Instant::now();
            let added = memory.add_message(&m)?;
            let took = ms(t);
            let wrote = store.written.load(Ordering::Relaxed) - before;
            formed += added.formed.len();
            if added.fade.is_some() || added.maintained.as_ref().is_some_and(|m| m.fade.is_some()) {
                fades += 1;
                continue;
            }
            times.push(took);
            bytes.push(wrote as f64);
        }
    }

    let view_after = memory.stats()?.view_tokens;
    let mut note_ms = Vec::new();
    for call in 0..notes {
        now += 30_000;
        memory.host().now_ms = now;
        let args = NoteArgs {
            episode: None,
            facts: scale_model::note_facts(call, entities, &vocab)
                .into_iter()
                .map(|(subject, predicate, object, sentence)| NewFact {
                    subject,
                    predicate,
                    object,
                    sentence,
                    kind: FactKind::Fact,
                })
                .collect(),
        };
        let t = Instant::now();
        memory.call(|m, s, r| m.call_note(s, r, &args))?;
        note_ms.push(ms(t));
    }

    // Peak RSS of everything but the export, then the export last.
    let peak_rss_working = scale_model::peak_rss();
    let linear_working = memory.linear_memory_peak();
    // The export in parts of 8 MiB (what a large memory's host writes out
    // part by part: the component never holds more than a part), then
    // once as one string, which past about 1.2 GB (with the state beside
    // it) cannot fit in wasm32's 4 GiB: the run records why.
    let mut export_ms = Vec::new();
    let mut export_bytes = 0;
    let mut export_parts = 0;
    for _ in 0..reps {
        let t = Instant::now();
        let (mut bytes, mut parts, mut cursor) = (0, 0, None);
        loop {
            let part =
                memory.call(|m, s, r| m.call_export_part(s, r, cursor, EXPORT_PART_BYTES))?;
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
    let linear_export_parts = memory.linear_memory_peak();
    let t = Instant::now();
    let (export_whole_ms, export_error) = match memory.call(|m, s, r| m.call_export(s, r)) {
        Ok(text) => {
            assert_eq!(text.len(), export_bytes, "the parts add up to the export");
            (Some(ms(t)), None)
        }
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    let p = scale_model::pct;
    let out = json!({
        "side": "wasm", "facts": facts, "store_bytes": store_bytes,
        "store_bytes_per_fact": store_bytes as f64 / facts as f64,
        "open_ms": p(&open_ms, 0.5), "open_runs": open_ms,
        "search_p50_ms": p(&search_ms, 0.5), "search_p95_ms": p(&search_ms, 0.95),
        "searches": searches, "search_hits_mean": hits as f64 / searches as f64,
        "export_ms": p(&export_ms, 0.5), "export_bytes": export_bytes,
        "export_parts": export_parts, "export_whole_ms": export_whole_ms,
        "export_error": export_error, "linear_memory_export_parts": linear_export_parts,
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
        "linear_memory_open": linear_open,
        "linear_memory_working": linear_working,
        "linear_memory_peak": memory.linear_memory_peak(),
        "loadavg": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    });
    std::fs::write(
        dir.join(format!("wasm-{facts}.json")),
        serde_json::to_string_pretty(&out)?,
    )?;
    eprintln!("wasm {facts}: {out}");
    Ok(())
}
