//! Noting: turning an episode into facts of the knowledge graph.
//!
//! The `note` task (or the host's chat model through the `note` tool) writes
//! facts; each is placed in the graph in one all-or-nothing step: names are
//! resolved to entities, the fact is reconciled with held facts about the same
//! entities (a restatement merges, a contradiction retires the older fact),
//! and it is judged against every remembered episode (`trace`). Every model
//! call is made before anything changes, so a failure changes nothing.

use crate::base::host::{Model, ModelError, Task};
use crate::base::text::normalise_name;
use crate::llm::tasks::{check_fact, check_numbers, NoteAnswer, ReconcileAnswer, Relation};
use crate::step::Ctx;
use crate::types::episode::NoteFailure;
use crate::types::event::Event;
use crate::types::fact::{Fact, NewFact, Restatement, Retirement};
use crate::{resolve, types::entity::Resolution};

/// What one note wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Noted {
    /// New facts.
    pub added: Vec<u64>,
    /// Held facts that new ones restated.
    pub merged: Vec<u64>,
    /// Held facts that new ones retired.
    pub retired: Vec<u64>,
}

/// Asks the `note` task for the facts of `episode` (nothing is emitted).
pub(crate) async fn ask_note<M: Model>(
    ctx: &Ctx<'_, M>,
    episode: u64,
) -> Result<Vec<NewFact>, ModelError> {
    let e = ctx.state.episode(episode).expect("episode exists");
    let mut content = format!(
        "Episode {} ({}), last message at {}:\n",
        e.id,
        crate::types::episode::label(e),
        crate::base::text::format_time(e.formed_at)
    );
    let max = ctx.config.max_facts_per_note;
    content.push_str(&format!("At most {max} facts.\n"));
    let messages = ctx.state.episode_messages(e);
    let shown = messages.len();
    for m in messages.iter() {
        content.push_str(&format!(
            "[{}] {}: {}\n",
            crate::base::text::format_time(m.at),
            m.role.as_str(),
            crate::base::text::clip(&m.display_text(), 1_000)
        ));
    }
    let answer: NoteAnswer = ctx
        .ask(Task::Note, content, |a: &NoteAnswer| {
            if a.facts.len() > max {
                return Err(format!("{} facts; at most {max}", a.facts.len()));
            }
            a.facts.iter().try_for_each(|f| {
                check_fact(f)?;
                check_numbers(&f.sources, shown, "source message")
            })
        })
        .await?;
    Ok(answer.facts)
}

/// Writes `facts` noted for `episode` and, with `index`, indexes its
/// passages for recall (unless they are already; an episode still in view
/// is noted without them): all model calls first, so a failure emits
/// nothing. The `note` task's answers and the host's `note` tool both
/// write through it.
pub(crate) async fn write_episode<M: Model>(
    ctx: &mut Ctx<'_, M>,
    episode: u64,
    facts: Vec<NewFact>,
    index: bool,
    pre: Option<&crate::trace::Prejudged>,
) -> Result<Noted, ModelError> {
    let passages = match index {
        true => crate::recall::passage::prepare(ctx, episode).await?,
        false => Vec::new(),
    };
    let dimension = passages.first().map(|p| p.embedding.len());
    let noted = write_facts(ctx, episode, facts, dimension, pre).await?;
    if !passages.is_empty() {
        ctx.emit(Event::PassagesIndexed { passages });
    }
    ctx.emit(Event::Noted {
        episode,
        at: ctx.now,
    });
    Ok(noted)
}

