// The Memory class: the JS face of the WebAssembly engine. It owns the JS
// concerns (see STYLE.md): loading the module, queuing calls in order,
// progress events, error classes, message shapes, disposal. Every memory
// decision stays in the core.

import { ClosedError, InvalidInputError, ModelError, PackagingError, StoreError, TrappedError, toEngramError } from "./errors.js";
import { USES_OFFLINE, loadOffline, offlineModel } from "./models/offline.js";

let loader = null;

/**
 * Sets how the WebAssembly module is loaded (each entry point, browser.js,
 * node.js and worker.js, sets its own). `load` resolves to `{ WasmMemory }`.
 */
export function setLoader(load) {
  loader = load;
}

/**
 * The engine's loaded WebAssembly exports (`{ WasmMemory, ... }`), loading
 * them first when needed.
 */
export function loadWasm() {
  if (!loader) {
    return Promise.reject(
      new PackagingError(
        "no WebAssembly loader: engram's package entry (browser.js, node.js or worker.js) did not run. " +
          'Import from "engram" (not from its src/ files), and let the bundler keep the files listed in the package\'s "sideEffects"',
      ),
    );
  }
  return loader();
}

/**
 * The module instances that trapped: their `WasmCall` class -> the
 * TrappedError every later call rejects with.
 */
const trapped = new WeakMap();

/** The TrappedError of module `wasm` (its exports), if it trapped. */
function trapOf(wasm) {
  return wasm?.WasmCall ? trapped.get(wasm.WasmCall) : undefined;
}

/**
 * Drives a `WasmCall` (one engine call, polled from here: see WasmCall in
 * src/bindings/web.rs) to its end: resolves with its value, rejects with
 * its error. Every poll runs inside this `try`, so a trap in the module (a
 * `WebAssembly.RuntimeError`) rejects the call's promise with a
 * TrappedError and marks the module instance as trapped; it never escapes
 * as an uncaught exception.
 */
function drive(call) {
  return new Promise((resolve, reject) => {
    const Class = call.constructor;
    let queued = false;
    const step = () => {
      queued = false;
      const earlier = trapped.get(Class);
      if (earlier) return reject(earlier);
      let out;
      try {
        out = call.poll(wake);
      } catch (e) {
        if (e instanceof WebAssembly.RuntimeError) {
          trapped.set(
            Class,
            new TrappedError(
              `an earlier call trapped the WebAssembly module (${e.message}): no memory of this module instance can be used again; load the module again (a new process, worker or page) and open the memory again (what was committed before is in the store)`,
              { cause: e },
            ),
          );
          return reject(new TrappedError(`the WebAssembly module trapped during this call (${e.message}); this memory must be opened again in a freshly loaded module`, { cause: e }));
        }
        return reject(e);
      }
      if (out !== undefined) resolve(out);
    };
    const wake = () => {
      if (queued) return;
      queued = true;
      queueMicrotask(step);
    };
    step();
  });
}

/**
 * Makes the module's `WasmCall` a thenable (`await inner.view()`), driven
 * by `drive`; once per module instance.
 */
function installDriver(wasm) {
  const proto = wasm?.WasmCall?.prototype;
  if (!proto || Object.prototype.hasOwnProperty.call(proto, "then")) return;
  const driven = new WeakMap();
  Object.defineProperty(proto, "then", {
    configurable: true,
    value(onFulfilled, onRejected) {
      let promise = driven.get(this);
      if (!promise) driven.set(this, (promise = drive(this)));
      return promise.then(onFulfilled, onRejected);
    },
  });
}

/** The host clock: wall-clock ms since the Unix epoch. */
export const systemClock = Object.freeze({ now: () => Date.now() });

const EVENTS = new Set(["task", "embed", "formed", "fade", "recall", "distill", "note", "degraded"]);
const noop = () => {};
const DISPOSE = Symbol.dispose ?? Symbol.for("Symbol.dispose");
const ASYNC_DISPOSE = Symbol.asyncDispose ?? Symbol.for("Symbol.asyncDispose");
const PRIVATE = Symbol("engram.Memory");

/** Default deadlines of host callbacks, in ms (as every host's). */
const DEADLINES = Object.freeze({ model: 60_000, store: 10_000 });
/** setTimeout's longest delay; a longer deadline is no deadline. */
const MAX_TIMER = 2 ** 31 - 1;
const STORE_METHODS = ["get", "getMany", "put", "delete", "list", "writeIf"];

/**
 * The deadlines of `Memory.open`'s `deadlines` option, checked: ms, or
 * null / Infinity for none.
 */
function toDeadlines(deadlines) {
  if (deadlines != null && typeof deadlines !== "object") {
    throw new InvalidInputError("deadlines is an object: { model, store } in ms");
  }
  const out = {};
  for (const kind of ["model", "store"]) {
    const ms = deadlines?.[kind] === undefined ? DEADLINES[kind] : deadlines[kind];
    if (ms !== null && !(typeof ms === "number" && ms > 0)) {
      throw new InvalidInputError(`deadlines.${kind} is a number of ms above 0, or null (none): got ${String(ms)}`);
    }
    out[kind] = ms === null || ms > MAX_TIMER ? null : ms;
  }
  return out;
}

