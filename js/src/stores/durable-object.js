// A store over a worker's transactional durable storage (a Cloudflare-style
// Durable Object's `state.storage`, also what workerd and miniflare run
// locally). writeIf runs inside `storage.transaction`, so the engine's
// compare-and-set on the log head holds however many requests or instances
// write the memory.
//
// Values are Uint8Arrays, which durable storage keeps natively (structured
// clone). String values that engram wrote before values became bytes read
// back as their UTF-8, chunked ones included.
//
// Durable storage caps one value (128 KiB on key-value storage); engram's
// log segments can exceed it, so long values are split into chunks kept
// under keys outside every engram prefix, and joined again on read, inside
// one transaction either way.

import { asBytes, ownBytes, sameBytes } from "./bytes.js";

const CHUNK = 64 * 1024; // bytes: well under the 128 KiB cap once serialised
const BATCH = 128; // keys per storage call
const MARK = "\u0001engram-chunk\u0001";
const chunkKey = (key, i) => `${MARK}${key}\u0001${i}`;
const chunked = (v) => v !== null && typeof v === "object" && Number.isInteger(v.engramChunks);

function plain(key, v) {
  try {
    return asBytes(v);
  } catch {
    throw new Error(`durable storage holds a value that is not bytes at ${key}`);
  }
}

async function read(s, key) {
  const v = await s.get(key);
  if (!chunked(v)) return plain(key, v);
  const keys = Array.from({ length: v.engramChunks }, (_, i) => chunkKey(key, i));
  const parts = [];
  for (let i = 0; i < keys.length; i += BATCH) {
    const got = await s.get(keys.slice(i, i + BATCH));
    for (const k of keys.slice(i, i + BATCH)) {
      const part = got.get(k);
      if (part === undefined || part === null) throw new Error(`durable storage lost chunk ${k}`);
      parts.push(part);
    }
  }
  // Chunks written before values became bytes are pieces of one string.
  if (parts.every((p) => typeof p === "string")) return asBytes(parts.join(""));
  const bytes = parts.map((p) => plain(key, p));
  const out = new Uint8Array(bytes.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of bytes) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

async function write(s, key, value) {
  const old = await s.get(key);
  const oldChunks = chunked(old) ? old.engramChunks : 0;
  let chunks = 0;
  if (value === null) {
    await s.delete(key);
  } else {
    const bytes = asBytes(value);
    if (bytes.byteLength <= CHUNK) {
      await s.put(key, ownBytes(bytes));
    } else {
      chunks = Math.ceil(bytes.byteLength / CHUNK);
      for (let i = 0; i < chunks; i += BATCH) {
        const entries = {};
        for (let j = i; j < Math.min(chunks, i + BATCH); j++) entries[chunkKey(key, j)] = bytes.slice(j * CHUNK, (j + 1) * CHUNK);
        await s.put(entries);
      }
      await s.put(key, { engramChunks: chunks });
    }
  }
  const stale = [];
  for (let i = chunks; i < oldChunks; i++) stale.push(chunkKey(key, i));
  for (let i = 0; i < stale.length; i += BATCH) await s.delete(stale.slice(i, i + BATCH));
}

/** A store over durable storage (`this.state.storage` / `ctx.storage` in a Durable Object). */
export function durableObjectStore(storage) {
  if (!storage || typeof storage.transaction !== "function") {
    throw new TypeError("durableObjectStore needs a Durable Object's transactional storage (state.storage)");
  }
  let calls = 0;
  return {
    async get(key) {
      calls++;
      const v = await storage.get(key);
      // Plain values need no transaction; chunks are read in one.
      if (!chunked(v)) return plain(key, v);
      return storage.transaction((t) => read(t, key));
    },
    /** The values at `keys`, in order (null where absent): one storage call a batch of 128. */
    async getMany(keys) {
      calls++;
      const out = [];
      for (let i = 0; i < keys.length; i += BATCH) {
        const batch = keys.slice(i, i + BATCH);
        const got = await storage.get(batch);
        for (const key of batch) {
          const v = got.get(key);
          out.push(chunked(v) ? await storage.transaction((t) => read(t, key)) : plain(key, v));
        }
      }
      return out;
    },
    put: (key, value) => (calls++, storage.transaction((t) => write(t, key, value))),
    delete: (key) => (calls++, storage.transaction((t) => write(t, key, null))),
    async list(prefix) {
      calls++;
      const found = await storage.list({ prefix });
      return [...found.keys()].filter((k) => !k.startsWith(MARK));
    },
    /** Applies `writes` in one storage transaction, only if `guard` holds `expected` (compared by content). */
    writeIf: (guard, expected, writes) => (
      calls++,
      storage.transaction(async (t) => {
        if (!sameBytes(await read(t, guard), asBytes(expected))) return false;
        for (const [key, value] of writes) await write(t, key, value);
        return true;
      })
    ),
    /** Calls the engine made to the store (get, getMany, put, delete, list, writeIf): its trips to storage. */
    get roundTrips() {
      return calls;
    },
  };
}
