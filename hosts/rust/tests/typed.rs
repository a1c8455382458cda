//! Every export of the component's `memory` resource has a typed method on
//! `Engram`, each returning what the raw binding call returns; the engram
//! error comes out of `wasmtime::Error` with `MemoryError::from_wasmtime`.
//! The memory: the offline fixture's 20 messages on the offline model (one
//! episode sealed with facts, entities, a recall block).

mod common;

use common::{component, repo};
use engram_wasmtime_host::{
    Engram, EraseTarget, Host, MemStore, MemoryError, ModelChoice, NewMessage, RecallItem,
    RecallKind, Role, SearchFilter, SearchOptions, ToolCall,
};
use serde_json::Value;

fn role(r: &str) -> Role {
    match r {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        "tool" => Role::Tool,
        other => panic!("role {other}"),
    }
}

/// The offline fixture replayed into a fresh memory over `store`.
fn replayed(store: &MemStore, namespace: &str) -> Engram {
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("hosts/python/fixtures/offline_views.json"))
            .expect("the offline fixture"),
    )
    .expect("JSON");
    let steps = fixture["steps"].as_array().expect("steps");
    let (engine, component) = component();
    let host = Host::with_choice(
        steps[0]["at"].as_i64().unwrap(),
        store.clone(),
        ModelChoice::Offline,
    );
    let mut memory = Engram::open(
        engine,
        component,
        host,
        namespace,
        &fixture["config"].to_string(),
    )
    .expect("opens");
    for step in steps {
        memory.host().now_ms = step["at"].as_i64().unwrap();
        let m = &step["message"];
        let mut message = NewMessage::new(
            role(m["role"].as_str().unwrap()),
            m["content"].as_str().unwrap_or(""),
        );
        message.tool_call_id = m["tool_call_id"].as_str().map(String::from);
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            message.tool_calls.push(ToolCall {
                id: c["id"].as_str().unwrap().into(),
                name: c["name"].as_str().unwrap().into(),
                arguments: c["arguments"].as_str().unwrap().into(),
            });
        }
        memory.add_message(&message).expect("add");
    }
    memory
}

