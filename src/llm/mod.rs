//! Model tasks: typed requests, their prompts, and strict answer parsing with
//! bounded retries. The core owns the prompts; the host only routes text.

pub(crate) mod memo;
pub mod parse;
pub mod prompts;
pub mod tasks;

use serde::de::DeserializeOwned;

use crate::base::host::{Model, ModelError, Task, TaskRequest};

/// Builds the request of `task` for `content`.
pub fn request(task: Task, content: String, attempt: u32) -> TaskRequest {
    TaskRequest {
        task,
        system: prompts::system(task).to_string(),
        content,
        schema: schema_text(task).to_string(),
        attempt,
    }
}

/// The JSON text of a task's answer schema, built once per task (every
/// request carries it; building it from [`tasks::schema`] each time was a
/// tenth of a reply's cost).
fn schema_text(task: Task) -> &'static str {
    use std::sync::OnceLock;
    static TEXTS: [OnceLock<String>; 8] = [const { OnceLock::new() }; 8];
    let i = match task {
        Task::Segment => 0,
        Task::Note => 1,
        Task::Trace => 2,
        Task::Resolve => 3,
        Task::Reconcile => 4,
        Task::Split => 5,
        Task::Relevance => 6,
        Task::Distill => 7,
    };
    TEXTS[i].get_or_init(|| tasks::schema(task).to_string())
}

/// Asks `task` up to `attempts` times until an answer parses strictly and
/// passes `check`. Returns the last failure when none does. `seen` hears of
/// every attempt: `Ok` with the repairs made for the answer taken
/// ([`parse::Repair`]), the error otherwise.
pub async fn ask<M: Model, T: DeserializeOwned>(
    model: &M,
    attempts: u32,
    task: Task,
    content: String,
    check: impl Fn(&T) -> Result<(), String>,
    seen: impl Fn(Result<&[parse::Repair], String>),
) -> Result<T, ModelError> {
    let mut last = ModelError::Unavailable("no attempt made".into());
    for attempt in 1..=attempts.max(1) {
        let req = request(task, content.clone(), attempt);
        match model.complete(&req).await {
            Ok(text) => match parse::parse_repaired::<T>(task, &text)
                .and_then(|(a, r)| check(&a).map(|_| (a, r)))
            {
                Ok((a, repairs)) => {
                    seen(Ok(&repairs));
                    return Ok(a);
                }
                Err(e) => last = ModelError::BadAnswer(format!("{}: {e}", task.name())),
            },
            Err(e) => last = e,
        }
        seen(Err(last.to_string()));
    }
    Err(last)
}

/// Embeds `texts` and checks the answer: one finite vector per text, all of
/// the memory's dimension (`dimension`, or the first vector's when unset),
/// no larger than `max_dimension`.
pub async fn embed<M: Model>(
    model: &M,
    texts: &[String],
    dimension: Option<usize>,
    max_dimension: usize,
) -> Result<Vec<Vec<f32>>, ModelError> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let mut vectors = model.embed(texts).await?;
    check_vectors(&vectors, texts.len(), dimension, max_dimension)?;
    normalise(&mut vectors)?;
    Ok(vectors)
}

/// Scales each vector to unit length, so cosines stay finite whatever scale
/// the embedder answers in (a vector scaled by 1e30 would overflow the dot
/// product). A vector of length zero, or too small or too large to scale in
/// f64, is refused.
pub fn normalise(vectors: &mut [Vec<f32>]) -> Result<(), ModelError> {
    for (i, v) in vectors.iter_mut().enumerate() {
        let norm = v
            .iter()
            .map(|&x| (x as f64) * (x as f64))
            .sum::<f64>()
            .sqrt();
        if !(norm.is_finite() && norm > 1e-30) {
            return Err(ModelError::BadAnswer(format!(
                "embed: vector {i} has length {norm}, which cannot be normalised"
            )));
        }
        for x in v.iter_mut() {
            // Kept at f16 precision, as stored (crate::base::bytes).
            *x = crate::base::bytes::round((*x as f64 / norm) as f32);
        }
    }
    Ok(())
}

/// The checks of [`embed`], for vectors that come from elsewhere.
pub fn check_vectors(
    vectors: &[Vec<f32>],
    count: usize,
    dimension: Option<usize>,
    max_dimension: usize,
) -> Result<(), ModelError> {
    let bad = |m: String| Err(ModelError::BadAnswer(format!("embed: {m}")));
    if vectors.len() != count {
        return bad(format!("{} vectors for {count} texts", vectors.len()));
    }
    let want = dimension.unwrap_or_else(|| vectors[0].len());
    if want == 0 || want > max_dimension {
        return bad(format!("dimension {want} is outside 1..={max_dimension}"));
    }
    for (i, v) in vectors.iter().enumerate() {
        if v.len() != want {
            return bad(format!(
                "vector {i} has dimension {}, expected {want}",
                v.len()
            ));
        }
        if v.iter().any(|x| !x.is_finite()) {
            return bad(format!("vector {i} holds NaN or infinity"));
        }
    }
    Ok(())
}
