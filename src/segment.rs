//! Segmentation: where one concept ends and the next begins.
//!
//! Every message after the first gets a boundary judgment from the `segment`
//! task where a cut is allowed (before a user, assistant or system message
//! when no tool call is waiting for its output; never before a tool output).
//! The open stretch (messages not yet in an episode) is cut:
//!
//! * before a message judged at or above `boundary_threshold`, when the piece
//!   before it holds at least `min_episode_tokens` (the judgment decides);
//! * and, when the stretch grows past `max_episode_tokens`, at its
//!   `ceil(tokens / target_episode_tokens) - 1` highest-judged positions (the
//!   size decides how many cuts, the judgments still decide where).
//!
//! Each piece cut off forms an episode, encoded with a full-strength trace
//! stamped with the time of its last message.

use crate::episode::Episode;
use crate::event::Event;
use crate::host::{Model, Task};
use crate::memory::Ctx;
use crate::message::{Message, NewMessage, Role};
use crate::model::{self, tasks::SegmentAnswer};
use crate::text::{clip, format_time};
use crate::trace::{Trace, TraceCause};

/// Whether a cut is allowed before a message of `role` when `pending_calls`
/// tool calls wait for their output: always before a user message (it
/// abandons waiting calls), never before a tool output, otherwise only when
/// no call waits.
pub fn cut_allowed(open: &[Message], pending_calls: usize, role: Role) -> bool {
    !open.is_empty()
        && match role {
            Role::User => true,
            Role::Tool => false,
            Role::Assistant | Role::System => pending_calls == 0,
        }
}

/// Updates the waiting tool call ids after message `m`.
fn wait(pending: &mut Vec<String>, m: &Message) {
    if m.role == Role::User {
        pending.clear();
    }
    pending.extend(m.tool_calls.iter().map(|c| c.id.clone()));
    if let Some(id) = &m.tool_call_id {
        pending.retain(|p| p != id);
    }
}

/// Tool call ids still waiting after `messages`.
pub fn pending_after(messages: &[Message]) -> Vec<String> {
    let mut pending = Vec::new();
    messages.iter().for_each(|m| wait(&mut pending, m));
    pending
}

/// For each message of `open` (the open stretch), whether a cut was allowed
/// before it (never before the first).
fn allowed_positions(open: &[Message]) -> Vec<bool> {
    let mut pending = Vec::new();
    open.iter()
        .enumerate()
        .map(|(i, m)| {
            let allowed = cut_allowed(&open[..i], pending.len(), m.role);
            wait(&mut pending, m);
            allowed
        })
        .collect()
}

/// Asks the `segment` task whether `msg` starts a new concept. `None` when
/// the model fails every attempt (no cut will be made there).
pub(crate) async fn judge<M: Model>(ctx: &Ctx<'_, M>, msg: &NewMessage) -> Option<f32> {
    let open = ctx.state.open_stretch();
    let mut content = String::from("Current episode (most recent messages):\n");
    for m in open
        .iter()
        .rev()
        .take(6)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        content.push_str(&format!(
            "[{}] {}: {}\n",
            format_time(m.at),
            m.role.as_str(),
            clip(&m.display_text(), 150)
        ));
    }
    let gap = open.last().map_or(0, |m| ctx.now - m.at);
    content.push_str(&format!(
        "\nNew message ({} after the previous one):\n[{}] {}: {}\n",
        describe_gap(gap),
        format_time(ctx.now),
        msg.role.as_str(),
        clip(&crate::message::display(&msg.content, &msg.tool_calls), 400)
    ));
    let check = |a: &SegmentAnswer| {
        if (0.0..=1.0).contains(&a.boundary) {
            Ok(())
        } else {
            Err(format!("boundary {} is outside 0..=1", a.boundary))
        }
    };
    model::ask(
        ctx.model,
        ctx.config.model_attempts,
        Task::Segment,
        content,
        check,
    )
    .await
    .ok()
    .map(|a| a.boundary)
}

