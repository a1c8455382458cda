//! A tool call is never separated from its output: a tool output is never
//! the first message of an episode, even when the judgment would cut there,
//! and a tool output with no matching call is refused, changing nothing.

mod common;

use common::*;
use engram::testing::block_on;
use engram::Config;
use engram::Error;
use engram::NewMessage;
use engram::Role;
use engram::Task;
use engram::ToolCall;

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: r#"{"q":"x"}"#.into(),
    }
}

/// Every message first of an episode: checks none is a tool output.
fn assert_no_episode_starts_with_a_tool_output(fx: &mut Fx) {
    let msgs = fx.messages();
    for (first, last) in fx.ranges() {
        assert_ne!(
            msgs[(first - 1) as usize].role,
            Role::Tool,
            "episode {first}-{last}"
        );
    }
    let open = fx.stats().open_messages;
    if open > 0 {
        let first_open = &msgs[msgs.len() - open];
        assert!(first_open.role != Role::Tool || msgs.len() == open);
    }
}

#[test]
fn a_tool_output_never_starts_an_episode_even_when_judged_so() {
    let mut fx = Fx::new(Config::default());
    // The judge says "new concept" to everything, at full confidence.
    segment_by(&fx.model, |_| 0.99);
    fx.user(&sized(
        "What is the weather in Lisbon and in Porto tomorrow?",
        30,
    ));
    fx.add(NewMessage::tool_calls(
        sized("Let me check both.", 30),
        vec![call("c1", "weather"), call("c2", "weather")],
    ));
    fx.add(NewMessage::tool_result(
        "c1",
        sized("Lisbon: 21 C, sunny.", 30),
    ));
    fx.add(NewMessage::tool_result(
        "c2",
        sized("Porto: 17 C, cloudy.", 30),
    ));
    fx.assistant(&sized("Lisbon will be warmer and sunnier than Porto.", 30));
    fx.add(NewMessage::tool_calls(
        sized("Checking flights too.", 30),
        vec![call("c3", "flights")],
    ));
    fx.add(NewMessage::tool_result(
        "c3",
        sized("Two direct flights at 9:00 and 18:30.", 30),
    ));
    fx.user(&sized("Book the 9:00 one.", 30));

    // Cuts before every user or assistant message, never before an output.
    assert_eq!(fx.ranges(), vec![(1, 1), (2, 4), (5, 5), (6, 7)]);
    assert_no_episode_starts_with_a_tool_output(&mut fx);
    // Tool outputs were never even judged.
    let msgs = fx.messages();
    for m in &msgs {
        if m.role == Role::Tool {
            assert_eq!(m.boundary, None, "message {}", m.id);
        }
    }
    assert_eq!(fx.model.calls_of(Task::Segment).len(), 4);
}

#[test]
fn nothing_is_cut_while_a_call_waits_for_its_output() {
    let mut fx = Fx::new(Config::default());
    segment_by(&fx.model, |_| 0.99);
    fx.user(&sized("Find me a hotel.", 30));
    fx.add(NewMessage::tool_calls(
        sized("Searching.", 30),
        vec![call("h1", "hotels"), call("h2", "hotels")],
    ));
    fx.add(NewMessage::tool_result(
        "h1",
        sized("Casa Alfama, 95 EUR.", 30),
    ));
    fx.add(NewMessage::tool_result(
        "h2",
        sized("Hotel Baixa, 120 EUR.", 30),
    ));
    // Only the call (message 2) waits for a judgment: none is needed for the
    // first message or the outputs, where no cut may go.
    assert_eq!(fx.pending().unjudged, vec![2]);
    let judged: Vec<bool> = fx.messages().iter().map(|m| m.judged).collect();
    assert_eq!(judged, vec![true, false, true, true]);
    assert!(fx.ranges().is_empty());
    // Once answered, the next message may cut again: judged with the call's
    // by the maintain.
    fx.assistant(&sized("Casa Alfama it is.", 30));
    assert_eq!(fx.pending().unjudged, vec![2, 5]);
    let m = fx.maintain();
    assert_eq!(m.judged, vec![2, 5]);
    assert_eq!(m.formed, vec![1, 2]);
    assert_eq!(fx.ranges(), vec![(1, 1), (2, 4)]);
    let b: Vec<Option<f32>> = fx.messages().iter().map(|m| m.boundary).collect();
    assert_eq!(b, vec![None, Some(0.99), None, None, Some(0.99)]);
    assert_eq!(fx.model.calls_of(Task::Segment).len(), 2);
}

