"""Lossless JSON: snapshots, deep-immutable views, and JavaScript-compatible text.

A value is *lossless JSON* when every JSON reader, including JavaScript's ``JSON.parse``, gets back
exactly the value that was written. That rules out what Python's ``json`` module would silently
accept or change:

* ``bool`` is a boolean, never a number (``True == 1`` in Python, not in JSON schemas);
* ``nan``, ``±inf`` and ``-0.0`` are rejected (JSON has no spelling for the first two, and ``-0``
  reads back as ``0`` in most decoders);
* integers must be exactly representable as an IEEE-754 double (``|n| <= 2**53 - 1`` always is;
  ``2**60`` is, ``2**53 + 1`` is not), because a JavaScript consumer would read a different number;
* strings and keys must be valid Unicode text: a lone surrogate (a code point in U+D800–U+DFFF,
  which ``"\\ud800"`` in JSON text or ``chr(0xD800)`` can make) has no UTF-8 form, so no model,
  log or terminal could be given it; it is refused as :class:`UnencodableTextError`;
* mapping keys must be ``str``; cycles are rejected (siblings sharing one object are fine: only an
  object that contains itself is a cycle);
* only ``dict``, ``list`` and ``tuple`` containers and ``str``/``int``/``float``/``bool``/``None``
  scalars; everything else (sets, bytes, dataclasses, datetimes, ...) is rejected. A ``tuple``
  snapshots to an array, as ``json.dumps`` would write it.

Every walk here is iterative: a 100,000-deep value snapshots without ``RecursionError``.

Snapshots are deep copies built from :class:`FrozenDict` and :class:`FrozenList`, which are
``dict``/``list`` subclasses whose mutators raise :class:`TypeError`. They compare equal to plain
dicts and lists, serialise with ``json.dumps``, and read like ordinary mappings and sequences, so a
tool body or a listener sees ordinary data it cannot change. ``copy.deepcopy`` and :func:`thaw` give
back mutable plain copies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from typing import Any, NoReturn, TypeAlias

from toolrt._errors import MAX_ECHO_CHARS, NotLosslessJsonError, UnencodableTextError, clip_text

__all__ = [
    "LONE_SURROGATE",
    "MAX_SAFE_INTEGER",
    "FrozenDict",
    "FrozenList",
    "JsonValue",
    "NotLosslessJsonError",
    "UnencodableTextError",
    "has_lone_surrogate",
    "is_lossless_json",
    "js_json_dumps",
    "js_number",
    "js_string",
    "snapshot_json",
    "thaw",
]

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""Any JSON value. Snapshots use :class:`FrozenList` / :class:`FrozenDict` for containers."""

MAX_SAFE_INTEGER = 2**53 - 1