/**
 * Calls `run(signal)` and, when it returns a promise, settles with it or,
 * if it has not settled within `ms`, rejects with `timedOut(message)` (and
 * aborts `signal`, given when `abortable`, so an adapter that can stop
 * does). A late answer is
 * ignored. A plain value or a synchronous throw passes through unchanged: a
 * synchronous callback cannot be interrupted.
 */
function withDeadline(ms, timedOut, run, abortable = false) {
  if (ms === null) return run(undefined);
  const controller = abortable && typeof AbortController === "function" ? new AbortController() : null;
  const value = run(controller?.signal);
  if (value === null || (typeof value !== "object" && typeof value !== "function") || typeof value.then !== "function") {
    return value;
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      const error = timedOut(`timed out: no answer within ${ms} ms`);
      controller?.abort(error);
      reject(error);
    }, ms);
    Promise.resolve(value).then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

/**
 * Runs a host callback, handing what it throws or rejects with (the host's
 * own error object, or the deadline's) to `record` before passing it on:
 * the engine only keeps its text, and the call's StoreError or ModelError
 * gets the object back as its `cause`.
 */
function recording(record, run) {
  let value;
  try {
    value = run();
  } catch (e) {
    record(e);
    throw e;
  }
  if (value === null || (typeof value !== "object" && typeof value !== "function") || typeof value.then !== "function") {
    return value;
  }
  return Promise.resolve(value).then(undefined, (e) => {
    record(e);
    throw e;
  });
}

/**
 * The store as the engine sees it: each method under the store deadline,
 * its failures handed to `record`.
 */
function guardedStore(store, ms, record, trips) {
  const guarded = {};
  for (const name of STORE_METHODS) {
    if (typeof store[name] !== "function") continue; // open reports it
    const kind = TRIP_KINDS[name];
    guarded[name] = (...args) => {
      trips[kind]++;
      trips.total++;
      return recording(record, () => withDeadline(ms, (message) => new StoreError(message), () => store[name](...args)));
    };
  }
  // getMany is optional: without it the keys are read one by one (each a trip).
  if (typeof store.getMany !== "function" && guarded.get) {
    guarded.getMany = async (keys) => {
      const out = [];
      for (const key of keys) out.push(await guarded.get(key));
      return out;
    };
  }
  return guarded;
}

/** `stats().round_trips`'s key for each store method. */
const TRIP_KINDS = { get: "get", getMany: "get_many", put: "put", delete: "delete", list: "list", writeIf: "write_if" };
const noTrips = () => ({ get: 0, get_many: 0, put: 0, delete: 0, list: 0, write_if: 0, total: 0 });

/** Text of an OpenAI-style `content`: a string, null, or an array of parts. */
function contentText(content) {
  if (content == null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .filter((p) => p && (p.type === "text" || typeof p.text === "string"))
      .map((p) => p.text)
      .join("\n");
  }
  throw new InvalidInputError("message content must be a string, null or an array of text parts");
}

/**
 * A message as the engine takes it, from either the engine's own shape
 * (`{role, content, tool_calls: [{id, name, arguments}], tool_call_id}`) or
 * an OpenAI chat message (`tool_calls: [{id, type, function: {name,
 * arguments}}]`, `content` null or parts), with the host's own id in
 * `client_id` when it has one and its own data in `metadata` (a JSON
 * object). camelCase `toolCalls` / `toolCallId` / `clientId` are accepted
 * too.
 */
export function toNewMessage(m) {
  if (!m || typeof m !== "object") {
    throw new InvalidInputError("a message is an object: { role, content }");
  }
  // OpenAI's `developer` role is its newer name for `system`; its legacy
  // `function` role answers the call `function_call:<name>` (below).
  const role = m.role === "developer" ? "system" : m.role === "function" ? "tool" : m.role;
  const out = { role, content: contentText(m.content) };
  if (m.role === "function") out.tool_call_id = legacyCallId(m.name);
  const calls = m.tool_calls ?? m.toolCalls ?? legacyCall(m.function_call);
  if (calls != null) {
    if (!Array.isArray(calls)) throw new InvalidInputError("tool_calls must be an array");
    out.tool_calls = calls.map((c) => {
      // OpenAI's custom tool calls carry `custom: { name, input }` (free text).
      const name = c?.function?.name ?? c?.custom?.name ?? c?.name;
      const args = c?.function?.arguments ?? c?.custom?.input ?? c?.arguments ?? "{}";
      return { id: c?.id, name, arguments: typeof args === "string" ? args : JSON.stringify(args) };
    });
  }
  const callId = m.tool_call_id ?? m.toolCallId;
  if (callId != null) out.tool_call_id = callId;
  const clientId = m.client_id ?? m.clientId;
  if (clientId != null) {
    if (typeof clientId !== "string") throw new InvalidInputError("client_id must be a string (1 to 256 characters)");
    out.client_id = clientId;
  }
  // The host's own data about the message: a JSON object (the engine
  // checks it: at most 4,096 bytes as JSON, 8 levels deep).
  if (m.metadata != null) out.metadata = m.metadata;
  if (m.thread != null) out.thread = m.thread;
  if (m.at != null) out.at = m.at instanceof Date ? m.at.getTime() : m.at;
  // A regenerated answer: the id of the user message it answers again.
  if (m.replaces != null) out.replaces = m.replaces;
  return out;
}

