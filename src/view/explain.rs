//! Explain: why an episode is in or out of view, why a fact is where it is.
//! The answers come from the trace log and the recorded fades.

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};
use crate::state::State;
use crate::types::episode::EpisodeState;
use crate::types::fade::Fade;
use crate::types::trace::Trace;

/// One state change of an episode, with the fade that caused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Move {
    /// State entered.
    pub state: EpisodeState,
    /// When.
    pub at: i64,
    /// The fade, if one moved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fade: Option<Fade>,
}

/// Why an episode is where it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct EpisodeExplanation {
    /// The episode.
    pub episode: u64,
    /// Its thread.
    pub thread: String,
    /// Its state.
    pub state: EpisodeState,
    /// Whether its messages are in the view.
    pub in_view: bool,
    /// Activation now.
    pub activation: f64,
    /// Significance.
    pub significance: f64,
    /// Its traces, oldest first: the encoding trace and every yes (a no
    /// is counted per fact, [`FactExplanation::declined`]; memories written
    /// before format 3 list their no answers here too).
    pub traces: Vec<Trace>,
    /// Its moves, oldest first.
    pub moves: Vec<Move>,
    /// The answer in one paragraph.
    pub summary: String,
}

/// Why a fact is where it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct FactExplanation {
    /// The fact.
    pub fact: u64,
    /// The thread it was said in (its episode's).
    pub thread: String,
    /// Its sentence.
    pub sentence: String,
    /// Subject and object names.
    pub subject: String,
    /// Object name.
    pub object: String,
    /// Whether it is in the facts block now.
    pub in_facts_block: bool,
    /// Episodes that wrote or restated it, with their states.
    pub episodes: Vec<(u64, EpisodeState)>,
    /// The fact that retired it, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_by: Option<(u64, i64)>,
    /// Traces it wrote: the episodes that judged it mattered to them.
    pub traces: Vec<Trace>,
    /// How many episodes judged it did not matter to them.
    #[serde(default)]
    pub declined: u32,
    /// The answer in one paragraph.
    pub summary: String,
}

/// Why a message is shown or not: its episode, and the answers a
/// regeneration swapped (see [`crate::types::message::NewMessage::replaces`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct MessageExplanation {
    /// The message.
    pub message: u64,
    /// Its thread.
    pub thread: String,
    /// Whether the view shows it now.
    pub in_view: bool,
    /// The episode holding it (none while it is in the open stretch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode: Option<u64>,
    /// For a regenerated answer: the user message it answers again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<u64>,
    /// The regenerated answer that replaced it, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<u64>,
    /// Its alternatives, oldest first: for a regenerated answer, the
    /// messages it replaced; for a replaced one, the others replaced by the
    /// same answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<u64>,
    /// The answer in one paragraph.
    pub summary: String,
}

/// Explains message `id`.
pub fn message(state: &State, id: u64) -> Result<MessageExplanation> {
    if id == 0 || id > state.messages.len() as u64 {
        return Err(Error::invalid(format!("no message {id}")));
    }
    let m = state.message(id);
    let line = state.line(&m.thread);
    let episode = line
        .episodes
        .iter()
        .filter_map(|&e| state.episode(e))
        .find(|e| e.first <= id && id <= e.last);
    let in_view = m.shown() && episode.is_none_or(|e| e.state.messages_in_view());
    let by = |r: u64| -> Vec<u64> {
        line.ids
            .iter()
            .copied()
            .filter(|&o| state.message(o).replaced_by == Some(r))
            .collect()
    };
    let alternatives = match m.replaced_by {
        Some(r) => by(r),
        None => by(id),
    };
    let mut summary = format!(
        "Message {id} ({}) {}.",
        m.role.as_str(),
        match (in_view, episode) {
            (true, Some(e)) =>
                format!("is in the view, in episode {} ({})", e.id, e.state.as_str()),
            (true, None) => "is in the view, in the open stretch".to_string(),
            (false, _) if m.erased => "was erased on request".to_string(),
            (false, _) if m.replaced_by.is_some() => "is not shown".to_string(),
            (false, Some(e)) => format!(
                "is out of the view: episode {} is {}",
                e.id,
                e.state.as_str()
            ),
            (false, None) => "is not shown".to_string(),
        }
    );
    if let Some(r) = m.replaced_by {
        summary.push_str(&format!(
            " It is an alternative: message {r}, a regenerated answer to message {}, \
             replaced it{}. It stays stored and listed, and the facts noted from it stay.",
            state.message(r).replaces.unwrap_or(0),
            match alternatives.len() {
                0 | 1 => String::new(),
                n => format!(" with {} other message(s)", n - 1),
            }
        ));
    } else if let Some(q) = m.replaces {
        summary.push_str(&format!(" It is a regenerated answer to message {q}"));
        summary.push_str(&match alternatives.len() {
            0 => ": there was no earlier answer to replace.".to_string(),
            n => format!(", shown in place of {n} earlier message(s), now alternatives."),
        });
    }
    Ok(MessageExplanation {
        message: id,
        thread: m.thread.clone(),
        in_view,
        episode: episode.map(|e| e.id),
        replaces: m.replaces,
        replaced_by: m.replaced_by,
        alternatives,
        summary,
    })
}

