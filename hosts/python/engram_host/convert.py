"""Values across the component's boundary, converted in one place.

Out: :func:`plain` gives the component's WIT values as plain Python (dicts
with snake_case keys), and the functions after it reshape those into the
records of :mod:`engram_host.records` (the npm package's shapes). In: the
checks refuse what the WIT types cannot hold, as
:class:`~engram_host.InvalidInput`, before wasmtime-py would raise
``UnicodeEncodeError``, ``OverflowError``, ``ValueError`` or a
``WasmtimeError`` (some from inside a call, as a trap), and build the WIT
records to pass in.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import Any, cast

from wasmtime.component import Record, Variant

from engram_host.errors import InvalidInput
from engram_host.records import (
    Added,
    DistilledBlock,
    Entity,
    EpisodeExplanation,
    FactExplanation,
    FactHistory,
    Hit,
    Maintained,
    Message,
    RecallBlock,
    RecallExplanation,
    RecallItem,
    RoundTrips,
    SearchHit,
    Stats,
    Trace,
)

# ---- Out: WIT values as plain Python --------------------------------------------


def plain(v: Any) -> Any:
    """Component values as plain Python: dicts with snake_case keys."""
    if isinstance(v, Record):
        return {k.replace("-", "_"): plain(x) for k, x in vars(v).items()}
    if isinstance(v, Variant):
        return v.tag if v.payload is None else {"kind": v.tag, "value": plain(v.payload)}
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, tuple):
        return tuple(plain(x) for x in v)
    return v


def record(**fields: Any) -> Record:
    """A WIT record to pass in (field names in kebab-case)."""
    r = Record()
    for k, v in fields.items():
        setattr(r, k.replace("_", "-"), v)
    return r


# ---- Out: the records' shapes, as in JS -------------------------------------------
# plain() gives the component's WIT shapes; these give the engine's JSON
# shapes, which the npm package's records keep (js/index.d.ts). Each takes
# what plain() made of one WIT value and reshapes it in place.


def recall_item(v: Any) -> RecallItem:
    """``{"kind": "fact", "value": 3}`` -> ``{"kind": "fact", "id": 3}``."""
    if isinstance(v, dict) and "value" in v:
        return {"kind": v["kind"], "id": v["value"]}
    return cast(RecallItem, v)


def _distillation(d: Any) -> Any:
    if isinstance(d, dict):
        d["kept"] = [recall_item(x) for x in d["kept"]]
    return d


def distilled(b: Any) -> DistilledBlock | None:
    """A distilled block as the pair ``[block, distillation]``."""
    return None if b is None else [b["block"], _distillation(b["distillation"])]


def maintained(m: Any) -> Maintained:
    m["distilled"] = [distilled(b) for b in m["distilled"]]
    m["slept"] = [list(p) for p in m["slept"]]
    return cast(Maintained, m)


def added(a: Any) -> Added:
    a["distilled"] = distilled(a["distilled"])
    if a["maintained"] is not None:
        maintained(a["maintained"])
    return cast(Added, a)


def trace(t: Any) -> Trace:
    """A trace's cause as ``{"kind": "encoding"}`` or ``{"kind": "fact" | "recall", "fact": id}``."""
    c = t["cause"]
    t["cause"] = {"kind": c} if isinstance(c, str) else {"kind": c["kind"], "fact": c["value"]}
    return cast(Trace, t)


def entity(e: Any) -> Entity:
    """An alias's resolution as ``{"how": "new"}`` or ``{"how": "similar", "cosine": c}``."""
    for a in e["aliases"]:
        r = a["resolution"]
        a["resolution"] = {"how": r} if isinstance(r, str) else {"how": r["kind"], "cosine": r["value"]}
    return cast(Entity, e)


def hits(hs: Any) -> list[Hit]:
    """Search hits as ``{"list": "fact_words", "query", "rank"}``."""
    return [{"list": h["search"].replace("-", "_"), "query": h["query"], "rank": h["rank"]} for h in hs]


def recall_block(b: Any) -> RecallBlock:
    _distillation(b.get("distilled"))
    for r in b["items"]:
        r["item"] = recall_item(r["item"])
        r["hits"] = hits(r["hits"])
    return cast(RecallBlock, b)


def search_hit(h: Any) -> SearchHit:
    h["item"] = recall_item(h["item"])
    h["hits"] = hits(h["hits"])
    return cast(SearchHit, h)


