"""Errors of engram: the :class:`EngramError` hierarchy, one class per case
of the WIT ``memory-error`` (``code`` is the case's name, stable across
hosts, as in the npm package's errors), and :func:`from_wit`, which turns
the component's error value into one of them.
"""

from __future__ import annotations

from typing import Any

from wasmtime.component import Variant


class EngramError(Exception):
    """An engram call failed. The memory is as it was before the call.

    ``code`` is the WIT ``memory-error`` case (``invalid-input``, ``store``,
    ``model``, ``corrupt``, ``unsupported-version``, ``busy``). When a host
    callback (store or model) raised during the call, that exception is the
    ``__cause__``.
    """

    code = "engram"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidInput(EngramError):
    """The input cannot be accepted (empty message, bad role order, unknown id,
    bad namespace or config). Fix the input and call again."""

    code = "invalid-input"


class StoreError(EngramError):
    """The store failed; nothing was written. Retry when the store is back."""

    code = "store"


class ModelError(EngramError):
    """The model failed on a step that cannot degrade (or on any step, with
    ``"strict": true`` in the config); nothing was written. When the model
    raised, its exception is the ``__cause__``."""

    code = "model"


class CorruptData(EngramError):
    """The stored data cannot be read; restore from an export."""

    code = "corrupt"


class UnsupportedVersion(EngramError):
    """The data was written by a format version this build cannot read."""

    code = "unsupported-version"

    def __init__(self, message: str, found: int, supported: int):
        super().__init__(message)
        self.found = found
        self.supported = supported


class Busy(EngramError):
    """Other writers kept winning the log head; nothing was written. Retry later."""

    code = "busy"


class ClosedError(EngramError):
    """A call on a :class:`Memory` after :meth:`Memory.close`. Nothing was
    read or written; open a new one (the store keeps everything)."""

    code = "closed"


class CallbackTimeout(TimeoutError):
    """A host callback (clock, store or model) did not answer within its
    timeout. The ``__cause__`` of the :class:`StoreError` or
    :class:`ModelError` it caused (or of the degraded step's error); a clock
    that times out raises it out of the call."""

    thread: int | None = None
    """The ident of the abandoned thread that still runs the callback."""


_BY_CODE: dict[str, type[EngramError]] = {
    cls.code: cls for cls in (InvalidInput, StoreError, ModelError, CorruptData, Busy)
}


def from_wit(v: Variant) -> EngramError:
    """The error for a WIT ``memory-error`` value (its case is the tag)."""
    if v.tag == "unsupported-version":
        payload: Any = v.payload
        found, supported = payload.found, payload.supported
        return UnsupportedVersion(
            f"unsupported format version {found} (this build reads version {supported})", found, supported
        )
    cls = _BY_CODE.get(v.tag, EngramError)
    return cls(str(v.payload))
