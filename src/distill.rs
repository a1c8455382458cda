//! Distill: after the reply, reread the recall block against the turn and
//! keep only what mattered, or remove the block when nothing did. Each kept
//! fact writes a trace to its source episode: it mattered again.

use crate::base::host::{Model, ModelError, Task};
use crate::llm::tasks::{check_numbers, DistillAnswer};
use crate::step::Ctx;
use crate::types::event::Event;
use crate::types::message::Role;
use crate::{
    types::recall::Distillation, types::recall::Item, types::recall::RecallBlock,
    types::trace::Trace, types::trace::TraceCause,
};

/// Blocks that await distill, oldest first (from the state's index of
/// blocks not distilled nor given way, not every block of the memory).
fn awaiting(state: &crate::state::State) -> impl DoubleEndedIterator<Item = &RecallBlock> {
    state
        .undistilled
        .iter()
        .filter_map(|&id| state.recalls.get(id as usize - 1))
        .filter(|b| awaits(b))
}

fn awaits(b: &RecallBlock) -> bool {
    // (A block is placed with items; one left empty by an erase has
    // nothing to distill.)
    b.distilled.is_none() && b.gave_way.is_none() && !b.items.is_empty()
}

/// Blocks whose turn is over and that still await distill, oldest first:
/// every block of an earlier user message of its thread, and a thread's
/// latest one once a reply with no tool call waiting ended its turn (or
/// `turn_ended` names its thread).
pub fn due(state: &crate::state::State, turn_ended: Option<&str>) -> Vec<u64> {
    let over = |b: &RecallBlock| {
        let thread = state.message(b.message).thread.as_str();
        state.last_user(thread) != Some(b.message)
            || turn_ended == Some(thread)
            || state
                .line(thread)
                .ids
                .last()
                .is_some_and(|&id| state.message(id).role == Role::Assistant)
                && state.pending_tool_calls(thread).is_empty()
    };
    awaiting(state).filter(|b| over(b)).map(|b| b.id).collect()
}

/// The turn of block `id`: its user message and what followed, up to the
/// next user message.
fn turn(
    state: &crate::state::State,
    message: u64,
) -> std::borrow::Cow<'_, [crate::types::message::Message]> {
    let ids = &state.line(&state.message(message).thread).ids;
    let from = ids.partition_point(|&id| id < message);
    let end = ids[from + 1..]
        .iter()
        .position(|&id| state.message(id).role == Role::User)
        .map_or(ids.len(), |p| from + 1 + p);
    state.messages_of(&ids[from..end])
}

/// Tokens each message of the turn is clipped to in a `distill` request,
/// and each recalled item: enough to tell which item the turn used (the
/// walk judged them before the reply). At 400 and 120
/// distill was a quarter of the memory's own prompt tokens (docs/BENCH.md).
const TURN_TOKENS: usize = 100;
const ITEM_TOKENS: usize = 35;

/// Asks distill about block `id` (nothing emitted).
async fn ask<M: Model>(ctx: &Ctx<'_, M>, id: u64) -> Result<DistillAnswer, ModelError> {
    use std::fmt::Write as _;
    let block = &ctx.state.recalls[id as usize - 1];
    let shown = block.shown();
    // Written in place (a reply's cost is mostly this request and its commit).
    let mut content = String::with_capacity(4096);
    content.push_str("The turn:\n");
    for m in turn(ctx.state, block.message).iter() {
        content.push_str(m.role.as_str());
        content.push_str(": ");
        match m.tool_calls.is_empty() {
            true => crate::base::text::push_clipped(&mut content, &m.content, TURN_TOKENS),
            false => crate::base::text::push_clipped(&mut content, &m.display_text(), TURN_TOKENS),
        }
        content.push('\n');
    }
    content.push_str("\nRecalled items:\n");
    for (i, item) in shown.iter().enumerate() {
        if let Item::Passage(id) = item {
            // (A passage's text built only as far as the line shows it.)
            if let Some(p) = id
                .checked_sub(1)
                .and_then(|i| ctx.state.passages.get(i as usize))
            {
                let _ = write!(
                    content,
                    "{}. ({}) ",
                    i + 1,
                    crate::base::text::format_date(p.at)
                );
                let span = (p.first, p.last);
                crate::recall::passage::push_text_clipped(
                    &mut content,
                    ctx.state,
                    span,
                    " / ",
                    ITEM_TOKENS,
                );
                content.push('\n');
                continue;
            }
        }
        let (text, at) = crate::recall::describe(ctx.state, *item);
        let _ = write!(
            content,
            "{}. ({}) ",
            i + 1,
            crate::base::text::format_date(at)
        );
        match text.contains('\n') {
            true => crate::base::text::push_clipped(
                &mut content,
                &text.replace('\n', " / "),
                ITEM_TOKENS,
            ),
            false => crate::base::text::push_clipped(&mut content, &text, ITEM_TOKENS),
        }
        content.push('\n');
    }
    let n = shown.len();
    ctx.ask(Task::Distill, content, |a: &DistillAnswer| {
        check_numbers(&a.kept, n, "recalled item")
    })
    .await
}

