"""The host ↔ child channel of the Python sandbox: framing, and host-side validation of hostile frames.

Transport
=========

Exactly one file descriptor crosses into the child: one end of a ``socket.socketpair(AF_UNIX,
SOCK_STREAM)``, passed with ``pass_fds``. The child moves it to **fd 3** (:data:`CHANNEL_FD`) as its
first act, so the program always finds the channel there (like DSH's ``dsh-code-runtime-python``);
stdin is ``/dev/null`` and stdout/stderr are capped pipes that carry only diagnostics.

Every frame is ``<4-byte big-endian length N><N bytes of UTF-8 JSON object>``. JSON only: nothing is
ever unpickled or ``eval``-ed. The child writes compact ASCII-only JSON (``\\uXXXX`` escapes, so a
lone surrogate survives), with no ``NaN``/``Infinity`` tokens. Every object has a ``"t"`` (kind) field
and no fields beyond those listed here.

Host → child (trusted)::

    {"t": "boot", "confine": bool, "preimport": [str], "workDir": str,
     "policy": {"cpuSeconds": int, "memoryBytes": int, "maxOpenFiles": int, "maxFileBytes": int,
                "maxProcesses": int | null, "readPaths": [str], "readWritePaths": [str],
                "dropTo": [uid, gid] | null, "landlock": bool, "seccomp": bool,
                "privateTaskCount": bool}}
    {"t": "run", "program": str, "bindings": [{"global": str, "names": [str],
                                               "errorClass": {"name": str, "member": str} | null}],
     "limits": {"outputBytes": int, "valueBytes": int, "maxInFlight": int}}
    {"t": "reply", "id": int, "ok": true, "value": JSON}
    {"t": "reply", "id": int, "ok": false, "message": str}

Child → host (hostile: validated here field by field)::

    {"t": "ready", "report": {"layers": [str], "landlockAbi": int | null,
                              "enforcement": "full" | "partial" | "none", "notes": [str]}}
    {"t": "boot-failed", "message": str}
    {"t": "log", "text": str}
    {"t": "call", "id": int, "ns": str, "name": str, "args": JSON}
    {"t": "done", "ok": true}                       # completed without a value (NO_VALUE)
    {"t": "done", "ok": true, "value": JSON}        # return <value>
    {"t": "done", "ok": false, "kind": "exception" | "invalid-output" | "memory-limit"
                                       | "value-limit" | "disk-limit", "message": str}

Life of a child: boot frame (host; the rlimits in its policy are final, because the seccomp filter
forbids changing them later) → the child confines itself → ``ready`` carrying the enforcement
report, or ``boot-failed`` (→ ``sandbox-unavailable``) → (a warm child idles here) → ``run`` → any
number of ``log`` and ``call``/``reply`` exchanges → exactly one ``done`` → the child exits. A child
runs exactly one program. The host writes the boot frame right after spawning, so booting costs no
round trip.

Rules the host enforces (:class:`ProtocolViolation` → the run ends with kind ``worker-exit``, message
``protocol violation: <why>; worker killed``, and the whole process group is SIGKILLed):

* a frame longer than the per-run cap (declared length checked *before* the body is buffered);
* a body that is not UTF-8 JSON, uses ``NaN``/``Infinity``, nests deeper than :data:`MAX_JSON_DEPTH`,
  is not an object, has an unknown ``"t"`` or unknown/missing/mistyped fields;
* any frame but ``ready``/``boot-failed`` before the program was sent (a completion included), a
  second ``ready``, any frame from an idle pooled child, and anything after the one ``done`` (a
  second completion included) while the host waits for the child to exit;
* a ``call`` whose id is not a positive integer greater than every earlier id (so unknown and
  duplicate ids are both caught), whose namespace is not one of the run's globals, whose arguments
  are not lossless JSON, or that would put more than ``maxInFlight`` calls in flight. The well-behaved
  child applies **backpressure** itself (an ``asyncio`` semaphore; the tiny driver has one call in
  flight at a time), so exceeding the cap can only be a forged frame and is treated as a violation.

Payload rules that are *results*, not violations: a ``done`` value that is not lossless JSON (e.g.
``2**53 + 1`` or ``-0.0`` sent by a forged frame) ends the run as ``invalid-output`` / ``program
completion must be lossless JSON``, as upstream's worker does; an unknown binding name is answered
with an error reply (``unknown binding "<global>.<name>"``, or ``unknown tool "<name>"`` for a
namespace whose ``member_noun`` is ``tool``, then ``; did you mean "<closest>"?``) which the program
sees as its error class.

Text is valid UTF-8 end to end: a lone surrogate (which only a ``\\uD8xx``-style escape can carry) in
any string of a ``log``, ``call``, ``ready`` or ``boot-failed`` frame is a violation; in a ``done``
value it is ``invalid-output`` / ``program completion must be lossless JSON (lone surrogate in a
string)``; in a ``done`` message it becomes U+FFFD. The child refuses the same (``print`` raises
``UnicodeEncodeError``, as a real UTF-8 stdout does), and so does the host for binding results.

Sizes: a ``log`` text's UTF-8 length plus one (the newline joining it to the next entry: so no entry
is free, and their number is bounded) counts toward the run's ``outputBytes`` (with stdout and stderr);
the completion value's size is the length of its compact ASCII JSON encoding (what crosses the
wire) and counts toward ``valueBytes``. The frame cap is ``max(valueBytes, outputBytes, 16 MiB) +
64 KiB`` during a run and 64 KiB before it; the child keeps its frames under it by cutting a log
entry that would overflow ``outputBytes`` to just past the cap (the host then ends the run with
``output-limit``, keeping the entries that fit). Nesting is capped at :data:`MAX_JSON_DEPTH` both
ways (the child refuses deeper values as not lossless; the host refuses deeper binding results
with ``binding resolution must be lossless JSON``).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple, TypeAlias

from toolrt._errors import MAX_LINE_CHARS, clip_text
from toolrt._json import NotLosslessJsonError, has_lone_surrogate, snapshot_json

__all__ = [
    "CHANNEL_FD",
    "CHILD_DONE_KINDS",
    "HEADER_BYTES",
    "LONE_SURROGATE",
    "MAX_JSON_DEPTH",
    "BootFailed",
    "Call",
    "ChildFrame",
    "Done",
    "FrameDecoder",
    "Log",
    "ProtocolViolation",
    "Ready",
    "encode_frame",
    "lone_surrogate_in",
    "parse_child_frame",
    "value_depth_exceeds",
    "value_wire_bytes",
]

CHANNEL_FD: Final = 3
"""The channel's fd number inside the child."""

