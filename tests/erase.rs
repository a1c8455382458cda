//! Erasure on request: what is erased is gone from every stored value and
//! from the export (text and embedding), what depended on it goes with it,
//! the memory reopens to the same state, another namespace in the same store
//! is untouched byte for byte, bad input and a failing store change nothing,
//! and `destroy` removes every key of the namespace.

mod common;

use std::collections::BTreeMap;

use common::*;
use engram::base::bytes;
use engram::testing::{block_on, ManualClock, MemoryStore, ScriptedModel};
use engram::types::erase::Target;
use engram::Config;
use engram::Error;
use engram::Memory;
use engram::NewMessage;
use engram::OfflineModel;
use engram::ToolCall;
use serde_json::{json, Value};

/// Everything a host can read of a memory (the handle's model health left
/// out), as one JSON value.
fn readable(fx: &mut Fx) -> Value {
    let mut stats = serde_json::to_value(fx.stats()).unwrap();
    stats["model"] = Value::Null;
    json!({
        "messages": fx.messages(),
        "episodes": fx.episodes(),
        "facts": fx.facts(),
        "entities": fx.entities(),
        "traces": fx.traces(),
        "view": fx.view(),
        "stats": stats,
    })
}

/// A conversation with fades, facts, a contradiction (Porto retires
/// Lisbon) and a tool exchange, in namespace `ns` of `store`.
fn rich(ns: &str, store: MemoryStore) -> Fx {
    let model = ScriptedModel::new();
    no_recall(&model);
    let mut fx = Fx::with(ns, store, model, ManualClock::at(T0), config(400));
    standard_segment(&fx.model);
    traces_by(&fx.model, |fact, _, text| {
        text.split_whitespace()
            .any(|w| w.len() > 3 && fact.contains(w))
    });
    reconcile_by(&fx.model, |new, held| {
        (new.contains("Porto") && held.contains("Lisbon")).then_some("contradicts")
    });
    notes_for(
        &fx.model,
        vec![
            (
                "lisbon",
                vec![fact(
                    "Alice",
                    "lives in",
                    "Lisbon",
                    "Alice lives in Lisbon.",
                )],
            ),
            (
                "porto",
                vec![fact("Alice", "lives in", "Porto", "Alice moved to Porto.")],
            ),
            (
                "garden",
                vec![kind_fact(
                    engram::FactKind::Done,
                    "Gardenshed",
                    "got",
                    "Picketfence",
                    "The Gardenshed got a Picketfence.",
                )],
            ),
        ],
    );
    for t in ["lisbon", "garden"] {
        meta_turn(&mut fx, t);
    }
    fx.turn("taxes", 50, 50);
    fx.user(&sized(&format!("{NEW} weather"), 30));
    let call = ToolCall {
        id: "c1".into(),
        name: "forecastlookup".into(),
        arguments: "{\"city\":\"Quixotown\"}".into(),
    };
    fx.add(NewMessage::tool_calls("", vec![call]));
    fx.add(NewMessage::tool_result("c1", "Sunny in Quixotown."));
    fx.assistant(&sized("sunny", 30));
    for t in ["porto", "bikes", "dinner", "car", "music"] {
        fx.turn(t, 50, 50);
    }
    assert!(fx.stats().fades >= 3);
    fx
}

/// A turn as `Fx::turn` adds it, each message carrying metadata that names
/// it (`Meta{topic}User`, `Meta{topic}Reply`), so the store scan covers
/// metadata too.
fn meta_turn(fx: &mut Fx, topic: &str) {
    let meta = |who: &str| {
        let tag = format!("Meta{topic}{who}");
        json!({ "channel": tag, "nested": { "tags": [tag] } })
    };
    let user = sized(&format!("{NEW} {topic}"), 50);
    fx.add(NewMessage::user(user).with_metadata(meta("User")));
    fx.minutes(1);
    fx.add(NewMessage::assistant(sized(topic, 50)).with_metadata(meta("Reply")));
    fx.minutes(1);
}

