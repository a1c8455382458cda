//! Tunable sizes and bounds of a memory.

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};

/// Configuration of one memory. Every field has a default; hosts pass only
/// what they change (as JSON, missing fields take the default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// View size (tokens) at which a fade starts.
    pub ceiling_tokens: usize,
    /// Target size of an episode: an open stretch above `max_episode_tokens`
    /// gets about one cut per this many tokens.
    pub target_episode_tokens: usize,
    /// No episode grows past this size while an allowed cut position exists.
    pub max_episode_tokens: usize,
    /// A judged boundary cuts only when the piece before it holds at least
    /// this many tokens (stops a noisy judge from making one-line episodes).
    pub min_episode_tokens: usize,
    /// Boundary probability at or above which a judgment alone cuts.
    pub boundary_threshold: f32,
    /// A boundary this strong cuts even where the piece before it (or after
    /// it, for a size cut) is under the size floor.
    pub strong_boundary: f32,
    /// Largest accepted message, in tokens.
    pub max_message_tokens: usize,
    /// Hours without a user message after which the next user turn sleeps.
    pub sleep_after_hours: f64,
    /// Attempts per model task before the step degrades.
    pub model_attempts: u32,
    /// Attempts per call when another host wins the log head.
    pub conflict_attempts: u32,
    /// Episodes judged per `trace` call.
    pub trace_batch: usize,
    /// Known entities offered to one `resolve` call (bounds its cost).
    pub resolve_candidates: usize,
    /// Held facts offered to one `reconcile` call.
    pub reconcile_candidates: usize,
    /// Name-embedding cosine at or above which two names are one entity
    /// without asking the model.
    pub same_entity_cosine: f32,
    /// Name-embedding cosine at or above which a known entity is a candidate
    /// for the `resolve` judgment.
    pub candidate_entity_cosine: f32,
    /// Log entries gathered into one pack (a stored `seg/` value; the name is from
    /// format 2, where it counted commits between snapshots).
    pub snapshot_every: u64,
    /// Rows each `maintain` links into the meaning graphs of facts,
    /// passages and entity names (shared, in that order; about 0.2 ms a row
    /// natively). An index keeps no graph below 4,096 rows and searches
    /// rows not linked yet exactly; 0 never builds graphs (every search
    /// exact).
    pub graph_rows_per_maintain: usize,
    /// Largest accepted embedding dimension.
    pub max_dimension: usize,
    /// Facts accepted from one note (one episode or one `note` call).
    pub max_facts_per_note: usize,
    /// Largest recall block, in tokens (at most `recall_share` of the
    /// ceiling: see [`Config::recall_budget`]).
    pub recall_budget_tokens: usize,
    /// Candidates kept from the fused ranking.
    pub recall_candidates: usize,
    /// Candidates judged per `relevance` call.
    pub walk_batch: usize,
    /// Hops the walk may take from the searched facts.
    pub walk_hops: u32,
    /// Largest passage of out-of-view conversation, in tokens.
    pub passage_tokens: usize,
    /// Search by meaning ignores matches below this cosine.
    pub min_cosine: f32,
    /// Largest share of the ceiling that recall blocks in view may take;
    /// older blocks give way first.
    pub recall_share: f64,
    /// Ask the model to split a user message into its parts (`split` task,
    /// in the same round as the relevance walk). Off: the message is split
    /// by its own punctuation, with no call.
    pub split_with_model: bool,
    /// Judge recall candidates with the model (`relevance` task, one call per
    /// user message). Off: the best-ranked candidates are kept, with no call.
    pub walk_with_model: bool,
    /// Times a deferred note (an episode that left the view without facts) is
    /// retried by `maintain` before it is given up.
    pub note_retries: usize,
    /// Fail a call with `ModelError` when a model task fails after its
    /// retries, instead of degrading the step (nothing is written then).
    /// A failed note is the exception: it is deferred and retried as
    /// without strict, and reported in `degraded` (it never blocks).
    pub strict: bool,
    /// Fade ahead: at the end of a turn (in `maintain`), fade when the view
    /// plus the largest recent turn would pass the ceiling, so the next user
    /// message does not wait on notes. Off: fades start only at the ceiling.
    pub fade_ahead: bool,
    /// A reply that ends the turn runs `maintain` in the same call, after the
    /// reply is committed. Off: the host calls `maintain` when it chooses
    /// (the next user message still does what its view needs).
    pub maintain_after_reply: bool,
    /// A call within this many milliseconds (host clock) of this handle's
    /// last meeting with the store (its read of the log head, or its own
    /// commit) uses the state it holds without reading the head again: a
    /// turn's render and view after its add, and the maintain after a
    /// reply, cost no round trip. Another writer's commit in that time is
    /// seen by the first call after it; a write made in it still commits
    /// guarded by the head (a conflict reloads and runs it again). 0 (the
    /// default): every read and every user message reads the head, so a
    /// handle sees every other handle's commit at once (a reply, which asks
    /// the model nothing, commits guarded by the head the handle's last
    /// read found when that read found nobody else writing). A chat backend
    /// that holds one handle per user may set it (a turn then costs 3 round
    /// trips instead of 4; docs/stores.md, "Round trips").
    pub fresh_for_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            ceiling_tokens: 8_000,
            target_episode_tokens: 600,
            max_episode_tokens: 1_500,
            min_episode_tokens: 24,
            boundary_threshold: 0.5,
            strong_boundary: 0.9,
            max_message_tokens: 16_000,
            sleep_after_hours: 24.0,
            model_attempts: 3,
            conflict_attempts: 8,
            trace_batch: 16,
            resolve_candidates: 5,
            reconcile_candidates: 8,
            same_entity_cosine: 0.95,
            candidate_entity_cosine: 0.6,
            snapshot_every: 64,
            graph_rows_per_maintain: 2_048,
            max_dimension: 4_096,
            max_facts_per_note: 40,
            recall_budget_tokens: 1_200,
            recall_candidates: 30,
            walk_batch: 12,
            walk_hops: 2,
            passage_tokens: 160,
            min_cosine: 0.25,
            recall_share: 0.25,
            split_with_model: true,
            walk_with_model: true,
            note_retries: 3,
            strict: false,
            fade_ahead: true,
            maintain_after_reply: true,
            fresh_for_ms: 0,
        }
    }
}

