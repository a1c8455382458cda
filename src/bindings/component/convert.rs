//! Conversions between the core's types and the WIT world's: messages,
//! turn outcomes, health, recall and the view. Core structs are
//! destructured field by field, so a field added to the core fails this
//! build until the WIT world carries it too.

use crate::bindings::component::wit;

use crate::base::error::Error;
use crate::base::host::Task;
use wit::engram::memory::model as wmodel;
use wit::exports::engram::memory::engine as w;

/// A size or count as WIT's `u32`: `usize` is 32 bits on wasm32, so this is
/// exact.
pub(super) fn n32(n: usize) -> u32 {
    n as u32
}

pub(super) fn list<T, U: From<T>>(items: Vec<T>) -> Vec<U> {
    items.into_iter().map(U::from).collect()
}

impl From<Error> for w::MemoryError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidInput(m) => w::MemoryError::InvalidInput(m),
            Error::Store(m) => w::MemoryError::Store(m),
            Error::Model(m) => w::MemoryError::Model(m),
            Error::Corrupt(m) => w::MemoryError::Corrupt(m),
            Error::UnsupportedVersion { found, supported } => {
                w::MemoryError::UnsupportedVersion(w::VersionMismatch { found, supported })
            }
            Error::Busy(m) => w::MemoryError::Busy(m),
        }
    }
}

impl From<crate::types::message::Role> for w::Role {
    fn from(r: crate::types::message::Role) -> Self {
        match r {
            crate::types::message::Role::System => w::Role::System,
            crate::types::message::Role::User => w::Role::User,
            crate::types::message::Role::Assistant => w::Role::Assistant,
            crate::types::message::Role::Tool => w::Role::Tool,
        }
    }
}

impl From<w::Role> for crate::types::message::Role {
    fn from(r: w::Role) -> Self {
        match r {
            w::Role::System => crate::types::message::Role::System,
            w::Role::User => crate::types::message::Role::User,
            w::Role::Assistant => crate::types::message::Role::Assistant,
            w::Role::Tool => crate::types::message::Role::Tool,
        }
    }
}

impl From<crate::types::message::ToolCall> for w::ToolCall {
    fn from(c: crate::types::message::ToolCall) -> Self {
        let crate::types::message::ToolCall {
            id,
            name,
            arguments,
        } = c;
        w::ToolCall {
            id,
            name,
            arguments,
        }
    }
}

impl From<w::ToolCall> for crate::types::message::ToolCall {
    fn from(c: w::ToolCall) -> Self {
        let w::ToolCall {
            id,
            name,
            arguments,
        } = c;
        crate::types::message::ToolCall {
            id,
            name,
            arguments,
        }
    }
}

impl TryFrom<w::NewMessage> for crate::types::message::NewMessage {
    type Error = Error;
    fn try_from(m: w::NewMessage) -> Result<Self, Error> {
        let w::NewMessage {
            role,
            content,
            tool_calls,
            tool_call_id,
            client_id,
            metadata,
            thread,
            at,
            replaces,
        } = m;
        Ok(crate::types::message::NewMessage {
            role: role.into(),
            content,
            tool_calls: list(tool_calls),
            tool_call_id,
            client_id,
            thread: thread.unwrap_or_else(crate::types::message::main_thread),
            at,
            metadata: metadata
                .map(|t| json_value(&t, "message metadata"))
                .transpose()?,
            replaces,
        })
    }
}

/// JSON text a caller passes as a value; `what` names it in the error.
/// (Read by serde_json, whose nesting limit bounds the depth; the engine
/// then checks the value's own bounds.)
pub(super) fn json_value(text: &str, what: &str) -> Result<serde_json::Value, Error> {
    if text.len() > 4 * crate::types::message::MAX_METADATA_BYTES {
        return Err(Error::invalid(format!(
            "{what} is {} bytes of JSON text; at most {}",
            text.len(),
            crate::types::message::MAX_METADATA_BYTES
        )));
    }
    serde_json::from_str(text).map_err(|e| Error::invalid(format!("{what} is not JSON: {e}")))
}

