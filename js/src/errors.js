// Errors of engram. The WebAssembly core rejects with a JS Error carrying a
// stable `code` (see Error::code in src/error.rs); toEngramError turns it into
// one of the subclasses below, so callers can `catch (e) { if (e instanceof
// StoreError) ... }` or switch on `e.code`.

/** Base class of every error engram throws. `code` is stable across hosts. */
export class EngramError extends Error {
  constructor(message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code ?? new.target.code ?? "internal";
  }
}

/** Bad input (message, id, config, namespace): fix it; the memory is unchanged. */
export class InvalidInputError extends EngramError {
  static code = "invalid-input";
}

/** The store failed: nothing of the call was written; retry when it is back. */
export class StoreError extends EngramError {
  static code = "store";
}

/**
 * The model failed on a step that cannot degrade (or on any step, with the
 * `strict` config): nothing was written; retry.
 */
export class ModelError extends EngramError {
  static code = "model";
}

/** Stored data cannot be read: restore from an export. */
export class CorruptError extends EngramError {
  static code = "corrupt";
}

/** Data written by a newer format version: upgrade engram. */
export class UnsupportedVersionError extends EngramError {
  static code = "unsupported-version";
}

/** Other hosts kept winning the write race: nothing was written; retry later. */
export class BusyError extends EngramError {
  static code = "busy";
}

/** The memory was freed: open it again. */
export class ClosedError extends EngramError {
  static code = "closed";
}

/**
 * The WebAssembly module trapped (a `WebAssembly.RuntimeError`, its
 * `cause`): the call that trapped rejects with it, and so does every later
 * call on every memory of that module instance, whose state can no longer
 * be trusted. What was committed before is in the store: load the module
 * again (a new process, worker or page) and open the memory again.
 */
export class TrappedError extends EngramError {
  static code = "trapped";
}

const BY_CODE = new Map(
  [
    InvalidInputError,
    StoreError,
    ModelError,
    CorruptError,
    UnsupportedVersionError,
    BusyError,
    ClosedError,
    TrappedError,
  ].map((c) => [c.code, c]),
);

/** Turns whatever the core (or a host object) threw into an EngramError. */
export function toEngramError(e) {
  if (e instanceof EngramError) return e;
  const code = e && typeof e === "object" && typeof e.code === "string" ? e.code : "internal";
  const message = e && typeof e === "object" && "message" in e ? String(e.message) : String(e);
  const Class = BY_CODE.get(code) ?? EngramError;
  return new Class(message, { code, cause: e });
}
