// The text of a message's content as the agent frameworks give it (the
// Agents SDK's items, LangChain's messages): a string, or a list of parts
// of which engram keeps the text ones. Shared by src/agents.js and
// src/langchain.js.

import { InvalidInputError } from "./errors.js";

/**
 * The text of `content`: a string, or parts (plain strings, `text`,
 * `input_text`, `output_text`, `refusal`) joined. Any other part throws
 * InvalidInputError naming `what`: engram keeps text.
 */
export function textOf(content, what) {
  if (typeof content === "string") return content;
  if (content == null) return "";
  if (!Array.isArray(content)) throw new InvalidInputError(`${what}: content must be a string or a list of parts`);
  return content
    .map((part) => {
      if (typeof part === "string") return part;
      if (part?.type === "input_text" || part?.type === "output_text" || part?.type === "text") return String(part.text ?? "");
      if (part?.type === "refusal") return String(part.refusal ?? "");
      throw new InvalidInputError(`${what}: a ${JSON.stringify(part?.type)} part cannot be kept (engram keeps text)`);
    })
    .join("");
}
