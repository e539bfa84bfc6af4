"""Docstrings → a tool's description and its parameters' descriptions (Google, NumPy and Sphinx styles).

Part of the schema engine behind :func:`toolrt.tool` (:mod:`toolrt.schema._type_hints`): the summary
becomes the tool's description, ``Args:`` entries its parameters' descriptions.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Docstring", "parse_docstring", "parse_return_keys"]


@dataclass(frozen=True, slots=True)
class Docstring:
    """A parsed docstring: the summary (text before the first section) and documented names.

    >>> doc = parse_docstring('''Read a file.
    ...
    ...     Args:
    ...         path (str): Absolute path
    ...             to the file.
    ...     Returns:
    ...         str: The text.
    ...     ''')
    >>> doc.summary, doc.params["path"], doc.returns
    ('Read a file.', 'Absolute path to the file.', 'The text.')
    """

    summary: str
    params: Mapping[str, str]
    returns: str | None


_SECTION_NAMES = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "other parameters",
        "attributes",
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "exceptions",
        "warns",
        "examples",
        "example",
        "notes",
        "note",
        "warnings",
        "warning",
        "see also",
        "references",
        "todo",
        "methods",
    }
)


_PARAM_SECTIONS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "other parameters"}
    | {"attributes"}
)


_RETURN_SECTIONS = frozenset({"returns", "return", "yields", "yield"})


_GOOGLE_HEADER = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*$")


_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")


# ``name: text`` / ``name (type): text`` / ``*args: text``; the type may not contain a colon.
_GOOGLE_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*)\s*(?:\([^:]*\))?\s*:(?:\s+(.*))?$")


_NUMPY_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_]\w*)\s*(?::.*)?$")


_SPHINX_FIELD = re.compile(r"^\s*:(\w+)(?:\s+([^:]*?))?\s*:(?:\s+(.*))?$")


_SPHINX_PARAM_FIELDS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword", "ivar", "var"})


_RETURN_TYPE_PREFIX = re.compile(r"^[\w.]+(?:\[.*?\])?:\s+")


# A keyed ``Returns:`` entry, ``name (type):`` (bulleted or not): how real catalogues (BFCL's back
# ends) name the keys of a returned dict. The type must look like a type, so prose stays prose.
_RETURN_KEY = re.compile(
    r"(?<!\S)(?:[-*]\s+)?([A-Za-z_]\w*)\s*\(([A-Za-z_][\w.]*(?:\[[^()]*?\])?(?:,\s*optional)?)\)\s*:(?=\s|$)"
)


def parse_return_keys(returns: str | None) -> tuple[tuple[str, str, str], ...]:
    """The result keys a ``Returns:`` text documents, as ``(key, type, description)`` triples.

    Why: a method returning ``dict[str, Any]`` says what its keys are only in prose; split into
    entries, the SDKs can show each key on its own line. A text counts as keyed only when it
    *starts* with a ``name (type):`` entry (the form a Google-style ``Returns:`` section uses for
    named values); ``type: text`` stays one description, since ``str: The text.`` names a type, not
    a key. Works on the joined text :func:`parse_docstring` produces as well as on the raw lines.

    >>> parse_return_keys("current_working_directory (str): The new current directory.")
    (('current_working_directory', 'str', 'The new current directory.'),)
    >>> parse_return_keys("order_id (int): The id. status (str): Open (or closed).")
    (('order_id', 'int', 'The id.'), ('status', 'str', 'Open (or closed).'))
    >>> parse_return_keys("str: The text."), parse_return_keys(None)
    ((), ())
    """
    if not returns:
        return ()
    heads = list(_RETURN_KEY.finditer(returns))
    if not heads or returns[: heads[0].start()].strip():
        return ()
    keys: list[tuple[str, str, str]] = []
    for index, head in enumerate(heads):
        end = heads[index + 1].start() if index + 1 < len(heads) else len(returns)
        keys.append((head.group(1), head.group(2), " ".join(returns[head.end() : end].split())))
    return tuple(keys)


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style (also NumPy/Sphinx-style) docstring into summary, params and returns.

    The summary is everything before the first section header (``Args:``, ``Returns:``,
    ``Raises:``, ..., a NumPy ``Parameters`` + ``----`` underline, or a Sphinx ``:param x:`` field),
    cleaned with :func:`inspect.cleandoc`. Parameter texts join continuation lines with spaces.

    >>> parse_docstring("Do it.\\n\\nArgs:\\n    x: The x.\\n").params
    {'x': 'The x.'}
    """
    if not doc:
        return Docstring("", {}, None)
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    returns: list[str] | None = None
    # (kind, style, body): kind "param"/"return"/"other"; style "google"/"numpy"/"sphinx".
    sections: list[tuple[str, str, list[str]]] = []
    current: list[str] = summary
    index = 0
    while index < len(lines):
        line = lines[index]
        sphinx = _SPHINX_FIELD.match(line)
        if sphinx is not None:
            name, argument, text = sphinx.group(1).lower(), sphinx.group(2), sphinx.group(3) or ""
            body = [text]
            if name in _SPHINX_PARAM_FIELDS and argument:
                sections.append(("param:" + argument.split()[-1].lstrip("*"), "sphinx", body))
            elif name in {"return", "returns"}:
                sections.append(("return", "sphinx", body))
            else:
                sections.append(("other", "sphinx", body))
            current = body
            index += 1
            continue
        header = _section_header(lines, index)
        if header is not None:
            title, style, consumed = header
            kind = "param" if title in _PARAM_SECTIONS else "return" if title in _RETURN_SECTIONS else "other"
            body = []
            sections.append((kind, style, body))
            current = body
            index += consumed
            continue
        current.append(line)
        index += 1
    for kind, style, body in sections:
        if kind.startswith("param:"):
            params.setdefault(kind[6:], _join(body))
        elif kind == "param":
            for name, text in _entries(body, style):
                params.setdefault(name, text)
        elif kind == "return" and returns is None:
            returns = _return_text(body, style)
    summary_text = "\n".join(line.rstrip() for line in summary).strip()
    return_text = _join(returns) if returns is not None else None
    return Docstring(summary_text, params, return_text or None)


