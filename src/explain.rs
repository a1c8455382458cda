//! Explain: why an episode is in or out of view, why a fact is where it is.
//! The answers come from the trace log and the recorded fades.

use serde::{Deserialize, Serialize};

use crate::episode::EpisodeState;
use crate::error::{Error, Result};
use crate::fade::Fade;
use crate::state::State;
use crate::trace::Trace;

/// One state change of an episode, with the fade that caused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
pub struct EpisodeExplanation {
    /// The episode.
    pub episode: u64,
    /// Its state.
    pub state: EpisodeState,
    /// Whether its messages are in the view.
    pub in_view: bool,
    /// Activation now.
    pub activation: f64,
    /// Significance.
    pub significance: f64,
    /// Every trace judged against it (yes and no), oldest first.
    pub traces: Vec<Trace>,
    /// Its moves, oldest first.
    pub moves: Vec<Move>,
    /// The answer in one paragraph.
    pub summary: String,
}

/// Why a fact is where it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactExplanation {
    /// The fact.
    pub fact: u64,
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
    /// Traces it wrote (its judgments against episodes).
    pub traces: Vec<Trace>,
    /// The answer in one paragraph.
    pub summary: String,
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
        "Episode {id} ({}) is {}: activation {activation:.3} now from {yes} yes-trace(s) of {} \
         judged, significance {significance:.1}.",
        crate::segment::label(e),
        e.state.as_str(),
        traces.len()
    );
    match moves
        .last()
        .and_then(|m| m.fade.as_ref().map(|f| (m.state, f)))
    {
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
            summary.push_str(if state.newest_live() == Some(id) {
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
        let n = (e.last - e.first + 1) as usize;
        summary.push_str(&match erased == n {
            true => " Its messages were erased on request, and the facts noted from it.".into(),
            false => format!(
                " {erased} of its {n} messages were erased on request, and the facts noted \
                 from it."
            ),
        });
    }
    if let Some(f) = e.note_failures.last() {
        summary.push_str(&format!(" Its last note attempt failed: {}.", f.error));
    }
    match (e.deferred, e.noted, e.abandoned) {
        (Some(d), _, Some(a)) => summary.push_str(&format!(
            " Its note failed when it left the view ({}), so it left without facts; after {} \
             failed retries the note was given up ({}). Its passages stay recallable.",
            crate::text::format_time(d),
            e.retries(),
            crate::text::format_time(a)
        )),
        (Some(d), Some(n), None) if n >= d => summary.push_str(&format!(
            " It left the view without facts ({}) because its note failed; the note was \
             written later ({}).",
            crate::text::format_time(d),
            crate::text::format_time(n)
        )),
        (Some(d), _, None) => summary.push_str(&format!(
            " It left the view without facts ({}) because its note failed; the note is \
             retried by maintain ({} failed retries so far).",
            crate::text::format_time(d),
            e.retries()
        )),
        _ => {}
    }
    Ok(EpisodeExplanation {
        episode: id,
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
        .filter(|t| t.cause == crate::trace::TraceCause::Fact(id))
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
    } else if episodes.iter().any(|(_, s)| s.messages_in_view()) {
        format!("Fact {id} is not in the facts block: its episode's messages are still in view.")
    } else {
        format!(
            "Fact {id} is not in the facts block: every episode that wrote it is forgotten. \
             It is kept and can be recalled."
        )
    };
    Ok(FactExplanation {
        fact: id,
        sentence: f.sentence.clone(),
        subject: name(f.subject),
        object: name(f.object),
        in_facts_block: in_block,
        episodes,
        retired_by: f.retired.as_ref().map(|r| (r.by, r.at)),
        traces,
        summary,
    })
}

/// Why a fact was recalled into one block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallExplanation {
    /// The recall block.
    pub block: u64,
    /// The user message it was recalled for.
    pub message: u64,
    /// When.
    pub at: i64,
    /// Searches that hit it, with ranks.
    pub hits: Vec<crate::recall::Hit>,
    /// Its place in the fused ranking.
    pub fused_rank: Option<usize>,
    /// Walk step that kept it (0: a search found it).
    pub hop: u32,
    /// Entity the walk followed to it.
    pub via: Option<u64>,
    /// Relevant, or kept by fallback when the walk failed.
    pub judgment: crate::recall::Judgment,
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
    let item = crate::recall::Item::Fact(id);
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
            let found = if r.hits.is_empty() {
                format!(
                    "the walk reached it at hop {} through entity {:?}",
                    r.hop, r.via
                )
            } else {
                let best = r.hits.iter().min_by_key(|h| h.rank).expect("non-empty");
                format!(
                    "{} search(es) hit it (best: {:?} rank {} for query {}), fused rank {:?}",
                    r.hits.len(),
                    best.list,
                    best.rank,
                    best.query,
                    r.fused_rank
                )
            };
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
                    crate::text::format_time(at)
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
