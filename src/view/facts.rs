//! Facts as lines of a block, grouped by the entity they are about: the
//! facts block of the view and a recall block both render them so.

use std::collections::BTreeMap;

use crate::base::text::{format_date, inline};
use crate::state::State;
use crate::types::fact::Fact;

/// One fact as a line of a block: kind for milestones, sentence, date said.
pub fn fact_line(f: &Fact) -> String {
    let kind = if f.kind.is_milestone() {
        format!("[{}] ", f.kind.as_str())
    } else {
        String::new()
    };
    format!(
        "- {kind}{} ({})",
        inline(&f.sentence),
        format_date(f.said_at)
    )
}

/// Facts grouped by subject entity, milestones first in each group; groups
/// with a milestone first, then in order of their first fact.
pub fn group_by_subject<'a>(facts: &[&'a Fact]) -> Vec<(u64, Vec<&'a Fact>)> {
    let mut groups: BTreeMap<u64, Vec<&Fact>> = BTreeMap::new();
    for f in facts {
        groups.entry(f.subject).or_default().push(f);
    }
    let mut order: Vec<(u64, Vec<&Fact>)> = groups.into_iter().collect();
    for (_, fs) in order.iter_mut() {
        crate::base::sort::sort_by_key(fs, |f| (!f.kind.is_milestone(), f.said_at, f.id));
    }
    crate::base::sort::sort_by_key(&mut order, |(_, fs)| {
        (!fs[0].kind.is_milestone(), fs[0].said_at, fs[0].id)
    });
    order
}

/// The heading of an entity's group in a block: its name, made inline.
pub fn entity_heading(state: &State, entity: u64) -> String {
    let name = state.entity(entity).map_or("?", |n| n.name.as_str());
    match inline(name) {
        n if n.is_empty() => "?".into(),
        n => n,
    }
}

/// The facts block's body: [`group_by_subject`], one line per fact.
pub fn grouped_text(state: &State, facts: &[&Fact]) -> String {
    let mut s = String::new();
    for (entity, fs) in group_by_subject(facts) {
        s.push_str(&format!("\n{}:\n", entity_heading(state, entity)));
        for f in fs {
            s.push_str(&fact_line(f));
            s.push('\n');
        }
    }
    s
}