/// Whether `messages` (an OpenAI `messages` array) is a request the OpenAI
/// rules accept: every assistant message with tool calls is followed by one
/// tool message per call before anything else; no other tool message.
fn valid_openai(messages: &[serde_json::Value]) -> bool {
    let mut waiting: Vec<String> = Vec::new();
    for m in messages {
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default();
            match waiting.iter().position(|w| w == id) {
                Some(i) => {
                    waiting.remove(i);
                }
                None => return false,
            }
        } else {
            if !waiting.is_empty() {
                return false;
            }
            if let Some(calls) = m["tool_calls"].as_array() {
                waiting = calls
                    .iter()
                    .map(|c| c["id"].as_str().unwrap_or_default().to_string())
                    .collect();
            }
        }
    }
    true
}

#[test]
fn a_message_after_an_unanswered_call_is_refused_naming_abandon_tool_call() {
    let mut fx = Fx::new(Config::default());
    fx.user(&sized("Find me a hotel.", 30));
    fx.add(NewMessage::tool_calls(
        sized("Searching.", 30),
        vec![call("h1", "hotels"), call("h2", "hotels")],
    ));
    fx.add(NewMessage::tool_result("h1", "Casa Alfama, 95 EUR."));
    let before = fx.store.dump();
    for m in [
        NewMessage::user("Never mind, trains."),
        NewMessage::assistant("This can take a moment."),
        NewMessage::system("Be brief."),
    ] {
        match fx.try_add(m.clone()) {
            Err(Error::InvalidInput(msg)) => assert!(
                msg.contains("\"h2\"")
                    && msg.contains("abandon_tool_call")
                    && msg.contains("abandonToolCall"),
                "{msg}"
            ),
            other => panic!("{m:?}: expected InvalidInput, got {other:?}"),
        }
    }
    assert_eq!(fx.store.dump(), before, "nothing was written");
}

#[test]
fn abandon_tool_call_closes_a_call_with_no_output_and_the_chat_stays_valid() {
    let mut fx = Fx::new(Config::default());
    segment_by(&fx.model, |_| 0.99);
    fx.user(&sized("Find me a hotel.", 30));
    fx.add(NewMessage::tool_calls(
        sized("Searching.", 30),
        vec![call("h1", "hotels")],
    ));
    let added = block_on(fx.memory.abandon_tool_call("h1")).expect("abandoned");
    assert_eq!(added.message, 3);
    let m = &fx.messages()[2];
    assert_eq!(m.role, Role::Tool);
    assert_eq!(m.tool_call_id.as_deref(), Some("h1"));
    assert_eq!(m.content, engram::types::message::ABANDONED_OUTPUT);
    // The conversation goes on, and the view is a valid request.
    fx.user(&sized("Never mind, let's talk about trains.", 30));
    assert_eq!(fx.ranges(), vec![(1, 1), (2, 3)]);
    let rendered = fx.view().to_openai();
    assert!(valid_openai(&rendered), "{rendered:#?}");
    // A late output, or abandoning again, is refused and changes nothing.
    let before = fx.store.dump();
    let late = fx.try_add(NewMessage::tool_result("h1", sized("Casa Alfama.", 30)));
    assert!(matches!(late, Err(Error::InvalidInput(_))), "{late:?}");
    for id in ["h1", "nope"] {
        let again = block_on(fx.memory.abandon_tool_call(id));
        assert!(
            matches!(&again, Err(Error::InvalidInput(m)) if m.contains("not waiting")),
            "{again:?}"
        );
    }
    assert_eq!(fx.store.dump(), before);
    for i in 0..6 {
        fx.assistant(&sized(&format!("Trains, part {i}."), 30));
        fx.user(&sized(&format!("And then {i}?"), 30));
    }
    assert!(
        fx.ranges().len() > 6,
        "segmentation goes on: {:?}",
        fx.ranges()
    );
}

/// A memory imported from a log written before unanswered calls were
/// refused: the call's output never came (message 3 is a plain assistant
/// remark) and the user went on.
fn old_log_with_an_unanswered_call() -> Fx {
    let mut fx = Fx::new(Config::default());
    fx.user("Find me a hotel.");
    fx.add(NewMessage::tool_calls("", vec![call("h1", "hotels")]));
    fx.add(NewMessage::tool_result("h1", "Casa Alfama."));
    fx.user("Never mind, trains.");
    let mut export: serde_json::Value = serde_json::from_str(&fx.export()).unwrap();
    // Message 3 becomes a plain assistant remark: the call has no output.
    for entry in export["log"].as_array_mut().unwrap() {
        for e in entry["events"].as_array_mut().unwrap() {
            if e["type"] == "message" && e["id"] == 3 {
                e["role"] = "assistant".into();
                e.as_object_mut().unwrap().remove("tool_call_id");
            }
        }
    }
    let mut old = Fx::with(
        "old",
        engram::testing::MemoryStore::new(),
        fx.model.clone(),
        fx.clock.clone(),
        Config::default(),
    );
    block_on(old.memory.import(&export.to_string())).expect("imported");
    old
}

