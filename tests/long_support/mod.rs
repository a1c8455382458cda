//! Support of the long-conversation harness (`tests/long_conversations.rs`):
//! the conversations it replays, a model that answers every task under a
//! chosen policy (some of them hostile), a driver that counts sequential
//! model round trips without sleeping, and the invariant checks run after
//! every public call.
//!
//! Everything is deterministic: conversations come from files or a seeded
//! generator, answers from the policy and the request, faults from a hash of
//! the request and the call's sequence number.

#![allow(dead_code)]

#[path = "../locomo_time/mod.rs"]
mod locomo_time;
pub use locomo_time::parse_locomo_time;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use engram::testing::{new_message, HashEmbedder};
use engram::types::fade::Fade;
use engram::types::recall::RecallBlock;
use engram::view::ItemKind;
use engram::Added;
use engram::Config;
use engram::EpisodeInfo;
use engram::EpisodeState;
use engram::Fact;
use engram::Message;
use engram::Model;
use engram::ModelError;
use engram::NewMessage;
use engram::Role;
use engram::Task;
use engram::TaskRequest;
use engram::ToolCall;
use engram::View;
use serde_json::{json, Value};

// ---------------------------------------------------------------- conversations

/// The tool side of a turn.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolPart {
    /// An assistant message calling these tools.
    Calls(Vec<ToolCall>),
    /// The output of the call with this id.
    Output(String),
}

/// One message of a conversation, with the time it is added at.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Who speaks.
    pub role: Role,
    /// The text.
    pub text: String,
    /// When (ms since the Unix epoch).
    pub at: i64,
    /// Tool calls made, or the call answered.
    pub tool: Option<ToolPart>,
}

impl Turn {
    /// The message as the memory is given it.
    pub fn message(&self) -> NewMessage {
        match &self.tool {
            Some(ToolPart::Calls(calls)) => {
                NewMessage::tool_calls(self.text.clone(), calls.clone())
            }
            Some(ToolPart::Output(id)) => NewMessage::tool_result(id.clone(), self.text.clone()),
            None => match self.role {
                Role::User => NewMessage::user(self.text.clone()),
                Role::Assistant => NewMessage::assistant(self.text.clone()),
                Role::System => NewMessage::system(self.text.clone()),
                Role::Tool => panic!("a tool turn needs the call it answers"),
            },
        }
    }
}

/// A conversation to replay.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// Short name for the table.
    pub name: String,
    /// Its messages, in order, times never going back.
    pub turns: Vec<Turn>,
}

impl Conversation {
    /// User messages.
    pub fn user_turns(&self) -> usize {
        self.turns.iter().filter(|t| t.role == Role::User).count()
    }
}

fn repo_path(relative: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Where the LoCoMo development conversations are read from.
pub const LOCOMO_PATH: &str = "../shared/data/locomo-dev/locomo-dev.json";

/// "2025-03-03T09:02:00Z" in ms since the epoch.
pub fn parse_iso_time(s: &str) -> Option<i64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let t: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    if d.len() != 3 || t.len() != 3 {
        return None;
    }
    Some(
        (engram::base::text::days_from_civil(d[0], d[1], d[2]) * 86_400
            + t[0] * 3600
            + t[1] * 60
            + t[2])
            * 1000,
    )
}

/// The two LoCoMo development conversations: speaker A is the user, speaker
/// B the assistant; each session's date is the time of its first message,
/// the next ones 30 s apart. Panics with a clear message when the file is
/// missing: CI has it, and the harness must not pass without it.
pub fn locomo() -> Vec<Conversation> {
    let path = repo_path(LOCOMO_PATH);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "the LoCoMo development set is missing: cannot read {} ({e}). The long-conversation \
             harness needs it (CI has it at {LOCOMO_PATH}, relative to the repository root)",
            path.display()
        )
    });
    let data: Vec<Value> = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not LoCoMo JSON: {e}", path.display()));
    data.iter()
        .map(|conv| {
            let c = &conv["conversation"];
            let a = c["speaker_a"].as_str().expect("speaker_a");
            let mut turns: Vec<Turn> = Vec::new();
            for s in 1.. {
                let Some(session) = c.get(format!("session_{s}")).and_then(|v| v.as_array()) else {
                    break;
                };
                let when = c[format!("session_{s}_date_time")].as_str().unwrap_or("");
                let start = parse_locomo_time(when)
                    .unwrap_or_else(|| panic!("session {s}: bad date {when:?}"));
                let start = start.max(turns.last().map_or(i64::MIN, |t| t.at));
                for (i, t) in session.iter().enumerate() {
                    let mut text = t["text"].as_str().expect("text").to_string();
                    if let Some(cap) = t.get("blip_caption").and_then(|v| v.as_str()) {
                        text.push_str(&format!(" [shares a photo: {cap}]"));
                    }
                    let role = if t["speaker"].as_str() == Some(a) {
                        Role::User
                    } else {
                        Role::Assistant
                    };
                    turns.push(Turn {
                        role,
                        text,
                        at: start + 30_000 * i as i64,
                        tool: None,
                    });
                }
            }
            Conversation {
                name: format!("locomo {}", conv["sample_id"].as_str().unwrap_or("?")),
                turns,
            }
        })
        .collect()
}