LONE_SURROGATE = "lone surrogate in a string"
"""Why a string holding a surrogate code point is refused: it has no UTF-8 form."""


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate code point, which no UTF-8 encoder can write.

    In a Python ``str`` every surrogate is lone: a well-formed pair read from JSON text is already
    the one astral character it spells. ASCII text (the common case) answers in constant time; other
    text is asked of CPython's UTF-8 encoder, about 1 ns a character (a regex scan is 3-6x slower).

    >>> has_lone_surrogate("ok \U0001f600"), has_lone_surrogate("ok" + chr(0xDCFF))
    (False, True)
    """
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _immutable(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is immutable: this JSON value is a frozen snapshot")


class FrozenDict(dict[str, Any]):
    """A ``dict`` whose mutators raise ``TypeError``: an immutable JSON object that reads normally.

    >>> args = snapshot_json({"path": "a.txt"})
    >>> args["path"]
    'a.txt'
    >>> args["path"] = "b.txt"
    Traceback (most recent call last):
    TypeError: FrozenDict is immutable: this JSON value is a frozen snapshot
    """

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Direct construction validates, so every FrozenDict is a trusted lossless snapshot.
        if self:
            _immutable(self)
        _dict_update(self, snapshot_json(dict(*args, **kwargs)))

    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, object]) -> Any:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_dict, (dict(self),))


class FrozenList(list[Any]):
    """A ``list`` whose mutators raise ``TypeError``: an immutable JSON array that reads normally."""

    __slots__ = ()

    def __init__(self, items: Iterable[Any] = ()) -> None:
        # Direct construction validates, so every FrozenList is a trusted lossless snapshot.
        if self:
            _immutable(self)
        _list_extend(self, snapshot_json(list(items)))

    __setitem__ = _immutable
    __delitem__ = _immutable
    __iadd__ = _immutable
    __imul__ = _immutable
    append = _immutable
    extend = _immutable
    insert = _immutable
    pop = _immutable
    remove = _immutable
    clear = _immutable
    sort = _immutable
    reverse = _immutable

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, object]) -> Any:
        return thaw(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_list, (list(self),))


def _rebuild_dict(items: dict[str, Any]) -> FrozenDict:
    return snapshot_json(items)  # type: ignore[no-any-return]


def _rebuild_list(items: list[Any]) -> FrozenList:
    return snapshot_json(items)  # type: ignore[no-any-return]


# The unbound base-class methods fill new snapshots without going through the raising overrides.
_dict_set = dict.__setitem__
_dict_update = dict.update
_list_append = list.append
_list_extend = list.extend


def text_block_content(text: str) -> FrozenList:
    """``[{"type": "text", "text": text}]`` as a snapshot, built without the general walk."""
    block = dict.__new__(FrozenDict)
    _dict_set(block, "type", "text")
    _dict_set(block, "text", text)
    content = list.__new__(FrozenList)
    _list_append(content, block)
    return content


def _new_dict() -> FrozenDict:
    return dict.__new__(FrozenDict)


def _new_list() -> FrozenList:
    return list.__new__(FrozenList)


def _check_int(value: int) -> int:
    if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    try:
        exact = float(value) == value
    except OverflowError:
        exact = False
    if not exact:
        raise NotLosslessJsonError("integer is not exactly representable as a JSON number")
    return value


def _check_text(value: str) -> str:
    if not value.isascii() and has_lone_surrogate(value):
        raise UnencodableTextError(LONE_SURROGATE)
    return value


def _check_float(value: float) -> float:
    if math.isnan(value) or math.isinf(value):
        raise NotLosslessJsonError("NaN and infinities are not JSON numbers")
    if value == 0.0 and math.copysign(1.0, value) < 0:
        raise NotLosslessJsonError("-0.0 is not lossless JSON (it reads back as 0)")
    return value


def _scalar(value: object) -> tuple[bool, Any]:
    """Classify a non-container value: (True, normalised) for a JSON scalar, (False, None) otherwise.

    Raises NotLosslessJsonError for a number that is a JSON type but not lossless.
    """
    if value is None or value is True or value is False:
        return True, value
    kind = type(value)
    if kind is str:
        return True, _check_text(value)  # type: ignore[arg-type]
    if kind is int:
        return True, _check_int(value)  # type: ignore[arg-type]
    if kind is float:
        return True, _check_float(value)  # type: ignore[arg-type]
    # Subclasses (StrEnum, IntEnum, ...) snapshot to their plain JSON value, as json.dumps writes them.
    if isinstance(value, bool):
        return True, bool(value)
    if isinstance(value, str):
        return True, _check_text(str.__str__(value))
    if isinstance(value, int):
        return True, _check_int(int(value))
    if isinstance(value, float):
        return True, _check_float(float(value))
    return False, None


def _describe(value: object) -> str:
    kind = type(value)
    # Qualified outside builtins, so "mpf" reads as the mpmath type it is.
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return f"{name} is not a JSON type"


def _path_of(frames: list[list[Any]], root: str, key: object = None, has_key: bool = False) -> str:
    parts = [root]
    for frame in frames[1:]:
        parts.append(_path_part(frame[3]))
    if has_key:
        parts.append(_path_part(key))
    return "".join(parts)


def _path_part(key: object) -> str:
    return f"[{key}]" if isinstance(key, int) else f".{key}"


def snapshot_json(value: object, path: str = "value", *, lone_surrogates: bool = False) -> Any:
    """Return a deep-immutable lossless copy of ``value``, or raise :class:`NotLosslessJsonError`.

    Already-frozen snapshots are returned as they are (they cannot have changed), so passing a
    snapshot through the pipeline twice costs nothing.

    ``lone_surrogates=True`` keeps strings that hold lone surrogates instead of refusing them: only
    for JSON *Schema* text checked against upstream's contract (JavaScript strings may hold them, and
    the SDK renderers escape them), never for a value that crosses a boundary. Such a snapshot must
    stay where it was made: a strict snapshot shares frozen containers without looking inside.

    >>> snapshot_json({"a": [1, 2.5, None]}) == {"a": [1, 2.5, None]}
    True
    >>> snapshot_json(float("nan"))
    Traceback (most recent call last):
    toolrt._errors.NotLosslessJsonError: value: NaN and infinities are not JSON numbers
    """
    kind = type(value)
    if kind is str:
        if lone_surrogates or not has_lone_surrogate(value):  # type: ignore[arg-type]
            return value
        raise UnencodableTextError(LONE_SURROGATE, path)
    if value is None or kind is bool or kind is FrozenDict or kind is FrozenList:
        return value
    if kind is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:  # type: ignore[operator]
        return value
    if kind is dict:
        if _flat_scalars(value):  # type: ignore[arg-type]
            # The common case (tool arguments like {"a": 1, "b": 2}) copies at C speed.
            flat = _new_dict()
            _dict_update(flat, value)  # type: ignore[call-overload]
            return flat
    elif kind is list:
        flat_list = _flat_list(value)  # type: ignore[arg-type]
        if flat_list is not None:
            return flat_list
    else:
        try:
            is_scalar, scalar = _scalar(value)
        except UnencodableTextError:
            if not lone_surrogates:
                raise UnencodableTextError(LONE_SURROGATE, path) from None
            is_scalar, scalar = True, str.__str__(value)
        except NotLosslessJsonError as error:
            raise type(error)(error.reason, path) from None
        if is_scalar:
            return scalar
    root = _new_container(value)
    if root is None:
        raise NotLosslessJsonError(_describe(value), path)
    # Each frame: [iterator over the source, target container, id of the source, key in parent].
    frames: list[list[Any]] = [[_items(value), root, id(value), None]]
    ancestors = {id(value)}
    while frames:
        frame = frames[-1]
        target = frame[1]
        is_dict = type(target) is FrozenDict
        for item in frame[0]:
            if is_dict:
                key, child = item
                if type(key) is not str:
                    if not isinstance(key, str):
                        raise NotLosslessJsonError(
                            f"object key {clip_text(repr(key), MAX_ECHO_CHARS)} is not a string",
                            _path_of(frames, path),
                        )
                    key = str.__str__(key)
                if not lone_surrogates and not key.isascii() and has_lone_surrogate(key):
                    # The key cannot go in the path (no model could read it): the escaped form can.
                    raise UnencodableTextError(
                        f"object key {clip_text(js_string(key), MAX_ECHO_CHARS)} holds a {LONE_SURROGATE}",
                        _path_of(frames, path),
                    )
            else:
                key, child = item
            try:
                is_scalar, scalar = _scalar(child)
            except UnencodableTextError:
                if not lone_surrogates:
                    raise UnencodableTextError(LONE_SURROGATE, _path_of(frames, path, key, True)) from None
                is_scalar, scalar = True, str.__str__(child)
            except NotLosslessJsonError as error:
                raise type(error)(error.reason, _path_of(frames, path, key, True)) from None
            if is_scalar:
                if is_dict:
                    _dict_set(target, key, scalar)
                else:
                    _list_append(target, scalar)
                continue
            child_kind = type(child)
            if child_kind is FrozenDict or child_kind is FrozenList:
                # A sealed snapshot is acyclic and lossless by construction; share it.
                if is_dict:
                    _dict_set(target, key, child)
                else:
                    _list_append(target, child)
                continue
            child_target = _new_container(child)
            if child_target is None:
                raise NotLosslessJsonError(_describe(child), _path_of(frames, path, key, True))
            child_id = id(child)
            if child_id in ancestors:
                raise NotLosslessJsonError("value is circular", _path_of(frames, path, key, True))
            if is_dict:
                _dict_set(target, key, child_target)
            else:
                _list_append(target, child_target)
            ancestors.add(child_id)
            frames.append([_items(child), child_target, child_id, key])
            break
        else:
            frames.pop()
            ancestors.discard(frame[2])
    return root


def _flat_scalars(value: dict[Any, Any]) -> bool:
    """Whether a dict holds only str keys and plain lossless scalars or already-frozen snapshots."""
    for key, child in value.items():
        if type(key) is not str or not key.isascii():
            return False  # the general walk checks (and names) a non-ASCII key
        kind = type(child)
        if kind is str:
            if child.isascii() or not has_lone_surrogate(child):
                continue
            return False
        if child is None or kind is bool or kind is FrozenDict or kind is FrozenList:
            continue  # frozen children are trusted snapshots: share them
        if kind is int:
            if -MAX_SAFE_INTEGER <= child <= MAX_SAFE_INTEGER:
                continue
            return False
        if kind is float and math.isfinite(child) and child != 0.0:
            continue
        return False
    return True


def _flat_list(value: list[Any]) -> FrozenList | None:
    """A list of plain scalars and flat dicts (content blocks) snapshots without the general walk."""
    target = _new_list()
    for child in value:
        kind = type(child)
        if kind is dict:
            if not _flat_scalars(child):
                return None
            block = _new_dict()
            _dict_update(block, child)
            _list_append(target, block)
        elif (
            kind is FrozenDict
            or kind is FrozenList
            or (kind is str and (child.isascii() or not has_lone_surrogate(child)))
            or child is None
            or kind is bool
            or (kind is int and -MAX_SAFE_INTEGER <= child <= MAX_SAFE_INTEGER)
        ):
            _list_append(target, child)
        else:
            return None
    return target


def _new_container(value: object) -> FrozenDict | FrozenList | None:
    if isinstance(value, dict):
        return _new_dict()
    if isinstance(value, list | tuple):
        return _new_list()
    return None


def _items(value: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(value, dict):
        # list() first: a dict mutated by a getter mid-walk must not break iteration.
        return iter(list(dict.items(value)))
    return enumerate(list(value))


def is_lossless_json(value: object, *, lone_surrogates: bool = False) -> bool:
    """Whether ``value`` is lossless JSON (see the module docstring for the rules; ``lone_surrogates``
    as for :func:`snapshot_json`)."""
    try:
        snapshot_json(value, lone_surrogates=lone_surrogates)
    except NotLosslessJsonError:
        return False
    return True


def thaw(value: Any) -> Any:
    """Return a mutable deep copy (plain ``dict``/``list``) of a JSON value. Iterative."""
    if not isinstance(value, dict | list | tuple):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        if isinstance(source, dict):
            for key, child in source.items():
                if isinstance(child, dict | list | tuple):
                    new: Any = {} if isinstance(child, dict) else []
                    target[key] = new
                    stack.append((child, new))
                else:
                    target[key] = child
        else:
            for child in source:
                if isinstance(child, dict | list | tuple):
                    new = {} if isinstance(child, dict) else []
                    target.append(new)
                    stack.append((child, new))
                else:
                    target.append(child)
    return root


# --- JavaScript-compatible text -------------------------------------------------------------------
# Model-facing messages quote values the way upstream's JSON.stringify does, so the same schema
# produces byte-identical text in both implementations.

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


_SURROGATE_PAIR = re.compile(r"[\ud800-\udbff][\udc00-\udfff]")


def js_string(text: str) -> str:
    """``JSON.stringify(text)``: escapes quotes, backslashes, C0 controls and lone surrogates only."""
    if _NEEDS_ESCAPE.search(text) is None:
        return f'"{text}"'
    if _SURROGATE_PAIR.search(text):
        # A well-formed pair is one astral character in JavaScript: keep it raw.
        out: list[str] = []
        position = 0
        for pair in _SURROGATE_PAIR.finditer(text):
            out.append(_NEEDS_ESCAPE.sub(_escape, text[position : pair.start()]))
            out.append(pair.group(0))
            position = pair.end()
        out.append(_NEEDS_ESCAPE.sub(_escape, text[position:]))
        return '"' + "".join(out) + '"'
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def js_number(number: int | float) -> str:
    """ECMAScript ``Number::toString``: ``1.0`` → ``1``, ``1e21`` → ``1e+21``, ``1e-7`` → ``1e-7``."""
    if isinstance(number, bool):
        raise TypeError("a bool is not a JSON number")
    if isinstance(number, int):
        if -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
            return str(number)
        number = float(number)  # JavaScript holds a double: print the double's shortest digits
    if math.isnan(number):
        return "NaN"
    if number in (math.inf, -math.inf):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    digits, exponent = _shortest_digits(abs(number))
    k = len(digits)
    n = exponent  # the decimal point sits after n digits: value = 0.digits * 10**n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exp = n - 1
    exp_text = f"+{exp}" if exp >= 0 else str(exp)
    if k == 1:
        return f"{sign}{digits}e{exp_text}"
    return f"{sign}{digits[0]}.{digits[1:]}e{exp_text}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip digits (as Python's repr chooses them) and the decimal exponent n."""
    text = repr(value)
    mantissa, _, exp_part = text.partition("e")
    exponent = int(exp_part) if exp_part else 0
    whole, _, fraction = mantissa.partition(".")
    if fraction == "0":
        fraction = ""
    digits = whole + fraction
    point = len(whole) + exponent
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    stripped = stripped.rstrip("0")
    return stripped, point


