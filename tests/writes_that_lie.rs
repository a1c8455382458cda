//! Exactly-once adds: a store write that lands and then reports a conflict or
//! a failure (its reply lost, a timeout after it applied) never duplicates a
//! message. The engine reads the log position back, recognises its own entry
//! by its id, and counts the call as done.

mod common;

use common::*;
use engram::testing::MemoryStore;
use engram::Role;
use engram::StoreError;

fn replay_with_lies(error: StoreError) {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.store.lie_every(20, error);
    let mut sent = Vec::new();
    for i in 0..1_000 {
        fx.minutes(1);
        let text = format!("message {i} about topic {}", i / 40);
        if i % 2 == 0 {
            fx.user(&text);
        } else {
            fx.assistant(&text);
        }
        sent.push(text);
    }
    assert!(fx.store.lies() >= 40, "{} lies", fx.store.lies());
    let stored = fx.messages();
    assert_eq!(stored.len(), 1_000, "every message exactly once");
    for (i, (m, text)) in stored.iter().zip(&sent).enumerate() {
        assert_eq!(&m.content, text, "message {} in order", i + 1);
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        assert_eq!(m.role, role);
    }
    // A fresh handle reads the same log: nothing was written twice.
    let mut again = fx.reopen();
    assert_eq!(again.messages().len(), 1_000);
    assert_eq!(again.view(), fx.view());
}

#[test]
fn a_write_that_lands_and_reports_a_conflict_is_not_made_again() {
    replay_with_lies(StoreError::Conflict);
}

#[test]
fn a_write_that_lands_and_reports_a_failure_is_done() {
    replay_with_lies(StoreError::Failed(
        "timed out after the write applied".into(),
    ));
}

#[test]
fn a_lost_head_opens_as_corrupt_not_empty() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.user("hello there");
    fx.assistant("hello back");
    let head = fx
        .store
        .dump()
        .keys()
        .find(|k| k.ends_with("/head"))
        .cloned()
        .expect("a head");
    fx.store.poke(&head, None);
    let before = fx.store.dump();
    let err = fx.try_reopen().err().expect("open refuses");
    assert!(matches!(err, engram::Error::Corrupt(_)), "{err}");
    assert_eq!(fx.store.dump(), before, "nothing written");
    // The old handle cannot overwrite the log either.
    let err = fx
        .try_add(engram::NewMessage::user("more"))
        .expect_err("refused");
    assert!(
        matches!(err, engram::Error::Corrupt(_)),
        "the commit never overwrites log/1: {err}"
    );
    assert_eq!(fx.store.dump(), before);
}

use engram::base::bytes::value_checksum as fnv;

fn key_ending(fx: &Fx, end: &str) -> String {
    fx.store
        .dump()
        .keys()
        .find(|k| k.ends_with(end))
        .cloned()
        .unwrap_or_else(|| panic!("no key ends with {end}"))
}

#[test]
fn a_damaged_segment_is_corrupt_naming_it_never_a_panic() {
    let mut cfg = config(2_000);
    cfg.snapshot_every = 4;
    let mut fx = Fx::new(cfg);
    standard_segment(&fx.model);
    for i in 0..12 {
        fx.minutes(1);
        fx.user(&format!("question {i}"));
        fx.assistant(&format!("answer {i}"));
    }
    let key = key_ending(&fx, "seg/00000000000000000005");
    let clean = fx.store.dump()[&key].clone();
    let at = clean
        .windows(10)
        .position(|w| w == b"question 3")
        .expect("the segment holds question 3");
    let mut edited = clean.clone();
    edited[at + 9] = b'X';
    for (what, bad) in [
        ("truncated", clean[..clean.len() / 2].to_vec()),
        ("edited", edited),
        ("emptied", Vec::new()),
    ] {
        fx.store.poke(&key, Some(&bad));
        let err = fx.try_reopen().err().expect("refused");
        assert!(
            matches!(&err, engram::Error::Corrupt(m) if m.contains("seg/00000000000000000005")),
            "{what}: {err}"
        );
    }
    // Put back, it opens as before.
    fx.store.poke(&key, Some(&clean));
    assert_eq!(fx.reopen().view(), fx.view());
}

#[test]
fn a_damaged_log_entry_is_corrupt_with_its_position() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    for i in 0..3 {
        fx.user(&format!("question {i}"));
    }
    let key = key_ending(&fx, "log/00000000000000000002");
    let raw = fx.store.dump()[&key].clone();
    for bad in [
        raw[..raw.len() - 3].to_vec(),
        b"{\"seq\": 2, \"at\": ".to_vec(),
    ] {
        fx.store.poke(&key, Some(&bad));
        let err = fx.try_reopen().err().expect("refused");
        assert!(
            matches!(&err, engram::Error::Corrupt(m) if m.contains("log entry 2")),
            "{err}"
        );
    }
}

#[test]
fn an_unknown_event_type_is_an_unsupported_version() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.user("question");
    let key = key_ending(&fx, "log/00000000000000000001");
    let mut raw = fx.store.dump()[&key].clone();
    // The event's type, renamed to one this build does not know, with the
    // checksum made to match (a value written by a newer build).
    let at = raw
        .windows(7)
        .position(|w| w == b"message")
        .expect("the type");
    raw[at..at + 7].copy_from_slice(b"hologra");
    let sum = fnv(&raw[13..]).to_le_bytes();
    raw[5..13].copy_from_slice(&sum);
    fx.store.poke(&key, Some(&raw));
    let err = fx.try_reopen().err().expect("refused");
    assert!(
        matches!(err, engram::Error::UnsupportedVersion { .. }),
        "{err}"
    );
    let _ = MemoryStore::new();
}

#[test]
fn a_host_that_retries_with_the_same_client_id_stores_each_message_once() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.store
        .lie_every(20, StoreError::Failed("timed out".into()));
    let mut duplicates = 0;
    for i in 0..1_000 {
        fx.minutes(1);
        let text = format!("message {i} about topic {}", i / 40);
        let m = if i % 2 == 0 {
            engram::NewMessage::user(&text)
        } else {
            engram::NewMessage::assistant(&text)
        }
        .with_client_id(format!("c{i}"));
        // The host does not trust the first answer (it timed out, say) and
        // adds the same message again, with the same client id.
        let first = fx.try_add(m.clone()).map(|a| a.message);
        let again = fx.try_add(m).expect("the retry is answered");
        assert!(again.duplicate, "message {i}: the retry writes nothing");
        if let Ok(id) = first {
            assert_eq!(again.message, id);
        }
        duplicates += 1;
    }
    assert_eq!(duplicates, 1_000);
    let stored = fx.messages();
    assert_eq!(stored.len(), 1_000, "every message exactly once");
    for (i, m) in stored.iter().enumerate() {
        assert_eq!(m.client_id.as_deref(), Some(format!("c{i}").as_str()));
    }
}

#[test]
fn a_client_id_is_bounded() {
    let mut fx = Fx::new(config(2_000));
    let long = "x".repeat(257);
    for id in ["", long.as_str()] {
        let err = fx
            .try_add(engram::NewMessage::user("hi").with_client_id(id))
            .expect_err("refused");
        assert!(matches!(err, engram::Error::InvalidInput(_)), "{err}");
    }
    assert!(fx.messages().is_empty());
}