HEADER_BYTES: Final = 4
_HEADER = struct.Struct(">I")

MAX_JSON_DEPTH: Final = 400
"""Deepest container nesting either side will put in a frame (and accept from the child)."""

MAX_NAME_CHARS: Final = 4096
"""Longest binding name / namespace accepted in a ``call`` frame."""

MAX_MESSAGE_CHARS: Final = 64 * 1024
"""Longest error message accepted in a ``done`` / ``boot-failed`` frame (longer ones are cut)."""

LONE_SURROGATE: Final = "lone surrogate in a string"
"""Why text with a lone surrogate is refused at every frame: it has no UTF-8 form, so neither the
model endpoint nor the CLI's stdout could take it (the child refuses it in the same words)."""

CHILD_DONE_KINDS: Final = frozenset(
    {"exception", "invalid-output", "memory-limit", "value-limit", "disk-limit"}
)
"""Failure kinds a child may report itself (every other kind is decided by the host)."""


class ProtocolViolation(Exception):
    """A child broke the protocol; ``reason`` says how (the run ends as ``worker-exit``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- frames ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ready:
    """The child's ``ready`` frame: it confined itself, and reports what it achieved."""

    layers: tuple[str, ...]
    landlock_abi: int | None
    enforcement: Literal["full", "partial", "none"]
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BootFailed:
    """The child's ``boot-failed`` frame: confinement failed, with why."""

    message: str


# Log and Call come once per print and per binding call: named tuples, because a frozen dataclass
# costs ~1 µs more to build (every field goes through object.__setattr__).


class Log(NamedTuple):
    """The child's ``log`` frame: text the program printed."""

    text: str
    size: int
    """UTF-8 bytes of ``text`` (which holds no lone surrogate: the parser refuses one)."""


class Call(NamedTuple):
    """The child's ``call`` frame: the program calls a binding."""

    id: int
    namespace: str
    name: str
    args: Any
    """A lossless, deep-immutable snapshot."""


@dataclass(frozen=True, slots=True)
class Done:
    """The child's ``done`` frame: the program's one outcome."""

    ok: bool
    has_value: bool = False
    value: Any = None
    """The raw parsed value (the host checks losslessness itself, for ``invalid-output``)."""
    kind: str = ""
    message: str = ""


ChildFrame: TypeAlias = Ready | BootFailed | Log | Call | Done


def _frame_encoder() -> Callable[[Any], str]:
    """One encoder for every frame, built once. ``JSONEncoder.encode`` builds a C encoder per call
    (about half the cost of encoding a reply); this keeps one and calls it directly. Without
    circular-reference checks: every frame is built from snapshots, which are acyclic."""
    options = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # an interpreter without the C accelerator
        return options.encode
    chunks = make(
        None, options.default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False
    )

    def encode(payload: Any) -> str:
        return "".join(chunks(payload, 0))

    return encode