/**
 * OpenAI's legacy function calling has no call ids: one call a turn, its
 * `function` message answering it by name. The call is kept as a tool call
 * of id `function_call:<name>`, the answer as the tool message for it.
 */
function legacyCallId(name) {
  if (typeof name !== "string" || name === "") {
    throw new InvalidInputError("a function message needs the name of the function it answers");
  }
  return `function_call:${name}`;
}

function legacyCall(call) {
  if (call == null) return undefined;
  return [{ id: legacyCallId(call.name), function: { name: call.name, arguments: call.arguments ?? "{}" } }];
}

/** Most messages per engine call of addMessages (the core's MAX_BATCH). */
const MAX_BATCH = 1000;

/** Arguments of the `note` tool: an object, or the JSON text a model wrote. */
function toNoteArgs(args) {
  if (typeof args === "string") {
    try {
      return JSON.parse(args);
    } catch (e) {
      throw new InvalidInputError(`note arguments are not JSON: ${e.message}`, { cause: e });
    }
  }
  return args;
}

/** The `at` of view/render options as ms (undefined: now). */
function timeOf(options) {
  const at = options?.at;
  return at instanceof Date ? at.getTime() : at ?? undefined;
}

/** The `thread` of a call's options (undefined: `main`; the engine checks it). */
function threadOf(options) {
  return options?.thread ?? undefined;
}

function reportListenerError(e) {
  if (typeof globalThis.reportError === "function") globalThis.reportError(e);
  else
    queueMicrotask(() => {
      throw e;
    });
}

/** The pieces of an `importParts` source, as an async iterable. */
function piecesOf(source) {
  if (typeof source === "string") return [source];
  if (source === null || typeof source !== "object") {
    throw new InvalidInputError(`importParts: the source must be a string, bytes, a Blob, a ReadableStream or an (async) iterable of strings or bytes, not ${source === null ? "null" : typeof source}`);
  }
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return [new Uint8Array(source)];
  if (typeof source.stream === "function") return piecesOf(source.stream());
  if (typeof source.getReader === "function" && !(Symbol.asyncIterator in source)) {
    return (async function* () {
      const reader = source.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          yield value;
        }
      } finally {
        reader.releaseLock();
      }
    })();
  }
  if (Symbol.asyncIterator in source || Symbol.iterator in source) {
    return source;
  }
  throw new InvalidInputError("importParts: the source must be a string, bytes, a Blob, a ReadableStream or an (async) iterable of strings or bytes");
}

/**
 * One memory. Open it with `await Memory.open({...})`. Calls may be made
 * without awaiting the previous one: they run one at a time, in the order
 * they were made.
 */
export class Memory {
  #inner = null;
  #wasm = null;
  #tail = Promise.resolve();
  #listeners = new Map();
  #closed = false;
  /** The last error a host callback of the running call threw, per kind (the `cause` of its StoreError / ModelError). */
  #hostErrors = { store: undefined, model: undefined };
  /** The store calls this handle made since it opened, by kind (`stats().round_trips`). */
  #trips = noTrips();

  constructor(token) {
    if (token !== PRIVATE) throw new TypeError("use `await Memory.open({ namespace, model, store })`");
  }

  /**
   * Opens the memory `namespace` in `store`, loading what it holds.
   * `model` answers the engine's tasks (default: `offlineModel()`, the
   * built-in rules and hashing embedder: for demos and tests; plug in a
   * real LLM for real use); `clock` defaults to `Date.now()`;
   * `config` holds the fields to change (snake_case, as in every host).
   * `deadlines` (`{ model, store }`, ms; default 60000 and 10000; null:
   * none) bound each model and store callback: one that has not settled in
   * time is a failed model call (the step degrades; with `strict`, the call
   * rejects with ModelError) or a failed store call (the call rejects with
   * StoreError), its late answer ignored, and the queued calls go on.
   */
  static async open(options = {}) {
    return Memory.#open(options, "open");
  }

  /**
   * `open`, read-only, with whatever of a damaged log can be read: the way
   * back when `open` rejects with CorruptError. Log entries that cannot be
   * read are skipped, later ones still applied (events that no longer
   * apply are dropped); each loss is in `stats().storage_warnings`. Reads
   * work; every write rejects with InvalidInputError ("opened for salvage:
   * read-only") and the store is never written: `export()` it and
   * `import()` the export into a new store or namespace.
   */
  static async openSalvage(options = {}) {
    return Memory.#open(options, "openSalvage");
  }

  static async #open({ namespace, model = offlineModel(), store, clock = systemClock, config, deadlines } = {}, how) {
    if (typeof namespace !== "string") throw new InvalidInputError("open needs a namespace string");
    if (!model || typeof model !== "object") throw new InvalidInputError("open needs a model (or none: the offline model)");
    if (!store || typeof store !== "object") throw new InvalidInputError("open needs a store");
    const limits = toDeadlines(deadlines);
    const wasm = await loadWasm();
    // The offline model's own module, loaded now when the model uses it, so
    // a packaging fault is this call's PackagingError, not a model failure
    // at the first task.
    if (model.complete?.[USES_OFFLINE] || model.embed?.[USES_OFFLINE]) await loadOffline();
    installDriver(wasm);
    const earlier = trapOf(wasm);
    if (earlier) throw earlier;
    const memory = new Memory(PRIVATE);
    memory.#wasm = wasm;
    try {
      memory.#inner = await wasm.WasmMemory[how](
        namespace,
        guardedStore(store, limits.store, (e) => (memory.#hostErrors.store = e), memory.#trips),
        memory.#watched(model, limits.model),
        clock ?? systemClock,
        config ?? undefined,
      );
    } catch (e) {
      throw memory.#error(e);
    }
    memory.#hostErrors = { store: undefined, model: undefined };
    return memory;
  }