/// The namespace's stored values, and the export.
fn stored(fx: &mut Fx) -> Vec<Vec<u8>> {
    let prefix = format!("engram/{}/", fx.namespace);
    let mut v: Vec<Vec<u8>> = fx
        .store
        .dump()
        .into_iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .map(|(_, v)| v)
        .collect();
    v.push(fx.export().into_bytes());
    v
}

/// The keys and values of namespaces other than `ns`.
fn others(store: &MemoryStore, ns: &str) -> BTreeMap<String, Vec<u8>> {
    let prefix = format!("engram/{ns}/");
    store
        .dump()
        .into_iter()
        .filter(|(k, _)| !k.starts_with(&prefix))
        .collect()
}

/// The byte patterns of a needle: its text and, for a whole vector in
/// base64 (as exports hold it), its f16 bytes as stored values hold it
/// (crate::bytes).
fn patterns(needle: &str) -> Vec<Vec<u8>> {
    let mut out = vec![needle.as_bytes().to_vec()];
    if let Ok(v) = bytes::decode(needle) {
        if !v.is_empty() && needle.len() >= 16 {
            let f16: Vec<u8> = v
                .iter()
                .flat_map(|&x| bytes::to_f16(x).to_le_bytes())
                .collect();
            out.push(f16);
        }
    }
    out
}

/// Fails when any stored value or the export holds one of `needles`.
fn assert_gone(fx: &mut Fx, needles: &[String]) {
    for value in stored(fx) {
        for n in needles {
            for (which, p) in patterns(n).into_iter().enumerate() {
                if let Some(at) = value.windows(p.len()).position(|w| w == p.as_slice()) {
                    panic!(
                        "{n:?} (pattern {which}) is still stored: …{}…",
                        String::from_utf8_lossy(
                            &value[at.saturating_sub(80)..(at + 80).min(value.len())]
                        )
                    );
                }
            }
        }
    }
}

/// The embeddings in base64 of their f32 bytes (`patterns` adds their f16
/// bytes). Whole vectors only: at f16 precision a value followed by zeros
/// recurs across the test embedder's sparse vectors, so a stretch of one is
/// not its own.
fn vector_needles(vectors: &[engram::types::embedding::Embedding]) -> Vec<String> {
    vectors
        .iter()
        .filter(|v| !v.is_empty())
        .map(|v| bytes::encode(&v.to_f32()))
        .collect()
}

/// The second handle (opened before the erase, caught up after it) and a
/// fresh one read exactly what the erasing handle reads.
fn assert_reopens_same(fx: &mut Fx, before_erase: &mut Fx) {
    let now = readable(fx);
    assert_eq!(readable(&mut fx.reopen()), now, "a fresh handle");
    let caught_up = readable(before_erase);
    if caught_up != now {
        std::fs::write(
            "/tmp/erase_now.json",
            serde_json::to_string_pretty(&now).unwrap(),
        )
        .unwrap();
        std::fs::write(
            "/tmp/erase_caught.json",
            serde_json::to_string_pretty(&caught_up).unwrap(),
        )
        .unwrap();
    }
    assert!(caught_up == now, "a handle that caught up");
}

/// The stored embeddings (base64) of the passages holding message `id`.
fn passage_vectors(fx: &mut Fx, id: u64) -> Vec<String> {
    let export: Value = serde_json::from_str(&fx.export()).unwrap();
    let mut out = Vec::new();
    for entry in export["log"].as_array().unwrap() {
        for e in entry["events"].as_array().unwrap() {
            if e["type"] != "passages_indexed" {
                continue;
            }
            for p in e["passages"].as_array().unwrap() {
                let (first, last) = (p["first"].as_u64().unwrap(), p["last"].as_u64().unwrap());
                let v = p["embedding"].as_str().unwrap();
                if (first..=last).contains(&id) && !v.is_empty() {
                    out.push(v.to_string());
                }
            }
        }
    }
    out
}