fn describe_gap(ms: i64) -> String {
    let min = ms / 60_000;
    match min {
        0 => "less than a minute".into(),
        1..=119 => format!("{min} minutes"),
        120..=2879 => format!("{} hours", min / 60),
        _ => format!("{} days", min / 1440),
    }
}

/// Cuts the open stretch where the judgments and sizes say, forming episodes.
/// Returns the ids of the episodes formed.
pub(crate) fn place_cuts<M: Model>(ctx: &mut Ctx<'_, M>) -> Vec<u64> {
    let cfg = ctx.config;
    let open = ctx.state.open_stretch();
    let mut cuts: Vec<usize> = Vec::new(); // indexes into `open` that start a new piece
    if let Some(last) = open.last() {
        let before: usize = open[..open.len() - 1].iter().map(|m| m.tokens).sum();
        if open.len() > 1
            && last.boundary.is_some_and(|p| p >= cfg.boundary_threshold)
            && before >= cfg.min_episode_tokens
        {
            cuts.push(open.len() - 1);
        }
    }
    let start = cuts.first().copied().unwrap_or(0);
    let rest = &open[start..];
    let tokens: usize = rest.iter().map(|m| m.tokens).sum();
    if cuts.is_empty() && tokens > cfg.max_episode_tokens {
        let k = tokens.div_ceil(cfg.target_episode_tokens).saturating_sub(1);
        // Judged positions first, by judgment. Allowed positions whose
        // judgment failed come after every judged one (the size rule must
        // still hold when the judge is down), those nearest an even split
        // first.
        let allowed = allowed_positions(rest);
        let target = cfg.target_episode_tokens as f32;
        let mut before = 0usize;
        let mut candidates: Vec<(usize, f32)> = Vec::new();
        for (i, m) in rest.iter().enumerate() {
            if allowed[i] {
                let score = match m.boundary {
                    Some(p) => p,
                    None => {
                        let off = (before as f32 % target).min(target - before as f32 % target);
                        -1.0 - off / target
                    }
                };
                candidates.push((i, score));
            }
            before += m.tokens;
        }
        // Highest score first; on ties the earlier position.
        candidates.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        cuts = candidates
            .into_iter()
            .take(k)
            .map(|(i, _)| i + start)
            .collect();
        cuts.sort_unstable();
    }
    let first_id = ctx.state.open_from();
    let mut formed = Vec::new();
    let mut piece_start = 0usize;
    for cut in cuts {
        let first = first_id + piece_start as u64;
        let last = first_id + cut as u64 - 1;
        formed.push(form(ctx, first, last));
        piece_start = cut;
    }
    formed
}

/// Forms the episode `first..=last` (the head of the open stretch).
fn form<M: Model>(ctx: &mut Ctx<'_, M>, first: u64, last: u64) -> u64 {
    let msgs = &ctx.state.messages[(first - 1) as usize..last as usize];
    let tokens = msgs.iter().map(|m| m.tokens).sum();
    let at = msgs.last().expect("non-empty episode").at;
    let episode = ctx.state.episodes.len() as u64 + 1;
    ctx.emit(Event::EpisodeFormed {
        episode,
        first,
        last,
        at,
        tokens,
    });
    let id = ctx.state.traces.len() as u64 + 1;
    ctx.emit(Event::Trace(Trace {
        id,
        episode,
        cause: TraceCause::Encoding,
        yes: true,
        strength: 1.0,
        at,
    }));
    episode
}

/// Text of an episode for prompts: its messages, clipped.
pub fn episode_text(msgs: &[Message], per_message: usize, total: usize) -> String {
    let mut s = String::new();
    for m in msgs {
        s.push_str(&format!(
            "{}: {}\n",
            m.role.as_str(),
            clip(&m.display_text(), per_message)
        ));
        if crate::text::estimate_tokens(&s) > total {
            s.push_str("…\n");
            break;
        }
    }
    s
}

/// Ids of `e`'s messages as a short label (`messages 4-9`).
pub fn label(e: &Episode) -> String {
    if e.first == e.last {
        format!("message {}", e.first)
    } else {
        format!("messages {}-{}", e.first, e.last)
    }
}
