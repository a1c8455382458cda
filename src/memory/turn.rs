//! The turn: adding a message, the work after a reply, the host's
//! instructions and notes, and the checks of what a caller passes.

use crate::base::config::Config;
use crate::base::error::{Error, Result};
use crate::base::host::Model;
use crate::llm::tasks::check_fact;
use crate::memory::limits::{MAX_BATCH, MAX_SEARCH_BUDGET, MAX_SEARCH_LIMIT, MAX_TOOL_CALLS};
use crate::memory::outcomes::{Added, Batch, Maintained, NoteArgs, NoteOutcome, Pending};
use crate::note::Noted;
use crate::state::State;
use crate::step::Ctx;
use crate::types::episode::{Episode, EpisodeState};
use crate::types::event::Event;
use crate::types::fade::FadeReason;
use crate::types::message::{Message, NewMessage, Role, FRAMING_TOKENS};
use crate::types::recall::SearchOptions;

/// Sets the host's instructions, then holds the ceiling (longer
/// instructions leave less room for the conversation).
pub(super) async fn instruct<M: Model>(ctx: &mut Ctx<'_, M>, text: &str) -> Result<bool> {
    if text.len() > crate::base::text::MAX_INSTRUCTIONS_BYTES {
        return Err(Error::InvalidInput(format!(
            "instructions of {} bytes; at most {}",
            text.len(),
            crate::base::text::MAX_INSTRUCTIONS_BYTES
        )));
    }
    let tokens = match text.is_empty() {
        true => 0,
        false => ctx.model.count_tokens(text),
    };
    let half = ctx.config.ceiling_tokens / 2;
    if tokens > half {
        return Err(Error::InvalidInput(format!(
            "instructions of {tokens} tokens take more than half the ceiling ({half} of {})",
            ctx.config.ceiling_tokens
        )));
    }
    let now = ctx.state.instructions.as_ref().map(|(t, _)| t.as_str());
    if now.unwrap_or("") == text {
        return Ok(false);
    }
    ctx.emit(Event::InstructionsSet {
        text: text.to_string(),
        at: ctx.now,
    });
    // Instructions are in every thread's view: each holds its ceiling.
    let threads: Vec<String> = ctx.state.thread_names().map(str::to_string).collect();
    for thread in &threads {
        crate::fade::hold(&mut ctx.in_thread(thread)).await;
    }
    if threads.is_empty() {
        crate::fade::hold(ctx).await;
    }
    Ok(true)
}

