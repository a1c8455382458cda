//! Messages of the conversation, as the host adds them and as they are kept.

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};

/// Who spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions from the host application.
    System,
    /// The person.
    User,
    /// The agent (may call tools).
    Assistant,
    /// The output of one tool call.
    Tool,
}

impl Role {
    /// Parses `system`, `user`, `assistant` or `tool`.
    pub fn parse(s: &str) -> Result<Role> {
        match s {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(Error::invalid(format!(
                "unknown role {other:?}: use system, user, assistant or tool"
            ))),
        }
    }

    /// The role's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A tool call made by the assistant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ToolCall {
    /// The call's id; the tool message answering it carries the same id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model wrote them (usually JSON text).
    pub arguments: String,
}

/// A message as the host adds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewMessage {
    /// Who spoke.
    pub role: Role,
    /// The text (may be empty only for an assistant message with tool calls).
    #[serde(default)]
    pub content: String,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The host's own id for this message (1 to 256 characters). Adding a
    /// message whose client id is already in the memory writes nothing and
    /// returns the first add's result: a host may retry an add whose outcome
    /// it did not hear (a timeout) without ever storing it twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The thread (chat) it belongs to: 1 to [`MAX_THREAD_CHARS`]
    /// characters, no control characters. Every message of a memory names
    /// one; [`MAIN_THREAD`] when none is given, so a host with one chat per
    /// memory never names any.
    #[serde(default = "main_thread", skip_serializing_if = "is_main_thread")]
    pub thread: String,
    /// When it was said (ms since the Unix epoch), for history loaded after
    /// the fact; `None` is now. Not in the future, and not before the last
    /// message of its thread. A message added alone with a date is added as
    /// if at that time (its cuts, recall and fades are stamped then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<i64>,
    /// The host's own data about the message (a user id, a source, a
    /// channel...): a JSON object of at most [`MAX_METADATA_BYTES`] as
    /// compact JSON text and [`MAX_METADATA_DEPTH`] levels deep, kept with
    /// the message, exported, returned with it, erased with it, and matched
    /// by a search's `metadata` filter ([`check_metadata`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    /// A regenerated answer: the id of the user message, in the same
    /// thread, that this assistant message answers again. The messages after
    /// that one in the thread that are still shown (the earlier answer: its
    /// tool calls and tool outputs included, and anything said after it)
    /// are replaced by this one: kept, listed with `replaced_by`, left out
    /// of the view. Nothing after it: it replaces nothing. With a client id
    /// that names a shown message it is a duplicate like any other; one
    /// that names a replaced message (a regenerate that came back with an
    /// earlier answer) adds it again, as the answer shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<u64>,
}

/// The longest metadata of a message, in bytes of compact JSON text.
pub const MAX_METADATA_BYTES: usize = 4096;

/// The deepest metadata of a message: the object itself is level 1.
pub const MAX_METADATA_DEPTH: usize = 8;

/// Checks a message's metadata: a JSON object, at most
/// [`MAX_METADATA_BYTES`] of compact JSON text, at most
/// [`MAX_METADATA_DEPTH`] levels deep.
pub fn check_metadata(metadata: Option<&serde_json::Value>) -> Result<()> {
    let Some(m) = metadata else { return Ok(()) };
    if !m.is_object() {
        return Err(Error::invalid(
            "message metadata must be a JSON object (or left out)",
        ));
    }
    check_json_bounds(m, "message metadata")
}

