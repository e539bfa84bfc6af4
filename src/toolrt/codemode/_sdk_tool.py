"""The input of the Code Mode SDK renderers, and the notes both of them print beside the types.

Shared by the TypeScript renderer (:mod:`toolrt.codemode._sdk_typescript`) and the Python renderer
(:mod:`toolrt.codemode._sdk_python`), which are two projections of the same tool set: a tool
(:class:`SdkTool`), and what a type alone cannot say — the constraints on a field
(:func:`constraint_notes`) and what a tool returns (:func:`return_notes`). Each renderer escapes
the notes for its own comment syntax; here they are plain text.

Why notes: in Code Mode the SDK is the model's only source for a tool's shapes. ``qty: int`` hides
that ``qty`` must be at least 1, and ``-> dict[str, Any]`` hides the keys the docstring's
``Returns:`` section names, so a model writing a program would have to guess them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolrt._json import js_number, js_string
from toolrt._tool_definition import ToolGroup
from toolrt.schema._subset import read_array, read_record

__all__ = ["SdkTool", "constraint_notes", "group_of", "return_notes"]


@dataclass(frozen=True)
class SdkTool:
    """One tool of the SDK: its name, description, argument schema and canonical output schema.

    Upstream ``ToolSdkSchema`` (``ToolSchema`` plus ``output``). ``parameters`` and ``output`` are raw
    JSON-Schema subset nodes; a schema outside the subset renders as the renderer's "unknown" type
    instead of failing the whole SDK. ``group`` is the system the tool belongs to: the SDKs list a
    group's tools together under one header carrying its description (not repeated per tool).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    output: Mapping[str, Any]
    group: ToolGroup | None = None


def group_of(tool: object) -> tuple[str, str] | None:
    """``(name, description)`` of a tool's group, or ``None`` (no group, or not a usable one)."""
    group = getattr(tool, "group", None)
    name = getattr(group, "name", None)
    description = getattr(group, "description", "")
    if not isinstance(name, str) or not name:
        return None
    return str.__str__(name), str.__str__(description) if isinstance(description, str) else ""


_BOUNDS: Final = (
    ("minimum", ">= "),
    ("exclusiveMinimum", "> "),
    ("maximum", "<= "),
    ("exclusiveMaximum", "< "),
    ("multipleOf", "multiple of "),
    ("minLength", "len >= "),
    ("maxLength", "len <= "),
    ("minItems", "len >= "),
    ("maxItems", "len <= "),
)
_PLAIN_FORMAT: Final = re.compile(r"[A-Za-z0-9_.-]+")


def _number(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(int.__int__(value)) if isinstance(value, int) else js_number(float.__float__(value))


def _quoted(text: str) -> str:
    # JSON quoting escapes every control character; U+2028/U+2029 would end a TypeScript line comment.
    return js_string(text).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _own_notes(node: Mapping[str, Any]) -> list[str]:
    notes: list[str] = []
    for keyword, prefix in _BOUNDS:
        number = _number(node.get(keyword))
        if number is not None:
            notes.append(prefix + number)
    if node.get("uniqueItems") is True:
        notes.append("unique items")
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        notes.append("pattern " + _quoted(str.__str__(pattern)))
    fmt = node.get("format")
    if isinstance(fmt, str):
        text = str.__str__(fmt)
        notes.append("format " + (text if _PLAIN_FORMAT.fullmatch(text) else _quoted(text)))
    return notes


def constraint_notes(schema: object) -> list[str]:
    """The constraint keywords of a field's schema as short texts: ``>= 1``, ``len <= 20``, ...

    Read from the node itself, from its ``oneOf`` branches (an optional ``int`` with a minimum is
    a ``oneOf`` of the bounded integer and ``null``), and one level into an array's ``items``
    (prefixed ``items``). Never raises: anything unreadable has no notes.

    >>> constraint_notes({"type": "integer", "minimum": 1, "maximum": 10})
    ['>= 1', '<= 10']
    >>> constraint_notes({"type": "array", "maxItems": 5, "items": {"type": "string", "pattern": "^[a-z]+$"}})
    ['len <= 5', 'items pattern "^[a-z]+$"']
    """
    try:
        node = read_record(schema)
        if node is None:
            return []
        notes = _own_notes(node)
        branches = read_array(node.get("oneOf")) if "oneOf" in node else None
        for branch in branches or ():
            record = read_record(branch)
            for note in _own_notes(record) if record is not None else ():
                if note not in notes:
                    notes.append(note)
        if node.get("type") == "array":
            items = read_record(node.get("items"))
            if items is not None:
                notes.extend("items " + note for note in _own_notes(items))
        return notes
    except Exception:
        return []


def return_notes(output: object) -> tuple[str | None, list[str]]:
    """What a tool returns, from its output schema's ``description`` (a ``Returns:`` section).

    ``(text, [])`` for prose; ``(None, ["key (type): text", ...])`` when the description names two
    or more of the result's keys (``name (type): text`` entries, see
    :func:`~toolrt.schema._docstrings.parse_return_keys`), one line per key; a single key stays one
    line of text. ``(None, [])`` when there is no description. Never raises.

    >>> return_notes({"type": "object", "description": "cwd (str): The new directory. ok (bool): Done."})
    (None, ['cwd (str): The new directory.', 'ok (bool): Done.'])
    >>> return_notes({"type": "string", "description": "The file's text."})
    ("The file's text.", [])
    """
    try:
        node = read_record(output)
        description = None if node is None else node.get("description")
        if not isinstance(description, str) or not description.strip():
            return None, []
        text = str.__str__(description)
        from toolrt.schema._docstrings import parse_return_keys  # at the first SDK, not at import

        keys = parse_return_keys(text)
        if len(keys) < 2:
            return text, []
        return None, [f"{key} ({kind}): {about}" if about else f"{key} ({kind})" for key, kind, about in keys]
    except Exception:
        return None, []
