#!/usr/bin/env node
// engram-mcp: one engram memory served over the Model Context Protocol, on
// stdio (the default: a client spawns it) or Streamable HTTP (`--http`,
// 127.0.0.1 by default; a bearer token from ENGRAM_MCP_TOKEN, required
// when bound off loopback and checked whenever it is set). The memory is
// `--namespace` in `--store` (a SQLite file, the default
// ~/.engram/engram.db, or a postgres:// URL), on the model of
// ENGRAM_MODEL_* (an OpenAI-compatible endpoint) or the offline model.
// `engram-mcp --help` lists every flag and variable; docs/mcp.md is the
// guide. Needs the optional peer dependencies @modelcontextprotocol/sdk and
// zod (and better-sqlite3 or pg for its store).

import { createServer } from "node:http";
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { timingSafeEqual, createHash } from "node:crypto";
import { parseArgs } from "node:util";

const HELP = `engram-mcp: engram's long-term memory as an MCP server.

Usage: engram-mcp [--namespace NAME] [--store PATH|postgres://URL] [--http [--host H] [--port P]]

  --namespace NAME   the memory (ENGRAM_NAMESPACE; default "default")
  --store WHERE      a SQLite file path, or a postgres:// URL (ENGRAM_STORE;
                     default ~/.engram/engram.db)
  --config JSON      engram config overrides, JSON (ENGRAM_CONFIG)
  --http             serve Streamable HTTP at /mcp instead of stdio (ENGRAM_MCP_TRANSPORT=http)
  --host HOST        address to bind (ENGRAM_MCP_HOST; default 127.0.0.1)
  --port PORT        port (ENGRAM_MCP_PORT; default 8765; 0: any free port)

  ENGRAM_MCP_TOKEN   bearer token HTTP clients must send (Authorization:
                     Bearer ...); required when --host is not loopback
  ENGRAM_MODEL       chat model of an OpenAI-compatible endpoint; unset: the
                     built-in offline model (no network; for trying it out)
  ENGRAM_MODEL_BASE_URL, ENGRAM_MODEL_API_KEY (or OPENAI_API_KEY),
  ENGRAM_EMBEDDING_MODEL   the endpoint, its key, its embedding model
`;

class UsageError extends Error {}

/** The settings from `argv` and `env`: flags win over variables. */
function settingsOf(argv, env) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        namespace: { type: "string" },
        store: { type: "string" },
        config: { type: "string" },
        http: { type: "boolean" },
        host: { type: "string" },
        port: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (e) {
    throw new UsageError(e.message);
  }
  const v = parsed;
  const http = v.http ?? (env.ENGRAM_MCP_TRANSPORT ?? "stdio") === "http";
  if (!v.http && !["stdio", "http", undefined].includes(env.ENGRAM_MCP_TRANSPORT)) {
    throw new UsageError(`ENGRAM_MCP_TRANSPORT must be "stdio" or "http", got ${JSON.stringify(env.ENGRAM_MCP_TRANSPORT)}`);
  }
  const portText = v.port ?? env.ENGRAM_MCP_PORT ?? "8765";
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0..65535, got ${JSON.stringify(portText)}`);
  let config;
  const configText = v.config ?? env.ENGRAM_CONFIG;
  if (configText) {
    try {
      config = JSON.parse(configText);
    } catch (e) {
      throw new UsageError(`--config is not JSON: ${e.message}`);
    }
  }
  const host = v.host ?? env.ENGRAM_MCP_HOST ?? "127.0.0.1";
  const token = env.ENGRAM_MCP_TOKEN || undefined;
  if (http && !isLoopback(host) && !token) {
    throw new UsageError(`--host ${host} is not a loopback address: set ENGRAM_MCP_TOKEN so that only clients holding it are served`);
  }
  return {
    help: v.help ?? false,
    namespace: v.namespace ?? env.ENGRAM_NAMESPACE ?? "default",
    store: v.store ?? env.ENGRAM_STORE ?? join(homedir(), ".engram", "engram.db"),
    config,
    http,
    host,
    port,
    token,
    model: env.ENGRAM_MODEL
      ? {
          model: env.ENGRAM_MODEL,
          baseURL: env.ENGRAM_MODEL_BASE_URL,
          apiKey: env.ENGRAM_MODEL_API_KEY ?? env.OPENAI_API_KEY,
          embeddingModel: env.ENGRAM_EMBEDDING_MODEL,
        }
      : null,
  };
}

/** Whether `host` names this machine only. */
function isLoopback(host) {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

async function importPeers() {
  try {
    return await import("./server.js");
  } catch (e) {
    if (e?.code === "ERR_MODULE_NOT_FOUND" && /@modelcontextprotocol\/sdk|zod/.test(e.message)) {
      throw new UsageError("engram-mcp needs the MCP SDK beside engram: npm install @modelcontextprotocol/sdk zod");
    }
    throw e;
  }
}

/** The store `where` names, with a close() for shutdown. */
async function openStore(where) {
  if (/^postgres(ql)?:\/\//.test(where)) {
    const [{ postgresStore }, pg] = await Promise.all([import("../stores/postgres.js"), import("pg")]).catch((e) => {
      throw new UsageError(`a postgres:// store needs pg beside engram: npm install pg (${e.message})`);
    });
    const pool = new (pg.default ?? pg).Pool({ connectionString: where });
    return { store: postgresStore(pool), close: () => pool.end() };
  }
  const { sqliteStore } = await import("../stores/sqlite.js");
  if (where !== ":memory:") mkdirSync(dirname(where), { recursive: true });
  const store = sqliteStore(where);
  return { store, close: () => store.close() };
}