fn message_with(fx: &mut Fx, text: &str) -> engram::Message {
    fx.messages()
        .into_iter()
        .find(|m| m.content.contains(text))
        .unwrap_or_else(|| panic!("no message with {text:?}"))
}

fn erase(fx: &mut Fx, target: Target) -> engram::Erased {
    block_on(fx.memory.erase(target)).expect("erase")
}

#[test]
fn erase_message_leaves_no_byte_in_store() {
    let store = MemoryStore::new();
    let mut other = rich("other", store.clone());
    let mut fx = rich("test", store.clone());
    let mut early = fx.reopen();
    let untouched = others(&store, "test");
    let m = message_with(&mut fx, &format!("{NEW} lisbon"));
    let lisbon = fx
        .facts()
        .into_iter()
        .find(|f| f.sentence.contains("Lisbon"))
        .unwrap();
    let city = fx.entity_named("Lisbon");
    let passages = passage_vectors(&mut fx, m.id);
    assert!(!passages.is_empty(), "the episode was cut into passages");

    let erased = erase(&mut fx, Target::Message(m.id));
    assert_eq!(erased.messages, vec![m.id]);
    assert_eq!(erased.facts, vec![lisbon.id], "the fact its episode noted");
    assert_eq!(
        erased.entities,
        vec![city.id],
        "Lisbon is named by no fact now"
    );

    let mut needles = vec![
        m.content.clone(),
        "Lisbon".to_string(),
        "MetalisbonUser".to_string(),
    ];
    needles.extend(vector_needles(&[lisbon.embedding, city.embedding]));
    needles.extend(passages.iter().cloned());
    assert_gone(&mut fx, &needles);
    // What is not erased is still there: the reply of the same episode.
    assert!(fx
        .messages()
        .iter()
        .any(|k| k.content.starts_with("lisbon ")));
    let kept = &fx.messages()[m.id as usize - 1];
    assert!(kept.erased && kept.content.is_empty() && kept.tokens == 0);
    assert!(kept.metadata.is_none(), "its metadata is gone");
    let reply = &fx.messages()[m.id as usize];
    assert_eq!(
        reply.metadata.as_ref().unwrap()["channel"],
        "MetalisbonReply"
    );
    assert!(fx.view().items.iter().all(|i| i.message != Some(m.id)));
    assert!(fx.explain_fact(lisbon.id).summary.contains("erased"));
    assert_reopens_same(&mut fx, &mut early);
    assert_eq!(others(&store, "test"), untouched, "the other namespace");
    assert!(other.facts().iter().any(|f| f.sentence.contains("Lisbon")));
}

#[test]
fn erase_episode_takes_its_messages_and_facts() {
    let store = MemoryStore::new();
    rich("other", store.clone());
    let mut fx = rich("test", store.clone());
    let mut early = fx.reopen();
    let untouched = others(&store, "test");
    let m = message_with(&mut fx, &format!("{NEW} garden"));
    let episode = fx
        .episodes()
        .into_iter()
        .find(|e| (e.episode.first..=e.episode.last).contains(&m.id))
        .unwrap();
    let texts: Vec<String> = fx.messages()
        [episode.episode.first as usize - 1..episode.episode.last as usize]
        .iter()
        .map(|m| m.content.clone())
        .collect();
    let facts = fx.facts();
    let f = facts
        .iter()
        .find(|f| f.sentence.contains("Gardenshed"))
        .unwrap();
    let shed = fx.entity_named("Gardenshed");
    let fence = fx.entity_named("Picketfence");

    let erased = erase(&mut fx, Target::Episode(episode.episode.id));
    assert_eq!(erased.messages.len(), texts.len());
    assert_eq!(erased.facts, vec![f.id]);
    assert_eq!(erased.entities, vec![shed.id, fence.id]);
    let mut needles = texts;
    needles.extend(["Gardenshed".into(), "Picketfence".into(), "garden".into()]);
    needles.extend(["MetagardenUser".into(), "MetagardenReply".into()]);
    needles.extend(vector_needles(&[
        f.embedding.clone(),
        shed.embedding,
        fence.embedding,
    ]));
    assert_gone(&mut fx, &needles);
    let why = fx.explain_episode(episode.episode.id);
    assert!(why.summary.contains("erased"), "{}", why.summary);
    assert_eq!(fx.episode(episode.episode.id).episode.tokens, 0);
    assert!(fx
        .view()
        .items
        .iter()
        .all(|i| !i.text.contains("Gardenshed")));
    assert_reopens_same(&mut fx, &mut early);
    assert_eq!(others(&store, "test"), untouched);
}

