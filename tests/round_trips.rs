//! Round trips: what a call asks of the store. A commit reads no key of its
//! own (after another writer's entries, the catch-up reads the next key in
//! the same batch as them: `get_many`); an open and a catch-up read the log
//! a batch at a time, not a key per entry; the maintain a reply runs in the same call reads nothing;
//! a reply (no model call before its commit) reads no head first: its
//! guarded commit is the check, and another writer's commit makes it
//! reload and run again; with `fresh_for_ms` a call soon after the handle
//! met the store reads nothing, and a write made on that state still
//! commits guarded by the head (nothing lost or doubled). Counts are of
//! `Store` calls, by kind.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use engram::base::host::Write;
use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::{Config, Memory, NewMessage, Store, StoreError};

mod scripted_conversation;
use scripted_conversation::{config, scripted_model};

/// A store that counts its calls by kind ("get head", "get log", "get
/// other", "get many", "put", "delete", "list", "write_if").
#[derive(Clone)]
struct Counting {
    inner: MemoryStore,
    calls: Rc<RefCell<BTreeMap<&'static str, u64>>>,
}

impl Counting {
    fn new(inner: MemoryStore) -> Self {
        Counting {
            inner,
            calls: Rc::default(),
        }
    }
    fn count(&self, what: &'static str) {
        *self.calls.borrow_mut().entry(what).or_default() += 1;
    }
    /// The calls since the last take.
    fn take(&self) -> BTreeMap<&'static str, u64> {
        std::mem::take(&mut *self.calls.borrow_mut())
    }
}

impl Store for Counting {
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.count(if key.ends_with("/head") {
            "get head"
        } else if key.contains("/log/") {
            "get log"
        } else {
            "get other"
        });
        self.inner.get(key).await
    }
    async fn get_many(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
        self.count("get many");
        let mut out = Vec::new();
        for key in keys {
            out.push(self.inner.get(key).await?);
        }
        Ok(out)
    }
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), StoreError> {
        self.count("put");
        self.inner.put(key, value).await
    }
    async fn delete(&self, key: &str) -> Result<(), StoreError> {
        self.count("delete");
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        self.count("list");
        self.inner.list(prefix).await
    }
    async fn write_if(
        &self,
        guard: &str,
        expected: Option<&[u8]>,
        writes: &[Write],
    ) -> Result<(), StoreError> {
        self.count("write_if");
        self.inner.write_if(guard, expected, writes).await
    }
}

type Mem = Memory<Counting, engram::testing::ScriptedModel, ManualClock>;

fn open(store: &Counting, clock: &ManualClock, config: Config) -> Mem {
    block_on(Memory::open(
        "trips",
        store.clone(),
        scripted_model(&[]),
        clock.clone(),
        config,
    ))
    .expect("opens")
}

/// One handle on a new store that counts its calls, and its clock.
fn one_writer(config: Config) -> (Counting, ManualClock, Mem) {
    let store = Counting::new(MemoryStore::new());
    let clock = ManualClock::at(1_767_600_000_000);
    let m = open(&store, &clock, config);
    (store, clock, m)
}

/// Two handles on one store, `a` opened with `a_config` (its calls counted
/// in the first value) and `b` with the default one, and their clock.
fn two_writers(a_config: Config) -> (Counting, Mem, Mem, ManualClock) {
    let shared = MemoryStore::new();
    let a_store = Counting::new(shared.clone());
    let clock = ManualClock::at(1_767_600_000_000);
    let a = open(&a_store, &clock, a_config);
    let b = open(&Counting::new(shared), &clock, config());
    (a_store, a, b, clock)
}

fn fresh_config() -> Config {
    Config {
        fresh_for_ms: 1_000,
        ..config()
    }
}

/// One chat turn as a backend makes it: the question, render, view, the
/// reply; the store calls it made, the clock moving 50 ms a call.
fn turn(
    m: &mut Mem,
    store: &Counting,
    clock: &ManualClock,
    i: usize,
) -> BTreeMap<&'static str, u64> {
    store.take();
    block_on(m.add_message(NewMessage::user(format!(
        "Turn {i}: how do I keep the balcony tomatoes watered in July?"
    ))))
    .unwrap();
    clock.advance(50);
    block_on(m.view()).unwrap(); // render("openai") is the view, converted
    clock.advance(50);
    block_on(m.view()).unwrap();
    clock.advance(50);
    block_on(m.add_message(NewMessage::assistant(format!(
        "Water them early, turn {i}; a saucer under each pot keeps some back."
    ))))
    .unwrap();
    store.take()
}

fn total(calls: &BTreeMap<&'static str, u64>) -> u64 {
    calls.values().sum()
}

#[test]
fn a_turn_reads_the_head_per_call_but_the_reply_and_no_log_key_after_its_own_commits() {
    let (store, clock, mut m) = one_writer(config());
    for i in 0..12 {
        clock.advance(20_000);
        let calls = turn(&mut m, &store, &clock, i);
        // add, render, view: a head read each; the reply commits on the
        // state the view read, its maintain on the reply's; two commits;
        // no log key read.
        assert_eq!(calls.get("get head"), Some(&3), "turn {i}: {calls:?}");
        assert_eq!(calls.get("get log"), None, "turn {i}: {calls:?}");
        assert_eq!(calls.get("write_if"), Some(&2), "turn {i}: {calls:?}");
    }
}