#[test]
fn an_old_log_with_an_unanswered_call_renders_a_valid_chat() {
    // Its rendering closes the call.
    let mut old = old_log_with_an_unanswered_call();
    let rendered = old.view().to_openai();
    assert!(valid_openai(&rendered), "{rendered:#?}");
    let closed = rendered
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a closing output");
    assert_eq!(closed["tool_call_id"], "h1");
    assert_eq!(closed["content"], engram::types::message::ABANDONED_OUTPUT);
}

#[test]
fn an_import_with_a_tool_output_whose_call_is_missing_is_refused() {
    let mut fx = Fx::new(Config::default());
    fx.user("Weather?");
    fx.add(NewMessage::tool_calls("", vec![call("c1", "weather")]));
    fx.add(NewMessage::tool_result("c1", "Sunny."));
    fx.assistant("Sunny it is.");
    let mut export: serde_json::Value = serde_json::from_str(&fx.export()).unwrap();
    // The call disappears: message 3 answers nothing.
    for entry in export["log"].as_array_mut().unwrap() {
        for e in entry["events"].as_array_mut().unwrap() {
            if e["type"] == "message" && e["id"] == 2 {
                e.as_object_mut().unwrap().remove("tool_calls");
                e["content"] = "Let me look.".into();
            }
        }
    }
    let mut other = Fx::with(
        "other",
        engram::testing::MemoryStore::new(),
        fx.model.clone(),
        fx.clock.clone(),
        Config::default(),
    );
    let err = block_on(other.memory.import(&export.to_string())).expect_err("refused");
    assert!(
        matches!(&err, Error::InvalidInput(m) if m.contains("message 3") && m.contains("\"c1\"")),
        "{err}"
    );
    assert!(other.messages().is_empty());
}

#[test]
fn size_cuts_never_separate_a_call_from_its_output() {
    // Small episodes force size cuts; outputs of 60 tokens make the stretch
    // grow fastest at the positions that must not be cut.
    let config = Config {
        target_episode_tokens: 80,
        max_episode_tokens: 160,
        ..Config::default()
    };
    let mut fx = Fx::new(config);
    segment_by(&fx.model, |_| 0.3);
    for i in 0..12 {
        let id = format!("call{i}");
        fx.user(&sized(&format!("question {i}"), 20));
        fx.add(NewMessage::tool_calls(
            sized("looking", 20),
            vec![call(&id, "search")],
        ));
        fx.add(NewMessage::tool_result(&id, sized("result", 60)));
        fx.assistant(&sized(&format!("answer {i}"), 20));
    }
    assert!(fx.ranges().len() >= 6, "{:?}", fx.ranges());
    assert_no_episode_starts_with_a_tool_output(&mut fx);
    // Every call sits in the same episode as its output.
    let msgs = fx.messages();
    for (first, last) in fx.ranges() {
        let inside = &msgs[(first - 1) as usize..last as usize];
        for m in inside.iter().filter(|m| m.role == Role::Tool) {
            let id = m.tool_call_id.as_ref().unwrap();
            assert!(inside
                .iter()
                .any(|c| c.tool_calls.iter().any(|c| &c.id == id)));
        }
    }
}