/// Checks that `value` is within [`MAX_METADATA_DEPTH`] levels and
/// [`MAX_METADATA_BYTES`] of compact JSON text; `what` names it.
pub fn check_json_bounds(value: &serde_json::Value, what: &str) -> Result<()> {
    use serde_json::Value;
    // Iterative, stopping at either limit: a value nested deeper than the
    // stack allows is refused, not followed, and its size is first bounded
    // from below (strings and keys unescaped, a number one byte), so only a
    // value within a few times the limit is ever written out.
    let too_big = || {
        Error::invalid(format!(
            "{what} is more than {MAX_METADATA_BYTES} bytes of JSON"
        ))
    };
    let mut least = 0usize;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((v, level)) = stack.pop() {
        least += match v {
            Value::String(s) => s.len() + 2,
            Value::Array(a) => a.len() + 1,
            Value::Object(o) => o.len() + 1 + o.keys().map(|k| k.len() + 3).sum::<usize>(),
            _ => 1,
        };
        if least > MAX_METADATA_BYTES {
            return Err(too_big());
        }
        let children: Vec<&Value> = match v {
            Value::Array(a) => a.iter().collect(),
            Value::Object(o) => o.values().collect(),
            _ => continue,
        };
        if level > MAX_METADATA_DEPTH {
            return Err(Error::invalid(format!(
                "{what} is more than {MAX_METADATA_DEPTH} levels deep"
            )));
        }
        stack.extend(children.into_iter().map(|c| (c, level + 1)));
    }
    let bytes = serde_json::to_vec(value).map_or(usize::MAX, |t| t.len());
    if bytes > MAX_METADATA_BYTES {
        return Err(too_big());
    }
    Ok(())
}

/// The thread of a message that names none.
pub const MAIN_THREAD: &str = "main";

/// The longest thread name, in characters.
pub const MAX_THREAD_CHARS: usize = 128;

/// [`MAIN_THREAD`], owned (serde's default for a message's thread).
pub fn main_thread() -> String {
    MAIN_THREAD.to_string()
}

/// Whether `thread` is [`MAIN_THREAD`] (left out when a message is written,
/// so a memory of one chat is stored exactly as before threads).
pub fn is_main_thread(thread: &str) -> bool {
    thread == MAIN_THREAD
}

/// Checks the date a caller gave a message, against the clock's `now`:
/// within 1970..3000 and not in the future. Returns it.
pub fn check_date(at: i64, now: i64) -> Result<i64> {
    if !(0..=crate::base::text::MAX_CLOCK_MS).contains(&at) {
        return Err(Error::invalid(format!(
            "a message dated {at} ms: dates are milliseconds since the Unix epoch, \
             within 1970..3000"
        )));
    }
    if at > now {
        return Err(Error::invalid(format!(
            "a message dated {at} ms is {} ms in the future of the clock ({now} ms)",
            at - now
        )));
    }
    Ok(at)
}

/// Checks a thread name a caller passes: the namespaces' rule
/// ([`crate::base::text::is_plain_name`]: 1 to 128 ASCII letters, digits or
/// `._-:@`, not starting with `.`), so two threads never look alike.
pub fn check_thread(thread: &str) -> Result<()> {
    if crate::base::text::is_plain_name(thread) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "thread {thread:?}: use 1 to {MAX_THREAD_CHARS} letters, digits or ._-:@, \
         not starting with '.' (the rule of namespaces)"
    )))
}

/// Checks a stored message's thread name: the rule of earlier builds (1 to
/// 128 characters, no control character), so their logs still load.
pub fn check_stored_thread(thread: &str) -> Result<()> {
    let n = thread.chars().count();
    if n == 0 || n > MAX_THREAD_CHARS {
        return Err(Error::invalid(format!(
            "a thread name has 1 to {MAX_THREAD_CHARS} characters (this one has {n})"
        )));
    }
    if thread.chars().any(char::is_control) {
        return Err(Error::invalid("a thread name holds no control characters"));
    }
    Ok(())
}

impl NewMessage {
    /// The same message said at `at` (see [`NewMessage::at`]).
    pub fn said_at(mut self, at: i64) -> Self {
        self.at = Some(at);
        self
    }

    /// The same message in thread `thread` (see [`NewMessage::thread`]).
    pub fn in_thread(mut self, thread: impl Into<String>) -> Self {
        self.thread = thread.into();
        self
    }

    /// The same message with metadata `metadata` (see [`NewMessage::metadata`]).
    pub fn with_metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The same message as a new answer to user message `question` (see
    /// [`NewMessage::replaces`]).
    pub fn replacing(mut self, question: u64) -> Self {
        self.replaces = Some(question);
        self
    }

    /// The same message with the host's id `id` (see [`NewMessage::client_id`]).
    pub fn with_client_id(mut self, id: impl Into<String>) -> Self {
        self.client_id = Some(id.into());
        self
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, content)
    }
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }
    /// An assistant message that calls tools.
    pub fn tool_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        NewMessage {
            tool_calls: calls,
            ..Self::plain(Role::Assistant, content)
        }
    }
    /// The output of the tool call `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        NewMessage {
            tool_call_id: Some(call_id.into()),
            ..Self::plain(Role::Tool, content)
        }
    }
    fn plain(role: Role, content: impl Into<String>) -> Self {
        NewMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            client_id: None,
            thread: main_thread(),
            at: None,
            metadata: None,
            replaces: None,
        }
    }
}

