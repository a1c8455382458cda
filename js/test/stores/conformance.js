// The store conformance suite: what engram needs from every store, as plain
// async checks with no test framework, so the same file runs under
// `node --test` (stores.test.js: memory, SQLite, PostgreSQL) and inside
// workerd (a Durable Object runs it against its own storage).
//
// Each check takes `open()`, which returns a fresh handle on one shared,
// initially empty store (a second call: a second handle on the same data,
// as a second process or server would have), and throws on a violation.

const enc = new TextEncoder();
const bytes = (s) => enc.encode(s);

function fail(what) {
  throw new Error(`store conformance: ${what}`);
}

function eqBytes(got, want, what) {
  if (want === null) {
    if (got !== null && got !== undefined) fail(`${what}: expected no value, got ${got?.byteLength} bytes`);
    return;
  }
  if (!(got instanceof Uint8Array)) fail(`${what}: expected a Uint8Array, got ${Object.prototype.toString.call(got)}`);
  if (got.byteLength !== want.byteLength) fail(`${what}: expected ${want.byteLength} bytes, got ${got.byteLength}`);
  for (let i = 0; i < want.byteLength; i++) if (got[i] !== want[i]) fail(`${what}: byte ${i} differs`);
}

function eqList(got, want, what) {
  if (JSON.stringify(got) !== JSON.stringify(want)) fail(`${what}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
}

export const checks = {
  async "get of a missing key is null"(open) {
    const s = await open();
    eqBytes(await s.get("ns/missing"), null, "get missing");
  },

  async "put then get returns the same bytes, every byte value and empty included"(open) {
    const s = await open();
    const all = new Uint8Array(256).map((_, i) => i);
    await s.put("ns/all", all);
    await s.put("ns/empty", new Uint8Array(0));
    const big = new Uint8Array(1 << 20).map((_, i) => (i * 7919) & 255);
    await s.put("ns/big", big);
    eqBytes(await s.get("ns/all"), all, "all byte values");
    eqBytes(await s.get("ns/empty"), new Uint8Array(0), "empty value");
    eqBytes(await s.get("ns/big"), big, "1 MiB value");
    const other = await open();
    eqBytes(await other.get("ns/all"), all, "all byte values through a second handle");
  },

  async "getMany returns each key's bytes in the order asked, null where absent"(open) {
    const s = await open();
    if (typeof s.getMany !== "function") return "no getMany (optional: read key by key)";
    const big = new Uint8Array(200 * 1024).map((_, i) => (i * 31) & 255);
    await s.put("gm/b", bytes("bee"));
    await s.put("gm/a", bytes("ay"));
    await s.put("gm/big", big);
    await s.put("gm/empty", new Uint8Array(0));
    const got = await s.getMany(["gm/b", "gm/missing", "gm/a", "gm/big", "gm/empty", "gm/b"]);
    if (!Array.isArray(got) || got.length !== 6) fail(`getMany: expected 6 values, got ${JSON.stringify(got)}`);
    eqBytes(got[0], bytes("bee"), "getMany first");
    eqBytes(got[1] ?? null, null, "getMany missing");
    eqBytes(got[2], bytes("ay"), "getMany third");
    eqBytes(got[3], big, "getMany of a 200 KiB value");
    eqBytes(got[4], new Uint8Array(0), "getMany of an empty value");
    eqBytes(got[5], bytes("bee"), "getMany of a key asked twice");
    const none = await s.getMany([]);
    if (!Array.isArray(none) || none.length !== 0) fail(`getMany([]): expected [], got ${JSON.stringify(none)}`);
    const many = Array.from({ length: 200 }, (_, i) => `gm/n/${String(i).padStart(3, "0")}`);
    for (const k of many.slice(0, 100)) await s.put(k, bytes(k));
    const all = await s.getMany(many);
    for (let i = 0; i < 200; i++) eqBytes(all[i] ?? null, i < 100 ? bytes(many[i]) : null, `getMany of 200 keys, key ${i}`);
  },

  async "put overwrites and delete removes, a missing key included"(open) {
    const s = await open();
    await s.put("ns/k", bytes("one"));
    await s.put("ns/k", bytes("two"));
    eqBytes(await s.get("ns/k"), bytes("two"), "overwritten");
    await s.delete("ns/k");
    eqBytes(await s.get("ns/k"), null, "deleted");
    await s.delete("ns/never");
  },

  async "list returns exactly the keys under a prefix, in byte order"(open) {
    const s = await open();
    const keys = ["a/log/00000002", "a/log/00000010", "a/head", "a/log/00000001", "a_b/x", "ab/x", "a%/x", "b/head", "a/Z", "a/é"];
    for (const k of keys) await s.put(k, bytes(k));
    eqList(await s.list("a/"), ["a/Z", "a/head", "a/log/00000001", "a/log/00000002", "a/log/00000010", "a/é"], "list a/");
    eqList(await s.list("a/log/"), ["a/log/00000001", "a/log/00000002", "a/log/00000010"], "list a/log/");
    // `_` and `%` are not wildcards.
    eqList(await s.list("a_"), ["a_b/x"], "list a_");
    eqList(await s.list("a%"), ["a%/x"], "list a%");
    eqList(await s.list("c/"), [], "list of an absent prefix");
  },

  async "writeIf applies every write when the guard holds the expected value"(open) {
    const s = await open();
    await s.put("m/head", bytes("h1"));
    await s.put("m/old", bytes("old"));
    const ok = await s.writeIf("m/head", bytes("h1"), [
      ["m/log/1", bytes("entry")],
      ["m/old", null],
      ["m/head", bytes("h2")],
    ]);
    if (ok !== true) fail(`writeIf with the right expected value returned ${ok}`);
    eqBytes(await s.get("m/head"), bytes("h2"), "head after writeIf");
    eqBytes(await s.get("m/log/1"), bytes("entry"), "written key");
    eqBytes(await s.get("m/old"), null, "deleted key");
  },

  async "writeIf changes nothing when the guard holds another value"(open) {
    const s = await open();
    await s.put("m/head", bytes("h2"));
    const ok = await s.writeIf("m/head", bytes("h1"), [
      ["m/log/2", bytes("entry")],
      ["m/head", bytes("h3")],
    ]);
    if (ok !== false) fail(`writeIf with a stale expected value returned ${ok}`);
    eqBytes(await s.get("m/head"), bytes("h2"), "head unchanged");
    eqBytes(await s.get("m/log/2"), null, "nothing written");
  },

  async "writeIf with no expected value creates a memory only once"(open) {
    const s = await open();
    const first = await s.writeIf("n/head", null, [
      ["n/log/1", bytes("first")],
      ["n/head", bytes("h1")],
    ]);
    if (first !== true) fail(`writeIf on an absent guard returned ${first}`);
    const second = await s.writeIf("n/head", null, [
      ["n/log/1", bytes("second")],
      ["n/head", bytes("h1'")],
    ]);
    if (second !== false) fail(`writeIf expecting absence on a present guard returned ${second}`);
    eqBytes(await s.get("n/log/1"), bytes("first"), "the first creation kept");
    eqBytes(await s.get("n/head"), bytes("h1"), "head of the first creation");
  },

  async "writeIf compares by content, and a guard it does not write stays as it was"(open) {
    const s = await open();
    await s.put("g/head", bytes("same"));
    if ((await s.writeIf("g/head", bytes("same"), [["g/x", bytes("x")]])) !== true) fail("a copy of the expected bytes did not match");
    eqBytes(await s.get("g/head"), bytes("same"), "guard left alone");
    if ((await s.writeIf("g/absent", null, [["g/y", bytes("y")]])) !== true) fail("an absent guard expected absent did not match");
    eqBytes(await s.get("g/absent"), null, "an absent guard not written stays absent");
    eqBytes(await s.get("g/y"), bytes("y"), "write under an absent guard");
    if ((await s.writeIf("g/head", bytes("same"), [["g/head", null]])) !== true) fail("writeIf deleting its guard");
    eqBytes(await s.get("g/head"), null, "guard deleted");
  },

  async "concurrent writeIf on one head: every increment lands exactly once"(open, options = {}) {
    const writers = options.writers ?? 4;
    const each = options.each ?? 25;
    const handles = [];
    for (let w = 0; w < writers; w++) handles.push(await open());
    const dec = new TextDecoder();
    let conflicts = 0;
    await Promise.all(
      handles.map(async (s, w) => {
        for (let i = 0; i < each; i++) {
          for (;;) {
            const cur = await s.get("c/head");
            const n = cur === null ? 0 : Number(dec.decode(cur));
            const next = bytes(String(n + 1));
            if (await s.writeIf("c/head", cur, [[`c/log/${String(n + 1).padStart(8, "0")}`, bytes(`${w}:${i}`)], ["c/head", next]])) break;
            conflicts++;
          }
        }
      }),
    );
    const s = handles[0];
    const total = writers * each;
    eqBytes(await s.get("c/head"), bytes(String(total)), "head after every increment");
    const log = await s.list("c/log/");
    if (log.length !== total) fail(`expected ${total} log entries, found ${log.length}`);
    const seen = new Set();
    for (const k of log) {
      const v = dec.decode(await s.get(k));
      if (seen.has(v)) fail(`increment ${v} landed twice`);
      seen.add(v);
    }
    return { conflicts };
  },
};

/** Runs every check against `open`, returning [{ name, ok, error?, detail? }]. */
export async function runConformance(open, options = {}) {
  const results = [];
  for (const [name, check] of Object.entries(checks)) {
    try {
      const detail = await check(open, options);
      results.push({ name, ok: true, detail });
    } catch (e) {
      results.push({ name, ok: false, error: String(e?.stack ?? e) });
    }
  }
  return results;
}
