//! Fades as recorded (the fade itself is `crate::fade`).

use serde::{Deserialize, Serialize};

/// Why a fade started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum FadeReason {
    /// The view reached the ceiling.
    Ceiling,
    /// A user message came after a long silence.
    Sleep,
    /// At the end of a turn, the view would not have room for the next turn
    /// (fade ahead, so the next user message does not wait on a note).
    Ahead,
    /// The thread was idle for `sleep_after_hours` (no message): `maintain`
    /// put all of its episodes out of its view, so what the chat taught is
    /// noted and in every thread's facts block.
    Idle,
}

/// One fade, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Fade {
    /// Fade id (1, 2, ...).
    pub id: u64,
    /// Why it started.
    pub reason: FadeReason,
    /// When it started.
    pub at: i64,
    /// View size when it started.
    pub view_tokens: usize,
    /// The ceiling then.
    pub ceiling: usize,
    /// The size it fades down to.
    pub landing: usize,
    /// The recent turn size used for the landing.
    pub turn_tokens: usize,
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<i64>,
    /// View size when it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view_after: Option<usize>,
    /// The thread whose view it fades (its live episodes leave; sealed
    /// episodes of any thread may be forgotten).
    #[serde(
        default = "crate::types::message::main_thread",
        skip_serializing_if = "crate::types::message::is_main_thread"
    )]
    pub thread: String,
}
