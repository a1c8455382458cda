//! Conversions of what a memory holds and explains: episodes, facts,
//! entities, traces, fades, erasure, export parts, explanations, stats.

use super::*;

impl From<crate::EpisodeState> for w::EpisodeState {
    fn from(s: crate::EpisodeState) -> Self {
        use crate::EpisodeState as S;
        match s {
            S::Live => w::EpisodeState::Live,
            S::Leaving => w::EpisodeState::Leaving,
            S::Sealed => w::EpisodeState::Sealed,
            S::Forgotten => w::EpisodeState::Forgotten,
        }
    }
}

impl From<crate::episode::StateChange> for w::StateChange {
    fn from(c: crate::episode::StateChange) -> Self {
        let crate::episode::StateChange { state, at, fade } = c;
        w::StateChange {
            state: state.into(),
            at,
            fade,
        }
    }
}

impl From<crate::episode::NoteFailure> for w::NoteFailure {
    fn from(f: crate::episode::NoteFailure) -> Self {
        let crate::episode::NoteFailure { at, error } = f;
        w::NoteFailure { at, error }
    }
}

impl From<crate::EpisodeInfo> for w::Episode {
    fn from(i: crate::EpisodeInfo) -> Self {
        let crate::EpisodeInfo {
            episode,
            activation,
            significance,
        } = i;
        let crate::Episode {
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

impl From<crate::FactKind> for w::FactKind {
    fn from(k: crate::FactKind) -> Self {
        use crate::FactKind as K;
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

impl From<w::FactKind> for crate::FactKind {
    fn from(k: w::FactKind) -> Self {
        use crate::FactKind as K;
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

impl From<w::NewFact> for crate::NewFact {
    fn from(f: w::NewFact) -> Self {
        let w::NewFact {
            subject,
            predicate,
            object,
            sentence,
            kind,
        } = f;
        crate::NewFact {
            subject,
            predicate,
            object,
            sentence,
            kind: kind.into(),
            sources: Vec::new(),
        }
    }
}

impl From<w::NoteArgs> for crate::NoteArgs {
    fn from(a: w::NoteArgs) -> Self {
        let w::NoteArgs { episode, facts } = a;
        crate::NoteArgs {
            episode,
            facts: list(facts),
        }
    }
}

impl From<crate::NoteOutcome> for w::NoteOutcome {
    fn from(o: crate::NoteOutcome) -> Self {
        let crate::NoteOutcome {
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

impl From<crate::fact::Restatement> for w::Restatement {
    fn from(r: crate::fact::Restatement) -> Self {
        let crate::fact::Restatement {
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

impl From<crate::fact::Retirement> for w::Retirement {
    fn from(r: crate::fact::Retirement) -> Self {
        let crate::fact::Retirement { by, at } = r;
        w::Retirement { by, at }
    }
}

impl From<crate::Fact> for w::Fact {
    fn from(f: crate::Fact) -> Self {
        let crate::Fact {
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

impl From<crate::resolve::Resolution> for w::Resolution {
    fn from(r: crate::resolve::Resolution) -> Self {
        use crate::resolve::Resolution as R;
        match r {
            R::New => w::Resolution::New,
            R::Exact => w::Resolution::Exact,
            R::Similar { cosine } => w::Resolution::Similar(cosine),
            R::Judged => w::Resolution::Judged,
        }
    }
}

impl From<crate::resolve::Alias> for w::Alias {
    fn from(a: crate::resolve::Alias) -> Self {
        let crate::resolve::Alias {
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

impl From<crate::Entity> for w::Entity {
    fn from(e: crate::Entity) -> Self {
        let crate::Entity {
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

impl From<w::EraseTarget> for crate::Target {
    fn from(t: w::EraseTarget) -> Self {
        match t {
            w::EraseTarget::Message(id) => crate::Target::Message(id),
            w::EraseTarget::Episode(id) => crate::Target::Episode(id),
            w::EraseTarget::Fact(id) => crate::Target::Fact(id),
            w::EraseTarget::Entity(id) => crate::Target::Entity(id),
            w::EraseTarget::Thread(name) => crate::Target::Thread(name),
        }
    }
}

impl From<crate::store::ExportCursor> for w::ExportCursor {
    fn from(c: crate::store::ExportCursor) -> Self {
        w::ExportCursor {
            next: c.next,
            end: c.end,
            rewrites: c.rewrites,
            mark: c.mark,
        }
    }
}

impl From<w::ExportCursor> for crate::store::ExportCursor {
    fn from(c: w::ExportCursor) -> Self {
        crate::store::ExportCursor {
            next: c.next,
            end: c.end,
            rewrites: c.rewrites,
            mark: c.mark,
        }
    }
}

impl From<crate::store::ExportPart> for w::ExportPart {
    fn from(p: crate::store::ExportPart) -> Self {
        w::ExportPart {
            text: p.text,
            next: p.next.map(Into::into),
        }
    }
}

impl From<crate::Erased> for w::Erased {
    fn from(e: crate::Erased) -> Self {
        let crate::Erased {
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

impl From<crate::trace::TraceCause> for w::TraceCause {
    fn from(c: crate::trace::TraceCause) -> Self {
        use crate::trace::TraceCause as C;
        match c {
            C::Encoding => w::TraceCause::Encoding,
            C::Fact(id) => w::TraceCause::Fact(id),
            C::Recall(id) => w::TraceCause::Recall(id),
        }
    }
}

impl From<crate::Trace> for w::Trace {
    fn from(t: crate::Trace) -> Self {
        let crate::Trace {
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

impl From<crate::fade::FadeReason> for w::FadeReason {
    fn from(r: crate::fade::FadeReason) -> Self {
        match r {
            crate::fade::FadeReason::Ceiling => w::FadeReason::Ceiling,
            crate::fade::FadeReason::Sleep => w::FadeReason::Sleep,
            crate::fade::FadeReason::Ahead => w::FadeReason::Ahead,
            crate::fade::FadeReason::Idle => w::FadeReason::Idle,
        }
    }
}

impl From<crate::fade::Fade> for w::Fade {
    fn from(f: crate::fade::Fade) -> Self {
        let crate::fade::Fade {
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

impl From<crate::explain::Move> for w::EpisodeMove {
    fn from(m: crate::explain::Move) -> Self {
        let crate::explain::Move { state, at, fade } = m;
        w::EpisodeMove {
            state: state.into(),
            at,
            fade: fade.map(Into::into),
        }
    }
}

impl From<crate::explain::EpisodeExplanation> for w::EpisodeExplanation {
    fn from(x: crate::explain::EpisodeExplanation) -> Self {
        let crate::explain::EpisodeExplanation {
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

impl From<crate::explain::FactExplanation> for w::FactExplanation {
    fn from(x: crate::explain::FactExplanation) -> Self {
        let crate::explain::FactExplanation {
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

impl From<crate::Stats> for w::Stats {
    fn from(s: crate::Stats) -> Self {
        let crate::Stats {
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