  /**
   * The model as the engine sees it: the host's, with progress events, each
   * call under the model deadline (and given `{ signal }`, aborted then).
   */
  #watched(model, ms) {
    const timedOut = (message) => new ModelError(message);
    const record = (e) => (this.#hostErrors.model = e);
    const watched = {
      complete: (request) => {
        this.#emit("task", { task: request.task, attempt: request.attempt });
        return recording(record, () => withDeadline(ms, timedOut, (signal) => model.complete(request, { signal }), true));
      },
      embed: (texts) => {
        this.#emit("embed", { texts: texts.length });
        return recording(record, () => withDeadline(ms, timedOut, (signal) => model.embed(texts, { signal }), true));
      },
    };
    for (const name of ["complete", "embed"]) if (typeof model[name] !== "function") delete watched[name]; // open reports it
    if (typeof model.countTokens === "function") watched.countTokens = (text) => model.countTokens(text);
    return watched;
  }

  /**
   * Runs `fn(inner)` after every earlier call has settled, then emits a
   * `degraded` event per step of it that went on without the model (calls
   * that rejected and reads included), before the next call starts.
   */
  #enqueue(fn) {
    if (this.#closed) return Promise.reject(new ClosedError("this memory was freed: open it again"));
    const run = this.#tail.then(async () => {
      const inner = this.#inner;
      this.#hostErrors = { store: undefined, model: undefined };
      try {
        const earlier = trapOf(this.#wasm);
        if (earlier) throw earlier;
        return await fn(inner);
      } catch (e) {
        throw this.#error(e);
      } finally {
        this.#hostErrors = { store: undefined, model: undefined };
        // A trapped module is not entered again.
        if (!trapOf(this.#wasm)) this.#drainDegraded(inner);
      }
    });
    this.#tail = run.then(noop, noop);
    return run.catch((e) => {
      throw toEngramError(e);
    });
  }

  /**
   * The EngramError for what the engine rejected with. A StoreError or
   * ModelError takes as its `cause` the host's own error object that made
   * the call fail (the engine only carries its text), when there was one.
   */
  #error(e) {
    const error = toEngramError(e);
    const kind = error.code === "store" ? "store" : error.code === "model" ? "model" : null;
    const host = kind && this.#hostErrors[kind];
    if (host === undefined || host === null || error.cause === host) return error;
    return new error.constructor(error.message, { code: error.code, cause: host });
  }