/// The bundled sample (`examples/sample/conversation.json`), with its tool
/// call and output. Also returns the sample's own ceiling.
pub fn sample() -> (Conversation, usize) {
    let path = repo_path("examples/sample/conversation.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let data: Value = serde_json::from_str(&text).expect("sample JSON");
    let ceiling = data["config"]["ceiling_tokens"].as_u64().unwrap_or(8_000) as usize;
    let turns = data["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let role = Role::parse(m["role"].as_str().expect("role")).expect("known role");
            let at = parse_iso_time(m["at"].as_str().expect("at")).expect("ISO time");
            let calls: Vec<ToolCall> = m
                .get("tool_calls")
                .and_then(|v| v.as_array())
                .map(|cs| {
                    cs.iter()
                        .map(|c| ToolCall {
                            id: c["id"].as_str().expect("id").into(),
                            name: c["name"].as_str().expect("name").into(),
                            arguments: c["arguments"].as_str().unwrap_or("{}").into(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let tool = match m.get("tool_call_id").and_then(|v| v.as_str()) {
                Some(id) => Some(ToolPart::Output(id.into())),
                None if !calls.is_empty() => Some(ToolPart::Calls(calls)),
                None => None,
            };
            Turn {
                role,
                text: m["content"].as_str().unwrap_or("").into(),
                at,
                tool,
            }
        })
        .collect();
    (
        Conversation {
            name: "sample".into(),
            turns,
        },
        ceiling,
    )
}

/// SplitMix64: a small seeded generator (no rand crate).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.next_u64() as usize % items.len()]
    }
}

/// SplitMix64's finaliser.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a of a text.
pub fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One topic of the generated conversation: its name, its vocabulary and
/// the names that come up in it.
struct Topic {
    name: &'static str,
    words: &'static str,
    names: &'static str,
}

impl Topic {
    fn words(&self) -> Vec<&'static str> {
        self.words.split_whitespace().collect()
    }
    fn names(&self) -> Vec<&'static str> {
        self.names.split_whitespace().collect()
    }
}

#[rustfmt::skip]
const TOPICS: [Topic; 20] = [
    Topic { name: "garden", names: "Greta Kew",
        words: "tomatoes compost seedlings trellis mulch greenhouse watering basil harvest pruning fertiliser aphids" },
    Topic { name: "cycling", names: "Girona Canyon",
        words: "derailleur cassette saddle cadence climb tubeless chain helmet gradient pannier brakes sportive" },
    Topic { name: "sourdough", names: "Tartine Chad",
        words: "starter hydration levain crumb proofing banneton scoring oven flour rye autolyse crust" },
    Topic { name: "taxes", names: "HMRC Priya",
        words: "deduction invoices receipts accountant deadline pension allowance quarterly expenses mileage refund bracket" },
    Topic { name: "kitchen", names: "Marek Howdens",
        words: "cabinets worktop plumber tiles extractor budget quote oak sink splashback hinges lighting" },
    Topic { name: "rust", names: "Ferris Tokio",
        words: "borrow lifetime trait compiler crate async closure iterator macro generics clippy allocator" },
    Topic { name: "marathon", names: "Valencia Kipchoge",
        words: "tempo intervals taper mileage shoes gels pacing recovery hamstring threshold longrun splits" },
    Topic { name: "party", names: "Lena Roma",
        words: "invitations cake balloons venue guests playlist decorations catering magician presents games candles" },
    Topic { name: "moving", names: "Bristol Tomasz",
        words: "boxes removals landlord deposit inventory keys utilities broadband storage packing lease postcode" },
    Topic { name: "photography", names: "Fujifilm Skye",
        words: "aperture shutter tripod exposure lens histogram bracketing sunrise filters autofocus raw composition" },
    Topic { name: "chess", names: "Magnus Lichess",
        words: "opening gambit endgame rook bishop tactics sicilian tournament rating blunder zugzwang castling" },
    Topic { name: "dog", names: "Biscuit Sophie",
        words: "recall lead treats puppy crate socialisation clicker walks vaccinations harness chewing kennel" },
    Topic { name: "investing", names: "Vanguard Dmitri",
        words: "portfolio index bonds dividends allocation rebalancing fees equities volatility emergency fund drawdown" },
    Topic { name: "japan", names: "Kyoto Hakone",
        words: "itinerary ryokan shinkansen temple onsen railpass ramen shrine luggage sakura hostel ferry" },
    Topic { name: "network", names: "Ubiquiti Omar",
        words: "router mesh firmware bandwidth ethernet subnet firewall latency switch access dhcp vlan" },
    Topic { name: "novel", names: "Elena Harbourside",
        words: "chapter protagonist outline draft villain dialogue pacing editor manuscript subplot narrator ending" },
    Topic { name: "guitar", names: "Fender Joni",
        words: "chords fretboard capo strumming barre pickup amplifier scales tuning calluses metronome riff" },
    Topic { name: "climate", names: "Copernicus Aisha",
        words: "dataset regression anomaly temperature baseline notebook plotting reanalysis rainfall gridded trend uncertainty" },
    Topic { name: "wedding", names: "Clara Ashdown",
        words: "florist vows caterer seating photographer rings marquee registrar speeches dress honeymoon menu" },
    Topic { name: "car", names: "Volvo Gareth",
        words: "tyres brakepads service oil battery clutch inspection mechanic warranty coolant wipers alignment" },
];

/// Sentence templates: `{a}`, `{b}` are topic words, `{n}` a topic name.
const TEMPLATES: [&str; 14] = [
    "{n} said the {a} needs looking at before the {b}.",
    "I want to sort out the {a} and the {b} this week.",
    "Could we compare the {a} with the {b} for {n}?",
    "The {a} looks fine, but the {b} is still a problem.",
    "We decided to keep the {a} and change the {b}.",
    "Next, {n} will check the {a} again.",
    "My worry is that the {a} gets worse if we ignore the {b}.",
    "Honestly the {a} took longer than I expected.",
    "{n} recommended a different {a}, which surprised me.",
    "If the {b} works out, the {a} should be easy.",
    "Last time the {a} went wrong because of the {b}.",
    "Let me summarise what we know about the {a} so far.",
    "A good rule of thumb is to test the {a} before touching the {b}.",
    "That is done now, and the {a} finally matches the {b}.",
];

fn sentence(rng: &mut Rng, topic: &Topic) -> String {
    let words = topic.words();
    let t = *rng.pick(&TEMPLATES);
    let i = rng.range(0, words.len() as u64 - 1) as usize;
    let j = (i + rng.range(1, words.len() as u64 - 1) as usize) % words.len();
    let n = *rng.pick(&topic.names());
    t.replace("{a}", words[i])
        .replace("{b}", words[j])
        .replace("{n}", n)
}

/// Text of about `words` words about `topic`, in whole sentences.
fn passage_text(rng: &mut Rng, topic: &Topic, words: usize) -> String {
    let mut s = String::new();
    let mut n = 0;
    while n < words {
        let mut next = sentence(rng, topic);
        let left = words - n;
        let count = next.split_whitespace().count();
        if count > left && n > 0 {
            break;
        }
        if count > left {
            // A very short message: the first words of one sentence.
            next = next
                .split_whitespace()
                .take(left.max(1))
                .collect::<Vec<_>>()
                .join(" ");
            next.push('.');
        }
        if !s.is_empty() {
            s.push(' ');
        }
        n += next.split_whitespace().count();
        s.push_str(&next);
    }
    s
}

fn message_words(rng: &mut Rng, role: Role) -> usize {
    if rng.chance(0.03) {
        return rng.range(380, 420) as usize;
    }
    match role {
        Role::User => rng.range(5, 45) as usize,
        _ => rng.range(20, 120) as usize,
    }
}

/// A generated conversation of exactly `n` messages, deterministic by
/// `seed`: user and assistant alternate (now and then a user adds a second
/// message before the reply); some assistant turns call one or two tools,
/// followed by their outputs and the reply; 20 topics with their own
/// vocabulary, changing every few turns; 5 to 120 words a message, now and
/// then about 400; minutes between messages of a session, hours between
/// sessions, and now and then a silence of more than a day (so sleeps
/// happen).
pub fn generated(n: usize, seed: u64) -> Conversation {
    let mut rng = Rng::new(seed);
    // 2024-01-08 09:00 UTC.
    let mut at = (engram::base::text::days_from_civil(2024, 1, 8) * 86_400 + 9 * 3600) * 1000;
    let mut turns: Vec<Turn> = Vec::new();
    let mut topic = 0usize;
    let mut session_left = 0u64;
    let mut calls = 0u64;
    let push = |turns: &mut Vec<Turn>, role, text, at, tool| {
        turns.push(Turn {
            role,
            text,
            at,
            tool,
        })
    };
    while turns.len() < n {
        // A user turn.
        if session_left == 0 {
            if !turns.is_empty() {
                at += if rng.chance(0.3) {
                    rng.range(25 * 60, 80 * 60) as i64 * 60_000
                } else {
                    rng.range(60, 600) as i64 * 60_000
                };
            }
            session_left = rng.range(20, 80);
            topic = rng.range(0, TOPICS.len() as u64 - 1) as usize;
        } else if rng.chance(0.3) {
            topic = rng.range(0, TOPICS.len() as u64 - 1) as usize;
        }
        let t = &TOPICS[topic];
        let words = message_words(&mut rng, Role::User);
        push(
            &mut turns,
            Role::User,
            passage_text(&mut rng, t, words),
            at,
            None,
        );
        if rng.chance(0.03) {
            at += rng.range(5, 60) as i64 * 1000;
            let words = message_words(&mut rng, Role::User);
            push(
                &mut turns,
                Role::User,
                passage_text(&mut rng, t, words),
                at,
                None,
            );
        }
        at += rng.range(20, 240) as i64 * 1000;
        // The assistant, with tools now and then.
        if rng.chance(0.07) {
            let k = if rng.chance(0.25) { 2 } else { 1 };
            let made: Vec<ToolCall> = (0..k)
                .map(|_| {
                    calls += 1;
                    let q = format!("{} {}", rng.pick(&t.words()), rng.pick(&t.words()));
                    ToolCall {
                        id: format!("call_{calls}"),
                        name: format!("search_{}", t.name),
                        arguments: json!({ "query": q }).to_string(),
                    }
                })
                .collect();
            let text = if rng.chance(0.2) {
                String::new()
            } else {
                "Let me look that up.".to_string()
            };
            push(
                &mut turns,
                Role::Assistant,
                text,
                at,
                Some(ToolPart::Calls(made.clone())),
            );
            for c in made {
                at += rng.range(1, 5) as i64 * 1000;
                let words = rng.range(15, 90) as usize;
                let out = json!({ "results": passage_text(&mut rng, t, words) }).to_string();
                push(
                    &mut turns,
                    Role::Tool,
                    out,
                    at,
                    Some(ToolPart::Output(c.id)),
                );
            }
            at += rng.range(5, 30) as i64 * 1000;
        }
        let words = message_words(&mut rng, Role::Assistant);
        push(
            &mut turns,
            Role::Assistant,
            passage_text(&mut rng, t, words),
            at,
            None,
        );
        at += rng.range(60, 600) as i64 * 1000;
        session_left = session_left.saturating_sub(2);
    }
    turns.truncate(n);
    Conversation {
        name: format!("generated {}", n),
        turns,
    }
}

// ---------------------------------------------------------------- the policy model

/// How the model answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Policy {
    /// Keeps everything: every candidate relevant, every recalled item kept,
    /// 0.5 boundaries everywhere, 1-3 facts per episode.
    KeepAll,
    /// Keeps nothing: no relevant candidate, nothing kept, no facts.
    KeepNothing,
    /// Boundaries by lexical cohesion, relevance and distill by shared
    /// content words, facts as [`Policy::KeepAll`].
    Realistic,
    /// Realistic, but 30 % of calls fail or answer junk.
    Faults30,
    /// Realistic, but the note of episode 2 always fails.
    StuckNote,
    /// Realistic, but every boundary judgment is 0.3.
    EqualJudgments,
}

