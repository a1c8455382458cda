// An in-memory store: for tests, demos, and a worker that keeps one memory
// per instance. Synchronous (the engine takes plain values as well as
// Promises). Two memories given the same store share it. Values are
// Uint8Arrays.

import { asBytes, sameBytes } from "./bytes.js";

const sorted = (keys) => keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/**
 * A store in a Map of Uint8Array values. `store.data` is that Map (inspect
 * or seed it; seeded strings are taken as their UTF-8).
 */
export function memoryStore(initial) {
  const entries = initial instanceof Map ? initial : Object.entries(initial ?? {});
  const data = new Map([...entries].map(([k, v]) => [k, asBytes(v)]));
  return {
    data,
    get: (key) => data.get(key) ?? null,
    /** The values at `keys`, in order (null where absent). */
    getMany: (keys) => keys.map((key) => data.get(key) ?? null),
    put: (key, value) => void data.set(key, asBytes(value)),
    delete: (key) => void data.delete(key),
    list: (prefix) => sorted([...data.keys()].filter((k) => k.startsWith(prefix))),
    /** Applies `writes` ([key, value | null] pairs) only if `guard` holds `expected` (compared by content). */
    writeIf(guard, expected, writes) {
      if (!sameBytes(asBytes(data.get(guard)), asBytes(expected))) return false;
      for (const [key, value] of writes) {
        if (value === null) data.delete(key);
        else data.set(key, asBytes(value));
      }
      return true;
    },
  };
}
