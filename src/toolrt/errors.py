"""Error classes whose ``name`` and ``code`` reach results as ``error.info``.

A failed call never raises out of :meth:`toolrt.ToolRuntime.execute`; it becomes a result whose
``error.info`` is ``ToolErrorInfo(name=<class name>, code=<code>)`` when the exception is a
:class:`HarnessError`. Raise a ``HarnessError`` (or a subclass) from a tool body to give the model and
your logs a stable, machine-readable code::

    raise HarnessError("disk full", "ENOSPC")
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "AbortError",
    "HarnessError",
    "JsonSchemaError",
    "ToolArgsError",
    "ToolNotFoundError",
    "ToolOutputError",
]

TOOL_ABORTED = "ABORTED"
"""The body ran, but the caller aborted before its success was committed: side effects are possible."""

TOOL_ABORTED_BEFORE_DISPATCH = "ABORTED_BEFORE_DISPATCH"
"""The caller aborted before the body was invoked: the tool had no chance to act."""


class HarnessError(Exception):
    """An error with a stable ``code``; results carry ``info = {name: <class name>, code}``."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    @property
    def name(self) -> str:
        """The class name, as reported in ``error.info.name``."""
        return type(self).__name__


class ToolNotFoundError(HarnessError):
    """The name is not visible to the calling scope (``UNKNOWN_TOOL``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "UNKNOWN_TOOL")


class ToolArgsError(HarnessError):
    """Model-supplied arguments violate the tool's parameter schema (``INVALID_ARGS``)."""

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations: tuple[str, ...] = tuple(violations)
        super().__init__(f"invalid arguments: {'; '.join(self.violations)}", "INVALID_ARGS")


class ToolOutputError(HarnessError):
    """A tool's value or projections violate its output declaration (``INVALID_TOOL_OUTPUT``)."""

    def __init__(self, tool_name: str, detail: str, violations: Sequence[str] = ()) -> None:
        self.violations: tuple[str, ...] = tuple(violations)
        super().__init__(f'tool "{tool_name}" returned invalid output: {detail}', "INVALID_TOOL_OUTPUT")


class JsonSchemaError(HarnessError):
    """A schema uses constructs outside the supported subset (``UNSUPPORTED_SCHEMA``)."""

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations: tuple[str, ...] = tuple(violations)
        super().__init__(f"unsupported JSON schema: {'; '.join(self.violations)}", "UNSUPPORTED_SCHEMA")


class AbortError(HarnessError):
    """Cancellation, reported with ``ABORTED`` or ``ABORTED_BEFORE_DISPATCH``."""
