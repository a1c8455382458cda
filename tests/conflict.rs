//! Conflicts: two handles over one store (two hosts writing one memory).
//! Writing alternately, each handle sees the other's commits; writing
//! concurrently, the compare-and-set commit makes the loser reload and
//! retry. Either way no event is lost or duplicated: every message is in the
//! log exactly once (a reply's `maintain` commits after it, without a
//! message), the log has no gap, and both handles end with the same view. A handle that keeps losing beyond `conflict_attempts` gets
//! `Error::Busy` and writes nothing.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use engram::base::host::Write;
use engram::testing::{block_on, yield_now, ManualClock, MemoryStore, ScriptedModel};
use engram::types::event::Event;
use engram::Config;
use engram::Error;
use engram::Memory;
use engram::NewMessage;
use engram::Role;
use engram::Store;
use engram::StoreError;
use engram::Task;
use engram::{store::export::Export, store::format::LogEntry};

const NS: &str = "shared";

mod scripted_conversation;
use scripted_conversation::*;

// ---------------------------------------------------------------------------

/// Messages of one writer: `count` of them, the topic changing every three.
fn stream(who: &str, count: usize, role: Role, first_topic: usize) -> Vec<NewMessage> {
    (0..count)
        .map(|k| {
            let (t, _) = TOPICS[(k / 3 + first_topic) % TOPICS.len()];
            let text = format!("{who} message {k} on the {t} topic, with a few more words to it");
            match role {
                Role::User => NewMessage::user(text),
                _ => NewMessage::assistant(text),
            }
        })
        .collect()
}

fn open<S: Store>(
    store: S,
    model: ScriptedModel,
    clock: &ManualClock,
    config: Config,
) -> Memory<S, ScriptedModel, ManualClock> {
    block_on(Memory::open(NS, store, model, clock.clone(), config)).expect("opens")
}

fn log_of<S: Store>(m: &mut Memory<S, ScriptedModel, ManualClock>) -> Vec<LogEntry> {
    let json = block_on(m.export()).unwrap();
    serde_json::from_str::<Export>(&json).unwrap().log
}

/// The log has no gap; every commit holds one message, or none when it is
/// the `maintain` a reply ran after its own commit (never before the first
/// reply, never more of them than replies); every message of every stream
/// is there exactly once and in its stream's order, and messages are
/// stamped in log order. Returns the seqs of the maintain commits.
fn check_log(log: &[LogEntry], streams: &[&[NewMessage]]) -> Vec<u64> {
    for (i, entry) in log.iter().enumerate() {
        assert_eq!(entry.seq, i as u64 + 1, "log entries are contiguous");
    }
    let mut maintains = Vec::new();
    let mut replies = 0usize;
    let mut messages: Vec<&engram::Message> = Vec::new();
    for entry in log {
        let ms: Vec<_> = entry
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Message(m) => Some(m),
                _ => None,
            })
            .collect();
        match ms.len() {
            0 => {
                assert!(!entry.events.is_empty(), "log entry {} is empty", entry.seq);
                maintains.push(entry.seq);
                assert!(
                    maintains.len() <= replies,
                    "log entry {} holds no message and no reply ran maintain before it",
                    entry.seq
                );
            }
            1 => {
                replies += usize::from(ms[0].role == Role::Assistant);
                messages.push(ms[0]);
            }
            n => panic!("log entry {} holds {n} messages", entry.seq),
        }
    }
    assert_eq!(
        messages.len(),
        streams.iter().map(|s| s.len()).sum::<usize>()
    );
    for (i, m) in messages.iter().enumerate() {
        assert_eq!(m.id, i as u64 + 1, "message ids follow the log");
    }
    assert!(
        messages.windows(2).all(|w| w[0].at <= w[1].at),
        "messages are stamped in log order"
    );
    for stream in streams {
        let mut last = None;
        for msg in stream.iter() {
            let at: Vec<usize> = messages
                .iter()
                .enumerate()
                .filter(|(_, m)| m.content == msg.content)
                .map(|(i, _)| i)
                .collect();
            assert_eq!(
                at.len(),
                1,
                "{:?} is in the log {} times",
                msg.content,
                at.len()
            );
            assert!(
                last < Some(at[0]),
                "{:?} is out of its writer's order",
                msg.content
            );
            last = Some(at[0]);
        }
    }
    maintains
}

