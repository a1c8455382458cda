# workerd configuration of the store conformance suite's Durable Object run
# (js/test/stores.test.js starts it with --directory-path and --socket-addr).

using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "do-storage", disk = (writable = true)),
  ],
  sockets = [(name = "http", address = "127.0.0.1:8788", http = (), service = "main")],
);

const worker :Workerd.Worker = (
  modules = [
    (name = "conformance-worker.js", esModule = embed "worker.js"),
    (name = "conformance.js", esModule = embed "../conformance.js"),
    (name = "src/stores/durable-object.js", esModule = embed "../../../src/stores/durable-object.js"),
    (name = "src/stores/bytes.js", esModule = embed "../../../src/stores/bytes.js"),
  ],
  compatibilityDate = "2026-01-01",
  durableObjectNamespaces = [(className = "Conformance", uniqueKey = "engram-store-conformance")],
  durableObjectStorage = (localDisk = "do-storage"),
  bindings = [(name = "CONFORMANCE", durableObjectNamespace = "Conformance")],
);