impl Policy {
    /// Every policy.
    pub const ALL: [Policy; 6] = [
        Policy::KeepAll,
        Policy::KeepNothing,
        Policy::Realistic,
        Policy::Faults30,
        Policy::StuckNote,
        Policy::EqualJudgments,
    ];

    /// The policy's name.
    pub fn name(self) -> &'static str {
        match self {
            Policy::KeepAll => "KeepAll",
            Policy::KeepNothing => "KeepNothing",
            Policy::Realistic => "Realistic",
            Policy::Faults30 => "Faults30",
            Policy::StuckNote => "StuckNote",
            Policy::EqualJudgments => "EqualJudgments",
        }
    }
}

/// The note request [`Policy::StuckNote`] always fails (the start of the
/// `note` content of episode 2).
pub const STUCK_NOTE_PREFIX: &str = "Episode 2 (";

/// Calls a model got and what they cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// `complete` calls per task.
    pub calls: BTreeMap<Task, usize>,
    /// Prompt characters (system + content) per task.
    pub prompt_chars: BTreeMap<Task, usize>,
    /// Prompt tokens (system + content, as the model counts them) per task.
    pub prompt_tokens: BTreeMap<Task, usize>,
    /// `embed` calls.
    pub embed_calls: usize,
    /// Texts embedded.
    pub embed_texts: usize,
    /// Characters embedded.
    pub embed_chars: usize,
    /// Calls that failed or answered junk on purpose.
    pub faults: usize,
}

impl Usage {
    /// Every `complete` call.
    pub fn complete_calls(&self) -> usize {
        self.calls.values().sum()
    }
    /// Every prompt character.
    pub fn total_prompt_chars(&self) -> usize {
        self.prompt_chars.values().sum()
    }
    /// Every prompt token.
    pub fn total_prompt_tokens(&self) -> usize {
        self.prompt_tokens.values().sum()
    }
}

/// A model answering every task under a [`Policy`], with [`HashEmbedder`]
/// embeddings. Clones share the usage counts.
#[derive(Clone)]
pub struct PolicyModel {
    policy: Policy,
    embedder: HashEmbedder,
    usage: Rc<RefCell<Usage>>,
    seq: Rc<Cell<u64>>,
}

impl PolicyModel {
    /// A model answering under `policy`.
    pub fn new(policy: Policy) -> Self {
        PolicyModel {
            policy,
            embedder: HashEmbedder::default(),
            usage: Rc::default(),
            seq: Rc::default(),
        }
    }

    /// Its policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Calls so far.
    pub fn usage(&self) -> Usage {
        self.usage.borrow().clone()
    }

    fn next_seq(&self) -> u64 {
        let s = self.seq.get() + 1;
        self.seq.set(s);
        s
    }

    /// For [`Policy::Faults30`]: which fault (0, 1, 2) hits a call whose
    /// request hashes to `h`, if any (30 % of calls).
    fn fault(&self, h: u64) -> Option<u64> {
        if self.policy != Policy::Faults30 {
            return None;
        }
        let r = mix(h ^ mix(self.next_seq()));
        if r % 1000 < 300 {
            self.usage.borrow_mut().faults += 1;
            Some((r / 1000) % 3)
        } else {
            None
        }
    }

    /// The answer to `req` under the policy (faults aside).
    pub fn answer(&self, req: &TaskRequest) -> String {
        let p = self.policy;
        match req.task {
            Task::Segment => {
                let b = match p {
                    Policy::KeepAll | Policy::KeepNothing => 0.5,
                    Policy::EqualJudgments => 0.3,
                    _ => cohesion_boundary(req),
                };
                json!({ "boundary": b }).to_string()
            }
            Task::Note => {
                let facts = match p {
                    Policy::KeepNothing => Vec::new(),
                    _ => note_facts(&req.content),
                };
                json!({ "facts": facts }).to_string()
            }
            Task::Trace => trace_answer(&req.content),
            Task::Resolve => json!({ "same_as": null }).to_string(),
            Task::Reconcile => json!({ "judgments": [] }).to_string(),
            Task::Split => {
                let text = req
                    .content
                    .split_once("User message:\n")
                    .map_or(req.content.as_str(), |(_, t)| t);
                let mut parts: Vec<String> = sentences(text)
                    .into_iter()
                    .filter(|s| s.chars().any(|c| c.is_alphanumeric()))
                    .collect();
                if parts.is_empty() {
                    parts.push(if text.trim().is_empty() {
                        "message".to_string()
                    } else {
                        text.trim().to_string()
                    });
                }
                json!({ "parts": parts }).to_string()
            }
            Task::Relevance => {
                let (context, items) =
                    listed(&req.content, "Recent conversation:\n", "\n\nCandidates:\n");
                json!({ "relevant": self.keep(&context, &items) }).to_string()
            }
            Task::Distill => {
                let (context, items) = listed(&req.content, "The turn:\n", "\n\nRecalled items:\n");
                json!({ "kept": self.keep(&context, &items) }).to_string()
            }
            _ => panic!("a task the harness does not know: {}", req.task.name()),
        }
    }

    /// Numbers (1-based) of the items the policy keeps against `context`.
    fn keep(&self, context: &str, items: &[String]) -> Vec<usize> {
        match self.policy {
            Policy::KeepAll => (1..=items.len()).collect(),
            Policy::KeepNothing => Vec::new(),
            _ => {
                let ctx = content_words(&strip_lines(context));
                items
                    .iter()
                    .enumerate()
                    .filter(|(_, it)| content_words(&item_text(it)).intersection(&ctx).count() >= 2)
                    .map(|(i, _)| i + 1)
                    .collect()
            }
        }
    }
}

