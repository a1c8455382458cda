//! Export and import in parts, for memories whose export is too large to
//! hold as one text: the parts of a paged export join to the whole export
//! as it stood when the export began (messages added meanwhile are not in
//! it), an erasure between parts makes the cursor stale, a cursor that
//! does not fit is refused, and an export given to import in pieces, cut
//! anywhere, gives the same memory as a whole import.

use engram::testing::{block_on, ManualClock, MemoryStore};
use engram::Error;
use engram::NewMessage;
use engram::Target;
use engram::{
    store::export::ExportCursor, store::export::ExportPart, store::export::EXPORT_PART_MIN,
};

mod scripted_conversation;
use scripted_conversation::*;

const NS: &str = "parts";

fn open(store: &MemoryStore, clock: &ManualClock) -> Mem {
    open_in(NS, store, clock).expect("opens")
}

/// A memory of a scripted conversation of `messages` messages: log entries
/// in segments of 16 (`config().snapshot_every`) and a tail.
fn long_memory(messages: usize) -> (Mem, MemoryStore, ManualClock) {
    long_memory_of(messages, 11)
}

/// [`long_memory`] of the conversation of `seed`.
fn long_memory_of(messages: usize, seed: u64) -> (Mem, MemoryStore, ManualClock) {
    let store = MemoryStore::new();
    let clock = ManualClock::at(START);
    let mut m = open(&store, &clock);
    for step in conversation(messages, seed) {
        clock.advance(step.advance_ms);
        block_on(m.add_message(step.message)).expect("adds");
    }
    (m, store, clock)
}

/// The first part of a paged export.
fn first(m: &mut Mem, max_bytes: usize) -> ExportPart {
    block_on(m.export_part(None, max_bytes)).expect("the first part")
}

/// Every part, in order, asking for `max_bytes` each.
fn all_parts(m: &mut Mem, max_bytes: usize) -> Vec<String> {
    let mut part = first(m, max_bytes);
    let mut texts = vec![part.text];
    while let Some(next) = part.next {
        part = block_on(m.export_part(Some(next), max_bytes)).expect("the next part");
        texts.push(part.text);
    }
    texts
}

fn invalid(r: engram::Result<ExportPart>, what: &str) -> String {
    match r {
        Err(Error::InvalidInput(msg)) => msg,
        other => panic!("{what}: expected InvalidInput, got {other:?}"),
    }
}

#[test]
fn export_parts_join_to_the_whole_export() {
    let (mut m, _, _) = long_memory(240);
    let whole = block_on(m.export()).unwrap();
    let parts = all_parts(&mut m, 4096);
    assert!(
        parts.len() > 10,
        "a {} byte export in parts of 4 KiB came in {} parts",
        whole.len(),
        parts.len()
    );
    assert_eq!(parts.concat(), whole, "the parts join to the export");
    let entries = |t: &str| {
        serde_json::from_str::<serde_json::Value>(t).unwrap()["log"]
            .as_array()
            .unwrap()
            .len()
    };
    let mut big = 0;
    for p in &parts[..parts.len() - 1] {
        if p.len() > 4096 {
            big += 1;
        }
    }
    assert!(
        big * 4 < parts.len(),
        "{big} of {} parts passed their 4 KiB (only a single long entry may)",
        parts.len()
    );
    // One part when the whole export fits, and the same text.
    let one = all_parts(&mut m, whole.len() + 2);
    assert_eq!(one, vec![whole.clone()]);
    assert!(entries(&whole) > 200);
}

#[test]
fn an_empty_memory_exports_in_one_part() {
    let store = MemoryStore::new();
    let clock = ManualClock::at(START);
    let mut m = open(&store, &clock);
    let part = first(&mut m, EXPORT_PART_MIN);
    assert_eq!(part.next, None);
    assert_eq!(part.text, block_on(m.export()).unwrap());
    let fresh = MemoryStore::new();
    let mut copy = open(&fresh, &clock);
    block_on(copy.import(&part.text)).expect("an empty export imports");
}

