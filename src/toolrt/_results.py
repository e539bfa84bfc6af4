"""What a call produces: :class:`ToolSuccess` or :class:`ToolFailure`, and how the pipeline builds them.

Results are frozen: the pipeline snapshots every field as lossless JSON before ``tools/result``
observers see it, so what the model reads, what the log stores and what observers saw are one value.
The canonical ``value`` of a success is for programmatic callers (Code Mode bindings); it is never
persisted, while ``content`` (what the model reads), ``error`` and ``meta`` are.

Match on the type, or test ``is_error``::

    match result:
        case ToolSuccess(value=value):
            ...
        case ToolFailure(error=error):
            print(error.message, error.info and error.info.code)

The builders below are the pipeline's: failures with upstream's messages, the aborted results,
output projections, content blocks, and the snapshot every durable field gets. They sit beside the
types so the pipeline's stages read as stages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

from toolrt._content import content_text
from toolrt._errors import (
    MAX_ECHO_CHARS,
    MAX_MESSAGE_CHARS,
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    CodeRunFailedError,
    ToolArgsError,
    ToolOutputError,
    ToolrtError,
    UnencodableTextError,
    clip_text,
    readable_message,
)
from toolrt._events import message_of
from toolrt._json import FrozenDict, FrozenList, NotLosslessJsonError, snapshot_json, text_block_content

__all__ = [
    "ToolError",
    "ToolErrorInfo",
    "ToolExecutionResult",
    "ToolFailure",
    "ToolSuccess",
    "aborted_result",
    "as_content",
    "collapsed_message",
    "failure_result",
    "feedback_message",
    "frozen_field",
    "join_contexts",
    "lossy_arguments_error",
    "make_failure",
    "make_success",
    "materialize",
    "project_output",
    "rebuild_result",
    "result_field",
    "tool_error_result",
    "unknown_tool_message",
]


@dataclass(frozen=True, slots=True)
class ToolErrorInfo:
    """Machine-readable identity of an error: the exception class name and its stable code."""

    name: str
    code: str


@dataclass(frozen=True, slots=True)
class ToolError:
    """A failure's message (what the model reads after ``Error: ``) and optional ``info``."""

    message: str
    info: ToolErrorInfo | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSuccess:
    """A successful call.

    ``value`` is the canonical JSON value the tool returned (validated against its output schema);
    ``content`` is its model-facing rendering; ``meta`` optional presentation metadata for UIs;
    ``additional_contexts`` user messages the loop appends after the result; ``concludes_turn`` asks
    the agent loop to end the turn after this batch.
    """

    is_error: ClassVar[Literal[False]] = False
    value: Any
    content: Any = ()
    meta: Any = None
    additional_contexts: Any = ()
    concludes_turn: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFailure:
    """A failed call: ``content`` is what the model reads (``Error: <message>`` unless replaced)."""

    is_error: ClassVar[Literal[True]] = True
    error: ToolError
    content: Any = ()
    meta: Any = None
    additional_contexts: Any = ()


ToolExecutionResult: TypeAlias = ToolSuccess | ToolFailure
"""The outcome of one call. A failure never has a ``value``."""


# Internal constructors for the hot path: the member descriptors set the slots directly, skipping the
# frozen dataclass's per-field object.__setattr__ (about 3x faster on a 5-field result).
_new = object.__new__
_set_success = tuple(
    getattr(ToolSuccess, field).__set__
    for field in ("value", "content", "meta", "additional_contexts", "concludes_turn")
)
_set_failure = tuple(
    getattr(ToolFailure, field).__set__ for field in ("error", "content", "meta", "additional_contexts")
)


def make_success(value: Any, content: Any, meta: Any, contexts: Any, concludes_turn: bool) -> ToolSuccess:
    """``ToolSuccess(...)`` without keyword processing (used by the pipeline)."""
    result = _new(ToolSuccess)
    set_value, set_content, set_meta, set_contexts, set_concludes = _set_success
    set_value(result, value)
    set_content(result, content)
    set_meta(result, meta)
    set_contexts(result, contexts)
    set_concludes(result, concludes_turn)
    return result


def make_failure(error: ToolError, content: Any, meta: Any, contexts: Any) -> ToolFailure:
    """``ToolFailure(...)`` without keyword processing (used by the pipeline)."""
    result = _new(ToolFailure)
    set_error, set_content, set_meta, set_contexts = _set_failure
    set_error(result, error)
    set_content(result, content)
    set_meta(result, meta)
    set_contexts(result, contexts)
    return result


# -- building results in the pipeline ------------------------------------------------------------


_text = text_block_content


def failure_result(
    message: str, info: ToolErrorInfo | None = None, contexts: Any = (), *, whole: bool = False
) -> ToolFailure:
    """A failure whose content is ``Error: <message>``.

    The message is what a model reads, so it is made readable here, for every failure the pipeline
    builds: cut at ``MAX_MESSAGE_CHARS`` (``whole=True`` keeps the length of a message another bound
    covers) and valid UTF-8 text.
    """
    message = readable_message(message, None if whole else MAX_MESSAGE_CHARS)
    return make_failure(ToolError(message, info), _text(f"Error: {message}"), None, contexts)


