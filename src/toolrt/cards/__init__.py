"""Cards: how a tool asks a UI to render its calls and results (terminal, diff, read, search, ...).

A tool returns a card from ``present_call(args)`` / ``present_result(args, result)``; a UI (the
``toolrt`` command, ``toolrt.loop.replay``) renders it, live or when replaying a log, without
special-casing tool names. ``None`` selects the generic card.
"""

from toolrt.cards._views import (
    CallLocation,
    DiffEntry,
    DiffResultView,
    DiffView,
    GenericCallView,
    GenericResultView,
    ReadLine,
    ReadResultView,
    SearchFile,
    SearchMatch,
    SearchMatchesView,
    SearchPathsView,
    TerminalCallView,
    TerminalResultView,
    ToolCallView,
    ToolResultView,
    WebFetchView,
    WebSearchSource,
    WebSearchView,
)

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
