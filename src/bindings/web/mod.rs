//! The browser / Node / edge-worker binding (wasm-bindgen).
//!
//! The host hands over three plain JS objects:
//!
//! * `clock`: `now()` -> ms since the Unix epoch (synchronous);
//! * `store`: `get(key)`, `put(key, value)`, `delete(key)`, `list(prefix)`,
//!   `writeIf(guard, expected, writes)` (returns `false` on a guard mismatch,
//!   or throws an error whose `code` is `"conflict"`). Values are bytes: the
//!   engine passes each as a fresh `Uint8Array` the store may keep, and `get`
//!   answers a `Uint8Array` (a Node `Buffer` is one) or an `ArrayBuffer`, or
//!   `null`/`undefined` when absent; anything else fails the call with a
//!   store error;
//! * `model`: `complete(request)`, `embed(texts)`, and optionally a
//!   synchronous `countTokens(text)`.
//!
//! Any of their methods except `now` and `countTokens` may return a value or
//! a Promise; a Promise is awaited, for as long as it takes: deadlines are
//! the JS `Memory` class's (`js/src/memory.js` wraps every store and model
//! callback in one, and rejects a late one with a `StoreError` or
//! `ModelError`, which the adapters below treat like any other failure).
//! Adapters below implement the engine's
//! [`Clock`], [`Store`] and [`Model`] over them; every conversion between JS
//! and Rust values happens in the `interop` section; every engine error
//! becomes a JS `Error` with a stable `code` ([`Error::code`]) that the JS
//! wrapper (`js/src/errors.js`) turns into an `Error` subclass.
//!
//! Records cross as JSON text (`serde_json` + `JSON.parse`/`stringify`), not
//! through serde-wasm-bindgen: serde_json is in the module anyway for
//! persistence, and a second serializer per type cost 15 KB of the gzipped
//! module (294 KB against 279 KB when measured); JS also gets exactly the
//! JSON every other host sees. Vectors from `embed` skip JSON
//! (`Float32Array`).
//!
//! Every call returns a [`WasmCall`], which JavaScript polls (the JS
//! `Memory` class makes it a thenable): a trap inside the module is then
//! thrown to the JS code that polled, which rejects the call's promise,
//! instead of escaping from a microtask as with `future_to_promise`.
//!
//! `WasmMemory` holds the engine in a shared cell. A call takes the engine
//! out of the cell for its whole duration and puts it back at the end, so no
//! `RefCell` borrow is ever held across an await. A second call that arrives
//! while one is running is rejected with code `"in-use"`: the JS `Memory`
//! class queues calls so this never happens to its users.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use js_sys::{Function, Promise};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::base::config::Config;
use crate::base::error::Error;
use crate::memory::handle::Memory;
use crate::memory::outcomes::NoteArgs;
use crate::types::message::NewMessage;
use crate::types::recall::SearchOptions;

mod hosts;
mod interop;

use crate::bindings::web::hosts::{JsClock, JsModel, JsStore};
use crate::bindings::web::interop::{engine_error, from_js, js_error, method, to_js};

// ---- the exported memory ---------------------------------------------------

type Engine = Memory<JsStore, JsModel, JsClock>;

/// One memory over JS host objects. Every method returns a [`WasmCall`]
/// (a thenable once `js/src/memory.js` is loaded); calls must not overlap
/// (the JS `Memory` class queues them).
#[wasm_bindgen]
pub struct WasmMemory {
    engine: Rc<RefCell<Option<Engine>>>,
}

