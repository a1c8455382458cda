//! The knowledge graph's entities: canonical names, aliases, resolution.
//!
//! A new name is resolved against the known entities in three steps, cheapest
//! first: its normal form (exact), then name-embedding similarity, then the
//! model's `resolve` judgment over a bounded candidate set. Similar known
//! names come from the state's meaning index over entity names
//! ([`crate::index::vector::VectorIndex`]), not a scan of every entity.

use crate::base::host::{Model, ModelError, Task};
use crate::base::text::normalise_name;
use crate::llm::tasks::ResolveAnswer;
use crate::state::State;
use crate::step::Ctx;
use crate::types::entity::{Alias, Entity, Resolution};

/// A name's place in the graph, decided by [`resolve_names`].
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The entity id (new entities get the next free ids).
    pub entity: u64,
    /// How.
    pub resolution: Resolution,
}

/// Resolves `names` (each with a sentence it appears in) to entities of the
/// graph. New names get new entities, numbered after the known ones, in
/// order. `vectors[i]` is the embedding of `names[i]`. Returns one result per
/// name and the entities to create.
pub(crate) async fn resolve_names<M: Model>(
    ctx: &Ctx<'_, M>,
    names: &[(String, String)],
    vectors: &[Vec<f32>],
) -> Result<(Vec<Resolved>, Vec<Entity>), ModelError> {
    let state: &State = ctx.state;
    let cfg = ctx.config;
    let mut created: Vec<Entity> = Vec::new();
    let mut out = Vec::with_capacity(names.len());
    for ((name, sentence), vector) in names.iter().zip(vectors) {
        let normal = normalise_name(name);
        if let Some(&id) = state.alias_index.get(&normal) {
            out.push(Resolved {
                entity: id,
                resolution: Resolution::Exact,
            });
            continue;
        }
        if let Some(n) = created
            .iter()
            .find(|n| n.aliases.iter().any(|a| a.normal == normal))
        {
            out.push(Resolved {
                entity: n.id,
                resolution: Resolution::Exact,
            });
            continue;
        }
        // Similar names: known entities and the ones this batch creates.
        // The best known ones come from the meaning index (exact, same
        // cosines as a scan), the batch's own by a scan.
        let known = state.entity_vectors.search(
            vector,
            cfg.resolve_candidates,
            cfg.candidate_entity_cosine,
            |_| true,
            |id| state.entity(id).map(|n| &n.embedding),
        );
        let mut similar: Vec<(f32, &Entity)> = known
            .into_iter()
            .filter_map(|(id, c)| Some((c as f32, state.entity(id)?)))
            .chain(created.iter().map(|n| (n.embedding.cosine(vector), n)))
            .filter(|(c, _)| *c >= cfg.candidate_entity_cosine)
            .collect();
        crate::base::sort::sort_by(&mut similar, |a, b| {
            b.0.total_cmp(&a.0).then(a.1.id.cmp(&b.1.id))
        });
        similar.truncate(cfg.resolve_candidates);
        let resolved = match similar.first() {
            Some(&(c, n)) if c >= cfg.same_entity_cosine => Some(Resolved {
                entity: n.id,
                resolution: Resolution::Similar { cosine: c },
            }),
            Some(_) => judge(ctx, name, sentence, &similar).await?,
            None => None,
        };
        match resolved {
            Some(r) => {
                // A name tied to an entity this batch creates joins its
                // aliases there: that entity is not in the state yet, so no
                // later alias event could record it.
                if let Some(n) = created.iter_mut().find(|n| n.id == r.entity) {
                    n.aliases.push(Alias {
                        name: name.trim().to_string(),
                        normal,
                        resolution: r.resolution,
                        at: ctx.now,
                    });
                }
                out.push(r)
            }
            None => {
                let id = (state.entities.len() + created.len()) as u64 + 1;
                created.push(Entity {
                    id,
                    name: name.trim().to_string(),
                    aliases: vec![Alias {
                        name: name.trim().to_string(),
                        normal,
                        resolution: Resolution::New,
                        at: ctx.now,
                    }],
                    embedding: vector.as_slice().into(),
                    erased: false,
                });
                out.push(Resolved {
                    entity: id,
                    resolution: Resolution::New,
                });
            }
        }
    }
    Ok((out, created))
}

async fn judge<M: Model>(
    ctx: &Ctx<'_, M>,
    name: &str,
    sentence: &str,
    candidates: &[(f32, &Entity)],
) -> Result<Option<Resolved>, ModelError> {
    let mut content = format!("Name: {name}\nSentence: {sentence}\n\nKnown entities:\n");
    for (i, (_, n)) in candidates.iter().enumerate() {
        let others: Vec<&str> = n
            .aliases
            .iter()
            .map(|a| a.name.as_str())
            .filter(|a| *a != n.name)
            .collect();
        let also = match others.is_empty() {
            true => String::new(),
            false => format!(" (also: {})", others.join(", ")),
        };
        content.push_str(&format!("{}. {}{also}\n", i + 1, n.name));
    }
    let len = candidates.len();
    let answer: ResolveAnswer = ctx
        .ask(Task::Resolve, content, |a: &ResolveAnswer| {
            match a.same_as {
                Some(i) if i == 0 || i > len => {
                    Err(format!("candidate {i} is not among 1..={len}"))
                }
                _ => Ok(()),
            }
        })
        .await?;
    Ok(answer.same_as.map(|i| Resolved {
        entity: candidates[i - 1].1.id,
        resolution: Resolution::Judged,
    }))
}