impl Model for PolicyModel {
    async fn complete(&self, req: &TaskRequest) -> Result<String, ModelError> {
        {
            let mut u = self.usage.borrow_mut();
            *u.calls.entry(req.task).or_default() += 1;
            *u.prompt_chars.entry(req.task).or_default() +=
                req.system.chars().count() + req.content.chars().count();
            *u.prompt_tokens.entry(req.task).or_default() +=
                self.count_tokens(&req.system) + self.count_tokens(&req.content);
        }
        let h = fnv(req.task.name()) ^ fnv(&req.content).rotate_left(17) ^ req.attempt as u64;
        match self.fault(h) {
            Some(0) => return Err(ModelError::Unavailable("injected outage (Faults30)".into())),
            Some(1) => return Ok("I'm not sure what you mean.".into()),
            Some(_) => return Ok(r#"{"unexpected": true}"#.into()),
            None => {}
        }
        if self.policy == Policy::StuckNote
            && req.task == Task::Note
            && req.content.starts_with(STUCK_NOTE_PREFIX)
        {
            return Err(ModelError::Unavailable(
                "injected outage for episode 2 (StuckNote)".into(),
            ));
        }
        Ok(self.answer(req))
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        {
            let mut u = self.usage.borrow_mut();
            u.embed_calls += 1;
            u.embed_texts += texts.len();
            u.embed_chars += texts.iter().map(|t| t.chars().count()).sum::<usize>();
        }
        let mut out: Vec<Vec<f32>> = texts.iter().map(|t| self.embedder.embed(t)).collect();
        let h = texts.iter().fold(fnv("embed"), |h, t| mix(h ^ fnv(t)));
        match self.fault(h) {
            Some(0) => return Err(ModelError::Unavailable("injected outage (Faults30)".into())),
            Some(1) if !out.is_empty() => out[0][0] = f32::NAN,
            Some(_) if !out.is_empty() => out[0].push(0.0),
            _ => {}
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------- reading prompts

#[rustfmt::skip]
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "your", "with", "this", "that", "was", "were",
    "have", "has", "had", "its", "it's", "they", "them", "then", "than", "there", "their", "what",
    "when", "where", "which", "who", "will", "would", "could", "should", "can", "about", "from",
    "into", "out", "our", "ours", "all", "any", "some", "just", "also", "been", "being", "did",
    "does", "doing", "how", "why", "too", "very", "more", "most", "much", "many", "such", "only",
    "own", "same", "other", "each", "few", "both", "because", "while", "after", "before", "again",
    "once", "here", "yes", "yeah", "okay", "really", "like", "get", "got", "let", "lets", "one",
    "now", "over", "under", "off", "still", "even", "well", "way", "want", "know", "think", "make",
    "made", "see", "going", "thing", "things", "that's", "i'm", "don't", "user", "assistant",
    "tool", "said", "fact", "passage", "utc", "hey", "thanks", "thank", "great", "good", "sure",
    "she", "her", "him", "his", "hers", "these", "those", "may", "might", "must", "shall",
];

/// Lower-cased content words of `text`: three letters or more, no stop
/// words, not only digits.
pub fn content_words(text: &str) -> BTreeSet<String> {
    engram::base::text::words(text)
        .into_iter()
        .filter(|w| w.chars().count() >= 3)
        .filter(|w| !w.chars().all(|c| c.is_ascii_digit()))
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// A prompt line `[time] role: text` or `role: text`: the role, if any,
/// and the text.
pub fn line_text(line: &str) -> (Option<&str>, &str) {
    let mut rest = line;
    if rest.starts_with('[') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
        if let Some(i) = rest.find("] ") {
            rest = &rest[i + 2..];
        }
    }
    for role in ["user", "assistant", "tool", "system"] {
        if let Some(t) = rest.strip_prefix(role).and_then(|r| r.strip_prefix(": ")) {
            return (Some(role), t);
        }
    }
    (None, rest)
}

/// The text of prompt lines without their time and role prefixes.
fn strip_lines(text: &str) -> String {
    text.lines()
        .map(|l| line_text(l).1)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Numbered items `1. ...`, `2. ...` of a list, numbered in sequence;
/// continuation lines join the item before them.
pub fn numbered(list: &str) -> Vec<String> {
    let mut items: Vec<String> = Vec::new();
    for line in list.lines() {
        let want = format!("{}. ", items.len() + 1);
        if let Some(rest) = line.strip_prefix(want.as_str()) {
            items.push(rest.to_string());
        } else if let Some(last) = items.last_mut() {
            last.push('\n');
            last.push_str(line);
        }
    }
    items
}

/// A request made of a context after `head` and a numbered list after
/// `list`: the context and the items.
fn listed(content: &str, head: &str, list: &str) -> (String, Vec<String>) {
    let body = content.split_once(head).map_or(content, |(_, b)| b);
    match body.rsplit_once(list) {
        Some((context, items)) => (context.to_string(), numbered(items)),
        None => (body.to_string(), Vec::new()),
    }
}

/// A candidate or recalled item's text without its label (`fact (said
/// ...): `, `passage: `, `(date) `).
fn item_text(item: &str) -> String {
    let t = item.trim_start();
    let t = if let Some(rest) = t.strip_prefix("fact (said ") {
        rest.split_once("): ").map_or(rest, |(_, s)| s)
    } else if let Some(rest) = t.strip_prefix("passage: ") {
        rest
    } else if t.starts_with('(') {
        t.split_once(") ").map_or(t, |(_, s)| s)
    } else {
        t
    };
    strip_lines(t)
}

/// Sentences of `text`: ended by `.`, `!` or `?` before a space, or by a
/// line break.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '\n' {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
            continue;
        }
        cur.push(c);
        if matches!(c, '.' | '!' | '?') && chars.get(i + 1).is_none_or(|n| n.is_whitespace()) {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Realistic boundary, the way an LLM judge answers: a message that shares
/// content words with the recent messages continues (0.1-0.3, by how much
/// it shares); one that shares none is a likely shift (0.6); after an hour
/// or more of silence, a new session, 0.95.
pub fn cohesion_boundary(req: &TaskRequest) -> f32 {
    let (recent, new) = req.content.split_once("\nNew message").unwrap_or(("", ""));
    // "New message (3 hours after the previous one):"
    let gap = new.split_once(" after").map_or("", |(g, _)| g);
    if gap.contains("hour") || gap.contains("day") {
        return 0.95;
    }
    let recent = recent.split_once('\n').map_or("", |(_, r)| r);
    let a = content_words(&strip_lines(recent));
    let b = content_words(new_message(req));
    if a.is_empty() || b.is_empty() {
        return 0.5;
    }
    let shared = a.intersection(&b).count() as f32;
    let overlap = shared / a.len().min(b.len()) as f32;
    if shared == 0.0 {
        0.6
    } else {
        (0.3 - overlap).clamp(0.1, 0.3)
    }
}

/// 1-3 facts from the sentences of the episode in a `note` request:
/// subject a capitalised word (else "user"), object another content word,
/// the sentence itself as the fact.
pub fn note_facts(content: &str) -> Vec<Value> {
    let mut lines = content.lines();
    let header = lines.next().unwrap_or("");
    let mut candidates: Vec<String> = Vec::new();
    let mut role: Option<&str> = None;
    for line in lines {
        let (r, text) = line_text(line);
        if r.is_some() {
            role = r;
        }
        if role == Some("tool") || text.starts_with("[calls ") {
            continue;
        }
        for s in sentences(text) {
            let n = s.split_whitespace().count();
            if (4..=60).contains(&n) {
                candidates.push(s);
            }
        }
    }
    if candidates.is_empty() {
        return Vec::new();
    }
    let want = (1 + fnv(header) % 3) as usize;
    let want = want.min(candidates.len());
    let mut picked: Vec<&String> = (0..want)
        .map(|k| &candidates[k * candidates.len() / want])
        .collect();
    picked.dedup();
    picked.into_iter().filter_map(|s| fact_of(s)).collect()
}

fn fact_of(sentence: &str) -> Option<Value> {
    let clean = |w: &str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
    let subject = sentence
        .split_whitespace()
        .skip(1)
        .map(clean)
        .find(|w| {
            w.chars().count() >= 2
                && w.chars().next().is_some_and(|c| c.is_uppercase())
                && !STOPWORDS.contains(&w.to_lowercase().as_str())
        })
        .unwrap_or_else(|| "user".to_string());
    let subject_normal = subject.to_lowercase();
    let object = content_words(sentence)
        .into_iter()
        .filter(|w| w.chars().count() >= 4 && *w != subject_normal)
        .fold(None::<String>, |best, w| match best {
            Some(b) if b.chars().count() >= w.chars().count() => Some(b),
            _ => Some(w),
        })?;
    let lower = sentence.to_lowercase();
    let kind = if lower.contains("decided") {
        "decided"
    } else if lower.contains("agreed") {
        "agreed"
    } else if lower.contains("is done") || lower.contains("finished") {
        "done"
    } else if lower.contains("blocked") || lower.contains("stuck") {
        "blocked"
    } else if lower.starts_with("next") {
        "next"
    } else {
        "fact"
    };
    let mut s = engram::base::text::clip(sentence, 100);
    if !s.ends_with(['.', '!', '?', '…']) {
        s.push('.');
    }
    Some(json!({
        "subject": subject,
        "predicate": "mentions",
        "object": object,
        "sentence": s,
        "kind": kind,
    }))
}

/// `trace`: a fact is about an episode when they share a word of six
/// letters or more.
pub fn trace_answer(content: &str) -> String {
    let (facts, episodes) = content.split_once("\nEpisodes:\n").unwrap_or((content, ""));
    let facts = numbered(facts.split_once("Facts:\n").map_or(facts, |(_, f)| f));
    let episodes = numbered(episodes);
    let long = |t: &str| -> BTreeSet<String> {
        engram::base::text::words(t)
            .into_iter()
            .filter(|w| w.chars().count() >= 6)
            .collect()
    };
    let ep_words: Vec<BTreeSet<String>> = episodes
        .iter()
        .map(|e| long(e.split_once('\n').map_or("", |(_, t)| t)))
        .collect();
    let answer: Vec<Value> = facts
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let fw = long(f);
            let eps: Vec<usize> = ep_words
                .iter()
                .enumerate()
                .filter(|(_, ew)| !ew.is_disjoint(&fw))
                .map(|(j, _)| j + 1)
                .collect();
            json!({ "fact": i + 1, "episodes": eps })
        })
        .collect();
    json!({ "facts": answer }).to_string()
}

// ---------------------------------------------------------------- round counting

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    Complete,
    Embed,
}

struct Waiting {
    kind: CallKind,
    task: &'static str,
    released: Rc<Cell<bool>>,
    waker: Waker,
}

thread_local! {
    /// The calls waiting for the driver of this thread; `None` when no
    /// driver runs (wrapped calls then go straight through).
    static GATE: RefCell<Option<Vec<Waiting>>> = const { RefCell::new(None) };
}

/// A wrapped call's wait for the driver to release it.
struct Held {
    kind: CallKind,
    task: &'static str,
    released: Option<Rc<Cell<bool>>>,
}

impl Future for Held {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        match &this.released {
            Some(flag) if flag.get() => Poll::Ready(()),
            Some(_) => Poll::Pending,
            None => {
                let flag = Rc::new(Cell::new(false));
                let held = GATE.with(|g| match g.borrow_mut().as_mut() {
                    Some(waiting) => {
                        waiting.push(Waiting {
                            kind: this.kind,
                            task: this.task,
                            released: flag.clone(),
                            waker: cx.waker().clone(),
                        });
                        true
                    }
                    None => false,
                });
                if !held {
                    return Poll::Ready(());
                }
                this.released = Some(flag);
                Poll::Pending
            }
        }
    }
}