#[test]
fn a_tool_output_with_no_matching_call_is_refused_and_changes_nothing() {
    let mut fx = Fx::new(Config::default());
    fx.user(&sized("Weather?", 20));
    fx.add(NewMessage::tool_calls("", vec![call("c1", "weather")]));
    fx.add(NewMessage::tool_result("c1", "Sunny."));
    let before = fx.export();
    let writes = fx.store.writes();

    for bad in [
        NewMessage::tool_result("nope", "Output for a call never made."),
        // Already answered.
        NewMessage::tool_result("c1", "A second output for c1."),
        // A tool message without the id it answers.
        NewMessage {
            tool_call_id: None,
            ..NewMessage::tool_result("c1", "x")
        },
    ] {
        match fx.try_add(bad) {
            Err(Error::InvalidInput(msg)) => assert!(!msg.is_empty()),
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }
    assert_eq!(fx.export(), before);
    assert_eq!(fx.store.writes(), writes, "nothing was written");
    assert_eq!(fx.messages().len(), 3);
    // The memory still works.
    fx.assistant("Sunny it is.");
    assert_eq!(fx.messages().len(), 4);
}

#[test]
fn a_reused_or_misplaced_call_id_is_refused() {
    let mut fx = Fx::new(Config::default());
    fx.user("Weather?");
    fx.add(NewMessage::tool_calls("", vec![call("c1", "weather")]));
    let before = fx.export();
    let bad = [
        // The id is still waiting.
        NewMessage::tool_calls("", vec![call("c1", "weather")]),
        // Twice in one message.
        NewMessage::tool_calls("", vec![call("c2", "a"), call("c2", "b")]),
        // Only assistants call tools.
        NewMessage {
            tool_calls: vec![call("c3", "x")],
            ..NewMessage::user("hi")
        },
        // Only tool messages answer calls.
        NewMessage {
            tool_call_id: Some("c1".into()),
            ..NewMessage::assistant("hi")
        },
        // A call needs an id and a name.
        NewMessage::tool_calls("", vec![call("", "weather")]),
        NewMessage::tool_calls("", vec![call("c4", "")]),
    ];
    for m in bad {
        assert!(
            matches!(fx.try_add(m.clone()), Err(Error::InvalidInput(_))),
            "{m:?}"
        );
    }
    assert_eq!(fx.export(), before);
}

#[test]
fn the_responses_rendering_splits_tool_calls_into_items_with_engrams_ids() {
    let mut fx = Fx::new(Config::default());
    fx.user("Weather in Lisbon and Porto?");
    fx.add(NewMessage::tool_calls(
        "Checking both.",
        vec![call("w1", "weather"), call("w2", "weather")],
    ));
    fx.add(NewMessage::tool_result("w1", "Sunny."));
    fx.add(NewMessage::tool_result("w2", "Rain."));
    fx.add(NewMessage::tool_calls("", vec![call("w3", "forecast")]));
    fx.add(NewMessage::tool_result("w3", "Dry tomorrow."));
    fx.assistant("Sunny in Lisbon, rain in Porto.");
    let view = fx.view();
    let items = view.to_responses();
    let messages: Vec<_> = items
        .iter()
        .filter(|i| i.get("id").is_some())
        .map(|i| (i["type"].as_str().unwrap(), i["id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        messages,
        vec![
            ("message", "msg_engram_1"),
            ("message", "msg_engram_2"),
            ("function_call", "fc_engram_2_0"),
            ("function_call", "fc_engram_2_1"),
            ("function_call_output", "fco_engram_3"),
            ("function_call_output", "fco_engram_4"),
            ("function_call", "fc_engram_5_0"),
            ("function_call_output", "fco_engram_6"),
            ("message", "msg_engram_7"),
        ],
        "{items:#?}"
    );
    let by_id = |id: &str| items.iter().find(|i| i["id"] == id).unwrap().clone();
    assert_eq!(by_id("msg_engram_1")["role"], "user");
    assert_eq!(
        by_id("msg_engram_1")["content"],
        "Weather in Lisbon and Porto?"
    );
    assert_eq!(
        by_id("msg_engram_2")["content"][0]["text"],
        "Checking both."
    );
    assert_eq!(by_id("msg_engram_2")["content"][0]["type"], "output_text");
    let second = by_id("fc_engram_2_1");
    assert_eq!(second["call_id"], "w2");
    assert_eq!(second["name"], "weather");
    assert_eq!(by_id("fco_engram_4")["call_id"], "w2");
    assert_eq!(by_id("fco_engram_4")["output"], "Rain.");
    // The one-line rendering and the items say the same: every OpenAI
    // message's text and calls are in the items, in order.
    let openai = view.to_openai();
    let calls: usize = openai
        .iter()
        .map(|m| m["tool_calls"].as_array().map_or(0, Vec::len))
        .sum();
    let fc = items
        .iter()
        .filter(|i| i["type"] == "function_call")
        .count();
    assert_eq!(calls, fc);
    // Items that are not stored messages (the facts block, recall) carry no id.
    for it in items.iter().filter(|i| i.get("id").is_none()) {
        assert_eq!(it["role"], "system", "{it}");
    }
}

#[test]
fn the_responses_rendering_closes_an_unanswered_call_without_an_id() {
    let mut old = old_log_with_an_unanswered_call();
    let items = old.view().to_responses();
    let closing = items
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .expect("a closing output");
    assert_eq!(closing["call_id"], "h1");
    assert_eq!(closing["output"], engram::types::message::ABANDONED_OUTPUT);
    assert!(closing.get("id").is_none(), "{closing}");
}
