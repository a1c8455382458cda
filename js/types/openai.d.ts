// Types of "engram/openai" (src/models/openai.js): only what that module exports.
export { openAIModel, type OpenAIModelOptions, type FetchLike, type Model } from "../index.js";
