# workerd configuration of the example, for the repository's own test: the
# worker, the engram package's modules under the names its imports resolve
# to, one SQLite-backed Durable Object class with on-disk storage, and an
# HTTP socket. To deploy, use wrangler.jsonc (README.md). Run it with
#   workerd serve config.capnp --directory-path do-storage=/some/dir \
#     --socket-addr http=127.0.0.1:8787
# after scripts/build-js (it embeds js/pkg/web and js/pkg/offline). The test
# (js/test/worker.test.js) does exactly this.

using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "do-storage", disk = (writable = true)),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8787", http = (), service = "main")],
);

const worker :Workerd.Worker = (
  modules = [
    (name = "example-worker.js", esModule = embed "worker.js"),
    # `import ... from "engram"`: the package's `workerd` entry.
    (name = "engram", esModule = embed "../../worker.js"),
    (name = "src/index.js", esModule = embed "../../src/index.js"),
    (name = "src/memory.js", esModule = embed "../../src/memory.js"),
    (name = "src/errors.js", esModule = embed "../../src/errors.js"),
    (name = "src/models/function.js", esModule = embed "../../src/models/function.js"),
    (name = "src/models/openai.js", esModule = embed "../../src/models/openai.js"),
    (name = "src/models/offline.js", esModule = embed "../../src/models/offline.js"),
    (name = "src/stores/bytes.js", esModule = embed "../../src/stores/bytes.js"),
    (name = "src/stores/memory.js", esModule = embed "../../src/stores/memory.js"),
    (name = "src/stores/indexeddb.js", esModule = embed "../../src/stores/indexeddb.js"),
    (name = "src/stores/durable-object.js", esModule = embed "../../src/stores/durable-object.js"),
    (name = "pkg/web/engram.js", esModule = embed "../../pkg/web/engram.js"),
    (name = "pkg/web/engram_bg.wasm", wasm = embed "../../pkg/web/engram_bg.wasm"),
    (name = "pkg/offline/engram_offline.js", esModule = embed "../../pkg/offline/engram_offline.js"),
    (name = "pkg/offline/engram_offline_bg.wasm", wasm = embed "../../pkg/offline/engram_offline_bg.wasm"),
  ],
  compatibilityDate = "2026-01-01",
  # enableSql: SQLite-backed storage, as wrangler.jsonc's new_sqlite_classes migration asks of Cloudflare.
  durableObjectNamespaces = [(className = "UserMemory", uniqueKey = "engram-example-user-memory", enableSql = true)],
  durableObjectStorage = (localDisk = "do-storage"),
  bindings = [
    (name = "MEMORY", durableObjectNamespace = "UserMemory"),
    (name = "MODEL", text = "scripted"),
    # The shared secret of the example's authentication hook (a test value).
    (name = "API_TOKEN", text = "test-token"),
    (name = "CONFIG", text = "{\"snapshot_every\": 2, \"ceiling_tokens\": 100000, \"max_message_tokens\": 50000}"),
  ],
);
