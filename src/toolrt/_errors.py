"""Every exception toolrt raises, in one place, so a caller can see (and catch) the whole family.

The hierarchy::

    Exception
    ├── ToolrtError                  carries a stable ``code``; results report it as error.info
    │   ├── ToolNotFoundError        UNKNOWN_TOOL: the name is not visible to the calling scope
    │   ├── ToolArgsError            INVALID_ARGS: the arguments break the parameter schema
    │   ├── ToolOutputError          INVALID_TOOL_OUTPUT: the value breaks the output declaration
    │   ├── JsonSchemaError          UNSUPPORTED_SCHEMA: a schema outside the supported subset
    │   ├── AbortError               ABORTED / ABORTED_BEFORE_DISPATCH: the caller cancelled
    │   ├── CodeRunFailedError       CODE_RUN_FAILED: a Code Mode program failed
    │   ├── OutsideRootError         PATH_OUTSIDE_ROOT: a file tool's path leaves its root
    │   └── ConversationError        INVALID_CONVERSATION (also a ValueError): unsendable history
    ├── SessionLogError              a session log cannot be used (closed, locked, I/O)
    │   ├── SessionLogCorruptError   a line before the end of the log is not a valid event
    │   └── InvalidEventError        an event was rejected (also a ValueError)
    ├── TypeError
    │   └── NotLosslessJsonError     a value is not lossless JSON (``path`` locates it)
    ├── ValueError
    │   └── PromptError              the system prompt's configuration is wrong
    └── RuntimeError
        └── ScriptExhaustedError     a scripted model ran out of replies

Why one module: a failed call never raises out of :meth:`toolrt.ToolRuntime.execute`; it becomes a
result whose ``error.info`` is ``ToolErrorInfo(name=<class name>, code=<code>)`` when the exception
is a :class:`ToolrtError`. The other classes are configuration and I/O errors that *do* raise, to
the program that made the mistake. Raise a ``ToolrtError`` (or a subclass) from a tool body to give
the model and your logs a stable, machine-readable code::

    raise ToolrtError("disk full", "ENOSPC")
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "AbortError",
    "CodeRunFailedError",
    "ConversationError",
    "InvalidEventError",
    "JsonSchemaError",
    "NotLosslessJsonError",
    "OutsideRootError",
    "PromptError",
    "ScriptExhaustedError",
    "SessionLogCorruptError",
    "SessionLogError",
    "ToolArgsError",
    "ToolNotFoundError",
    "ToolOutputError",
    "ToolrtError",
]

TOOL_ABORTED = "ABORTED"
"""The body ran, but the caller aborted before its success was committed: side effects are possible."""

TOOL_ABORTED_BEFORE_DISPATCH = "ABORTED_BEFORE_DISPATCH"
"""The caller aborted before the body was invoked: the tool had no chance to act."""


class ToolrtError(Exception):
    """An error with a stable ``code``; results carry ``info = {name: <class name>, code}``."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    @property
    def name(self) -> str:
        """The class name, as reported in ``error.info.name``."""
        return type(self).__name__


class ToolNotFoundError(ToolrtError):
    """The name is not visible to the calling scope (``UNKNOWN_TOOL``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "UNKNOWN_TOOL")


class ToolArgsError(ToolrtError):
    """Model-supplied arguments violate the tool's parameter schema (``INVALID_ARGS``)."""

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations: tuple[str, ...] = tuple(violations)
        super().__init__(f"invalid arguments: {'; '.join(self.violations)}", "INVALID_ARGS")


class ToolOutputError(ToolrtError):
    """A tool's value or projections violate its output declaration (``INVALID_TOOL_OUTPUT``)."""

    def __init__(self, tool_name: str, detail: str, violations: Sequence[str] = ()) -> None:
        self.violations: tuple[str, ...] = tuple(violations)
        super().__init__(f'tool "{tool_name}" returned invalid output: {detail}', "INVALID_TOOL_OUTPUT")


class JsonSchemaError(ToolrtError):
    """A schema uses constructs outside the supported subset (``UNSUPPORTED_SCHEMA``)."""

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations: tuple[str, ...] = tuple(violations)
        super().__init__(f"unsupported JSON schema: {'; '.join(self.violations)}", "UNSUPPORTED_SCHEMA")


class AbortError(ToolrtError):
    """Cancellation, reported with ``ABORTED`` or ``ABORTED_BEFORE_DISPATCH``."""


class NotLosslessJsonError(TypeError):
    """A value is not lossless JSON. ``path`` locates the offending part (``value.a[0]``)."""

    def __init__(self, reason: str, path: str = "value") -> None:
        super().__init__(f"{path}: {reason}")
        self.reason = reason
        self.path = path


class PromptError(ValueError):
    """The prompt's configuration is wrong: a bad ``tool_order``, a clashing tool name, a broken
    ``{{variable}}`` reference, or more than one ``complete`` section."""


class CodeRunFailedError(ToolrtError):
    """A program failed (``CODE_RUN_FAILED``): ``code run failed (<kind>): <message>`` + captured output."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "CODE_RUN_FAILED")


class SessionLogError(Exception):
    """A session log cannot be used: closed, held by another writer, broken by an I/O error."""


class InvalidEventError(SessionLogError, ValueError):
    """An event was rejected: its data is not lossless JSON or does not fit its known type.

    Raised by :meth:`SessionLog.append` (nothing is written) and by :func:`derive_messages` for a
    logged event of a known type whose data is malformed.
    """


class SessionLogCorruptError(SessionLogError):
    """A line before the end of the file is not a valid event; nothing past it can be trusted."""

    def __init__(self, path: str, line_number: int, reason: str) -> None:
        super().__init__(f"{path}:{line_number}: corrupt session log line ({reason})")
        self.path = path
        self.line_number = line_number
        self.reason = reason


class ScriptExhaustedError(RuntimeError):
    """The model was asked for more replies than its script holds."""


class ConversationError(ToolrtError, ValueError):
    """The conversation cannot be sent: a call without a result, a result without a call, ...

    Raised before any request is made (code ``INVALID_CONVERSATION``), so a broken history fails
    loudly in the agent rather than as a provider 400 in the middle of a session.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, "INVALID_CONVERSATION")


class OutsideRootError(ToolrtError):
    """A path resolves outside the tools' root (``PATH_OUTSIDE_ROOT``)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"path {path!r} is outside the allowed directory", "PATH_OUTSIDE_ROOT")