#[test]
fn alternating_handles_each_see_the_others_commits() {
    let store = MemoryStore::new();
    let clock = ManualClock::at(START);
    let mut a = open(store.clone(), scripted_model(&[]), &clock, config());
    let mut b = open(store.clone(), scripted_model(&[]), &clock, config());
    let (sa, sb) = (
        stream("Alice", 60, Role::User, 0),
        stream("Bot", 60, Role::Assistant, 0),
    );
    for (k, (ma, mb)) in sa.iter().zip(&sb).enumerate() {
        clock.advance(30_000);
        let added = block_on(a.add_message(ma.clone())).unwrap();
        assert_eq!(added.message, 2 * k as u64 + 1);
        clock.advance(30_000);
        let added = block_on(b.add_message(mb.clone())).unwrap();
        assert_eq!(added.message, 2 * k as u64 + 2, "b built on a's commit");
        if k % 10 == 9 {
            assert_eq!(block_on(a.view()).unwrap(), block_on(b.view()).unwrap());
        }
    }
    let stats = block_on(a.stats()).unwrap();
    assert!(
        stats.fades > 0 && stats.episodes[2] + stats.episodes[3] > 0,
        "{stats:?}"
    );
    let log = log_of(&mut a);
    let maintains = check_log(&log, &[&sa, &sb]);
    // Each reply that gave its maintain work committed it right after
    // itself: 120 messages and those maintains, and no conflict.
    assert!(!maintains.is_empty());
    for &seq in &maintains {
        let reply = log[seq as usize - 2]
            .events
            .iter()
            .any(|e| matches!(e, Event::Message(m) if m.role == Role::Assistant));
        assert!(reply, "maintain commit {seq} does not follow a reply");
    }
    assert_eq!(stats.log_entries, 120 + maintains.len() as u64);
    // A reply asks the model nothing, so it commits without reading the
    // head when the handle's last read found nobody else writing: b's
    // view after every tenth turn did, and the reply after it lost its
    // race to a's question, reloaded and landed after it. Every other
    // turn read the head first and never conflicted.
    assert_eq!(
        store.writes(),
        stats.log_entries + 5,
        "alternating writers conflict only after a quiet read"
    );
    let want = block_on(a.view()).unwrap();
    assert_eq!(block_on(b.view()).unwrap(), want);
    let mut fresh = open(store.clone(), scripted_model(&[]), &clock, config());
    assert_eq!(block_on(fresh.view()).unwrap(), want);
    assert_eq!(log_of(&mut b), log_of(&mut fresh));
}

/// A handle's view of the shared store that counts the conflicts its
/// commits meet: a commit first reads the log entry it is about to write
/// (found: another writer took that position since the head this handle
/// read), then writes guarded by the head (refused: the head moved).
#[derive(Clone)]
struct Watched {
    inner: MemoryStore,
    /// The log position of the head this handle last read or wrote.
    seen: Rc<Cell<u64>>,
    /// A refused write reads its position back (to see whether it landed
    /// after all): that read is not another conflict.
    read_back: Rc<Cell<bool>>,
    conflicts: Rc<Cell<u64>>,
}

impl Watched {
    fn new(inner: MemoryStore) -> Self {
        Watched {
            inner,
            seen: Rc::new(Cell::new(0)),
            read_back: Rc::new(Cell::new(false)),
            conflicts: Rc::new(Cell::new(0)),
        }
    }

    fn head_seq(raw: &[u8]) -> u64 {
        let head: serde_json::Value = serde_json::from_slice(raw).expect("a head");
        head["seq"].as_u64().expect("a seq")
    }
}

impl Store for Watched {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let r = self.inner.get(key).await;
        if let Ok(Some(raw)) = &r {
            if key.ends_with("/head") {
                self.seen.set(Self::head_seq(raw));
            } else if let Some((_, n)) = key.rsplit_once("/log/") {
                // Entries up to the head read are the tail a sync applies;
                // one past it is another writer's, met by a commit.
                if n.parse::<u64>().expect("a log seq") > self.seen.get()
                    && !self.read_back.replace(false)
                {
                    self.conflicts.set(self.conflicts.get() + 1);
                }
            }
        }
        r
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.inner.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.inner.list(prefix).await
    }
    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[Write],
    ) -> Result<(), StoreError> {
        let r = self.inner.write_if(guard, expected, writes).await;
        match &r {
            Ok(()) => {
                let head = writes.iter().find(|(k, _)| k == guard);
                if let Some((_, Some(raw))) = head {
                    self.seen.set(Self::head_seq(raw));
                }
            }
            Err(e) => {
                self.read_back.set(true);
                if *e == StoreError::Conflict {
                    self.conflicts.set(self.conflicts.get() + 1);
                }
            }
        }
        r
    }
}