/// The newest time `state` holds (its last message, fact, fade, recall
/// block or instructions): a clock reading before it is clamped to it.
pub(super) fn last_stamp(state: &State) -> i64 {
    // (A thread's messages are in time order; threads need not be.)
    let messages = state
        .threads
        .values()
        .filter_map(|l| l.ids.last())
        .map(|&id| state.message(id).at)
        .max();
    [
        messages,
        state.facts.last().map(|f| f.noted_at),
        state.fades.last().map(|f| f.finished_at.unwrap_or(f.at)),
        state.recalls.last().map(|r| r.at),
        state.instructions.as_ref().map(|(_, at)| *at),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(i64::MIN)
}

/// The work waiting for `thread`; `view` is its view's size now.
pub(super) fn pending<M: Model>(
    state: &State,
    model: &M,
    config: &Config,
    (view, now): (usize, i64),
    thread: &str,
) -> Pending {
    let episodes = |f: fn(&Episode) -> bool| -> Vec<u64> {
        state
            .episodes
            .iter()
            .filter(|e| f(e))
            .map(|e| e.id)
            .collect()
    };
    Pending {
        unjudged: crate::segment::unjudged(state, thread),
        undistilled: crate::distill::due(state, None),
        leaving: episodes(|e| e.state == EpisodeState::Leaving),
        awaiting_note: episodes(|e| e.awaits_note()),
        fade_ahead: state.running_fade().is_none()
            && crate::fade::ahead_due(state, model, config, view, thread),
        idle_threads: crate::sleep::idle(state, config, now),
    }
}

/// The work after a reply (see [`Memory::maintain`]).
pub(super) async fn maintain<M: Model>(
    ctx: &mut Ctx<'_, M>,
    turn_ended: bool,
    judge: bool,
) -> Maintained {
    let due = crate::distill::due(ctx.state, turn_ended.then_some(ctx.thread));
    let (judgments, answers) = {
        let c: &Ctx<'_, M> = ctx;
        let judgments = async {
            match judge {
                true => crate::segment::judge_unjudged(c).await,
                false => Vec::new(),
            }
        };
        crate::base::join::join2(judgments, crate::distill::ask_all(c, &due)).await
    };
    let judged = judgments.iter().map(|(id, _)| *id).collect();
    crate::segment::record(ctx, judgments);
    let formed = crate::segment::place_cuts(ctx);
    let distilled = crate::distill::record_all(ctx, &due, answers);
    let mut fade = ctx.state.running_fade().map(|f| f.id);
    let mut settled = crate::fade::settle(ctx).await;
    // An idle thread sleeps below (as of when it fell asleep): no fade
    // ahead of its next turn runs first at the call's time.
    let idle = crate::sleep::idle(ctx.state, ctx.config, ctx.now);
    let own_idle = idle.iter().any(|t| t == ctx.thread);
    if !own_idle
        && ctx.state.running_fade().is_none()
        && crate::fade::ahead_due(
            ctx.state,
            ctx.model,
            ctx.config,
            ctx.view_tokens(),
            ctx.thread,
        )
    {
        if let Some(f) = crate::fade::plan(ctx, FadeReason::Ahead) {
            fade = Some(f);
            let s = crate::fade::settle(ctx).await;
            settled.sealed.extend(s.sealed);
            settled.deferred.extend(s.deferred);
        }
    }
    let (noted_late, abandoned) = crate::note::retry_deferred(ctx, &settled.deferred).await;
    let mut slept = Vec::new();
    // One idle thread a call (the call's own if it is idle, else the
    // longest idle): a year of history loaded in ten threads is ten calls
    // of bounded work, not one, and a thread maintained after its history
    // was loaded sleeps as of then before its view is held at now.
    // (The list from before the fade ahead and the retries: neither
    // changes which threads are idle.)
    let own = idle.iter().position(|t| t == ctx.thread).unwrap_or(0);
    if let Some(thread) = idle.into_iter().nth(own) {
        let mut sub = ctx.in_thread(&thread);
        let (f, s) = crate::sleep::sleep_idle(&mut sub).await;
        settled.sealed.extend(s.sealed);
        settled.deferred.extend(s.deferred);
        if let Some(f) = f {
            slept.push((thread.clone(), f));
        }
    }
    let (held, gave_way) = crate::fade::hold(ctx).await;
    crate::recall::link_graphs(ctx.state, ctx.config.graph_rows_per_maintain);
    Maintained {
        judged,
        formed,
        distilled,
        fade: held.or(fade),
        sealed: settled.sealed,
        deferred: settled.deferred,
        noted_late,
        abandoned,
        gave_way,
        slept,
        degraded: Vec::new(),
    }
}

/// Checks a search's sizes; the error names the option and its range.
pub(super) fn check_search_options(options: &SearchOptions) -> Result<()> {
    if !(1..=MAX_SEARCH_LIMIT).contains(&options.limit) {
        return Err(Error::invalid(format!(
            "search limit is {}; it must be within 1..={MAX_SEARCH_LIMIT}",
            options.limit
        )));
    }
    if let Some(b) = options.budget_tokens {
        if !(1..=MAX_SEARCH_BUDGET).contains(&b) {
            return Err(Error::invalid(format!(
                "search budget_tokens is {b}; it must be within 1..={MAX_SEARCH_BUDGET}"
            )));
        }
    }
    crate::recall::filter::check(&options.filter)
}

/// Checks a new message against the state: role rules, size, tool pairing.
pub(super) fn check_message<M: Model>(ctx: &Ctx<'_, M>, m: &NewMessage) -> Result<usize> {
    let calls_tools = m.role == Role::Assistant && !m.tool_calls.is_empty();
    if m.content.trim().is_empty() && !calls_tools {
        return Err(Error::invalid("empty message: give it some text"));
    }
    if !m.tool_calls.is_empty() && m.role != Role::Assistant {
        return Err(Error::invalid("only assistant messages carry tool calls"));
    }
    crate::types::message::check_metadata(m.metadata.as_ref())?;
    if m.tool_calls.len() > MAX_TOOL_CALLS {
        return Err(Error::invalid(format!(
            "a message carries {} tool calls; it must be within 0..={MAX_TOOL_CALLS}",
            m.tool_calls.len()
        )));
    }
    crate::types::message::check_thread(&m.thread)?;
    let at = m.at.unwrap_or(ctx.now);
    crate::types::message::check_date(at, ctx.now)?;
    if let Some(&last) = ctx.state.line(&m.thread).ids.last() {
        let before = ctx.state.message(last).at;
        if at < before {
            return Err(Error::invalid(format!(
                "a message dated {at} ms is before the last message of thread {:?} \
                 ({before} ms): a thread's messages come in time order",
                m.thread
            )));
        }
    }
    check_replaces(ctx, m)?;
    // A regenerated answer comes after its question: the calls of the
    // answer it replaces wait for nothing.
    let pending = match m.replaces {
        Some(_) => Vec::new(),
        None => ctx.state.pending_tool_calls(&m.thread),
    };
    for (i, c) in m.tool_calls.iter().enumerate() {
        if c.id.is_empty() || c.name.is_empty() {
            return Err(Error::invalid("a tool call needs an id and a name"));
        }
        if pending.contains(&c.id) || m.tool_calls[..i].iter().any(|d| d.id == c.id) {
            return Err(Error::invalid(format!(
                "tool call id {:?} is already waiting",
                c.id
            )));
        }
    }
    if m.role != Role::Tool && !pending.is_empty() {
        let ids: Vec<String> = pending.iter().map(|id| format!("{id:?}")).collect();
        return Err(Error::invalid(format!(
            "tool call{} {} still wait{} for {} output{}: add each output (a tool message \
             with its tool_call_id) or close a call that will have none with \
             abandon_tool_call (abandonToolCall in JavaScript) before a {} message; \
             a chat model refuses a request whose tool calls are not answered",
            if ids.len() == 1 { "" } else { "s" },
            ids.join(", "),
            if ids.len() == 1 { "s" } else { "" },
            if ids.len() == 1 { "its" } else { "their" },
            if ids.len() == 1 { "" } else { "s" },
            m.role.as_str()
        )));
    }
    match (m.role, &m.tool_call_id) {
        (Role::Tool, None) => {
            return Err(Error::invalid(
                "a tool message needs the tool_call_id it answers",
            ))
        }
        (Role::Tool, Some(id)) if !pending.contains(id) => {
            return Err(Error::invalid(format!(
                "tool output for call {id:?}, but no such call is waiting for its output"
            )))
        }
        (Role::Tool, Some(_)) => {}
        (_, Some(_)) => return Err(Error::invalid("only tool messages carry a tool_call_id")),
        (_, None) => {}
    }
    let text = crate::types::message::display(&m.content, &m.tool_calls);
    let tokens = ctx.model.count_tokens(&text) + FRAMING_TOKENS;
    if tokens > ctx.config.max_message_tokens {
        return Err(Error::invalid(format!(
            "message of {tokens} tokens is over the limit of {} (max_message_tokens)",
            ctx.config.max_message_tokens
        )));
    }
    Ok(tokens)
}

/// Adds `messages` in order, as history: each checked as
/// [`add`] checks it and stored with its own date, no model call (their
/// boundary judgments wait for `maintain`, which then cuts, fades and
/// notes). A message whose client id the memory holds is skipped.
pub(super) fn add_batch<M: Model>(ctx: &mut Ctx<'_, M>, messages: &[NewMessage]) -> Result<Batch> {
    if messages.len() > MAX_BATCH {
        return Err(Error::invalid(format!(
            "a batch of {} messages; at most {MAX_BATCH} per call (add the rest in \
             further calls)",
            messages.len()
        )));
    }
    let mut out = Batch::default();
    for (i, m) in messages.iter().enumerate() {
        let at = |e: Error| match e {
            Error::InvalidInput(s) => Error::InvalidInput(format!("message {i} of the batch: {s}")),
            e => e,
        };
        if let Some(c) = &m.client_id {
            check_client_id(c).map_err(at)?;
            if let Some(id) = held(ctx, c, m) {
                out.duplicates.push(id);
                continue;
            }
        }
        let tokens = check_message(ctx, m).map_err(at)?;
        let judged = !crate::segment::cut_allowed(
            &ctx.state.open_stretch(&m.thread),
            waiting(ctx, m),
            m.role,
        );
        let id = ctx.state.messages.len() as u64 + 1;
        ctx.emit(Event::Message(new_message(ctx, m, id, tokens, judged)));
        out.messages.push(id);
    }
    Ok(out)
}

/// The message `m` as kept, with id `id`.
fn new_message<M: Model>(
    ctx: &Ctx<'_, M>,
    m: &NewMessage,
    id: u64,
    tokens: usize,
    judged: bool,
) -> Message {
    Message {
        id,
        role: m.role,
        content: m.content.clone(),
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        at: m.at.unwrap_or(ctx.now),
        tokens,
        boundary: None,
        judged,
        client_id: m.client_id.clone(),
        erased: false,
        thread: m.thread.clone(),
        metadata: m.metadata.clone(),
        replaces: m.replaces,
        replaced_by: None,
    }
}

/// The message a client id names, unless `m` adds it again: a regenerated
/// answer ([`NewMessage::replaces`]) whose id names a replaced one.
fn held<M: Model>(ctx: &Ctx<'_, M>, c: &str, m: &NewMessage) -> Option<u64> {
    let &id = ctx.state.by_client_id.get(c)?;
    let again = m.replaces.is_some() && ctx.state.message(id).replaced_by.is_some();
    (!again).then_some(id)
}

/// Checks a regenerated answer's `replaces`: a user message of its thread.
fn check_replaces<M: Model>(ctx: &Ctx<'_, M>, m: &NewMessage) -> Result<()> {
    let Some(q) = m.replaces else { return Ok(()) };
    if m.role != Role::Assistant {
        return Err(Error::invalid(
            "only an assistant message replaces an answer (replaces names the user \
             message it answers again)",
        ));
    }
    let found = (1..=ctx.state.messages.len() as u64)
        .contains(&q)
        .then(|| ctx.state.message(q));
    match found {
        Some(u) if u.role == Role::User && u.thread == m.thread => Ok(()),
        _ => Err(Error::invalid(format!(
            "replaces {q}: it names the user message this answer regenerates, in thread {:?}, \
             and message {q} is not one",
            m.thread
        ))),
    }
}

/// How many tool calls wait before `m` (none before a regenerated answer).
fn waiting<M: Model>(ctx: &Ctx<'_, M>, m: &NewMessage) -> usize {
    match m.replaces {
        Some(_) => 0,
        None => ctx.state.pending_tool_calls(&m.thread).len(),
    }
}

fn check_client_id(c: &str) -> Result<()> {
    if c.is_empty() || c.chars().count() > 256 {
        return Err(Error::invalid("a client id has 1 to 256 characters"));
    }
    Ok(())
}

pub(super) async fn add<M: Model>(ctx: &mut Ctx<'_, M>, m: &NewMessage) -> Result<Added> {
    if let Some(c) = &m.client_id {
        check_client_id(c)?;
        if let Some(id) = held(ctx, c, m) {
            // Already added (a retry of an add whose outcome was lost).
            return Ok(Added {
                message: id,
                formed: Vec::new(),
                slept: false,
                fade: None,
                recall: ctx.state.recall_by_message.get(&id).copied(),
                distilled: None,
                degraded: Vec::new(),
                maintained: None,
                maintain_error: None,
                duplicate: true,
            });
        }
    }
    let tokens = check_message(ctx, m)?;
    let allowed =
        crate::segment::cut_allowed(&ctx.state.open_stretch(&m.thread), waiting(ctx, m), m.role);
    let sleep_due = crate::sleep::due(ctx.state, ctx.config, m.role, ctx.now, &m.thread);
    let id = ctx.state.messages.len() as u64 + 1;
    ctx.emit(Event::Message(new_message(ctx, m, id, tokens, !allowed)));
    let fades_before = ctx.state.fades.len();
    let mut fade = None;
    if sleep_due {
        ctx.emit(Event::SleepDue {
            at: ctx.now,
            thread: m.thread.clone(),
        });
        // A fade still running (its notes never written) settles first:
        // one fade at a time.
        if ctx.state.running_fade().is_some() {
            crate::fade::settle(ctx).await;
        }
        // Who leaves is decided now (recall then searches what the sleep
        // forgot); the landing is measured again once the cuts are placed.
        fade = crate::fade::plan_open(ctx, FadeReason::Sleep);
    }
    let (formed, recall, distilled) = if m.role == Role::User {
        // The one round before the view is ready: every waiting judgment (this
        // message's among them), recall, and distill of earlier turns.
        // The queries are embedded first, so every `complete` call of the
        // turn goes out in that one round.
        let due = crate::distill::due(ctx.state, None);
        let (judgments, (prepared, answers)) = {
            let c: &Ctx<'_, M> = ctx;
            let queries = crate::recall::block::queries(c, id).await;
            let judgments = async {
                match c.config.judges_in_turn() {
                    true => crate::segment::judge_unjudged(c).await,
                    false => Vec::new(),
                }
            };
            crate::base::join::join2(
                judgments,
                crate::base::join::join2(
                    crate::recall::block::prepare(c, queries),
                    crate::distill::ask_all(c, &due),
                ),
            )
            .await
        };
        crate::segment::record(ctx, judgments);
        let formed = crate::segment::place_cuts(ctx);
        if sleep_due {
            // The cuts changed what cannot leave: the sleep may land lower.
            crate::fade::reland(ctx);
        }
        let distilled = crate::distill::record_all(ctx, &due, answers);
        let recall = prepared.and_then(|p| crate::recall::block::place(ctx, p));
        (formed, recall, distilled)
    } else {
        (crate::segment::place_cuts(ctx), None, Vec::new())
    };
    let (held, _) = crate::fade::hold(ctx).await;
    let slept = ctx.state.fades[fades_before..]
        .iter()
        .any(|f| f.reason == FadeReason::Sleep);
    Ok(Added {
        message: id,
        formed,
        slept,
        fade: held.or(fade),
        recall,
        // The block of the turn this user message closed, distilled in its
        // round (when that turn ended without a reply that did it).
        distilled: distilled.into_iter().last(),
        degraded: Vec::new(),
        maintained: None,
        maintain_error: None,
        duplicate: false,
    })
}

pub(super) async fn host_note<M: Model>(
    ctx: &mut Ctx<'_, M>,
    args: &NoteArgs,
) -> Result<NoteOutcome> {
    if args.facts.is_empty() {
        return Err(Error::invalid("note needs at least one fact"));
    }
    if args.facts.len() > ctx.config.max_facts_per_note {
        return Err(Error::invalid(format!(
            "{} facts in one note; at most {}",
            args.facts.len(),
            ctx.config.max_facts_per_note
        )));
    }
    for f in &args.facts {
        check_fact(f).map_err(Error::InvalidInput)?;
    }
    let episode = match args.episode {
        Some(id) => {
            let e = ctx
                .state
                .episode(id)
                .ok_or_else(|| Error::invalid(format!("no episode {id}")))?;
            if e.state == EpisodeState::Forgotten {
                return Err(Error::invalid(format!(
                    "episode {id} is forgotten; note a newer one"
                )));
            }
            id
        }
        None => ctx
            .state
            .episodes
            .iter()
            .find(|e| e.state == EpisodeState::Leaving)
            .or_else(|| ctx.state.episodes.last())
            .map(|e| e.id)
            .ok_or_else(|| Error::invalid("no episode has formed yet: nothing to note (remember states a fact at any time)"))?,
    };
    let e = ctx.state.episode(episode).expect("exists");
    let messages = ctx.state.episode_ids(e).len();
    for f in &args.facts {
        crate::llm::tasks::check_numbers(&f.sources, messages, "source message")
            .map_err(Error::InvalidInput)?;
    }
    let sealed = ctx.state.episode(episode).expect("exists").state == EpisodeState::Leaving;
    let Noted {
        added,
        merged,
        retired,
    } = crate::note::write_episode(ctx, episode, args.facts.clone(), sealed, None).await?;
    if sealed {
        let fade = ctx.state.running_fade().map(|f| f.id);
        let change = crate::types::episode::StateChange {
            state: EpisodeState::Sealed,
            at: ctx.now,
            fade,
        };
        ctx.emit(Event::StateChanged { episode, change });
        crate::fade::finish_if_done(ctx);
    }
    crate::fade::hold(ctx).await;
    Ok(NoteOutcome {
        episode,
        added,
        merged,
        retired,
        sealed,
    })
}