/// Notes `episodes`: their `note` calls go out together, then each one's
/// facts are placed in the graph in order (later ones see earlier ones).
/// Returns whether each succeeded; a failure is recorded on the episode and
/// reported.
pub(crate) async fn note_episodes<M: Model>(
    ctx: &mut Ctx<'_, M>,
    episodes: &[u64],
) -> Vec<(u64, bool)> {
    let answers = {
        let c: &Ctx<'_, M> = ctx;
        crate::base::join::join_all(episodes.iter().map(|&id| ask_note(c, id)).collect()).await
    };
    // Several notes: their facts are judged against the remembered
    // episodes in one pooled run (a failure leaves each to judge its own).
    let pre = match answers.iter().filter(|a| a.is_ok()).count() > 1 {
        true => {
            let mut sentences: Vec<String> = Vec::new();
            for f in answers.iter().flatten().flatten() {
                if !sentences.contains(&f.sentence) {
                    sentences.push(f.sentence.clone());
                }
            }
            crate::trace::prejudge(ctx, &sentences).await.ok()
        }
        false => None,
    };
    let mut out = Vec::with_capacity(episodes.len());
    for (&id, answer) in episodes.iter().zip(answers) {
        let result = match answer {
            Ok(facts) => write_episode(ctx, id, facts, true, pre.as_ref())
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            let failure = NoteFailure {
                at: ctx.now,
                error: e.to_string(),
            };
            ctx.emit(Event::NoteFailed {
                episode: id,
                failure,
            });
            ctx.degrade(
                Task::Note,
                e,
                &format!("episode {id} is without facts for now; its note is retried later"),
            );
        }
        out.push((id, result.is_ok()));
    }
    out
}

/// Seals-to-be `episode` without facts after its note failed: its passages
/// are indexed (by words only if the embedder fails too) so it stays
/// recallable, and it awaits a later note.
pub(crate) async fn defer<M: Model>(ctx: &mut Ctx<'_, M>, episode: u64) {
    let passages = crate::recall::passage::prepare_or_words(ctx, episode).await;
    if !passages.is_empty() {
        ctx.emit(Event::PassagesIndexed { passages });
    }
    ctx.emit(Event::NoteDeferred {
        episode,
        at: ctx.now,
    });
}

/// Retries the notes of episodes that left the view without facts; after
/// `note_retries` failures since it left, an episode's note is given up (it
/// stays recallable by its passages). Returns (noted, abandoned).
/// Episodes in `skip` (deferred by this call) wait for a later one.
pub(crate) async fn retry_deferred<M: Model>(
    ctx: &mut Ctx<'_, M>,
    skip: &[u64],
) -> (Vec<u64>, Vec<u64>) {
    let waiting: Vec<u64> = ctx
        .state
        .awaiting_note
        .iter()
        .copied()
        .filter(|id| !skip.contains(id))
        .collect();
    let (mut noted, mut abandoned) = (Vec::new(), Vec::new());
    for (id, ok) in note_episodes(ctx, &waiting).await {
        if ok {
            noted.push(id);
        } else if ctx.state.episode(id).expect("exists").retries() >= ctx.config.note_retries {
            ctx.emit(Event::NoteAbandoned {
                episode: id,
                at: ctx.now,
            });
            abandoned.push(id);
        }
    }
    (noted, abandoned)
}