async function openMemory(settings) {
  const engram = await import("../../node.js");
  const { store, close } = await openStore(settings.store);
  const model = settings.model ? engram.openAIModel(settings.model) : undefined;
  const memory = await engram.Memory.open({
    namespace: settings.namespace,
    store,
    ...(model ? { model } : {}),
    ...(settings.config ? { config: settings.config } : {}),
  });
  memory.on("degraded", (d) => console.error(`engram-mcp: ${d.task} degraded (${d.error}): ${d.effect}`));
  return {
    memory,
    close: async () => {
      await memory.close();
      await close();
    },
  };
}

const digest = (s) => createHash("sha256").update(s).digest();

/** Whether the request carries `Authorization: Bearer <token>` (compared in constant time). */
function authorized(req, token) {
  const header = req.headers.authorization ?? "";
  const m = /^Bearer (.+)$/i.exec(header);
  return m !== null && timingSafeEqual(digest(m[1]), digest(token));
}

/** Serves Streamable HTTP at /mcp, statelessly: each request its own McpServer over the one memory. */
async function serveHttp(settings, memory, createMcpServer) {
  const { StreamableHTTPServerTransport } = await import("@modelcontextprotocol/sdk/server/streamableHttp.js");
  const http = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname !== "/mcp") {
      res.writeHead(404, { "content-type": "text/plain" }).end("engram-mcp serves /mcp\n");
      return;
    }
    if (settings.token && !authorized(req, settings.token)) {
      res
        .writeHead(401, { "content-type": "application/json", "www-authenticate": 'Bearer realm="engram-mcp"' })
        .end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "unauthorized: a wrong or missing bearer token" }, id: null }));
      return;
    }
    const server = createMcpServer(memory);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
      ...(isLoopback(settings.host)
        ? { enableDnsRebindingProtection: true, allowedHosts: loopbackHosts(http.address().port) }
        : {}),
    });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (e) {
      console.error("engram-mcp: request failed:", e);
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" }).end("internal error\n");
    }
  });
  await new Promise((resolve, reject) => {
    http.once("error", reject);
    http.listen(settings.port, settings.host, resolve);
  });
  const { port } = http.address();
  const shown = settings.host.includes(":") && !settings.host.startsWith("[") ? `[${settings.host}]` : settings.host;
  console.error(`engram-mcp: listening on http://${shown}:${port}/mcp (namespace ${JSON.stringify(settings.namespace)})`);
  return () => new Promise((resolve) => http.close(() => resolve()));
}

function loopbackHosts(port) {
  return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
}

async function main(argv = process.argv.slice(2), env = process.env) {
  const settings = settingsOf(argv, env);
  if (settings.help) {
    process.stdout.write(HELP);
    return;
  }
  const { createMcpServer } = await importPeers();
  const { memory, close } = await openMemory(settings);
  let stop;
  if (settings.http) {
    stop = await serveHttp(settings, memory, createMcpServer);
  } else {
    const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
    const server = createMcpServer(memory);
    const transport = new StdioServerTransport();
    await server.connect(transport);
    stop = () => server.close();
    process.stdin.once("end", () => shutdown());
  }
  let stopping = false;
  async function shutdown() {
    if (stopping) return;
    stopping = true;
    try {
      await stop();
      await close();
    } finally {
      process.exit(0);
    }
  }
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
}

main().catch((e) => {
  console.error(`engram-mcp: ${e instanceof UsageError ? e.message : (e?.stack ?? e)}`);
  if (e instanceof UsageError) console.error("engram-mcp --help lists the flags");
  process.exit(e instanceof UsageError ? 2 : 1);
});
