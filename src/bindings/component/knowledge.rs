//! Conversions of what a memory holds and explains: episodes, facts,
//! entities, traces, fades, erasure, export parts, explanations, stats.

use crate::bindings::component::convert::{list, n32};
use crate::bindings::component::wit;

use wit::exports::engram::memory::engine as w;

impl From<crate::types::episode::EpisodeState> for w::EpisodeState {
    fn from(s: crate::types::episode::EpisodeState) -> Self {
        use crate::types::episode::EpisodeState as S;
        match s {
            S::Live => w::EpisodeState::Live,
            S::Leaving => w::EpisodeState::Leaving,
            S::Sealed => w::EpisodeState::Sealed,
            S::Forgotten => w::EpisodeState::Forgotten,
        }
    }
}

impl From<crate::types::episode::StateChange> for w::StateChange {
    fn from(c: crate::types::episode::StateChange) -> Self {
        let crate::types::episode::StateChange { state, at, fade } = c;
        w::StateChange {
            state: state.into(),
            at,
            fade,
        }
    }
}

impl From<crate::types::episode::NoteFailure> for w::NoteFailure {
    fn from(f: crate::types::episode::NoteFailure) -> Self {
        let crate::types::episode::NoteFailure { at, error } = f;
        w::NoteFailure { at, error }
    }
}

impl From<crate::memory::outcomes::EpisodeInfo> for w::Episode {
    fn from(i: crate::memory::outcomes::EpisodeInfo) -> Self {
        let crate::memory::outcomes::EpisodeInfo {
            episode,
            activation,
            significance,
        } = i;
        let crate::types::episode::Episode {
            id,
            first,
            last,
            formed_at,
            tokens,
            state,
            history,
            traces,
            facts,
            note_failures,
            noted,
            deferred,
            abandoned,
            thread,
        } = episode;
        w::Episode {
            id,
            first,
            last,
            formed_at,
            tokens: n32(tokens),
            state: state.into(),
            history: list(history),
            traces,
            facts,
            note_failures: list(note_failures),
            noted,
            deferred,
            abandoned,
            activation,
            significance,
            thread,
        }
    }
}

impl From<crate::types::fact::FactKind> for w::FactKind {
    fn from(k: crate::types::fact::FactKind) -> Self {
        use crate::types::fact::FactKind as K;
        match k {
            K::Fact => w::FactKind::Fact,
            K::Agreed => w::FactKind::Agreed,
            K::Decided => w::FactKind::Decided,
            K::Done => w::FactKind::Done,
            K::Blocked => w::FactKind::Blocked,
            K::Next => w::FactKind::Next,
            K::Preference => w::FactKind::Preference,
        }
    }
}

impl From<w::FactKind> for crate::types::fact::FactKind {
    fn from(k: w::FactKind) -> Self {
        use crate::types::fact::FactKind as K;
        match k {
            w::FactKind::Fact => K::Fact,
            w::FactKind::Agreed => K::Agreed,
            w::FactKind::Decided => K::Decided,
            w::FactKind::Done => K::Done,
            w::FactKind::Blocked => K::Blocked,
            w::FactKind::Next => K::Next,
            w::FactKind::Preference => K::Preference,
        }
    }
}

impl From<w::NewFact> for crate::types::fact::NewFact {
    fn from(f: w::NewFact) -> Self {
        let w::NewFact {
            subject,
            predicate,
            object,
            sentence,
            kind,
        } = f;
        crate::types::fact::NewFact {
            subject,
            predicate,
            object,
            sentence,
            kind: kind.into(),
            sources: Vec::new(),
        }
    }
}

impl From<w::NoteArgs> for crate::memory::outcomes::NoteArgs {
    fn from(a: w::NoteArgs) -> Self {
        let w::NoteArgs { episode, facts } = a;
        crate::memory::outcomes::NoteArgs {
            episode,
            facts: list(facts),
        }
    }
}

impl From<crate::memory::outcomes::NoteOutcome> for w::NoteOutcome {
    fn from(o: crate::memory::outcomes::NoteOutcome) -> Self {
        let crate::memory::outcomes::NoteOutcome {
            episode,
            added,
            merged,
            retired,
            sealed,
        } = o;
        w::NoteOutcome {
            episode,
            added,
            merged,
            retired,
            sealed,
        }
    }
}

