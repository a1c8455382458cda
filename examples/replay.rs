//! Replays a bundled multi-day sample conversation through engram and shows
//! what the memory does with it: episodes forming, activation fading with the
//! clock, fades sealing and forgetting episodes, facts being noted, merged and
//! retired.
//!
//! The model is scripted from the sample file (boundary judgments, the facts
//! each note returns, trace, reconcile and resolve answers) and the manual
//! clock follows the messages' times, so the output is the same on every run.
//!
//! ```text
//! cargo run --example replay -- [PATH] [--ceiling TOKENS] [--quiet]
//! ```
//!
//! PATH defaults to `examples/sample/conversation.json`. The run ends with
//! the sample's own checks (the contradiction retired the old fact, the
//! restatement merged, the sleeps came where expected, distill kept what
//! mattered, the view stayed within the ceiling, ...) and exits with status 1
//! when one fails.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::rc::Rc;

use engram::testing::{block_on, new_message, ManualClock, MemoryStore, ScriptedModel};
use engram::types::fade::Fade;
use engram::types::recall::RecallBlock;
use engram::view::explain::EpisodeExplanation;
use engram::view::{ItemKind, View, ViewItem};
use engram::Config;
use engram::EpisodeInfo;
use engram::EpisodeState;
use engram::Fact;
use engram::Memory;
use engram::NewFact;
use engram::NewMessage;
use engram::Role;
use engram::Task;
use engram::TaskRequest;
use engram::ToolCall;
use serde::Deserialize;

/// `println!` that ends the program quietly when stdout is closed (e.g.
/// `scripts/run | head`).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($t)*).is_err() {
            std::process::exit(0);
        }
    }};
}

/// `print!` with the same behaviour as [`say!`].
macro_rules! say_raw {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        if write!(std::io::stdout(), $($t)*).is_err() {
            std::process::exit(0);
        }
    }};
}

const DEFAULT_SAMPLE: &str = "examples/sample/conversation.json";

type Engine = Memory<MemoryStore, ScriptedModel, ManualClock>;
type Fallible<T> = std::result::Result<T, Box<dyn std::error::Error>>;