/// Checks the host objects `open` receives, so a misbehaving host fails at
/// open with a clear message instead of in the middle of a call.
fn check_hosts(store: &JsValue, model: &JsValue, clock: &JsValue) -> Result<(), Error> {
    for (what, obj, names) in [
        (
            "store",
            store,
            &["get", "put", "delete", "list", "writeIf"][..],
        ),
        ("model", model, &["complete", "embed"][..]),
        ("clock", clock, &["now"][..]),
    ] {
        for name in names {
            if method(obj, name).is_none() {
                return Err(Error::invalid(format!("{what}.{name} must be a function")));
            }
        }
    }
    let now = method(clock, "now").and_then(|f| f.call0(clock).ok());
    if !now.and_then(|t| t.as_f64()).is_some_and(f64::is_finite) {
        return Err(Error::invalid(
            "clock.now() must return ms since the Unix epoch, synchronously",
        ));
    }
    if let Some(f) = method(model, "countTokens") {
        let n = f.call1(model, &JsValue::from_str("probe")).ok();
        if !n
            .and_then(|n| n.as_f64())
            .is_some_and(|n| n.is_finite() && n >= 0.0)
        {
            return Err(Error::invalid(
                "model.countTokens(text) must return a number, synchronously",
            ));
        }
    }
    Ok(())
}

/// An optional JS argument: `undefined` and `null` give the default.
fn optional<T: DeserializeOwned + Default>(v: JsValue, what: &str) -> Result<T, Error> {
    if v.is_undefined() || v.is_null() {
        Ok(T::default())
    } else {
        from_js(v, what)
    }
}

/// A statement: a string is a sentence, an object a triple (`NewFact`).
fn statement_of(v: JsValue) -> Result<crate::types::fact::Statement, Error> {
    use crate::types::fact::Statement;
    match v.as_string() {
        Some(sentence) => Ok(Statement::Sentence(sentence)),
        None => Ok(Statement::Fact(from_js(v, "fact")?)),
    }
}

/// The thread a call names (`undefined` or null: `main`).
fn thread_of(v: JsValue) -> Result<String, Error> {
    Ok(optional::<Option<String>>(v, "thread")?.unwrap_or_else(crate::types::message::main_thread))
}

/// The view of `thread` now (`at` undefined or null) or at `at`.
async fn view_at(m: &mut Engine, at: JsValue, thread: JsValue) -> Result<crate::view::View, Error> {
    let thread = thread_of(thread)?;
    match optional::<Option<i64>>(at, "view time")? {
        None => m.view_in(&thread).await,
        Some(at) => m.view_at_in(at, &thread).await,
    }
}

impl WasmMemory {
    /// Runs `f` with the engine taken out of its cell, puts it back, and
    /// converts the result. The cell is never borrowed across an await.
    fn run<T, F>(&self, f: F) -> WasmCall
    where
        T: Serialize,
        F: AsyncFnOnce(&mut Engine) -> Result<T, Error> + 'static,
    {
        let cell = self.engine.clone();
        spawn(Box::pin(async move {
            let taken = cell.borrow_mut().take();
            let Some(mut engine) = taken else {
                return Err(js_error(
                    "in-use",
                    "another call on this memory is still running: await it first \
                     (the JS Memory class queues calls for you)",
                ));
            };
            let result = f(&mut engine).await;
            *cell.borrow_mut() = Some(engine);
            to_js(&result.map_err(engine_error)?)
        }))
    }
}

/// Opens a memory over the host's objects (`salvage`: read-only, with what
/// of a damaged log can be read).
async fn open_js(
    namespace: String,
    store: JsValue,
    model: JsValue,
    clock: JsValue,
    config: JsValue,
    salvage: bool,
) -> Result<WasmMemory, JsValue> {
    let opened = async {
        check_hosts(&store, &model, &clock)?;
        let config: Config = optional(config, "config")?;
        let model = JsModel {
            count_tokens: method(&model, "countTokens"),
            model,
        };
        let (store, clock) = (JsStore(store), JsClock(clock));
        Engine::open_as(&namespace, store, model, clock, config, salvage).await
    };
    let engine = opened.await.map_err(engine_error)?;
    Ok(WasmMemory {
        engine: Rc::new(RefCell::new(Some(engine))),
    })
}

/// An engine call's future, boxed.
type CallFuture = Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>>;