  #emit(event, detail) {
    const set = this.#listeners.get(event);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(detail);
      } catch (e) {
        reportListenerError(e);
      }
    }
  }

  /** Takes the core's degraded steps (emptying its list) and emits one event each. */
  #drainDegraded(inner) {
    let steps;
    try {
      steps = inner?.takeDegraded() ?? [];
    } catch (e) {
      reportListenerError(toEngramError(e));
      return;
    }
    for (const step of steps) this.#emit("degraded", step);
  }

  #emitAdded(added) {
    if (added.duplicate) return; // a retry: the first add did (and reported) the work
    if (added.formed.length) this.#emit("formed", { episodes: added.formed, message: added.message });
    if (added.fade != null) this.#emit("fade", { fade: added.fade, slept: added.slept, message: added.message });
    if (added.recall != null) this.#emit("recall", { block: added.recall, message: added.message });
    if (added.maintained != null) this.#emitMaintained(added.maintained, added.message);
    else if (added.distilled != null) {
      const [block, distillation] = added.distilled;
      this.#emit("distill", { block, distillation });
    }
  }

  /** Events of a maintain run (`message`: the reply that ran it, or null). */
  #emitMaintained(maintained, message) {
    if (maintained.formed.length) this.#emit("formed", { episodes: maintained.formed, message });
    if (maintained.fade != null) this.#emit("fade", { fade: maintained.fade, slept: false, message });
    for (const [thread, fade] of maintained.slept ?? []) this.#emit("fade", { fade, slept: true, message, thread });
    for (const [block, distillation] of maintained.distilled) this.#emit("distill", { block, distillation });
  }

  /**
   * Listens to progress: `task` (the engine asks the model: `{task,
   * attempt}`), `embed` (`{texts}`), `formed` (`{episodes, message}`),
   * `fade` (`{fade, slept, message}`), `recall` (`{block, message}`),
   * `distill` (`{block, distillation}`), `note` (a NoteOutcome), `degraded`
   * (a step that went on without the model: `{task, error, attempts, at,
   * effect}`, after the call that made it). `message` is null for what
   * maintain() did. Returns a function that stops listening.
   */
  on(event, listener) {
    if (!EVENTS.has(event)) throw new InvalidInputError(`unknown event ${JSON.stringify(event)}`);
    if (typeof listener !== "function") throw new InvalidInputError("a listener is a function");
    if (!this.#listeners.has(event)) this.#listeners.set(event, new Set());
    this.#listeners.get(event).add(listener);
    return () => this.off(event, listener);
  }

  /** Stops `listener` listening to `event`. */
  off(event, listener) {
    this.#listeners.get(event)?.delete(listener);
  }

  /**
   * Adds a message (engine or OpenAI shape); resolves to what it did. With a
   * `client_id` already in the memory it writes nothing and resolves to the
   * first add's message id with `duplicate: true`: an add whose outcome was
   * lost (a timeout) can be retried safely.
   */
  addMessage(message) {
    let m;
    try {
      m = toNewMessage(message);
    } catch (e) {
      return Promise.reject(toEngramError(e));
    }
    return this.#enqueue(async (inner) => {
      const added = await inner.addMessage(m);
      this.#emitAdded(added);
      return added;
    });
  }

  /**
   * Adds history: `messages` (engine or OpenAI shape, each with its own
   * `thread` and `at`, ms or a Date, or now), with no model call. The
   * engine takes at most 1,000 per call, so the list goes in calls of
   * 1,000, each one commit; `onProgress({ done, total })` is called after
   * each. Boundary judgments, cuts and notes wait: run
   * `maintain({ thread })` for each thread until `pending({ thread })` is
   * empty. A bad message (shape, thread name, a future date, a date before
   * its thread's last message) rejects that call with InvalidInputError and
   * writes nothing of it; the error's `added` holds the Batch of the calls
   * committed before it (give messages a `client_id` and retry the whole
   * list: those already in are skipped as duplicates). Resolves to the
   * Batch: `{ messages, duplicates }` (ids).
   */
  addMessages(messages, options) {
    const onProgress = options?.onProgress;
    let list;
    try {
      if (!Array.isArray(messages)) throw new InvalidInputError("addMessages takes an array of messages");
      if (onProgress != null && typeof onProgress !== "function") throw new InvalidInputError("onProgress must be a function");
      list = messages.map(toNewMessage);
    } catch (e) {
      return Promise.reject(toEngramError(e));
    }
    const added = { messages: [], duplicates: [] };
    return this.#enqueue(async (inner) => {
      for (let done = 0; done < list.length; ) {
        const chunk = list.slice(done, done + MAX_BATCH);
        const batch = await inner.addMessages(chunk);
        added.messages.push(...batch.messages);
        added.duplicates.push(...batch.duplicates);
        done += chunk.length;
        if (onProgress) {
          try {
            onProgress({ done, total: list.length });
          } catch (e) {
            reportListenerError(e);
          }
        }
      }
      return added;
    }).catch((e) => {
      e.added = added;
      throw e;
    });
  }

  /**
   * Every thread with at least one message, by name: `{ thread, title,
   * first_message, last_message, first_at, last_at, messages,
   * user_messages, episodes, episodes_in_view }`.
   */
  threads() {
    return this.#enqueue((inner) => inner.threads());
  }

  /**
   * Closes tool call `callId`, which waits for its output and will have
   * none (the tool failed, the user moved on): adds its tool output "No
   * output: this tool call was abandoned." so the view stays a chat every
   * model API accepts; resolves like `addMessage`. While a call waits, a
   * user, assistant or system message rejects with InvalidInputError naming
   * this method; a call that is not waiting rejects with InvalidInputError.
   */
  abandonToolCall(callId) {
    if (typeof callId !== "string") return Promise.reject(new InvalidInputError("abandonToolCall takes the call's id (a string)"));
    return this.#enqueue(async (inner) => {
      const added = await inner.abandonToolCall(callId);
      this.#emitAdded(added);
      return added;
    });
  }

  /**
   * The view: `{ items, tokens, ceiling, over_ceiling? }`. With `{ thread }`,
   * that thread's (default `main`): the memory-wide facts block, then the
   * thread's own episodes, open stretch and recall blocks. With `{ at }`
   * (ms since the Unix epoch, or a Date), the view as it was then, replayed
   * from the log.
   */
  view(options) {
    const at = timeOf(options);
    const thread = threadOf(options);
    return this.#enqueue((inner) => inner.view(at, thread));
  }

  /** The size of the view now in tokens (`{ thread }` as for view()), without building it. */
  viewTokens(options) {
    const thread = threadOf(options);
    return this.#enqueue((inner) => inner.viewTokens(thread));
  }

  /**
   * The view rendered for a chat API; `"openai"` gives a Chat Completions `messages` array,
   * `"responses"` OpenAI Responses API input items. `{ at, thread }` as for view().
   */
  render(format = "openai", options) {
    if (format !== "openai" && format !== "responses") {
      return Promise.reject(
        new InvalidInputError(`unknown format ${JSON.stringify(format)}: use "openai" or "responses"`),
      );
    }
    const at = timeOf(options);
    const thread = threadOf(options);
    if (format === "responses") return this.#enqueue((inner) => inner.renderResponses(at, thread));
    return this.#enqueue((inner) => inner.renderOpenAI(at, thread));
  }

  /**
   * Sets your own instructions (persona, tool policy): pinned first in every view as a
   * system message, counted toward the ceiling, never faded; setting them again changes
   * them, "" removes them. Over 64 KiB or half the ceiling rejects with InvalidInputError.
   * Resolves to whether they changed. (A `system` message added with addMessage is
   * conversation, and fades.)
   */
  setInstructions(text) {
    if (typeof text !== "string") {
      return Promise.reject(new InvalidInputError("instructions must be a string"));
    }
    return this.#enqueue((inner) => inner.setInstructions(text));
  }

  /** Your instructions now, or null. */
  instructions() {
    return this.#enqueue(async (inner) => (await inner.instructions()) ?? null);
  }

  /** Writes facts the chat model gave through the `note` tool. */
  note(args) {
    let a;
    try {
      a = toNoteArgs(args);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#enqueue(async (inner) => {
      const outcome = await inner.note(a);
      this.#emit("note", outcome);
      return outcome;
    });
  }

  /** The `note` tool definition (OpenAI `tools` format) for the chat model. */
  noteTool() {
    if (this.#closed) throw new ClosedError("this memory was freed: open it again");
    return this.#wasm.WasmMemory.noteTool();
  }

  /**
   * Runs the work that waits after a reply, when the host chooses (after the
   * reply, in a worker's waitUntil, on idle): boundary judgments, distill,
   * notes of leaving episodes, a fade ahead, retries of deferred notes.
   * Resolves to what it did (`Maintained`). `{ thread }` (default `main`):
   * the thread whose judgments and fade ahead run; the rest (distill,
   * notes, retries, the sleep of threads idle for `sleep_after_hours`) is
   * the whole memory's.
   */
  maintain(options) {
    const thread = threadOf(options);
    return this.#enqueue(async (inner) => {
      const maintained = await inner.maintain(thread);
      this.#emitMaintained(maintained, null);
      return maintained;
    });
  }

  /** Work waiting for maintain() (`Pending`; `{ thread }` as for maintain()); writes nothing. */
  pending(options) {
    const thread = threadOf(options);
    return this.#enqueue((inner) => inner.pending(thread));
  }

  /**
   * Ends the turn explicitly (after a reply with tool calls, say): maintain()
   * with the latest turn counted as over. `[block, distillation]` for the
   * latest user message's block when it was distilled now, else null.
   * `{ thread }`: the thread whose turn ends (default `main`).
   */
  endTurn(options) {
    const thread = threadOf(options);
    return this.#enqueue(async (inner) => {
      const ended = await inner.endTurn(thread);
      if (ended != null) this.#emit("distill", { block: ended[0], distillation: ended[1] });
      return ended;
    });
  }

  /** Searches facts and passages on demand; writes nothing. */
  search(query, options) {
    return this.#enqueue((inner) => inner.search(query, options ?? undefined));
  }

  /**
   * The whole text of a search hit's item (`{ kind: "fact" | "passage" |
   * "message", id }`, as `search` gives it): `search` cuts a hit's text at
   * about 1,000 tokens. An item that is not there rejects with
   * InvalidInputError.
   */
  hitText(item) {
    return this.#enqueue((inner) => inner.hitText(item));
  }

  /**
   * Recall on demand: the same pipeline as for a user message (split, search,
   * fuse, and the relevance walk along entities), for `query`, without
   * changing the view. `search` with `walk: true` by default.
   */
  recall(query, options) {
    return this.search(query, { walk: true, include_in_view: false, ...(options ?? {}) });
  }

  /** Every recall block, with how each item got there and distill's decision. */
  recalls() {
    return this.#enqueue((inner) => inner.recalls());
  }

  /**
   * Every episode, with its activation now and its significance; with
   * `{ limit, cursor, filter: { thread, states } }`, one page of them in id
   * order (`{ items, next }`; pass `next` as the next page's `cursor`).
   */
  episodes(options) {
    if (options === undefined) return this.#enqueue((inner) => inner.episodes());
    return this.#enqueue((inner) => inner.episodesPage(options));
  }

  /**
   * Every message, forgotten episodes' included; with `{ limit, cursor,
   * filter: { thread } }`, one page of them in id order (`{ items, next }`).
   */
  messages(options) {
    if (options === undefined) return this.#enqueue((inner) => inner.messages());
    return this.#enqueue((inner) => inner.messagesPage(options));
  }

  /**
   * Every fact, retired ones included (marked); with `{ limit, cursor,
   * filter: { live, kinds, entity, stated } }`, one page of them in id order
   * (`{ items, next }`): `next` names the last id seen, so a walk returns
   * each fact once while facts are added between pages. `limit` is 1..1000
   * (100 by default).
   */
  facts(options) {
    if (options === undefined) return this.#enqueue((inner) => inner.facts());
    return this.#enqueue((inner) => inner.factsPage(options));
  }

  /**
   * Remembers a fact you state, at any time (a new memory included): a
   * sentence the note model turns into a triple, or `{ subject, predicate,
   * object, sentence, kind? }`. Merged and retired like any fact; its source
   * is the host (`episode` 0). Resolves to `{ fact, merged, retired }`.
   */
  remember(statement) {
    if (typeof statement !== "string" && (statement === null || typeof statement !== "object")) {
      return Promise.reject(new InvalidInputError("remember takes a sentence or a fact object"));
    }
    return this.#enqueue((inner) => inner.remember(statement));
  }

  /**
   * Revises fact `id`: facts are never edited in place, so `statement` (as
   * for remember) is remembered as a new fact that retires fact `id`.
   * Resolves to `{ fact, merged, retired }`.
   */
  revise(id, statement) {
    if (typeof statement !== "string" && (statement === null || typeof statement !== "object")) {
      return Promise.reject(new InvalidInputError("revise takes a sentence or a fact object"));
    }
    return this.#enqueue((inner) => inner.revise(id, statement));
  }

  /** Fact `id`, or null when the memory has none (retired and erased ones marked). */
  fact(id) {
    return this.#enqueue(async (inner) => (await inner.fact(id)) ?? null);
  }

  /** What happened to fact `id`: added, merged, retired, retired by, erased, with times. */
  history(id) {
    return this.#enqueue((inner) => inner.history(id));
  }

  /** Every entity with its aliases. */
  entities() {
    return this.#enqueue((inner) => inner.entities());
  }

  /** Every trace (yes and no answers). */
  traces() {
    return this.#enqueue((inner) => inner.traces());
  }

  /** Every fade, oldest first (reason, sizes, landing, when it finished). */
  fades() {
    return this.#enqueue((inner) => inner.fades());
  }

  /**
   * Counts, the view's size against the ceiling, pending work, the model's
   * health, and `round_trips`: the store calls this handle made since it
   * opened (this call's own head read included), by kind.
   */
  stats() {
    return this.#enqueue(async (inner) => ({ ...(await inner.stats()), round_trips: { ...this.#trips } }));
  }

  /**
   * Why: `{ episode: id }` (in or out of view), `{ fact: id }` (in the
   * facts block or not, retired), `{ recall: factId }` (why it was recalled),
   * `{ message: id }` (shown or not; a regenerated answer's alternatives).
   */
  explain(what) {
    const [kind, id] = Object.entries(what ?? {})[0] ?? [];
    const method = { episode: "explainEpisode", fact: "explainFact", recall: "explainRecall", message: "explainMessage" }[kind];
    if (!method || Object.keys(what).length !== 1) {
      return Promise.reject(
        new InvalidInputError("explain takes { episode: id }, { fact: id }, { recall: factId } or { message: id }"),
      );
    }
    return this.#enqueue((inner) => inner[method](id));
  }

  /** The whole memory as JSON text (every log entry). */
  export() {
    return this.#enqueue((inner) => inner.export());
  }

  /**
   * The export in parts, for a memory whose export is too large for one
   * string (a JavaScript string stops at about 512 MiB: some 150k facts).
   * An async iterator of JSON text pieces, each of whole log entries and
   * about `maxBytes` long (default 8 MiB, at least 1024), which joined are
   * `export()` as it stood when the iteration began (messages added
   * meanwhile are left for a later export). Write each piece out as it
   * comes, e.g. to a file stream. An erasure of this memory between two
   * parts, or its namespace destroyed and written anew, rejects the next
   * with InvalidInputError: start again.
   */
  async *exportParts(options = {}) {
    const maxBytes = options?.maxBytes ?? 8 * 1024 * 1024;
    if (!Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > 0xffffffff) {
      throw new InvalidInputError(`exportParts: maxBytes must be a whole number of bytes, got ${maxBytes}`);
    }
    let cursor = null;
    do {
      const part = await this.#enqueue((inner) => inner.exportPart(cursor, maxBytes));
      yield part.text;
      cursor = part.next;
    } while (cursor);
  }

  /** Loads an export (JSON text or its parsed object) into this empty memory. */
  import(data) {
    const json = typeof data === "string" ? data : JSON.stringify(data);
    return this.#enqueue((inner) => inner.import(json));
  }

  /**
   * Loads an export given in pieces into this empty memory: `source` is an
   * iterable or async iterable of strings or bytes (UTF-8), a ReadableStream
   * or a Blob (`file`, `file.stream()`, a Node read stream, the pieces of
   * `exportParts`), cut anywhere. Nothing is written until the whole export
   * is read and checked; if the source fails, what was read is forgotten
   * and the memory is unchanged. No other call of this memory runs while
   * it reads.
   */
  importParts(source) {
    return this.#enqueue(async (inner) => {
      const decoder = new TextDecoder("utf-8", { fatal: true });
      const decode = (bytes, stream) => {
        try {
          return decoder.decode(bytes, { stream });
        } catch {
          throw new InvalidInputError("importParts: the export is not UTF-8");
        }
      };
      // A string piece may end inside a surrogate pair: its high half waits
      // for the next piece (passed alone, it would become U+FFFD).
      let held = "";
      const send = async (text) => {
        text = held + text;
        held = "";
        const last = text.charCodeAt(text.length - 1);
        if (last >= 0xd800 && last <= 0xdbff) {
          held = text.slice(-1);
          text = text.slice(0, -1);
        }
        if (text) await inner.importPiece(text);
      };
      try {
        for await (const piece of piecesOf(source)) {
          if (typeof piece === "string") {
            // Bytes cut inside a character, then text: not one export.
            await send(decode(undefined, false) + piece);
          } else if (piece instanceof Uint8Array) {
            await send(decode(piece, true));
          } else {
            throw new InvalidInputError(`importParts: a piece must be a string or bytes, got ${piece === null ? "null" : typeof piece}`);
          }
        }
        await send(decode(undefined, false));
        if (held) await inner.importPiece(held);
      } catch (e) {
        await inner.importDiscard();
        throw e;
      }
      return inner.importFinish();
    });
  }

  /**
   * Erases for good `{ message: id }` (with its tool exchange and the facts
   * noted from its episode), `{ episode: id }` (its messages), `{ fact: id }`,
   * `{ entity: id }` (with every fact naming it) or `{ thread: name }` (every
   * message of the thread, as erasing each would): the stored log entries
   * and snapshot that held it are rewritten in one conditional write, so no
   * stored value nor the export keeps its text or embedding. Resolves to the
   * ids erased (`{ messages, facts, entities }`, empty when all of it already
   * was); an unknown id or kind rejects with InvalidInputError.
   */
  erase(what) {
    const [kind, id] = Object.entries(what ?? {})[0] ?? [];
    if (!["message", "episode", "fact", "entity", "thread"].includes(kind) || Object.keys(what).length !== 1) {
      return Promise.reject(
        new InvalidInputError("erase takes { message: id }, { episode: id }, { fact: id }, { entity: id } or { thread: name }"),
      );
    }
    return this.#enqueue((inner) => inner.erase({ kind, id }));
  }

  /**
   * Deletes the whole memory: every key of its namespace, in one conditional
   * write. The memory stays open on the empty namespace.
   */
  destroy() {
    return this.#enqueue((inner) => inner.destroy());
  }

  /** Makes the module trap in a call (tests of what follows a trap). */
  [Symbol.for("engram.trapForTests")]() {
    return this.#enqueue((inner) => inner.__trapForTests());
  }

  /** Whether `free()` was called. */
  get closed() {
    return this.#closed;
  }

  /** Frees the engine once the calls already made have settled. Later calls reject with ClosedError. */
  free() {
    if (this.#closed) return;
    this.#closed = true;
    const inner = this.#inner;
    this.#tail = this.#tail.then(() => {
      this.#inner = null;
      if (!trapOf(this.#wasm)) inner?.free();
    });
  }

  /** Like free(), resolving once the engine is freed. */
  async close() {
    this.free();
    await this.#tail;
  }

  [DISPOSE]() {
    this.free();
  }

  [ASYNC_DISPOSE]() {
    return this.close();
  }
}

