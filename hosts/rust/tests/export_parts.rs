//! Export and import in parts through the component: `export_to` writes
//! the export part by part and the bytes are `export`'s; `import_from`
//! reads it back in pieces of 1,000 bytes (cut inside UTF-8 characters) into an
//! empty memory with the same messages; a read that fails half-way leaves
//! the memory empty and a whole import still works; a stale cursor is
//! `invalid-input`.

mod common;

use common::text;
use engram_wasmtime_host::{Engram, EraseTarget, ExportCursor, MemStore, MemoryError, Role};

fn open(store: &MemStore, namespace: &str) -> Engram {
    common::open_offline(store, namespace)
}

fn converse(memory: &mut Engram, turns: usize) {
    for i in 0..turns {
        memory.host().now_ms += 60_000;
        memory
            .add_message(&text(
                Role::User,
                &format!(
                    "Turn {i}: the café in Zürich opens at {} — naïve façade, 東京 too.",
                    7 + i % 5
                ),
            ))
            .expect("add");
        memory.host().now_ms += 60_000;
        memory
            .add_message(&text(Role::Assistant, &format!("Noted, point {i}.")))
            .expect("add");
    }
}

/// The messages as (id, role, content), to compare two memories.
fn said(memory: &mut Engram) -> Vec<(u64, String, String)> {
    memory
        .messages()
        .expect("messages")
        .into_iter()
        .map(|m| (m.id, format!("{:?}", m.role), m.content))
        .collect()
}

fn whole_export(memory: &mut Engram) -> String {
    memory
        .call(|m, store, memory| m.call_export(store, memory))
        .expect("export")
}

/// A reader that gives `step` bytes at a time, then fails after `fail_at`.
struct Trickle<'a> {
    bytes: &'a [u8],
    step: usize,
    fail_at: Option<usize>,
    at: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.fail_at.is_some_and(|f| self.at >= f) {
            return Err(std::io::Error::other("disk gone"));
        }
        let n = self.step.min(buf.len()).min(self.bytes.len() - self.at);
        buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn export_to_writes_the_export_and_import_from_reads_it_back() {
    let store = MemStore::new();
    let mut memory = open(&store, "parts");
    converse(&mut memory, 30);
    let whole = whole_export(&mut memory);
    let mut out = Vec::new();
    let written = memory.export_to(&mut out, 1024).expect("export_to");
    assert_eq!(written as usize, out.len());
    assert_eq!(String::from_utf8(out.clone()).unwrap(), whole);
    // In small parts, several come back.
    let mut parts = 0;
    let mut cursor: Option<ExportCursor> = None;
    loop {
        let part = memory
            .call(|m, s, r| m.call_export_part(s, r, cursor, 1024))
            .expect("part");
        parts += 1;
        cursor = part.next;
        if cursor.is_none() {
            break;
        }
    }
    assert!(parts > 5, "{} bytes in {parts} parts", whole.len());

    // 7 bytes at a time: pieces end inside multi-byte characters.
    let fresh = MemStore::new();
    let mut copy = open(&fresh, "parts");
    copy.import_from(
        &mut Trickle {
            bytes: &out,
            step: 7,
            fail_at: None,
            at: 0,
        },
        1000,
    )
    .expect("import_from");
    assert_eq!(said(&mut copy), said(&mut memory));
    assert_eq!(whole_export(&mut copy), whole);
}

#[test]
fn a_failed_read_leaves_the_memory_empty_and_a_stale_cursor_is_refused() {
    let store = MemStore::new();
    let mut memory = open(&store, "parts");
    converse(&mut memory, 20);
    let whole = whole_export(&mut memory);

    let fresh = MemStore::new();
    let mut copy = open(&fresh, "parts");
    let err = copy
        .import_from(
            &mut Trickle {
                bytes: whole.as_bytes(),
                step: 500,
                fail_at: Some(2000),
                at: 0,
            },
            1000,
        )
        .expect_err("the read fails");
    assert!(format!("{err:#}").contains("disk gone"), "{err:#}");
    assert!(fresh.is_empty(), "a failed import wrote");
    // What was read is forgotten: a whole import after it is taken.
    copy.import_from(&mut whole.as_bytes(), 8 << 20)
        .expect("imports whole");
    assert_eq!(said(&mut copy), said(&mut memory));

    // An erasure between two parts makes the cursor stale.
    let first = memory
        .call(|m, s, r| m.call_export_part(s, r, None, 1024))
        .expect("part");
    memory.erase(EraseTarget::Message(3)).expect("erase");
    let err = memory
        .call(|m, s, r| m.call_export_part(s, r, first.next, 1024))
        .expect_err("stale");
    assert!(
        matches!(err.downcast_ref::<MemoryError>(), Some(MemoryError::InvalidInput(m)) if m.contains("erasure")),
        "{err:#}"
    );
}
