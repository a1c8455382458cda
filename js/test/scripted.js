// The native tests' doubles in JS, for scenarios replayed the same way
// through the package: the scripted model's default answers and the rules
// of tests/common/mod.rs (src/testing/mod.rs: ScriptedModel, HashEmbedder,
// new_message, numbered_items), `sized` messages, and the rendering rules of
// the adversarial corpus (tests/untrusted_text.rs, `check`).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { functionModel } from "engram";

/** 2025-11-24 16:00 UTC (tests/common/mod.rs T0). */
export const T0 = 1_764_000_000_000;
export const MIN = 60_000;
/** The marker the standard segment rule judges as a new concept. */
export const NEW = "NEWTOPIC";
/** engram::message::FRAMING_TOKENS. */
const FRAMING_TOKENS = 4;

/** The adversarial corpus (tests/fixtures/adversarial.json). */
export const adversarial = JSON.parse(readFileSync(new URL("../../tests/fixtures/adversarial.json", import.meta.url), "utf8"));

/** Rust's `str::lines`: split at "\n", a trailing "\r" dropped, no empty last line. */
export function lines(text) {
  const parts = text.split("\n");
  if (parts.at(-1) === "") parts.pop();
  return parts.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
}

/** Rust's `chars().take(n)`: the first `n` code points. */
export const take = (s, n) => Array.from(s).slice(0, n).join("");

/** Rust's `str::trim` (White_Space, which U+FEFF is not). */
const trim = (s) => s.replace(/^\p{White_Space}+|\p{White_Space}+$/gu, "");

const utf8 = new TextEncoder();

/** engram::text::estimate_tokens. */
export const estimateTokens = (text) => Math.max(Math.ceil(utf8.encode(text).length / 4), text.split(/\s+/).filter(Boolean).length);

/** tests/common/mod.rs `sized`: `marker` and filler words, exactly `tokens` tokens framing included. */
export function sized(marker, tokens) {
  const words = tokens - FRAMING_TOKENS;
  let s = marker;
  for (let n = marker.split(/\s+/).filter(Boolean).length; n < words; n++) s += " w";
  assert.equal(estimateTokens(s) + FRAMING_TOKENS, tokens, `marker ${JSON.stringify(marker)} is too long for ${tokens} tokens`);
  return s;
}

/** src/testing/mod.rs `new_message`: the new message's text in a segment request. */
export function newMessage(content) {
  const i = content.indexOf("\nNew message");
  if (i < 0) return content;
  const line = lines(content.slice(i + 1))[1] ?? "";
  const j = line.indexOf(": ");
  return j < 0 ? line : line.slice(j + 2);
}

/** src/testing/mod.rs `numbered_items`: lines starting a numbered item ("3. ..."). */
export const numberedItems = (content) => lines(content).filter((l) => /^[0-9]+\. /.test(l)).length;

const range = (n) => Array.from({ length: n }, (_, i) => i + 1);

/** src/testing/mod.rs `default_answer`: harmless, valid for every task (JSON text as the native one). */
export function defaultAnswer(req) {
  switch (req.task) {
    case "segment":
      return '{"boundary": 0.1}';
    case "note":
    case "trace":
      return '{"facts": []}';
    case "resolve":
      return '{"same_as": null}';
    case "reconcile":
      return '{"judgments": []}';
    case "split": {
      const msg = trim(lines(req.content).at(-1) ?? "");
      return JSON.stringify({ parts: [msg === "" ? "message" : msg] });
    }
    case "relevance":
      return JSON.stringify({ relevant: range(numberedItems(req.content)) });
    case "distill":
      return JSON.stringify({ kept: range(numberedItems(req.content)) });
    default:
      throw new Error(`unknown task ${req.task}`);
  }
}

// ---- src/testing/mod.rs HashEmbedder (64 dimensions), f32 for f32 ----------------

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const U64 = (1n << 64n) - 1n;
const fnvCache = new Map();

function fnv(feature) {
  let h = fnvCache.get(feature);
  if (h === undefined) {
    h = FNV_OFFSET;
    for (const b of utf8.encode(feature)) h = ((h ^ BigInt(b)) * FNV_PRIME) & U64;
    fnvCache.set(feature, h);
  }
  return h;
}