#[test]
fn concurrent_handles_retry_after_conflicts_and_lose_nothing() {
    let store = MemoryStore::new();
    store.set_yields(true);
    let clock = ManualClock::at(START);
    let (model_a, model_b) = (scripted_model(&[]), scripted_model(&[]));
    model_a.set_yields(true);
    model_b.set_yields(true);
    let (store_a, store_b) = (Watched::new(store.clone()), Watched::new(store.clone()));
    let mut a = open(store_a.clone(), model_a.clone(), &clock, config());
    let mut b = open(store_b.clone(), model_b.clone(), &clock, config());
    let (sa, sb) = (
        stream("Alice", 60, Role::User, 0),
        stream("Bot", 60, Role::Assistant, 3),
    );
    let (busy_a, busy_b) = futures::executor::block_on(async {
        let fa = async {
            let mut busy = 0u64;
            for (k, m) in sa.iter().enumerate() {
                // Writers pause irregularly, so their calls overlap at
                // every stage (sync, model calls, commit).
                for _ in 0..(k * 3 + 1) % 7 {
                    yield_now().await;
                }
                clock.advance(20_000);
                // Like a host: a call that stays busy is retried later.
                while let Err(e) = a.add_message(m.clone()).await {
                    assert!(matches!(e, Error::Busy(_)), "{e}");
                    busy += 1;
                    assert!(busy < 20, "the writer starved");
                }
            }
            busy
        };
        let fb = async {
            let mut busy = 0u64;
            for (k, m) in sb.iter().enumerate() {
                // Writers pause irregularly, so their calls overlap at
                // every stage (sync, model calls, commit).
                for _ in 0..(k * 5 + 3) % 7 {
                    yield_now().await;
                }
                clock.advance(20_000);
                // Like a host: a call that stays busy is retried later.
                while let Err(e) = b.add_message(m.clone()).await {
                    assert!(matches!(e, Error::Busy(_)), "{e}");
                    busy += 1;
                    assert!(busy < 20, "the writer starved");
                }
            }
            busy
        };
        futures::future::join(fa, fb).await
    });
    store.set_yields(false);
    model_a.set_yields(false);
    model_b.set_yields(false);

    // Conflicts happened and were retried: more commit attempts than
    // commits, and more boundary judgments than messages judged.
    let stats = block_on(a.stats()).unwrap();
    let maintains = check_log(&log_of(&mut a), &[&sa, &sb]).len() as u64;
    assert_eq!(stats.log_entries, 120 + maintains);
    // Conflicts are met before the write (the position is taken) or by it
    // (the guard refuses); every refused write is one of them.
    let conflicts = store_a.conflicts.get() + store_b.conflicts.get();
    assert!(conflicts >= store.writes() - stats.log_entries);
    let judged = model_a.calls_of(Task::Segment).len() + model_b.calls_of(Task::Segment).len();
    eprintln!("{conflicts} conflicts, busy {busy_a} + {busy_b}, {judged} segment calls, {stats:?}");
    assert!(
        conflicts >= 10,
        "only {conflicts} conflicts: the writers did not overlap"
    );
    // Some conflicts were won back by the engine's own retry (a busy call
    // accounts for exactly conflict_attempts of them).
    let busy_conflicts = (busy_a + busy_b) * config().conflict_attempts as u64;
    assert!(
        conflicts > busy_conflicts,
        "every conflict ended busy: {conflicts} conflicts"
    );
    assert!(judged > 119, "{judged} segment calls for 120 messages");
    // Fades and notes ran while the writers raced.
    assert!(
        stats.fades > 0 && stats.episodes[2] + stats.episodes[3] > 0,
        "{stats:?}"
    );
    assert!(stats.facts[0] > 0, "{stats:?}");

    check_log(&log_of(&mut a), &[&sa, &sb]);
    let want = block_on(a.view()).unwrap();
    assert_eq!(
        block_on(b.view()).unwrap(),
        want,
        "both handles end with the same view"
    );
    assert_eq!(
        block_on(a.episodes()).unwrap(),
        block_on(b.episodes()).unwrap()
    );
    assert_eq!(block_on(a.facts()).unwrap(), block_on(b.facts()).unwrap());
    let mut fresh = open(store.clone(), scripted_model(&[]), &clock, config());
    assert_eq!(block_on(fresh.view()).unwrap(), want);
    assert_eq!(
        block_on(fresh.traces()).unwrap(),
        block_on(b.traces()).unwrap()
    );
}