#[test]
fn every_export_has_a_typed_method_returning_what_the_binding_returns() {
    let store = MemStore::new();
    let mut memory = replayed(&store, "typed");

    let facts = memory.facts().expect("facts");
    assert!(!facts.is_empty(), "the replay noted facts");
    let raw = memory.call(|m, s, r| m.call_facts(s, r)).unwrap();
    assert_eq!(format!("{facts:?}"), format!("{raw:?}"));

    let entities = memory.entities().expect("entities");
    assert!(!entities.is_empty());
    let raw = memory.call(|m, s, r| m.call_entities(s, r)).unwrap();
    assert_eq!(format!("{entities:?}"), format!("{raw:?}"));

    let episodes = memory.episodes().expect("episodes");
    assert!(episodes.len() >= 2);
    let raw = memory.call(|m, s, r| m.call_episodes(s, r)).unwrap();
    assert_eq!(format!("{episodes:?}"), format!("{raw:?}"));

    let traces = memory.traces().expect("traces");
    let raw = memory.call(|m, s, r| m.call_traces(s, r)).unwrap();
    assert_eq!(format!("{traces:?}"), format!("{raw:?}"));

    let fades = memory.fades().expect("fades");
    let raw = memory.call(|m, s, r| m.call_fades(s, r)).unwrap();
    assert_eq!(format!("{fades:?}"), format!("{raw:?}"));

    let recalls = memory.recalls().expect("recalls");
    let raw = memory.call(|m, s, r| m.call_recalls(s, r)).unwrap();
    assert_eq!(format!("{recalls:?}"), format!("{raw:?}"));

    let sentence = facts[0].sentence.clone();
    let hits = memory.search(&sentence, None).expect("search");
    assert!(!hits.is_empty(), "a fact's own sentence finds it");
    let options = || SearchOptions {
        limit: 3,
        walk: false,
        include_in_view: true,
        budget_tokens: None,
        filter: None,
    };
    let some = memory.search(&sentence, Some(options())).expect("search");
    assert!(!some.is_empty() && some.len() <= 3);
    let raw = memory
        .call(|m, s, r| m.call_search(s, r, &sentence, Some(&options())))
        .unwrap();
    assert_eq!(format!("{some:?}"), format!("{raw:?}"));

    // hit-text: the whole text of each hit (a fact's is its sentence).
    for hit in &hits {
        let text = memory.hit_text(hit.item).expect("hit text");
        let raw = memory
            .call(|m, s, r| m.call_hit_text(s, r, hit.item))
            .unwrap();
        assert_eq!(text, raw);
        assert!(text.len() >= hit.text.len(), "{text:?} {:?}", hit.text);
    }
    let missing = memory.hit_text(RecallItem::Passage(u64::MAX)).unwrap_err();
    assert!(matches!(
        MemoryError::from_wasmtime(&missing),
        Some(MemoryError::InvalidInput(_))
    ));

    let fact = memory.explain_fact(facts[0].id).expect("explain fact");
    let raw = memory
        .call(|m, s, r| m.call_explain_fact(s, r, facts[0].id))
        .unwrap();
    assert_eq!(format!("{fact:?}"), format!("{raw:?}"));
    let episode = memory
        .explain_episode(episodes[0].id)
        .expect("explain episode");
    let raw = memory
        .call(|m, s, r| m.call_explain_episode(s, r, episodes[0].id))
        .unwrap();
    assert_eq!(format!("{episode:?}"), format!("{raw:?}"));
    let recall = memory.explain_recall(facts[0].id).expect("explain recall");
    let raw = memory
        .call(|m, s, r| m.call_explain_recall(s, r, facts[0].id))
        .unwrap();
    assert_eq!(format!("{recall:?}"), format!("{raw:?}"));

    let tool = memory.note_tool().expect("note tool");
    assert_eq!(tool["function"]["name"], "note", "{tool}");

    let messages = memory.messages().expect("messages");
    let at = messages[3].at;
    let past = memory.view_at(at).expect("view at");
    let raw = memory.call(|m, s, r| m.call_view_at(s, r, at)).unwrap();
    assert_eq!(format!("{past:?}"), format!("{raw:?}"));
    let rendered = memory.render_openai_at(at).expect("render at");
    assert!(rendered.as_array().is_some_and(|a| !a.is_empty()));

    // Export and import, whole and in parts.
    let export = memory.export().expect("export");
    let first = memory.export_part(None, 1 << 30).expect("one part");
    assert_eq!(first.text, export);
    assert!(first.next.is_none());
    let copy_store = MemStore::new();
    let (engine, component) = component();
    let mut copy = Engram::open(
        engine,
        component,
        Host::with_choice(at, copy_store.clone(), ModelChoice::Offline),
        "copy",
        "{}",
    )
    .expect("opens");
    let half = export.len() / 2;
    let cut = (half..export.len())
        .find(|&i| export.is_char_boundary(i))
        .unwrap();
    copy.import_piece(&export[..cut]).expect("piece");
    assert_eq!(copy.import_discard().expect("discard"), cut as u64);
    copy.import_piece(&export[..cut]).expect("piece");
    copy.import_piece(&export[cut..]).expect("piece");
    copy.import_finish().expect("finish");
    assert_eq!(copy.export().expect("export"), export);
    let mut again = Engram::open(
        engine,
        component,
        Host::with_choice(at, MemStore::new(), ModelChoice::Offline),
        "again",
        "{}",
    )
    .expect("opens");
    again.import(&export).expect("import");
    assert_eq!(
        format!("{:?}", again.messages().expect("messages")),
        format!("{messages:?}")
    );

    // abandon-tool-call: waiting calls refuse a user message until they are
    // abandoned, one by the typed method, one by the binding; each adds the
    // call's tool output (the message `added.message` names).
    let mut call = NewMessage::new(Role::Assistant, "");
    for id in ["call_typed", "call_raw"] {
        call.tool_calls.push(ToolCall {
            id: id.into(),
            name: "weather".into(),
            arguments: "{}".into(),
        });
    }
    memory.add_message(&call).expect("tool calls");
    let user = NewMessage::new(Role::User, "Never mind.");
    let refused = memory.add_message(&user).unwrap_err();
    match MemoryError::from_wasmtime(&refused) {
        Some(MemoryError::InvalidInput(why)) => {
            assert!(why.contains("abandon_tool_call"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    let typed = memory.abandon_tool_call("call_typed").expect("abandon");
    let raw = memory
        .call(|m, s, r| m.call_abandon_tool_call(s, r, "call_raw"))
        .unwrap();
    assert_eq!(raw.message, typed.message + 1);
    let outputs = memory.messages().expect("messages");
    for (added, id) in [(&typed, "call_typed"), (&raw, "call_raw")] {
        let m = outputs.iter().find(|m| m.id == added.message).unwrap();
        assert_eq!(m.tool_call_id.as_deref(), Some(id));
    }
    assert!(
        memory.abandon_tool_call("call_typed").is_err(),
        "no longer waiting"
    );
    memory.add_message(&user).expect("accepted once abandoned");

    let erased = memory.erase(EraseTarget::Fact(facts[0].id)).expect("erase");
    assert!(!erased.facts.is_empty(), "{erased:?}");
    let stats = memory.stats().expect("stats");
    assert_eq!(
        stats.messages as usize,
        memory.messages().expect("messages").len()
    );
}

#[test]
fn the_typed_error_comes_out_of_wasmtime_error() {
    let store = MemStore::new();
    let mut memory = common::open_offline(&store, "errors");
    let err = memory.explain_fact(99).expect_err("no fact 99");
    let typed = MemoryError::from_wasmtime(&err).expect("a memory error");
    assert!(matches!(typed, MemoryError::InvalidInput(_)), "{typed:?}");
    assert_eq!(typed.code(), "invalid-input");
    assert!(!typed.message().is_empty());
    // The same through downcast_ref.
    assert!(matches!(
        err.downcast_ref::<MemoryError>(),
        Some(MemoryError::InvalidInput(_))
    ));
    // A note with no facts is refused too; an I/O error of export_to is not
    // a memory error.
    struct Broken;
    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    memory
        .add_message(&NewMessage::new(Role::User, "Hello."))
        .expect("add");
    let err = memory
        .export_to(&mut Broken, 1 << 20)
        .expect_err("disk full");
    assert!(MemoryError::from_wasmtime(&err).is_none(), "{err:#}");
}

#[test]
fn the_wasmtime_it_uses_is_reexported() {
    // An engine built through the re-export is the engine `Engram::open`
    // takes (compiled for speed, not run time, as in tests/common).
    use engram_wasmtime_host::wasmtime;
    let mut config = wasmtime::Config::new();
    config.cranelift_opt_level(wasmtime::OptLevel::None);
    let engine = wasmtime::Engine::new(&config).expect("engine");
    let path = common::component_path();
    // (The compiled form tests/common keeps: the same engine configuration.)
    let component: wasmtime::component::Component = common::compiled(&engine, &path);
    let mut memory = Engram::open(
        &engine,
        &component,
        Host::offline(1_772_445_600_000),
        "reexport",
        "{}",
    )
    .expect("opens");
    memory
        .add_message(&NewMessage::new(Role::User, "Hello.").with_client_id("m1"))
        .expect("add");
    assert!(
        memory
            .add_message(&NewMessage::new(Role::User, "Hello.").with_client_id("m1"))
            .expect("retry")
            .duplicate
    );
}

#[test]
fn the_crates_wit_is_the_repositorys() {
    let ours = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("wit/engram.wit"),
    )
    .expect("the crate's copy");
    let repos = std::fs::read_to_string(repo().join("wit/engram.wit")).expect("the repository's");
    assert!(
        ours == repos,
        "hosts/rust/wit/engram.wit differs from wit/engram.wit: copy it \
         (cp wit/engram.wit hosts/rust/wit/engram.wit)"
    );
}

#[test]
fn metadata_comes_back_and_a_search_filter_narrows_the_hits() {
    let store = MemStore::new();
    let mut memory = replayed(&store, "meta");
    let at = memory.messages().expect("messages").last().unwrap().at;
    memory.host().now_ms = at + 60_000;
    let tagged = NewMessage::new(Role::User, "Quokka sightings near the harbour.")
        .with_metadata(r#"{"source":"slack","n":[1,{"a":null}]}"#);
    memory.add_message(&tagged).expect("add");
    let messages = memory.messages().expect("messages");
    let last = messages.last().unwrap();
    let meta: Value = serde_json::from_str(last.metadata.as_deref().unwrap()).unwrap();
    assert_eq!(
        meta,
        serde_json::json!({"source": "slack", "n": [1, {"a": null}]})
    );
    assert!(messages[..messages.len() - 1]
        .iter()
        .all(|m| m.metadata.is_none()));

    let filter = |metadata: &str| SearchOptions {
        limit: 10,
        walk: false,
        include_in_view: true,
        budget_tokens: None,
        filter: Some(SearchFilter {
            thread: None,
            from: None,
            to: None,
            kinds: vec![RecallKind::Message],
            entity: None,
            metadata: Some(metadata.into()),
        }),
    };
    let hits = memory
        .search("Quokka harbour", Some(filter(r#"{"source":"slack"}"#)))
        .expect("search");
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.sources == vec![last.id]), "{hits:?}");
    let none = memory
        .search("Quokka harbour", Some(filter(r#"{"source":"email"}"#)))
        .expect("search");
    assert!(none.is_empty());
    // Bad metadata and a bad filter are invalid input; nothing is written.
    let before = memory.export().expect("export");
    for bad in ["[1]", "not json", "\"text\""] {
        let e = memory
            .add_message(&NewMessage::new(Role::User, "Hi.").with_metadata(bad))
            .expect_err("refused");
        assert!(
            matches!(
                MemoryError::from_wasmtime(&e),
                Some(MemoryError::InvalidInput(_))
            ),
            "{bad}: {e}"
        );
    }
    let e = memory
        .search("Quokka", Some(filter("[]")))
        .expect_err("refused");
    assert!(matches!(
        MemoryError::from_wasmtime(&e),
        Some(MemoryError::InvalidInput(_))
    ));
    assert_eq!(memory.export().expect("export"), before);
}
