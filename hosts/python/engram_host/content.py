"""The text of a message's content as the agent frameworks give it (the
Agents SDK's items, LangChain's messages): a string, or a list of parts of
which engram keeps the text ones. Shared by :mod:`engram_host.agents` and
:mod:`engram_host.langchain`, as ``js/src/content.js`` is by their npm twins.
"""

from __future__ import annotations

from typing import Any

from engram_host.errors import InvalidInput

#: The part types whose text engram keeps (``refusal`` keeps its refusal).
TEXT_PARTS = ("text", "input_text", "output_text")


def text_of(content: Any, what: str) -> str:
    """The text of ``content``: a string, or parts (plain strings, ``text``,
    ``input_text``, ``output_text``, ``refusal``) joined. Any other part
    raises :class:`InvalidInput` naming ``what``: engram keeps text."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if not isinstance(content, list):
        raise InvalidInput(f"{what}: content must be a string or a list of parts")
    out: list[str] = []
    for part in content:
        if isinstance(part, str):
            out.append(part)
            continue
        if not isinstance(part, dict):
            raise InvalidInput(f"{what}: a content part must be an object")
        kind = part.get("type")
        if kind in TEXT_PARTS:
            out.append(str(part.get("text", "")))
        elif kind == "refusal":
            out.append(str(part.get("refusal", "")))
        else:
            raise InvalidInput(f"{what}: a {kind!r} part cannot be kept (engram keeps text)")
    return "".join(out)