/// A slow model: each `complete` and `embed` call waits (pending) until
/// [`drive`] releases it, so the driver sees which calls are in flight
/// together. Outside [`drive`] calls go straight through.
#[derive(Clone)]
pub struct Rounds<M>(pub M);

impl<M: Model> Model for Rounds<M> {
    async fn complete(&self, request: &TaskRequest) -> Result<String, ModelError> {
        Held {
            kind: CallKind::Complete,
            task: request.task.name(),
            released: None,
        }
        .await;
        self.0.complete(request).await
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        Held {
            kind: CallKind::Embed,
            task: "embed",
            released: None,
        }
        .await;
        self.0.embed(texts).await
    }
    fn count_tokens(&self, text: &str) -> usize {
        self.0.count_tokens(text)
    }
}

/// Sequential model round trips of one driven future.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundCount {
    /// Rounds in which at least one `complete` call was in flight.
    pub complete_rounds: usize,
    /// Rounds in which only `embed` calls were in flight.
    pub embed_rounds: usize,
    /// Wrapped calls made.
    pub calls: usize,
    /// Calls with batched judgments counted once: in each round, one per
    /// task among the calls in flight together (the `segment` judgments of
    /// two messages, or three `trace` batches, sent at once count once).
    pub batches: usize,
    /// [`Self::batches`] of `complete` calls only (embeddings left out).
    pub complete_batches: usize,
}

impl RoundCount {
    /// Every round.
    pub fn rounds(&self) -> usize {
        self.complete_rounds + self.embed_rounds
    }
}

/// Runs `f` to completion on this thread, counting round trips of the
/// [`Rounds`] models it calls: whenever `f` is pending with calls waiting,
/// that is one round; they are all released together and `f` is polled
/// again. Calls started together (joined) share a round; calls made one
/// after the other take one round each.
pub fn drive<F: Future>(f: F) -> (F::Output, RoundCount) {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            GATE.with(|g| *g.borrow_mut() = None);
        }
    }
    GATE.with(|g| {
        let mut g = g.borrow_mut();
        assert!(g.is_none(), "drive is not reentrant");
        *g = Some(Vec::new());
    });
    let _reset = Reset;
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    let mut count = RoundCount::default();
    let mut idle = 0u64;
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return (v, count);
        }
        let waiting = GATE.with(|g| std::mem::take(g.borrow_mut().as_mut().expect("driving")));
        if waiting.is_empty() {
            // Pending on something else (a yielding store): poll again.
            idle += 1;
            assert!(idle < 10_000_000, "the driven future makes no progress");
            continue;
        }
        idle = 0;
        count.calls += waiting.len();
        let mut tasks: Vec<&str> = waiting.iter().map(|w| w.task).collect();
        tasks.sort_unstable();
        tasks.dedup();
        count.batches += tasks.len();
        count.complete_batches += tasks.iter().filter(|t| **t != "embed").count();
        if waiting.iter().any(|w| w.kind == CallKind::Complete) {
            count.complete_rounds += 1;
        } else {
            count.embed_rounds += 1;
        }
        for w in waiting {
            w.released.set(true);
            w.waker.wake();
        }
    }
}

/// The core's own join of two futures: what the engine uses to send calls
/// together, proven here to share a round.
pub use engram::base::join::join2;

// ---------------------------------------------------------------- invariants

/// Where a check ran: conversation, policy, and the message just added
/// (1-based index in the conversation).
#[derive(Debug, Clone)]
pub struct At {
    /// Conversation name.
    pub conversation: String,
    /// Policy name.
    pub policy: &'static str,
    /// Message index (1-based) of the call just made.
    pub index: usize,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{} / {} / after message {}]",
            self.conversation, self.policy, self.index
        )
    }
}

/// The invariants the harness checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Invariant {
    /// Every public call succeeds, and reports what the memory holds.
    CallOk,
    /// The view is within the ceiling.
    Ceiling,
    /// Every fade's landing is within the ceiling.
    Landing,
    /// Every message is kept once, in order, as added.
    Messages,
    /// Episodes are contiguous, cover a prefix, and stay within the maximum size.
    Episodes,
    /// The facts block shows whenever a sealed episode holds a live fact.
    FactsBlock,
    /// No fade runs for more than [`STUCK_FADE_CALLS`] calls.
    StuckFade,
    /// Every recall block of an older user message is distilled.
    Distilled,
    /// The rendered view is a request the OpenAI and Anthropic message rules
    /// accept ([`check_chat`]).
    Chat,
}