// ---- values JSON cannot carry --------------------------------------------------
//
// Every value crosses to the engine as JSON text, where NaN and ±Infinity
// become null and an Invalid Date a NaN time: read as "not given", they
// would silently date a message now, drop a bound or pick thread "main".
// So every public method of Memory (and open) first walks its arguments and
// refuses a non-finite number or an Invalid Date with InvalidInputError
// naming the method and the field: one place, for every call.

/** The path of the first value of `value` JSON cannot carry, or null. */
function nonFinitePath(value, path, seen, depth) {
  if (typeof value === "number") return Number.isFinite(value) ? null : [path, String(value)];
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? [path, "Invalid Date"] : null;
  if (value === null || typeof value !== "object" || depth > 64 || seen.has(value)) return null;
  // Only plain objects and arrays are JSON here: stores, models, clocks,
  // bytes, Blobs and streams are the host's own objects.
  const proto = Object.getPrototypeOf(value);
  const plain = Array.isArray(value) || proto === Object.prototype || proto === null;
  if (!plain) return null;
  seen.add(value);
  for (const [key, v] of Object.entries(value)) {
    const at = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    const found = nonFinitePath(v, at, seen, depth + 1);
    if (found) return found;
  }
  return null;
}

/** InvalidInputError for the first argument of `method` JSON cannot carry, or null. */
export function unrepresentable(method, args) {
  const seen = new Set();
  for (let i = 0; i < args.length; i++) {
    const found = nonFinitePath(args[i], "", seen, 0);
    if (found) {
      const field = found[0] || `argument ${i + 1}`;
      return new InvalidInputError(`${method}: ${field} is ${found[1]}: give a finite number or a valid Date, or leave it out`);
    }
  }
  return null;
}

