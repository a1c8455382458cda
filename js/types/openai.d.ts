// Types of "engram/openai" (src/models/openai.js): only what that module exports.
export {
  openAIModel,
  MAX_TOKENS,
  DEFAULT_CONCURRENCY,
  type OpenAIModel,
  type OpenAIModelOptions,
  type FormatFallback,
  type FetchLike,
  type Model,
} from "../index.js";