impl Invariant {
    /// Every invariant.
    pub const ALL: [Invariant; 9] = [
        Invariant::CallOk,
        Invariant::Ceiling,
        Invariant::Landing,
        Invariant::Messages,
        Invariant::Episodes,
        Invariant::FactsBlock,
        Invariant::StuckFade,
        Invariant::Distilled,
        Invariant::Chat,
    ];

    /// Its short name.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::CallOk => "call-ok",
            Invariant::Ceiling => "ceiling",
            Invariant::Landing => "landing",
            Invariant::Messages => "messages",
            Invariant::Episodes => "episodes",
            Invariant::FactsBlock => "facts-block",
            Invariant::StuckFade => "stuck-fade",
            Invariant::Distilled => "distilled",
            Invariant::Chat => "chat",
        }
    }
}

/// The view is within the ceiling.
pub fn check_ceiling(at: &At, view: &View, config: &Config) -> Result<(), String> {
    if view.tokens <= config.ceiling_tokens {
        return Ok(());
    }
    // The one exception: what cannot leave (the newest episode and the
    // messages after it) is over the ceiling on its own, and the view says so.
    if view
        .over_ceiling
        .as_deref()
        .is_some_and(|r| r.contains("cannot leave"))
    {
        return Ok(());
    }
    Err(format!(
        "{at} view is {} tokens, over the ceiling of {}",
        view.tokens, config.ceiling_tokens
    ))
}

/// Whether `messages` (an OpenAI `messages` array) follows the OpenAI chat
/// rules: every assistant message with `tool_calls` is followed by one
/// `tool` message per call id before any other message; a `tool` message
/// answers a call of that assistant message, once; an assistant message has
/// text or tool calls, any other message text. Calls of the last message may
/// still wait (the host is running the tools: it renders again after their
/// outputs).
pub fn openai_chat_errors(messages: &[Value]) -> Result<(), String> {
    let mut waiting: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        let text = m["content"].as_str().unwrap_or_default();
        let calls = m["tool_calls"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if !matches!(role, "system" | "user" | "assistant" | "tool") {
            return Err(format!("message {i}: role {role:?}"));
        }
        if role == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default();
            match waiting.iter().position(|w| w == id) {
                Some(at) => {
                    waiting.remove(at);
                }
                None => {
                    return Err(format!(
                        "message {i}: tool output for {id:?}, no such call right before it"
                    ))
                }
            }
            continue;
        }
        if !waiting.is_empty() {
            return Err(format!(
                "message {i} ({role}) comes while calls {waiting:?} have no output"
            ));
        }
        if text.trim().is_empty() && calls.is_empty() {
            return Err(format!("message {i} ({role}) is empty"));
        }
        if !calls.is_empty() && role != "assistant" {
            return Err(format!("message {i}: a {role} message with tool calls"));
        }
        waiting = calls
            .iter()
            .map(|c| c["id"].as_str().unwrap_or_default().to_string())
            .collect();
    }
    Ok(())
}

/// Whether `messages` (an OpenAI `messages` array), converted as a host does
/// for Anthropic's Messages API, follows its rules. The conversion: system
/// messages before the first other message go to `system`; a later system
/// message is a user text block; a tool output is a `tool_result` block of a
/// user message, a tool call a `tool_use` block of its assistant message;
/// consecutive messages of one role are one message (as the API merges
/// them). The rules: roles alternate user / assistant; every `tool_use` is
/// answered by a `tool_result` in the very next message, where tool results
/// come before any text, and no `tool_result` answers anything else; no
/// message is empty. Calls of the last message may still wait.
pub fn anthropic_chat_errors(messages: &[Value]) -> Result<(), String> {
    // (role, blocks): a block is ("text", text) / ("tool_use", id) / ("tool_result", id).
    let mut merged: Vec<(&str, Vec<(&str, String)>)> = Vec::new();
    let mut leading = true;
    for m in messages {
        let role = m["role"].as_str().unwrap_or_default();
        let text = m["content"].as_str().unwrap_or_default().to_string();
        if role == "system" && leading {
            continue;
        }
        leading = false;
        let (role, mut blocks) = match role {
            "tool" => (
                "user",
                vec![(
                    "tool_result",
                    m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                )],
            ),
            "assistant" => {
                let mut b = Vec::new();
                if !text.trim().is_empty() {
                    b.push(("text", text));
                }
                for c in m["tool_calls"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                    b.push(("tool_use", c["id"].as_str().unwrap_or_default().to_string()));
                }
                ("assistant", b)
            }
            _ => ("user", vec![("text", text)]),
        };
        match merged.last_mut() {
            Some((r, b)) if *r == role => b.append(&mut blocks),
            _ => merged.push((role, blocks)),
        }
    }
    for (i, (role, blocks)) in merged.iter().enumerate() {
        if blocks.is_empty()
            || blocks
                .iter()
                .any(|(k, t)| *k == "text" && t.trim().is_empty())
        {
            return Err(format!(
                "message {i} ({role}) is empty or has an empty text block"
            ));
        }
        let results: Vec<&String> = blocks
            .iter()
            .filter(|(k, _)| *k == "tool_result")
            .map(|(_, id)| id)
            .collect();
        let asked: Vec<&String> = match i.checked_sub(1).map(|p| &merged[p]) {
            Some(("assistant", b)) => b
                .iter()
                .filter(|(k, _)| *k == "tool_use")
                .map(|(_, id)| id)
                .collect(),
            _ => Vec::new(),
        };
        if results.iter().any(|r| !asked.contains(r)) {
            return Err(format!(
                "message {i}: a tool_result answers no tool_use of the message before"
            ));
        }
        if !asked.is_empty() {
            // The last message may still lack outputs the host is running.
            if i + 1 < merged.len() && asked.iter().any(|a| !results.contains(a)) {
                return Err(format!(
                    "message {i}: tool_use {asked:?} not all answered here"
                ));
            }
            let first_other = blocks.iter().position(|(k, _)| *k != "tool_result");
            if first_other.is_some_and(|p| p < results.len()) {
                return Err(format!("message {i}: text before the tool results"));
            }
        }
        let uses = blocks.iter().any(|(k, _)| *k == "tool_use");
        if uses && i + 1 < merged.len() && merged[i + 1].0 != "user" {
            return Err(format!(
                "message {i}: tool_use not followed by a user message"
            ));
        }
    }
    Ok(())
}

/// The rendered view is a chat request under the OpenAI and the Anthropic
/// rules.
pub fn check_chat(at: &At, view: &View) -> Result<(), String> {
    let messages = view.to_openai();
    openai_chat_errors(&messages).map_err(|e| format!("{at} OpenAI rules: {e}"))?;
    anthropic_chat_errors(&messages).map_err(|e| format!("{at} Anthropic rules: {e}"))
}

/// Every fade's landing is within the ceiling.
pub fn check_landings(at: &At, fades: &[Fade], config: &Config) -> Result<(), String> {
    match fades.iter().find(|f| f.landing > config.ceiling_tokens) {
        Some(f) => Err(format!(
            "{at} fade {} ({:?}) lands at {} tokens, over the ceiling of {} (view was {}, turn {})",
            f.id, f.reason, f.landing, config.ceiling_tokens, f.view_tokens, f.turn_tokens
        )),
        None => Ok(()),
    }
}

/// Every message added is kept exactly once, in order, as added: ids
/// 1..=n, n the number added, contents equal; a message erased on request
/// is kept as its tombstone (same id and role, no content, no tokens).
pub fn check_messages(at: &At, kept: &[Message], added: &[NewMessage]) -> Result<(), String> {
    if kept.len() != added.len() {
        return Err(format!(
            "{at} {} messages kept, {} added",
            kept.len(),
            added.len()
        ));
    }
    for (i, (k, a)) in kept.iter().zip(added).enumerate() {
        let want = i as u64 + 1;
        if k.id != want {
            return Err(format!("{at} message at position {want} has id {}", k.id));
        }
        if k.erased {
            if k.role != a.role || !k.content.is_empty() || k.tokens != 0 {
                return Err(format!(
                    "{at} erased message {want} keeps more than its tombstone"
                ));
            }
            continue;
        }
        if k.role != a.role
            || k.content != a.content
            || k.tool_calls != a.tool_calls
            || k.tool_call_id != a.tool_call_id
        {
            return Err(format!(
                "{at} message {want} differs from what was added: kept {:?} {:?}, added {:?} {:?}",
                k.role,
                engram::base::text::clip(&k.content, 20),
                a.role,
                engram::base::text::clip(&a.content, 20)
            ));
        }
    }
    Ok(())
}