def recall_explanation(w: Any) -> RecallExplanation:
    w["hits"] = hits(w["hits"])
    return cast(RecallExplanation, w)


def episode_explanation(why: Any) -> EpisodeExplanation:
    why["traces"] = [trace(t) for t in why["traces"]]
    return cast(EpisodeExplanation, why)


def fact_explanation(why: Any) -> FactExplanation:
    why["traces"] = [trace(t) for t in why["traces"]]
    return cast(FactExplanation, why)


def message(m: Any) -> Message:
    """A message with its metadata as a dict."""
    if m.get("metadata") is not None:
        m["metadata"] = json.loads(m["metadata"])
    return cast(Message, m)


def stats(s: Any, round_trips: RoundTrips) -> Stats:
    e = s["episodes"]
    model = s["model"]
    model["calls"] = dict(model["calls"])
    model["failed"] = dict(model["failed"])
    model["repairs"] = dict(model["repairs"])
    return {
        "messages": s["messages"],
        "episodes": [e["live"], e["leaving"], e["sealed"], e["forgotten"]],
        "open_messages": s["open_messages"],
        "facts": [s["live_facts"], s["retired_facts"]],
        "entities": s["entities"],
        "traces": [s["traces"], s["yes_traces"]],
        "fades": s["fades"],
        "log_entries": s["log_entries"],
        "view_tokens": s["view_tokens"],
        "ceiling": s["ceiling"],
        "pending": s["pending"],
        "model": model,
        "storage_warnings": s["storage_warnings"],
        "round_trips": round_trips,
    }


# The shapes wasmtime-py expects from host functions: it passes a `result`
# untagged (the bare ok value, or the bare error value) when its two sides
# hold different Python types, and as `Variant("ok"|"err", ...)` otherwise.
# `store-error` is itself untagged: None is `conflict`, a str is `failed`.
OK = Variant("ok")


# ---- In: checks of what goes into the component -------------------------------------

ROLES = ("system", "user", "assistant", "tool")
FACT_KINDS = ("fact", "agreed", "decided", "done", "blocked", "next", "preference")
ITEM_KINDS = ("fact", "passage", "message")
U32 = 2**32 - 1
U64 = 2**64 - 1
S64 = (-(2**63), 2**63 - 1)

#: The keys of a message dict :meth:`Memory.add_messages` reads, and those
#: of an OpenAI chat message it ignores (any other is a mistake, refused).
BATCH_KEYS = frozenset(
    ("role", "content", "tool_calls", "tool_call_id", "client_id", "thread", "at", "metadata", "replaces")
    + ("name", "refusal", "annotations", "audio", "function_call")
)

_FILTER_KEYS = ("thread", "from", "to", "kinds", "entity", "metadata")


def bad_text(s: str) -> str | None:
    """Why ``s`` cannot be UTF-8 (a lone surrogate), or None."""
    try:
        s.encode("utf-8")
        return None
    except UnicodeEncodeError as e:
        return f"a lone surrogate {s[e.start]!r} at index {e.start}"


def text(v: Any, what: str) -> str:
    """``v`` if it is text the WIT can carry; else InvalidInput naming ``what``."""
    if not isinstance(v, str):
        raise InvalidInput(f"{what} must be text, not {type(v).__name__}")
    bad = bad_text(v)
    if bad:
        raise InvalidInput(f"{what} is not valid Unicode text: {bad}")
    return v