def _section_header(lines: list[str], index: int) -> tuple[str, str, int] | None:
    line = lines[index]
    following = lines[index + 1] if index + 1 < len(lines) else ""
    if line.strip().lower() in _SECTION_NAMES and _NUMPY_UNDERLINE.match(following):
        return line.strip().lower(), "numpy", 2
    match = _GOOGLE_HEADER.match(line)
    if match is not None and match.group(1).lower() in _SECTION_NAMES:
        return match.group(1).lower(), "google", 1
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _entries(body: list[str], style: str) -> list[tuple[str, str]]:
    """Entries of a parameter section: lines at the section's base indent start an entry."""
    entries: list[tuple[str, list[str]]] = []
    base: int | None = None
    for line in body:
        if not line.strip():
            if entries:
                entries[-1][1].append("")
            continue
        indent = _indent(line)
        if base is None:
            base = indent
        if indent <= base:
            pattern = _GOOGLE_ENTRY if style == "google" else _NUMPY_ENTRY
            match = pattern.match(line.strip())
            if match is not None:
                first = match.group(2) if style == "google" else None
                entries.append((match.group(1).lstrip("*"), [first or ""]))
                continue
        if entries:
            entries[-1][1].append(line.strip())
    return [(name, _join(text)) for name, text in entries]


def _return_text(body: list[str], style: str) -> list[str]:
    lines = list(body)
    if style == "numpy":
        # NumPy: the first line is the type, the indented lines below it the description.
        described = [line for line in lines[1:] if line.strip()]
        return [line.strip() for line in described] if described else [line.strip() for line in lines]
    stripped = [line.strip() for line in lines]
    if stripped and stripped[0]:
        stripped[0] = _RETURN_TYPE_PREFIX.sub("", stripped[0], count=1)
    return stripped


def _join(lines: list[str]) -> str:
    """Join wrapped lines with spaces; blank lines separate paragraphs."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines:
        text = line.strip()
        if text:
            current.append(text)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)
