// The store conformance suite inside workerd, against a Durable Object's own
// transactional storage (SQLite-backed on disk): GET /checks lists the
// checks, GET /run?check=NAME runs one in a Durable Object of its own (a
// fresh, empty storage per check) and answers { ok, error?, detail? }.

import { durableObjectStore } from "./src/stores/durable-object.js";
import { checks } from "./conformance.js";

export class Conformance {
  constructor(state) {
    this.state = state;
  }

  async fetch(request) {
    const name = new URL(request.url).searchParams.get("check");
    const check = checks[name];
    if (!check) return Response.json({ ok: false, error: `no check ${name}` }, { status: 404 });
    try {
      // Every handle is over the same storage: this object's.
      const detail = await check(async () => durableObjectStore(this.state.storage));
      return Response.json({ ok: true, detail: detail ?? null });
    } catch (e) {
      return Response.json({ ok: false, error: String(e?.stack ?? e) });
    }
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/checks") return Response.json(Object.keys(checks));
    const name = url.searchParams.get("check") ?? "";
    return env.CONFORMANCE.get(env.CONFORMANCE.idFromName(name)).fetch(request);
  },
};
