"""How the pipeline builds, re-binds and freezes results: failures with upstream's messages, the
aborted results, output projections, content blocks, and the snapshot every durable field gets.

Used by :mod:`toolrt._pipeline` (which re-exports :func:`tool_error_result`); standalone so the stages
read as stages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from toolrt._content import content_text
from toolrt._errors import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH, ToolOutputError, ToolrtError
from toolrt._events import message_of
from toolrt._json import FrozenDict, FrozenList, NotLosslessJsonError, snapshot_json, text_block_content
from toolrt._results import (
    ToolError,
    ToolErrorInfo,
    ToolExecutionResult,
    ToolFailure,
    ToolSuccess,
    make_failure,
    make_success,
)

__all__ = ["tool_error_result"]


_text = text_block_content


def _failure(message: str, info: ToolErrorInfo | None = None, contexts: Any = ()) -> ToolFailure:
    return make_failure(ToolError(message, info), _text(f"Error: {message}"), None, contexts)


def tool_error_result(error: BaseException) -> ToolFailure:
    """The failure for a raised error: ``Error: <message>``, with ``info`` for a ToolrtError."""
    message = message_of(error)
    info = None
    if isinstance(error, ToolrtError):
        try:
            name, code = error.name, error.code
            if isinstance(name, str) and isinstance(code, str):
                info = ToolErrorInfo(name, code)
        except Exception:
            info = None
    return _failure(message, info)


def _aborted(body_invoked: bool, contexts: Any = ()) -> ToolFailure:
    if body_invoked:
        return _failure("tool call aborted", ToolErrorInfo("AbortError", TOOL_ABORTED), contexts)
    return _failure(
        "tool call aborted before dispatch",
        ToolErrorInfo("AbortError", TOOL_ABORTED_BEFORE_DISPATCH),
        contexts,
    )


def _rebuild(result: ToolExecutionResult, content: Any, meta: Any, contexts: Any) -> ToolExecutionResult:
    """The same outcome with its durable fields replaced."""
    if isinstance(result, ToolSuccess):
        return make_success(result.value, content, meta, contexts, result.concludes_turn)
    return make_failure(result.error, content, meta, contexts)


def _join_contexts(first: Any, second: Any) -> Any:
    if not second:
        return first
    if not first:
        return tuple(second)
    return (*first, *second)


def _collapsed_message(name: str) -> str:
    return (
        f'unknown tool "{name}": only `run_code` is callable directly — call `{name}` from inside a '
        "`run_code` program instead"
    )


def _feedback_message(feedback: Sequence[Any]) -> str:
    return content_text(feedback) if feedback else "tool result blocked by post-execute policy"


def _project(name: str, label: str, projector: Callable[[Any, Any], Any], arguments: Any, value: Any) -> Any:
    try:
        projected = projector(arguments, value)
    except asyncio.CancelledError:
        raise
    except BaseException as error:
        raise ToolOutputError(name, f"output.{label} failed: {message_of(error)}") from None
    try:
        return snapshot_json(projected)
    except NotLosslessJsonError:
        raise ToolOutputError(name, f"output.{label} returned non-lossless JSON") from None
    except Exception as error:
        raise ToolOutputError(name, f"output.{label} failed: {message_of(error)}") from None


def _as_content(name: str, content: Any) -> Any:
    """Content must be a list of ``{"type": ...}`` blocks; a bare string is one text block."""
    if isinstance(content, str):
        return _text(content)
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                break
        else:
            return content
    raise ToolOutputError(name, 'content must be a list of {"type": ...} blocks')


def _result_field(value: Any) -> Any:
    """A result field as a frozen snapshot; a lossy field fails the call with upstream's message."""
    try:
        return snapshot_json(value)
    except NotLosslessJsonError:
        raise TypeError("tool result must be losslessly JSON-serializable") from None


def _frozen(value: Any) -> Any:
    """``value`` as a frozen snapshot; results keep ``()`` and ``None`` as their empty values."""
    if value is None or value == ():
        return value
    return _result_field(value)


def _materialize(result: ToolExecutionResult) -> ToolExecutionResult:
    """Snapshot every durable field (a no-op for fields that are already frozen snapshots)."""
    content, meta, contexts = result.content, result.meta, result.additional_contexts
    if (
        type(content) is FrozenList
        and (meta is None or type(meta) in _FROZEN_SCALARS)
        and (contexts == () or type(contexts) is FrozenList)
        and (type(result) is ToolSuccess or type(result.error.message) is str)  # type: ignore[union-attr]
    ):
        return result  # built by the pipeline from snapshots: already frozen
    try:
        content = _frozen(content)
        meta = _frozen(meta)
        contexts = _frozen(contexts)
        unchanged = (
            content is result.content and meta is result.meta and contexts is result.additional_contexts
        )
        if isinstance(result, ToolFailure) and (
            not isinstance(result.error, ToolError) or not isinstance(result.error.message, str)
        ):
            raise TypeError("tool result must be losslessly JSON-serializable")
        if unchanged:
            return result
        return _rebuild(result, content, meta, contexts)
    except NotLosslessJsonError:
        return _failure("tool result must be losslessly JSON-serializable")
    except Exception as error:
        return tool_error_result(error)


_FROZEN_SCALARS = frozenset({FrozenDict, FrozenList, str, int, bool})