_ENCODE: Final = _frame_encoder()


def encode_frame(payload: dict[str, Any]) -> bytes:
    """Serialise one host → child frame (compact ASCII JSON; raises ``ValueError`` on NaN).
    ``payload`` must be acyclic (the host builds every frame from snapshots)."""
    body = _ENCODE(payload).encode("ascii")
    return _HEADER.pack(len(body)) + body


class FrameDecoder:
    """Incremental decoder for child → host bytes. ``feed`` returns the complete frames' bodies.

    The declared length is checked against ``max_frame_bytes`` as soon as the 4-byte header is in,
    so an oversized frame is refused before its body is buffered.
    """

    __slots__ = ("_buffer", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """The bodies of the frames completed by ``data`` (raises :class:`ProtocolViolation`)."""
        buffer = self._buffer
        buffer += data
        bodies: list[bytes] = []
        start = 0
        end = len(buffer)
        while end - start >= HEADER_BYTES:
            (length,) = _HEADER.unpack_from(buffer, start)
            if length > self.max_frame_bytes:
                raise ProtocolViolation(
                    f"frame of {length} bytes exceeds the {self.max_frame_bytes}-byte frame limit"
                )
            if end - start - HEADER_BYTES < length:
                break
            body_start = start + HEADER_BYTES
            bodies.append(bytes(buffer[body_start : body_start + length]))
            start = body_start + length
        if start:
            del buffer[:start]
        return bodies

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete frame still buffered (non-zero at EOF means a torn frame)."""
        return len(self._buffer)


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


_SCAN: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder(
    parse_constant=_reject_constant
).scan_once  # type: ignore[attr-defined]  # set in __init__; typeshed does not declare it
"""``JSONDecoder.decode`` without its two whitespace regexes: the child sends no whitespace around
a frame, and anything after the value is refused below (built once; ``json.loads`` with a keyword
argument builds a decoder per call)."""


def _decode(body: bytes) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
        try:
            frame, end = _SCAN(text, 0)
        except StopIteration as stop:
            raise ValueError(f"Expecting value: char {stop.value}") from None
        if end != len(text):
            raise ValueError(f"Extra data: char {end}")
    except RecursionError:
        raise ProtocolViolation(f"frame nests deeper than {MAX_JSON_DEPTH} levels") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise ProtocolViolation(f"malformed frame ({clip_text(str(error), 200)})") from None
    if type(frame) is not dict:
        raise ProtocolViolation(f"frame is a JSON {type(frame).__name__}, not an object")
    # A body with fewer brackets than the limit cannot nest that deep (brackets inside strings only
    # raise the count), so the walk is skipped for the common small frame.
    if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH + 2 and value_depth_exceeds(
        frame, MAX_JSON_DEPTH + 2
    ):
        raise ProtocolViolation(f"frame nests deeper than {MAX_JSON_DEPTH} levels")
    return frame


_FIELDS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    # kind: (required fields, optional fields) — "t" is implied.
    "ready": (frozenset({"report"}), frozenset()),
    "boot-failed": (frozenset({"message"}), frozenset()),
    "log": (frozenset({"text"}), frozenset()),
    "call": (frozenset({"id", "ns", "name", "args"}), frozenset()),
    "done": (frozenset({"ok"}), frozenset({"value", "kind", "message"})),
}


_EXACT_KEYS: Final = {kind: required | {"t"} for kind, (required, _) in _FIELDS.items()}
"""Each kind's keys when it carries no optional field: one comparison accepts the common frame."""


def _kind_of(frame: dict[str, Any]) -> str:
    kind = frame.get("t")
    if type(kind) is not str:
        raise ProtocolViolation('frame has no string "t" field')
    exact = _EXACT_KEYS.get(kind)
    if exact is None:
        raise ProtocolViolation(f"unknown frame kind {clip_text(repr(kind), 60)}")
    if frame.keys() == exact:
        return kind
    required, optional = _FIELDS[kind]
    keys = frame.keys() - {"t"}
    missing = required - keys
    if missing:
        raise ProtocolViolation(f"{kind} frame lacks {', '.join(sorted(missing))}")
    extra = keys - required - optional
    if extra:
        names = ", ".join(clip_text(repr(key), 40) for key in sorted(extra)[:5])
        raise ProtocolViolation(f"{kind} frame has unknown field(s) {names}")
    return kind


def _str_list(value: object, what: str, limit: int = 64) -> tuple[str, ...]:
    if type(value) is not list or len(value) > limit or any(type(item) is not str for item in value):
        raise ProtocolViolation(f"{what} must be a list of at most {limit} strings")
    return tuple(clip_text(item, 512) for item in value)


def _parse_ready(frame: dict[str, Any]) -> Ready:
    report = frame["report"]
    if type(report) is not dict or set(report) != {"layers", "landlockAbi", "enforcement", "notes"}:
        raise ProtocolViolation("ready report must have exactly layers, landlockAbi, enforcement, notes")
    abi = report["landlockAbi"]
    if abi is not None and (type(abi) is not int or not 0 <= abi < 1000):
        raise ProtocolViolation("ready report landlockAbi must be null or a small integer")
    enforcement = report["enforcement"]
    if enforcement not in ("full", "partial", "none"):
        raise ProtocolViolation("ready report enforcement must be full, partial or none")
    return Ready(
        layers=_str_list(report["layers"], "ready report layers"),
        landlock_abi=abi,
        enforcement=enforcement,
        notes=_str_list(report["notes"], "ready report notes"),
    )


def _parse_call(frame: dict[str, Any]) -> Call:
    call_id, namespace, name = frame["id"], frame["ns"], frame["name"]
    if type(call_id) is not int or not 0 < call_id < 2**53:
        raise ProtocolViolation("call id must be a positive integer")
    if type(namespace) is not str or type(name) is not str:
        raise ProtocolViolation("call ns and name must be strings")
    if len(namespace) > MAX_NAME_CHARS or len(name) > MAX_NAME_CHARS:
        raise ProtocolViolation(f"call name longer than {MAX_NAME_CHARS} characters")
    try:
        args = snapshot_json(frame["args"], "args")
    except NotLosslessJsonError as error:
        raise ProtocolViolation(f"call arguments are not lossless JSON ({error})") from None
    return Call(call_id, namespace, name, args)


def _parse_done(frame: dict[str, Any]) -> Done:
    ok = frame["ok"]
    if type(ok) is not bool:
        raise ProtocolViolation("done ok must be a boolean")
    if ok:
        if "kind" in frame or "message" in frame:
            raise ProtocolViolation("a successful done frame carries no kind or message")
        if "value" in frame:
            return Done(ok=True, has_value=True, value=frame["value"])
        return Done(ok=True)
    if "value" in frame:
        raise ProtocolViolation("a failed done frame carries no value")
    kind, message = frame.get("kind"), frame.get("message")
    if kind not in CHILD_DONE_KINDS:
        raise ProtocolViolation(f"done kind {clip_text(repr(kind), 60)} is not one a child may report")
    if type(message) is not str:
        raise ProtocolViolation("done message must be a string")
    # Cut line by line first: a traceback echoing a 65 KB source line keeps the exception after it.
    message = clip_text(message, MAX_MESSAGE_CHARS, line_limit=MAX_LINE_CHARS)
    return Done(ok=False, kind=kind, message=_encodable(message))


def _encodable(text: str) -> str:
    """An error message the model can read: a lone surrogate (from an exception's text) becomes
    U+FFFD. Messages are prose, not values, so replacing is right here, where a value is refused."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def lone_surrogate_in(value: Any) -> bool:
    """Whether a JSON value holds a lone surrogate in any string or object key. Iterative."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def parse_child_frame(body: bytes) -> ChildFrame:
    """Decode and validate one child → host frame body; raises :class:`ProtocolViolation`."""
    frame = _decode(body)
    kind = _kind_of(frame)
    # The body is valid UTF-8, so a lone surrogate can only come from a \uD8xx-style escape: a body
    # without one is spared the walk. A done frame's value is the run's to refuse (invalid-output).
    if kind != "done" and (b"\\ud" in body or b"\\uD" in body) and lone_surrogate_in(frame):
        raise ProtocolViolation(f"{kind} frame is not valid UTF-8 text ({LONE_SURROGATE})")
    if kind == "log":
        text = frame["text"]
        if type(text) is not str:
            raise ProtocolViolation("log text must be a string")
        return Log(text, len(text.encode("utf-8")))
    if kind == "call":
        return _parse_call(frame)
    if kind == "done":
        return _parse_done(frame)
    if kind == "ready":
        return _parse_ready(frame)
    message = frame["message"]
    if type(message) is not str:
        raise ProtocolViolation("boot-failed message must be a string")
    return BootFailed(clip_text(message, MAX_MESSAGE_CHARS))


# --- host-side value helpers -----------------------------------------------------------------------


def value_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether a JSON value (dicts/lists/tuples) nests deeper than ``limit``. Iterative."""
    if not isinstance(value, dict | list | tuple):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, dict | list | tuple):
                stack.append((child, depth + 1))
    return False


def value_wire_bytes(value: Any) -> int:
    """Size of ``value``'s compact ASCII JSON encoding (the child's wire form)."""
    return len(json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False))