/// For each message (by index), whether a cut is allowed before it: before
/// a user message always, never before a tool output, before another
/// message when no tool call waits for its output (the rule of
/// `engram::segment::cut_allowed`, over the whole conversation).
pub fn cut_positions(messages: &[Message]) -> Vec<bool> {
    let mut pending: Vec<&str> = Vec::new();
    messages
        .iter()
        .map(|m| {
            let ok = match m.role {
                Role::User => true,
                Role::Tool => false,
                Role::Assistant | Role::System => pending.is_empty(),
            };
            if m.role == Role::User {
                pending.clear();
            }
            pending.extend(m.tool_calls.iter().map(|c| c.id.as_str()));
            if let Some(id) = &m.tool_call_id {
                pending.retain(|p| p != id);
            }
            ok
        })
        .collect()
}

/// Episodes are contiguous and cover a prefix of the messages with no
/// overlap; their token counts are their messages'; none is over
/// `max_episode_tokens` unless no cut was allowed inside it (one message,
/// or a tool call with its output).
pub fn check_episodes(
    at: &At,
    episodes: &[EpisodeInfo],
    messages: &[Message],
    config: &Config,
) -> Result<(), String> {
    let cuts = cut_positions(messages);
    let mut next = 1u64;
    for info in episodes {
        let e = &info.episode;
        if e.first != next {
            return Err(format!(
                "{at} episode {} starts at message {}, expected {next} ({})",
                e.id,
                e.first,
                if e.first < next { "overlap" } else { "gap" }
            ));
        }
        if e.last < e.first || e.last as usize > messages.len() {
            return Err(format!(
                "{at} episode {} covers messages {}-{} of {}",
                e.id,
                e.first,
                e.last,
                messages.len()
            ));
        }
        next = e.last + 1;
        let range = (e.first - 1) as usize..e.last as usize;
        let tokens: usize = messages[range.clone()].iter().map(|m| m.tokens).sum();
        if tokens != e.tokens {
            return Err(format!(
                "{at} episode {} says {} tokens, its messages hold {tokens}",
                e.id, e.tokens
            ));
        }
        let inner_cut = range.clone().skip(1).any(|i| cuts[i]);
        if tokens > config.max_episode_tokens && inner_cut {
            return Err(format!(
                "{at} episode {} (messages {}-{}) holds {tokens} tokens, over max_episode_tokens {} \
                 though a cut was allowed inside it",
                e.id, e.first, e.last, config.max_episode_tokens
            ));
        }
    }
    Ok(())
}

/// The smallest episode, in tokens.
pub fn smallest_episode(episodes: &[EpisodeInfo]) -> Option<usize> {
    episodes.iter().map(|e| e.episode.tokens).min()
}

/// The facts block is in the view whenever a sealed episode holds a live
/// fact. `facts` is asked for only when the view has no facts block.
pub fn check_facts_block(
    at: &At,
    view: &View,
    episodes: &[EpisodeInfo],
    facts: impl FnOnce() -> Vec<Fact>,
) -> Result<(), String> {
    if view.items.iter().any(|i| i.kind == ItemKind::Facts) {
        return Ok(());
    }
    let sealed: Vec<&EpisodeInfo> = episodes
        .iter()
        .filter(|e| e.episode.state == EpisodeState::Sealed && !e.episode.facts.is_empty())
        .collect();
    if sealed.is_empty() {
        return Ok(());
    }
    let facts = facts();
    for e in sealed {
        if let Some(f) = e
            .episode
            .facts
            .iter()
            .filter_map(|id| facts.iter().find(|f| f.id == *id))
            .find(|f| f.is_live())
        {
            return Err(format!(
                "{at} no facts block in the view, but sealed episode {} holds live fact {} ({:?})",
                e.episode.id,
                f.id,
                engram::base::text::clip(&f.sentence, 20)
            ));
        }
    }
    Ok(())
}

/// Calls a fade may run for before it counts as stuck.
pub const STUCK_FADE_CALLS: usize = 50;

/// Watches fades across calls: a fade still running [`STUCK_FADE_CALLS`]
/// calls after it was first seen running is stuck.
#[derive(Debug, Default)]
pub struct FadeWatch {
    first_seen: BTreeMap<u64, usize>,
}

impl FadeWatch {
    /// Checks after call number `call` (counting every public call). The
    /// message names the leaving episodes and their last note failure.
    pub fn check(
        &mut self,
        at: &At,
        call: usize,
        fades: &[Fade],
        episodes: &[EpisodeInfo],
    ) -> Result<(), String> {
        for f in fades.iter().filter(|f| f.finished_at.is_none()) {
            let first = *self.first_seen.entry(f.id).or_insert(call);
            if call - first > STUCK_FADE_CALLS {
                let leaving: Vec<String> = episodes
                    .iter()
                    .map(|e| &e.episode)
                    .filter(|e| e.state == EpisodeState::Leaving)
                    .map(|e| {
                        let last = e.note_failures.last().map_or("-", |n| n.error.as_str());
                        format!(
                            "episode {} ({} failed notes, last: {last})",
                            e.id,
                            e.note_failures.len()
                        )
                    })
                    .collect();
                return Err(format!(
                    "{at} fade {} ({:?}, landing {}) has been running for {} calls; leaving: {}",
                    f.id,
                    f.reason,
                    f.landing,
                    call - first,
                    if leaving.is_empty() {
                        "none".to_string()
                    } else {
                        leaving.join(", ")
                    }
                ));
            }
        }
        Ok(())
    }
}

/// Every recall block whose user message is older than the latest user
/// message is distilled.
pub fn check_distilled(
    at: &At,
    recalls: &[RecallBlock],
    messages: &[Message],
) -> Result<(), String> {
    let Some(latest) = messages.iter().rev().find(|m| m.role == Role::User) else {
        return Ok(());
    };
    match recalls
        .iter()
        .find(|b| b.message < latest.id && b.distilled.is_none() && b.gave_way.is_none())
    {
        Some(b) => Err(format!(
            "{at} recall block {} of user message {} was neither distilled nor gave way (latest user message is {})",
            b.id, b.message, latest.id
        )),
        None => Ok(()),
    }
}

/// Tracks recall blocks from what `add_message` reports (the block placed
/// before a user message, the block a reply distilled), so the distill
/// invariant is checked after every call without reading every block;
/// [`check_distilled`] over `Memory::recalls` cross-checks it now and then.
#[derive(Debug, Default)]
pub struct DistillWatch {
    /// Blocks not distilled yet: block id -> its user message.
    open: BTreeMap<u64, u64>,
    /// Blocks reported distilled.
    pub distilled: BTreeSet<u64>,
    latest_user: u64,
}

impl DistillWatch {
    /// Records what adding a message of `role` reported.
    pub fn added(&mut self, role: Role, added: &Added) {
        if role == Role::User {
            self.latest_user = added.message;
        }
        if let Some(block) = added.recall {
            self.open.insert(block, added.message);
        }
        if let Some((block, _)) = &added.distilled {
            self.open.remove(block);
            self.distilled.insert(*block);
        }
        if let Some(m) = &added.maintained {
            for (block, _) in &m.distilled {
                self.open.remove(block);
                self.distilled.insert(*block);
            }
            for block in &m.gave_way {
                self.open.remove(block);
            }
        }
    }