def js_json_dumps(value: Any) -> str:
    """Compact ``JSON.stringify(value)`` of a lossless JSON value (iterative, no recursion)."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Token):
            out.append(item.text)
        elif item is None:
            out.append("null")
        elif item is True:
            out.append("true")
        elif item is False:
            out.append("false")
        elif isinstance(item, str):
            out.append(js_string(item))
        elif isinstance(item, int | float):
            out.append(js_number(item))
        elif isinstance(item, dict):
            if not item:
                out.append("{}")
                continue
            out.append("{")
            pending: list[Any] = []
            for index, (key, child) in enumerate(item.items()):
                if index:
                    pending.append(_COMMA)
                pending.append(_Token(js_string(key) + ":"))
                pending.append(child)
            pending.append(_CLOSE_BRACE)
            stack.extend(reversed(pending))
        else:
            if not item:
                out.append("[]")
                continue
            out.append("[")
            pending = []
            for index, child in enumerate(item):
                if index:
                    pending.append(_COMMA)
                pending.append(child)
            pending.append(_CLOSE_BRACKET)
            stack.extend(reversed(pending))
    return "".join(out)


class _Token:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_COMMA = _Token(",")
_CLOSE_BRACE = _Token("}")
_CLOSE_BRACKET = _Token("]")
