// Errors of engram. The WebAssembly core rejects with a JS Error carrying a
// stable `code` (see Error::code in src/base/error.rs); toEngramError turns it into
// one of the subclasses below, so callers can `catch (e) { if (e instanceof
// StoreError) ... }` or switch on `e.code`.

/** Base class of every error engram throws. `code` is stable across hosts. */
export class EngramError extends Error {
  static name = "EngramError"; // kept when a bundler minifies class names
  constructor(message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code ?? new.target.code ?? "internal";
  }
}

/** Bad input (message, id, config, namespace): fix it; the memory is unchanged. */
export class InvalidInputError extends EngramError {
  static name = "InvalidInputError"; // kept when a bundler minifies class names
  static code = "invalid-input";
}

/** The store failed: nothing of the call was written; retry when it is back. */
export class StoreError extends EngramError {
  static name = "StoreError"; // kept when a bundler minifies class names
  static code = "store";
}

/**
 * The model failed on a step that cannot degrade (or on any step, with the
 * `strict` config): nothing was written; retry.
 */
export class ModelError extends EngramError {
  static name = "ModelError"; // kept when a bundler minifies class names
  static code = "model";
}

/** Stored data cannot be read: restore from an export. */
export class CorruptError extends EngramError {
  static name = "CorruptError"; // kept when a bundler minifies class names
  static code = "corrupt";
}

/** Data written by a newer format version: upgrade engram. */
export class UnsupportedVersionError extends EngramError {
  static name = "UnsupportedVersionError"; // kept when a bundler minifies class names
  static code = "unsupported-version";
}

/** Other hosts kept winning the write race: nothing was written; retry later. */
export class BusyError extends EngramError {
  static name = "BusyError"; // kept when a bundler minifies class names
  static code = "busy";
}

/** The memory was freed: open it again. */
export class ClosedError extends EngramError {
  static name = "ClosedError"; // kept when a bundler minifies class names
  static code = "closed";
}

/**
 * The package is not installed or bundled whole: its WebAssembly module
 * cannot be found or loaded (a bundler that dropped the entry file, a
 * `.wasm` not copied beside a bundle, a server answering HTML for it).
 * Nothing the caller passed is wrong: fix the build (see docs/javascript.md,
 * "Bundlers") or hand the module to `init(source)`.
 */
export class PackagingError extends EngramError {
  static name = "PackagingError"; // kept when a bundler minifies class names
  static code = "packaging";
}

/**
 * The WebAssembly module trapped (a `WebAssembly.RuntimeError`, its
 * `cause`): the call that trapped rejects with it, and so does every later
 * call on every memory of that module instance, whose state can no longer
 * be trusted. What was committed before is in the store: load the module
 * again (a new process, worker or page) and open the memory again.
 */
export class TrappedError extends EngramError {
  static name = "TrappedError"; // kept when a bundler minifies class names
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
    PackagingError,
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
