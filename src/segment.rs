//! Segmentation: where one concept ends and the next begins.
//!
//! Every message after the first gets a boundary judgment from the `segment`
//! task where a cut is allowed (before a user, assistant or system message
//! when no tool call is waiting for its output; never before a tool output).
//! A user message is judged with the other calls of its turn's first round;
//! the judgments of replies wait for the next step (after the reply, or the
//! next user message), made together. The open stretch (messages not yet in
//! an episode) is cut where [`cuts`] says: the judgments decide where, the
//! sizes how many.
//!
//! Each piece cut off forms an episode, encoded ([`crate::encoding`]).

use crate::base::host::{Model, Task};
use crate::base::text::{clip, format_time};
use crate::llm::tasks::SegmentAnswer;
use crate::step::Ctx;
use crate::types::event::Event;
use crate::types::message::{wait, Message, Role};

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

/// Messages of the current episode a `segment` request shows before the
/// new one, the tokens each is clipped to, and the new message's. (Clipped
/// to 4 of 40 and 150, the lexical judges cut LoCoMo into a third more
/// episodes, whose notes cost more calls than the clipping saved:
/// docs/DECISIONS.md.)
const CONTEXT_MESSAGES: usize = 6;
const CONTEXT_TOKENS: usize = 150;
const NEW_MESSAGE_TOKENS: usize = 400;

/// Asks the `segment` task whether message `id` (in the open stretch)
/// starts a new concept, shown after the open stretch's messages before it.
/// `None` when the model fails every attempt (reported; no judged cut there).
pub(crate) async fn judge<M: Model>(ctx: &Ctx<'_, M>, id: u64) -> Option<f32> {
    let msg = ctx.state.message(id);
    let open = ctx.state.open_stretch(&msg.thread);
    let before: Vec<&Message> = open.iter().filter(|m| m.id < id).collect();
    let mut content = String::from("Current episode (most recent messages):\n");
    for m in &before[before.len().saturating_sub(CONTEXT_MESSAGES)..] {
        content.push_str(&format!(
            "[{}] {}: {}\n",
            format_time(m.at),
            m.role.as_str(),
            clip(&m.display_text(), CONTEXT_TOKENS)
        ));
    }
    let gap = before.last().map_or(0, |m| msg.at - m.at);
    content.push_str(&format!(
        "\nNew message ({} after the previous one):\n[{}] {}: {}\n",
        describe_gap(gap),
        format_time(msg.at),
        msg.role.as_str(),
        clip(&msg.display_text(), NEW_MESSAGE_TOKENS)
    ));
    let check = |a: &SegmentAnswer| {
        if (0.0..=1.0).contains(&a.boundary) {
            Ok(())
        } else {
            Err(format!("boundary {} is outside 0..=1", a.boundary))
        }
    };
    match ctx.ask(Task::Segment, content, check).await {
        Ok(a) => Some(a.boundary),
        Err(e) => {
            ctx.degrade(Task::Segment, &e, "no judged cut before this message");
            None
        }
    }
}

/// Messages of `thread`'s open stretch whose boundary judgment is still to
/// be made.
pub fn unjudged(state: &crate::state::State, thread: &str) -> Vec<u64> {
    state
        .line(thread)
        .open_ids()
        .iter()
        .copied()
        .filter(|&id| !state.message(id).judged)
        .collect()
}

/// Judges every unjudged message of the call's thread's open stretch, all
/// at once (the calls are independent). Returns (message, judgment) in
/// order; nothing emitted.
pub(crate) async fn judge_unjudged<M: Model>(ctx: &Ctx<'_, M>) -> Vec<(u64, Option<f32>)> {
    let ids = unjudged(ctx.state, ctx.thread);
    let judgments =
        crate::base::join::join_all(ids.iter().map(|&id| judge(ctx, id)).collect()).await;
    ids.into_iter().zip(judgments).collect()
}

