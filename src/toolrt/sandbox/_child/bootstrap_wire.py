"""The sandbox child's end of the channel: lossless JSON without importing ``json``, and
length-prefixed frames over the socket the host passed in.

The wire protocol is documented in ``_host/protocol.py`` (the host side). This module carries its own tiny
encoder/decoder so that booting does not import ``json`` (and with it ``re``): the C scanner and
string quoting of ``_json`` when present, and an iterative encoder that enforces the same lossless
rules as the host. Part of the child bootstrap (:mod:`bootstrap` loads it by path under
``python -I -S``); standard library only, no ``toolrt`` import.
"""

from __future__ import annotations

import _socket
import _thread
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing at run time would cost the child ~9 ms (it pulls in re)
    from typing import Any

__all__ = ["CHANNEL_FD", "MAX_JSON_DEPTH", "Channel", "NotLossless", "dumps", "loads", "quote"]

CHANNEL_FD = 3  # where the bootstrap moves the inherited socket first, so every later use can name it
MAX_JSON_DEPTH = 400  # keep equal to protocol.MAX_JSON_DEPTH
_MAX_SAFE_INTEGER = 2**53 - 1

# --- JSON without importing json ------------------------------------------------------------------

try:
    import _json

    class _ScanContext:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        memo: dict[Any, Any] = {}  # noqa: RUF012 - read by the C scanner only

        @staticmethod
        def parse_constant(token: str) -> Any:
            raise ValueError(f"{token} is not JSON")

    _scan = _json.make_scanner(_ScanContext())  # type: ignore[arg-type]
    quote = _json.encode_basestring_ascii

    def loads(text: str) -> Any:
        try:
            value, end = _scan(text, 0)
        except StopIteration as stop:
            raise ValueError(f"malformed JSON at {stop.value}") from None
        if end != len(text):
            raise ValueError("trailing data after JSON value")
        return value

except Exception:  # pragma: no cover - interpreters without the C accelerator
    import json as _json_module

    def loads(text: str) -> Any:
        return _json_module.loads(text)

    quote = _json_module.encoder.encode_basestring_ascii


class NotLossless(Exception):
    """:func:`dumps` was given a value that would not survive a JSON round trip unchanged."""


_END = object()


def _float_text(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):  # noqa: PLR0124 - NaN test
        raise NotLossless("NaN and infinities are not JSON numbers")
    if value == 0.0 and str(value).startswith("-"):
        raise NotLossless("-0.0 is not lossless JSON")
    return float.__repr__(value)


def _int_text(value: int) -> str:
    if not -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
        try:
            exact = float(value) == value
        except OverflowError:
            exact = False
        if not exact:
            raise NotLossless("integer is not exactly representable as a JSON number")
    return int.__repr__(value)


LONE_SURROGATE = "lone surrogate in a string"
"""Why a string with a lone surrogate is not lossless: it has no UTF-8 form, so the host could not
hand it to the model or print it (the host refuses it too, in the same words)."""


def _checked(text: str) -> str:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise NotLossless(LONE_SURROGATE) from None
    return text


def dumps(value: Any) -> str:
    """Compact ASCII JSON of a *lossless* JSON value; raises ``NotLossless``. Iterative.

    The same rules as the host's ``snapshot_json``: str keys only, no lone surrogates, no
    NaN/±inf/-0.0, integers exactly representable as doubles, dict/list/tuple containers, no cycles,
    at most MAX_JSON_DEPTH deep.
    """
    out: list[str] = []
    append = out.append
    stack: list[list[Any]] = []  # [iterator, is_dict, id, first]
    ancestors: set[int] = set()
    item = value
    while True:
        kind = type(item)
        if item is None:
            append("null")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif kind is str:
            append(quote(_checked(item)))
        elif kind is int:
            append(_int_text(item))
        elif kind is float:
            append(_float_text(item))
        elif isinstance(item, dict | list | tuple):
            if len(stack) >= MAX_JSON_DEPTH:
                raise NotLossless(f"value nests deeper than {MAX_JSON_DEPTH} levels")
            ident = id(item)
            if ident in ancestors:
                raise NotLossless("value is circular")
            ancestors.add(ident)
            if isinstance(item, dict):
                append("{")
                stack.append([iter(list(dict.items(item))), True, ident, True])
            else:
                append("[")
                stack.append([iter(list(item)), False, ident, True])
        elif isinstance(item, str):
            append(quote(_checked(str.__str__(item))))
        elif isinstance(item, int):
            append(_int_text(int(item)))
        elif isinstance(item, float):
            append(_float_text(float(item)))
        else:
            raise NotLossless(f"{kind.__name__} is not a JSON type")
        while stack:
            frame = stack[-1]
            following: Any = next(frame[0], _END)
            if following is _END:
                stack.pop()
                ancestors.discard(frame[2])
                append("}" if frame[1] else "]")
                continue
            if frame[3]:
                frame[3] = False
            else:
                append(",")
            if frame[1]:
                key, item = following
                if type(key) is not str:
                    if not isinstance(key, str):
                        raise NotLossless(f"object key {key!r} is not a string")
                    key = str.__str__(key)
                append(quote(_checked(key)))
                append(":")
            else:
                item = following
            break
        else:
            return "".join(out)


# --- the channel ------------------------------------------------------------------------------------


class Channel:
    """Length-prefixed JSON frames over the inherited socket (blocking; see ``_host/protocol.py``)."""

    def __init__(self, fd: int) -> None:
        self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM, 0, fd)
        self.buffer = bytearray()
        self.lock = _thread.allocate_lock()  # the program's threads may print concurrently

    def send_text(self, body: str) -> None:
        """Send one frame whose JSON body is already text."""
        data = body.encode("ascii")
        with self.lock:
            self.sock.sendall(len(data).to_bytes(4, "big") + data)

    def send(self, frame: dict[str, Any]) -> None:
        """Send ``frame`` as one frame."""
        self.send_text(dumps(frame))

    def pop(self) -> dict[str, Any] | None:
        """The next complete frame already read, decoded, or ``None``."""
        buffer = self.buffer
        if len(buffer) < 4:
            return None
        length = int.from_bytes(buffer[:4], "big")
        if len(buffer) < 4 + length:
            return None
        body = bytes(buffer[4 : 4 + length])
        del buffer[: 4 + length]
        frame = loads(body.decode("utf-8"))
        if type(frame) is not dict:
            raise ValueError("host frame is not an object")
        return frame

    def fill(self) -> None:
        """Read what the host has sent so far (blocking until something arrives; the host gone: exit)."""
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            os._exit(0)  # the host went away: nothing left to report to
        self.buffer += chunk

    def recv(self) -> dict[str, Any]:
        """The next frame from the host (blocking)."""
        while True:
            frame = self.pop()
            if frame is not None:
                return frame
            self.fill()