/// Places `facts` (checked) from `episode` (or from the host: episode
/// [`crate::types::fact::HOST`]) in the graph. All model calls come
/// first; the events are emitted only when every call succeeded. `dimension`
/// is the dimension of vectors this call already got but has not emitted yet
/// (a memory's vectors must all share one).
pub(crate) async fn write_facts<M: Model>(
    ctx: &mut Ctx<'_, M>,
    episode: u64,
    mut facts: Vec<NewFact>,
    dimension: Option<usize>,
    pre: Option<&crate::trace::Prejudged>,
) -> Result<Noted, ModelError> {
    // Identical sentences within one note count once.
    let mut seen = std::collections::BTreeSet::new();
    facts.retain(|f| seen.insert(normalise_name(&f.sentence)));
    if facts.is_empty() {
        return Ok(Noted::default());
    }
    // Distinct names, each with the first sentence it appears in.
    let mut names: Vec<(String, String)> = Vec::new();
    for f in &facts {
        for n in [&f.subject, &f.object] {
            if !names
                .iter()
                .any(|(m, _)| normalise_name(m) == normalise_name(n))
            {
                names.push((n.trim().to_string(), f.sentence.clone()));
            }
        }
    }
    let mut texts: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
    texts.extend(facts.iter().map(|f| f.sentence.clone()));
    let vectors = ctx.embed(&texts, dimension).await?;
    let (name_vecs, sentence_vecs) = vectors.split_at(names.len());
    let (resolved, created) = resolve::resolve_names(ctx, &names, name_vecs).await?;
    let entity_of = |name: &str| {
        let n = normalise_name(name);
        let i = names
            .iter()
            .position(|(m, _)| normalise_name(m) == n)
            .expect("name listed");
        resolved[i].entity
    };

    // A fact the host stated (`episode` HOST) was said when stated, from
    // no message.
    let (said_at, shown): (i64, Vec<u64>) = match ctx.state.episode(episode) {
        Some(e) => (
            e.formed_at,
            // A fact's sources, from numbers among the episode's messages to ids.
            ctx.state.episode_messages(e).iter().map(|m| m.id).collect(),
        ),
        None => (ctx.now, Vec::new()),
    };
    let sources = |f: &NewFact| {
        let mut ids: Vec<u64> = f
            .sources
            .iter()
            .filter_map(|&n| n.checked_sub(1).and_then(|i| shown.get(i)).copied())
            .collect();
        crate::base::sort::sort(&mut ids);
        ids.dedup();
        ids
    };
    let mut events: Vec<Event> = created.iter().cloned().map(Event::EntityAdded).collect();
    for ((name, _), r) in names.iter().zip(&resolved) {
        let normal = normalise_name(name);
        let known = ctx
            .state
            .entity(r.entity)
            .map(|n| n.aliases.iter().any(|a| a.normal == normal));
        if known == Some(false) {
            let alias = crate::types::entity::Alias {
                name: name.clone(),
                normal,
                resolution: r.resolution,
                at: ctx.now,
            };
            events.push(Event::AliasAdded {
                entity: r.entity,
                alias,
            });
        }
    }
    debug_assert!(resolved
        .iter()
        .all(|r| r.resolution != Resolution::New || created.iter().any(|n| n.id == r.entity)));

    let mut noted = Noted::default();
    let mut judged: Vec<(u64, String)> = Vec::new(); // facts to trace
    let mut next_fact = ctx.state.facts.len() as u64 + 1;
    // Each fact's triple; a fact the same note states twice merges into the
    // first statement (its twin) without asking the model.
    let triples: Vec<(u64, String, u64)> = facts
        .iter()
        .map(|f| {
            let predicate = normalise_name(&f.predicate);
            (entity_of(&f.subject), predicate, entity_of(&f.object))
        })
        .collect();
    let twin_of: Vec<Option<usize>> = (0..facts.len())
        .map(|j| (0..j).find(|&i| triples[i] == triples[j] && facts[i].kind == facts[j].kind))
        .collect();
    // The reconcile judgments are independent: they go out together, each
    // against the facts held before this note.
    let asked = {
        let c: &Ctx<'_, M> = ctx;
        crate::base::join::join_all(
            facts
                .iter()
                .zip(sentence_vecs)
                .enumerate()
                .map(|(j, (f, vector))| {
                    let (subject, _, object) = triples[j].clone();
                    let twin = twin_of[j].is_some();
                    async move {
                        match twin {
                            true => Ok(Vec::new()),
                            false => reconcile(c, f, subject, object, vector).await,
                        }
                    }
                })
                .collect(),
        )
        .await
    };
    // The fact each statement ended as (new, or the held one it restated).
    let mut became: Vec<u64> = Vec::with_capacity(facts.len());
    for (j, ((f, vector), asked)) in facts.iter().zip(sentence_vecs).zip(asked).enumerate() {
        let (subject, _, object) = triples[j].clone();
        let relations = match twin_of[j] {
            Some(i) => vec![(became[i], Relation::Restates)],
            // A held fact an earlier statement of this note retired is no
            // longer there to restate or contradict.
            None => asked?
                .into_iter()
                .filter(|(held, _)| !noted.retired.contains(held))
                .collect(),
        };
        let restated = relations
            .iter()
            .find(|(_, r)| *r == Relation::Restates)
            .map(|(id, _)| *id);
        if let Some(held) = restated {
            let restatement = Restatement {
                episode,
                sentence: f.sentence.clone(),
                at: ctx.now,
            };
            events.push(Event::FactRestated {
                fact: held,
                restatement,
            });
            noted.merged.push(held);
            judged.push((held, f.sentence.clone()));
            became.push(held);
            continue;
        }
        let id = next_fact;
        next_fact += 1;
        became.push(id);
        events.push(Event::FactAdded(Fact {
            id,
            subject,
            predicate: f.predicate.trim().to_string(),
            object,
            sentence: f.sentence.trim().to_string(),
            kind: f.kind,
            episode,
            said_at,
            noted_at: ctx.now,
            embedding: vector.as_slice().into(),
            sources: sources(f),
            restated: Vec::new(),
            retired: None,
            erased: false,
        }));
        // Of two contradicting facts the one said later holds: a fact noted
        // late for an older episode is kept but retired by the newer held
        // fact (fades seal by activation, not age, so this happens).
        let mut born_retired = false;
        for (held, _) in relations
            .iter()
            .filter(|(_, r)| *r == Relation::Contradicts)
        {
            let held_said = ctx.state.fact(*held).map_or(i64::MIN, |h| h.said_at);
            if held_said > said_at {
                if !born_retired {
                    born_retired = true;
                    let retirement = Retirement {
                        by: *held,
                        at: ctx.now,
                    };
                    events.push(Event::FactRetired {
                        fact: id,
                        retirement,
                    });
                }
            } else if !noted.retired.contains(held) {
                let retirement = Retirement {
                    by: id,
                    at: ctx.now,
                };
                events.push(Event::FactRetired {
                    fact: *held,
                    retirement,
                });
                noted.retired.push(*held);
            }
        }
        noted.added.push(id);
        judged.push((id, f.sentence.clone()));
    }
    let (traces, declined) =
        crate::trace::judge(ctx, &judged, ctx.state.traces.len() as u64 + 1, pre).await?;
    events.extend(traces.into_iter().map(Event::Trace));
    events.extend(
        declined
            .into_iter()
            .filter(|&(_, n)| n > 0)
            .map(|(fact, episodes)| Event::Declined {
                fact,
                episodes,
                at: ctx.now,
            }),
    );
    for e in events {
        ctx.emit(e);
    }
    Ok(noted)
}