// ---- The sample file --------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sample {
    title: String,
    about: String,
    /// Config fields that differ from engram's defaults.
    config: serde_json::Map<String, serde_json::Value>,
    messages: Vec<SampleMessage>,
    topics: Vec<Topic>,
    reconcile: Vec<ReconcileRule>,
    resolve: Vec<ResolveRule>,
    expect: Expect,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleMessage {
    n: u64,
    at: String,
    role: String,
    topic: String,
    /// The scripted boundary judgment (null where none is asked).
    boundary: Option<f32>,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    /// User messages: topics whose facts and passages recall finds relevant.
    #[serde(default)]
    recall: Vec<String>,
    /// User messages: topics whose recalled items distill keeps (default:
    /// `recall`).
    #[serde(default)]
    kept: Option<Vec<String>>,
    /// User messages: the `split` answer (default: the whole message).
    #[serde(default)]
    parts: Option<Vec<String>>,
    content: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Topic {
    id: String,
    title: String,
    /// Topics whose episodes this topic's facts are also about (trace answers).
    related: Vec<String>,
    facts: Vec<SampleFact>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SampleFact {
    subject: String,
    predicate: String,
    object: String,
    sentence: String,
    kind: String,
    /// The message that says it: the note of the episode holding this
    /// message returns the fact.
    said_in: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReconcileRule {
    new: String,
    held: String,
    relation: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveRule {
    name: String,
    entity: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    retired: Vec<Pair>,
    restated: Vec<Pair>,
    aliases: Vec<AliasExpect>,
    sleeps_at: Vec<u64>,
    /// Facts the recall block placed before a user message shows.
    #[serde(default)]
    recalled: Vec<RecalledExpect>,
    /// What distill kept of the recall block before a user message.
    #[serde(default)]
    distilled: Vec<DistilledExpect>,
    together: Vec<Vec<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DistilledExpect {
    before: u64,
    /// The facts distill kept, exactly (empty: it kept nothing and the block
    /// left the view).
    kept: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecalledExpect {
    before: u64,
    fact: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Pair {
    fact: String,
    by: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AliasExpect {
    entity: String,
    alias: String,
}

/// The sample, checked, with the lookups the scripted model needs.
struct Script {
    sample: Sample,
    times: Vec<i64>,
    boundary_by_text: BTreeMap<String, Option<f32>>,
    topic_of_sentence: BTreeMap<String, String>,
    related: BTreeMap<String, BTreeSet<String>>,
    /// Answers the script had no rule for (the sample is incomplete).
    misses: RefCell<Vec<String>>,
}

impl Script {
    fn load(path: &str) -> Fallible<Script> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        let sample: Sample = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
        let mut times = Vec::new();
        let mut boundary_by_text = BTreeMap::new();
        let topic_ids: BTreeSet<&str> = sample.topics.iter().map(|t| t.id.as_str()).collect();
        for (i, m) in sample.messages.iter().enumerate() {
            let bad = |what: String| format!("{path}: message {}: {what}", i + 1);
            if m.n != i as u64 + 1 {
                return Err(bad(format!("numbered {}, expected {}", m.n, i + 1)).into());
            }
            let at = parse_time(&m.at).map_err(bad)?;
            if times.last().is_some_and(|&t| at < t) {
                return Err(bad("its time is before the previous message's".into()).into());
            }
            times.push(at);
            let named = m.recall.iter().chain(m.kept.iter().flatten());
            for t in std::iter::once(&m.topic).chain(named) {
                if !topic_ids.contains(t.as_str()) {
                    return Err(bad(format!("unknown topic {t:?}")).into());
                }
            }
            let recall_fields = !m.recall.is_empty() || m.kept.is_some() || m.parts.is_some();
            if m.role != "user" && recall_fields {
                return Err(bad("only user messages carry recall, kept or parts".into()).into());
            }
            let key = first_line(&m.content).to_string();
            if boundary_by_text.insert(key, m.boundary).is_some() {
                return Err(bad("its first line repeats an earlier message's".into()).into());
            }
        }
        let mut topic_of_sentence = BTreeMap::new();
        let mut related = BTreeMap::new();
        for t in &sample.topics {
            let mut r: BTreeSet<String> = t.related.iter().cloned().collect();
            r.insert(t.id.clone());
            for id in &r {
                if !topic_ids.contains(id.as_str()) {
                    return Err(
                        format!("{path}: topic {}: unknown related topic {id}", t.id).into(),
                    );
                }
            }
            related.insert(t.id.clone(), r);
            for f in &t.facts {
                if f.said_in == 0 || f.said_in > sample.messages.len() as u64 {
                    return Err(
                        format!("{path}: fact {:?}: no message {}", f.sentence, f.said_in).into(),
                    );
                }
                if topic_of_sentence
                    .insert(f.sentence.clone(), t.id.clone())
                    .is_some()
                {
                    return Err(format!("{path}: fact {:?} appears twice", f.sentence).into());
                }
            }
        }
        Ok(Script {
            sample,
            times,
            boundary_by_text,
            topic_of_sentence,
            related,
            misses: RefCell::new(Vec::new()),
        })
    }

    fn miss(&self, what: String) -> Option<String> {
        self.misses.borrow_mut().push(what);
        None
    }

    fn topics_of(&self, first: u64, last: u64) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for m in &self.sample.messages[(first - 1) as usize..last as usize] {
            if !out.contains(&m.topic.as_str()) {
                out.push(&m.topic);
            }
        }
        out
    }

    /// The user message a recall prompt is about: the latest one quoted in it.
    fn user_message_in(&self, content: &str) -> Option<&SampleMessage> {
        self.sample
            .messages
            .iter()
            .rev()
            .filter(|m| m.role == "user")
            .find(|m| content.contains(&*prefix(&m.content, 60)))
    }

    /// Topics of one candidate line of a recall prompt: the fact whose
    /// sentence comes first in it, else the messages a passage quotes.
    fn topics_of_line(&self, line: &str) -> BTreeSet<&str> {
        let fact = self
            .topic_of_sentence
            .iter()
            .filter_map(|(sentence, topic)| line.find(sentence.as_str()).map(|i| (i, topic)))
            .min_by_key(|(i, _)| *i);
        if let Some((_, topic)) = fact {
            return BTreeSet::from([topic.as_str()]);
        }
        self.sample
            .messages
            .iter()
            .filter(|m| line.contains(&*prefix(&m.content, 40)))
            .map(|m| m.topic.as_str())
            .collect()
    }

    /// Numbers of the candidate lines after `heading` whose topics meet `topics`.
    fn pick(&self, content: &str, heading: &str, topics: &[String]) -> Vec<usize> {
        let Some((_, list)) = content.split_once(heading) else {
            return Vec::new();
        };
        list.lines()
            .filter_map(numbered)
            .filter(|(_, line)| {
                self.topics_of_line(line)
                    .iter()
                    .any(|t| topics.iter().any(|k| k == t))
            })
            .map(|(num, _)| num)
            .collect()
    }

    fn topic_title<'a>(&'a self, id: &'a str) -> &'a str {
        self.sample
            .topics
            .iter()
            .find(|t| t.id == id)
            .map_or(id, |t| t.title.as_str())
    }

    // -- The scripted model's answers, one function per task --

    fn segment(&self, req: &TaskRequest) -> Option<String> {
        let text = new_message(req);
        match self.boundary_by_text.get(text) {
            Some(Some(p)) => Some(format!("{{\"boundary\": {p}}}")),
            Some(None) => self.miss(format!(
                "segment: no boundary scripted for {:?}",
                clip(text, 50)
            )),
            None => self.miss(format!("segment: unknown message {:?}", clip(text, 50))),
        }
    }

    fn split(&self, req: &TaskRequest) -> Option<String> {
        let Some(m) = self.user_message_in(&req.content) else {
            return self.miss(format!(
                "split: unknown message in {:?}",
                clip(&req.content, 60)
            ));
        };
        // No parts scripted: the default answer (the whole message).
        let parts = m.parts.as_ref()?;
        Some(serde_json::json!({ "parts": parts }).to_string())
    }

    fn relevance(&self, req: &TaskRequest) -> Option<String> {
        let conversation = req.content.split("\nCandidates:").next().unwrap_or("");
        let Some(m) = self.user_message_in(conversation) else {
            return self.miss(format!(
                "relevance: no known user message in {:?}",
                clip(conversation, 60)
            ));
        };
        let relevant = self.pick(&req.content, "\nCandidates:", &m.recall);
        Some(serde_json::json!({ "relevant": relevant }).to_string())
    }

    fn distill(&self, req: &TaskRequest) -> Option<String> {
        let turn = req.content.split("\nRecalled items:").next().unwrap_or("");
        let Some(m) = self.user_message_in(turn) else {
            return self.miss(format!(
                "distill: no known user message in {:?}",
                clip(turn, 60)
            ));
        };
        let kept = self.pick(
            &req.content,
            "\nRecalled items:",
            m.kept.as_ref().unwrap_or(&m.recall),
        );
        Some(serde_json::json!({ "kept": kept }).to_string())
    }

    fn note(&self, req: &TaskRequest) -> Option<String> {
        let Some((first, last)) = message_range(first_line(&req.content)) else {
            return self.miss(format!(
                "note: no message range in {:?}",
                first_line(&req.content)
            ));
        };
        let facts: Vec<NewFact> = self
            .sample
            .topics
            .iter()
            .flat_map(|t| &t.facts)
            .filter(|f| (first..=last).contains(&f.said_in))
            .map(|f| NewFact {
                subject: f.subject.clone(),
                predicate: f.predicate.clone(),
                object: f.object.clone(),
                sentence: f.sentence.clone(),
                kind: engram::types::fact::FactKind::parse(&f.kind).unwrap_or_else(|| {
                    panic!("fact {:?} has an unknown kind {:?}", f.sentence, f.kind)
                }),
                sources: Vec::new(),
            })
            .collect();
        Some(serde_json::json!({ "facts": facts }).to_string())
    }

    fn trace(&self, req: &TaskRequest) -> Option<String> {
        let (facts_part, episodes_part) = req.content.split_once("\nEpisodes:\n")?;
        let episodes: Vec<(usize, u64, u64)> = episodes_part
            .lines()
            .filter_map(|l| {
                let (num, rest) = numbered(l)?;
                let (a, b) = message_range(rest)?;
                rest.starts_with("(message").then_some((num, a, b))
            })
            .collect();
        let mut answer = Vec::new();
        for line in facts_part.lines() {
            let Some((num, sentence)) = numbered(line) else {
                continue;
            };
            let Some(topic) = self.topic_of_sentence.get(sentence) else {
                return self.miss(format!("trace: unknown fact {:?}", clip(sentence, 50)));
            };
            let about = &self.related[topic];
            let yes: Vec<usize> = episodes
                .iter()
                .filter(|(_, a, b)| self.topics_of(*a, *b).iter().any(|t| about.contains(*t)))
                .map(|(n, _, _)| *n)
                .collect();
            answer.push(serde_json::json!({ "fact": num, "episodes": yes }));
        }
        Some(serde_json::json!({ "facts": answer }).to_string())
    }

    fn reconcile(&self, req: &TaskRequest) -> Option<String> {
        let new = first_line(&req.content).strip_prefix("New fact: ")?;
        let mut judgments = Vec::new();
        for line in req.content.lines() {
            let Some((num, held)) = numbered(line) else {
                continue;
            };
            let held = held.rfind(" (said ").map_or(held, |i| &held[..i]);
            if let Some(r) = self
                .sample
                .reconcile
                .iter()
                .find(|r| r.new == new && r.held == held)
            {
                judgments.push(serde_json::json!({ "fact": num, "relation": r.relation }));
            }
        }
        Some(serde_json::json!({ "judgments": judgments }).to_string())
    }

    fn resolve(&self, req: &TaskRequest) -> Option<String> {
        let name = first_line(&req.content).strip_prefix("Name: ")?;
        let want = self
            .sample
            .resolve
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.entity.as_str());
        let same_as = want.and_then(|want| {
            req.content
                .lines()
                .filter_map(numbered)
                .find_map(|(num, entity)| {
                    let canonical = entity.split(" (also: ").next().unwrap_or(entity);
                    (canonical == want).then_some(num)
                })
        });
        Some(serde_json::json!({ "same_as": same_as }).to_string())
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// `12. rest` -> (12, "rest").
fn numbered(line: &str) -> Option<(usize, &str)> {
    let (num, rest) = line.split_once(". ")?;
    Some((num.parse().ok()?, rest))
}

/// The range in `... (messages 4-9) ...` or `... (message 7) ...`.
fn message_range(s: &str) -> Option<(u64, u64)> {
    let start = s.find("(message")?;
    let rest = s[start..]
        .trim_start_matches("(messages ")
        .trim_start_matches("(message ");
    let digits = |t: &str| {
        t.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
    };
    let a = digits(rest);
    let first: u64 = a.parse().ok()?;
    let last = match rest[a.len()..].strip_prefix('-') {
        Some(more) => digits(more).parse().ok()?,
        None => first,
    };
    Some((first, last))
}

/// Columns of the output.
const WIDTH: usize = 100;

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// The first `chars` characters of the first line of `s`.
fn prefix(s: &str, chars: usize) -> String {
    first_line(s).chars().take(chars).collect()
}

fn clip(s: &str, chars: usize) -> String {
    if s.chars().count() <= chars {
        s.to_string()
    } else {
        format!(
            "{}…",
            s.chars().take(chars.saturating_sub(1)).collect::<String>()
        )
    }
}

// ---- Time: ISO 8601 to ms since the Unix epoch (no chrono) -------------------

/// Parses `YYYY-MM-DDTHH:MM[:SS[.fff]]` followed by `Z` or `±HH:MM`.
fn parse_time(s: &str) -> Result<i64, String> {
    let bad = || format!("time {s:?} is not YYYY-MM-DDTHH:MM:SSZ");
    let num = |t: &str| -> Result<i64, String> {
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            t.parse().map_err(|_| bad())
        } else {
            Err(bad())
        }
    };
    let (date, rest) = s.split_once('T').ok_or_else(bad)?;
    let d: Vec<&str> = date.split('-').collect();
    let [y, mo, da] = d[..] else {
        return Err(bad());
    };
    let (y, mo, da) = (num(y)?, num(mo)?, num(da)?);
    let (clock, offset_min) = if let Some(c) = rest.strip_suffix('Z') {
        (c, 0)
    } else if rest.len() > 6 && matches!(&rest[rest.len() - 6..rest.len() - 5], "+" | "-") {
        let (c, off) = rest.split_at(rest.len() - 6);
        let (h, m) = off[1..].split_once(':').ok_or_else(bad)?;
        let minutes = num(h)? * 60 + num(m)?;
        (
            c,
            if off.starts_with('-') {
                -minutes
            } else {
                minutes
            },
        )
    } else {
        return Err(bad());
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let (h, mi, sec_text) = match parts[..] {
        [h, m] => (num(h)?, num(m)?, "0"),
        [h, m, sec] => (num(h)?, num(m)?, sec),
        _ => return Err(bad()),
    };
    let (sec, frac_ms) = match sec_text.split_once('.') {
        Some((s, f)) => {
            let f3: String = f.chars().chain("000".chars()).take(3).collect();
            (num(s)?, num(&f3)?)
        }
        None => (num(sec_text)?, 0),
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || sec > 60 {
        return Err(bad());
    }
    let days = engram::base::text::days_from_civil(y, mo, da);
    Ok(((days * 86_400 + h * 3_600 + mi * 60 + sec) - offset_min * 60) * 1_000 + frac_ms)
}

const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// `Mon 2025-03-03 09:02` for ms since the epoch (UTC).
fn show_time(ms: i64) -> String {
    let day = ms.div_euclid(86_400_000);
    let stamp = engram::base::text::format_time(ms);
    let stamp = stamp.trim_end_matches(" UTC");
    format!("{} {stamp}", WEEKDAYS[day.rem_euclid(7) as usize])
}

// ---- Printing ---------------------------------------------------------------

fn state_name(s: EpisodeState) -> &'static str {
    s.as_str()
}

fn range_label(first: u64, last: u64) -> String {
    if first == last {
        format!("{first}")
    } else {
        format!("{first}-{last}")
    }
}

fn episode_table(script: &Script, episodes: &[EpisodeInfo]) -> String {
    let mut s = String::new();
    if episodes.is_empty() {
        s.push_str("  (no episode yet: every message is in the open stretch)\n");
        return s;
    }
    s.push_str("   ep  messages  tokens  state      activation  significance  about\n");
    for e in episodes {
        let ep = &e.episode;
        let about: Vec<&str> = script
            .topics_of(ep.first, ep.last)
            .into_iter()
            .map(|t| script.topic_title(t))
            .collect();
        let _ = writeln!(
            s,
            "  {:>3}  {:<8}  {:>6}  {:<9}  {:>10.3}  {:>12.1}  {}",
            ep.id,
            range_label(ep.first, ep.last),
            ep.tokens,
            state_name(ep.state),
            e.activation,
            e.significance,
            clip(&about.join(", "), 34)
        );
    }
    s
}

fn bar(tokens: usize, ceiling: usize) -> String {
    const WIDTH: usize = 30;
    let filled = (tokens * WIDTH).div_ceil(ceiling.max(1)).min(WIDTH);
    format!("[{}{}]", "#".repeat(filled), ".".repeat(WIDTH - filled))
}

/// What one `add_message` changed, as lines.
struct Changes {
    lines: Vec<String>,
}

fn describe_changes(
    before_eps: &[EpisodeInfo],
    after_eps: &[EpisodeInfo],
    before_facts: &[Fact],
    after_facts: &[Fact],
    fades: &[Fade],
    script: &Script,
) -> Changes {
    let mut lines = Vec::new();
    for f in fades {
        lines.push(format!(
            "fade {} ({}): view {} of {}, landing {} (recent turn {} tokens)",
            f.id,
            match f.reason {
                engram::types::fade::FadeReason::Ceiling => "ceiling",
                engram::types::fade::FadeReason::Sleep => "sleep",
                engram::types::fade::FadeReason::Ahead => "ahead",
                engram::types::fade::FadeReason::Idle => "idle",
            },
            f.view_tokens,
            f.ceiling,
            f.landing,
            f.turn_tokens
        ));
    }
    for e in after_eps {
        let ep = &e.episode;
        match before_eps.iter().find(|b| b.episode.id == ep.id) {
            None => {
                let about: Vec<&str> = script
                    .topics_of(ep.first, ep.last)
                    .into_iter()
                    .map(|t| script.topic_title(t))
                    .collect();
                lines.push(format!(
                    "episode {} formed: messages {}, {} tokens ({})",
                    ep.id,
                    range_label(ep.first, ep.last),
                    ep.tokens,
                    about.join(", ")
                ));
                if ep.state != EpisodeState::Live {
                    lines.push(format!("episode {}: live -> {}", ep.id, ep.state.as_str()));
                }
            }
            Some(b) if b.episode.state != ep.state => {
                lines.push(format!(
                    "episode {}: {} -> {}",
                    ep.id,
                    b.episode.state.as_str(),
                    ep.state.as_str()
                ));
            }
            Some(_) => {}
        }
    }
    for f in after_facts {
        match before_facts.iter().find(|b| b.id == f.id) {
            None => lines.push(format!(
                "fact {} from episode {}: {}{}",
                f.id,
                f.episode,
                milestone(f),
                f.sentence
            )),
            Some(b) => {
                if f.restated.len() > b.restated.len() {
                    let r = f.restated.last().expect("grew");
                    lines.push(format!(
                        "fact {} restated by episode {} (merged): \"{}\"",
                        f.id, r.episode, r.sentence
                    ));
                }
                if let (None, Some(r)) = (&b.retired, &f.retired) {
                    lines.push(format!(
                        "fact {} retired: contradicted by fact {}",
                        f.id, r.by
                    ));
                }
            }
        }
    }
    Changes { lines }
}

fn milestone(f: &Fact) -> String {
    if f.kind.is_milestone() {
        format!("[{}] ", f.kind.as_str())
    } else {
        String::new()
    }
}

fn fades_of(explanations: &[EpisodeExplanation], seen: &mut BTreeSet<u64>) -> Vec<Fade> {
    let mut out = Vec::new();
    for x in explanations {
        for m in &x.moves {
            if let Some(f) = &m.fade {
                if seen.insert(f.id) {
                    out.push(f.clone());
                }
            }
        }
    }
    out.sort_by_key(|f| f.id);
    out
}

/// What the replay records for its checks.
#[derive(Default)]
struct Run {
    /// User messages that slept first.
    slept_at: Vec<u64>,
    /// Per user message, the facts its recall block showed when it was added.
    recalled: BTreeMap<u64, Vec<u64>>,
    /// Whether the engine asked any recall task (it has recall).
    recall_ran: bool,
    /// Whether the config was changed on the command line (the sample's
    /// checks are written for its own config).
    overridden: bool,
    /// Messages after which the view was over the ceiling, with its size.
    over_ceiling: Vec<(u64, usize)>,
    /// User messages that made more than one relevance call (the walk's hops
    /// are judged in one).
    relevance_calls: Vec<(u64, usize)>,
}

/// The recall block placed just before user message `n`, if the view has one.
fn recall_before(view: &View, n: u64) -> Option<&ViewItem> {
    let i = view.items.iter().position(|it| it.message == Some(n))?;
    view.items[..i]
        .last()
        .filter(|it| it.kind == ItemKind::Recall)
}

/// What distill and the recall share did to recall blocks in one call:
/// blocks newly distilled, and blocks that gave way.
fn recall_changes(before: &[RecallBlock], after: &[RecallBlock], share: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for b in after {
        let old = before.iter().find(|o| o.id == b.id);
        let n = b.message;
        if let (None, Some(d)) = (old.and_then(|o| o.distilled.as_ref()), &b.distilled) {
            let shown = old.map_or(b.items.len(), |o| o.shown().len());
            lines.push(if d.failed {
                format!("distill failed for the recall block before message {n}: kept whole")
            } else if d.kept.is_empty() {
                format!(
                    "distill removed the recall block before message {n}: nothing in it mattered"
                )
            } else {
                format!(
                    "distill kept {} of {shown} recalled items before message {n}",
                    d.kept.len()
                )
            });
        }
        if old.is_some_and(|o| o.gave_way.is_none()) && b.gave_way.is_some() {
            lines.push(format!(
                "the recall block before message {n} gave way (recall blocks keep within {share} tokens)"
            ));
        }
    }
    lines
}

/// Passages quoted in a recall block's text.
fn passages_of(r: &ViewItem) -> Vec<&str> {
    let quoted = r
        .text
        .split_once("\nFrom the conversation:\n")
        .map_or("", |(_, q)| q);
    quoted
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .collect()
}

fn describe_recall(r: &ViewItem, facts: &[Fact]) -> String {
    let mut s = format!("  recall block before this message, {} tokens:\n", r.tokens);
    for id in &r.facts {
        let sentence = facts
            .iter()
            .find(|f| f.id == *id)
            .map_or("?", |f| f.sentence.as_str());
        let _ = writeln!(s, "    <- fact {id}: {}", clip(sentence, 80));
    }
    for q in passages_of(r) {
        let _ = writeln!(s, "    <- passage {}", clip(q, 80));
    }
    s
}

// ---- The replay -------------------------------------------------------------

struct Options {
    path: String,
    ceiling: Option<usize>,
    quiet: bool,
}

fn options() -> Fallible<Options> {
    let mut o = Options {
        path: DEFAULT_SAMPLE.into(),
        ceiling: None,
        quiet: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--ceiling" => {
                let v = args.next().ok_or("--ceiling needs a number of tokens")?;
                o.ceiling = Some(
                    v.parse()
                        .map_err(|_| format!("--ceiling {v}: not a number"))?,
                );
            }
            "--quiet" => o.quiet = true,
            "-h" | "--help" => {
                say!("usage: replay [PATH] [--ceiling TOKENS] [--quiet]");
                std::process::exit(0);
            }
            _ if a.starts_with('-') => return Err(format!("unknown option {a}").into()),
            _ => o.path = a,
        }
    }
    Ok(o)
}

/// engram's default config with the sample's fields over it. Keys this build
/// does not know are left out (and returned), so a sample written for a newer
/// engine still replays.
fn config_of(
    fields: &serde_json::Map<String, serde_json::Value>,
) -> Fallible<(Config, Vec<String>)> {
    let mut value = serde_json::to_value(Config::default())?;
    let known = value.as_object_mut().expect("Config is a JSON object");
    let mut ignored = Vec::new();
    for (k, v) in fields {
        match known.get_mut(k) {
            Some(slot) => *slot = v.clone(),
            None => ignored.push(k.clone()),
        }
    }
    let config = Config::from_json(&value.to_string())?;
    Ok((config, ignored))
}

fn new_message_of(m: &SampleMessage) -> Fallible<NewMessage> {
    let role = Role::parse(&m.role)?;
    Ok(match role {
        Role::Tool => NewMessage::tool_result(
            m.tool_call_id
                .clone()
                .ok_or(format!("message {}: tool output with no call id", m.n))?,
            &m.content,
        ),
        Role::Assistant if !m.tool_calls.is_empty() => {
            NewMessage::tool_calls(&m.content, m.tool_calls.clone())
        }
        Role::User => NewMessage::user(&m.content),
        Role::Assistant => NewMessage::assistant(&m.content),
        Role::System => NewMessage::system(&m.content),
    })
}

fn scripted_model(script: &Rc<Script>) -> ScriptedModel {
    let model = ScriptedModel::new();
    let s = script.clone();
    model.on(Task::Segment, move |r| s.segment(r));
    let s = script.clone();
    model.on(Task::Note, move |r| s.note(r));
    let s = script.clone();
    model.on(Task::Trace, move |r| s.trace(r));
    let s = script.clone();
    model.on(Task::Reconcile, move |r| s.reconcile(r));
    let s = script.clone();
    model.on(Task::Resolve, move |r| s.resolve(r));
    let s = script.clone();
    model.on(Task::Split, move |r| s.split(r));
    let s = script.clone();
    model.on(Task::Relevance, move |r| s.relevance(r));
    let s = script.clone();
    model.on(Task::Distill, move |r| s.distill(r));
    model
}

async fn replay(script: Rc<Script>, opts: &Options) -> Fallible<bool> {
    let sample = &script.sample;
    let mut fields = sample.config.clone();
    if let Some(c) = opts.ceiling {
        fields.insert("ceiling_tokens".into(), c.into());
    }
    let (config, ignored) = config_of(&fields)?;
    let clock = ManualClock::at(script.times[0]);
    let mut memory: Engine = Memory::open(
        "sample",
        MemoryStore::new(),
        scripted_model(&script),
        clock.clone(),
        config,
    )
    .await?;
    let days: BTreeSet<i64> = script
        .times
        .iter()
        .map(|t| t.div_euclid(86_400_000))
        .collect();
    say!("{}", sample.title);
    say!("{}", "=".repeat(sample.title.chars().count()));
    for line in wrap(&sample.about, WIDTH) {
        say!("{line}");
    }
    say!("");
    say!(
        "{} messages on {} days, {} to {}.",
        sample.messages.len(),
        days.len(),
        show_time(script.times[0]),
        show_time(*script.times.last().expect("messages")),
    );
    let changed: Vec<String> = fields
        .iter()
        .filter(|(k, _)| !ignored.contains(k))
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let line = format!(
        "Config: defaults with {}; a fade lands at about half the ceiling.",
        changed.join(", ")
    );
    for l in wrap(&line, WIDTH) {
        say!("{l}");
    }
    if !ignored.is_empty() {
        say!(
            "(config keys this build of engram does not know, ignored: {})",
            ignored.join(", ")
        );
    }
    say!("activation = Σ strength ÷ √(minutes since each trace); significance = Σ strength;");
    say!("open = messages not yet in an episode (the current topic).");

    let mut run = Run {
        overridden: opts.ceiling.is_some(),
        ..Run::default()
    };
    let share = {
        let c = memory.config();
        (c.ceiling_tokens as f64 * c.recall_share) as usize
    };
    let mut seen_fades = BTreeSet::new();
    let mut pending: Vec<String> = Vec::new(); // changes since the last user turn
    let mut turn = 0;
    let mut last_user: Option<(u64, i64)> = None;
    for (m, &at) in sample.messages.iter().zip(&script.times) {
        clock.set(at);
        let before_eps = memory.episodes().await?;
        let before_facts = memory.facts().await?;
        let before_recalls = memory.recalls().await?;
        let relevance_before = memory.model().calls_of(Task::Relevance).len();
        let added = memory.add_message(new_message_of(m)?).await?;
        let relevance = memory.model().calls_of(Task::Relevance).len() - relevance_before;
        if m.role == "user" && relevance > 1 {
            run.relevance_calls.push((m.n, relevance));
        }
        let after_recalls = memory.recalls().await?;
        let after_eps = memory.episodes().await?;
        let after_facts = memory.facts().await?;
        let view = memory.view().await?;
        if view.tokens > view.ceiling {
            run.over_ceiling.push((m.n, view.tokens));
        }
        let mut moved = Vec::new();
        for e in &after_eps {
            let was = before_eps.iter().find(|b| b.episode.id == e.episode.id);
            if was.is_none_or(|b| b.episode.state != e.episode.state) {
                moved.push(memory.explain_episode(e.episode.id).await?);
            }
        }
        let fades = fades_of(&moved, &mut seen_fades);
        let mut changes = describe_changes(
            &before_eps,
            &after_eps,
            &before_facts,
            &after_facts,
            &fades,
            &script,
        );
        changes
            .lines
            .extend(recall_changes(&before_recalls, &after_recalls, share));
        if added.slept {
            run.slept_at.push(m.n);
        }
        let tag = format!("msg {:>2} {:<9}", m.n, m.role);
        if m.role != "user" {
            pending.extend(changes.lines.iter().map(|l| format!("{tag} {l}")));
            continue;
        }
        let recall = recall_before(&view, m.n);
        run.recalled
            .insert(m.n, recall.map_or(Vec::new(), |r| r.facts.clone()));
        turn += 1;
        let gap = last_user.map_or(0, |(_, t)| at - t);
        last_user = Some((m.n, at));
        if opts.quiet {
            pending.clear();
            continue;
        }
        say!("");
        let head = format!("── turn {turn} · {} · message {} ", show_time(at), m.n);
        say!(
            "{head}{}",
            "─".repeat(WIDTH.saturating_sub(head.chars().count()))
        );
        for l in pending.drain(..) {
            say!("  {}", clip(&l, WIDTH - 2));
        }
        say!("  user: \"{}\"", clip(&m.content, 88));
        if added.slept {
            say!(
                "  slept first: {:.1} h since the last user message",
                gap as f64 / 3_600_000.0
            );
        }
        for l in &changes.lines {
            say!("  {}", clip(&format!("{tag} {l}"), WIDTH - 2));
        }
        if let Some(r) = recall {
            say_raw!("{}", describe_recall(r, &after_facts));
        }
        say_raw!("{}", episode_table(&script, &after_eps));
        let open = memory.stats().await?.open_messages;
        say!(
            "  view {:>4} / {} tokens {}  {} items, {} open",
            view.tokens,
            view.ceiling,
            bar(view.tokens, view.ceiling),
            view.items.len(),
            open
        );
    }
    if !opts.quiet && !pending.is_empty() {
        say!("\n── after the last turn {}", "─".repeat(WIDTH - 23));
        for l in pending.drain(..) {
            say!("  {}", clip(&l, WIDTH - 2));
        }
    }
    run.recall_ran = !memory.model().calls_of(Task::Split).is_empty();
    finish(&script, &mut memory, &run).await
}

/// Prints the facts block, every fact, the entities and a summary; runs the
/// sample's checks. Returns whether they all hold.
async fn finish(script: &Script, memory: &mut Engine, run: &Run) -> Fallible<bool> {
    let slept_at = &run.slept_at;
    let view = memory.view().await?;
    let facts = memory.facts().await?;
    let episodes = memory.episodes().await?;
    let entities = memory.entities().await?;
    let stats = memory.stats().await?;
    say!("\n── the end {}", "─".repeat(WIDTH - 11));
    say!("\nFacts block (the first item of the view):\n");
    let block = view.items.iter().find(|i| i.kind == ItemKind::Facts);
    match block {
        Some(b) => b.text.lines().for_each(|l| say!("  | {l}")),
        None => say!("  (empty: no sealed episode holds a live fact)"),
    }
    say!("\nEvery fact the memory holds:\n");
    for f in &facts {
        let source = episodes
            .iter()
            .find(|e| e.episode.id == f.episode)
            .map(|e| e.episode.state);
        let status = match (
            &f.retired,
            block.is_some_and(|b| b.facts.contains(&f.id)),
            source,
        ) {
            (Some(r), _, _) => format!("retired by {}", r.by),
            (None, true, _) => "in facts block".into(),
            (None, false, Some(EpisodeState::Forgotten)) => "forgotten, kept".into(),
            (None, false, _) => "episode in view".into(),
        };
        let restated = if f.restated.is_empty() {
            String::new()
        } else {
            format!("  (restated {}x)", f.restated.len())
        };
        let text = format!("{}{}{restated}", milestone(f), f.sentence);
        say!("  {:>3}  {:<16}  {}", f.id, status, clip(&text, WIDTH - 25));
    }
    say!("\nEntities:\n");
    for e in &entities {
        let others: Vec<&str> = e
            .aliases
            .iter()
            .map(|a| a.name.as_str())
            .filter(|n| *n != e.name)
            .collect();
        let also = if others.is_empty() {
            String::new()
        } else {
            format!(" (also: {})", others.join(", "))
        };
        say!("  {:>3}  {}{also}", e.id, e.name);
    }
    let [live, leaving, sealed, forgotten] = stats.episodes;
    let messages = memory.messages().await?;
    say!("\nSummary:\n");
    say!(
        "  messages   {} kept of {} added (forgotten episodes' messages included)",
        messages.len(),
        script.sample.messages.len()
    );
    say!(
        "  episodes   {} in all: {live} live, {leaving} leaving, {sealed} sealed, {forgotten} forgotten",
        episodes.len()
    );
    say!(
        "  facts      {} live, {} retired",
        stats.facts[0],
        stats.facts[1]
    );
    say!("  entities   {}", stats.entities);
    say!(
        "  traces     {} judged, {} yes",
        stats.traces[0],
        stats.traces[1]
    );
    say!(
        "  fades      {} (sleeps at messages {:?})",
        stats.fades,
        slept_at
    );
    say!(
        "  view       {} / {} tokens",
        stats.view_tokens,
        stats.ceiling
    );

    // The sample's checks.
    let mut checks: Vec<(String, bool)> = Vec::new();
    let by_sentence = |s: &str| facts.iter().find(|f| f.sentence == s);
    let expect = &script.sample.expect;
    for p in &expect.retired {
        let ok = match (by_sentence(&p.fact), by_sentence(&p.by)) {
            (Some(old), Some(new)) => old.retired.as_ref().is_some_and(|r| r.by == new.id),
            _ => false,
        };
        checks.push((
            format!(
                "retired: \"{}\" by \"{}\"",
                clip(&p.fact, 30),
                clip(&p.by, 30)
            ),
            ok,
        ));
    }
    for p in &expect.restated {
        let ok = by_sentence(&p.fact)
            .is_some_and(|f| f.restated.iter().any(|r| r.sentence == p.by))
            && by_sentence(&p.by).is_none();
        checks.push((
            format!(
                "merged: \"{}\" into \"{}\"",
                clip(&p.by, 30),
                clip(&p.fact, 30)
            ),
            ok,
        ));
    }
    for a in &expect.aliases {
        let ok = entities
            .iter()
            .any(|e| e.name == a.entity && e.aliases.iter().any(|x| x.name == a.alias));
        checks.push((format!("alias: {} is {}", a.alias, a.entity), ok));
    }
    checks.push((
        format!("slept at messages {:?}", expect.sleeps_at),
        *slept_at == expect.sleeps_at,
    ));
    for r in &expect.recalled {
        let what = format!(
            "recalled before message {}: \"{}\"",
            r.before,
            clip(&r.fact, 40)
        );
        if !run.recall_ran {
            say!("  (skipped, this engine has no recall: {what})");
            continue;
        }
        let shown = run.recalled.get(&r.before).cloned().unwrap_or_default();
        let ok = by_sentence(&r.fact).is_some_and(|f| shown.contains(&f.id));
        checks.push((what, ok));
    }
    let recalls = memory.recalls().await?;
    for d in &expect.distilled {
        let block = recalls.iter().find(|b| b.message == d.before);
        let what = format!(
            "distilled before message {}: kept {}",
            d.before,
            if d.kept.is_empty() {
                "nothing".to_string()
            } else {
                d.kept
                    .iter()
                    .map(|f| format!("\"{}\"", clip(f, 30)))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        if !run.recall_ran {
            say!("  (skipped, this engine has no recall: {what})");
            continue;
        }
        let ok = block.and_then(|b| b.distilled.as_ref()).is_some_and(|x| {
            let kept: BTreeSet<u64> = x
                .kept
                .iter()
                .filter_map(|i| match i {
                    engram::types::recall::Item::Fact(id) => Some(*id),
                    engram::types::recall::Item::Passage(_)
                    | engram::types::recall::Item::Message(_) => None,
                })
                .collect();
            let want: Option<BTreeSet<u64>> = d
                .kept
                .iter()
                .map(|s| by_sentence(s).map(|f| f.id))
                .collect();
            // The listed facts are kept (the block may hold more, as the
            // walk and the budget decide); an empty list: nothing is kept.
            !x.failed
                && want.is_some_and(|w| w.is_subset(&kept))
                && (!d.kept.is_empty() || x.kept.is_empty())
        });
        checks.push((what, ok));
    }
    if run.recall_ran {
        // Every block whose turn is over is distilled (or gave way first).
        let open = recalls
            .iter()
            .filter(|b| b.distilled.is_none() && b.gave_way.is_none());
        let waiting: Vec<u64> = open.map(|b| b.message).collect();
        checks.push((
            format!(
                "every recall block distilled after its turn ({} of {} blocks, {} gave way)",
                recalls.iter().filter(|b| b.distilled.is_some()).count(),
                recalls.len(),
                recalls.iter().filter(|b| b.gave_way.is_some()).count()
            ),
            !recalls.is_empty() && waiting.is_empty(),
        ));
        checks.push((
            format!(
                "one relevance call at most per user message (more at {:?})",
                run.relevance_calls
            ),
            run.relevance_calls.is_empty(),
        ));
    }
    checks.push((
        format!(
            "the view within the ceiling after every message (over at {:?})",
            run.over_ceiling
        ),
        run.over_ceiling.is_empty(),
    ));
    let degraded = memory.take_degraded();
    checks.push((
        format!(
            "no step went on without the model ({} degraded)",
            degraded.len()
        ),
        degraded.is_empty(),
    ));
    for group in &expect.together {
        let of = |n: u64| {
            episodes
                .iter()
                .find(|e| (e.episode.first..=e.episode.last).contains(&n))
                .map(|e| e.episode.id)
        };
        let ok = group.windows(2).all(|w| of(w[0]) == of(w[1]));
        checks.push((format!("messages {group:?} in one episode"), ok));
    }
    let kept = messages.len() == script.sample.messages.len()
        && messages
            .iter()
            .zip(&script.sample.messages)
            .all(|(m, s)| m.content == s.content);
    checks.push(("every message kept, word for word".into(), kept));
    let misses = script.misses.borrow();
    checks.push((
        format!(
            "the script answered every model call ({} unanswered)",
            misses.len()
        ),
        misses.is_empty(),
    ));
    say!("\nChecks:\n");
    for (what, ok) in &checks {
        say!("  {}  {what}", if *ok { "ok    " } else { "FAILED" });
    }
    for m in misses.iter() {
        say!("         unanswered: {m}");
    }
    let failed = checks.iter().filter(|(_, ok)| !ok).count();
    say!(
        "\nreplay: {} checks passed, {failed} failed",
        checks.len() - failed
    );
    if run.overridden {
        say!("(the checks are written for the sample's own config: informational here)");
        return Ok(true);
    }
    Ok(failed == 0)
}

fn main() {
    let run = || -> Fallible<bool> {
        let opts = options()?;
        let script = Rc::new(Script::load(&opts.path)?);
        block_on(replay(script, &opts))
    };
    match run() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("replay: {e}");
            std::process::exit(2);
        }
    }
}