/// One call as a [`WasmCall`]. Boxed so the polling is compiled once, not
/// once per method (the package is downloaded by every page using it).
fn spawn(call: CallFuture) -> WasmCall {
    let id = NEXT_CALL.with(|n| {
        let id = n.get();
        n.set(id.wrapping_add(1));
        id
    });
    WasmCall {
        id,
        future: Some(call),
    }
}

thread_local! {
    /// The `wake` function each pending call was last polled with.
    static WAKERS: RefCell<std::collections::BTreeMap<u32, Function>> =
        const { RefCell::new(std::collections::BTreeMap::new()) };
    static NEXT_CALL: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The waker of call `0`: calls the JS `wake` function it was polled with
/// (which schedules the next poll; it never polls from inside `wake`).
struct CallWaker(u32);

impl std::task::Wake for CallWaker {
    fn wake(self: std::sync::Arc<Self>) {
        let f = WAKERS.with(|w| w.borrow().get(&self.0).cloned());
        if let Some(f) = f {
            let _ = f.call0(&JsValue::UNDEFINED);
        }
    }
}

/// One call of the engine, polled by JavaScript: `poll(wake)` runs it until
/// it waits on the host (returns `undefined`; `wake()` is called when it
/// can go on) or ends (returns its value, or throws its error). JavaScript
/// drives every poll itself (`js/src/memory.js` makes the object a
/// thenable), so a trap inside the module (a `WebAssembly.RuntimeError`)
/// is thrown to the code that polled, inside its `try`, and rejects the
/// call's promise: with `future_to_promise` it was thrown from a microtask
/// nobody could catch, and the call never settled.
#[wasm_bindgen]
pub struct WasmCall {
    id: u32,
    future: Option<CallFuture>,
}

#[wasm_bindgen]
impl WasmCall {
    /// Polls the call once (see [`WasmCall`]).
    pub fn poll(&mut self, wake: Function) -> Result<JsValue, JsValue> {
        let Some(future) = self.future.as_mut() else {
            return Err(js_error("internal", "this call has already ended"));
        };
        WAKERS.with(|w| w.borrow_mut().insert(self.id, wake));
        let waker = std::task::Waker::from(std::sync::Arc::new(CallWaker(self.id)));
        let mut cx = std::task::Context::from_waker(&waker);
        match future.as_mut().poll(&mut cx) {
            std::task::Poll::Pending => Ok(JsValue::UNDEFINED),
            std::task::Poll::Ready(result) => {
                self.future = None;
                WAKERS.with(|w| w.borrow_mut().remove(&self.id));
                result
            }
        }
    }
}

impl Drop for WasmCall {
    fn drop(&mut self) {
        WAKERS.with(|w| w.borrow_mut().remove(&self.id));
    }
}

#[wasm_bindgen]
impl WasmMemory {
    /// Opens the memory in `namespace` over the host's objects. `config` is
    /// an object of config fields (snake_case, missing ones take defaults).
    pub fn open(
        namespace: String,
        store: JsValue,
        model: JsValue,
        clock: JsValue,
        config: JsValue,
    ) -> WasmCall {
        spawn(Box::pin(async move {
            Ok(open_js(namespace, store, model, clock, config, false)
                .await?
                .into())
        }))
    }

    /// `open`, read-only, with whatever of a damaged log can be read (the
    /// way back when `open` fails with `corrupt`): lost entries are skipped
    /// and reported in `stats().storage_warnings`; every write fails with
    /// `invalid-input`; export it and import into a new store.
    #[wasm_bindgen(js_name = openSalvage)]
    pub fn open_salvage(
        namespace: String,
        store: JsValue,
        model: JsValue,
        clock: JsValue,
        config: JsValue,
    ) -> WasmCall {
        spawn(Box::pin(async move {
            Ok(open_js(namespace, store, model, clock, config, true)
                .await?
                .into())
        }))
    }

    /// Whether a call is running now.
    #[wasm_bindgen(getter)]
    pub fn busy(&self) -> bool {
        self.engine.borrow().is_none()
    }

    /// Adds a message (`{role, content, tool_calls?, tool_call_id?,
    /// client_id?}`); resolves to what it did (`Added`, with `duplicate`
    /// when the client id was already in the memory).
    #[wasm_bindgen(js_name = addMessage)]
    pub fn add_message(&self, message: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let message: NewMessage = from_js(message, "message")?;
            m.add_message(message).await
        })
    }

    /// Adds history (at most 1,000 messages of any threads, each with its
    /// own `at` or now) in one commit with no model call; resolves to the
    /// `Batch`. Judgments, cuts and notes wait for `maintain`.
    #[wasm_bindgen(js_name = addMessages)]
    pub fn add_messages(&self, messages: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let messages: Vec<NewMessage> = from_js(messages, "messages")?;
            m.add_messages(&messages).await
        })
    }

    /// Every thread with a message (`ThreadInfo`), by name.
    pub fn threads(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.threads().await)
    }

    /// Closes a tool call that waits for its output and will have none
    /// (adds its "no output" tool message); resolves like `addMessage`.
    #[wasm_bindgen(js_name = abandonToolCall)]
    pub fn abandon_tool_call(&self, call_id: String) -> WasmCall {
        self.run(async move |m: &mut Engine| m.abandon_tool_call(&call_id).await)
    }

    /// Sets the host's own instructions, pinned first in every view;
    /// resolves to whether they changed.
    #[wasm_bindgen(js_name = setInstructions)]
    pub fn set_instructions(&self, text: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let text: String = from_js(text, "instructions")?;
            m.set_instructions(&text).await
        })
    }

    /// The host's instructions now, or null.
    pub fn instructions(&self) -> WasmCall {
        self.run(async move |m: &mut Engine| m.instructions().await)
    }

    /// Writes facts from the `note` tool (`{episode?, facts}`).
    pub fn note(&self, args: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let args: NoteArgs = from_js(args, "note arguments")?;
            m.note(args).await
        })
    }

    /// The `note` tool definition (OpenAI tools format).
    #[wasm_bindgen(js_name = noteTool)]
    pub fn note_tool() -> Result<JsValue, JsValue> {
        to_js(&Engine::note_tool())
    }

    /// Ends the turn of `thread` (undefined or null: `main`) explicitly
    /// (after a reply with tool calls, say): runs `maintain` with its latest
    /// turn counted as over. Resolves to `[block, distillation]` for the
    /// latest user message's block if it was distilled now, or `null`.
    #[wasm_bindgen(js_name = endTurn)]
    pub fn end_turn(&self, thread: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| m.end_turn_in(&thread_of(thread)?).await)
    }

    /// Runs the work that waits after a reply of `thread` (its judgments
    /// and fade ahead; the memory's distill, notes, retries and sleep of
    /// idle threads); resolves to what it did (`Maintained`).
    pub fn maintain(&self, thread: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| m.maintain_in(&thread_of(thread)?).await)
    }

    /// Work waiting for `maintain` of `thread` (`Pending`).
    pub fn pending(&self, thread: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| m.pending_in(&thread_of(thread)?).await)
    }

    /// Degraded steps not taken yet, oldest first (every call's, reads
    /// included); taking empties the list. Synchronous: call it between
    /// calls (the JS `Memory` class does after each one); during a call it
    /// throws with code `"in-use"`.
    #[wasm_bindgen(js_name = takeDegraded)]
    pub fn take_degraded(&self) -> Result<JsValue, JsValue> {
        let taken = self.engine.borrow_mut().as_mut().map(Engine::take_degraded);
        match taken {
            Some(degraded) => to_js(&degraded),
            None => Err(js_error(
                "in-use",
                "a call on this memory is still running: take degraded steps after it",
            )),
        }
    }

    /// Searches the memory on demand (`options`: `{limit, walk,
    /// include_in_view}`); writes nothing.
    pub fn search(&self, query: String, options: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let options: SearchOptions = optional(options, "search options")?;
            m.search(&query, options).await
        })
    }

    /// The whole text of a search hit's item (`{kind, id}`): `search` cuts
    /// a hit's text at about 1,000 tokens.
    #[wasm_bindgen(js_name = hitText)]
    pub fn hit_text(&self, item: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let item: crate::types::recall::Item = from_js(item, "item")?;
            m.hit_text(item).await
        })
    }

    /// Every recall block.
    pub fn recalls(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.recalls().await)
    }

    /// The view of `thread` (undefined or null: `main`) (`{items, tokens,
    /// ceiling, over_ceiling?}`) now, or as it was at `at` (ms since the
    /// Unix epoch) when given.
    pub fn view(&self, at: JsValue, thread: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| view_at(m, at, thread).await)
    }

    /// The size of `thread`'s view now, in tokens.
    #[wasm_bindgen(js_name = viewTokens)]
    pub fn view_tokens(&self, thread: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| m.view_tokens_in(&thread_of(thread)?).await)
    }

    /// The view of `thread` as an OpenAI `messages` array (now, or at `at`).
    #[wasm_bindgen(js_name = renderOpenAI)]
    pub fn render_openai(&self, at: JsValue, thread: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| Ok(view_at(m, at, thread).await?.to_openai()))
    }

    /// The view of `thread` as OpenAI Responses API input items (now, or at
    /// `at`): `View::to_responses`.
    #[wasm_bindgen(js_name = renderResponses)]
    pub fn render_responses(&self, at: JsValue, thread: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| Ok(view_at(m, at, thread).await?.to_responses()))
    }

    /// Every episode with its activation now and significance.
    pub fn episodes(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.episodes().await)
    }

    /// Every message.
    pub fn messages(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.messages().await)
    }

    /// Every fact, retired ones included.
    pub fn facts(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.facts().await)
    }

    /// Remembers a fact the host states (a sentence, or `{subject,
    /// predicate, object, sentence, kind?}`); resolves to `Remembered`.
    pub fn remember(&self, statement: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let statement = statement_of(statement)?;
            m.remember(statement).await
        })
    }

    /// Revises fact `id`: a new fact that retires it; resolves to
    /// `Remembered`.
    pub fn revise(&self, id: JsValue, statement: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let id: u64 = from_js(id, "fact id")?;
            let statement = statement_of(statement)?;
            m.revise(id, statement).await
        })
    }

    /// Fact `id`, or null when there is none.
    pub fn fact(&self, id: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let id: u64 = from_js(id, "fact id")?;
            m.fact(id).await
        })
    }

    /// What happened to fact `id` (`FactHistory`).
    pub fn history(&self, id: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let id: u64 = from_js(id, "fact id")?;
            m.history(id).await
        })
    }

    /// A page of facts (`{limit?, cursor?, filter?}`): `{items, next}`.
    #[wasm_bindgen(js_name = factsPage)]
    pub fn facts_page(&self, options: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| m.facts_page(optional(options, "page options")?).await)
    }

    /// A page of messages (`{limit?, cursor?, filter?: {thread?}}`).
    #[wasm_bindgen(js_name = messagesPage)]
    pub fn messages_page(&self, options: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            m.messages_page(optional(options, "page options")?).await
        })
    }

    /// A page of episodes (`{limit?, cursor?, filter?: {thread?, states?}}`).
    #[wasm_bindgen(js_name = episodesPage)]
    pub fn episodes_page(&self, options: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            m.episodes_page(optional(options, "page options")?).await
        })
    }

    /// Every entity with its aliases.
    pub fn entities(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.entities().await)
    }

    /// Every trace.
    pub fn traces(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.traces().await)
    }

    /// Every fade, oldest first.
    pub fn fades(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.fades().await)
    }

    /// Counts, the view's size, pending work and the model's health.
    pub fn stats(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.stats().await)
    }

    /// Why episode `id` is in or out of view.
    #[wasm_bindgen(js_name = explainEpisode)]
    pub fn explain_episode(&self, id: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let id: u64 = from_js(id, "episode id")?;
            m.explain_episode(id).await
        })
    }

    /// Why message `id` is shown or not (a regenerated answer's alternatives).
    #[wasm_bindgen(js_name = explainMessage)]
    pub fn explain_message(&self, id: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let id: u64 = from_js(id, "message id")?;
            m.explain_message(id).await
        })
    }

    /// Why fact `id` is in the facts block, out of it, or retired.
    #[wasm_bindgen(js_name = explainFact)]
    pub fn explain_fact(&self, id: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let id: u64 = from_js(id, "fact id")?;
            m.explain_fact(id).await
        })
    }

    /// Why fact `id` was recalled, block by block.
    #[wasm_bindgen(js_name = explainRecall)]
    pub fn explain_recall(&self, id: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let id: u64 = from_js(id, "fact id")?;
            m.explain_recall(id).await
        })
    }

    /// The whole memory as JSON text.
    pub fn export(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.export().await)
    }

    /// One part of the export (`{ text, next }`): start with no cursor and
    /// pass each part's `next` until it is null.
    #[wasm_bindgen(js_name = exportPart)]
    pub fn export_part(&self, cursor: JsValue, max_bytes: u32) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let cursor: Option<crate::store::export::ExportCursor> =
                if cursor.is_null() || cursor.is_undefined() {
                    None
                } else {
                    Some(from_js(cursor, "export cursor")?)
                };
            m.export_part(cursor, max_bytes as usize).await
        })
    }

    /// Loads an export into this (empty) memory.
    pub fn import(&self, json: String) -> WasmCall {
        self.run(async move |m: &mut Engine| m.import(&json).await)
    }

    /// Adds a piece of an export to load at `importFinish`.
    #[wasm_bindgen(js_name = importPiece)]
    pub fn import_piece(&self, text: String) -> WasmCall {
        self.run(async move |m: &mut Engine| m.import_piece(&text))
    }

    /// Forgets the pieces given to `importPiece` without loading them.
    #[wasm_bindgen(js_name = importDiscard)]
    pub fn import_discard(&self) -> WasmCall {
        self.run(async |m: &mut Engine| Ok(m.import_discard()))
    }

    /// Loads the pieces given to `importPiece` as one export.
    #[wasm_bindgen(js_name = importFinish)]
    pub fn import_finish(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.import_finish().await)
    }

    /// Erases a target (`{kind, id}`: `message`, `episode`, `fact` or
    /// `entity` by number, `thread` by name) for good, with what depended
    /// on it; resolves to the ids erased.
    pub fn erase(&self, target: JsValue) -> WasmCall {
        self.run(async move |m: &mut Engine| {
            let target: crate::types::erase::Target = from_js(target, "erase target")?;
            m.erase(target).await
        })
    }

    /// Deletes every key of the memory's namespace.
    pub fn destroy(&self) -> WasmCall {
        self.run(async |m: &mut Engine| m.destroy().await)
    }

    /// A call that traps the module after its first wait (the engine taken
    /// out of its cell, as a real trap would leave it): for the tests of
    /// what the JS wrapper does after a trap. Not part of the API.
    #[wasm_bindgen(js_name = __trapForTests)]
    pub fn trap_for_tests(&self) -> WasmCall {
        self.run(async |_m: &mut Engine| -> Result<(), Error> {
            let _ = JsFuture::from(Promise::resolve(&JsValue::NULL)).await;
            core::arch::wasm32::unreachable()
        })
    }
}

/// The checksum of the meaning graph built over `rows` fixed vectors of
/// `dim` numbers, as 16 hex digits: equal to the native engine's and the
/// component's (`tests/fixtures/hnsw-golden.json`). For the package's
/// tests; not part of the API.
#[wasm_bindgen(js_name = __graphChecksum)]
pub fn graph_checksum(rows: u32, dim: u32) -> String {
    format!(
        "{:016x}",
        crate::index::vector::graph_checksum(rows as usize, dim as usize)
    )
}
