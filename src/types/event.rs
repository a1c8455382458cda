//! The append-only events that make up a memory. State is their fold.

use std::fmt;

use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::types::entity::{Alias, Entity};
use crate::types::episode::{NoteFailure, StateChange};
use crate::types::erase::{Erased, Target};
use crate::types::fact::{Fact, Restatement, Retirement};
use crate::types::fade::Fade;
use crate::types::message::Message;
use crate::types::recall::{Distillation, Passage, RecallBlock};
use crate::types::trace::Trace;

/// Defines [`Event`] and, from the same list, [`Tagged`]: its variants as
/// serde derives the reading of an externally tagged enum (`remote =
/// "Event"`), read from [`Variant`]: the `type` already read, then the rest
/// of the map as the variant's content (a newtype variant's value, or a
/// struct variant's fields), straight from the input, with no buffer. One
/// list, so a variant or field cannot be in one and not the other.
macro_rules! events {
    (
        $(#[$meta:meta])*
        pub enum Event {
            $(
                $(#[$vmeta:meta])*
                $variant:ident
                $( ( $inner:ty ) )?
                $( { $( $(#[$fmeta:meta])* $field:ident : $fty:ty ),* $(,)? } )?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum Event {
            $(
                $(#[$vmeta])*
                $variant
                $( ( $inner ) )?
                $( { $( $(#[$fmeta])* $field : $fty ),* } )?
            ),*
        }

        #[derive(Deserialize)]
        #[serde(remote = "Event", rename_all = "snake_case")]
        enum Tagged {
            $(
                $variant
                $( ( $inner ) )?
                $( { $( $(#[$fmeta])* $field : $fty ),* } )?
            ),*
        }
    };
}

events! {
/// One change to a memory. Every public call that changes the memory commits
/// its events in one atomic write; replaying them rebuilds the memory.
///
/// Read by [`Event`]'s `Deserialize`: an event whose `type` comes first
/// (as every encoder writes it) is read straight into its value (`Tagged`
/// over the rest of its map); one whose `type` comes later (JSON written by
/// hand or through a sorted map) is read into a JSON value first and read
/// again with its `type` first. serde's own reading of an internally tagged
/// enum would buffer every value, and its code was a sixth of the `.wasm`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A message was added (with its boundary judgment).
    Message(Message),
    /// The open stretch up to `last` formed an episode.
    EpisodeFormed {
        /// New episode id.
        episode: u64,
        /// First message id.
        first: u64,
        /// Last message id.
        last: u64,
        /// Its formation stamp (time of its last message).
        at: i64,
        /// Its messages' tokens.
        tokens: usize,
    },
    /// A trace was written (a yes, or the encoding trace; logs of format 2
    /// also hold the no answers one by one).
    Trace(Trace),
    /// Episodes judged against a new fact that answered no: counted, not
    /// stored one by one (only a yes counts toward activation).
    Declined {
        /// The fact judged.
        fact: u64,
        /// How many episodes said no.
        episodes: u32,
        /// When.
        at: i64,
    },
    /// An episode moved to a new state.
    StateChanged {
        /// The episode.
        episode: u64,
        /// The move.
        change: StateChange,
    },
    /// The host set its own instructions (persona, tool policy): pinned
    /// first in every view, counted toward the ceiling, never faded. An
    /// empty text removes them.
    InstructionsSet {
        /// The instructions (empty: none).
        text: String,
        /// When.
        at: i64,
    },
    /// A user message came after a long silence: a sleep fade is due (it
    /// starts as soon as no other fade runs).
    SleepDue {
        /// When.
        at: i64,
        /// The thread that slept.
        #[serde(
            default = "crate::types::message::main_thread",
            skip_serializing_if = "crate::types::message::is_main_thread"
        )]
        thread: String,
    },
    /// A fade began.
    FadeStarted(Fade),
    /// A sleep fade's landing, measured again once the message that began
    /// it was cut from the turn before (the cuts change what cannot leave).
    FadeLanding {
        /// The fade.
        fade: u64,
        /// The new landing.
        landing: usize,
        /// The recent turn size it used.
        turn_tokens: usize,
    },
    /// A fade reached its landing (or ran out of episodes to move).
    FadeFinished {
        /// The fade.
        fade: u64,
        /// When.
        at: i64,
        /// View size when it finished.
        view_tokens: usize,
    },
    /// Noting an episode failed (it is deferred or retried later).
    NoteFailed {
        /// The episode.
        episode: u64,
        /// What happened.
        failure: NoteFailure,
    },
    /// A new entity entered the graph.
    EntityAdded(Entity),
    /// A known entity got another name.
    AliasAdded {
        /// The entity.
        entity: u64,
        /// The name.
        alias: Alias,
    },
    /// A new fact.
    FactAdded(Fact),
    /// A held fact was restated (merged).
    FactRestated {
        /// The held fact.
        fact: u64,
        /// The restatement.
        restatement: Restatement,
    },
    /// A held fact was contradicted by a newer one.
    FactRetired {
        /// The retired fact.
        fact: u64,
        /// By which fact, when.
        retirement: Retirement,
    },
    /// A sealed episode's passages were cut and embedded for recall.
    PassagesIndexed {
        /// The passages.
        passages: Vec<Passage>,
    },
    /// A recall block was placed before a user message.
    Recalled(RecallBlock),
    /// A message got its boundary judgment after it was added (judgments
    /// of replies are made after the turn, with the next step's calls).
    Judged {
        /// The message.
        message: u64,
        /// The probability that it starts a new concept, or `None` when the
        /// model failed every attempt (the message then counts as unjudged
        /// for the size rule).
        boundary: Option<f32>,
    },
    /// An episode's facts were written (by the memory's model or the host's
    /// `note` tool).
    Noted {
        /// The episode.
        episode: u64,
        /// When.
        at: i64,
    },
    /// An episode left the view before its facts could be written (its note
    /// failed); its passages are recallable and its note is retried later.
    NoteDeferred {
        /// The episode.
        episode: u64,
        /// When.
        at: i64,
    },
    /// An episode's note failed `note_retries` times after it was deferred:
    /// it stays without facts (its passages stay recallable).
    NoteAbandoned {
        /// The episode.
        episode: u64,
        /// When.
        at: i64,
    },
    /// A recall block in view gave way so recall blocks keep to their share
    /// of the view (older blocks first); its items stay recallable.
    RecallGaveWay {
        /// The block.
        block: u64,
        /// When.
        at: i64,
    },
    /// Distill decided what of a recall block mattered.
    Distilled {
        /// The block.
        block: u64,
        /// The decision.
        distillation: Distillation,
    },
    /// The host erased something on request ([`crate::erase`]). The log
    /// before it was rewritten without what it reached; this entry keeps only
    /// ids and the time.
    Erased {
        /// What the host asked to erase.
        target: Target,
        /// Everything the erase took (ids).
        erased: Erased,
        /// When.
        at: i64,
    },
}
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        d.deserialize_map(EventVisitor)
    }
}

/// Reads an event from its map (see [`Event`]).
struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event (a map with its type)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let Some(key) = map.next_key::<Name<'de>>()? else {
            return Err(de::Error::missing_field("type"));
        };
        if key.as_str() == "type" {
            let tag: Name<'de> = map.next_value()?;
            return Tagged::deserialize(Variant { tag, map });
        }
        // `type` is not first: the whole value as JSON, read again with its
        // `type` moved first (rare: every encoder writes it first; a second
        // generic reading of every event type would cost far more code).
        let map = Replay {
            key: Some(key),
            value: None,
            map,
        };
        let mut fields = serde_json::Map::deserialize(MapAccessDeserializer::new(map))?;
        let tag = fields
            .remove("type")
            .ok_or_else(|| de::Error::missing_field("type"))?;
        let mut text = String::from("{\"type\":");
        text.push_str(&tag.to_string());
        for (k, v) in &fields {
            text.push(',');
            text.push_str(&serde_json::Value::from(k.as_str()).to_string());
            text.push(':');
            text.push_str(&v.to_string());
        }
        text.push('}');
        crate::base::codec::from_json::<Event>(&text).map_err(de::Error::custom)
    }
}

/// An event's `type` and the rest of its map, as the enum [`Tagged`] reads
/// (`type` names the variant, the rest of the map is its content).
struct Variant<'de, A> {
    tag: Name<'de>,
    map: A,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Variant<'de, A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, A: MapAccess<'de>> de::EnumAccess<'de> for Variant<'de, A> {
    type Error = A::Error;
    type Variant = Content<A>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Content<A>), A::Error> {
        let Variant { tag, map } = self;
        let variant = seed.deserialize(name(&tag))?;
        Ok((variant, Content(map)))
    }
}

/// The rest of an event's map as its variant's content.
struct Content<A>(A);

impl<'de, A: MapAccess<'de>> de::VariantAccess<'de> for Content<A> {
    type Error = A::Error;

    fn unit_variant(mut self) -> Result<(), A::Error> {
        while self
            .0
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        seed.deserialize(MapAccessDeserializer::new(self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, A::Error> {
        Err(de::Error::invalid_type(de::Unexpected::Map, &visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.0)
    }
}

/// A key or tag as read: borrowed from the input when it can be.
enum Name<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Name<'_> {
    fn as_str(&self) -> &str {
        match self {
            Name::Borrowed(s) => s,
            Name::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Name<'de>, E> {
                Ok(Name::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Name<'de>, E> {
                Ok(Name::Owned(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Name<'de>, E> {
                Ok(Name::Owned(v))
            }
        }
        d.deserialize_str(V)
    }
}

/// The rest of an event's map with what was read of it put back first:
/// its first key, and that key's value when it was read too.
struct Replay<'de, A> {
    key: Option<Name<'de>>,
    value: Option<Name<'de>>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.key.take() {
            Some(k) => seed.deserialize(name(&k)).map(Some),
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(v) => seed.deserialize(name(&v)),
            None => self.map.next_value_seed(seed),
        }
    }
}

/// A deserializer of the text of `n`.
fn name<'a, E: de::Error>(n: &'a Name<'_>) -> StrDeserializer<'a, E> {
    n.as_str().into_deserializer()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event of the format-2 fixture's export (17 kinds, `type` last
    /// in the file), as serde_json values.
    fn fixture_events() -> Vec<serde_json::Value> {
        let text = include_str!("../../tests/fixtures/format2-expected.json");
        let fixture: serde_json::Value = serde_json::from_str(text).expect("fixture");
        fixture["export"]["log"]
            .as_array()
            .expect("log")
            .iter()
            .flat_map(|entry| entry["events"].as_array().expect("events").clone())
            .collect()
    }

    #[test]
    fn events_read_the_same_whether_their_type_comes_first_or_last() {
        let events = fixture_events();
        let mut kinds = std::collections::BTreeSet::new();
        for value in &events {
            kinds.insert(value["type"].as_str().expect("type").to_string());
            // `type` last (the fixture's order): the derived reading.
            let text = serde_json::to_string(value).expect("text");
            assert!(!text.starts_with(r#"{"type""#), "{text}");
            let last: Event = serde_json::from_str(&text).expect("reads with type last");
            // `type` first, as engram writes it: read straight.
            let first_text = serde_json::to_string(&last).expect("writes");
            assert!(first_text.starts_with(r#"{"type""#), "{first_text}");
            let first: Event = serde_json::from_str(&first_text).expect("reads with type first");
            assert_eq!(first, last);
            // The store's binary encoding, and a value tree.
            let bytes = crate::base::codec::to_bytes(&last);
            assert_eq!(
                crate::base::codec::from_bytes::<Event>(&bytes).expect("decodes"),
                last
            );
            assert_eq!(
                serde_json::from_value::<Event>(value.clone()).expect("value"),
                last
            );
        }
        for kind in [
            "message",
            "trace",
            "fact_added",
            "entity_added",
            "judged",
            "recalled",
        ] {
            assert!(kinds.contains(kind), "the fixture has no {kind}");
        }
    }

    #[test]
    fn an_event_of_an_unknown_type_or_with_a_bad_field_is_refused() {
        let unknown = serde_json::from_str::<Event>(r#"{"type": "fact_melted", "fact": 1}"#)
            .expect_err("unknown type");
        assert!(unknown.to_string().contains("fact_melted"), "{unknown}");
        let untyped =
            serde_json::from_str::<Event>(r#"{"fact": 1, "at": 5}"#).expect_err("no type");
        assert!(untyped.to_string().contains("type"), "{untyped}");
        let empty = serde_json::from_str::<Event>("{}").expect_err("empty");
        assert!(empty.to_string().contains("type"), "{empty}");
        let not_a_map = serde_json::from_str::<Event>("[1, 2]").expect_err("a list");
        assert!(not_a_map.to_string().contains("event"), "{not_a_map}");
        let events = fixture_events();
        let mut fact = events
            .iter()
            .find(|e| e["type"] == "fact_added")
            .expect("a fact")
            .clone();
        fact["subject"] = serde_json::json!("Ana");
        // Written with `type` first so the straight reading meets the bad field.
        let mut map = fact.as_object().expect("a map").clone();
        let kind = map.remove("type").expect("type");
        let body = serde_json::to_string(&map).expect("body");
        let first = format!(r#"{{"type":{kind},{}"#, &body[1..]);
        let bad = serde_json::from_str::<Event>(&first).expect_err("subject is a name");
        assert!(bad.to_string().contains("invalid type"), "{bad}");
    }
}
