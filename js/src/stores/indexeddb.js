// A store over IndexedDB, for browsers. One database per name, one object
// store of string keys to Uint8Array values (IndexedDB keeps them natively;
// string values that engram wrote before values became bytes read back as
// their UTF-8). writeIf runs in one readwrite transaction: two tabs writing
// the same memory cannot interleave.

import { asBytes, ownBytes, sameBytes } from "./bytes.js";

const promised = (request) =>
  new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });

const done = (tx) =>
  new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error("IndexedDB transaction aborted"));
  });

/**
 * A store in the IndexedDB database `name` (object store `storeName`,
 * default "engram"). `options.indexedDB` overrides the global factory.
 * `close()` closes the connection.
 */
export function indexedDBStore(name = "engram", options = {}) {
  const storeName = options.storeName ?? "engram";
  const factory = options.indexedDB ?? globalThis.indexedDB;
  if (!factory) throw new TypeError("indexedDBStore: no IndexedDB here (browsers only; use sqliteStore in Node)");
  let opening = null;
  const db = () =>
    (opening ??= new Promise((resolve, reject) => {
      const request = factory.open(name, 1);
      request.onupgradeneeded = () => {
        if (!request.result.objectStoreNames.contains(storeName)) request.result.createObjectStore(storeName);
      };
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
      request.onblocked = () => reject(new Error(`IndexedDB ${name} is blocked by another connection`));
    }));

  async function run(mode, fn) {
    const tx = (await db()).transaction(storeName, mode);
    const finished = done(tx);
    const result = await fn(tx.objectStore(storeName));
    await finished;
    return result;
  }

  return {
    get: (key) => run("readonly", async (s) => asBytes(await promised(s.get(key)))),
    /** The values at `keys`, in order (null where absent), in one transaction. */
    getMany: (keys) =>
      run("readonly", async (s) => {
        // Every request is issued before the first await: the transaction stays active.
        const requests = keys.map((key) => promised(s.get(key)));
        return (await Promise.all(requests)).map(asBytes);
      }),
    put: (key, value) => run("readwrite", (s) => void s.put(ownBytes(value), key)),
    delete: (key) => run("readwrite", (s) => void s.delete(key)),
    list: (prefix) =>
      run("readonly", async (s) => {
        const keys = await promised(s.getAllKeys(IDBKeyRange.bound(prefix, `${prefix}\uffff`)));
        return keys.filter((k) => typeof k === "string" && k.startsWith(prefix));
      }),
    /** Applies `writes` in one readwrite transaction, only if `guard` holds `expected` (compared by content). */
    writeIf: (guard, expected, writes) =>
      run("readwrite", async (s) => {
        // Every request is issued before this callback returns to the event
        // loop, so the transaction stays active; the writes are queued only
        // when the guard matches.
        const current = asBytes(await promised(s.get(guard)));
        if (!sameBytes(current, asBytes(expected))) return false;
        for (const [key, value] of writes) {
          if (value === null) s.delete(key);
          else s.put(ownBytes(value), key);
        }
        return true;
      }),
    async close() {
      if (opening) (await opening).close();
      opening = null;
    },
  };
}