impl From<crate::types::fact::Restatement> for w::Restatement {
    fn from(r: crate::types::fact::Restatement) -> Self {
        let crate::types::fact::Restatement {
            episode,
            sentence,
            at,
        } = r;
        w::Restatement {
            episode,
            sentence,
            at,
        }
    }
}

impl From<crate::types::fact::Retirement> for w::Retirement {
    fn from(r: crate::types::fact::Retirement) -> Self {
        let crate::types::fact::Retirement { by, at } = r;
        w::Retirement { by, at }
    }
}

impl From<crate::types::fact::Fact> for w::Fact {
    fn from(f: crate::types::fact::Fact) -> Self {
        let crate::types::fact::Fact {
            id,
            subject,
            predicate,
            object,
            sentence,
            kind,
            episode,
            said_at,
            noted_at,
            embedding,
            sources,
            restated,
            retired,
            erased,
        } = f;
        w::Fact {
            id,
            subject,
            predicate,
            object,
            sentence,
            kind: kind.into(),
            episode,
            said_at,
            noted_at,
            embedding: embedding.to_f32(),
            sources,
            restated: list(restated),
            retired: retired.map(Into::into),
            erased,
        }
    }
}

impl From<crate::types::entity::Resolution> for w::Resolution {
    fn from(r: crate::types::entity::Resolution) -> Self {
        use crate::types::entity::Resolution as R;
        match r {
            R::New => w::Resolution::New,
            R::Exact => w::Resolution::Exact,
            R::Similar { cosine } => w::Resolution::Similar(cosine),
            R::Judged => w::Resolution::Judged,
        }
    }
}

impl From<crate::types::entity::Alias> for w::Alias {
    fn from(a: crate::types::entity::Alias) -> Self {
        let crate::types::entity::Alias {
            name,
            normal,
            resolution,
            at,
        } = a;
        w::Alias {
            name,
            normal,
            resolution: resolution.into(),
            at,
        }
    }
}

impl From<crate::types::entity::Entity> for w::Entity {
    fn from(e: crate::types::entity::Entity) -> Self {
        let crate::types::entity::Entity {
            id,
            name,
            aliases,
            embedding,
            erased,
        } = e;
        w::Entity {
            id,
            name,
            aliases: list(aliases),
            embedding: embedding.to_f32(),
            erased,
        }
    }
}

impl From<w::EraseTarget> for crate::types::erase::Target {
    fn from(t: w::EraseTarget) -> Self {
        match t {
            w::EraseTarget::Message(id) => crate::types::erase::Target::Message(id),
            w::EraseTarget::Episode(id) => crate::types::erase::Target::Episode(id),
            w::EraseTarget::Fact(id) => crate::types::erase::Target::Fact(id),
            w::EraseTarget::Entity(id) => crate::types::erase::Target::Entity(id),
            w::EraseTarget::Thread(name) => crate::types::erase::Target::Thread(name),
        }
    }
}

impl From<crate::store::export::ExportCursor> for w::ExportCursor {
    fn from(c: crate::store::export::ExportCursor) -> Self {
        w::ExportCursor {
            next: c.next,
            end: c.end,
            rewrites: c.rewrites,
            mark: c.mark,
        }
    }
}

impl From<w::ExportCursor> for crate::store::export::ExportCursor {
    fn from(c: w::ExportCursor) -> Self {
        crate::store::export::ExportCursor {
            next: c.next,
            end: c.end,
            rewrites: c.rewrites,
            mark: c.mark,
        }
    }
}

impl From<crate::store::export::ExportPart> for w::ExportPart {
    fn from(p: crate::store::export::ExportPart) -> Self {
        w::ExportPart {
            text: p.text,
            next: p.next.map(Into::into),
        }
    }
}

impl From<crate::types::erase::Erased> for w::Erased {
    fn from(e: crate::types::erase::Erased) -> Self {
        let crate::types::erase::Erased {
            messages,
            facts,
            entities,
        } = e;
        w::Erased {
            messages,
            facts,
            entities,
        }
    }
}

impl From<crate::types::trace::TraceCause> for w::TraceCause {
    fn from(c: crate::types::trace::TraceCause) -> Self {
        use crate::types::trace::TraceCause as C;
        match c {
            C::Encoding => w::TraceCause::Encoding,
            C::Fact(id) => w::TraceCause::Fact(id),
            C::Recall(id) => w::TraceCause::Recall(id),
        }
    }
}