impl From<crate::types::message::Message> for w::Message {
    fn from(m: crate::types::message::Message) -> Self {
        let crate::types::message::Message {
            id,
            role,
            content,
            tool_calls,
            tool_call_id,
            at,
            tokens,
            boundary,
            judged,
            client_id,
            erased,
            thread,
            metadata,
            replaces,
            replaced_by,
        } = m;
        w::Message {
            id,
            role: role.into(),
            content,
            tool_calls: list(tool_calls),
            tool_call_id,
            at,
            tokens: n32(tokens),
            boundary,
            judged,
            client_id,
            erased,
            metadata: metadata.map(|v| v.to_string()),
            thread,
            replaces,
            replaced_by,
        }
    }
}

impl From<crate::memory::outcomes::Added> for w::Added {
    fn from(a: crate::memory::outcomes::Added) -> Self {
        let crate::memory::outcomes::Added {
            message,
            formed,
            slept,
            fade,
            recall,
            distilled: d,
            degraded,
            maintained,
            maintain_error,
            duplicate,
        } = a;
        w::Added {
            message,
            formed,
            slept,
            fade,
            recall,
            distilled: d.map(distilled),
            degraded: list(degraded),
            maintained: maintained.map(Into::into),
            maintain_error,
            duplicate,
        }
    }
}

impl From<crate::memory::outcomes::Batch> for w::Batch {
    fn from(b: crate::memory::outcomes::Batch) -> Self {
        let crate::memory::outcomes::Batch {
            messages,
            duplicates,
        } = b;
        w::Batch {
            messages,
            duplicates,
        }
    }
}

impl From<crate::memory::threads::ThreadInfo> for w::ThreadInfo {
    fn from(t: crate::memory::threads::ThreadInfo) -> Self {
        let crate::memory::threads::ThreadInfo {
            thread,
            title,
            first_message,
            last_message,
            first_at,
            last_at,
            messages,
            user_messages,
            episodes,
            episodes_in_view,
        } = t;
        w::ThreadInfo {
            thread,
            title,
            first_message,
            last_message,
            first_at,
            last_at,
            messages: n32(messages),
            user_messages: n32(user_messages),
            episodes: n32(episodes),
            episodes_in_view: n32(episodes_in_view),
        }
    }
}

impl From<crate::base::health::Degraded> for w::Degraded {
    fn from(d: crate::base::health::Degraded) -> Self {
        let crate::base::health::Degraded {
            task: t,
            error,
            attempts,
            at,
            effect,
        } = d;
        w::Degraded {
            task: task(t),
            error,
            attempts,
            at,
            effect,
        }
    }
}

impl From<crate::memory::outcomes::Maintained> for w::Maintained {
    fn from(m: crate::memory::outcomes::Maintained) -> Self {
        let crate::memory::outcomes::Maintained {
            judged,
            formed,
            distilled: d,
            fade,
            sealed,
            deferred,
            noted_late,
            abandoned,
            gave_way,
            slept,
            degraded,
        } = m;
        w::Maintained {
            judged,
            formed,
            distilled: d.into_iter().map(distilled).collect(),
            fade,
            sealed,
            deferred,
            noted_late,
            abandoned,
            gave_way,
            slept,
            degraded: list(degraded),
        }
    }
}

impl From<crate::memory::outcomes::Pending> for w::Pending {
    fn from(p: crate::memory::outcomes::Pending) -> Self {
        let crate::memory::outcomes::Pending {
            unjudged,
            undistilled,
            leaving,
            awaiting_note,
            fade_ahead,
            idle_threads,
        } = p;
        w::Pending {
            unjudged,
            undistilled,
            leaving,
            awaiting_note,
            fade_ahead,
            idle_threads,
        }
    }
}

impl From<crate::base::health::LastError> for w::LastError {
    fn from(e: crate::base::health::LastError) -> Self {
        let crate::base::health::LastError { task, error, at } = e;
        w::LastError { task, error, at }
    }
}

impl From<crate::base::health::Health> for w::Health {
    fn from(h: crate::base::health::Health) -> Self {
        let crate::base::health::Health {
            calls,
            failed,
            consecutive_failures,
            last_error,
            degraded_steps,
            repairs,
            truncated,
        } = h;
        w::Health {
            calls: calls.into_iter().collect(),
            failed: failed.into_iter().collect(),
            consecutive_failures,
            last_error: last_error.map(Into::into),
            degraded_steps,
            repairs: repairs.into_iter().collect(),
            truncated,
        }
    }
}

