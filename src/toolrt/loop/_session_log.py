"""The session log's JSONL file: :class:`SessionLog`, its on-disk format, durability and crash recovery.

The writer and the reader of the file live together because they are the two halves of one format:
what :meth:`SessionLog.append` writes is exactly what :meth:`SessionLog.read` (and reopening) must
accept, and a crash mid-write must leave something the reader can tell apart from corruption.

On-disk format
--------------

UTF-8 text, one event per line, every line terminated by ``\\n``, nothing else in the file::

    {"seq":0,"type":"model/user","time":1767225600.123,"data":{"content":[...],"id":null,"source":null}}

* ``seq`` — the event's index in the file: ``0`` for the first line, then ``+1`` per line, no gaps.
  Reading checks it, so a file written by two writers at once is detected, not silently merged.
* ``type`` — a non-empty string; the types listed in :mod:`toolrt.loop._session_events` are *known*
  and their ``data`` is checked on append. Any other type (``"myapp/bookmark"``) may be appended
  and is carried along untouched.
* ``time`` — Unix time in seconds (a float) when the event was appended.
* ``data`` — a JSON object that is *lossless JSON* (:mod:`toolrt._json`): no NaN, no infinities,
  no ``-0.0``, integers exactly representable as doubles. Keys are snake_case.

Keys are written in that order, compactly (``","`` and ``":"`` separators), with non-ASCII text
raw (``ensure_ascii=False``), so the file is always valid UTF-8. An event whose data holds a lone
surrogate (a string no UTF-8 encoder can write) is refused on append as not lossless; a
``\\uD800``-style escape of one in the file is a corrupt line (a well-formed escaped *pair* reads
back as the one astral character it spells).

Crash recovery
--------------

Each event is written with one ``write`` to a file opened in append mode, so a crash can only cut
the *last* line. :meth:`SessionLog.read` reports such a line (no trailing newline, or a final line
that is not valid JSON) as :class:`TornLine` and returns every event before it; invalid JSON
anywhere else is :class:`SessionLogCorruptError` naming the line. :meth:`SessionLog.resume`
truncates a torn tail (reporting it as ``recovered_torn_line``) before appending, and numbering
continues from the last good event.

Creating or resuming
--------------------

Whether a path starts a new conversation or continues one is always said, never guessed:
:meth:`SessionLog.create` refuses a path that already holds events (reusing a path would mix the
old conversation into the new run), and :meth:`SessionLog.resume` refuses a path that holds no log
(a typo would silently start an empty one). :meth:`SessionLog.open` takes the same choice as a
required ``mode``, for code that decides it at run time.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

from toolrt._errors import InvalidEventError, SessionLogCorruptError, SessionLogError
from toolrt._json import NotLosslessJsonError, snapshot_json
from toolrt.loop._derive import derive_messages
from toolrt.loop._messages import Message
from toolrt.loop._session_events import Event, check_event_data

try:  # POSIX: one writer per file, enforced with an advisory lock.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["Durability", "OpenMode", "ReadResult", "SessionLog", "SessionLogCorruptError", "TornLine"]

# Named for the module this code was split out of, so existing logging configuration still applies.
_logger = logging.getLogger("toolrt.loop")

Durability: TypeAlias = Literal["flush", "fsync", "batch"]

_DURABILITIES = ("flush", "fsync", "batch")

OpenMode: TypeAlias = Literal["create", "resume"]
"""How :meth:`SessionLog.open` treats its path: start a new log, or continue an existing one."""

_OPEN_MODES: tuple[str, ...] = get_args(OpenMode)

_PREVIEW_BYTES = 200


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

    Build it with :meth:`create` (a new conversation), :meth:`resume` (an existing one), or
    :meth:`in_memory`::

        log = SessionLog.create("session.jsonl")   # SessionLogError if it already holds events
        log = SessionLog.resume("session.jsonl")   # SessionLogError if there is none

    :meth:`append` is synchronous and serialized by
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
            raise TypeError("use SessionLog.create(path), SessionLog.resume(path) or SessionLog.in_memory()")
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
        """The torn last line :meth:`resume` discarded, or ``None``."""

    # construction

    @classmethod
    def in_memory(cls, *, clock: Callable[[], float] = time.time) -> SessionLog:
        """A log kept in memory only (tests, ephemeral agents). Same validation as a file log."""
        return cls(_token=_PRIVATE, clock=clock)

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "flush",
        batch_size: int = 64,
        clock: Callable[[], float] = time.time,
    ) -> SessionLog:
        """Start a new log at ``path``; :class:`SessionLogError` if the path already holds one.

        A missing file is created (mode ``0o600``); an existing *empty* file is taken as it is (a
        ``mktemp``-made path). A file with anything in it is refused and left untouched: the error
        names the path and both ways on (resume it, or pick another path).
        """
        return cls.open(path, "create", durability=durability, batch_size=batch_size, clock=clock)

    @classmethod
    def resume(
        cls,
        path: str | os.PathLike[str],
        *,
        durability: Durability = "flush",
        batch_size: int = 64,
        clock: Callable[[], float] = time.time,
    ) -> SessionLog:
        """Continue the log at ``path``, after reading what it holds; :class:`SessionLogError` if
        there is no file there (nothing is created).

        A torn last line is truncated away (and kept in :attr:`recovered_torn_line`); a corrupt
        line before the end raises :class:`SessionLogCorruptError` and leaves the file untouched.
        """
        return cls.open(path, "resume", durability=durability, batch_size=batch_size, clock=clock)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        mode: OpenMode,
        *,
        durability: Durability = "flush",
        batch_size: int = 64,
        clock: Callable[[], float] = time.time,
    ) -> SessionLog:
        """:meth:`create` (``mode="create"``) or :meth:`resume` (``mode="resume"``) the log at ``path``.

        The mode is required: there is no silent "create or resume", since reusing a path by
        mistake would mix an old conversation into a new run.
        """
        if mode not in _OPEN_MODES:
            raise ValueError(f"mode must be 'create' or 'resume', not {mode!r}")
        if durability not in _DURABILITIES:
            raise ValueError(f"durability must be one of {', '.join(_DURABILITIES)}, not {durability!r}")
        if type(batch_size) is not int or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, not {batch_size!r}")
        name = os.fspath(path)
        flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
        created = False
        try:
            if mode == "create":
                try:
                    fd = os.open(name, flags | os.O_CREAT | os.O_EXCL, 0o600)
                    created = True
                except FileExistsError:
                    fd = os.open(name, flags)
            else:
                fd = os.open(name, flags)
        except FileNotFoundError:
            raise SessionLogError(
                f"{name}: no session log to resume (the file does not exist); "
                "start a new one with SessionLog.create(path)"
            ) from None
        except OSError as error:
            raise SessionLogError(f"{name}: cannot open the session log: {error.strerror or error}") from None
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise SessionLogError(f"{name}: session log is already open for writing") from None
            size = os.fstat(fd).st_size
            if mode == "create" and size:
                # Checked under the lock, so a writer that is appending to it is refused as such.
                raise SessionLogError(
                    f"{name}: a session log already exists here ({size:,} bytes); continue it with "
                    "SessionLog.resume(path), or start a new one at another path"
                )
            result = _parse(_read_all(fd), name)
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
        problem = check_event_data(type, snapshot)
        if problem is not None:
            raise InvalidEventError(f"{type} event rejected: {problem}")
        data_json = type_json = b""
        if self._path is not None:
            # The snapshot holds no lone surrogate (it is refused as not lossless), so this encodes.
            data_json = _dumps(snapshot).encode("utf-8")
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
        events = self.events()
        with _collector_paused():
            return derive_messages(events)

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


# One decoder for every line: json.loads with a keyword builds a new JSONDecoder per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a whole log is turned into objects.

    Reading a log allocates millions of containers and frees none, and each of the collector's
    full passes traverses every live one, so reopening cost grew faster than the log: 30,000 events
    took 3.6x what 10,000 did (decision 0012). Nothing read here forms a cycle, so pausing loses
    nothing; the collector is re-enabled (if it was on) however the read ends, and catches up on
    its next pass.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _parse(raw: bytes, path: str) -> ReadResult:
    with _collector_paused():
        return _parse_lines(raw, path)


def _parse_lines(raw: bytes, path: str) -> ReadResult:
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
        return _DECODER.decode(line.decode("utf-8"))
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
