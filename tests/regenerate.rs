//! A regenerated answer replaces the answer it regenerates: the view shows
//! the new one only (as a chat's screen does), the old one stays stored,
//! listed with `replaced_by` and explained as an alternative. A tool run is
//! replaced whole; a retry of the same answer adds nothing; a regenerate
//! that comes back with an answer it replaced shows that one again; a
//! regenerate with nothing to replace replaces nothing; threads keep to
//! themselves; the log replays (and old logs read) as before.

mod common;

use common::*;
use engram::testing::block_on;
use engram::types::erase::Target;
use engram::Config;
use engram::Error;
use engram::NewMessage;
use engram::ToolCall;

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "weather".into(),
        arguments: r#"{"city":"Lisbon"}"#.into(),
    }
}

/// The ids of the messages the view shows, in order.
fn shown(fx: &mut Fx) -> Vec<u64> {
    fx.view().items.iter().filter_map(|i| i.message).collect()
}

/// The `replaced_by` of every message, in order.
fn replaced(fx: &mut Fx) -> Vec<Option<u64>> {
    fx.messages().iter().map(|m| m.replaced_by).collect()
}

fn explain(fx: &mut Fx, id: u64) -> engram::view::explain::MessageExplanation {
    block_on(fx.memory.explain_message(id)).expect("explain_message")
}

#[test]
fn a_regenerated_answer_replaces_the_first_in_the_view_and_keeps_it_as_an_alternative() {
    let mut fx = Fx::new(Config::default());
    let q = fx.user("What is the capital of Portugal?").message;
    let a1 = fx.assistant("Porto.").message;
    let size_before = fx.view().tokens;
    let a2 = fx
        .add(NewMessage::assistant("Lisbon, since 1255.").replacing(q))
        .message;
    assert_eq!(shown(&mut fx), vec![q, a2]);
    let view = fx.view();
    let texts: Vec<&str> = view.items.iter().map(|i| i.text.as_str()).collect();
    assert!(!texts.iter().any(|t| t.contains("Porto")), "{texts:?}");
    let openai = view.to_openai();
    assert_eq!(openai.len(), 2, "{openai:?}");
    assert_eq!(openai[1]["content"], "Lisbon, since 1255.");
    // The view's size counts the shown answer only (and the kept count
    // agrees with a count from scratch: debug builds assert it).
    let a1_tokens = fx.messages()[1].tokens;
    let a2_tokens = fx.messages()[2].tokens;
    assert_eq!(view.tokens, size_before - a1_tokens + a2_tokens);
    assert_eq!(
        view.tokens,
        view.items.iter().map(|i| i.tokens).sum::<usize>()
    );
    // Kept, listed, explained.
    let msgs = fx.messages();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1].content, "Porto.");
    assert_eq!(msgs[1].replaced_by, Some(a2));
    assert_eq!(msgs[2].replaces, Some(q));
    let old = explain(&mut fx, a1);
    assert!(!old.in_view);
    assert_eq!(old.replaced_by, Some(a2));
    assert!(old.summary.contains("alternative"), "{}", old.summary);
    let new = explain(&mut fx, a2);
    assert!(new.in_view);
    assert_eq!(new.alternatives, vec![a1]);
    assert!(explain(&mut fx, q).in_view);
}

#[test]
fn a_regenerate_replaces_the_whole_tool_run_and_its_own_run_follows() {
    let mut fx = Fx::new(Config::default());
    let q = fx.user("Weather in Lisbon tomorrow?").message;
    fx.add(NewMessage::tool_calls("Checking.", vec![call("c1")]));
    fx.add(NewMessage::tool_result("c1", "21 C, sunny."));
    fx.assistant("Sunny, 21 C.");
    // The regenerated run: its own call and output, then its answer.
    let a = fx
        .add(NewMessage::tool_calls("Let me look.", vec![call("c2")]).replacing(q))
        .message;
    let t = fx
        .add(NewMessage::tool_result("c2", "20 C, clouds."))
        .message;
    let f = fx.assistant("Cloudy, 20 C.").message;
    assert_eq!(shown(&mut fx), vec![q, a, t, f]);
    assert_eq!(
        replaced(&mut fx),
        vec![None, Some(a), Some(a), Some(a), None, None, None]
    );
    // The rendered request pairs each call with its output.
    let openai = fx.view().to_openai();
    assert_eq!(openai.len(), 4, "{openai:?}");
    assert_eq!(openai[1]["tool_calls"][0]["id"], "c2");
    assert_eq!(openai[2]["tool_call_id"], "c2");
}