impl From<crate::types::recall::Item> for w::RecallItem {
    fn from(i: crate::types::recall::Item) -> Self {
        match i {
            crate::types::recall::Item::Fact(id) => w::RecallItem::Fact(id),
            crate::types::recall::Item::Passage(id) => w::RecallItem::Passage(id),
            crate::types::recall::Item::Message(id) => w::RecallItem::Message(id),
        }
    }
}

impl From<crate::types::recall::List> for w::SearchList {
    fn from(l: crate::types::recall::List) -> Self {
        use crate::types::recall::List as L;
        match l {
            L::FactWords => w::SearchList::FactWords,
            L::FactMeaning => w::SearchList::FactMeaning,
            L::PassageWords => w::SearchList::PassageWords,
            L::PassageMeaning => w::SearchList::PassageMeaning,
            L::ViewWords => w::SearchList::ViewWords,
            L::ViewMeaning => w::SearchList::ViewMeaning,
        }
    }
}

impl From<crate::types::recall::Hit> for w::Hit {
    fn from(h: crate::types::recall::Hit) -> Self {
        let crate::types::recall::Hit { list, query, rank } = h;
        w::Hit {
            search: list.into(),
            query: n32(query),
            rank: n32(rank),
        }
    }
}

impl From<crate::types::recall::Judgment> for w::Judgment {
    fn from(j: crate::types::recall::Judgment) -> Self {
        match j {
            crate::types::recall::Judgment::Relevant => w::Judgment::Relevant,
            crate::types::recall::Judgment::Fallback => w::Judgment::Fallback,
            crate::types::recall::Judgment::Ranked => w::Judgment::Ranked,
        }
    }
}

impl From<crate::types::recall::Recalled> for w::Recalled {
    fn from(r: crate::types::recall::Recalled) -> Self {
        let crate::types::recall::Recalled {
            item,
            hits,
            fused_rank,
            hop,
            via,
            judgment,
        } = r;
        w::Recalled {
            item: item.into(),
            hits: list(hits),
            fused_rank: fused_rank.map(n32),
            hop,
            via,
            judgment: judgment.into(),
        }
    }
}

impl From<crate::types::recall::Distillation> for w::Distillation {
    fn from(d: crate::types::recall::Distillation) -> Self {
        let crate::types::recall::Distillation { at, kept, failed } = d;
        w::Distillation {
            at,
            kept: list(kept),
            failed,
        }
    }
}

pub(super) fn distilled(
    (block, d): (u64, crate::types::recall::Distillation),
) -> w::DistilledBlock {
    w::DistilledBlock {
        block,
        distillation: d.into(),
    }
}

impl From<crate::types::recall::RecallBlock> for w::RecallBlock {
    fn from(b: crate::types::recall::RecallBlock) -> Self {
        let crate::types::recall::RecallBlock {
            id,
            message,
            at,
            parts,
            split_failed,
            walk_failed,
            items,
            distilled,
            gave_way,
        } = b;
        w::RecallBlock {
            id,
            message,
            at,
            parts,
            split_failed,
            walk_failed,
            items: list(items),
            distilled: distilled.map(Into::into),
            gave_way,
        }
    }
}

impl TryFrom<w::SearchOptions> for crate::types::recall::SearchOptions {
    type Error = Error;
    fn try_from(o: w::SearchOptions) -> Result<Self, Error> {
        let w::SearchOptions {
            limit,
            walk,
            include_in_view,
            budget_tokens,
            filter,
        } = o;
        Ok(crate::types::recall::SearchOptions {
            limit: limit as usize,
            walk,
            include_in_view,
            budget_tokens: budget_tokens.map(|b| b as usize),
            filter: filter.map(search_filter).transpose()?.unwrap_or_default(),
        })
    }
}

