// Store values are bytes (Uint8Array). Helpers the built-in stores share.

const encoder = new TextEncoder();

/**
 * A value read back from storage as a Uint8Array, or null when absent.
 * Text (what engram wrote before values became bytes) reads as its UTF-8;
 * an ArrayBuffer or any other view as its bytes.
 */
export function asBytes(value) {
  if (value === undefined || value === null) return null;
  if (value instanceof Uint8Array) return value;
  if (typeof value === "string") return encoder.encode(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`a stored value is a ${typeof value}, not bytes`);
}

/** Whether two values (Uint8Array or null) hold the same bytes: by content, not identity. */
export function sameBytes(a, b) {
  if (a === null || b === null) return a === b;
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A value to keep: a Uint8Array that owns exactly its bytes (a copy when it is a view on more). */
export function ownBytes(value) {
  const v = asBytes(value);
  return v.byteOffset === 0 && v.byteLength === v.buffer.byteLength ? v : v.slice();
}
