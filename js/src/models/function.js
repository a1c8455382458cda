// A model from plain functions: for scripted tests, replays, and hosts that
// route engram's tasks to their own LLM client.

/**
 * Deterministic word-hash vectors (FNV-1a of words and their trigrams,
 * L2-normalised). Texts sharing words are similar; nothing else is. Good for
 * tests and demos, not for real recall: give a real embedder there.
 */
export function hashEmbed(texts, dimension = 64) {
  return texts.map((text) => {
    const v = new Float32Array(dimension);
    const add = (feature, w) => {
      let h = 0x811c9dc5;
      for (let i = 0; i < feature.length; i++) h = Math.imul(h ^ feature.charCodeAt(i), 0x01000193) >>> 0;
      v[h % dimension] += (h & 1 ? -1 : 1) * w;
    };
    for (const word of text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean)) {
      add(word, 1);
      const padded = `#${word}#`;
      for (let i = 0; i + 3 <= padded.length; i++) add(padded.slice(i, i + 3), 0.4);
    }
    const norm = Math.hypot(...v);
    if (norm > 0) for (let i = 0; i < dimension; i++) v[i] /= norm;
    else v[0] = 1;
    return Array.from(v);
  });
}

/**
 * A model whose completions come from `complete(request)`: it receives
 * `{ task, system, content, schema, attempt }` and returns the answer as JSON
 * text or as an object (stringified), directly or as a Promise.
 * `options.embed(texts)` returns one vector per text (default: hashEmbed).
 * Both also get `{ signal }`, which the memory aborts at its deadline;
 * `options.countTokens(text)` counts tokens synchronously (default: the
 * engine's estimate).
 */
export function functionModel(complete, options = {}) {
  if (typeof complete !== "function") throw new TypeError("functionModel(complete): complete must be a function");
  const { embed = (texts) => hashEmbed(texts), countTokens } = options;
  const model = {
    async complete(request, options) {
      const answer = await complete(request, options);
      return typeof answer === "string" ? answer : JSON.stringify(answer);
    },
    embed: (texts, options) => embed(texts, options),
  };
  if (typeof countTokens === "function") model.countTokens = (text) => countTokens(text);
  return model;
}
