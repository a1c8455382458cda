// An in-memory store: for tests, demos, and a worker that keeps one memory
// per instance. Synchronous (the engine takes plain values as well as
// Promises). Two memories given the same store share it.

const sorted = (keys) => keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** A store in a Map. `store.data` is that Map (inspect or seed it). */
export function memoryStore(initial) {
  const data = new Map(initial instanceof Map ? initial : Object.entries(initial ?? {}));
  return {
    data,
    get: (key) => data.get(key) ?? null,
    put: (key, value) => void data.set(key, value),
    delete: (key) => void data.delete(key),
    list: (prefix) => sorted([...data.keys()].filter((k) => k.startsWith(prefix))),
    /** Applies `writes` ([key, value | null] pairs) only if `guard` holds `expected`. */
    writeIf(guard, expected, writes) {
      if ((data.get(guard) ?? null) !== expected) return false;
      for (const [key, value] of writes) {
        if (value === null) data.delete(key);
        else data.set(key, value);
      }
      return true;
    },
  };
}
