//! The host clock is checked where a call reads it: a clock in seconds (or
//! any reading before 2000) is refused with an error that names the likely
//! mistake and writes nothing; a reading earlier than the memory's last
//! stamp is clamped to it (stamps never go back) and reported in
//! `stats().storage_warnings`.

mod common;

use common::*;
use engram::Error;
use engram::NewMessage;
use engram::MIN_CLOCK_MS;

/// A refused add: the error, with the store unchanged.
fn refused_at(reading: i64) -> String {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.user("hello");
    let before = fx.store.dump();
    fx.clock.set(reading);
    let err = fx.try_add(NewMessage::user("again")).expect_err("refused");
    assert!(matches!(err, Error::InvalidInput(_)), "{reading}: {err}");
    assert_eq!(fx.store.dump(), before, "{reading}: nothing written");
    err.to_string()
}

#[test]
fn a_clock_in_seconds_is_refused_naming_the_mistake() {
    // `int(time.time())`, `Date.now() / 1000`: the reading is 1,000 times
    // too small, a time in January 1970.
    let msg = refused_at(T0 / 1000);
    assert!(
        msg.contains(&format!("the clock returned {}", T0 / 1000))
            && msg.contains("before 2000")
            && msg.contains("milliseconds since the Unix epoch")
            && msg.contains("did you pass seconds?"),
        "{msg}"
    );
}

#[test]
fn any_reading_before_2000_is_refused() {
    for reading in [0, 1_000, MIN_CLOCK_MS - 1, -1, i64::MIN] {
        let msg = refused_at(reading);
        assert!(
            msg.contains("before 2000") && msg.contains("did you pass seconds"),
            "{reading}: {msg}"
        );
    }
}

#[test]
fn a_clock_in_microseconds_is_refused_naming_the_mistake() {
    let msg = refused_at(T0 * 1000);
    assert!(
        msg.contains("after the year 3000") && msg.contains("did you pass microseconds?"),
        "{msg}"
    );
}

#[test]
fn the_first_call_of_a_memory_on_a_seconds_clock_is_refused() {
    let mut fx = Fx::new(config(2_000));
    fx.clock.set(T0 / 1000);
    let err = fx.try_add(NewMessage::user("hello")).expect_err("refused");
    assert!(err.to_string().contains("did you pass seconds?"), "{err}");
    assert!(fx.store.dump().is_empty(), "nothing written");
    // Fixed, the same handle goes on.
    fx.clock.set(T0);
    standard_segment(&fx.model);
    fx.user("hello");
    assert_eq!(fx.messages().len(), 1);
}

#[test]
fn the_earliest_reading_accepted_is_2000_01_01() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.clock.set(MIN_CLOCK_MS);
    fx.user("hello");
    assert_eq!(fx.messages()[0].at, MIN_CLOCK_MS);
}

#[test]
fn a_clock_going_back_is_clamped_to_the_last_stamp_and_reported() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.clock.set(T0 + 10 * MIN);
    fx.user("hello");
    assert!(fx.stats().storage_warnings.is_empty());
    // The host's clock jumps back five minutes (an NTP step, another
    // machine's clock).
    fx.clock.set(T0 + 5 * MIN);
    fx.user("hello again");
    let at: Vec<i64> = fx.messages().iter().map(|m| m.at).collect();
    assert_eq!(at, vec![T0 + 10 * MIN, T0 + 10 * MIN], "clamped, not back");
    let warnings = fx.stats().storage_warnings;
    let clock = warnings.last().expect("reported");
    assert!(
        clock.starts_with("clock:")
            && clock.contains("went back 1 time(s)")
            && clock.contains(&format!("{}", T0 + 5 * MIN))
            && clock.contains(&format!("{} ms before", 5 * MIN))
            && clock.contains(&format!("{} was used", T0 + 10 * MIN)),
        "{clock}"
    );
    assert_eq!(fx.memory.clock_warning().as_ref(), Some(clock));
    // A second time: counted, one line still.
    fx.user("and again");
    let warnings = fx.stats().storage_warnings;
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("went back 2 time(s)"),
        "{}",
        warnings[0]
    );
    // Another handle on the same store clamps to the stamps it reads.
    let mut other = fx.reopen();
    assert!(other.stats().storage_warnings.is_empty());
    other.assistant("still here");
    assert_eq!(other.messages().last().unwrap().at, T0 + 10 * MIN);
    assert!(other.memory.clock_warning().is_some());
    // Once the clock passes the last stamp again, its readings are used.
    fx.clock.set(T0 + 11 * MIN);
    fx.user("later");
    assert_eq!(fx.messages().last().unwrap().at, T0 + 11 * MIN);
}

#[test]
fn a_read_at_an_earlier_time_is_not_a_clock_going_back() {
    let mut fx = Fx::new(config(2_000));
    standard_segment(&fx.model);
    fx.clock.set(T0 + 10 * MIN);
    fx.user("hello");
    fx.clock.set(T0 + 5 * MIN);
    // Reads compute ages at the reading; nothing is stamped.
    fx.episodes();
    assert!(fx.stats().storage_warnings.is_empty());
}