#[test]
fn erase_fact_brings_back_the_fact_it_retired() {
    let store = MemoryStore::new();
    let mut fx = rich("test", store.clone());
    let mut early = fx.reopen();
    let facts = fx.facts();
    let porto = facts.iter().find(|f| f.sentence.contains("Porto")).unwrap();
    let lisbon = facts
        .iter()
        .find(|f| f.sentence.contains("Lisbon"))
        .unwrap();
    assert_eq!(lisbon.retired.as_ref().map(|r| r.by), Some(porto.id));
    let city = fx.entity_named("Porto");

    let erased = erase(&mut fx, Target::Fact(porto.id));
    assert_eq!(erased.facts, vec![porto.id]);
    assert_eq!(erased.entities, vec![city.id]);
    assert!(erased.messages.is_empty(), "the conversation stays");
    let mut needles = vec!["Alice moved to Porto.".to_string(), "\"Porto\"".into()];
    needles.extend(vector_needles(&[porto.embedding.clone(), city.embedding]));
    assert_gone(&mut fx, &needles);
    let again = &fx.facts()[lisbon.id as usize - 1];
    assert!(again.is_live(), "nothing contradicts Lisbon any more");
    let stats = fx.stats();
    let facts = fx.facts();
    let live = facts.iter().filter(|f| f.is_live()).count();
    let retired = facts.iter().filter(|f| f.retired.is_some()).count();
    assert_eq!(stats.facts, [live, retired], "an erased fact is neither");
    assert_eq!(live + retired + 1, facts.len());
    assert_eq!(stats.entities, fx.entities().len() - 1);
    assert!(fx
        .traces()
        .iter()
        .filter(|t| t.cause == engram::types::trace::TraceCause::Fact(porto.id))
        .all(|t| !t.yes));
    let why = fx.explain_fact(porto.id);
    assert!(why.summary.contains("erased") && why.sentence.is_empty());
    assert_reopens_same(&mut fx, &mut early);
    // Erasing it again is nothing new.
    assert!(erase(&mut fx, Target::Fact(porto.id)).is_empty());
}

#[test]
fn erase_entity_takes_every_fact_naming_it() {
    let store = MemoryStore::new();
    let mut fx = rich("test", store.clone());
    let mut early = fx.reopen();
    let alice = fx.entity_named("Alice");
    let facts: Vec<engram::Fact> = fx
        .facts()
        .into_iter()
        .filter(|f| f.subject == alice.id || f.object == alice.id)
        .collect();
    assert_eq!(facts.len(), 2);
    let erased = erase(&mut fx, Target::Entity(alice.id));
    assert_eq!(erased.facts, facts.iter().map(|f| f.id).collect::<Vec<_>>());
    assert_eq!(erased.entities.len(), 3, "Alice, Lisbon and Porto");
    let mut needles = vec!["Alice".to_string(), "Lisbon".into(), "\"Porto\"".into()];
    needles.extend(vector_needles(
        &facts
            .iter()
            .map(|f| f.embedding.clone())
            .collect::<Vec<_>>(),
    ));
    needles.extend(vector_needles(&[alice.embedding]));
    assert_gone(&mut fx, &needles);
    assert!(fx.facts().iter().any(|f| f.sentence.contains("Gardenshed")));
    assert_reopens_same(&mut fx, &mut early);
}

