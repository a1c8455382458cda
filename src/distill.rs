//! Distill: after the reply, reread the recall block against the turn and
//! keep only what mattered, or remove the block when nothing did. Each kept
//! fact writes a trace to its source episode: it mattered again.

use crate::event::Event;
use crate::host::{Model, Task};
use crate::memory::Ctx;
use crate::model::{
    self,
    tasks::{check_numbers, DistillAnswer},
};
use crate::recall::{Distillation, Item};
use crate::trace::{Trace, TraceCause};

/// The block recalled for the latest user message, if it awaits distill.
pub fn pending(state: &crate::state::State) -> Option<u64> {
    let last_user = state
        .messages
        .iter()
        .rev()
        .find(|m| m.role == crate::message::Role::User)?
        .id;
    state
        .recalls
        .iter()
        .rev()
        .find(|b| b.message == last_user && b.distilled.is_none())
        .map(|b| b.id)
}

/// Distills block `id` against the turn that followed its user message.
pub(crate) async fn distill<M: Model>(ctx: &mut Ctx<'_, M>, id: u64) -> Distillation {
    let block = ctx.state.recalls[id as usize - 1].clone();
    let shown = block.shown();
    let mut content = String::from("The turn:\n");
    for m in &ctx.state.messages[block.message as usize - 1..] {
        content.push_str(&format!(
            "{}: {}\n",
            m.role.as_str(),
            crate::text::clip(&m.display_text(), 400)
        ));
    }
    content.push_str("\nRecalled items:\n");
    for (i, item) in shown.iter().enumerate() {
        let (text, at) = crate::recall::describe(ctx.state, *item);
        let text = crate::text::clip(&text.replace('\n', " / "), 120);
        content.push_str(&format!(
            "{}. ({}) {text}\n",
            i + 1,
            crate::text::format_date(at)
        ));
    }
    let n = shown.len();
    let answer = model::ask(
        ctx.model,
        ctx.config.model_attempts,
        Task::Distill,
        content,
        |a: &DistillAnswer| check_numbers(&a.kept, n, "recalled item"),
    )
    .await;
    let distillation = match answer {
        Ok(a) => {
            let mut kept: Vec<Item> = Vec::new();
            for i in a.kept {
                if !kept.contains(&shown[i - 1]) {
                    kept.push(shown[i - 1]);
                }
            }
            kept.sort_by_key(|it| shown.iter().position(|s| s == it));
            Distillation {
                at: ctx.now,
                kept,
                failed: false,
            }
        }
        Err(_) => Distillation {
            at: ctx.now,
            kept: shown.clone(),
            failed: true,
        },
    };
    ctx.emit(Event::Distilled {
        block: id,
        distillation: distillation.clone(),
    });
    if !distillation.failed {
        for item in &distillation.kept {
            if let Item::Fact(f) = item {
                let episode = ctx.state.fact(*f).expect("kept fact exists").episode;
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