def integer(v: Any, what: str, lo: int, hi: int) -> int:
    """``v`` if it is an integer in ``lo..hi``; else InvalidInput naming ``what``."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidInput(f"{what} must be an integer, not {v!r}")
    if not lo <= v <= hi:
        raise InvalidInput(f"{what} is {v}, outside {lo}..{hi}")
    return v


def json_text(v: Any, what: str) -> str:
    """``v`` as compact JSON text (engram checks it is an object within
    bounds)."""
    try:
        return json.dumps(v, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidInput(f"{what} is not JSON: {e}") from None


def thread(v: Any) -> str | None:
    """A thread name to pass in (None stays None: the main thread)."""
    return None if v is None else text(v, "the thread")


def tool_call(c: Any) -> Record:
    """A ``tool-call`` record from a dict (engram's or OpenAI's shape) or an
    OpenAI SDK object."""
    try:
        if isinstance(c, dict):
            if "function" in c:  # the OpenAI shape
                f = c["function"]
                fields = (c["id"], f["name"], f.get("arguments", ""))
            else:
                fields = (c["id"], c["name"], c.get("arguments", ""))
        elif hasattr(c, "function"):  # an OpenAI SDK object
            fields = (c.id, c.function.name, c.function.arguments)
        else:
            fields = (c.id, c.name, c.arguments)
    except (KeyError, AttributeError, TypeError) as e:
        raise InvalidInput(f"a tool call needs an id, a name and arguments: {e!r}") from None
    id_, name, arguments = fields
    return record(
        id=text(id_, "a tool call's id"),
        name=text(name, "a tool call's name"),
        arguments=text("" if arguments is None else arguments, "a tool call's arguments"),
    )


def new_message(
    role: Any,
    content: Any,
    tool_calls: Any,
    tool_call_id: Any,
    client_id: Any,
    thread_name: Any,
    at: Any,
    metadata: Any = None,
    replaces: Any = None,
) -> Record:
    """A ``new-message`` record, its fields checked."""
    if role not in ROLES:
        raise InvalidInput(f"role {role!r} is not one of {', '.join(ROLES)}")
    try:
        calls = [tool_call(c) for c in (tool_calls or [])]
    except TypeError:
        raise InvalidInput("tool_calls must be a list of tool calls") from None
    return record(
        role=role,
        content=text(content or "", "the content"),
        tool_calls=calls,
        tool_call_id=None if tool_call_id is None else text(tool_call_id, "tool_call_id"),
        client_id=None if client_id is None else text(client_id, "client_id"),
        thread=thread(thread_name),
        at=None if at is None else integer(at, "at", *S64),
        metadata=None if metadata is None else json_text(metadata, "metadata"),
        replaces=None if replaces is None else integer(replaces, "replaces", 0, U64),
    )


def new_fact(n: int, f: Any) -> Record:
    """A ``new-fact`` record from fact ``n`` (counted from 1) of a note."""
    if not isinstance(f, dict):
        raise InvalidInput(f"fact {n} is not an object")
    fields = {}
    for k in ("subject", "predicate", "object", "sentence"):
        if k not in f:
            raise InvalidInput(f"fact {n} has no {k}")
        fields[k] = text(f[k], f"fact {n}'s {k}")
    kind = f.get("kind", "fact")
    if kind not in FACT_KINDS:
        raise InvalidInput(f"fact {n}'s kind {kind!r} is not one of {', '.join(FACT_KINDS)}")
    return record(kind=kind, **fields)


def statement(v: Any) -> str | Record:
    """A ``statement`` variant: a sentence (str) or a triple (dict). Its
    cases are of distinct Python types, so wasmtime takes the bare value."""
    if isinstance(v, str):
        return text(v, "the sentence")
    if isinstance(v, dict):
        return new_fact(1, v)
    raise InvalidInput("a statement is a sentence (str) or a fact (dict with subject, predicate, object, sentence)")


def page_request(limit: Any, cursor: Any) -> Record:
    """A ``page-request`` record (the engine checks the limit's range and the cursor)."""
    if limit is not None:
        limit = integer(limit, "the page limit", 0, U32)
    if cursor is not None:
        cursor = text(cursor, "the cursor")
    return record(limit=limit, cursor=cursor)


_FACT_FILTER_KEYS = ("live", "kinds", "entity", "stated")


def fact_filter(f: Any) -> Record:
    """A fact filter dict (or None) as the WIT ``fact-filter`` record."""
    f = {} if f is None else f
    if not isinstance(f, dict):
        raise InvalidInput("a fact filter is a dict")
    unknown = [k for k in f if k not in _FACT_FILTER_KEYS]
    if unknown:
        raise InvalidInput(f"unknown fact filter key {unknown[0]!r}: use {', '.join(_FACT_FILTER_KEYS)}")
    for k in ("live", "stated"):
        if f.get(k) is not None and not isinstance(f[k], bool):
            raise InvalidInput(f"fact filter {k} is True, False or None")
    kinds = f.get("kinds") or []
    if isinstance(kinds, str) or not isinstance(kinds, (list, tuple)) or any(k not in FACT_KINDS for k in kinds):
        raise InvalidInput(f"fact filter kinds is a list of {', '.join(FACT_KINDS)}")
    entity = f.get("entity")
    if entity is not None:
        entity = integer(entity, "fact filter entity", 0, U64)
    return record(live=f.get("live"), kinds=list(kinds), entity=entity, stated=f.get("stated"))


EPISODE_STATES = ("live", "leaving", "sealed", "forgotten")


def episode_states(states: Any) -> list[str]:
    """The states an episode page keeps (None: every state)."""
    if states is None:
        return []
    if isinstance(states, str):
        raise InvalidInput(f"states is a list of {', '.join(EPISODE_STATES)}")
    wanted = list(states)
    for st in wanted:
        if st not in EPISODE_STATES:
            raise InvalidInput(f"episode state {st!r} is not one of {', '.join(EPISODE_STATES)}")
    return wanted


def fact_history(h: Any) -> FactHistory:
    """The WIT ``fact-history`` (plain) in the npm package's shape: each step
    ``{"kind": ..., **its fields}``, ``retired-by`` as ``retired_by``."""
    entries = []
    for e in h["entries"]:
        if isinstance(e, str):
            entries.append({"kind": e.replace("-", "_")})
        else:
            entries.append({"kind": e["kind"].replace("-", "_"), **e["value"]})
    h["entries"] = entries
    return cast(FactHistory, h)


def search_filter(f: Any) -> Record:
    """A search filter dict as the WIT record."""
    if not isinstance(f, dict):
        raise InvalidInput("filter must be a dict")
    unknown = [k for k in f if k not in _FILTER_KEYS]
    if unknown:
        raise InvalidInput(f"unknown filter key {unknown[0]!r}: use {', '.join(_FILTER_KEYS)}")
    kinds = f.get("kinds") or []
    if isinstance(kinds, str) or not isinstance(kinds, (list, tuple)):
        raise InvalidInput("filter kinds must be a list of fact, passage, message")
    for k in kinds:
        if k not in ITEM_KINDS:
            raise InvalidInput(f"filter kind {k!r} is not one of {', '.join(ITEM_KINDS)}")

    def opt(key: str, conv: Callable[[Any], Any]) -> Any:
        return None if f.get(key) is None else conv(f[key])

    r = Record()
    fields = {
        "thread": opt("thread", lambda v: text(v, "filter thread")),
        "from": opt("from", lambda v: integer(v, "filter from", *S64)),  # a Python keyword: set by name
        "to": opt("to", lambda v: integer(v, "filter to", *S64)),
        "kinds": list(kinds),
        "entity": opt("entity", lambda v: integer(v, "filter entity", 0, U64)),
        "metadata": opt("metadata", lambda v: json_text(v, "filter metadata")),
    }
    for k, v in fields.items():
        setattr(r, k, v)
    return r


def check_texts(v: Any, where: str = "an argument") -> None:
    """Raises InvalidInput for any string in ``v`` (records, lists, tuples,
    variants included) that is not valid Unicode."""
    if isinstance(v, str):
        bad = bad_text(v)
        if bad:
            raise InvalidInput(f"{where} is not valid Unicode text: {bad}")
    elif isinstance(v, Record):
        for k, x in vars(v).items():
            check_texts(x, k)
    elif isinstance(v, (list, tuple)):
        for x in v:
            check_texts(x, where)
    elif isinstance(v, Variant):
        check_texts(v.payload, where)


def clock_reading(v: Any) -> int:
    """The clock's reading as s64 ms; InvalidInput when it is no such number.
    (Readings outside 2000..3000 are refused by engram itself, with the
    likely mistake named.)"""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidInput(f"the clock returned {v!r}, not a number of ms since the Unix epoch")
    if isinstance(v, float) and not math.isfinite(v):
        raise InvalidInput(f"the clock returned {v!r}, not a finite number of ms: fix the clock")
    ms: int = int(v) if isinstance(v, float) else v
    if not S64[0] <= ms <= S64[1]:
        raise InvalidInput(f"the clock returned {ms}, outside the 64-bit range: fix the clock")
    return ms


def token_count(v: Any) -> int | None:
    """The model's token count as u32 (or None); InvalidInput otherwise."""
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= U32:
        raise InvalidInput(f"the model's count_tokens returned {v!r}, not None or a count in 0..{U32}")
    return v


def texts(vs: Iterable[Any], what: str) -> list[str]:
    """Each of ``vs`` checked as :func:`text`."""
    return [text(v, what) for v in vs]