/** Methods that return their result (or throw) rather than a promise. */
const SYNC_METHODS = new Set(["on", "off", "noteTool", "free"]);

for (const name of Object.getOwnPropertyNames(Memory.prototype)) {
  const method = Object.getOwnPropertyDescriptor(Memory.prototype, name).value;
  // (exportParts, a generator, checks its one number itself.)
  if (name === "constructor" || typeof method !== "function" || method.constructor?.name === "AsyncGeneratorFunction") continue;
  Memory.prototype[name] = {
    [name](...args) {
      const refused = unrepresentable(name, args);
      if (refused) {
        if (SYNC_METHODS.has(name)) throw refused;
        return Promise.reject(refused);
      }
      return method.apply(this, args);
    },
  }[name];
}
for (const name of ["open", "openSalvage"]) {
  const method = Memory[name];
  Memory[name] = {
    [name](...args) {
      // `deadlines` stay in JavaScript (Infinity is documented as "none"):
      // every other option is checked.
      const [options, ...rest] = args;
      const crossing =
        options !== null && typeof options === "object" && "deadlines" in options
          ? [{ ...options, deadlines: undefined }, ...rest]
          : args;
      const refused = unrepresentable(name, crossing);
      return refused ? Promise.reject(refused) : method.apply(this, args);
    },
  }[name];
}
