// Types of "engram/function" (src/models/function.js): only what that module exports.
export { functionModel, hashEmbed, type Model, type TaskRequest, type CallOptions } from "../index.js";
