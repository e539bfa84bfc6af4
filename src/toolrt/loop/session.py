"""The durable session log: an append-only JSONL file of events, and the conversation derived from it.

The log is the source of truth of a session: everything the model sees can be rebuilt from it
(:func:`derive_messages`), and UIs replay it (:mod:`toolrt.loop.replay`). ::

    with SessionLog.open("session.jsonl", durability="batch") as log:
        log.append(*model_user_event("list the TODOs"))
        log.append(*tool_call_event("c1", "grep", '{"pattern": "TODO"}', {"pattern": "TODO"}))
        messages = log.messages()

On-disk format
--------------

UTF-8 text, one event per line, every line terminated by ``\\n``, nothing else in the file::

    {"seq":0,"type":"model/user","time":1767225600.123,"data":{"content":[...],"id":null,"source":null}}

* ``seq`` — the event's index in the file: ``0`` for the first line, then ``+1`` per line, no gaps.
  Reading checks it, so a file written by two writers at once is detected, not silently merged.
* ``type`` — a non-empty string; the types below are *known* and their ``data`` is checked on
  append. Any other type (``"myapp/bookmark"``) may be appended and is carried along untouched.
* ``time`` — Unix time in seconds (a float) when the event was appended.
* ``data`` — a JSON object that is *lossless JSON* (:mod:`toolrt._json`): no NaN, no infinities,
  no ``-0.0``, integers exactly representable as doubles. Keys are snake_case.

Keys are written in that order, compactly (``","`` and ``":"`` separators), with non-ASCII text
raw (``ensure_ascii=False``). A string holding surrogate code points cannot be UTF-8 encoded raw,
so such an event is written with ``\\uXXXX`` escapes instead (still one line). A lone surrogate
reads back as itself; a high+low surrogate *pair* reads back as the one astral character it spells
(the same UTF-16 string, which is what JSON means by it).

Known event types and their ``data`` (``?`` marks a value that may be ``null``):

``model/user``
    ``{content: [block], id: str?, source: json?}`` — a user message.
``model/assistant``
    ``{text: str, reasoning: str?, tool_calls: [{id, name, arguments: str}], stop_reason: str?,
    usage: {input_tokens: int?, output_tokens: int?}?}`` — ``arguments`` is the model's raw text.
``tool/call``
    ``{call_id, name, arguments: str, parsed_arguments: json?, agent: json?}`` — ``arguments`` is the
    raw text; ``parsed_arguments`` is what it parsed to, ``null`` when it did not parse (to
    lossless JSON).
``tool/result``
    ``{call_id, name, content: [block], is_error: bool, error: {message, info: {name, code}?}?,
    meta: json?}`` — ``error`` is set exactly when ``is_error``; the canonical value is never stored.
``context/added``
    ``{call_id, id: str, content: [block], source: json?}`` — an additional context appended after
    the result of ``call_id``.
``approval/asked`` / ``approval/decided``
    ``{call_id, tool_name, reason: str?, arguments: json, agent: json?}`` /
    ``{call_id, tool_name, outcome: "allowed-once" | "rejected" | "cancelled" | "unavailable"}``.
``tool/code-dispatch-start`` / ``tool/code-dispatch``
    ``{root_call_id, parent_call_id, sub_call_id, name, arguments: json, agent: json?}``, the settle
    event adding ``is_error: bool, content: [block]`` — upstream's B9 events with snake_case keys.
``turn/start`` / ``turn/end``
    ``{turn: int?, agent: json?}`` / ``{turn: int?, reason: "stop" | "step-budget" | "concluded" |
    "aborted" | "error", error: str?}``.

Extra keys in ``data`` are allowed and preserved (forward compatibility).

Crash recovery
--------------

Each event is written with one ``write`` to a file opened in append mode, so a crash can only cut
the *last* line. :meth:`SessionLog.read` reports such a line (no trailing newline, or a final line
that is not valid JSON) as :class:`TornLine` and returns every event before it; invalid JSON
anywhere else is :class:`SessionLogCorruptError` naming the line. :meth:`SessionLog.open` truncates a
torn tail (reporting it as ``recovered_torn_line``) before appending, and numbering continues from
the last good event.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias

from .._json import NotLosslessJsonError, snapshot_json, text_block_content
from ..approval import ApprovalOutcome
from ..content import ContentBlock
from ..content import UserMessage as ContextMessage
from ..results import ToolExecutionResult
from .messages import AssistantMessage, Message, ToolCall, ToolResultMessage, Usage, UserMessage

try:  # POSIX: one writer per file, enforced with an advisory lock.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "APPROVAL_ASKED",
    "APPROVAL_DECIDED",
    "CODE_DISPATCH",
    "CODE_DISPATCH_START",
    "CONTEXT_ADDED",
    "INCOMPLETE_CALL_TEXT",
    "MODEL_ASSISTANT",
    "MODEL_USER",
    "TOOL_CALL",
    "TOOL_RESULT",
    "TURN_END",
    "TURN_START",
    "Durability",
    "Event",
    "InvalidEventError",
    "NewEvent",
    "ReadResult",
    "SessionLog",
    "SessionLogCorruptError",
    "SessionLogError",
    "TornLine",
    "TurnEndReason",
    "approval_asked_event",
    "approval_decided_event",
    "code_dispatch_event",
    "code_dispatch_start_event",
    "context_added_event",
    "derive_messages",
    "model_assistant_event",
    "model_user_event",
    "tool_call_event",
    "tool_result_event",
    "turn_end_event",
    "turn_start_event",
]

_logger = logging.getLogger(__name__)

MODEL_USER = "model/user"
MODEL_ASSISTANT = "model/assistant"
TOOL_CALL = "tool/call"
TOOL_RESULT = "tool/result"
CONTEXT_ADDED = "context/added"
APPROVAL_ASKED = "approval/asked"
APPROVAL_DECIDED = "approval/decided"
CODE_DISPATCH_START = "tool/code-dispatch-start"
CODE_DISPATCH = "tool/code-dispatch"
TURN_START = "turn/start"
TURN_END = "turn/end"

INCOMPLETE_CALL_TEXT = "Error: tool call did not complete (the session ended before its result was recorded)"
"""The content of the synthetic result :func:`derive_messages` gives a call without a logged result."""

Durability: TypeAlias = Literal["flush", "fsync", "batch"]
TurnEndReason: TypeAlias = Literal["stop", "step-budget", "concluded", "aborted", "error"]

_DURABILITIES = ("flush", "fsync", "batch")
_TURN_END_REASONS = ("stop", "step-budget", "concluded", "aborted", "error")
_APPROVAL_OUTCOMES = ("allowed-once", "rejected", "cancelled", "unavailable")
_PREVIEW_BYTES = 200


# --- errors and records ---------------------------------------------------------------------------


class SessionLogError(Exception):
    """A session log cannot be used: closed, held by another writer, broken by an I/O error."""


class SessionLogCorruptError(SessionLogError):
    """A line before the end of the file is not a valid event; nothing past it can be trusted."""

    def __init__(self, path: str, line_number: int, reason: str) -> None:
        super().__init__(f"{path}:{line_number}: corrupt session log line ({reason})")
        self.path = path
        self.line_number = line_number
        self.reason = reason


class InvalidEventError(SessionLogError, ValueError):
    """An event was rejected: its data is not lossless JSON or does not fit its known type.

    Raised by :meth:`SessionLog.append` (nothing is written) and by :func:`derive_messages` for a
    logged event of a known type whose data is malformed.
    """


@dataclass(frozen=True, slots=True)
class Event:
    """One logged event. ``data`` is a frozen lossless-JSON snapshot (read it, never mutate it)."""

    seq: int
    type: str
    time: float
    data: Mapping[str, Any]


class NewEvent(NamedTuple):
    """An event to append, as the ``*_event`` constructors build it: ``log.append(*new_event)``."""

    type: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TornLine:
    """The last line of a log, cut by a crash: where it starts and what it held."""

    offset: int
    """Byte offset of the start of the torn line (the file's valid length)."""
    line_number: int
    """1-based line number of the torn line."""
    length: int
    """Size of the torn tail in bytes."""
    preview: bytes
    """The first bytes of the torn line (at most 200)."""
    reason: str
    """Why it is torn: ``missing trailing newline`` or the JSON error."""


@dataclass(frozen=True, slots=True)
class ReadResult:
    """What :meth:`SessionLog.read` found: every intact event, and a torn last line if any."""

    events: tuple[Event, ...]
    torn: TornLine | None


# --- the log --------------------------------------------------------------------------------------


class SessionLog:
    """An append-only event log, backed by a JSONL file or by memory only.

    Build it with :meth:`open` or :meth:`in_memory`. :meth:`append` is synchronous and serialized by
    a lock, so threads and asyncio tasks may share one log (the event loop is held only for the
    write itself, plus the ``fsync`` in ``"fsync"`` durability). Durability:

    * ``"flush"`` — every event is handed to the operating system before ``append`` returns: it
      survives a crash of the process (and other readers see it at once), not a power loss.
    * ``"fsync"`` — every event is also ``fsync``-ed before ``append`` returns.
    * ``"batch"`` — like ``"flush"``, plus an ``fsync`` every ``batch_size`` events, on :meth:`sync`
      and on :meth:`close`.

    A file log holds an exclusive advisory lock (``flock``) while open: a second writer on the same
    file, in this process or another, gets :class:`SessionLogError` instead of interleaving lines.
    New files are created with mode ``0o600`` (transcripts often hold secrets).
    """

    def __init__(self, *, _token: object, clock: Callable[[], float] = time.time) -> None:
        if _token is not _PRIVATE:
            raise TypeError("use SessionLog.open(path) or SessionLog.in_memory()")
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._clock = clock
        self._path: str | None = None
        self._fd: int | None = None
        self._durability: Durability = "flush"
        self._batch_size = 1
        self._unsynced = 0
        self._size = 0
        self._closed = False
        self._broken: str | None = None
        self.recovered_torn_line: TornLine | None = None
        """The torn last line :meth:`open` discarded, or ``None``."""

    # construction

    @classmethod
    def in_memory(cls, *, clock: Callable[[], float] = time.time) -> SessionLog:
        """A log kept in memory only (tests, ephemeral agents). Same validation as a file log."""
        return cls(_token=_PRIVATE, clock=clock)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "flush",
        batch_size: int = 64,
        clock: Callable[[], float] = time.time,
    ) -> SessionLog:
        """Open (or create) the log at ``path`` for appending, after reading what it already holds.

        A torn last line is truncated away (and kept in :attr:`recovered_torn_line`); a corrupt
        line before the end raises :class:`SessionLogCorruptError` and leaves the file untouched.
        """
        if durability not in _DURABILITIES:
            raise ValueError(f"durability must be one of {', '.join(_DURABILITIES)}, not {durability!r}")
        if type(batch_size) is not int or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, not {batch_size!r}")
        name = os.fspath(path)
        flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
        try:
            fd = os.open(name, flags | os.O_CREAT | os.O_EXCL, 0o600)
            created = True
        except FileExistsError:
            fd = os.open(name, flags)
            created = False
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise SessionLogError(f"{name}: session log is already open for writing") from None
            result = _parse(_read_all(fd), name)
            size = os.fstat(fd).st_size
            if result.torn is not None:
                os.ftruncate(fd, result.torn.offset)
                os.fsync(fd)
                size = result.torn.offset
                _logger.warning(
                    "%s: discarded a torn last line (%d bytes at offset %d: %s)",
                    name,
                    result.torn.length,
                    result.torn.offset,
                    result.torn.reason,
                )
            if created and durability != "flush":
                _fsync_directory(name)
        except BaseException:
            os.close(fd)
            raise
        log = cls(_token=_PRIVATE, clock=clock)
        log._path = name
        log._fd = fd
        log._durability = durability
        log._batch_size = batch_size
        log._size = size
        log._events = list(result.events)
        log.recovered_torn_line = result.torn
        return log

    @staticmethod
    def read(path: str | os.PathLike[str]) -> ReadResult:
        """Read a log without modifying it: its intact events and a torn last line, if any.

        Raises :class:`SessionLogCorruptError` for a bad line before the last one.
        """
        name = os.fspath(path)
        with open(name, "rb") as file:
            return _parse(file.read(), name)

    # properties

    @property
    def path(self) -> str | None:
        """The file path, or ``None`` for an in-memory log."""
        return self._path

    @property
    def durability(self) -> Durability:
        return self._durability

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def next_seq(self) -> int:
        """The ``seq`` the next appended event will get."""
        with self._lock:
            return len(self._events)

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)

    def __repr__(self) -> str:
        where = self._path if self._path is not None else "<memory>"
        state = "closed" if self._closed else f"{len(self._events)} events"
        return f"<SessionLog {where} {self._durability} {state}>"

    # writing

    def append(self, type: str, data: Mapping[str, Any]) -> Event:
        """Validate, number, time-stamp and durably append one event; return it.

        ``data`` must be a lossless-JSON object (and, for a known type, have that type's keys).
        Anything invalid raises :class:`InvalidEventError` and writes nothing. An I/O error while
        writing rolls the file back to its previous length and is re-raised. A failed ``fsync``
        raises :class:`SessionLogError` after the event was written (it is in :meth:`events`), and
        the log then refuses further appends: reopen it to continue from what the file holds.
        """
        if type.__class__ is not str or not type or not _encodable(type):
            raise InvalidEventError(f"event type must be a non-empty UTF-8 string, not {type!r}")
        if not isinstance(data, Mapping):
            raise InvalidEventError(f"{type} event data must be a JSON object, not {_kind(data)}")
        try:
            snapshot = snapshot_json(data if isinstance(data, dict) else dict(data), "data")
        except NotLosslessJsonError as error:
            raise InvalidEventError(f"{type} event rejected: {error}") from error
        problem = _check_data(type, snapshot)
        if problem is not None:
            raise InvalidEventError(f"{type} event rejected: {problem}")
        data_json = type_json = b""
        if self._path is not None:
            text = _dumps(snapshot)
            try:
                data_json = text.encode("utf-8")
            except UnicodeEncodeError:
                # Surrogate code points: write them escaped, and return what a reader will get back.
                text = json.dumps(snapshot, separators=(",", ":"), allow_nan=False)
                data_json = text.encode("ascii")
                snapshot = snapshot_json(json.loads(text), "data")
            type_json = _dumps(type).encode("utf-8")
        with self._lock:
            self._check_writable()
            seq = len(self._events)
            stamp = float(self._clock())
            if not math.isfinite(stamp):
                raise InvalidEventError(f"the session clock returned {stamp!r}")
            event = Event(seq, type, stamp, snapshot)
            if self._fd is not None:
                time_json = repr(stamp).encode("ascii")
                self._write(
                    b'{"seq":%d,"type":%b,"time":%b,"data":%b}\n' % (seq, type_json, time_json, data_json)
                )
            self._events.append(event)
            if self._fd is not None and self._durability != "flush":
                self._sync_after_append()
            return event

    def sync(self) -> None:
        """``fsync`` whatever has been appended (any durability); a no-op in memory."""
        with self._lock:
            self._check_writable()
            if self._fd is not None:
                self._fsync()

    def close(self) -> None:
        """Flush pending ``batch`` syncs, release the file and its lock. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            fd, self._fd = self._fd, None
            if fd is None:
                return
            try:
                if self._unsynced and self._broken is None:
                    os.fsync(fd)
            finally:
                os.close(fd)

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # reading

    def events(self) -> tuple[Event, ...]:
        """Every event so far, in ``seq`` order (including those read when the file was opened)."""
        with self._lock:
            return tuple(self._events)

    def messages(self) -> list[Message]:
        """The conversation derived from the log (see :func:`derive_messages`)."""
        return derive_messages(self.events())

    # internals (called with the lock held)

    def _check_writable(self) -> None:
        if self._closed:
            raise SessionLogError("session log is closed")
        if self._broken is not None:
            raise SessionLogError(f"session log is unusable after an I/O error ({self._broken}); reopen it")

    def _write(self, payload: bytes) -> None:
        fd = self._fd
        assert fd is not None
        view = memoryview(payload)
        try:
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except BaseException as error:
            try:
                os.ftruncate(fd, self._size)  # nothing half-written
            except OSError:
                self._broken = f"could not roll back a failed write: {error}"
            raise
        self._size += len(payload)

    def _sync_after_append(self) -> None:
        self._unsynced += 1
        if self._durability == "fsync" or self._unsynced >= self._batch_size:
            self._fsync()

    def _fsync(self) -> None:
        assert self._fd is not None
        try:
            os.fsync(self._fd)
        except OSError as error:
            # After a failed fsync the kernel may have dropped the dirty pages: nothing written since
            # the last good sync can be trusted, so refuse further appends.
            self._broken = f"fsync failed: {error}"
            raise SessionLogError(f"{self._path}: fsync failed: {error}") from error
        self._unsynced = 0


_PRIVATE = object()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kind(value: object) -> str:
    return type(value).__name__


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)  # appends ignore the offset (O_APPEND), reads start here
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _fsync_directory(path: str) -> None:
    """Make a new file's directory entry durable (POSIX; skipped where directories cannot be opened)."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- parsing --------------------------------------------------------------------------------------


