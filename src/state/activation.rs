//! Activation and significance of an episode, from its yes-traces.
//!
//! activation = Σ strength ÷ √(minutes since the trace), with the age floored
//! at one minute so that a trace counts in full during its first minute. This
//! is the power-law forgetting of ACT-R's base-level learning with decay
//! d = 0.5 (Anderson & Schooler 1991), summed instead of log-summed.
//! significance = Σ strength, never faded.

use crate::types::trace::Trace;

const MS_PER_MINUTE: f64 = 60_000.0;

/// What one trace of `strength`, written at `at`, contributes at `now`.
pub fn faded(strength: f32, at: i64, now: i64) -> f64 {
    let minutes = ((now - at) as f64 / MS_PER_MINUTE).max(1.0);
    strength as f64 / minutes.sqrt()
}

/// Activation at `now` over `traces` (only yes-traces count).
pub fn activation<'a>(traces: impl IntoIterator<Item = &'a Trace>, now: i64) -> f64 {
    traces
        .into_iter()
        .filter(|t| t.yes)
        .map(|t| faded(t.strength, t.at, now))
        .sum()
}

/// Significance over `traces`: the plain sum of yes-strengths.
pub fn significance<'a>(traces: impl IntoIterator<Item = &'a Trace>) -> f64 {
    traces
        .into_iter()
        .filter(|t| t.yes)
        .map(|t| t.strength as f64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn activation_counts_in_full_at_one_minute() {
        assert_eq!(faded(1.0, 0, MIN), 1.0);
        assert_eq!(faded(1.0, 0, 10), 1.0);
    }

    #[test]
    fn activation_halves_after_four_minutes() {
        assert_eq!(faded(1.0, 0, 4 * MIN), 0.5);
    }

    #[test]
    fn activation_after_a_day_is_about_a_thirty_eighth() {
        let a = faded(1.0, 0, 24 * 60 * MIN);
        assert!((1.0 / a - 37.95).abs() < 0.01, "1/{}", 1.0 / a);
    }
}