/// Explains episode `id` at `now`.
pub fn episode(state: &State, id: u64, now: i64) -> Result<EpisodeExplanation> {
    let e = state
        .episode(id)
        .ok_or_else(|| Error::invalid(format!("no episode {id}")))?;
    let traces: Vec<Trace> = state
        .traces
        .iter()
        .filter(|t| t.episode == id)
        .cloned()
        .collect();
    let activation = state.activation(e, now);
    let significance = state.significance(e);
    let moves: Vec<Move> = e
        .history
        .iter()
        .map(|c| Move {
            state: c.state,
            at: c.at,
            fade: c
                .fade
                .and_then(|f| state.fades.get(f as usize - 1))
                .cloned(),
        })
        .collect();
    let yes = traces.iter().filter(|t| t.yes).count();
    let mut summary = format!(
        "Episode {id} ({}{}) is {}: activation {activation:.3} now from {yes} yes-trace(s), \
         significance {significance:.1}.",
        crate::types::episode::label(e),
        match crate::types::message::is_main_thread(&e.thread) {
            true => String::new(),
            false => format!(" of thread {:?}", e.thread),
        },
        e.state.as_str(),
    );
    match moves
        .last()
        .and_then(|m| m.fade.as_ref().map(|f| (m.state, f)))
    {
        Some((st, f)) if f.reason == crate::types::fade::FadeReason::Idle => {
            summary.push_str(&format!(
                " Fade {} moved it to {}: its thread had been idle for `sleep_after_hours`, and \
             the fade took every episode of it so that what it taught is noted for the others.",
                f.id,
                st.as_str()
            ))
        }
        Some((st, f)) => summary.push_str(&format!(
            " Fade {} ({:?}, view {} of ceiling {}, landing {}) moved it to {}: it was among \
             the least activated episodes then.",
            f.id,
            f.reason,
            f.view_tokens,
            f.ceiling,
            f.landing,
            st.as_str()
        )),
        None if e.state == EpisodeState::Live => {
            summary.push_str(if state.newest_live(&e.thread) == Some(id) {
                " It is the newest live episode, which never leaves."
            } else {
                " No fade has needed its room yet."
            })
        }
        None => summary.push_str(" A host's note sealed it."),
    }
    let erased = state
        .episode_messages(e)
        .iter()
        .filter(|m| m.erased)
        .count();
    if erased > 0 {
        let n = state.episode_ids(e).len();
        summary.push_str(&match erased == n {
            true => " Its messages were erased on request, and the facts noted from it.".into(),
            false => format!(
                " {erased} of its {n} messages were erased on request, and the facts noted \
                 from it."
            ),
        });
    }
    let alternatives = state
        .episode_messages(e)
        .iter()
        .filter(|m| m.replaced_by.is_some())
        .count();
    if alternatives > 0 {
        summary.push_str(&format!(
            " {alternatives} of its messages are alternatives a regenerated answer replaced: \
             kept, not shown."
        ));
    }
    if let Some(f) = e.note_failures.last() {
        summary.push_str(&format!(" Its last note attempt failed: {}.", f.error));
    }
    match (e.deferred, e.noted, e.abandoned) {
        (Some(d), _, Some(a)) => summary.push_str(&format!(
            " Its note failed when it left the view ({}), so it left without facts; after {} \
             failed retries the note was given up ({}). Its passages stay recallable.",
            crate::base::text::format_time(d),
            e.retries(),
            crate::base::text::format_time(a)
        )),
        (Some(d), Some(n), None) if n >= d => summary.push_str(&format!(
            " It left the view without facts ({}) because its note failed; the note was \
             written later ({}).",
            crate::base::text::format_time(d),
            crate::base::text::format_time(n)
        )),
        (Some(d), _, None) => summary.push_str(&format!(
            " It left the view without facts ({}) because its note failed; the note is \
             retried by maintain ({} failed retries so far).",
            crate::base::text::format_time(d),
            e.retries()
        )),
        _ => {}
    }
    Ok(EpisodeExplanation {
        episode: id,
        thread: e.thread.clone(),
        state: e.state,
        in_view: e.state.messages_in_view(),
        activation,
        significance,
        traces,
        moves,
        summary,
    })
}