fn search_filter(f: w::SearchFilter) -> Result<crate::types::recall::SearchFilter, Error> {
    use crate::types::recall::ItemKind;
    let w::SearchFilter {
        thread,
        from,
        to,
        kinds,
        entity,
        metadata,
    } = f;
    let metadata = match metadata {
        None => serde_json::Map::new(),
        Some(t) => match json_value(&t, "search filter metadata")? {
            serde_json::Value::Object(m) => m,
            _ => {
                return Err(Error::invalid(
                    "search filter metadata must be a JSON object",
                ))
            }
        },
    };
    Ok(crate::types::recall::SearchFilter {
        thread,
        from,
        to,
        kinds: kinds
            .into_iter()
            .map(|k| match k {
                w::RecallKind::Fact => ItemKind::Fact,
                w::RecallKind::Passage => ItemKind::Passage,
                w::RecallKind::Message => ItemKind::Message,
            })
            .collect(),
        entity,
        metadata,
    })
}

impl From<crate::types::recall::SearchHit> for w::SearchHit {
    fn from(h: crate::types::recall::SearchHit) -> Self {
        let crate::types::recall::SearchHit {
            item,
            text,
            said_at,
            score,
            hits,
            hop,
            retired,
            sources,
        } = h;
        w::SearchHit {
            item: item.into(),
            text,
            said_at,
            score,
            hits: list(hits),
            hop,
            retired,
            sources,
        }
    }
}

impl From<crate::view::explain::RecallExplanation> for w::RecallExplanation {
    fn from(x: crate::view::explain::RecallExplanation) -> Self {
        let crate::view::explain::RecallExplanation {
            block,
            message,
            at,
            hits,
            fused_rank,
            hop,
            via,
            judgment,
            distill_kept,
            summary,
        } = x;
        w::RecallExplanation {
            block,
            message,
            at,
            hits: list(hits),
            fused_rank: fused_rank.map(n32),
            hop,
            via,
            judgment: judgment.into(),
            distill_kept,
            summary,
        }
    }
}

impl From<crate::view::ItemKind> for w::ItemKind {
    fn from(k: crate::view::ItemKind) -> Self {
        use crate::view::ItemKind as K;
        match k {
            K::Instructions => w::ItemKind::Instructions,
            K::Facts => w::ItemKind::Facts,
            K::Message => w::ItemKind::Message,
            K::Warning => w::ItemKind::Warning,
            K::Recall => w::ItemKind::Recall,
        }
    }
}

impl From<crate::view::ViewItem> for w::ViewItem {
    fn from(i: crate::view::ViewItem) -> Self {
        let crate::view::ViewItem {
            kind,
            role,
            text,
            tokens,
            message,
            episode,
            facts,
            tool_calls,
            tool_call_id,
        } = i;
        w::ViewItem {
            kind: kind.into(),
            role: role.into(),
            text,
            tokens: n32(tokens),
            message,
            episode,
            facts,
            tool_calls: list(tool_calls),
            tool_call_id,
        }
    }
}

impl From<crate::view::View> for w::View {
    fn from(v: crate::view::View) -> Self {
        let crate::view::View {
            items,
            tokens,
            ceiling,
            over_ceiling,
        } = v;
        w::View {
            items: list(items),
            tokens: n32(tokens),
            ceiling: n32(ceiling),
            over_ceiling,
        }
    }
}

pub(super) fn task(t: Task) -> wmodel::Task {
    match t {
        Task::Segment => wmodel::Task::Segment,
        Task::Note => wmodel::Task::Note,
        Task::Trace => wmodel::Task::Trace,
        Task::Resolve => wmodel::Task::Resolve,
        Task::Reconcile => wmodel::Task::Reconcile,
        Task::Split => wmodel::Task::Split,
        Task::Relevance => wmodel::Task::Relevance,
        Task::Distill => wmodel::Task::Distill,
    }
}

pub(super) fn task_from(t: wmodel::Task) -> Task {
    match t {
        wmodel::Task::Segment => Task::Segment,
        wmodel::Task::Note => Task::Note,
        wmodel::Task::Trace => Task::Trace,
        wmodel::Task::Resolve => Task::Resolve,
        wmodel::Task::Reconcile => Task::Reconcile,
        wmodel::Task::Split => Task::Split,
        wmodel::Task::Relevance => Task::Relevance,
        wmodel::Task::Distill => Task::Distill,
    }
}