/// A message as the memory keeps it, forever.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Message {
    /// Message id (1, 2, ... in order of arrival).
    pub id: u64,
    /// Who spoke.
    pub role: Role,
    /// The text.
    pub content: String,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// When it was added (host clock, ms since the Unix epoch).
    pub at: i64,
    /// Its size in tokens as the host's model counts them, framing included.
    pub tokens: usize,
    /// The boundary judgment: probability that it starts a new concept.
    /// `None` where no cut is allowed or the judgment failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boundary: Option<f32>,
    /// Whether its boundary judgment is settled: made (or failed), or not
    /// needed. `false` while the judgment waits for the next step.
    #[serde(default = "settled", skip_serializing_if = "is_settled")]
    pub judged: bool,
    /// The host's id for it, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Whether it was erased on request ([`crate::erase`]): its content, its
    /// metadata and its tool calls' names and arguments are gone, its
    /// tokens are 0, and
    /// it is not shown (its id, role, time and tool call ids stay, so the
    /// conversation keeps its shape).
    #[serde(default, skip_serializing_if = "crate::base::codec::is_false")]
    pub erased: bool,
    /// Its thread ([`NewMessage::thread`]).
    #[serde(default = "main_thread", skip_serializing_if = "is_main_thread")]
    pub thread: String,
    /// The host's data about it ([`NewMessage::metadata`]); gone when it is
    /// erased.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(type = "JsonObject"))]
    pub metadata: Option<serde_json::Value>,
    /// For a regenerated answer: the user message it answers again
    /// ([`NewMessage::replaces`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<u64>,
    /// The regenerated answer that replaced it, when one did: it is an
    /// alternative, kept and explainable but not shown (not in the view, not
    /// in a pending tool call). Derived by the fold from the later
    /// message's `replaces`, never written in its own event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<u64>,
}

fn settled() -> bool {
    true
}

fn is_settled(judged: &bool) -> bool {
    *judged
}

impl Message {
    /// Whether the view shows it: not erased, not replaced by a
    /// regenerated answer.
    pub fn shown(&self) -> bool {
        !self.erased && self.replaced_by.is_none()
    }

    /// The text the model sees for this message, tool calls included.
    pub fn display_text(&self) -> String {
        display(&self.content, &self.tool_calls)
    }
}

/// A message's text with its tool calls, as prompts show it.
pub fn display(content: &str, tool_calls: &[ToolCall]) -> String {
    let mut s = content.to_string();
    for c in tool_calls {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(&format!("[calls {}({})]", c.name, c.arguments));
    }
    s
}

/// Tokens a chat API spends framing one message (role and separators).
pub const FRAMING_TOKENS: usize = 4;

/// The output [`Memory::abandon_tool_call`](crate::memory::handle::Memory::abandon_tool_call)
/// records for a call the host abandoned.
pub const ABANDONED_OUTPUT: &str = "No output: this tool call was abandoned.";

/// Updates the waiting tool call ids after message `m`.
pub(crate) fn wait(pending: &mut Vec<String>, m: &Message) {
    if m.replaced_by.is_some() {
        // An alternative: its calls wait for nothing, and an output of one
        // answered nothing the view shows.
        return;
    }
    if m.role == Role::User {
        pending.clear();
    }
    pending.extend(m.tool_calls.iter().map(|c| c.id.clone()));
    if let Some(id) = &m.tool_call_id {
        pending.retain(|p| p != id);
    }
}

/// Tool call ids still waiting after `messages`.
pub fn pending_after(messages: &[Message]) -> Vec<String> {
    let mut pending = Vec::new();
    messages.iter().for_each(|m| wait(&mut pending, m));
    pending
}