/// What runs before a [`Meddled`] store's operation, given the key.
type Hook = Rc<RefCell<Option<Box<dyn FnMut(&str)>>>>;

fn hook() -> Hook {
    Rc::new(RefCell::new(None))
}

async fn meddle(hook: &Hook, key: &str) {
    let h = hook.borrow_mut().take();
    if let Some(mut h) = h {
        h(key);
        let mut slot = hook.borrow_mut();
        if slot.is_none() {
            *slot = Some(h);
        }
    }
}

/// A store that runs hooks before reads and guarded writes: here, another
/// writer's whole call, so the read or commit that follows finds the memory
/// moved under it.
#[derive(Clone)]
struct Meddled {
    inner: MemoryStore,
    before_get: Hook,
    before_write: Hook,
}

impl Store for Meddled {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        meddle(&self.before_get, key).await;
        self.inner.get(key).await
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.inner.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.inner.list(prefix).await
    }
    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[Write],
    ) -> Result<(), StoreError> {
        meddle(&self.before_write, guard).await;
        self.inner.write_if(guard, expected, writes).await
    }
}

#[test]
fn a_handle_that_keeps_losing_gets_busy_and_writes_nothing() {
    let store = MemoryStore::new();
    let clock = ManualClock::at(START);
    let config = Config {
        conflict_attempts: 3,
        ..config()
    };
    let winner = Rc::new(RefCell::new(open(
        store.clone(),
        scripted_model(&[]),
        &clock,
        config.clone(),
    )));
    let hook = hook();
    let meddled = Meddled {
        inner: store.clone(),
        before_get: self::hook(),
        before_write: hook.clone(),
    };
    let mut loser = open(meddled, scripted_model(&[]), &clock, config);

    let history = stream("Alice", 12, Role::User, 0);
    for (k, m) in history.iter().enumerate() {
        clock.advance(60_000);
        let r = if k % 2 == 0 {
            block_on(winner.borrow_mut().add_message(m.clone()))
        } else {
            block_on(loser.add_message(m.clone()))
        };
        r.unwrap();
    }

    // Before each of the loser's commits, the other writer commits a call.
    let wins = Rc::new(Cell::new(0usize));
    let last_dump = Rc::new(RefCell::new(store.dump()));
    let winning = stream("Bot", 3, Role::Assistant, 1);
    {
        let (winner, wins, last_dump, store, winning) = (
            winner.clone(),
            wins.clone(),
            last_dump.clone(),
            store.clone(),
            winning.clone(),
        );
        *hook.borrow_mut() = Some(Box::new(move |_| {
            let k = wins.get();
            block_on(winner.borrow_mut().add_message(winning[k].clone())).unwrap();
            wins.set(k + 1);
            *last_dump.borrow_mut() = store.dump();
        }));
    }
    let writes_before = store.writes();
    clock.advance(60_000);
    let lost = NewMessage::user("Loser's message on the lisbon topic, which never lands");
    match block_on(loser.add_message(lost.clone())) {
        Err(Error::Busy(_)) => {}
        other => panic!("expected Busy after three lost commits, got {other:?}"),
    }
    hook.borrow_mut().take();
    assert_eq!(
        wins.get(),
        3,
        "the loser tried exactly conflict_attempts times"
    );
    assert_eq!(
        store.writes() - writes_before,
        6,
        "three commits won, three lost"
    );
    // Nothing of the busy call was written: the store holds exactly what the
    // other writer left, and the loser's view is the winner's.
    assert_eq!(store.dump(), *last_dump.borrow());
    let mut log = log_of(&mut loser);
    check_log(&log, &[&history, &winning]);
    assert_eq!(
        block_on(loser.view()).unwrap(),
        block_on(winner.borrow_mut().view()).unwrap()
    );

    // Once the other writer pauses, the same call goes through, once.
    let added = block_on(loser.add_message(lost.clone())).unwrap();
    assert_eq!(added.message, 16);
    log = log_of(&mut loser);
    check_log(&log, &[&history, &winning, std::slice::from_ref(&lost)]);
    assert_eq!(
        block_on(winner.borrow_mut().view()).unwrap(),
        block_on(loser.view()).unwrap()
    );
}