#[test]
fn a_paged_export_ends_where_it_began_while_messages_are_added() {
    let (mut m, _, clock) = long_memory(120);
    let at_start = block_on(m.export()).unwrap();
    let mut part = first(&mut m, 2048);
    let mut texts = vec![part.text];
    let mut added = 0;
    while let Some(next) = part.next {
        clock.advance_minutes(1);
        block_on(m.add_message(NewMessage::user(format!(
            "one more thing about the lisbon trip, number {added}"
        ))))
        .expect("adds between parts");
        added += 1;
        part = block_on(m.export_part(Some(next), 2048)).expect("the next part");
        texts.push(part.text);
    }
    assert!(added > 3, "only {added} messages were added between parts");
    assert_eq!(
        texts.concat(),
        at_start,
        "the export is the log when it began"
    );
    assert_ne!(block_on(m.export()).unwrap(), at_start);
}

#[test]
fn an_erasure_between_parts_makes_the_cursor_stale() {
    let (mut m, store, _) = long_memory(80);
    let part = first(&mut m, 2048);
    let next = part.next.expect("more than one part");
    let id = block_on(m.messages()).unwrap()[3].id;
    block_on(m.erase(Target::Message(id))).expect("erases");
    let msg = invalid(block_on(m.export_part(Some(next), 2048)), "stale cursor");
    assert!(msg.contains("erasure"), "{msg}");
    // Another handle that erased: this handle's cursor is stale as well.
    let clock = ManualClock::at(START);
    let mut other = open(&store, &clock);
    let part = first(&mut m, 2048);
    let next = part.next.expect("more than one part");
    let id = block_on(other.messages()).unwrap()[5].id;
    block_on(other.erase(Target::Message(id))).expect("erases");
    invalid(
        block_on(m.export_part(Some(next), 2048)),
        "cursor from before another handle's erasure",
    );
    // Started again, the export is whole.
    assert_eq!(
        all_parts(&mut m, 2048).concat(),
        block_on(m.export()).unwrap()
    );
}

fn open_salvage(store: &MemoryStore, clock: &ManualClock) -> Mem {
    open_salvage_in(NS, store, clock).expect("opens for salvage")
}

#[test]
fn a_log_destroyed_and_written_anew_between_parts_is_refused() {
    // A salvage handle never reads the head again, so only the cursor's
    // mark can tell that the log under it was replaced.
    let (_, store, clock) = long_memory(120);
    let mut m = open_salvage(&store, &clock);
    let part = first(&mut m, 2048);
    let next = part.next.expect("more than one part");
    // Another handle destroys the namespace and imports a longer memory of
    // another conversation: same erasure count (0), a log that reaches the
    // cursor. (The same conversation written anew would be the same log,
    // and its parts the same export.)
    let (mut other_mem, _, _) = long_memory_of(200, 5);
    let other_export = block_on(other_mem.export()).unwrap();
    let mut other = open(&store, &clock);
    block_on(other.destroy()).expect("destroys");
    block_on(other.import(&other_export)).expect("imports");
    assert!(block_on(other.stats()).unwrap().log_entries >= next.end);
    let msg = invalid(
        block_on(m.export_part(Some(next), 2048)),
        "a log written anew",
    );
    assert!(
        msg.contains("changed") && msg.contains("start the export again"),
        "{msg}"
    );
    // Destroyed and left empty: refused too, never an empty part that a
    // host would ask again for ever.
    block_on(other.destroy()).expect("destroys");
    let msg = invalid(block_on(m.export_part(Some(next), 2048)), "a destroyed log");
    assert!(msg.contains("no longer holds"), "{msg}");
    // A normal handle catches up with the head first: the replaced log is
    // an error there too, never a part.
    let (mut m, store, clock) = long_memory(120);
    let next = first(&mut m, 2048).next.expect("more than one part");
    let mut other = open(&store, &clock);
    block_on(other.destroy()).expect("destroys");
    block_on(other.import(&other_export)).expect("imports");
    let r = block_on(m.export_part(Some(next), 2048));
    assert!(r.is_err(), "a part of a replaced log: {r:?}");
}

#[test]
fn a_forged_mark_is_refused() {
    let (mut m, _, _) = long_memory(60);
    let next = first(&mut m, 2048).next.expect("more than one part");
    let forged = ExportCursor {
        mark: next.mark ^ 1,
        ..next
    };
    let msg = invalid(block_on(m.export_part(Some(forged), 2048)), "a forged mark");
    assert!(msg.contains("changed"), "{msg}");
    assert!(block_on(m.export_part(Some(next), 2048)).is_ok());
}