/// A backend's turn: the question, one read of the view, the reply.
fn backend_turn(m: &mut Mem, store: &Counting, clock: &ManualClock, i: usize) -> u64 {
    store.take();
    block_on(m.add_message(NewMessage::user(format!(
        "Turn {i}: which compost suits the raised beds?"
    ))))
    .unwrap();
    clock.advance(50);
    block_on(m.view()).unwrap();
    clock.advance(50);
    block_on(m.add_message(NewMessage::assistant(format!(
        "Leaf mould, turn {i}, dug in each spring."
    ))))
    .unwrap();
    total(&store.take())
}

#[test]
fn a_backend_turn_costs_at_most_four_round_trips_by_default() {
    let (store, clock, mut m) = one_writer(config());
    let totals: Vec<u64> = (0..12)
        .map(|i| {
            clock.advance(20_000);
            backend_turn(&mut m, &store, &clock, i)
        })
        .collect();
    // The question's head read and commit, the view's head read, the
    // reply's commit; derived index copies may add a put now and then.
    assert!(totals.iter().all(|&t| t <= 4), "{totals:?}");
    assert!(
        totals.iter().filter(|&&t| t == 4).count() >= 10,
        "{totals:?}"
    );
}

#[test]
fn a_reply_on_a_state_another_writer_moved_lands_after_it_once() {
    let (a_store, mut a, mut b, _) = two_writers(config());
    block_on(a.add_message(NewMessage::user("from a, a question"))).unwrap();
    block_on(b.add_message(NewMessage::user("from b, meanwhile"))).unwrap();
    a_store.take();
    // a's reply runs on its own state first, conflicts with b's commit,
    // reloads and runs again after it.
    block_on(a.add_message(NewMessage::assistant("from a, the reply"))).unwrap();
    let calls = a_store.take();
    assert!(calls.get("write_if").is_some_and(|&n| n >= 2), "{calls:?}");
    let texts: Vec<String> = block_on(b.messages())
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(
        texts,
        [
            "from a, a question",
            "from b, meanwhile",
            "from a, the reply"
        ]
    );
}

#[test]
fn a_retried_reply_another_writer_stored_is_found_after_a_head_read() {
    let (a_store, mut a, mut b, clock) = two_writers(config());
    block_on(a.add_message(NewMessage::user("the question"))).unwrap();
    let mut reply = NewMessage::assistant("the reply");
    reply.client_id = Some("turn-1:a".into());
    // b stores the reply (a's first try, whose answer was lost, went to b).
    let first = block_on(b.add_message(reply.clone())).unwrap();
    assert!(!first.duplicate);
    clock.advance(1_000);
    // a holds a state without it: the retry conflicts, reloads and finds it.
    let again = block_on(a.add_message(reply.clone())).unwrap();
    assert!(again.duplicate, "{again:?}");
    assert_eq!(again.message, first.message);
    // A retry on a state that holds it writes nothing and checks the head.
    a_store.take();
    let third = block_on(a.add_message(reply)).unwrap();
    assert!(third.duplicate);
    let calls = a_store.take();
    assert_eq!(calls.get("write_if"), None, "{calls:?}");
    assert_eq!(calls.get("get head"), Some(&1), "{calls:?}");
    assert_eq!(block_on(a.messages()).unwrap().len(), 2);
}

#[test]
fn a_tool_output_refused_on_a_held_state_is_judged_on_the_stores() {
    let shared = MemoryStore::new();
    let clock = ManualClock::at(1_767_600_000_000);
    let mut a = open(&Counting::new(shared.clone()), &clock, config());
    let mut b = open(&Counting::new(shared), &clock, config());
    block_on(a.add_message(NewMessage::user("look it up"))).unwrap();
    // b records the tool call; a's state has not seen it.
    let call = NewMessage::tool_calls(
        "",
        vec![engram::ToolCall {
            id: "call_1".into(),
            name: "lookup".into(),
            arguments: "{}".into(),
        }],
    );
    block_on(b.add_message(call)).unwrap();
    // On a's held state the output answers no call; on the store's it does.
    let out = NewMessage::tool_result("call_1", "found it");
    block_on(a.add_message(out)).expect("the store's state has the call");
    assert_eq!(block_on(a.messages()).unwrap().len(), 3);
}

#[test]
fn with_fresh_for_ms_a_turn_reads_the_head_once() {
    let (store, clock, mut m) = one_writer(fresh_config());
    let mut totals = Vec::new();
    for i in 0..12 {
        clock.advance(20_000);
        let calls = turn(&mut m, &store, &clock, i);
        assert_eq!(calls.get("get head"), Some(&1), "turn {i}: {calls:?}");
        totals.push(total(&calls));
    }
    // Derived index copies may add a put now and then; the turn itself is
    // one read and two commits.
    assert!(totals.iter().all(|&t| t <= 4), "{totals:?}");
}