/// Held live facts that the new fact restates or contradicts. Candidates are
/// the live facts naming its subject or object, most similar first, at most
/// `reconcile_candidates`; an identical triple or sentence restates without
/// asking the model.
async fn reconcile<M: Model>(
    ctx: &Ctx<'_, M>,
    f: &NewFact,
    subject: u64,
    object: u64,
    vector: &[f32],
) -> Result<Vec<(u64, Relation)>, ModelError> {
    let state: &crate::state::State = ctx.state;
    let mut ids: Vec<u64> = state.facts_about(subject).to_vec();
    ids.extend_from_slice(state.facts_about(object));
    crate::base::sort::sort(&mut ids);
    ids.dedup();
    let live: Vec<&Fact> = ids
        .iter()
        .filter_map(|&id| state.fact(id))
        .filter(|h| h.is_live())
        .collect();
    let sentence = normalise_name(&f.sentence);
    let predicate = normalise_name(&f.predicate);
    if let Some(h) = live.iter().find(|h| {
        normalise_name(&h.sentence) == sentence
            || (h.subject == subject
                && h.object == object
                && normalise_name(&h.predicate) == predicate
                && h.kind == f.kind)
    }) {
        return Ok(vec![(h.id, Relation::Restates)]);
    }
    let mut candidates: Vec<(f32, &Fact)> = live
        .into_iter()
        .map(|h| (h.embedding.cosine(vector), h))
        .collect();
    crate::base::sort::sort_by(&mut candidates, |a, b| {
        b.0.total_cmp(&a.0).then(a.1.id.cmp(&b.1.id))
    });
    candidates.truncate(ctx.config.reconcile_candidates);
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let mut content = format!(
        "New fact: {}\nTriple: {} | {} | {}\n\nHeld facts:\n",
        f.sentence, f.subject, f.predicate, f.object
    );
    let name = |id: u64| state.entity(id).map_or("?", |e| e.name.as_str());
    for (i, (_, h)) in candidates.iter().enumerate() {
        content.push_str(&format!(
            "{}. {} (said {}) [{} | {} | {}]\n",
            i + 1,
            h.sentence,
            crate::base::text::format_date(h.said_at),
            name(h.subject),
            h.predicate,
            name(h.object)
        ));
    }
    let n = candidates.len();
    let answer: ReconcileAnswer = ctx
        .ask(Task::Reconcile, content, |a: &ReconcileAnswer| {
            let nums: Vec<usize> = a.judgments.iter().map(|j| j.fact).collect();
            check_numbers(&nums, n, "held fact")
        })
        .await?;
    Ok(answer
        .judgments
        .iter()
        .filter(|j| j.relation != Relation::Unrelated)
        .map(|j| (candidates[j.fact - 1].1.id, j.relation))
        .collect())
}