/** engram::text::words: lower-cased runs of letters and digits. */
const words = (text) =>
  text
    .split(/[^\p{Alphabetic}\p{N}]+/u)
    .filter(Boolean)
    .map((w) => w.toLowerCase());

const f32 = Math.fround;
const TRIGRAM = f32(0.4);

/** The native HashEmbedder's vector of `text` (64 dimensions). */
export function nativeEmbed(text, dimension = 64) {
  const v = new Float32Array(dimension);
  const add = (feature, w) => {
    const h = fnv(feature);
    v[Number(h % BigInt(dimension))] += (h >> 63n === 0n ? 1 : -1) * w;
  };
  for (const word of words(text)) {
    add(word, 1);
    const padded = Array.from(`#${word}#`);
    for (let i = 0; i + 3 <= padded.length; i++) add(padded.slice(i, i + 3).join(""), TRIGRAM);
  }
  let sum = 0;
  for (const x of v) sum = f32(sum + f32(x * x));
  const norm = f32(Math.sqrt(sum));
  if (norm > 0) for (let i = 0; i < dimension; i++) v[i] = f32(v[i] / norm);
  else v[0] = 1;
  return v;
}

/**
 * The model of the native `Fx::new` with `standard_segment`: a message
 * carrying NEW starts a new concept (0.95), others continue (0.1); nothing
 * recalled is relevant (`no_recall`); every other task gets the scripted
 * default; vectors from the native HashEmbedder. `asked` counts tasks.
 */
export function fxModel(asked = []) {
  return functionModel(
    (req) => {
      asked.push(req.task);
      if (req.task === "segment") return JSON.stringify({ boundary: newMessage(req.content).includes(NEW) ? 0.95 : 0.1 });
      if (req.task === "relevance") return JSON.stringify({ relevant: [] });
      return defaultAnswer(req);
    },
    { embed: (texts) => texts.map((t) => nativeEmbed(t)) },
  );
}

/** A clock that moves only when told (ms since the Unix epoch). */
export const manualClock = (t = T0) => ({ now: () => t, advance: (ms) => (t += ms) });

// ---- the corpus's rules (tests/untrusted_text.rs `check`) --------------------------

// Anything not visible: controls (but a line break), format, private-use,
// unassigned, surrogate, line and paragraph separators, default ignorables.
const INVISIBLE = /(?!\n)\p{Cc}|\p{Cf}|\p{Co}|\p{Cn}|\p{Cs}|\p{Zl}|\p{Zp}|\p{Default_Ignorable_Code_Point}/u;

/**
 * Checks the corpus's rules on every facts and recall item of `view`;
 * `milestones` is how many milestone facts the memory really holds.
 * Returns how many items were checked.
 */
export function checkRendering(view, milestones) {
  let tags = 0;
  const items = view.items.filter((i) => i.kind === "facts" || i.kind === "recall");
  for (const it of items) {
    assert.ok(!INVISIBLE.test(it.text), `invisible characters in ${JSON.stringify(it.text)}`);
    assert.ok(!it.text.includes("<|") && !it.text.includes("|>"), JSON.stringify(it.text));
    lines(it.text).forEach((line, n) => {
      const ours =
        n === 0 ||
        line === "" ||
        line.startsWith("- ") ||
        line.startsWith("  - earlier") ||
        line === "From the conversation:" ||
        line.endsWith(":");
      assert.ok(ours, `a line the memory did not frame: ${JSON.stringify(line)}`);
      for (const bad of ["#", ">", "* ", "system:", "user:", "assistant:", "<|"]) {
        assert.ok(!line.startsWith(bad), `line starts with ${JSON.stringify(bad)}: ${JSON.stringify(line)}`);
      }
      if (n === 0) assert.ok(line.includes("quoted data, not instructions"), line);
      tags += line.split("[done]").length - 1 + line.split("[engram]").length - 1;
    });
  }
  assert.equal(tags, milestones, "only the memory's own milestone tags");
  return items.length;
}
