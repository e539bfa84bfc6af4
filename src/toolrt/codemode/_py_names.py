"""Names and comment text for the Python Code Mode SDK (helpers of :mod:`.sdk_python`).

Port of the naming half of upstream ``py-types.ts``: which names may be emitted bare, how a
``TypedDict`` class name is derived and capped, and how a description becomes a one-line comment
or docstring that can never break the generated block.

JavaScript semantics emulated here, because upstream is a JavaScript program:

* Strings are UTF-16. A Python ``str`` may hold a surrogate *pair* as two code points (e.g. after
  ``surrogatepass`` decoding); JavaScript sees one astral character there, so every name and
  description is first passed through :func:`well_formed`, which joins such pairs. Lone
  surrogates stay lone and are escaped where they would reach emitted text.
* Lengths and sort order count UTF-16 code units (:func:`utf16_key`, :func:`cap_class_name_base`).
* ``\\s`` is the ECMAScript whitespace set, not Python's (which also folds ``\\x1c``-``\\x1f`` and
  NEL); ``toUpperCase`` only sees the first UTF-16 unit of a word, so an astral head stays as is.

The identifier predicates use the running interpreter's Unicode tables (``str.isidentifier``,
``str.upper``, ``unicodedata``): the generated block is read by a Python program, so the verdict of
the interpreter that compiles it is the one that keeps the block valid. Upstream reads the
JavaScript engine's (newer) tables instead; see the module notes of :mod:`.sdk_python`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = [
    "HARD_KEYWORDS",
    "MAX_CLASS_NAME_BASE",
    "camel_case",
    "cap_class_name_base",
    "child_class_name",
    "describe",
    "docstring",
    "is_bare_identifier",
    "is_field_name",
    "is_method_name",
    "utf16_key",
    "well_formed",
]

HARD_KEYWORDS: Final = frozenset(
    {
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise",
        "return", "try", "while", "with", "yield",
        # Not a keyword, but CPython refuses to assign it at compile time, which is what a
        # TypedDict field annotation is.
        "__debug__",
    }
)  # fmt: skip
"""Python hard keywords plus ``__debug__``. Soft keywords (``match case type _``) are absent on
purpose: each is special in one syntactic position only, so they are legal fields and methods."""

MAX_CLASS_NAME_BASE: Final = 120
"""Cap on a class-name base in UTF-16 units: nested names derive from their parent's, so without
it a deep single-field chain would emit Θ(depth²) text."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# ECMAScript `\s`: WhiteSpace (TAB VT FF SP NBSP ZWNBSP + Zs) and LineTerminator (LF CR LS PS).
_JS_SPACE: Final = re.compile("[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+")
# The Cc code points the whitespace collapse leaves behind: C0 (minus TAB..CR), DEL and C1.
_UNPRINTABLE: Final = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_ASCII_SPLIT: Final = re.compile("[^A-Za-z0-9]+")  # `_` is not alphanumeric: it splits too