#[test]
fn a_regenerate_while_the_first_answers_calls_wait_is_accepted_and_nothing_waits() {
    let mut fx = Fx::new(Config::default());
    let q = fx.user("Weather in Lisbon?").message;
    fx.add(NewMessage::tool_calls("Checking.", vec![call("c1")]));
    // A plain answer now is refused: c1 waits for its output.
    assert!(matches!(
        fx.try_add(NewMessage::assistant("Sunny.")),
        Err(Error::InvalidInput(_))
    ));
    let a = fx.add(NewMessage::assistant("Sunny.").replacing(q)).message;
    assert_eq!(shown(&mut fx), vec![q, a]);
    // c1 waits for nothing: the next question is accepted, and an output
    // for the replaced call is refused.
    assert!(matches!(
        fx.try_add(NewMessage::tool_result("c1", "late")),
        Err(Error::InvalidInput(_))
    ));
    fx.user("And Porto?");
}

#[test]
fn a_retry_of_the_same_regenerated_answer_adds_nothing() {
    let mut fx = Fx::new(Config::default());
    let q = fx.user("Name a colour.").message;
    fx.add(NewMessage::assistant("Red.").with_client_id("r-red"));
    let blue = || {
        NewMessage::assistant("Blue.")
            .with_client_id("r-blue")
            .replacing(q)
    };
    let first = fx.add(blue());
    let again = fx.add(blue());
    assert!(!first.duplicate);
    assert!(again.duplicate);
    assert_eq!(again.message, first.message);
    assert_eq!(fx.messages().len(), 3);
    // The first answer's own retry, as a regenerate, is a duplicate too
    // while it is shown: a retried request that got the same answer.
    let mut fx = Fx::new(Config::default());
    let q = fx.user("Name a colour.").message;
    let red = fx
        .add(NewMessage::assistant("Red.").with_client_id("r-red"))
        .message;
    let retry = fx.add(
        NewMessage::assistant("Red.")
            .with_client_id("r-red")
            .replacing(q),
    );
    assert!(retry.duplicate);
    assert_eq!(retry.message, red);
    assert_eq!(replaced(&mut fx), vec![None, None]);
}

#[test]
fn a_regenerate_back_to_a_replaced_answer_shows_it_again_once() {
    let mut fx = Fx::new(Config::default());
    let q = fx.user("Name a colour.").message;
    let answer = |text: &str, id: &str| NewMessage::assistant(text).with_client_id(id).replacing(q);
    let red = fx.add(answer("Red.", "r-red")).message;
    let blue = fx.add(answer("Blue.", "r-blue")).message;
    let red_again = fx.add(answer("Red.", "r-red"));
    assert!(
        !red_again.duplicate,
        "the shown answer is blue: red comes back"
    );
    assert_eq!(shown(&mut fx), vec![q, red_again.message]);
    assert_eq!(
        replaced(&mut fx),
        vec![None, Some(blue), Some(red_again.message), None]
    );
    // Its id now names the shown copy: a retry adds nothing.
    let retry = fx.add(answer("Red.", "r-red"));
    assert!(retry.duplicate);
    assert_eq!(retry.message, red_again.message);
    assert_eq!(fx.messages().len(), 4);
    assert_eq!(fx.messages()[red as usize - 1].replaced_by, Some(blue));
    // The log replays to the same memory.
    let mut other = fx.reopen();
    assert_eq!(other.messages(), fx.messages());
    assert_eq!(shown(&mut other), vec![q, red_again.message]);
}

#[test]
fn a_regenerate_of_an_answer_never_stored_replaces_nothing() {
    let mut fx = Fx::new(Config::default());
    let q = fx.user("Name a colour.").message;
    let a = fx.add(NewMessage::assistant("Green.").replacing(q)).message;
    assert_eq!(shown(&mut fx), vec![q, a]);
    assert_eq!(replaced(&mut fx), vec![None, None]);
    let e = explain(&mut fx, a);
    assert!(e.alternatives.is_empty());
    assert!(e.summary.contains("no earlier answer"), "{}", e.summary);
}

#[test]
fn a_regenerate_of_an_earlier_question_replaces_everything_after_it() {
    let mut fx = Fx::new(Config::default());
    let q1 = fx.user("First question?").message;
    fx.assistant("First answer.");
    fx.user("Second question?");
    fx.assistant("Second answer.");
    let a = fx
        .add(NewMessage::assistant("A better first answer.").replacing(q1))
        .message;
    assert_eq!(shown(&mut fx), vec![q1, a]);
    assert_eq!(
        replaced(&mut fx),
        vec![None, Some(a), Some(a), Some(a), None]
    );
    assert_eq!(explain(&mut fx, a).alternatives, vec![2, 3, 4]);
}