class _BadJson(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _BadJson(f"{name} is not JSON")


def _parse(raw: bytes, path: str) -> ReadResult:
    events: list[Event] = []
    lines = raw.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    offset = 0
    last = len(lines) - 1
    for index, line in enumerate(lines):
        try:
            record = _load(line)
        except _BadJson as error:
            if index == last and not tail:
                cut = TornLine(offset, index + 1, len(line) + 1, line[:_PREVIEW_BYTES], str(error))
                return ReadResult(tuple(events), cut)
            raise SessionLogCorruptError(path, index + 1, str(error)) from None
        problem = _envelope_problem(record, len(events))
        if problem is not None:
            raise SessionLogCorruptError(path, index + 1, problem)
        try:
            data = snapshot_json(record["data"], "data")
        except NotLosslessJsonError as error:
            raise SessionLogCorruptError(path, index + 1, str(error)) from None
        events.append(Event(record["seq"], record["type"], float(record["time"]), data))
        offset += len(line) + 1
    torn: TornLine | None = None
    if tail:
        torn = TornLine(offset, len(lines) + 1, len(tail), tail[:_PREVIEW_BYTES], "missing trailing newline")
    return ReadResult(tuple(events), torn)


def _load(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except _BadJson:
        raise
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise _BadJson(f"invalid JSON: {error}") from None


def _envelope_problem(record: Any, expected_seq: int) -> str | None:
    if type(record) is not dict:
        return f"an event must be a JSON object, not {_kind(record)}"
    seq = record.get("seq")
    if type(seq) is not int:
        return '"seq" must be an integer'
    if seq != expected_seq:
        return f'"seq" is {seq}, expected {expected_seq} (events must be numbered 0, 1, 2, ... without gaps)'
    kind = record.get("type")
    if type(kind) is not str or not kind:
        return '"type" must be a non-empty string'
    stamp = record.get("time")
    if not isinstance(stamp, int | float) or isinstance(stamp, bool) or not math.isfinite(stamp):
        return '"time" must be a finite number'
    if type(record.get("data")) is not dict:
        return '"data" must be a JSON object'
    return None


# --- known event data -----------------------------------------------------------------------------

_Check: TypeAlias = tuple[str, Callable[[Any], bool], str]


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_opt_str(value: Any) -> bool:
    return value is None or type(value) is str


def _is_opt_int(value: Any) -> bool:
    return value is None or type(value) is int


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _is_any(value: Any) -> bool:
    return True


def _is_content(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(block, dict) and type(block.get("type")) is str for block in value
    )


def _is_tool_calls(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(call, dict) and all(type(call.get(key)) is str for key in ("id", "name", "arguments"))
        for call in value
    )


def _is_usage(value: Any) -> bool:
    return value is None or (
        isinstance(value, dict)
        and _is_opt_int(value.get("input_tokens"))
        and _is_opt_int(value.get("output_tokens"))
    )


def _is_error(value: Any) -> bool:
    if value is None:
        return True
    if not isinstance(value, dict) or type(value.get("message")) is not str:
        return False
    info = value.get("info")
    return info is None or (
        isinstance(info, dict) and _is_str(info.get("name")) and _is_str(info.get("code"))
    )


def _one_of(options: tuple[str, ...]) -> Callable[[Any], bool]:
    return lambda value: value in options and type(value) is str


_STR = "a string"
_OPT_STR = "a string or null"
_CONTENT = 'a list of content blocks ({"type": <string>, ...})'
_CODE_DISPATCH: tuple[_Check, ...] = (
    ("root_call_id", _is_str, _STR),
    ("parent_call_id", _is_str, _STR),
    ("sub_call_id", _is_str, _STR),
    ("name", _is_str, _STR),
    ("arguments", _is_any, "present"),
)
_SCHEMAS: dict[str, tuple[_Check, ...]] = {
    MODEL_USER: (("content", _is_content, _CONTENT), ("id", _is_opt_str, _OPT_STR)),
    MODEL_ASSISTANT: (
        ("text", _is_str, _STR),
        ("reasoning", _is_opt_str, _OPT_STR),
        ("tool_calls", _is_tool_calls, "a list of {id, name, arguments} string objects"),
        ("stop_reason", _is_opt_str, _OPT_STR),
        ("usage", _is_usage, "null or {input_tokens, output_tokens} (integers or null)"),
    ),
    TOOL_CALL: (
        ("call_id", _is_str, _STR),
        ("name", _is_str, _STR),
        ("arguments", _is_str, "the raw arguments string"),
        ("parsed_arguments", _is_any, "present (null when the arguments did not parse)"),
    ),
    TOOL_RESULT: (
        ("call_id", _is_str, _STR),
        ("name", _is_str, _STR),
        ("content", _is_content, _CONTENT),
        ("is_error", _is_bool, "a boolean"),
        ("error", _is_error, "null or {message: string, info: null or {name, code}}"),
    ),
    CONTEXT_ADDED: (
        ("call_id", _is_str, _STR),
        ("id", _is_str, _STR),
        ("content", _is_content, _CONTENT),
    ),
    APPROVAL_ASKED: (
        ("call_id", _is_str, _STR),
        ("tool_name", _is_str, _STR),
        ("reason", _is_opt_str, _OPT_STR),
        ("arguments", _is_any, "present"),
    ),
    APPROVAL_DECIDED: (
        ("call_id", _is_str, _STR),
        ("tool_name", _is_str, _STR),
        ("outcome", _one_of(_APPROVAL_OUTCOMES), "one of " + ", ".join(_APPROVAL_OUTCOMES)),
    ),
    CODE_DISPATCH_START: _CODE_DISPATCH,
    CODE_DISPATCH: (
        *_CODE_DISPATCH,
        ("is_error", _is_bool, "a boolean"),
        ("content", _is_content, _CONTENT),
    ),
    TURN_START: (("turn", _is_opt_int, "an integer or null"),),
    TURN_END: (
        ("turn", _is_opt_int, "an integer or null"),
        ("reason", _one_of(_TURN_END_REASONS), "one of " + ", ".join(_TURN_END_REASONS)),
        ("error", _is_opt_str, _OPT_STR),
    ),
}


def _check_data(type: str, data: Mapping[str, Any]) -> str | None:
    """Why ``data`` does not fit the known ``type`` (``None`` when it does, or the type is unknown)."""
    checks = _SCHEMAS.get(type)
    if checks is None:
        return None
    for key, check, expected in checks:
        if key not in data:
            return f"data.{key} is missing"
        if not check(data[key]):
            return f"data.{key} must be {expected}"
    if type == TOOL_RESULT and (data["error"] is None) == data["is_error"]:
        return "data.error must be set exactly when data.is_error is true"
    return None


# --- constructors ---------------------------------------------------------------------------------


def model_user_event(
    content: str | Sequence[ContentBlock], *, id: str | None = None, source: Any = None
) -> NewEvent:
    """``model/user``: a user message (a string becomes one text block)."""
    blocks = text_block_content(content) if isinstance(content, str) else list(content)
    return NewEvent(MODEL_USER, {"content": blocks, "id": id, "source": source})


def model_assistant_event(message: AssistantMessage, usage: Usage | None = None) -> NewEvent:
    """``model/assistant``: what the model said, its calls with their raw argument text, and usage."""
    return NewEvent(
        MODEL_ASSISTANT,
        {
            "text": message.text,
            "reasoning": message.reasoning,
            "tool_calls": [
                {"id": call.id, "name": call.name, "arguments": call.arguments} for call in message.tool_calls
            ],
            "stop_reason": message.stop_reason,
            "usage": None
            if usage is None
            else {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        },
    )


def tool_call_event(
    call_id: str, name: str, arguments: str, parsed_arguments: Any, *, agent: Any = None
) -> NewEvent:
    """``tool/call``: a call about to run — the raw argument text and what it parsed to (or ``None``).

    Parsed arguments that are not lossless JSON (the model wrote ``NaN``, ``-0.0`` or ``1e999``,
    which Python's ``json`` accepts) are logged as ``null``: the raw text is the record of what the
    model sent, and a call record must never be unloggable. ``agent`` must be JSON (an id, not a
    scope object): replay passes it to ``runtime.get``.
    """
    try:
        parsed_arguments = snapshot_json(parsed_arguments, "parsed_arguments")
    except NotLosslessJsonError:
        parsed_arguments = None
    return NewEvent(
        TOOL_CALL,
        {
            "call_id": call_id,
            "name": name,
            "arguments": arguments,
            "parsed_arguments": parsed_arguments,
            "agent": agent,
        },
    )


def tool_result_event(call_id: str, name: str, result: ToolExecutionResult) -> NewEvent:
    """``tool/result``: the durable part of a result (content, error, meta — never the value)."""
    error: dict[str, Any] | None = None
    if result.is_error:
        failure = result.error
        info = failure.info
        error = {
            "message": failure.message,
            "info": None if info is None else {"name": info.name, "code": info.code},
        }
    return NewEvent(
        TOOL_RESULT,
        {
            "call_id": call_id,
            "name": name,
            "content": result.content,
            "is_error": result.is_error,
            "error": error,
            "meta": result.meta,
        },
    )


def context_added_event(call_id: str, message: ContextMessage | Mapping[str, Any]) -> NewEvent:
    """``context/added``: an additional context (``{id, content, source?}``) after ``call_id``'s result."""
    return NewEvent(
        CONTEXT_ADDED,
        {
            "call_id": call_id,
            "id": message["id"],
            "content": message["content"],
            "source": message.get("source"),
        },
    )


def approval_asked_event(
    call_id: str, tool_name: str, *, reason: str | None, arguments: Any, agent: Any = None
) -> NewEvent:
    """``approval/asked``: a human was asked whether ``tool_name`` may run with ``arguments``."""
    return NewEvent(
        APPROVAL_ASKED,
        {
            "call_id": call_id,
            "tool_name": tool_name,
            "reason": reason,
            "arguments": arguments,
            "agent": agent,
        },
    )


def approval_decided_event(call_id: str, tool_name: str, outcome: ApprovalOutcome) -> NewEvent:
    """``approval/decided``: the answer (an ``ApprovalOutcome``)."""
    return NewEvent(APPROVAL_DECIDED, {"call_id": call_id, "tool_name": tool_name, "outcome": outcome})


def code_dispatch_start_event(
    *, root_call_id: str, parent_call_id: str, sub_call_id: str, name: str, arguments: Any, agent: Any = None
) -> NewEvent:
    """``tool/code-dispatch-start``: a ``run_code`` sub-call started (log-only)."""
    return NewEvent(
        CODE_DISPATCH_START,
        {
            "root_call_id": root_call_id,
            "parent_call_id": parent_call_id,
            "sub_call_id": sub_call_id,
            "name": name,
            "arguments": arguments,
            "agent": agent,
        },
    )


def code_dispatch_event(
    *,
    root_call_id: str,
    parent_call_id: str,
    sub_call_id: str,
    name: str,
    arguments: Any,
    is_error: bool,
    content: Sequence[ContentBlock],
    agent: Any = None,
) -> NewEvent:
    """``tool/code-dispatch``: a ``run_code`` sub-call settled (log-only)."""
    return NewEvent(
        CODE_DISPATCH,
        {
            "root_call_id": root_call_id,
            "parent_call_id": parent_call_id,
            "sub_call_id": sub_call_id,
            "name": name,
            "arguments": arguments,
            "is_error": is_error,
            "content": content,
            "agent": agent,
        },
    )


def turn_start_event(turn: int | None = None, *, agent: Any = None) -> NewEvent:
    """``turn/start``."""
    return NewEvent(TURN_START, {"turn": turn, "agent": agent})


def turn_end_event(reason: TurnEndReason, *, turn: int | None = None, error: str | None = None) -> NewEvent:
    """``turn/end`` with why the turn ended (``error`` carries the message when ``reason="error"``)."""
    return NewEvent(TURN_END, {"turn": turn, "reason": reason, "error": error})


# --- the derived conversation ---------------------------------------------------------------------


class _Batch:
    """The tool calls of one assistant message, and what the log recorded for them so far."""

    __slots__ = ("calls", "contexts", "deferred", "results")

    def __init__(self, calls: tuple[ToolCall, ...]) -> None:
        self.calls = calls
        self.results: dict[str, ToolResultMessage] = {}
        self.contexts: dict[str, list[UserMessage]] = {call.id: [] for call in calls}
        self.deferred: list[UserMessage] = []

    def close(self, out: list[Message]) -> None:
        for call in self.calls:
            result = self.results.get(call.id)
            if result is None:
                result = ToolResultMessage(call.id, call.name, text_block_content(INCOMPLETE_CALL_TEXT), True)
            out.append(result)
        for call in self.calls:
            out.extend(self.contexts[call.id])
        out.extend(self.deferred)


def derive_messages(events: Iterable[Event]) -> list[Message]:
    """Rebuild the provider-neutral conversation from logged events.

    * ``model/user`` and ``model/assistant`` events become user and assistant messages.
    * After an assistant message with tool calls come its results **in the model's call order**,
      however the ``tool/result`` events interleave in the log; then the ``context/added`` messages
      of those calls, again in call order (a call's own contexts in log order).
    * A call without a logged result (the session ended mid-batch) gets a synthetic error result
      (:data:`INCOMPLETE_CALL_TEXT`), so every call has exactly one result. (Deriving a *live* log
      mid-batch therefore shows placeholders for the calls still running.)
    * A user message logged while a batch is still open is placed after that batch.
    * ``tool/call``, ``approval/*``, ``tool/code-dispatch*``, ``turn/*`` and unknown events derive
      nothing.

    Raises :class:`InvalidEventError` for a malformed message event, a result or context whose
    ``call_id`` is not a call of the open assistant message, a second result for one call, or an
    assistant message repeating a call id.
    """
    out: list[Message] = []
    batch: _Batch | None = None
    for event in events:
        kind = event.type
        if kind not in _DERIVED:
            continue
        data = event.data
        problem = _check_data(kind, data)
        if problem is not None:
            raise InvalidEventError(f"event {event.seq} ({kind}): {problem}")
        if kind == MODEL_USER:
            message = UserMessage(data["content"], data["id"], data.get("source"))
            if batch is None:
                out.append(message)
            else:
                batch.deferred.append(message)
        elif kind == MODEL_ASSISTANT:
            if batch is not None:
                batch.close(out)
                batch = None
            calls = tuple(
                ToolCall(call["id"], call["name"], call["arguments"]) for call in data["tool_calls"]
            )
            out.append(AssistantMessage(data["text"], calls, data["reasoning"], data["stop_reason"]))
            if calls:
                batch = _Batch(calls)
                if len(batch.contexts) != len(calls):
                    raise InvalidEventError(f"event {event.seq} ({kind}): repeated tool call id")
        else:
            call_id = data["call_id"]
            if batch is None or call_id not in batch.contexts:
                raise InvalidEventError(
                    f"event {event.seq} ({kind}): call {call_id!r} is not a tool call of the preceding"
                    " assistant message"
                )
            if kind == TOOL_RESULT:
                if call_id in batch.results:
                    raise InvalidEventError(f"event {event.seq} ({kind}): second result for call {call_id!r}")
                batch.results[call_id] = ToolResultMessage(
                    call_id, data["name"], data["content"], data["is_error"]
                )
            else:
                batch.contexts[call_id].append(UserMessage(data["content"], data["id"], data.get("source")))
    if batch is not None:
        batch.close(out)
    return out


_DERIVED = frozenset((MODEL_USER, MODEL_ASSISTANT, TOOL_RESULT, CONTEXT_ADDED))