/// Answers of distill for blocks `ids` (the calls go out together).
pub(crate) type Answers = Vec<Result<DistillAnswer, ModelError>>;

/// Asks distill about blocks `ids` against their turns, all at once.
pub(crate) async fn ask_all<M: Model>(ctx: &Ctx<'_, M>, ids: &[u64]) -> Answers {
    crate::base::join::join_all(ids.iter().map(|&id| ask(ctx, id)).collect()).await
}

/// Records the decisions [`ask_all`] got: each kept fact traces its source
/// episode; a failed distill keeps the block whole (reported).
pub(crate) fn record_all<M: Model>(
    ctx: &mut Ctx<'_, M>,
    ids: &[u64],
    answers: Answers,
) -> Vec<(u64, Distillation)> {
    ids.iter()
        .zip(answers)
        .map(|(&id, answer)| (id, record(ctx, id, answer)))
        .collect()
}

fn record<M: Model>(
    ctx: &mut Ctx<'_, M>,
    id: u64,
    answer: Result<DistillAnswer, ModelError>,
) -> Distillation {
    let shown = ctx.state.recalls[id as usize - 1].shown();
    let distillation = match answer {
        Ok(a) => {
            let mut kept: Vec<Item> = Vec::new();
            for i in a.kept {
                if !kept.contains(&shown[i - 1]) {
                    kept.push(shown[i - 1]);
                }
            }
            crate::base::sort::sort_by_key(&mut kept, |it| shown.iter().position(|s| s == it));
            Distillation {
                at: ctx.now,
                kept,
                failed: false,
            }
        }
        Err(e) => {
            ctx.degrade(Task::Distill, &e, &format!("recall block {id} kept whole"));
            Distillation {
                at: ctx.now,
                kept: shown.clone(),
                failed: true,
            }
        }
    };
    ctx.emit(Event::Distilled {
        block: id,
        distillation: distillation.clone(),
    });
    if !distillation.failed {
        for item in &distillation.kept {
            if let Item::Fact(f) = item {
                let episode = ctx.state.fact(*f).expect("kept fact exists").episode;
                // A fact the host stated has no episode to strengthen.
                if episode == crate::types::fact::HOST {
                    continue;
                }
                let tid = ctx.state.traces.len() as u64 + 1;
                ctx.emit(Event::Trace(Trace {
                    id: tid,
                    episode,
                    cause: TraceCause::Recall(*f),
                    yes: true,
                    strength: 1.0,
                    at: ctx.now,
                }));
            }
        }
    }
    distillation
}

#[cfg(test)]
mod tests {
    use crate::state::State;
    use crate::types::event::Event;
    use crate::types::message::{Message, Role};
    use crate::{types::recall::Distillation, types::recall::RecallBlock};

    #[test]
    fn the_undistilled_index_follows_distill_and_giving_way_as_a_rebuild_finds_it() {
        let mut state = State::default();
        for id in 1..=5u64 {
            let message = Message {
                id,
                role: Role::User,
                content: format!("message {id}"),
                tool_calls: Vec::new(),
                tool_call_id: None,
                at: id as i64,
                tokens: 5,
                boundary: None,
                judged: true,
                client_id: None,
                erased: false,
                thread: crate::types::message::main_thread(),
                metadata: None,
                replaces: None,
                replaced_by: None,
            };
            state.apply(&Event::Message(message)).unwrap();
            let block = RecallBlock {
                id,
                message: id,
                at: id as i64,
                parts: Vec::new(),
                split_failed: false,
                walk_failed: false,
                items: Vec::new(),
                distilled: None,
                gave_way: None,
            };
            state.apply(&Event::Recalled(block)).unwrap();
        }
        let distillation = Distillation {
            at: 9,
            kept: Vec::new(),
            failed: false,
        };
        state
            .apply(&Event::Distilled {
                block: 2,
                distillation,
            })
            .unwrap();
        state
            .apply(&Event::RecallGaveWay { block: 4, at: 9 })
            .unwrap();
        assert_eq!(
            state.undistilled.iter().copied().collect::<Vec<_>>(),
            [1, 3, 5]
        );
        let mut rebuilt = state.clone();
        rebuilt.undistilled.clear();
        rebuilt.rebuild_derived();
        assert_eq!(rebuilt.undistilled, state.undistilled);
        // Blocks left empty await nothing.
        assert!(super::due(&state, Some("main")).is_empty());
    }
}