    /// Brings the watch up to the stored blocks (a block can give way in a
    /// call that does not report it, or be distilled by a later user
    /// message's round).
    pub fn refresh(&mut self, recalls: &[RecallBlock]) {
        for b in recalls {
            if b.distilled.is_some() {
                self.distilled.insert(b.id);
            }
            if b.distilled.is_some() || b.gave_way.is_some() {
                self.open.remove(&b.id);
            }
        }
    }

    /// Whether some block of an older user message is still open.
    pub fn suspects(&self) -> bool {
        self.open.iter().any(|(_, m)| *m < self.latest_user)
    }

    /// Every block of a user message older than the latest one is distilled.
    pub fn check(&self, at: &At) -> Result<(), String> {
        match self.open.iter().find(|(_, m)| **m < self.latest_user) {
            Some((block, m)) => Err(format!(
                "{at} recall block {block} of user message {m} was never distilled (latest user message is {})",
                self.latest_user
            )),
            None => Ok(()),
        }
    }

    /// The blocks `recalls` holds agree with what the calls reported.
    pub fn cross_check(&self, at: &At, recalls: &[RecallBlock]) -> Result<(), String> {
        for b in recalls {
            let reported = self.distilled.contains(&b.id);
            if reported != b.distilled.is_some() {
                return Err(format!(
                    "{at} recall block {} is {}distilled in the memory, but the calls reported it {}",
                    b.id,
                    if b.distilled.is_some() { "" } else { "not " },
                    if reported { "distilled" } else { "not distilled" }
                ));
            }
        }
        Ok(())
    }
}

/// A percentile (nearest rank) of `values`, 0 when empty.
pub fn percentile(values: &[usize], p: f64) -> usize {
    if values.is_empty() {
        return 0;
    }
    let mut v = values.to_vec();
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram::llm::request;

    fn req() -> TaskRequest {
        request(Task::Segment, "New message:\n[t] user: hi".into(), 1)
    }

    #[test]
    fn calls_in_sequence_take_one_round_each() {
        let m = Rounds(PolicyModel::new(Policy::KeepAll));
        let (out, count) = drive(async {
            let a = m.complete(&req()).await;
            let b = m.complete(&req()).await;
            (a, b)
        });
        assert!(out.0.is_ok() && out.1.is_ok());
        assert_eq!(
            count,
            RoundCount {
                complete_rounds: 2,
                embed_rounds: 0,
                calls: 2,
                batches: 2,
                complete_batches: 2
            }
        );
    }

    #[test]
    fn joined_calls_share_one_round() {
        let m = Rounds(PolicyModel::new(Policy::KeepAll));
        let (out, count) = drive(join2(m.complete(&req()), m.complete(&req())));
        assert!(out.0.is_ok() && out.1.is_ok());
        assert_eq!(count.complete_rounds, 1);
        assert_eq!(count.calls, 2);
        // Two judgments of one task sent together count once.
        assert_eq!(count.batches, 1);
        // futures' join counts the same.
        let (_, count) = drive(futures::future::join(
            m.complete(&req()),
            m.embed(&["x".to_string()]),
        ));
        assert_eq!((count.complete_rounds, count.embed_rounds), (1, 0));
        // An embed after a joined pair is a round of its own.
        let (_, count) = drive(async {
            let _ = join2(m.complete(&req()), m.complete(&req())).await;
            m.embed(&["x".to_string()]).await
        });
        assert_eq!(
            count,
            RoundCount {
                complete_rounds: 1,
                embed_rounds: 1,
                calls: 3,
                batches: 2,
                complete_batches: 1
            }
        );
    }

    #[test]
    fn outside_drive_calls_go_straight_through() {
        let m = Rounds(PolicyModel::new(Policy::KeepAll));
        assert!(engram::testing::block_on(m.complete(&req())).is_ok());
    }

    #[test]
    fn the_policies_answer_every_task_in_its_schema() {
        let note = "Episode 3 (messages 4-6), last message at 2025-01-01 10:00 UTC:\n\
                    [2025-01-01 09:58 UTC] user: I think Maya should price Loam at 39 euros for launch.\n\
                    [2025-01-01 09:59 UTC] assistant: We decided to keep the price and change the shipping.\n";
        let facts = note_facts(note);
        assert!(!facts.is_empty() && facts.len() <= 3, "{facts:?}");
        assert_eq!(facts[0]["subject"], "Maya");
        let trace = "Facts:\n1. Maya prices Loam at launch.\n\nEpisodes:\n1. (messages 1-2)\nuser: the Loam launch is soon\n\n2. (message 3)\nuser: hello\n";
        let t: Value = serde_json::from_str(&trace_answer(trace)).unwrap();
        assert_eq!(t["facts"][0]["episodes"], json!([1]));
        let rel = request(
            Task::Relevance,
            "Recent conversation:\nuser: the soil sensor price\n\nCandidates:\n1. fact (said 2025-01-01): The soil sensor price is 39 euros.\n2. passage: [2025-01-01] user: hello there\n".into(),
            1,
        );
        for (p, want) in [
            (Policy::KeepAll, json!([1, 2])),
            (Policy::KeepNothing, json!([])),
            (Policy::Realistic, json!([1])),
        ] {
            let a: Value = serde_json::from_str(&PolicyModel::new(p).answer(&rel)).unwrap();
            assert_eq!(a["relevant"], want, "{p:?}");
        }
        let seg = request(
            Task::Segment,
            "Current episode (most recent messages):\n[2025-01-01 09:58 UTC] user: soil sensor price\n\nNew message (1 minutes after the previous one):\n[2025-01-01 09:59 UTC] user: soil sensor price\n".into(),
            1,
        );
        // The same words: it continues (the lowest judgment).
        assert_eq!(cohesion_boundary(&seg), 0.1);
        let shift = request(
            Task::Segment,
            "Current episode (most recent messages):\n[2025-01-01 09:58 UTC] user: soil sensor price\n\nNew message (1 minutes after the previous one):\n[2025-01-01 09:59 UTC] user: weekend hiking trip\n".into(),
            1,
        );
        assert_eq!(cohesion_boundary(&shift), 0.6);
        let session = request(
            Task::Segment,
            "Current episode (most recent messages):\n[2025-01-01 09:58 UTC] user: soil sensor price\n\nNew message (3 hours after the previous one):\n[2025-01-01 12:59 UTC] user: soil sensor price\n".into(),
            1,
        );
        assert_eq!(cohesion_boundary(&session), 0.95);
        for task in Task::ALL {
            let content = match task {
                Task::Note => note.to_string(),
                Task::Trace => trace.to_string(),
                Task::Resolve => "Name: Maya\nSentence: x\n\nKnown entities:\n1. Maya B\n".into(),
                Task::Reconcile => "New fact: a\n\nHeld facts:\n1. b (said 2025-01-01)\n".into(),
                Task::Split => "User message:\nFirst this. Then that?".into(),
                Task::Distill => "The turn:\nuser: soil price\n\nRecalled items:\n1. (2025-01-01) soil price is 39\n".into(),
                _ => seg.content.clone(),
            };
            let r = request(task, content, 1);
            let a = PolicyModel::new(Policy::Realistic).answer(&r);
            serde_json::from_str::<Value>(&a).unwrap_or_else(|e| panic!("{task:?}: {e}: {a}"));
        }
    }

    #[test]
    fn the_generated_conversation_is_deterministic_and_shaped() {
        let a = generated(600, 7);
        let b = generated(600, 7);
        assert_eq!(a.turns, b.turns);
        assert_eq!(a.turns.len(), 600);
        assert!(a.turns.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(a
            .turns
            .iter()
            .any(|t| matches!(t.tool, Some(ToolPart::Calls(_)))));
        assert!(a
            .turns
            .windows(2)
            .any(|w| w[1].at - w[0].at > 24 * 3_600_000));
    }
}