#[test]
fn a_cursor_that_does_not_fit_is_refused() {
    let (mut m, store, _) = long_memory(40);
    let before = store.dump();
    let seq = block_on(m.stats()).unwrap().log_entries;
    let bad = [
        ExportCursor {
            next: 0,
            end: seq,
            rewrites: 0,
            mark: 0,
        },
        ExportCursor {
            next: 2,
            end: seq + 1,
            rewrites: 0,
            mark: 0,
        },
        ExportCursor {
            next: seq + 1,
            end: seq,
            rewrites: 0,
            mark: 0,
        },
        ExportCursor {
            next: 2,
            end: seq,
            rewrites: 7,
            mark: 0,
        },
    ];
    for c in bad {
        invalid(block_on(m.export_part(Some(c), 4096)), &format!("{c:?}"));
    }
    let msg = invalid(
        block_on(m.export_part(None, EXPORT_PART_MIN - 1)),
        "tiny parts",
    );
    assert!(msg.contains(&EXPORT_PART_MIN.to_string()), "{msg}");
    assert_eq!(store.dump(), before, "a refused part wrote to the store");
}

#[test]
fn import_in_pieces_cut_anywhere_gives_the_same_memory() {
    let (mut m, _, clock) = long_memory(160);
    let export = block_on(m.export()).unwrap();
    let fresh = MemoryStore::new();
    let mut copy = open(&fresh, &clock);
    // Cut at every 777th character (inside strings, numbers, escapes).
    let chars: Vec<char> = export.chars().collect();
    for piece in chars.chunks(777) {
        copy.import_piece(&piece.iter().collect::<String>())
            .expect("a piece");
    }
    let refused = block_on(copy.import(&export));
    assert!(
        matches!(&refused, Err(Error::InvalidInput(m)) if m.contains("under way")),
        "a whole import while pieces are pending: {refused:?}"
    );
    assert!(fresh.dump().is_empty(), "pieces wrote before the finish");
    block_on(copy.import_finish()).expect("the pieces import");
    assert_eq!(
        block_on(copy.messages()).unwrap(),
        block_on(m.messages()).unwrap()
    );
    assert_eq!(block_on(copy.export()).unwrap(), export);
    let mut reopened = open(&fresh, &clock);
    assert_eq!(block_on(reopened.export()).unwrap(), export);
    // A leading byte-order mark (a file saved by some editors) is dropped,
    // whole or in pieces.
    let bom = format!("\u{feff}{export}");
    let mut whole = open(&MemoryStore::new(), &clock);
    block_on(whole.import(&bom)).expect("a whole import after a BOM");
    assert_eq!(block_on(whole.export()).unwrap(), export);
    let mut pieces = open(&MemoryStore::new(), &clock);
    pieces.import_piece(&bom[..3]).unwrap();
    pieces.import_piece(&bom[3..]).unwrap();
    block_on(pieces.import_finish()).expect("pieces after a BOM");
    assert_eq!(block_on(pieces.export()).unwrap(), export);
}

#[test]
fn a_failed_import_in_pieces_forgets_them_and_changes_nothing() {
    let (mut m, _, clock) = long_memory(40);
    let export = block_on(m.export()).unwrap();
    let fresh = MemoryStore::new();
    let mut copy = open(&fresh, &clock);
    // A piece missing: the rest does not parse.
    let (a, b) = export.split_at(export.len() / 2);
    copy.import_piece(a).unwrap();
    copy.import_piece(&b[10..]).unwrap();
    let r = block_on(copy.import_finish());
    assert!(matches!(r, Err(Error::InvalidInput(_))), "{r:?}");
    assert!(fresh.dump().is_empty(), "a failed import wrote");
    // The pieces are gone: a whole import is taken now.
    block_on(copy.import(&export)).expect("imports after the failed pieces");
    assert_eq!(
        block_on(copy.messages()).unwrap(),
        block_on(m.messages()).unwrap()
    );
    // Discarded pieces are not loaded, and a whole import is taken after.
    copy.import_piece(&export[..100]).unwrap();
    assert_eq!(copy.import_discard(), 100);
    assert_eq!(copy.import_discard(), 0);
    // Into a memory that has a log, pieces are refused at the finish.
    copy.import_piece(&export).unwrap();
    let r = block_on(copy.import_finish());
    assert!(
        matches!(&r, Err(Error::InvalidInput(msg)) if msg.contains("empty")),
        "{r:?}"
    );
}
