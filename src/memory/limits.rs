//! The limits on what a caller passes to a memory, checked before any
//! work: each is a number in an error message when it is exceeded.

/// 2000-01-01T00:00:00Z in ms since the Unix epoch: the earliest clock
/// reading accepted. An earlier one is a clock in the wrong unit (seconds
/// read as milliseconds land in January 1970) or a clock that is not set.
pub const MIN_CLOCK_MS: i64 = 946_684_800_000;

/// Longest text of one search hit, in estimated tokens (4 bytes each): a
/// longer one is cut there and ends in "…"; [`crate::memory::handle::Memory::hit_text`] gives it
/// whole.
pub const MAX_HIT_TOKENS: usize = 1_000;

/// Most results one search returns (`SearchOptions::limit`): the lists
/// behind it are sized by the limit, so a caller's number never reaches an
/// allocation unchecked.
pub const MAX_SEARCH_LIMIT: usize = 1_000;
/// Largest `SearchOptions::budget_tokens` (the largest ceiling).
pub const MAX_SEARCH_BUDGET: usize = 10_000_000;
/// Most tool calls one assistant message may carry.
pub const MAX_TOOL_CALLS: usize = 256;
/// The most messages one `add_messages` call takes.
pub const MAX_BATCH: usize = 1_000;
