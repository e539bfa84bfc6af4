"""Tool-owned UI render intents: call cards and result cards.

A tool may return a card from ``present_call(args)`` and ``present_result(args, result)`` so a UI
renders *its* calls well without special-casing tool names. Presenters are pure: they depend only on
their arguments (and the durable ``{content, is_error, meta}``), because UIs call them both live and
when replaying a log. ``None`` selects the generic card.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NotRequired, TypeAlias, TypedDict

from toolrt._content import ContentBlock

__all__ = [
    "CallLocation",
    "DiffEntry",
    "DiffResultView",
    "DiffView",
    "GenericCallView",
    "GenericResultView",
    "ReadLine",
    "ReadResultView",
    "SearchFile",
    "SearchMatch",
    "SearchMatchesView",
    "SearchPathsView",
    "TerminalCallView",
    "TerminalResultView",
    "ToolCallView",
    "ToolResultView",
    "WebFetchView",
    "WebSearchSource",
    "WebSearchView",
]

CallKind: TypeAlias = Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "other"]


class CallLocation(TypedDict):
    path: str
    line: NotRequired[int]


class DiffEntry(TypedDict):
    path: str
    oldText: str | None
    newText: str


class GenericCallView(TypedDict):
    card: Literal["generic"]
    title: str
    kind: NotRequired[CallKind]
    rawInput: NotRequired[object]
    content: NotRequired[Sequence[ContentBlock]]
    locations: NotRequired[Sequence[CallLocation]]


class TerminalCallView(TypedDict):
    card: Literal["terminal"]
    title: str
    description: NotRequired[str]
    cwd: NotRequired[str]


class DiffView(TypedDict):
    card: Literal["diff"]
    title: str
    diffs: Sequence[DiffEntry]
    locations: NotRequired[Sequence[CallLocation]]


ToolCallView: TypeAlias = GenericCallView | TerminalCallView | DiffView


class GenericResultView(TypedDict):
    card: Literal["generic"]
    title: NotRequired[str]
    content: NotRequired[Sequence[ContentBlock]]


class TerminalResultView(TypedDict):
    card: Literal["terminal"]
    title: NotRequired[str]
    output: NotRequired[str]
    exitCode: NotRequired[int]
    signal: NotRequired[str]


class DiffResultView(TypedDict):
    card: Literal["diff"]
    title: NotRequired[str]
    diffs: Sequence[DiffEntry]


class SearchMatch(TypedDict):
    lineNumber: int
    line: str


class SearchFile(TypedDict):
    path: str
    matches: Sequence[SearchMatch]


class SearchMatchesView(TypedDict):
    card: Literal["search"]
    shape: Literal["matches"]
    title: NotRequired[str]
    files: Sequence[SearchFile]
    truncated: bool
    total: int


class SearchPathsView(TypedDict):
    card: Literal["search"]
    shape: Literal["paths"]
    title: NotRequired[str]
    paths: Sequence[str]
    truncated: bool
    total: int


class ReadLine(TypedDict):
    number: int
    text: str


class ReadResultView(TypedDict):
    card: Literal["read"]
    title: NotRequired[str]
    path: str
    offset: int
    lines: Sequence[ReadLine]
    totalLines: int
    lang: NotRequired[str]
    content: NotRequired[str]


class WebSearchSource(TypedDict):
    url: str
    title: NotRequired[str]
    snippet: NotRequired[str]
    publishedAt: NotRequired[str]


class WebSearchView(TypedDict):
    card: Literal["web"]
    kind: Literal["search"]
    title: NotRequired[str]
    sources: Sequence[WebSearchSource]
    answer: NotRequired[str]
    truncated: bool


class WebFetchView(TypedDict):
    card: Literal["web"]
    kind: Literal["fetch"]
    title: NotRequired[str]
    url: str
    statusCode: int
    truncated: bool


ToolResultView: TypeAlias = (
    GenericResultView
    | TerminalResultView
    | DiffResultView
    | SearchMatchesView
    | SearchPathsView
    | ReadResultView
    | WebSearchView
    | WebFetchView
)
