"""The component in wasmtime: where ``engram.wasm`` is found, one engine and
compiled component per path and process, instances linked to the host's
imports (clock, store, model) or to none, and the worker thread that runs
those imports with their deadlines.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import wasmtime
from wasmtime.component import Component, Func, Instance, Linker

from engram_host.errors import CallbackTimeout

WIT_VERSION = "0.1.0"
ENGINE_EXPORT = f"engram:memory/engine@{WIT_VERSION}"
OFFLINE_EXPORT = f"engram:memory/offline@{WIT_VERSION}"

Exports = Callable[[str], Func]
"""The functions of one exported interface of an instance, by WIT name
(``[method]memory.add-message``)."""


def default_component_path() -> Path:
    """Where the component is looked for: ``$ENGRAM_COMPONENT`` when set;
    else ``engram.wasm`` next to this file (an installed package bundles it
    there: see ``hosts/python/setup.py``); else the release build of the
    repository this file is in (``target/wasm32-wasip2/release``)."""
    env = os.environ.get("ENGRAM_COMPONENT")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    bundled = here / "engram.wasm"
    if bundled.exists():
        return bundled
    return here.parents[2] / "target" / "wasm32-wasip2" / "release" / "engram.wasm"


_loaded: dict[str, tuple[wasmtime.Engine, Component]] = {}
_loaded_lock = threading.Lock()


def load(path: Path) -> tuple[wasmtime.Engine, Component]:
    """One engine and compiled component per path and process. Compiled code
    is cached on disk by wasmtime, so later processes start faster."""
    key = str(path.resolve())
    with _loaded_lock:
        if key not in _loaded:
            if not path.exists():
                raise FileNotFoundError(
                    f"no engram component at {path}: install the package from a wheel that bundles it, "
                    "run scripts/build-component in the repository, or set ENGRAM_COMPONENT"
                )
            config = wasmtime.Config()
            try:
                config.cache = True
            except wasmtime.WasmtimeError:
                pass
            engine = wasmtime.Engine(config)
            _loaded[key] = (engine, Component.from_file(engine, key))
        return _loaded[key]


def component_path(component: str | os.PathLike[str] | None) -> Path:
    """The component to run: ``component`` when given, else :func:`default_component_path`."""
    return Path(component) if component else default_component_path()


@dataclass(frozen=True)
class Imports:
    """The host's side of the WIT imports, one function each (the first
    argument of each is wasmtime's store context, unused). Each returns the
    value wasmtime-py lowers into the import's WIT result (see
    :mod:`engram_host.convert`), or raises to trap the call."""

    now_ms: Callable[[Any], int]
    get: Callable[[Any, str], Any]
    get_many: Callable[[Any, list[str]], Any]
    put: Callable[[Any, str, bytes], Any]
    delete: Callable[[Any, str], Any]
    list_prefix: Callable[[Any, str], Any]
    write_if: Callable[[Any, str, bytes | None, list[tuple[str, bytes | None]]], Any]
    complete: Callable[[Any, Any], Any]
    embed: Callable[[Any, list[str]], Any]
    count_tokens: Callable[[Any, str], int | None]


def instantiate(engine: wasmtime.Engine, component: Component, imports: Imports) -> tuple[wasmtime.Store, Exports]:
    """A fresh instance whose clock, store and model imports are ``imports``,
    and a lookup of its ``engine`` interface's functions."""
    linker = Linker(engine)
    linker.add_wasip2()
    with linker.root() as root:
        with root.add_instance(f"engram:memory/clock@{WIT_VERSION}") as i:
            i.add_func("now-ms", imports.now_ms)
        with root.add_instance(f"engram:memory/store@{WIT_VERSION}") as i:
            i.add_func("get", imports.get)
            i.add_func("get-many", imports.get_many)
            i.add_func("put", imports.put)
            i.add_func("delete", imports.delete)
            i.add_func("list-prefix", imports.list_prefix)
            i.add_func("write-if", imports.write_if)
        with root.add_instance(f"engram:memory/model@{WIT_VERSION}") as i:
            i.add_func("complete", imports.complete)
            i.add_func("embed", imports.embed)
            i.add_func("count-tokens", imports.count_tokens)
    wasm = wasmtime.Store(engine)
    wasm.set_wasi(wasmtime.WasiConfig())
    instance = linker.instantiate(wasm, component)
    engine_index = instance.get_export_index(wasm, ENGINE_EXPORT)

    def func(name: str) -> Func:
        index = instance.get_export_index(wasm, name, engine_index)
        f = instance.get_func(wasm, index) if index is not None else None
        if f is None:
            raise RuntimeError(f"the component has no {name}: is it an engram {WIT_VERSION} build?")
        return f

    return wasm, func


def bare(component: str | os.PathLike[str] | None, interface: str) -> tuple[wasmtime.Store, Exports]:
    """A fresh instance with no host behind its imports (they trap), for the
    exports that need none; and a lookup of ``interface``'s functions."""
    engine, comp = load(component_path(component))
    linker = Linker(engine)
    linker.add_wasip2()
    linker.define_unknown_imports_as_traps(comp)
    wasm = wasmtime.Store(engine)
    wasm.set_wasi(wasmtime.WasiConfig())
    instance: Instance = linker.instantiate(wasm, comp)
    parent = instance.get_export_index(wasm, interface)

    def func(name: str) -> Func:
        index = instance.get_export_index(wasm, name, parent) if parent is not None else None
        f = instance.get_func(wasm, index) if index is not None else None
        if f is None:
            raise RuntimeError(f"the component has no {interface} {name}: is it an engram {WIT_VERSION} build?")
        return f

    return wasm, func


_Job = tuple[Callable[[], Any], list[tuple[bool, Any]], threading.Event]


class Worker:
    """Runs host callbacks on a daemon thread and waits for each at most its
    timeout. A thread that misses one is abandoned: it finishes (or hangs)
    on its own, its answer unread, and the next callback gets a new thread."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] | None = None
        self._thread = threading.current_thread()

    @staticmethod
    def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            fn, box, done = job
            try:
                box.append((True, fn()))
            except BaseException as e:  # noqa: BLE001 (handed to the caller, who raises it)
                box.append((False, e))
            done.set()

    def run(self, fn: Callable[[], Any], timeout: float | None, what: str) -> Any:
        """``fn()`` on the worker thread, waited for at most ``timeout``
        seconds (None: on the calling thread, no deadline); raises what it
        raised, or :class:`CallbackTimeout`."""
        if timeout is None:
            return fn()
        jobs = self._jobs
        if jobs is None:
            jobs = self._jobs = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._serve, args=(jobs,), name="engram-host-callback", daemon=True)
            self._thread.start()
        box: list[tuple[bool, Any]] = []
        done = threading.Event()
        jobs.put((fn, box, done))
        if not done.wait(timeout):
            jobs.put(None)  # the abandoned thread exits after its callback, if ever
            self._jobs = None
            timed_out = CallbackTimeout(f"{what} did not answer within {timeout:g} s")
            timed_out.thread = self._thread.ident
            raise timed_out
        ok, value = box[0]
        if ok:
            return value
        raise value
