"""Cards in the terminal: :class:`CardRenderer` draws a tool's call and result cards with ``rich``, and
:class:`LiveRunLine` shows a running ``run_code``'s elapsed time and sub-calls.

The cards are the tools' own (``present_call`` / ``present_result``, :mod:`toolrt.cards`): the
renderer knows card *kinds* — terminal, diff, read, search, web, generic — never tool names, so a
new tool that returns a diff card is drawn as a diff with no change here.

Why the care about width: people run this at 80 columns, in tmux panes and in CI logs. Text wraps
at spaces, never inside a word; code and output keep their lines (a long line wraps, it is never
cut silently); every block is printed once.

>>> from rich.console import Console
>>> import io
>>> console = Console(width=60, record=True, color_system=None, file=io.StringIO())
>>> CardRenderer(console).result("glob", {"card": "search", "shape": "paths", "paths": ["a.py"],
...                                     "truncated": False, "total": 1})
>>> "a.py" in console.export_text()
True
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from types import TracebackType
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from toolrt._content import content_text
from toolrt._execution import ToolExecution
from toolrt._results import ToolExecutionResult

__all__ = ["CardRenderer", "LiveRunLine", "diff_lines", "lexer_for"]

_THEME = "ansi_dark"
# Extensions pygments would guess wrongly or slowly from the name alone.
_LEXERS = {".py": "python", ".ts": "typescript", ".js": "javascript", ".md": "markdown", ".toml": "toml"}


def lexer_for(path: str, lang: str | None = None) -> str:
    """The syntax-highlighting lexer for a file: the card's ``lang`` if given, else by extension."""
    if lang:
        return lang
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in _LEXERS:
        return _LEXERS[suffix]
    lexer = Syntax.guess_lexer(path)
    return "text" if lexer == "default" else lexer


def diff_lines(path: str, old: str | None, new: str) -> list[str]:
    """A unified diff of one file (``old`` ``None``: the file is created), without line endings."""
    before = [] if old is None else old.splitlines()
    after = new.splitlines()
    label = "/dev/null" if old is None else f"a/{path}"
    return list(difflib.unified_diff(before, after, label, f"b/{path}", lineterm="", n=2))


def _diff_text(diffs: Sequence[Mapping[str, Any]]) -> Text:
    text = Text()
    for entry in diffs:
        lines = diff_lines(str(entry.get("path")), entry.get("oldText"), str(entry.get("newText", "")))
        if not lines:
            text.append(f"{entry.get('path')}: no change\n", style="dim")
        for line in lines:
            if line.startswith(("+++", "---")):
                style = "bold"
            elif line.startswith("@@"):
                style = "cyan"
            elif line.startswith("+"):
                style = "green"
            elif line.startswith("-"):
                style = "red"
            else:
                style = ""
            text.append(line + "\n", style=style)
    text.rstrip()
    return text


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return repr(value)