/// Explains fact `id`.
pub fn fact(state: &State, id: u64) -> Result<FactExplanation> {
    let f = state
        .fact(id)
        .ok_or_else(|| Error::invalid(format!("no fact {id}")))?;
    let name = |n: u64| state.entity(n).map_or(String::new(), |e| e.name.clone());
    let episodes: Vec<(u64, EpisodeState)> = state
        .episodes
        .iter()
        .filter(|e| e.facts.contains(&id))
        .map(|e| (e.id, e.state))
        .collect();
    let in_block = crate::view::block_facts(state).iter().any(|g| g.id == id);
    let traces: Vec<Trace> = state
        .traces
        .iter()
        .filter(|t| t.cause == crate::types::trace::TraceCause::Fact(id))
        .cloned()
        .collect();
    let summary = if f.erased {
        format!("Fact {id} was erased on request: its sentence and embedding are gone.")
    } else if let Some(r) = &f.retired {
        let by = state
            .fact(r.by)
            .map_or(String::new(), |g| g.sentence.clone());
        format!(
            "Fact {id} is retired: fact {} (\"{by}\") contradicted it. It is kept for recall.",
            r.by
        )
    } else if in_block {
        format!(
            "Fact {id} is in the facts block: it holds and an episode that wrote it is sealed \
             (its messages left the view, its facts stay)."
        )
    } else if f.is_stated() && episodes.is_empty() {
        format!(
            "Fact {id} was stated by the host (remember): it is searched and recalled when \
             relevant; the facts block holds the facts of sealed episodes."
        )
    } else if episodes.iter().any(|(_, s)| s.messages_in_view()) {
        format!("Fact {id} is not in the facts block: its episode's messages are still in view.")
    } else {
        format!(
            "Fact {id} is not in the facts block: every episode that wrote it is forgotten. \
             It is kept and can be recalled."
        )
    };
    let declined = state.declined.get(&id).copied().unwrap_or(0)
        + traces.iter().filter(|t| !t.yes).count() as u32;
    let traces: Vec<Trace> = traces.into_iter().filter(|t| t.yes).collect();
    let summary = format!(
        "{summary} {} episode(s) judged it: {} yes, {declined} no.",
        traces.len() as u32 + declined,
        traces.len()
    );
    Ok(FactExplanation {
        fact: id,
        thread: state
            .episode(f.episode)
            .map_or_else(crate::types::message::main_thread, |e| e.thread.clone()),
        sentence: f.sentence.clone(),
        subject: name(f.subject),
        object: name(f.object),
        in_facts_block: in_block,
        episodes,
        retired_by: f.retired.as_ref().map(|r| (r.by, r.at)),
        declined,
        traces,
        summary,
    })
}

/// Why a fact was recalled into one block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RecallExplanation {
    /// The recall block.
    pub block: u64,
    /// The user message it was recalled for.
    pub message: u64,
    /// When.
    pub at: i64,
    /// Searches that hit it, with ranks.
    pub hits: Vec<crate::types::recall::Hit>,
    /// Its place in the fused ranking.
    pub fused_rank: Option<usize>,
    /// Walk step that kept it (0: a search found it).
    pub hop: u32,
    /// Entity the walk followed to it.
    pub via: Option<u64>,
    /// Relevant, or kept by fallback when the walk failed.
    pub judgment: crate::types::recall::Judgment,
    /// Whether distill kept it (`None` until the turn ends or when distill failed).
    pub distill_kept: Option<bool>,
    /// The answer in one sentence.
    pub summary: String,
}