#[test]
fn after_another_writers_commit_the_catch_up_checks_the_next_key_with_the_tail() {
    let (a_store, mut a, mut b, _) = two_writers(config());
    block_on(a.add_message(NewMessage::user("from a, first"))).unwrap();
    a_store.take();
    block_on(a.add_message(NewMessage::user("from a, second"))).unwrap();
    assert_eq!(a_store.take().get("get log"), None, "after its own commit");
    block_on(b.add_message(NewMessage::user("from b"))).unwrap();
    block_on(a.add_message(NewMessage::user("from a, third"))).unwrap();
    let calls = a_store.take();
    // b's entry and the key after it, in one batch: the commit reads no
    // key of its own then.
    assert_eq!(calls.get("get many"), Some(&1), "{calls:?}");
    assert_eq!(calls.get("get log"), None, "{calls:?}");
    let texts: Vec<String> = block_on(a.messages())
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(
        texts,
        ["from a, first", "from a, second", "from b", "from a, third"]
    );
}

#[test]
fn a_fresh_state_sees_another_writer_one_call_late_and_stores_nothing_twice() {
    let (_, mut a, mut b, clock) = two_writers(fresh_config());
    block_on(a.add_message(NewMessage::user("from a, first"))).unwrap();
    block_on(b.add_message(NewMessage::user("from b"))).unwrap();
    // Within the second: a's read is its own state, without b's message.
    let seen: Vec<String> = block_on(a.messages())
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(seen, ["from a, first"]);
    // A write on that state conflicts with b's commit, reloads and lands
    // after it, once.
    block_on(a.add_message(NewMessage::user("from a, second"))).unwrap();
    let after: Vec<String> = block_on(a.messages())
        .unwrap()
        .into_iter()
        .map(|m| m.content)
        .collect();
    assert_eq!(after, ["from a, first", "from b", "from a, second"]);
    // Past the window every call reads the head again.
    block_on(b.add_message(NewMessage::user("from b, later"))).unwrap();
    clock.advance(1_001);
    assert_eq!(block_on(a.messages()).unwrap().len(), 4);
}

#[test]
fn fresh_for_ms_out_of_range_is_refused() {
    let store = Counting::new(MemoryStore::new());
    let clock = ManualClock::at(1_767_600_000_000);
    let bad = Config {
        fresh_for_ms: 60_001,
        ..config()
    };
    let err = block_on(Memory::open(
        "trips",
        store.clone(),
        scripted_model(&[]),
        clock,
        bad,
    ))
    .err()
    .expect("refused");
    assert!(err.to_string().contains("fresh_for_ms"), "{err}");
}

#[test]
fn a_catch_up_reads_another_writers_entries_in_one_call() {
    let (a_store, mut a, mut b, clock) = two_writers(config());
    block_on(a.add_message(NewMessage::user("from a, first"))).unwrap();
    // Another instance serves the user's next turns: 12 entries a must
    // catch up on (fewer than a pack, so all in the tail).
    for i in 0..12 {
        clock.advance(1_000);
        block_on(b.add_message(NewMessage::user(format!("from b, {i}")))).unwrap();
    }
    a_store.take();
    clock.advance(1_000);
    block_on(a.add_message(NewMessage::user("from a, again"))).unwrap();
    let calls = a_store.take();
    // The head, the 12 entries and the key after them in one batch, the
    // commit.
    assert_eq!(calls.get("get head"), Some(&1), "{calls:?}");
    assert_eq!(calls.get("get many"), Some(&1), "{calls:?}");
    assert_eq!(calls.get("write_if"), Some(&1), "{calls:?}");
    assert_eq!(total(&calls), 3, "{calls:?}");
    let texts = block_on(a.messages()).unwrap();
    assert_eq!(texts.len(), 14);
    assert_eq!(texts[13].content, "from a, again");
}

#[test]
fn an_open_reads_a_long_log_in_a_bounded_number_of_calls() {
    let (store, clock, mut m) = one_writer(config());
    for i in 0..400 {
        clock.advance(1_000);
        block_on(m.add_message(NewMessage::user(format!(
            "Note {i}: the shed key is under the pot."
        ))))
        .unwrap();
    }
    let packs = block_on(store.inner.list("engram/trips/"))
        .unwrap()
        .iter()
        .filter(|k| k.contains("/seg/"))
        .count();
    assert!(packs >= 5, "the log is in {packs} packs");
    store.take();
    let mut reopened = open(&store, &clock, config());
    let calls = store.take();
    // The head, the word indexes, the list of packs, the packs and the
    // tail a batch each (16 packs a batch), the key past the head, the
    // meaning graphs: not one call per entry or pack.
    assert_eq!(calls.get("get log"), None, "{calls:?}");
    assert_eq!(
        calls.get("get many"),
        Some(&(packs.div_ceil(16) as u64 + 1)),
        "{calls:?}"
    );
    assert!(total(&calls) <= 10, "{packs} packs: {calls:?}");
    assert_eq!(block_on(reopened.messages()).unwrap().len(), 400);
}