#[test]
fn erase_tool_output_takes_the_whole_exchange() {
    let mut fx = rich("test", MemoryStore::new());
    let out = message_with(&mut fx, "Sunny in Quixotown.");
    let erased = erase(&mut fx, Target::Message(out.id));
    assert_eq!(erased.messages, vec![out.id - 1, out.id]);
    assert_gone(&mut fx, &["Quixotown".into(), "forecastlookup".into()]);
    // The call keeps its id, so the pairing of the chat stays valid.
    let call = &fx.messages()[out.id as usize - 2];
    assert_eq!(call.tool_calls[0].id, "c1");
    assert!(fx.view().items.iter().all(|i| i.tool_call_id.is_none()));
}

#[test]
fn an_export_after_erase_imports_to_the_same_memory() {
    let store = MemoryStore::new();
    let mut fx = rich("test", store.clone());
    let m = message_with(&mut fx, &format!("{NEW} garden"));
    erase(&mut fx, Target::Message(m.id));
    let export = fx.export();
    assert!(!export.contains(&m.content) && !export.contains("Gardenshed"));
    let mut copy = Fx::with(
        "copy",
        store.clone(),
        fx.model.clone(),
        fx.clock.clone(),
        fx.config.clone(),
    );
    block_on(copy.memory.import(&export)).expect("import");
    let (mut a, mut b) = (readable(&mut fx), readable(&mut copy));
    for v in [&mut a, &mut b] {
        v["stats"]["storage_warnings"] = Value::Null;
    }
    assert_eq!(a, b);
}

#[test]
fn a_reused_tool_call_id_takes_only_its_own_exchange() {
    let mut fx = rich("test", MemoryStore::new());
    let call = |args: &str| ToolCall {
        id: "c1".into(),
        name: "lookup".into(),
        arguments: args.into(),
    };
    fx.user("look two things up");
    let first = fx.add(NewMessage::tool_calls(
        "",
        vec![call("{\"q\":\"Firstquery\"}")],
    ));
    fx.add(NewMessage::tool_result("c1", "Firstanswer."));
    let second = fx.add(NewMessage::tool_calls(
        "",
        vec![call("{\"q\":\"Secondquery\"}")],
    ));
    fx.add(NewMessage::tool_result("c1", "Secondanswer."));
    let erased = erase(&mut fx, Target::Message(first.message));
    assert_eq!(erased.messages, vec![first.message, first.message + 1]);
    assert_gone(&mut fx, &["Firstquery".into(), "Firstanswer.".into()]);
    let kept = &fx.messages()[second.message as usize..];
    assert_eq!(kept[0].content, "Secondanswer.");
}

#[test]
fn erase_in_the_open_stretch_and_go_on() {
    let mut fx = rich("test", MemoryStore::new());
    let a = fx.user("my passport number is ZX-9912-SECRET");
    erase(&mut fx, Target::Message(a.message));
    assert_gone(&mut fx, &["ZX-9912-SECRET".into()]);
    assert!(fx.view().items.iter().all(|i| i.message != Some(a.message)));
    // The conversation goes on, fades included, and reopens the same.
    fx.assistant("noted");
    for t in ["boats", "trains", "planes"] {
        fx.turn(t, 50, 50);
    }
    let mut again = fx.reopen();
    assert_eq!(readable(&mut again), readable(&mut fx));
    assert_gone(&mut fx, &["ZX-9912-SECRET".into()]);
}

#[test]
fn erase_of_an_unknown_id_or_kind_changes_nothing() {
    let mut fx = rich("test", MemoryStore::new());
    let before = fx.store.dump();
    for target in [
        Target::Message(0),
        Target::Message(999),
        Target::Episode(999),
        Target::Fact(999),
        Target::Entity(0),
    ] {
        let e = block_on(fx.memory.erase(target.clone())).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{target:?}: {e}");
    }
    let e = Target::parse("passage", 1).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    assert_eq!(Target::parse("fact", 3).unwrap(), Target::Fact(3));
    assert_eq!(fx.store.dump(), before);
}

