//! Sleep: after a long silence the next user turn first fades the view to the
//! landing, full or not, so the gap is accounted for before the agent answers.

use crate::config::Config;
use crate::message::Role;
use crate::state::State;

/// Whether a message of `role` arriving in `thread` at `now` sleeps first:
/// a user message more than `sleep_after_hours` after the thread's previous
/// user message.
pub fn due(state: &State, config: &Config, role: Role, now: i64, thread: &str) -> bool {
    let limit = (config.sleep_after_hours * 3_600_000.0) as i64;
    role == Role::User
        && state
            .line(thread)
            .last_user_at
            .is_some_and(|t| now - t > limit)
}