impl From<crate::types::trace::Trace> for w::Trace {
    fn from(t: crate::types::trace::Trace) -> Self {
        let crate::types::trace::Trace {
            id,
            episode,
            cause,
            yes,
            strength,
            at,
        } = t;
        w::Trace {
            id,
            episode,
            cause: cause.into(),
            yes,
            strength,
            at,
        }
    }
}

impl From<crate::types::fade::FadeReason> for w::FadeReason {
    fn from(r: crate::types::fade::FadeReason) -> Self {
        match r {
            crate::types::fade::FadeReason::Ceiling => w::FadeReason::Ceiling,
            crate::types::fade::FadeReason::Sleep => w::FadeReason::Sleep,
            crate::types::fade::FadeReason::Ahead => w::FadeReason::Ahead,
            crate::types::fade::FadeReason::Idle => w::FadeReason::Idle,
        }
    }
}

impl From<crate::types::fade::Fade> for w::Fade {
    fn from(f: crate::types::fade::Fade) -> Self {
        let crate::types::fade::Fade {
            id,
            reason,
            at,
            view_tokens,
            ceiling,
            landing,
            turn_tokens,
            finished_at,
            view_after,
            thread,
        } = f;
        w::Fade {
            id,
            reason: reason.into(),
            at,
            view_tokens: n32(view_tokens),
            ceiling: n32(ceiling),
            landing: n32(landing),
            turn_tokens: n32(turn_tokens),
            finished_at,
            view_after: view_after.map(n32),
            thread,
        }
    }
}

impl From<crate::view::explain::Move> for w::EpisodeMove {
    fn from(m: crate::view::explain::Move) -> Self {
        let crate::view::explain::Move { state, at, fade } = m;
        w::EpisodeMove {
            state: state.into(),
            at,
            fade: fade.map(Into::into),
        }
    }
}

impl From<crate::view::explain::EpisodeExplanation> for w::EpisodeExplanation {
    fn from(x: crate::view::explain::EpisodeExplanation) -> Self {
        let crate::view::explain::EpisodeExplanation {
            episode,
            state,
            in_view,
            activation,
            significance,
            traces,
            moves,
            summary,
            thread: _,
        } = x;
        w::EpisodeExplanation {
            episode,
            state: state.into(),
            in_view,
            activation,
            significance,
            traces: list(traces),
            moves: list(moves),
            summary,
        }
    }
}

impl From<crate::view::explain::MessageExplanation> for w::MessageExplanation {
    fn from(x: crate::view::explain::MessageExplanation) -> Self {
        let crate::view::explain::MessageExplanation {
            message,
            thread,
            in_view,
            episode,
            replaces,
            replaced_by,
            alternatives,
            summary,
        } = x;
        w::MessageExplanation {
            message,
            thread,
            in_view,
            episode,
            replaces,
            replaced_by,
            alternatives,
            summary,
        }
    }
}

impl From<crate::view::explain::FactExplanation> for w::FactExplanation {
    fn from(x: crate::view::explain::FactExplanation) -> Self {
        let crate::view::explain::FactExplanation {
            fact,
            sentence,
            subject,
            object,
            in_facts_block,
            episodes,
            retired_by,
            traces,
            declined,
            summary,
            thread: _,
        } = x;
        w::FactExplanation {
            fact,
            sentence,
            subject,
            object,
            in_facts_block,
            episodes: episodes
                .into_iter()
                .map(|(episode, state)| w::FactSource {
                    episode,
                    state: state.into(),
                })
                .collect(),
            retired_by: retired_by.map(|(by, at)| w::Retirement { by, at }),
            traces: list(traces),
            declined,
            summary,
        }
    }
}

impl From<crate::memory::outcomes::Stats> for w::Stats {
    fn from(s: crate::memory::outcomes::Stats) -> Self {
        let crate::memory::outcomes::Stats {
            messages,
            episodes,
            open_messages,
            facts: [live_facts, retired_facts],
            entities,
            traces: [traces, yes_traces],
            fades,
            log_entries,
            view_tokens,
            ceiling,
            pending,
            model,
            storage_warnings,
        } = s;
        let [live, leaving, sealed, forgotten] = episodes.map(n32);
        w::Stats {
            messages: n32(messages),
            episodes: w::EpisodeCounts {
                live,
                leaving,
                sealed,
                forgotten,
            },
            open_messages: n32(open_messages),
            live_facts: n32(live_facts),
            retired_facts: n32(retired_facts),
            entities: n32(entities),
            traces: n32(traces),
            yes_traces: n32(yes_traces),
            fades: n32(fades),
            log_entries,
            view_tokens: n32(view_tokens),
            ceiling: n32(ceiling),
            pending: pending.into(),
            model: model.into(),
            storage_warnings,
        }
    }
}