#[test]
fn a_failing_store_during_erase_loses_nothing() {
    let mut fx = rich("test", MemoryStore::new());
    let before = fx.store.dump();
    let read = readable(&mut fx);
    let m = message_with(&mut fx, &format!("{NEW} lisbon"));
    fx.store.fail_write(1);
    let e = block_on(fx.memory.erase(Target::Message(m.id))).unwrap_err();
    assert!(matches!(e, Error::Store(_)), "{e}");
    assert_eq!(fx.store.dump(), before, "nothing written");
    assert_eq!(readable(&mut fx), read, "nothing lost");
    // Once the store is back, the erase goes through.
    erase(&mut fx, Target::Message(m.id));
    assert_gone(&mut fx, &[m.content]);
}

#[test]
fn a_concurrent_writer_conflicts_and_never_mixes() {
    let store = MemoryStore::new();
    let mut fx = rich("test", store.clone());
    let mut other = fx.reopen();
    let m = message_with(&mut fx, &format!("{NEW} porto"));
    erase(&mut fx, Target::Message(m.id));
    // The other handle read the old head: its add conflicts, it reloads the
    // rewritten log and commits after the erase.
    let added = other.user("and a new message");
    assert_eq!(added.message, fx.messages().len() as u64);
    assert_eq!(fx.messages()[m.id as usize - 1].content, "");
    assert_gone(
        &mut fx,
        &[m.content.clone(), "Alice moved to Porto.".into()],
    );
    assert_eq!(readable(&mut fx), readable(&mut other));
}

#[test]
fn destroy_removes_every_key_of_the_namespace() {
    let store = MemoryStore::new();
    rich("other", store.clone());
    let mut fx = rich("test", store.clone());
    let mut early = fx.reopen();
    let untouched = others(&store, "test");
    block_on(fx.memory.destroy()).expect("destroy");
    assert!(store.dump().keys().all(|k| !k.starts_with("engram/test/")));
    // A handle opened before reads the namespace as empty, not as damage.
    assert_eq!(early.messages().len(), 0);
    assert_eq!(store.dump(), untouched);
    assert_eq!(fx.messages().len(), 0);
    // The namespace starts again empty, from this handle and a new one.
    fx.user("a fresh start");
    assert_eq!(fx.reopen().messages().len(), 1);
    // A failing store leaves it as it was.
    let before = store.dump();
    fx.store.fail_write(1);
    assert!(block_on(fx.memory.destroy()).is_err());
    assert_eq!(store.dump(), before);
    assert_eq!(fx.messages().len(), 1);
}

/// Not a check: how long an erase takes and how much it rewrites on a
/// 400-message memory (`cargo test --release --test erase -- --nocapture
/// erase_figures`).
#[test]
fn erase_figures() {
    let mut fx = Fx::new(Config {
        ceiling_tokens: 2_000,
        ..Config::default()
    });
    standard_segment(&fx.model);
    notes_for(
        &fx.model,
        vec![("t7", vec![fact("Bob", "likes", "Tea", "Bob likes Tea.")])],
    );
    for i in 0..200 {
        fx.turn(&format!("t{i}"), 40, 40);
    }
    assert_eq!(fx.messages().len(), 400);
    let before = fx.store.dump();
    let total: usize = before.values().map(Vec::len).sum();
    let m = message_with(&mut fx, &format!("{NEW} t7 "));
    let t = std::time::Instant::now();
    let erased = erase(&mut fx, Target::Message(m.id));
    let took = t.elapsed();
    let after = fx.store.dump();
    let written: usize = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, v)| k.len() + v.len())
        .sum();
    eprintln!(
        "erase of message {} ({} facts) in a 400-message memory: {took:?}, {written} bytes \
         rewritten of {total} stored",
        m.id,
        erased.facts.len()
    );
    assert_gone(&mut fx, &[m.content, "Bob likes Tea.".into()]);
}

