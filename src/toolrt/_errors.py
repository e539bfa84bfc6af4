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
    │       └── UnencodableTextError a string or key holds a lone surrogate (no UTF-8 form)
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

What a model reads of an error is bounded here too: :func:`clip_text` is the one function that cuts
text for a message (a whole message at :data:`MAX_MESSAGE_CHARS`, a value or name it echoes at
:data:`MAX_ECHO_CHARS`), and :func:`readable_message` is what every failure result carries.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "MAX_ECHO_CHARS",
    "MAX_LINE_CHARS",
    "MAX_MESSAGE_CHARS",
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
    "UnencodableTextError",
    "clip_text",
    "readable_message",
]

TOOL_ABORTED = "ABORTED"
"""The body ran, but the caller aborted before its success was committed: side effects are possible."""

TOOL_ABORTED_BEFORE_DISPATCH = "ABORTED_BEFORE_DISPATCH"
"""The caller aborted before the body was invoked: the tool had no chance to act."""


MAX_MESSAGE_CHARS = 4_000
"""The longest error message a model reads (about 1,000 tokens), cut marker included.

Long enough for every message toolrt writes itself (a dozen path-qualified violations, an enum of
fifty values, a traceback's last frames); short enough that an error echoing what the model sent
(a 50 MB argument, a 65 KB source line, a thousand unexpected keys) cannot fill its context. A
``run_code`` failure's captured output is not part of its message: the output budget bounds it.
"""

MAX_ECHO_CHARS = 200
"""The longest value or name a message quotes back (a path, a tool name)."""

MAX_LINE_CHARS = 1_000
"""The longest line of a multi-line message (a traceback's source line, its exception's text)."""


def clip_text(text: str, limit: int, *, line_limit: int | None = None) -> str:
    """``text`` at most ``limit`` characters long, the cut said where it is: ``[… N characters cut]``.

    The head and the tail are kept (three quarters and one quarter of what fits), since a message
    says what went wrong at its start and often what to do at its end. Text within the limit is
    returned as it is. ``line_limit`` first cuts each longer line on its own, so one huge line (a
    65 KB source line in a traceback) cannot push the lines after it (the exception) out.

    >>> clip_text("path " + "x" * 100 + " is outside", 40)
    'path xxxxxxxxxx[… 97 characters cut]side'
    """
    if line_limit is not None and len(text) > line_limit:
        text = "\n".join(clip_text(line, line_limit) for line in text.split("\n"))
    length = len(text)
    if length <= limit:
        return text
    # The marker counts what it replaces, and its own length decides that: settle the digit count.
    keep = limit
    while True:
        marker = f"[… {length - keep:,} characters cut]"
        fitted = max(limit - len(marker), 0)
        if fitted == keep:
            break
        keep = fitted
    tail = keep // 4
    return text[: keep - tail] + marker + (text[length - tail :] if tail else "")


_SURROGATE = re.compile("[\ud800-\udfff]")  # one U+FFFD per surrogate, not one per byte


def readable_message(text: str, limit: int | None = MAX_MESSAGE_CHARS) -> str:
    """An error message as a model may read it: cut at ``limit`` and valid UTF-8 text.

    A lone surrogate (from an exception's text, say) becomes U+FFFD: a message is prose, so
    replacing is right here, where a *value* holding one is refused (:class:`UnencodableTextError`).
    ``limit=None`` keeps the length, for text another bound already covers.
    """
    if limit is not None:
        text = clip_text(text, limit)
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


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


class UnencodableTextError(NotLosslessJsonError):
    """A string or an object key holds a lone surrogate: it has no UTF-8 form, so it cannot be logged,
    printed or sent to a model. ``path`` locates the string (or the object whose key it is)."""


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
        super().__init__(
            f"path {clip_text(repr(path), MAX_ECHO_CHARS)} is outside the allowed directory",
            "PATH_OUTSIDE_ROOT",
        )
