"""How a ``run_code`` result reads to the model (upstream B12/B10 text, byte for byte)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolrt._errors import MAX_LINE_CHARS, MAX_MESSAGE_CHARS, clip_text
from toolrt._json import js_json_dumps, js_number, js_string
from toolrt.codemode._code_runtime import NO_VALUE

__all__ = ["NO_OUTPUT_TEXT", "code_run_failed_message", "pretty_json", "render_run_code_output"]

NO_OUTPUT_TEXT = "(run_code completed with no output)"
_COMPACT_DEPTH = 5
"""Containers this deep (root = 0) render compact: total indentation stays within ten characters."""


def render_run_code_output(logs: Sequence[str], result: Any = NO_VALUE) -> str:
    """Printed lines, then the return value (strings raw, other JSON pretty), or the no-output text."""
    rendered = "" if result is NO_VALUE else (result if isinstance(result, str) else pretty_json(result))
    parts = [part for part in ("\n".join(logs), rendered) if part]
    return "\n".join(parts) if parts else NO_OUTPUT_TEXT


def code_run_failed_message(kind: str, message: str, logs: Sequence[str]) -> str:
    """``code run failed (<kind>): <message>`` plus the captured output, if any.

    The message (a traceback, say) is cut here, line by line and as a whole: it can echo what the
    program holds (a 65 KB source line, a huge exception text). The captured output is the
    program's output, which the output budget bounds (and spills) like any result's.
    """
    message = clip_text(message, MAX_MESSAGE_CHARS, line_limit=MAX_LINE_CHARS)
    text = f"code run failed ({kind}): {message}"
    if logs:
        text += "\nCaptured output:\n" + "\n".join(logs)
    return text


def pretty_json(value: Any) -> str:
    """``JSON.stringify(value, null, 2)`` with containers at depth ≥ 5 compact. Iterative, linear."""
    out: list[str] = []
    # Work items: ("value", v, depth) renders a value; ("text", s) emits text.
    stack: list[tuple[str, Any, int]] = [("value", value, 0)]
    while stack:
        kind, item, depth = stack.pop()
        if kind == "text":
            out.append(item)
            continue
        if isinstance(item, dict | list | tuple):
            if not item:
                out.append("{}" if isinstance(item, dict) else "[]")
            elif depth >= _COMPACT_DEPTH:
                out.append(js_json_dumps(item))
            else:
                _open_container(item, depth, out, stack)
        else:
            out.append(_scalar(item))
    return "".join(out)


def _open_container(item: Any, depth: int, out: list[str], stack: list[tuple[str, Any, int]]) -> None:
    inner = "\n" + "  " * (depth + 1)
    is_object = isinstance(item, dict)
    out.append("{" if is_object else "[")
    pending: list[tuple[str, Any, int]] = []
    entries = list(item.items()) if is_object else list(enumerate(item))
    for index, (key, child) in enumerate(entries):
        prefix = inner + (js_string(str(key)) + ": " if is_object else "")
        pending.append(("text", ("," if index else "") + prefix, 0))
        pending.append(("value", child, depth + 1))
    pending.append(("text", "\n" + "  " * depth + ("}" if is_object else "]"), 0))
    stack.extend(reversed(pending))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return js_string(value)
    return js_number(value)