def tool_error_result(error: BaseException) -> ToolFailure:
    """The failure for a raised error: ``Error: <message>``, with ``info`` for a ToolrtError.

    A ``run_code`` failure is kept whole: its own message is cut where it is built, and the
    program's captured output after it is bounded by the output budget (spilled, not lost).
    """
    message = message_of(error)
    info = None
    if isinstance(error, ToolrtError):
        try:
            name, code = error.name, error.code
            if isinstance(name, str) and isinstance(code, str):
                info = ToolErrorInfo(name, code)
        except Exception:
            info = None
    return failure_result(message, info, whole=isinstance(error, CodeRunFailedError))


def lossy_arguments_error(error: NotLosslessJsonError) -> Exception:
    """What arguments that failed their snapshot (taken with path root ``arguments``) fail with.

    Text that is not valid UTF-8 is the model's mistake, one it can fix: ``INVALID_ARGS`` naming
    where it is. Any other lossy value keeps upstream's message.
    """
    if isinstance(error, UnencodableTextError):
        where = error.path.removeprefix("arguments").removeprefix(".") or "arguments"
        return ToolArgsError([f'"{where}" is not valid UTF-8 text ({error.reason})'])
    return TypeError("tool execution arguments must be losslessly JSON-serializable")


def aborted_result(body_invoked: bool, contexts: Any = ()) -> ToolFailure:
    """The failure for an aborted call (``tool call aborted``, or ``... before dispatch``)."""
    if body_invoked:
        return failure_result("tool call aborted", ToolErrorInfo("AbortError", TOOL_ABORTED), contexts)
    return failure_result(
        "tool call aborted before dispatch",
        ToolErrorInfo("AbortError", TOOL_ABORTED_BEFORE_DISPATCH),
        contexts,
    )


def rebuild_result(
    result: ToolExecutionResult, content: Any, meta: Any, contexts: Any
) -> ToolExecutionResult:
    """The same outcome with its durable fields replaced."""
    if isinstance(result, ToolSuccess):
        return make_success(result.value, content, meta, contexts, result.concludes_turn)
    return make_failure(result.error, content, meta, contexts)


def join_contexts(first: Any, second: Any) -> Any:
    """Two ``additional_contexts`` sequences as one, reusing either when the other is empty."""
    if not second:
        return first
    if not first:
        return tuple(second)
    return (*first, *second)


def unknown_tool_message(name: str) -> str:
    """``unknown tool "<name>"``, the name cut at ``MAX_ECHO_CHARS`` (a model may send any string)."""
    return f'unknown tool "{clip_text(name, MAX_ECHO_CHARS)}"'


def collapsed_message(name: str) -> str:
    """The message for a direct call of a tool that is callable only from inside ``run_code``."""
    name = clip_text(name, MAX_ECHO_CHARS)
    return (
        f'unknown tool "{name}": only `run_code` is callable directly — call `{name}` from inside a '
        "`run_code` program instead"
    )


def feedback_message(feedback: Sequence[Any]) -> str:
    """The failure message of a post-execute block: its feedback text, or a generic sentence."""
    return content_text(feedback) if feedback else "tool result blocked by post-execute policy"


def project_output(
    name: str, label: str, projector: Callable[[Any, Any], Any], arguments: Any, value: Any
) -> Any:
    """Run an output projector (``output.<label>``) and snapshot what it returns; failures are the tool's."""
    try:
        projected = projector(arguments, value)
    except asyncio.CancelledError:
        raise
    except BaseException as error:
        raise ToolOutputError(name, f"output.{label} failed: {message_of(error)}") from None
    try:
        return snapshot_json(projected)
    except UnencodableTextError as error:
        raise ToolOutputError(
            name, f"output.{label} returned non-lossless JSON ({error.path}: {error.reason})"
        ) from None
    except NotLosslessJsonError:
        raise ToolOutputError(name, f"output.{label} returned non-lossless JSON") from None
    except Exception as error:
        raise ToolOutputError(name, f"output.{label} failed: {message_of(error)}") from None


def as_content(name: str, content: Any) -> Any:
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


def result_field(value: Any) -> Any:
    """A result field as a frozen snapshot; a lossy field fails the call with upstream's message."""
    try:
        return snapshot_json(value)
    except NotLosslessJsonError:
        raise TypeError("tool result must be losslessly JSON-serializable") from None


def frozen_field(value: Any) -> Any:
    """``value`` as a frozen snapshot; results keep ``()`` and ``None`` as their empty values."""
    if value is None or value == ():
        return value
    return result_field(value)


def materialize(result: ToolExecutionResult) -> ToolExecutionResult:
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
        content = frozen_field(content)
        meta = frozen_field(meta)
        contexts = frozen_field(contexts)
        unchanged = (
            content is result.content and meta is result.meta and contexts is result.additional_contexts
        )
        if isinstance(result, ToolFailure) and (
            not isinstance(result.error, ToolError) or not isinstance(result.error.message, str)
        ):
            raise TypeError("tool result must be losslessly JSON-serializable")
        if unchanged:
            return result
        return rebuild_result(result, content, meta, contexts)
    except NotLosslessJsonError:
        return failure_result("tool result must be losslessly JSON-serializable")
    except Exception as error:
        return tool_error_result(error)


_FROZEN_SCALARS = frozenset({FrozenDict, FrozenList, str, int, bool})