/// Explains every recall of fact `id`.
pub fn recall(state: &State, id: u64) -> Result<Vec<RecallExplanation>> {
    state
        .fact(id)
        .ok_or_else(|| Error::invalid(format!("no fact {id}")))?;
    let item = crate::types::recall::Item::Fact(id);
    Ok(state
        .recalls
        .iter()
        .filter_map(|b| {
            let r = b.items.iter().find(|r| r.item == item)?;
            let distill_kept = b
                .distilled
                .as_ref()
                .filter(|d| !d.failed)
                .map(|d| d.kept.contains(&item));
            let found = found(state, r, b.parts.len());
            let mut summary = format!(
                "Block {} for message {}: {found}; kept as {:?}; distill: {}.",
                b.id,
                b.message,
                r.judgment,
                match distill_kept {
                    Some(true) => "kept it",
                    Some(false) => "dropped it",
                    None => "not decided (turn open or distill failed)",
                }
            );
            if let Some(at) = b.gave_way {
                summary.push_str(&format!(
                    " The block gave way at {} so recall blocks keep to their share of the \
                     view; the fact stays recallable.",
                    crate::base::text::format_time(at)
                ));
            }
            Some(RecallExplanation {
                block: b.id,
                message: b.message,
                at: b.at,
                hits: r.hits.clone(),
                fused_rank: r.fused_rank,
                hop: r.hop,
                via: r.via,
                judgment: r.judgment,
                distill_kept,
                summary,
            })
        })
        .collect())
}

/// The name of a search list as explain writes it.
fn list_name(list: crate::types::recall::List) -> &'static str {
    use crate::types::recall::List;
    match list {
        List::FactWords => "facts by words",
        List::FactMeaning => "facts by meaning",
        List::PassageWords => "passages by words",
        List::PassageMeaning => "passages by meaning",
        List::ViewWords => "messages in view by words",
        List::ViewMeaning => "messages in view by meaning",
    }
}

/// Every list that found a recalled item, with its rank in each, then its
/// fused rank and how the graph reached it: "facts by words #2 (whole
/// message), passages by meaning #5 (part 1); fused #3". A block of
/// `parts` parts numbers the message expanded by its best candidates'
/// words one past them.
fn found(state: &State, r: &crate::types::recall::Recalled, parts: usize) -> String {
    let lists: Vec<String> = r
        .hits
        .iter()
        .map(|h| {
            let query = match h.query {
                0 => "whole message".to_string(),
                n if n > parts => "the message expanded by its best hits' shared words".to_string(),
                n => format!("part {n}"),
            };
            format!("{} #{} ({query})", list_name(h.list), h.rank)
        })
        .collect();
    let mut s = match lists.is_empty() {
        true => "no search found it".to_string(),
        false => format!("found by {}", lists.join(", ")),
    };
    if let Some(f) = r.fused_rank {
        s.push_str(&format!("; fused #{f}"));
    }
    if r.hop > 0 {
        let name = r
            .via
            .and_then(|e| state.entity(e))
            .map_or_else(|| format!("{:?}", r.via), |e| format!("\"{}\"", e.name));
        s.push_str(&format!(
            "; reached at hop {} through entity {name}, shared with a stronger hit",
            r.hop
        ));
    }
    s
}

/// Why one item of a recall block is there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RecalledItemExplanation {
    /// The item.
    pub item: crate::types::recall::Item,
    /// Every search that found it, with its rank in that list.
    pub hits: Vec<crate::types::recall::Hit>,
    /// Its place in the fused ranking.
    pub fused_rank: Option<usize>,
    /// Graph hops that reached it (0: a search found it).
    pub hop: u32,
    /// Entity followed to it.
    pub via: Option<u64>,
    /// Why it survived.
    pub judgment: crate::types::recall::Judgment,
    /// The answer in one sentence: the lists and ranks.
    pub summary: String,
}

/// Explains every item of recall block `id`, in block order: the lists it
/// came from and its rank in each.
pub fn block(state: &State, id: u64) -> Result<Vec<RecalledItemExplanation>> {
    let b = id
        .checked_sub(1)
        .and_then(|i| state.recalls.get(i as usize))
        .ok_or_else(|| Error::invalid(format!("no recall block {id}")))?;
    Ok(b.items
        .iter()
        .map(|r| {
            let what = match r.item {
                crate::types::recall::Item::Fact(f) => format!("Fact {f}"),
                crate::types::recall::Item::Passage(p) => format!("Passage {p}"),
                crate::types::recall::Item::Message(m) => format!("Message {m}"),
            };
            RecalledItemExplanation {
                item: r.item,
                hits: r.hits.clone(),
                fused_rank: r.fused_rank,
                hop: r.hop,
                via: r.via,
                judgment: r.judgment,
                summary: format!(
                    "{what}: {}; kept as {:?}.",
                    found(state, r, b.parts.len()),
                    r.judgment
                ),
            }
        })
        .collect())
}
