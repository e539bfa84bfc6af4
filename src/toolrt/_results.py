"""What a call produces: :class:`ToolSuccess` or :class:`ToolFailure`.

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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

__all__ = ["ToolError", "ToolErrorInfo", "ToolExecutionResult", "ToolFailure", "ToolSuccess"]


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