#[test]
fn a_regenerate_replaces_in_its_own_thread_only() {
    let mut fx = Fx::new(Config::default());
    let qa = fx
        .add(NewMessage::user("Question in a?").in_thread("a"))
        .message;
    let qb = fx
        .add(NewMessage::user("Question in b?").in_thread("b"))
        .message;
    let ab = fx
        .add(NewMessage::assistant("Answer in b.").in_thread("b"))
        .message;
    fx.add(NewMessage::assistant("Answer in a.").in_thread("a"));
    let again = fx
        .add(
            NewMessage::assistant("Another answer in a.")
                .in_thread("a")
                .replacing(qa),
        )
        .message;
    let ids = |fx: &mut Fx, t: &str| -> Vec<u64> {
        block_on(fx.memory.view_in(t))
            .unwrap()
            .items
            .iter()
            .filter_map(|i| i.message)
            .collect()
    };
    assert_eq!(ids(&mut fx, "a"), vec![qa, again]);
    assert_eq!(ids(&mut fx, "b"), vec![qb, ab]);
    // `replaces` names a user message of the answer's own thread.
    let before = fx.export();
    for (m, why) in [
        (
            NewMessage::assistant("x").in_thread("b").replacing(qa),
            "another thread's question",
        ),
        (
            NewMessage::assistant("x").in_thread("a").replacing(again),
            "an answer",
        ),
        (
            NewMessage::assistant("x").in_thread("a").replacing(99),
            "no message",
        ),
        (
            NewMessage::user("x").in_thread("a").replacing(qa),
            "a user message replacing",
        ),
    ] {
        assert!(
            matches!(fx.try_add(m), Err(Error::InvalidInput(_))),
            "{why} is refused"
        );
    }
    assert_eq!(fx.export(), before, "a refused add writes nothing");
}

#[test]
fn replaced_messages_survive_export_import_and_a_replay() {
    let mut fx = Fx::new(Config::default());
    let q = fx.user("Name a colour.").message;
    fx.assistant("Red.");
    let a = fx.add(NewMessage::assistant("Blue.").replacing(q)).message;
    let export = fx.export();
    assert!(export.contains("\"replaces\""), "{export}");
    assert!(
        !export.contains("replaced_by"),
        "the log stores the new answer's replaces only"
    );
    let mut copy = Fx::new(Config::default());
    block_on(copy.memory.import(&export)).expect("import");
    assert_eq!(copy.messages(), fx.messages());
    assert_eq!(shown(&mut copy), vec![q, a]);
    let mut replay = fx.reopen();
    assert_eq!(replay.messages(), fx.messages());
    // A log that stores `replaced_by` itself is refused: the fold derives it.
    let forged = export.replacen(
        "\"content\":\"Red.\"",
        "\"content\":\"Red.\",\"replaced_by\":3",
        1,
    );
    assert_ne!(forged, export);
    let mut bad = Fx::new(Config::default());
    assert!(block_on(bad.memory.import(&forged)).is_err());
}

#[test]
fn a_log_without_replacements_reads_as_before() {
    // Every message of an old log lacks both fields: each is shown, and the
    // export is byte for byte what it was.
    let mut fx = Fx::new(Config::default());
    fx.user("Name a colour.");
    fx.assistant("Red.");
    let export = fx.export();
    assert!(!export.contains("replace"));
    let mut copy = Fx::new(Config::default());
    block_on(copy.memory.import(&export)).expect("import");
    assert_eq!(replaced(&mut copy), vec![None, None]);
    assert_eq!(shown(&mut copy), vec![1, 2]);
    assert_eq!(copy.export(), export);
}

#[test]
fn erasing_a_replaced_answer_or_its_thread_leaves_the_rest_as_it_was() {
    let mut fx = Fx::new(Config::default());
    let q = fx
        .add(NewMessage::user("Name a colour.").in_thread("t"))
        .message;
    let red = fx.add(NewMessage::assistant("Red.").in_thread("t")).message;
    let blue = fx
        .add(NewMessage::assistant("Blue.").in_thread("t").replacing(q))
        .message;
    block_on(fx.memory.erase(Target::Message(red))).expect("erase");
    let ids: Vec<u64> = block_on(fx.memory.view_in("t"))
        .unwrap()
        .items
        .iter()
        .filter_map(|i| i.message)
        .collect();
    assert_eq!(ids, vec![q, blue]);
    // The log rewritten for the erasure replays to the same memory.
    assert_eq!(fx.reopen().messages(), fx.messages());
    block_on(fx.memory.erase(Target::Thread("t".into()))).expect("erase thread");
    assert_eq!(fx.reopen().messages(), fx.messages());
    let threads = block_on(fx.memory.threads()).unwrap();
    assert!(threads.iter().all(|t| t.thread != "t"), "{threads:?}");
}