/// Records judgments made by [`judge_unjudged`].
pub(crate) fn record<M: Model>(ctx: &mut Ctx<'_, M>, judgments: Vec<(u64, Option<f32>)>) {
    for (message, boundary) in judgments {
        if message >= ctx.state.open_from(&ctx.state.message(message).thread) {
            ctx.emit(Event::Judged { message, boundary });
        }
    }
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
/// Only the settled head of the stretch is cut (up to the first message whose
/// judgment is still to be made). Returns the ids of the episodes formed.
pub(crate) fn place_cuts<M: Model>(ctx: &mut Ctx<'_, M>) -> Vec<u64> {
    let cuts = cuts(&ctx.state.open_stretch(ctx.thread), ctx.config);
    let open = ctx.state.line(ctx.thread).open_ids().to_vec();
    let mut formed = Vec::new();
    let mut piece_start = 0usize;
    for cut in cuts {
        formed.push(crate::encoding::form(ctx, &open[piece_start..cut]));
        piece_start = cut;
    }
    formed
}

/// Where the open stretch `open` is cut (indexes of messages that start a new
/// piece, ascending):
///
/// 1. judged cuts: before each message judged at or above
///    `boundary_threshold` whose piece before holds at least
///    `min_episode_tokens` (a judgment at or above `strong_boundary` cuts
///    whatever the size);
/// 2. size cuts: a piece (or the tail after the last judged cut) larger than
///    `max_episode_tokens` gets `ceil(tokens / target) - 1` cuts at its
///    best-judged allowed positions. Equal judgments (and failed ones, after
///    every judged position) go to the positions nearest an even split, and
///    no size cut leaves a piece under the size floor
///    (`max(min_episode_tokens, target / 4)`) unless its judgment is strong.
pub fn cuts(open: &[Message], cfg: &crate::base::config::Config) -> Vec<usize> {
    let settled = open.iter().position(|m| !m.judged).unwrap_or(open.len());
    let open = &open[..settled];
    let strong = |m: &Message| m.boundary.is_some_and(|p| p >= cfg.strong_boundary);
    let mut judged: Vec<usize> = Vec::new();
    let mut before = 0usize;
    for (i, m) in open.iter().enumerate() {
        if i > 0
            && m.boundary.is_some_and(|p| p >= cfg.boundary_threshold)
            && (before >= cfg.min_episode_tokens || strong(m))
        {
            judged.push(i);
            before = 0;
        }
        before += m.tokens;
    }
    let allowed = allowed_positions(open);
    let floor = cfg.min_episode_tokens.max(cfg.target_episode_tokens / 4);
    let mut all = judged.clone();
    let mut bounds = vec![0];
    bounds.extend(judged.iter().copied());
    bounds.push(open.len());
    for w in bounds.windows(2) {
        let (start, end) = (w[0], w[1]);
        let piece = &open[start..end];
        let tokens: usize = piece.iter().map(|m| m.tokens).sum();
        if tokens <= cfg.max_episode_tokens {
            continue;
        }
        let k = tokens.div_ceil(cfg.target_episode_tokens).saturating_sub(1);
        let even = tokens as f32 / (k + 1) as f32;
        // Token offset of each message within the piece.
        let mut offset = Vec::with_capacity(piece.len() + 1);
        let mut acc = 0usize;
        for m in piece {
            offset.push(acc);
            acc += m.tokens;
        }
        offset.push(acc);
        let mut candidates: Vec<(usize, f32, f32)> = Vec::new(); // (index in piece, score, distance to an even split)
        for (i, m) in piece.iter().enumerate().skip(1) {
            if !allowed[start + i] {
                continue;
            }
            let at = offset[i] as f32;
            let off = (at % even).min(even - at % even) / even;
            let score = m.boundary.unwrap_or(-1.0);
            candidates.push((i, score, off));
        }
        // Best judgment first; among equals the position nearest an even
        // split; then the earlier one.
        crate::base::sort::sort_by(&mut candidates, |a, b| {
            b.1.total_cmp(&a.1)
                .then(a.2.total_cmp(&b.2))
                .then(a.0.cmp(&b.0))
        });
        let mut chosen: Vec<usize> = Vec::new();
        for (i, _, _) in candidates {
            if chosen.len() == k {
                break;
            }
            let lo = chosen.iter().copied().filter(|&c| c < i).max().unwrap_or(0);
            let hi = chosen
                .iter()
                .copied()
                .filter(|&c| c > i)
                .min()
                .unwrap_or(piece.len());
            let fits = offset[i] - offset[lo] >= floor && offset[hi] - offset[i] >= floor;
            if fits || strong(&piece[i]) {
                chosen.push(i);
            }
        }
        all.extend(chosen.into_iter().map(|i| start + i));
    }
    crate::base::sort::sort(&mut all);
    all.dedup();
    all
}
