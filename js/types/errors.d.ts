// Types of "engram/errors" (src/errors.js): only what that module exports.
export {
  EngramError,
  InvalidInputError,
  StoreError,
  ModelError,
  CorruptError,
  UnsupportedVersionError,
  BusyError,
  ClosedError,
  PackagingError,
  toEngramError,
  type ErrorCode,
} from "../index.js";