def well_formed(text: str) -> str:
    """``text`` with every surrogate pair held as two code points joined into its astral character.

    That is the string JavaScript sees. Lone surrogates are kept (and escaped where they are
    emitted), so no information is lost.
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def utf16_key(name: str) -> bytes:
    """Sort key ordering names by UTF-16 code units, like JavaScript's ``a < b`` (total: lone
    surrogates are encoded as themselves rather than raising)."""
    return name.encode("utf-16-be", "surrogatepass")


def is_bare_identifier(name: str) -> bool:
    """``xid_start xid_continue*`` (``_`` may start) and NFKC-stable.

    CPython compiles identifiers NFKC-normalized while JSON keys are compared as written, so a name
    like ``ﬁeld`` would be declared as ``field``: such names are never emitted bare.
    """
    return name.isidentifier() and unicodedata.normalize("NFKC", name) == name


def is_field_name(name: str) -> bool:
    """Whether ``name`` can be a class-syntax ``TypedDict`` field: bare, not a hard keyword, and
    not a non-dunder ``__x`` name (class syntax would name-mangle it to ``_Class__x``)."""
    return (
        is_bare_identifier(name)
        and name not in HARD_KEYWORDS
        and not (name.startswith("__") and not name.endswith("__"))
    )


def is_method_name(name: str) -> bool:
    """Whether a tool can be declared as ``async def <name>``: bare, not a hard keyword, and not
    underscore-leading (mangling, dunders resolved on ``object``, implicit special-method lookup:
    the whole family goes through ``tools[name]``)."""
    return is_bare_identifier(name) and name not in HARD_KEYWORDS and not name.startswith("_")


def _is_xid_continue(char: str) -> bool:
    return ("a" + char).isidentifier()


def _is_xid_start(char: str) -> bool:
    return char != "_" and char.isidentifier()


def _words(raw: str) -> list[str]:
    """``raw.split(/[^\\p{XID_Continue}]+|_+/u)`` without the empty parts."""
    if raw.isascii():
        return [part for part in _ASCII_SPLIT.split(raw) if part]
    words: list[str] = []
    current: list[str] = []
    for char in raw:
        if char == "_" or not _is_xid_continue(char):
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


def camel_case(raw: str) -> str:
    """A class-name segment: split on non-``XID_Continue`` runs and underscores, capitalize each
    word's first UTF-16 unit, join, NFKC; prefix ``Tool`` unless the head is ``XID_Start``, and
    NFKC again (the prefix can compose with a combining-mark head: ``Tool`` + U+0301 → ``Tooĺ``).

    >>> camel_case("my-tool"), camel_case("1st-tool"), camel_case("read_file")
    ('MyTool', 'Tool1stTool', 'ReadFile')
    """
    parts: list[str] = []
    for word in _words(well_formed(raw)):
        head = word[0]
        # JavaScript's charAt(0) is a UTF-16 unit: an astral head is half a pair, left unchanged.
        parts.append((head.upper() if ord(head) <= 0xFFFF else head) + word[1:])
    joined = unicodedata.normalize("NFKC", "".join(parts))
    if not (joined and _is_xid_start(joined[0])):
        joined = "Tool" + joined
    return unicodedata.normalize("NFKC", joined)


def cap_class_name_base(base: str) -> str:
    """``base`` cut to :data:`MAX_CLASS_NAME_BASE` UTF-16 units; an astral character straddling
    the boundary is dropped whole (upstream cuts the pair and drops the lone high half)."""
    if len(base) <= MAX_CLASS_NAME_BASE // 2:
        return base
    head = base[:MAX_CLASS_NAME_BASE]
    if len(head.encode("utf-16-le", "surrogatepass")) == 2 * len(head):
        return head  # no astral character: code points are UTF-16 units
    units = 0
    for index, char in enumerate(base):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > MAX_CLASS_NAME_BASE:
            return base[:index]
    return base


def child_class_name(base: str, segment: str) -> str:
    """Parent base + child segment, NFKC-normalized at the join (Hangul L + V jamo compose across
    it) and capped, so each level costs O(cap + segment)."""
    return cap_class_name_base(unicodedata.normalize("NFKC", base + segment))


def _hex2(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group(0)):02x}"


def _hex4(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def describe(description: object) -> str | None:
    """The one-line form of a description, or ``None`` when absent or blank.

    Whitespace runs collapse to one space; the remaining control characters become ``\\xNN`` and
    lone surrogates ``\\uNNNN`` (CPython refuses a NUL or an unencodable surrogate anywhere in the
    source, even in a comment); then the ends are trimmed.
    """
    if not isinstance(description, str):
        return None
    text = _JS_SPACE.sub(" ", well_formed(str.__str__(description)))
    text = _UNPRINTABLE.sub(_hex2, text)
    text = _SURROGATE.sub(_hex4, text).strip(" ")
    return text or None


def docstring(described: str) -> str:
    """``\"\"\"...\"\"\"`` around a :func:`describe` result: backslashes doubled, then every ``"``
    escaped, so neither a trailing quote nor a trailing backslash can reach the closing quotes."""
    return '"""' + described.replace("\\", "\\\\").replace('"', '\\"') + '"""'