def _blocks_text(content: Any) -> str:
    if not isinstance(content, list | tuple):
        return ""
    try:
        return content_text(content)
    except Exception:  # a malformed block in a replayed log must not stop the rendering
        return _json_text(content)


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` at a word boundary, marked with "…" (rich would cut mid-word)."""
    if len(text) <= width:
        return text
    cut = text[: max(1, width - 1)]
    space = cut.rfind(" ")
    return (cut[:space] if space > width // 2 else cut).rstrip(" ,;:(") + "…"


class CardRenderer:
    """Draws call and result cards on a ``rich`` console.

    ``call(name, view)`` / ``result(name, view, is_error=...)`` take the card dicts of
    :mod:`toolrt.cards` (what ``present_call`` / ``present_result`` and
    :func:`toolrt.loop.render_call_card` return). An unknown card kind is drawn as a generic card.
    """

    def __init__(self, console: Console) -> None:
        self.console = console

    # --- calls ------------------------------------------------------------------------------------

    def call(self, name: str, view: Mapping[str, Any]) -> None:
        """Print a call card."""
        self.console.print(self.call_renderable(name, view))

    def call_renderable(self, name: str, view: Mapping[str, Any]) -> RenderableType:
        """The call card as a renderable (for embedding in a larger layout)."""
        card = view.get("card")
        title = str(view.get("title") or name)
        if card == "terminal":
            body = Text("$ ", style="dim")
            body.append(title, style="bold")
            if view.get("description"):
                body.append(f"\n{view['description']}", style="italic")
            footer = f"cwd {view['cwd']}" if view.get("cwd") else None
            return self._panel(body, f"{name} ▸ command", "blue", footer)
        if card == "diff":
            diffs = view.get("diffs") or ()
            return self._panel(_diff_text(diffs), f"{name} ▸ {title}", "blue")
        parts: list[RenderableType] = []
        if view.get("kind"):
            parts.append(Text(f"kind: {view['kind']}", style="dim"))
        locations = view.get("locations") or ()
        if locations:
            where = ", ".join(
                f"{loc.get('path')}:{loc['line']}" if "line" in loc else str(loc.get("path"))
                for loc in locations
            )
            parts.append(Text(f"at: {where}", style="dim"))
        if isinstance(view.get("rawInput"), str):
            # A program or a command: its own lines, not one JSON string full of "\n".
            parts.append(Text(view["rawInput"]))
        elif "rawInput" in view:
            parts.append(Syntax(_json_text(view["rawInput"]), "json", theme=_THEME, word_wrap=True))
        if view.get("content"):
            parts.append(Text(_blocks_text(view["content"])))
        return self._panel(
            Group(*parts) if parts else Text(""), f"{name} ▸ {title}" if title != name else name, "blue"
        )

    # --- results ----------------------------------------------------------------------------------

    def result(self, name: str, view: Mapping[str, Any], *, is_error: bool = False) -> None:
        """Print a result card; ``is_error`` draws it red."""
        self.console.print(self.result_renderable(name, view, is_error=is_error))

    def result_renderable(
        self, name: str, view: Mapping[str, Any], *, is_error: bool = False
    ) -> RenderableType:
        """The result card as a renderable."""
        card = view.get("card")
        border = "red" if is_error else "green"
        title = view.get("title")
        label = f"{name} ▸ {title}" if title and title != name else name
        if card == "terminal":
            return self._terminal_result(label, view, border)
        if card == "diff":
            return self._panel(_diff_text(view.get("diffs") or ()), label, border)
        if card == "read":
            return self._read_result(label, view, border)
        if card == "search":
            return self._search_result(label, view, border)
        if card == "web":
            return self._web_result(label, view, border)
        text = _blocks_text(view.get("content") or ()).rstrip()
        return self._panel(Text(text or "(no content)", style="" if text else "dim"), label, border)

    def _terminal_result(self, label: str, view: Mapping[str, Any], border: str) -> RenderableType:
        output = str(view.get("output") or "")
        body = Text(output.rstrip("\n") or "(no output)", style="" if output else "dim")
        status: str | None = None
        if view.get("signal"):
            status = f"killed by {view['signal']}"
            border = "red"
        elif "exitCode" in view:
            status = f"exit {view['exitCode']}"
            if view["exitCode"] != 0:
                border = "red"
        return self._panel(body, label, border, status)

    def _read_result(self, label: str, view: Mapping[str, Any], border: str) -> RenderableType:
        path = str(view.get("path", ""))
        lines = list(view.get("lines") or ())
        total = view.get("totalLines")
        if not lines:
            body: RenderableType = Text(str(view.get("content") or "(no lines)"), style="dim")
            footer = f"{path} · offset {view.get('offset')} of {total} lines"
            return self._panel(body, label, border, footer)
        first = int(lines[0].get("number", 1))
        code = "\n".join(str(line.get("text", "")) for line in lines)
        body = Syntax(
            code,
            lexer_for(path, view.get("lang")),
            theme=_THEME,
            line_numbers=True,
            start_line=first,
            word_wrap=True,
        )
        last = int(lines[-1].get("number", first))
        return self._panel(body, label, border, f"{path} · lines {first}-{last} of {total}")

    def _search_result(self, label: str, view: Mapping[str, Any], border: str) -> RenderableType:
        total = view.get("total", 0)
        # A match is a preview of a line: cut at the edge with "…", never folded inside a word.
        parts: list[RenderableType] = []
        shown = 0
        if view.get("shape") == "paths":
            for path in view.get("paths") or ():
                parts.append(Text(str(path), no_wrap=True, overflow="ellipsis"))
                shown += 1
        else:
            for file in view.get("files") or ():
                parts.append(
                    Text(str(file.get("path")), style="bold magenta", no_wrap=True, overflow="ellipsis")
                )
                grid = Table.grid(padding=(0, 2), expand=True)
                grid.add_column(no_wrap=True, justify="right", style="dim", min_width=5)
                grid.add_column(no_wrap=True, overflow="ellipsis", ratio=1)
                for match in file.get("matches") or ():
                    grid.add_row(
                        Text(str(match.get("lineNumber"))),
                        Text(str(match.get("line")), no_wrap=True, overflow="ellipsis"),
                    )
                    shown += 1
                parts.append(grid)
        body: RenderableType = Group(*parts) if shown else Text("no matches", style="dim")
        footer = f"{shown} of {total}" + (" · truncated" if view.get("truncated") else "")
        return self._panel(body, label, border, footer)

    def _web_result(self, label: str, view: Mapping[str, Any], border: str) -> RenderableType:
        body = Text()
        if view.get("kind") == "fetch":
            body.append(f"{view.get('url')}  HTTP {view.get('statusCode')}")
        else:
            if view.get("answer"):
                body.append(f"{view['answer']}\n\n")
            for source in view.get("sources") or ():
                body.append(f"{source.get('title') or source.get('url')}\n", style="bold")
                body.append(f"{source.get('url')}\n", style="underline")
                if source.get("snippet"):
                    body.append(f"{source['snippet']}\n")
        body.rstrip()
        return self._panel(body, label, border, "truncated" if view.get("truncated") else None)

    # --- decisions and layout ---------------------------------------------------------------------

    def decision(self, text: str, *, ok: bool = True) -> None:
        """One line saying what the policy decided (between the call and the result cards)."""
        line = Text("policy: ", style="dim")
        line.append(text, style="green" if ok else "red")
        self.console.print(line)

    def _panel(self, body: RenderableType, title: str, border: str, footer: str | None = None) -> Panel:
        return Panel(
            body,
            title=Text(_fit(title, self.console.width - 8), style="bold"),
            title_align="left",
            subtitle=Text(footer, style="dim") if footer else None,
            subtitle_align="right",
            border_style=border,
        )


class LiveRunLine:
    """While a ``run_code`` runs: one live line with the elapsed time and the sub-calls so far.

    It listens to the runtime's ``tools/result`` for calls made *inside* a program (those with a
    parent), so it counts exactly what the program did through the pipeline. On a console that is
    not a terminal nothing is drawn live (a log must not fill with redraws); :meth:`summary` is the
    line to print afterwards either way.
    """

    def __init__(self, console: Console, runtime: Any) -> None:
        self.console = console
        self.runtime = runtime
        self.sub_calls: list[tuple[str, bool]] = []
        self._started = 0.0
        self._live: Live | None = None
        self._dispose: Any = None

    def _on_result(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        if execution.parent is not None:  # a Code Mode sub-call, not the run_code call itself
            self.sub_calls.append((execution.name, result.is_error))

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self._started

    def _line(self) -> Table:
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(no_wrap=True, overflow="ellipsis")
        last = f" · last: {self.sub_calls[-1][0]}" if self.sub_calls else ""
        errors = sum(1 for _, failed in self.sub_calls if failed)
        failed = f" ({errors} failed)" if errors else ""
        grid.add_row(
            Text("⏵ run_code", style="bold cyan"),
            Text(f"{self.elapsed():5.1f}s · {len(self.sub_calls)} sub-calls{failed}{last}", style="dim"),
        )
        return grid

    def summary(self) -> str:
        """``run_code: 1.2s, 3 sub-calls (list_files, file_info ×2)``: what ran, for after the run."""
        counts: dict[str, int] = {}
        for name, _ in self.sub_calls:
            counts[name] = counts.get(name, 0) + 1
        names = ", ".join(name if count == 1 else f"{name} ×{count}" for name, count in counts.items())
        return f"run_code: {self.elapsed():.1f}s, {len(self.sub_calls)} sub-calls" + (
            f" ({names})" if names else ""
        )

    def __enter__(self) -> LiveRunLine:
        self._started = time.monotonic()
        self._dispose = self.runtime.on("tools/result", self._on_result)
        if self.console.is_terminal:
            # get_renderable: the line is rebuilt at every refresh, so the clock ticks between sub-calls.
            self._live = Live(
                console=self.console, refresh_per_second=8, transient=True, get_renderable=self._line
            )
            self._live.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._live is not None:
            self._live.__exit__(kind, error, trace)
            self._live = None
        if self._dispose is not None:
            self._dispose()
            self._dispose = None