/// Everything a host reads of a memory over any model (health left out).
fn readable_of<M: engram::Model>(m: &mut Memory<MemoryStore, M, ManualClock>) -> Value {
    let mut stats = serde_json::to_value(block_on(m.stats()).unwrap()).unwrap();
    stats["model"] = Value::Null;
    json!({
        "messages": block_on(m.messages()).unwrap(),
        "episodes": block_on(m.episodes()).unwrap(),
        "facts": block_on(m.facts()).unwrap(),
        "entities": block_on(m.entities()).unwrap(),
        "recalls": block_on(m.recalls()).unwrap(),
        "view": block_on(m.view()).unwrap(),
        "stats": stats,
    })
}

#[test]
fn random_erases_in_a_long_offline_conversation_keep_the_store_clean_and_consistent() {
    let store = MemoryStore::new();
    let clock = ManualClock::at(T0);
    let config = Config {
        ceiling_tokens: 250,
        ..Config::default()
    };
    let open = || {
        block_on(Memory::open(
            "r",
            store.clone(),
            OfflineModel::new(),
            clock.clone(),
            config.clone(),
        ))
        .unwrap()
    };
    let mut memory = open();
    let mut early = open();
    let names = ["Ana", "Bruno", "Carla", "Diego", "Elena"];
    let things = [
        "green tea",
        "the red bicycle",
        "jazz records",
        "the Lisbon trip",
    ];
    let places = ["Porto", "Utrecht", "Kyoto", "Quito"];
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut gone: Vec<String> = Vec::new();
    let mut erases = 0;
    for i in 0..90 {
        clock.advance_minutes(1 + next(30) as i64);
        let text = format!(
            "mk{i}z {} likes {} and lives in {}.",
            names[next(5)],
            things[next(4)],
            places[next(4)]
        );
        block_on(memory.add_message(NewMessage::user(text))).unwrap();
        clock.advance_minutes(1);
        block_on(memory.add_message(NewMessage::assistant(format!("Noted {i}.")))).unwrap();
        if i % 6 != 5 {
            continue;
        }
        let (messages, facts, entities, episodes) = (
            block_on(memory.messages()).unwrap().len() as u64,
            block_on(memory.facts()).unwrap().len() as u64,
            block_on(memory.entities()).unwrap().len() as u64,
            block_on(memory.episodes()).unwrap().len() as u64,
        );
        let target = match next(4) {
            0 if facts > 0 => Target::Fact(1 + next(facts as usize) as u64),
            1 if entities > 0 => Target::Entity(1 + next(entities as usize) as u64),
            2 if episodes > 0 => Target::Episode(1 + next(episodes as usize) as u64),
            _ => Target::Message(1 + next(messages as usize) as u64),
        };
        let before = block_on(memory.messages()).unwrap();
        let erased = block_on(memory.erase(target.clone())).unwrap();
        erases += 1;
        for m in &erased.messages {
            let content = &before[*m as usize - 1].content;
            if let Some(marker) = content
                .split_whitespace()
                .next()
                .filter(|w| w.starts_with("mk"))
            {
                gone.push(format!("{marker} "));
            }
        }
        let dump = store.dump();
        for marker in &gone {
            assert!(
                dump.values()
                    .all(|v| !v.windows(marker.len()).any(|w| w == marker.as_bytes())),
                "{target:?}: {marker:?} is still stored"
            );
        }
        let now = readable_of(&mut memory);
        assert_eq!(readable_of(&mut open()), now, "{target:?}: a fresh handle");
        assert_eq!(
            readable_of(&mut early),
            now,
            "{target:?}: a caught-up handle"
        );
    }
    let facts = block_on(memory.facts()).unwrap();
    let recalls = block_on(memory.recalls()).unwrap();
    assert!(erases >= 10 && !gone.is_empty());
    assert!(facts.iter().any(|f| f.erased) && !recalls.is_empty());
}