#[test]
fn a_load_racing_a_snapshot_commit_reads_a_consistent_state() {
    let store = MemoryStore::new();
    let clock = ManualClock::at(START);
    let config = Config {
        snapshot_every: 4,
        ..config()
    };
    let writer = Rc::new(RefCell::new(open(
        store.clone(),
        scripted_model(&[]),
        &clock,
        config.clone(),
    )));
    let first = stream("Alice", 6, Role::User, 0);
    for m in &first {
        clock.advance(60_000);
        block_on(writer.borrow_mut().add_message(m.clone())).unwrap();
    }
    // A second handle opens (head: 6 entries, snapshot at 4); between its
    // read of the head and its read of the snapshot, the writer commits
    // past the next snapshot (at 8).
    let before_get = hook();
    let second = stream("Bot", 3, Role::Assistant, 2);
    {
        let (writer, second, clock) = (writer.clone(), second.clone(), clock.clone());
        let mut pending = Some(second);
        *before_get.borrow_mut() = Some(Box::new(move |key: &str| {
            if key.contains("/log/") {
                for m in pending.take().into_iter().flatten() {
                    clock.advance(60_000);
                    block_on(writer.borrow_mut().add_message(m)).unwrap();
                }
            }
        }));
    }
    let meddled = Meddled {
        inner: store.clone(),
        before_get,
        before_write: hook(),
    };
    let mut reader = block_on(Memory::open(
        NS,
        meddled,
        scripted_model(&[]),
        clock.clone(),
        config,
    ))
    .expect("a load racing a commit opens");
    assert_eq!(block_on(reader.stats()).unwrap().log_entries, 9);
    check_log(&log_of(&mut reader), &[&first, &second]);
    assert_eq!(
        block_on(reader.view()).unwrap(),
        block_on(writer.borrow_mut().view()).unwrap()
    );
    assert_eq!(
        block_on(reader.episodes()).unwrap(),
        block_on(writer.borrow_mut().episodes()).unwrap()
    );
}

/// A memory of the scripted conversation of `seed` in namespace `ns` of
/// `store`: its handle.
fn conversation_in(
    ns: &str,
    store: &MemoryStore,
    clock: &ManualClock,
    len: usize,
    seed: u64,
) -> Mem {
    let mut m = open_in(ns, store, clock).expect("opens");
    for step in conversation(len, seed) {
        clock.advance(step.advance_ms);
        block_on(m.add_message(step.message)).expect("adds");
    }
    m
}

/// The messages as (id, role, content).
fn said(m: &mut Mem) -> Vec<(u64, Role, String)> {
    block_on(m.messages())
        .unwrap()
        .into_iter()
        .map(|x| (x.id, x.role, x.content))
        .collect()
}

#[test]
fn a_handle_whose_namespace_was_destroyed_and_written_anew_reads_the_new_log() {
    for (before, after) in [(60, 150), (150, 40)] {
        let store = MemoryStore::new();
        let clock = ManualClock::at(START);
        let mut stale = conversation_in(NS, &store, &clock, before, 7);
        // Another memory's export, imported by another handle after a
        // destroy: the same format and erasure count (0), another log.
        let elsewhere = MemoryStore::new();
        let mut source = conversation_in("source", &elsewhere, &clock, after, 5);
        let export = block_on(source.export()).unwrap();
        let mut other = open_in(NS, &store, &clock).expect("opens");
        block_on(other.destroy()).expect("destroys");
        block_on(other.import(&export)).expect("imports");
        let imported = said(&mut source);
        // The stale handle reads the new log, not its own state plus the
        // new log's later entries, and writes on top of it.
        assert_eq!(said(&mut stale), imported, "{before} then {after} messages");
        clock.advance_minutes(1);
        block_on(stale.add_message(NewMessage::user("after the new log")))
            .expect("the stale handle writes on the new log");
        let mut fresh = open_in(NS, &store, &clock).expect("the store opens");
        let mine = said(&mut fresh);
        assert_eq!(mine.len(), imported.len() + 1);
        assert_eq!(&mine[..imported.len()], &imported[..]);
        assert_eq!(said(&mut stale), mine);
    }
}