impl From<w::Statement> for crate::types::fact::Statement {
    fn from(s: w::Statement) -> Self {
        match s {
            w::Statement::Sentence(s) => crate::types::fact::Statement::Sentence(s),
            w::Statement::Triple(f) => crate::types::fact::Statement::Fact(f.into()),
        }
    }
}

impl From<crate::types::fact::Remembered> for w::Remembered {
    fn from(r: crate::types::fact::Remembered) -> Self {
        let crate::types::fact::Remembered {
            fact,
            merged,
            retired,
        } = r;
        w::Remembered {
            fact,
            merged,
            retired,
        }
    }
}

impl From<crate::types::fact::HistoryEntry> for w::HistoryEntry {
    fn from(e: crate::types::fact::HistoryEntry) -> Self {
        use crate::types::fact::HistoryEntry as H;
        match e {
            H::Added {
                episode,
                sentence,
                at,
            } => w::HistoryEntry::Added(w::HistoryMention {
                episode,
                sentence,
                at,
            }),
            H::Merged {
                episode,
                sentence,
                at,
            } => w::HistoryEntry::Merged(w::HistoryMention {
                episode,
                sentence,
                at,
            }),
            H::Retired { fact, at } => w::HistoryEntry::Retired(w::HistoryLink { fact, at }),
            H::RetiredBy { fact, at } => w::HistoryEntry::RetiredBy(w::HistoryLink { fact, at }),
            H::Erased => w::HistoryEntry::Erased,
        }
    }
}

impl From<crate::types::fact::FactHistory> for w::FactHistory {
    fn from(h: crate::types::fact::FactHistory) -> Self {
        let crate::types::fact::FactHistory {
            fact,
            live,
            entries,
        } = h;
        w::FactHistory {
            fact,
            live,
            entries: list(entries),
        }
    }
}

impl From<w::EpisodeState> for crate::types::episode::EpisodeState {
    fn from(s: w::EpisodeState) -> Self {
        use crate::types::episode::EpisodeState as S;
        match s {
            w::EpisodeState::Live => S::Live,
            w::EpisodeState::Leaving => S::Leaving,
            w::EpisodeState::Sealed => S::Sealed,
            w::EpisodeState::Forgotten => S::Forgotten,
        }
    }
}

/// A page request with its filter as the engine takes it.
pub(super) fn page_options<F, G: From<F>>(
    page: w::PageRequest,
    filter: F,
) -> crate::types::page::PageOptions<G> {
    crate::types::page::PageOptions {
        limit: page.limit.map(|n| n as usize),
        cursor: page.cursor,
        filter: filter.into(),
    }
}

impl From<w::FactFilter> for crate::types::page::FactFilter {
    fn from(f: w::FactFilter) -> Self {
        let w::FactFilter {
            live,
            kinds,
            entity,
            stated,
        } = f;
        crate::types::page::FactFilter {
            live,
            kinds: list(kinds),
            entity,
            stated,
        }
    }
}

impl From<w::EpisodeFilter> for crate::types::page::EpisodeFilter {
    fn from(f: w::EpisodeFilter) -> Self {
        let w::EpisodeFilter { thread, states } = f;
        crate::types::page::EpisodeFilter {
            thread,
            states: list(states),
        }
    }
}

impl From<Option<String>> for crate::types::page::MessageFilter {
    fn from(thread: Option<String>) -> Self {
        crate::types::page::MessageFilter { thread }
    }
}

impl From<crate::types::page::Page<crate::types::fact::Fact>> for w::FactPage {
    fn from(p: crate::types::page::Page<crate::types::fact::Fact>) -> Self {
        w::FactPage {
            items: list(p.items),
            next: p.next,
        }
    }
}

impl From<crate::types::page::Page<crate::types::message::Message>> for w::MessagePage {
    fn from(p: crate::types::page::Page<crate::types::message::Message>) -> Self {
        w::MessagePage {
            items: list(p.items),
            next: p.next,
        }
    }
}

impl From<crate::types::page::Page<crate::memory::outcomes::EpisodeInfo>> for w::EpisodePage {
    fn from(p: crate::types::page::Page<crate::memory::outcomes::EpisodeInfo>) -> Self {
        w::EpisodePage {
            items: list(p.items),
            next: p.next,
        }
    }
}