impl Config {
    /// Whether a user message's turn makes model calls of its own (the
    /// model's split or walk): the boundary judgments waiting then go out in
    /// that round; otherwise they are made after the reply.
    pub fn judges_in_turn(&self) -> bool {
        self.split_with_model || self.walk_with_model
    }

    /// The recall block's budget in force: `recall_budget_tokens`, within
    /// `recall_share` of the ceiling so the newest block always fits its share.
    pub fn recall_budget(&self) -> usize {
        self.recall_budget_tokens
            .min((self.ceiling_tokens as f64 * self.recall_share) as usize)
    }

    /// Parses a JSON config (missing fields take defaults), fits it
    /// ([`Config::fitted`]) and validates it.
    pub fn from_json(json: &str) -> Result<Config> {
        let config: Config = crate::base::codec::from_json(json)
            .map_err(|e| Error::invalid(format!("config: {e}")))?;
        let config = config.fitted();
        config.validate()?;
        Ok(config)
    }

    /// The config with the episode sizes left at their defaults made to fit
    /// the ceiling: `max_episode_tokens` at most the ceiling, and
    /// `target_episode_tokens` at most that. Sizes a host set itself are
    /// kept (validation refuses them when they do not fit). `Memory::open`
    /// fits the config it is given.
    pub fn fitted(mut self) -> Config {
        let d = Config::default();
        if self.max_episode_tokens == d.max_episode_tokens {
            self.max_episode_tokens = d.max_episode_tokens.min(self.ceiling_tokens).max(1);
        }
        if self.target_episode_tokens == d.target_episode_tokens {
            self.target_episode_tokens = d.target_episode_tokens.min(self.max_episode_tokens);
        }
        self
    }

    /// Checks every field against its valid range (the error names the
    /// field and the range) and that the sizes make sense together.
    pub fn validate(&self) -> Result<()> {
        fn range<T: PartialOrd + std::fmt::Display + Copy>(
            name: &str,
            v: T,
            lo: T,
            hi: T,
        ) -> Result<()> {
            // `!(lo <= v)` also refuses NaN.
            if !(lo <= v && v <= hi) {
                return Err(Error::invalid(format!(
                    "config: {name} is {v}; it must be within {lo}..={hi}"
                )));
            }
            Ok(())
        }
        range("ceiling_tokens", self.ceiling_tokens, 64, 10_000_000)?;
        // The newest episode never leaves the view: one larger than the
        // ceiling keeps a plain chat over it.
        range(
            "max_episode_tokens",
            self.max_episode_tokens,
            1,
            self.ceiling_tokens,
        )?;
        range(
            "target_episode_tokens",
            self.target_episode_tokens,
            1,
            self.max_episode_tokens,
        )?;
        range(
            "min_episode_tokens",
            self.min_episode_tokens,
            0,
            self.target_episode_tokens,
        )?;
        range("boundary_threshold", self.boundary_threshold, 0.0, 1.0)?;
        range(
            "strong_boundary",
            self.strong_boundary,
            self.boundary_threshold,
            1.0,
        )?;
        range("max_message_tokens", self.max_message_tokens, 1, 1_000_000)?;
        range(
            "sleep_after_hours",
            self.sleep_after_hours,
            0.01,
            24.0 * 366.0,
        )?;
        range("model_attempts", self.model_attempts, 1, 10)?;
        range("conflict_attempts", self.conflict_attempts, 1, 100)?;
        range("fresh_for_ms", self.fresh_for_ms, 0, 60_000)?;
        range("trace_batch", self.trace_batch, 1, 256)?;
        range("resolve_candidates", self.resolve_candidates, 1, 64)?;
        range("reconcile_candidates", self.reconcile_candidates, 1, 64)?;
        range(
            "candidate_entity_cosine",
            self.candidate_entity_cosine,
            -1.0,
            1.0,
        )?;
        // Above 1: names are never one entity without the model's judgment.
        range(
            "same_entity_cosine",
            self.same_entity_cosine,
            self.candidate_entity_cosine,
            2.0,
        )?;
        range("snapshot_every", self.snapshot_every, 1, 1_000_000)?;
        range(
            "graph_rows_per_maintain",
            self.graph_rows_per_maintain,
            0,
            10_000_000,
        )?;
        range("max_dimension", self.max_dimension, 1, 16_384)?;
        range("max_facts_per_note", self.max_facts_per_note, 1, 1_000)?;
        range(
            "recall_budget_tokens",
            self.recall_budget_tokens,
            1,
            1_000_000,
        )?;
        range("recall_candidates", self.recall_candidates, 1, 1_000)?;
        range("walk_batch", self.walk_batch, 1, 100)?;
        range("walk_hops", self.walk_hops, 0, 5)?;
        range("passage_tokens", self.passage_tokens, 1, 100_000)?;
        range("min_cosine", self.min_cosine, -1.0, 1.0)?;
        range("recall_share", self.recall_share, 0.01, 0.5)?;
        range("note_retries", self.note_retries, 0, 100)?;
        Ok(())
    }
}
